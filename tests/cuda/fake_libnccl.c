/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/fake_libnccl.c: a fake NCCL (libnccl.so.2) over the fake CUDA
 * driver's host memory, for the CUDA driver's collectives on machines
 * without GPUs. What it does and its knobs: fake_libnccl.h. This file: the
 * API, communicators of one process, group calls, the queue of the
 * multi-process communicators (their rendezvous: fake_libnccl_shm.c).
 *
 * Built with -DFAKE_NCCL_OLD it reports 2.6.4 and has no
 * ncclCommInitRankConfig; with -DFAKE_NCCL_NO_SEND it lacks ncclSend.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_libnccl_internal.h"

typedef cubert__nccl_result_t ncclResult_t;
typedef cubert_nccl_comm_t ncclComm_t;

pthread_mutex_t fake_nccl_mutex = PTHREAD_MUTEX_INITIALIZER;
fake_nccl_stats_t fake_nccl_stats_;
static int g_async_error;
static int g_next_clique = 1;

/* The exported API (declared here: there is no nccl.h in the build). */
ncclResult_t ncclGetVersion(int *version);
const char *ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclGetUniqueId(cubert_nccl_unique_id_t *id);
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, cubert_nccl_unique_id_t id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state);
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, cubert_nccl_data_type_t type,
                           cubert_nccl_red_op_t op, ncclComm_t comm, struct CUstream_st *stream);
ncclResult_t ncclRecv(void *recv, size_t count, cubert_nccl_data_type_t type, int peer,
                      ncclComm_t comm, struct CUstream_st *stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

static void count_stat(uint64_t *c) {
  pthread_mutex_lock(&fake_nccl_mutex);
  (*c)++;
  pthread_mutex_unlock(&fake_nccl_mutex);
}

long long fake_nccl_knob(const char *name, long long fallback) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  return strtoll(v, NULL, 0);
}

size_t fake_nccl_type_size(int type) {
  switch (type) {
    case CUBERT_NCCL_INT8: case CUBERT_NCCL_UINT8: return 1;
    case CUBERT_NCCL_INT32: case CUBERT_NCCL_UINT32: case CUBERT_NCCL_FLOAT32: return 4;
    case CUBERT_NCCL_INT64: case CUBERT_NCCL_UINT64: case CUBERT_NCCL_FLOAT64: return 8;
    default: return 0;
  }
}

#define FAKE_SUM_(T)                                         \
  for (i = 0; i < count; i++) {                              \
    T acc = ((const T *)in[0])[i];                           \
    for (r = 1; r < n; r++) acc = (T)(acc + ((const T *)in[r])[i]); \
    ((T *)out)[i] = acc;                                     \
  }

int fake_nccl_sum(void *out, const void *const *in, int n, size_t count, int type) {
  size_t i;
  int r;
  switch (type) {
    case CUBERT_NCCL_INT8: case CUBERT_NCCL_UINT8: FAKE_SUM_(uint8_t) break;
    case CUBERT_NCCL_INT32: case CUBERT_NCCL_UINT32: FAKE_SUM_(uint32_t) break;
    case CUBERT_NCCL_INT64: case CUBERT_NCCL_UINT64: FAKE_SUM_(uint64_t) break;
    case CUBERT_NCCL_FLOAT32: FAKE_SUM_(float) break;
    case CUBERT_NCCL_FLOAT64: FAKE_SUM_(double) break;
    default: return -1;
  }
  return 0;
}

/* ---- the fake libcuda's hooks ------------------------------------------------------------- */

static pthread_once_t g_hooks_once = PTHREAD_ONCE_INIT;
static fake_nccl_settle_fn g_settle;
static fake_nccl_gate_fn g_gate;
typedef void (*fake_nccl_store_fn)(uint32_t *addr, uint32_t value);
static fake_nccl_store_fn g_store;
typedef int (*fake_nccl_drain_fn)(int device);
static fake_nccl_drain_fn g_drain;

static void hooks_find(void) {
  /* the fake libcuda as libcuda.so.1, or the installed one under its own name
   * (without its hooks a collective would not wait for its stream's work) */
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *a, *b;
  if (!lib) lib = dlopen("libcubert-fakecuda.so", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return;
  a = dlsym(lib, "cubert_fake_cuda_stream_settle");
  b = dlsym(lib, "cubert_fake_cuda_stream_gate");
  if (a) memcpy(&g_settle, &a, sizeof a);
  if (b) memcpy(&g_gate, &b, sizeof b);
  a = dlsym(lib, "cubert_fake_cuda_gate_store");
  if (a) memcpy(&g_store, &a, sizeof a);
  a = dlsym(lib, "cubert_fake_cuda_context_drain");
  if (a) memcpy(&g_drain, &a, sizeof a);
  (void)dlclose(lib); /* still loaded by whoever loaded it */
}

fake_nccl_settle_fn fake_nccl_settle(void) {
  (void)pthread_once(&g_hooks_once, hooks_find);
  return g_settle;
}

fake_nccl_gate_fn fake_nccl_gate(void) {
  (void)pthread_once(&g_hooks_once, hooks_find);
  return g_gate;
}

void fake_nccl_store(uint32_t *addr, uint32_t value) {
  (void)pthread_once(&g_hooks_once, hooks_find);
  if (g_store) g_store(addr, value);
  else __atomic_store_n(addr, value, __ATOMIC_RELEASE);
}

/* As NCCL on a real driver: loading its kernels into a GPU's context (the
 * first communicator there), setting up a communicator's connections (its
 * first collective) and freeing them (destroy, abort) are
 * context-synchronizing (the fake libcuda's cubert_fake_cuda_context_drain:
 * it waits while a stream of that GPU stands behind a closed gate, where a
 * real driver deadlocks). 0, or ncclUnhandledCudaError. */
static int drain(int device) {
  (void)pthread_once(&g_hooks_once, hooks_find);
  if (!g_drain || device < 0) return 0;
  return g_drain(device) == 0 ? 0 : CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
}

static int settle(struct CUstream_st *s) {
  fake_nccl_settle_fn f = fake_nccl_settle();
  if (!f || !s) return 0;
  count_stat(&fake_nccl_stats_.settles);
  return f(s) == 0 ? 0 : CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
}

uint32_t *fake_nccl_counter_new(void) {
  static uint32_t counters[4096];
  static unsigned next;
  uint32_t *c;
  pthread_mutex_lock(&fake_nccl_mutex);
  c = &counters[next++ % 4096u];
  pthread_mutex_unlock(&fake_nccl_mutex);
  return c;
}

/* ---- version, errors, ids ---------------------------------------------------------------- */

ncclResult_t ncclGetVersion(int *version) {
  int want = (int)fake_nccl_knob("CUBERT_FAKE_NCCL_VERSION_RESULT", 0);
  if (!version) return CUBERT_NCCL_INVALID_ARGUMENT;
  if (want) return (ncclResult_t)want;
#if defined(FAKE_NCCL_OLD)
  *version = (int)fake_nccl_knob("CUBERT_FAKE_NCCL_VERSION", 2604);
#else
  *version = (int)fake_nccl_knob("CUBERT_FAKE_NCCL_VERSION", 22809);
#endif
  return CUBERT_NCCL_SUCCESS;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch ((int)result) {
    case 0: return "no error";
    case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case 3: return "internal error - please report this issue to the NCCL developers";
    case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case 6: return "remote process exited or there was a network error";
    case 7: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

ncclResult_t ncclGetUniqueId(cubert_nccl_unique_id_t *id) {
  if (!id) return CUBERT_NCCL_INVALID_ARGUMENT;
  fake_shm_unique_id(id);
  return CUBERT_NCCL_SUCCESS;
}

/* ---- communicators ----------------------------------------------------------------------- */

static ncclComm_t comm_new(int nranks, int rank, int device, int clique) {
  ncclComm_t c = (ncclComm_t)calloc(1, sizeof *c);
  if (!c) return NULL;
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  c->clique = clique;
  c->counter = fake_nccl_counter_new();
  c->enqueued = __atomic_load_n(c->counter, __ATOMIC_ACQUIRE); /* a reused word goes on */
  pthread_mutex_init(&c->mutex, NULL);
  pthread_cond_init(&c->cond, NULL);
  pthread_mutex_lock(&fake_nccl_mutex);
  fake_nccl_stats_.comms_live++;
  pthread_mutex_unlock(&fake_nccl_mutex);
  return c;
}

static void comm_free(ncclComm_t c) {
  pthread_mutex_destroy(&c->mutex);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_lock(&fake_nccl_mutex);
  fake_nccl_stats_.comms_live--;
  pthread_mutex_unlock(&fake_nccl_mutex);
  free(c);
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  int i, j, clique;
  int want = (int)fake_nccl_knob("CUBERT_FAKE_NCCL_INIT_RESULT", 0);
  if (want) return (ncclResult_t)want;
  if (!comms || ndev < 1 || ndev > FAKE_NCCL_MAX_RANKS) return CUBERT_NCCL_INVALID_ARGUMENT;
  for (i = 0; devlist && i < ndev; i++)
    for (j = 0; j < i; j++)
      if (devlist[i] == devlist[j]) return CUBERT_NCCL_INVALID_USAGE; /* Duplicate GPU detected */
  for (i = 0; i < ndev; i++) { /* NCCL's kernels, once per GPU's context */
    static int loaded[64];
    int d = devlist ? devlist[i] : i, was;
    pthread_mutex_lock(&fake_nccl_mutex);
    was = d >= 0 && d < 64 ? loaded[d] : 1;
    pthread_mutex_unlock(&fake_nccl_mutex);
    if (was) continue;
    if (drain(d)) return CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
    pthread_mutex_lock(&fake_nccl_mutex);
    loaded[d] = 1;
    pthread_mutex_unlock(&fake_nccl_mutex);
  }
  pthread_mutex_lock(&fake_nccl_mutex);
  clique = g_next_clique++;
  fake_nccl_stats_.init_all++;
  pthread_mutex_unlock(&fake_nccl_mutex);
  for (i = 0; i < ndev; i++) {
    comms[i] = comm_new(ndev, i, devlist ? devlist[i] : i, clique);
    if (!comms[i]) {
      while (i-- > 0) comm_free(comms[i]);
      return CUBERT_NCCL_SYSTEM_ERROR;
    }
  }
  return CUBERT_NCCL_SUCCESS;
}

static void *helper_main(void *arg);

static ncclResult_t init_rank(ncclComm_t *out, int nranks, cubert_nccl_unique_id_t id, int rank,
                              int blocking) {
  const char *name = fake_shm_id_name(&id);
  int want = (int)fake_nccl_knob("CUBERT_FAKE_NCCL_INIT_RESULT", 0), r;
  ncclComm_t c;
  if (want) return (ncclResult_t)want;
  if (!out || !name || nranks < 1 || nranks > FAKE_NCCL_MAX_RANKS || rank < 0 || rank >= nranks)
    return CUBERT_NCCL_INVALID_ARGUMENT;
  c = comm_new(nranks, rank, -1, -1);
  if (!c) return CUBERT_NCCL_SYSTEM_ERROR;
  r = fake_shm_join(name, nranks, rank, &c->shm);
  if (r == 0 && pthread_create(&c->helper, NULL, helper_main, c) != 0) {
    fake_shm_leave(c->shm);
    r = CUBERT_NCCL_SYSTEM_ERROR;
  }
  if (r != 0) {
    comm_free(c);
    return (ncclResult_t)r;
  }
  c->helper_running = 1;
  count_stat(&fake_nccl_stats_.init_rank);
  *out = c;
  if (blocking) { /* until every rank joined */
    long long limit = fake_nccl_knob("CUBERT_FAKE_NCCL_TIMEOUT_MS", 20000), waited = 0;
    while ((r = fake_shm_ready(c->shm)) == 0 && waited < limit) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
      waited++;
    }
    if (r != 1) {
      (void)ncclCommAbort(c);
      *out = NULL;
      return CUBERT_NCCL_REMOTE_ERROR;
    }
    return CUBERT_NCCL_SUCCESS;
  }
  return CUBERT_NCCL_IN_PROGRESS;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, cubert_nccl_unique_id_t id, int rank) {
  return init_rank(comm, nranks, id, rank, 1);
}

#if !defined(FAKE_NCCL_OLD)
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, cubert_nccl_unique_id_t id,
                                    int rank, cubert_nccl_config_t *config);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, cubert_nccl_unique_id_t id,
                                    int rank, cubert_nccl_config_t *config) {
  if (config && (config->magic != CUBERT_NCCL_CONFIG_MAGIC || config->size < 24))
    return CUBERT_NCCL_INVALID_ARGUMENT;
  return init_rank(comm, nranks, id, rank, !config || config->blocking != 0);
}
#endif

/* Leave: the helper drains (destroy) or gives up (abort); whatever waits on
 * the communicator's word is released. */
static ncclResult_t comm_close(ncclComm_t c, int abort) {
  if (!c) return CUBERT_NCCL_INVALID_ARGUMENT;
  if (!c->shm && c->connected) (void)drain(c->device); /* its buffers are freed */
  if (c->helper_running) {
    pthread_mutex_lock(&c->mutex);
    c->stop = 1;
    if (abort) __atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mutex);
    pthread_join(c->helper, NULL);
  }
  fake_nccl_store(c->counter, c->enqueued);
  if (c->shm) fake_shm_leave(c->shm);
  pthread_mutex_lock(&fake_nccl_mutex);
  if (abort) fake_nccl_stats_.aborts++;
  else fake_nccl_stats_.destroys++;
  pthread_mutex_unlock(&fake_nccl_mutex);
  comm_free(c);
  return CUBERT_NCCL_SUCCESS;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return comm_close(comm, 0); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return comm_close(comm, 1); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *state) {
  int e;
  if (!c || !state) return CUBERT_NCCL_INVALID_ARGUMENT;
  pthread_mutex_lock(&fake_nccl_mutex);
  fake_nccl_stats_.async_polls++;
  e = g_async_error;
  pthread_mutex_unlock(&fake_nccl_mutex);
  pthread_mutex_lock(&c->mutex);
  if (!e) e = c->async_error;
  pthread_mutex_unlock(&c->mutex);
  if (!e && c->shm) {
    int ready = fake_shm_ready(c->shm);
    e = ready == 1 ? 0 : ready == 0 ? CUBERT_NCCL_IN_PROGRESS : CUBERT_NCCL_REMOTE_ERROR;
  }
  *state = (ncclResult_t)e;
  return CUBERT_NCCL_SUCCESS;
}

void cubert_fake_nccl_set_async_error(int result) {
  pthread_mutex_lock(&fake_nccl_mutex);
  g_async_error = result;
  pthread_mutex_unlock(&fake_nccl_mutex);
}

void cubert_fake_nccl_stats(fake_nccl_stats_t *out) {
  pthread_mutex_lock(&fake_nccl_mutex);
  *out = fake_nccl_stats_;
  pthread_mutex_unlock(&fake_nccl_mutex);
}

/* ---- multi-process communicators: the queue ------------------------------------------------- */

static void *helper_main(void *arg) {
  ncclComm_t c = (ncclComm_t)arg;
  pthread_mutex_lock(&c->mutex);
  for (;;) {
    fake_nccl_op_t op;
    int r = 0;
    while (!c->count && !c->stop) pthread_cond_wait(&c->cond, &c->mutex);
    if (!c->count || c->aborted) break;
    op = c->queue[c->head];
    pthread_mutex_unlock(&c->mutex);
    if (fake_nccl_knob("CUBERT_FAKE_NCCL_STUCK", 0)) {
      while (!__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
      }
      r = CUBERT_NCCL_REMOTE_ERROR;
    } else if (!c->async_error) {
      r = fake_shm_run(c->shm, c->rank, ++c->round, &op, &c->aborted);
    }
    pthread_mutex_lock(&c->mutex);
    if (r && !c->async_error) c->async_error = r;
    c->head = (c->head + 1u) % FAKE_NCCL_QUEUE;
    c->count--;
    fake_nccl_store(c->counter, op.seq); /* the stream goes on */
    pthread_cond_broadcast(&c->cond);
  }
  pthread_mutex_unlock(&c->mutex);
  return NULL;
}

static ncclResult_t enqueue(ncclComm_t c, const fake_nccl_op_t *op, struct CUstream_st *stream) {
  fake_nccl_gate_fn gate = fake_nccl_gate();
  uint32_t seq;
  if (!gate) return CUBERT_NCCL_INTERNAL_ERROR; /* the fake libcuda is not loaded */
  if (settle(stream)) return CUBERT_NCCL_UNHANDLED_CUDA_ERROR; /* inputs ready */
  pthread_mutex_lock(&c->mutex);
  while (c->count == FAKE_NCCL_QUEUE && !c->aborted) pthread_cond_wait(&c->cond, &c->mutex);
  seq = ++c->enqueued;
  c->queue[(c->head + c->count) % FAKE_NCCL_QUEUE] = *op;
  c->queue[(c->head + c->count) % FAKE_NCCL_QUEUE].seq = seq;
  c->count++;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mutex);
  return gate(stream, c->counter, seq) == 0 ? CUBERT_NCCL_SUCCESS : CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
}

/* ---- collectives and groups --------------------------------------------------------------- */

typedef struct group_op_t {
  fake_nccl_op_t op;
  ncclComm_t comm;
  struct CUstream_st *stream;
  int done;
} group_op_t;

#define FAKE_GROUP_OPS 256
static __thread int t_depth;
static __thread int t_nops;
static __thread int t_error;
static __thread group_op_t t_ops[FAKE_GROUP_OPS];

/* Run one in-process all_reduce: every rank of the clique must be in the group. */
static int run_all_reduce(int first) {
  const void *in[FAKE_NCCL_MAX_RANKS];
  int idx[FAKE_NCCL_MAX_RANKS];
  group_op_t *a = &t_ops[first];
  int n = a->comm->nranks, i, found = 0, r;
  size_t bytes;
  void *tmp;
  memset(idx, -1, sizeof idx);
  for (i = first; i < t_nops; i++) {
    group_op_t *b = &t_ops[i];
    if (b->done || b->op.kind != 1 || b->comm->clique != a->comm->clique) continue;
    if (b->op.count != a->op.count || b->op.type != a->op.type || idx[b->comm->rank] >= 0)
      return CUBERT_NCCL_INVALID_USAGE;
    idx[b->comm->rank] = i;
    found++;
  }
  if (found != n) return CUBERT_NCCL_INVALID_USAGE; /* a rank is missing from the group */
  for (i = 0; i < n; i++) in[i] = t_ops[idx[i]].op.send;
  bytes = a->op.count * fake_nccl_type_size(a->op.type);
  tmp = malloc(bytes ? bytes : 1);
  if (!tmp) return CUBERT_NCCL_SYSTEM_ERROR;
  r = fake_nccl_sum(tmp, in, n, a->op.count, a->op.type);
  for (i = 0; i < n && r == 0; i++) {
    memcpy(t_ops[idx[i]].op.recv, tmp, bytes);
    t_ops[idx[i]].done = 1;
  }
  free(tmp);
  return r == 0 ? 0 : CUBERT_NCCL_INVALID_ARGUMENT;
}

static int run_send(int s) {
  group_op_t *a = &t_ops[s];
  int i;
  for (i = 0; i < t_nops; i++) {
    group_op_t *b = &t_ops[i];
    if (b->done || b->op.kind != 3 || b->comm->clique != a->comm->clique ||
        b->comm->rank != a->op.peer || b->op.peer != a->comm->rank)
      continue;
    if (b->op.count != a->op.count) return CUBERT_NCCL_INVALID_USAGE;
    memmove(b->op.recv, a->op.send, a->op.count * fake_nccl_type_size(a->op.type));
    a->done = b->done = 1;
    return 0;
  }
  return CUBERT_NCCL_INVALID_USAGE;
}

static ncclResult_t run_group(void) {
  int i, r = 0;
  count_stat(&fake_nccl_stats_.group_ends);
  for (i = 0; i < t_nops && !r; i++) /* a communicator's first collective: its set-up */
    if (!t_ops[i].comm->shm && !t_ops[i].comm->connected) {
      r = drain(t_ops[i].comm->device);
      t_ops[i].comm->connected = !r;
    }
  for (i = 0; i < t_nops && !r; i++) r = settle(t_ops[i].stream);
  for (i = 0; i < t_nops && !r; i++) {
    group_op_t *o = &t_ops[i];
    if (o->done) continue;
    if (o->comm->shm) r = (int)enqueue(o->comm, &o->op, o->stream);
    else if (o->op.kind == 1) r = run_all_reduce(i);
    else if (o->op.kind == 2) r = run_send(i);
    else if (!o->done) r = CUBERT_NCCL_INVALID_USAGE; /* a recv nobody sends to */
    o->done = 1;
  }
  for (i = 0; i < t_nops && !r; i++)
    if (!t_ops[i].done) r = CUBERT_NCCL_INVALID_USAGE;
  t_nops = 0;
  return (ncclResult_t)r;
}

static ncclResult_t collective(int kind, const void *send, void *recv, size_t count, int type,
                               int peer, ncclComm_t comm, struct CUstream_st *stream) {
  int want = (int)fake_nccl_knob("CUBERT_FAKE_NCCL_RESULT", 0);
  fake_nccl_op_t op;
  if (want) return (ncclResult_t)want;
  if (!comm || fake_nccl_type_size(type) == 0) return CUBERT_NCCL_INVALID_ARGUMENT;
  if (comm->aborted) return CUBERT_NCCL_INVALID_USAGE;
  if (kind != 1 && (peer < 0 || peer >= comm->nranks || peer == comm->rank))
    return CUBERT_NCCL_INVALID_ARGUMENT;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.type = type;
  op.peer = peer;
  count_stat(kind == 1 ? &fake_nccl_stats_.all_reduces
                       : kind == 2 ? &fake_nccl_stats_.sends : &fake_nccl_stats_.recvs);
  if (t_depth > 0) {
    if (t_nops == FAKE_GROUP_OPS) {
      t_error = CUBERT_NCCL_INVALID_USAGE;
      return CUBERT_NCCL_INVALID_USAGE;
    }
    t_ops[t_nops].op = op;
    t_ops[t_nops].comm = comm;
    t_ops[t_nops].stream = stream;
    t_ops[t_nops].done = 0;
    t_nops++;
    return CUBERT_NCCL_SUCCESS;
  }
  if (comm->shm) return enqueue(comm, &op, stream);
  if (comm->nranks != 1) return CUBERT_NCCL_INVALID_USAGE; /* several ranks: a group call */
  if (!comm->connected) { /* its first collective: the set-up */
    if (drain(comm->device)) return CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
    comm->connected = 1;
  }
  if (settle(stream)) return CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
  if (kind == 1) memmove(recv, send, count * fake_nccl_type_size(type));
  return CUBERT_NCCL_SUCCESS;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, cubert_nccl_data_type_t type,
                           cubert_nccl_red_op_t op, ncclComm_t comm, struct CUstream_st *stream) {
  if (op != CUBERT_NCCL_SUM) return CUBERT_NCCL_INVALID_ARGUMENT; /* the fake adds only */
  return collective(1, send, recv, count, (int)type, -1, comm, stream);
}

#if !defined(FAKE_NCCL_NO_SEND)
ncclResult_t ncclSend(const void *send, size_t count, cubert_nccl_data_type_t type, int peer,
                      ncclComm_t comm, struct CUstream_st *stream);
ncclResult_t ncclSend(const void *send, size_t count, cubert_nccl_data_type_t type, int peer,
                      ncclComm_t comm, struct CUstream_st *stream) {
  return collective(2, send, NULL, count, (int)type, peer, comm, stream);
}
#endif

ncclResult_t ncclRecv(void *recv, size_t count, cubert_nccl_data_type_t type, int peer,
                      ncclComm_t comm, struct CUstream_st *stream) {
  return collective(3, NULL, recv, count, (int)type, peer, comm, stream);
}

ncclResult_t ncclGroupStart(void) {
  if (t_depth == 0) {
    t_nops = 0;
    t_error = 0;
  }
  t_depth++;
  return CUBERT_NCCL_SUCCESS;
}

ncclResult_t ncclGroupEnd(void) {
  int r;
  if (t_depth == 0) return CUBERT_NCCL_INVALID_USAGE;
  if (--t_depth > 0) return CUBERT_NCCL_SUCCESS;
  r = t_error ? t_error : (int)run_group();
  t_nops = 0;
  return (ncclResult_t)r;
}
