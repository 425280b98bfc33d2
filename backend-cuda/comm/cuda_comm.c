/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm.c: the CUDA driver's collective primitives
 * (cuda_comm.h): the process-wide table of communicators, joining and
 * leaving, the dispatch of a collective to its path, the communication
 * stream's errors, aborts. docs/collectives.md.
 *
 * Which path a collective takes:
 *   - a local group of one member: NCCL (a one-rank communicator) on S at
 *     once (cuda_comm_direct.c);
 *   - a rank of a process communicator: NCCL on S at once (one rank per
 *     process: nothing here waits for another thread);
 *   - a local group of several members: posted, issued by the member that
 *     completes the round (cuda_comm_round.c): all_reduce through NCCL in
 *     one group call, send / recv as a peer copy (cuMemcpyPeerAsync with
 *     peer access where cuDeviceCanAccessPeer allows it, else the CUDA
 *     driver stages it through host memory; a device copy when both devices
 *     share a GPU).
 */
#include "comm/cuda_comm.h"

#include <string.h>
#include <time.h>

static pthread_mutex_t g_comm_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_comm_once = PTHREAD_ONCE_INIT;
static cuda_group_t g_groups[CUDA_COMM_MAX];
static pthread_mutex_t g_issue_mutexes[CUDA_COMM_MAX];
static int g_slots_ok;

/* NCCL as the tests may replace it. */
static const cubert_nccl_loader_t *g_nccl_override;
static cubert_status_t g_nccl_override_status;
static cubert_error_t g_nccl_override_error;

static void comm_init_slots(void) {
  uint32_t i;
  g_slots_ok = 1;
  for (i = 0; i < CUDA_COMM_MAX; i++)
    if (pthread_mutex_init(&g_issue_mutexes[i], NULL) != 0) g_slots_ok = 0;
}

/* ---- the NCCL call mutexes, one per GPU ---------------------------------------------- */

#define NCCL_MUTEXES 64u
static pthread_mutex_t g_nccl_mutexes[NCCL_MUTEXES];
static pthread_once_t g_nccl_once = PTHREAD_ONCE_INIT;

static void nccl_mutexes_init(void) {
  uint32_t i;
  for (i = 0; i < NCCL_MUTEXES; i++) (void)pthread_mutex_init(&g_nccl_mutexes[i], NULL);
}

void cuda_comm_nccl_lock(uint32_t ordinal) {
  (void)pthread_once(&g_nccl_once, nccl_mutexes_init);
  (void)pthread_mutex_lock(&g_nccl_mutexes[ordinal % NCCL_MUTEXES]);
}

void cuda_comm_nccl_unlock(uint32_t ordinal) {
  (void)pthread_mutex_unlock(&g_nccl_mutexes[ordinal % NCCL_MUTEXES]);
}

/* The distinct slots of `ordinals`, ascending, in out (returns how many):
 * an insertion sort, n being a communicator's few GPUs (every round's
 * group call takes them). */
static uint32_t nccl_slots(const uint32_t *ordinals, uint32_t n, uint32_t *out) {
  uint32_t i, j, k = 0;
  for (i = 0; i < n && k < NCCL_MUTEXES; i++) {
    uint32_t v = ordinals[i] % NCCL_MUTEXES;
    for (j = k; j > 0 && out[j - 1] > v; j--) {
    }
    if (j > 0 && out[j - 1] == v) continue; /* taken once */
    memmove(out + j + 1, out + j, (k - j) * sizeof *out);
    out[j] = v;
    k++;
  }
  return k;
}

void cuda_comm_nccl_lock_all(const uint32_t *ordinals, uint32_t n) {
  uint32_t slots[NCCL_MUTEXES], k = nccl_slots(ordinals, n, slots), i;
  for (i = 0; i < k; i++) cuda_comm_nccl_lock(slots[i]);
}

void cuda_comm_nccl_unlock_all(const uint32_t *ordinals, uint32_t n) {
  uint32_t slots[NCCL_MUTEXES], k = nccl_slots(ordinals, n, slots), i;
  for (i = k; i-- > 0;) cuda_comm_nccl_unlock(slots[i]);
}

void cuda_comm_lock(void) { (void)pthread_mutex_lock(&g_comm_mutex); }
void cuda_comm_unlock(void) { (void)pthread_mutex_unlock(&g_comm_mutex); }
cuda_group_t *cuda_comm_slot(uint32_t i) { return i < CUDA_COMM_MAX ? &g_groups[i] : NULL; }

uint64_t cuda_comm_now_ns(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

CUcontext cuda_comm_ctx_enter(const cubert_cuda_loader_t *cu, CUcontext ctx) {
  CUcontext saved = NULL;
  (void)cu->cuCtxGetCurrent(&saved);
  if (saved != ctx) (void)cu->cuCtxSetCurrent(ctx);
  return saved;
}

CUcontext cuda_comm_ctx_enter_any(const cubert_cuda_loader_t *cu, const CUcontext *ctx,
                                  uint32_t n) {
  CUcontext saved = NULL;
  uint32_t i;
  (void)cu->cuCtxGetCurrent(&saved);
  for (i = 0; i < n; i++)
    if (saved && saved == ctx[i]) return saved;
  if (saved != ctx[0]) (void)cu->cuCtxSetCurrent(ctx[0]);
  return saved;
}

void cuda_comm_ctx_restore(const cubert_cuda_loader_t *cu, CUcontext saved) {
  CUcontext now = NULL;
  (void)cu->cuCtxGetCurrent(&now);
  if (now != saved) (void)cu->cuCtxSetCurrent(saved);
}

cubert_status_t cuda_comm_nccl(const cubert_nccl_loader_t **out, cubert_error_t *out_error) {
  const cubert_nccl_loader_t *n;
  cubert_status_t st;
  cuda_comm_lock();
  n = g_nccl_override;
  st = g_nccl_override_status;
  if (st != CUBERT_STATUS_OK && out_error) *out_error = g_nccl_override_error;
  cuda_comm_unlock();
  if (st != CUBERT_STATUS_OK) return st;
  if (n) {
    *out = n;
    return CUBERT_STATUS_OK;
  }
  return cubert__nccl_loader_shared(out, out_error);
}

void cuda_comm_set_nccl(const cubert_nccl_loader_t *loader, cubert_status_t status,
                        const cubert_error_t *error) {
  cuda_comm_lock();
  g_nccl_override = loader;
  g_nccl_override_status = status;
  if (error) g_nccl_override_error = *error;
  else cubert_error_clear(&g_nccl_override_error);
  cuda_comm_unlock();
}

uint32_t cuda_comm_live(void) {
  uint32_t i, n = 0;
  cuda_comm_lock();
  for (i = 0; i < CUDA_COMM_MAX; i++)
    if (g_groups[i].used && g_groups[i].joined) n++;
  cuda_comm_unlock();
  return n;
}

static cuda_member_t *member_of(cubert_driver_comm_t *c) { return (cuda_member_t *)(void *)c; }

/* ---- joining ------------------------------------------------------------------------------ */

/* The group of (id, size, kind), or a fresh slot (g_comm_mutex held).
 * FAILED_PRECONDITION: aborted, not every member left; RESOURCE_EXHAUSTED. */
static cubert_status_t group_for(uint64_t id, const uint32_t *devices, uint32_t count,
                                 uint32_t kind, const cuda_world_t *world, cuda_group_t **out,
                                 int *out_fresh, cubert_error_t *out_error) {
  cuda_group_t *free_slot = NULL, *g;
  uint32_t i;
  for (i = 0; i < CUDA_COMM_MAX; i++) {
    g = &g_groups[i];
    if (!g->used) {
      if (!free_slot) free_slot = g;
      continue;
    }
    if (g->id != id || g->size != count || g->kind != kind) continue;
    if (kind == CUDA_GROUP_WORLD && g->world != world) continue; /* one rank each */
    if (g->aborted) {
      char reason[CUBERT_ERROR_REASON_SIZE];
      cubert__cuda_format(reason, sizeof reason,
                          "the communicator was aborted and not every member left yet: %s",
                          g->abort_error.reason);
      return cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, &id, 1, reason);
    }
    *out = g;
    *out_fresh = 0;
    return CUBERT_STATUS_OK;
  }
  if (!free_slot) {
    uint64_t f = CUDA_COMM_MAX;
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &f, 1,
                            "no communicator left: the process holds 32 already");
  }
  g = free_slot;
  {
    uint32_t generation = g->generation;
    memset(g, 0, sizeof *g);
    g->issue_mutex = &g_issue_mutexes[g - g_groups];
    g->generation = generation + 1u;
  }
  g->used = 1;
  g->kind = kind;
  g->size = count;
  g->id = id;
  memcpy(g->devices, devices, count * sizeof devices[0]);
  g->timeout_ns = UINT64_MAX;
  *out = g;
  *out_fresh = 1;
  return CUBERT_STATUS_OK;
}

cubert_status_t cuda_comm_create(void *self, const uint32_t *devices, uint32_t count,
                                 uint32_t rank, cubert_driver_comm_t **out_comm,
                                 cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cubert_device_id_t ids[CUBERT_COMMUNICATION_MAX_DEVICES];
  cuda_member_t *m = NULL;
  cuda_world_t *world;
  cuda_group_t *g = NULL;
  uint64_t id = 0;
  uint32_t i, kind = CUDA_GROUP_LOCAL;
  int fresh = 0;
  cubert_status_t st;
  (void)pthread_once(&g_comm_once, comm_init_slots);
  if (!g_slots_ok)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot create the communicators' mutexes");
  if (count == 0 || count > CUDA_COMM_MAX_MEMBERS || rank >= count)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "comm_create: bad device list");
  for (i = 0; i < count; i++) {
    ids[i].type_id = CUBERT_CUDA_DEVICE_TYPE;
    ids[i].index_id = devices[i];
  }
  (void)cubert_communication_id(ids, count, &id, NULL);
  if (cubert_allocator_malloc(d->allocator, sizeof *m, 0, (void **)&m, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "communicator");
  memset(m, 0, sizeof *m);
  m->rank = rank;
  m->ordinal = d->dev->ordinal;
  m->drv = d;
  m->cu = d->dev->cu;
  m->timeout_ns = d->comm_timeout_ns ? d->comm_timeout_ns
                                     : (uint64_t)CUDA_COMM_DEFAULT_TIMEOUT_MS * 1000000ull;
  cuda_comm_lock();
  world = count > 1 ? cuda_world_find(devices[rank], count) : NULL;
  if (world) {
    kind = CUDA_GROUP_WORLD;
    if (cuda_world_rank(world) != rank) {
      uint64_t f[2];
      f[0] = rank;
      f[1] = cuda_world_rank(world);
      cuda_comm_unlock();
      cubert_allocator_free(d->allocator, m, sizeof *m, 0);
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                              "the device list ranks this device differently from its process "
                              "communicator (cubert_cuda_comm_init_rank)");
    }
  }
  st = group_for(id, devices, count, kind, world, &g, &fresh, out_error);
  if (st == CUBERT_STATUS_OK && g->members[rank]) /* the server joins once */
    st = cubert_error_set(out_error, CUBERT_ERROR_FAILED_PRECONDITION, NULL, 0,
                          "this device joined the communicator already");
  if (st != CUBERT_STATUS_OK) {
    cuda_comm_unlock();
    cubert_allocator_free(d->allocator, m, sizeof *m, 0);
    return st;
  }
  m->group = g;
  g->members[rank] = m;
  g->joined++;
  g->ever++;
  g->left &= ~(1ull << (rank & 63u));
  g->cu = m->cu;
  g->ctx[rank] = d->dev->context;
  g->ordinals[rank] = m->ordinal;
  if (m->timeout_ns < g->timeout_ns) g->timeout_ns = m->timeout_ns;
  if (fresh && world) cuda_world_attach(world, g);
  if (fresh && count > 1) cuda_comm_watch_add();
  cuda_comm_unlock();
  if (count > 1 && (st = cuda_comm_watch_sync(out_error)) != CUBERT_STATUS_OK) {
    cuda_comm_destroy(self, (cubert_driver_comm_t *)(void *)m); /* leaves, frees m */
    return st;
  }
  *out_comm = (cubert_driver_comm_t *)(void *)m;
  return CUBERT_STATUS_OK;
}

cubert_status_t cuda_comm_query(void *self, cubert_driver_comm_t *comm, cubert_error_t *out_error) {
  cuda_member_t *m = member_of(comm);
  cubert_status_t st = CUBERT_STATUS_OK;
  (void)self;
  cuda_comm_lock();
  if (m->group->aborted) {
    char reason[CUBERT_ERROR_REASON_SIZE];
    cubert__cuda_format(reason, sizeof reason, "the communicator was aborted: %s",
                        m->group->abort_error.reason);
    st = cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, &m->group->id, 1, reason);
  }
  cuda_comm_unlock();
  return st;
}

/* ---- aborting ------------------------------------------------------------------------------ */

void cuda_comm_abort(cuda_group_t *g, const cubert_error_t *cause, const cubert_error_t *posters,
                     const cubert_error_t *others) {
  cuda_member_t *members[CUDA_COMM_MAX_MEMBERS];
  uint32_t pending[CUDA_COMM_MAX_MEMBERS];
  uint32_t i, n;
  cuda_comm_lock();
  if (!g->aborted) {
    g->aborted = 1;
    g->abort_error = *cause;
  }
  n = g->size;
  for (i = 0; i < n; i++) {
    members[i] = g->members[i];
    pending[i] = members[i] && members[i]->posted > g->issued; /* waits for its peers */
  }
  cuda_comm_unlock();
  /* the errors first: a sync that the abort releases finds them queued */
  for (i = 0; i < n; i++) {
    cuda_member_t *m = members[i];
    const cubert_error_t *e = pending[i] ? posters : others;
    if (!m || m->errors_queued || !e || !m->s) continue; /* one error per member and abort */
    cubert__cuda_stream_queue_error(&m->s->s, e);
    m->errors_queued = 1;
  }
  /* then the gates of rounds that will never be issued, before NCCL's
   * abort: ncclCommAbort frees memory, and cuMemFree waits for every
   * stream of the context, a gated one too, holding a lock of the driver
   * that the gate's write would need (cuda_comm_setup.c) */
  if (g->kind == CUDA_GROUP_LOCAL && g->size > 1)
    for (i = 0; i < n; i++)
      if (members[i]) cuda_comm_release(members[i], NULL);
  /* NCCL's kernels still waiting for peers give up (ncclCommAbort is local) */
  if (g->kind == CUDA_GROUP_WORLD && g->world) {
    cuda_world_abort_comm(g->world);
    g->nccl_state = CUDA_NCCL_FAILED;
    g->nccl_error = *cause;
  }
  if (g->nccl_state == CUDA_NCCL_READY && g->kind == CUDA_GROUP_LOCAL) {
    /* now, or once no other group's gate may be closed on their GPUs */
    cuda_comm_nccl_retire(g->nl, g->nccl, g->ordinals, n, g);
    g->nccl_state = CUDA_NCCL_FAILED;
    g->nccl_error = *cause;
  }
}

/* ---- leaving ------------------------------------------------------------------------------ */

/* Every rank's last round completed, or the deadline passed (then false). */
static int group_done_wait(cuda_group_t *g, uint64_t deadline_ns) {
  uint32_t i;
  for (;;) {
    int busy = 0;
    for (i = 0; i < g->size; i++) {
      CUcontext saved;
      CUresult r;
      if (!g->done[i]) continue;
      saved = cuda_comm_ctx_enter(g->cu, g->ctx[i]);
      r = g->cu->cuEventQuery(g->done[i]);
      cuda_comm_ctx_restore(g->cu, saved);
      if (r == CUDA_ERROR_NOT_READY) busy = 1;
    }
    if (!busy) return 1;
    if (cuda_comm_now_ns() >= deadline_ns) return 0;
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 100000;
      (void)nanosleep(&ts, NULL);
    }
  }
}

/* The last member left (issue_mutex held): the NCCL communicators of a
 * local group go once their last rounds ran (a bounded wait; then they are
 * aborted), the raw events, the slot. */
static void group_free(cuda_group_t *g) {
  uint32_t i;
  if (g->kind == CUDA_GROUP_LOCAL && g->nccl_state == CUDA_NCCL_READY) {
    int done = group_done_wait(g, cuda_comm_now_ns() + (g->timeout_ns < 10000000000ull
                                                        ? g->timeout_ns
                                                        : 10000000000ull));
    /* destroying frees: not while another group's gate may be closed there */
    if (done && !cuda_comm_gpus_gated(g->ordinals, g->size, g)) {
      cuda_comm_nccl_lock_all(g->ordinals, g->size);
      (void)g->nl->ncclGroupStart(); /* NCCL wants the ranks one thread holds in one group */
      for (i = 0; i < g->size; i++)
        if (g->nccl[i]) (void)g->nl->ncclCommDestroy(g->nccl[i]);
      (void)g->nl->ncclGroupEnd();
      cuda_comm_nccl_unlock_all(g->ordinals, g->size);
      for (i = 0; i < g->size; i++) g->nccl[i] = NULL;
    }
  }
  if (g->kind == CUDA_GROUP_LOCAL && g->nl) /* kept, or not destroyed above */
    cuda_comm_nccl_retire(g->nl, g->nccl, g->ordinals, g->size, g);
  for (i = 0; i < g->size; i++)
    if (g->done[i]) {
      CUcontext saved = cuda_comm_ctx_enter(g->cu, g->ctx[i]);
      (void)g->cu->cuEventDestroy(g->done[i]);
      cuda_comm_ctx_restore(g->cu, saved);
      g->done[i] = NULL;
    }
  cuda_comm_lock();
  if (g->world) cuda_world_detach(g->world);
  if (g->size > 1) cuda_comm_watch_remove();
  g->used = 0;
  cuda_comm_unlock();
}

void cuda_comm_destroy(void *self, cubert_driver_comm_t *comm) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_member_t *m = member_of(comm);
  cuda_group_t *g = m->group;
  uint32_t i, waiting = 0, last;
  (void)pthread_mutex_lock(g->issue_mutex);
  cuda_comm_lock();
  if (g->kind == CUDA_GROUP_LOCAL && g->size > 1 && !g->aborted)
    for (i = 0; i < g->size; i++)
      if (g->members[i] && g->members[i]->posted > g->issued) waiting = 1;
  cuda_comm_unlock();
  if (waiting) { /* rounds that can no longer complete: the peers learn it now */
    cubert_error_t e;
    (void)cubert_error_set(&e, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                           "a member of the communicator was released with collectives pending");
    cuda_comm_abort(g, &e, &e, NULL);
  }
  cuda_comm_member_close(m);
  cuda_comm_lock();
  g->members[m->rank] = NULL;
  g->joined--;
  g->left |= 1ull << (m->rank & 63u);
  last = g->joined == 0;
  cuda_comm_unlock();
  if (last) group_free(g);
  (void)pthread_mutex_unlock(g->issue_mutex);
  cubert_allocator_free(d->allocator, m, sizeof *m, 0);
  (void)cuda_comm_watch_sync(NULL);
}

/* ---- collectives ----------------------------------------------------------------------------- */

cubert_status_t cuda_comm_collective(void *self, cubert_driver_comm_t *comm,
                                     const cubert_driver_collective_t *collective,
                                     cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cuda_member_t *m = member_of(comm);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  cuda_group_t *g = m->group;
  (void)self;
  CUBERT_RETURN_IF_ERROR(cuda_comm_query(self, comm, out_error));
  if (collective->kind == CUBERT_COLLECTIVE_ALL_REDUCE &&
      cuda_comm_nccl_type(collective->dtype) < 0) {
    uint64_t f = collective->dtype;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, &f, 1,
                            "all_reduce does not compute on this dtype on the CUDA device");
  }
  cuda_drv_settle(s); /* a lazy post of any group on S goes before this one */
  s->ops++; /* work on S (the fence skip of drv_event_wait counts on it) */
  if (!m->s) { /* others read it under issue_mutex */
    (void)pthread_mutex_lock(g->issue_mutex);
    m->s = s;
    (void)pthread_mutex_unlock(g->issue_mutex);
  }
  if (g->kind == CUDA_GROUP_LOCAL && g->size > 1) return cuda_comm_post(m, collective, s, out_error);
  return cuda_comm_direct(m, collective, s, out_error);
}

/* ---- errors of the communication stream --------------------------------------------------- */

cubert_status_t cuda_comm_stream_errors(void *self, cubert_driver_stream_t *stream,
                                        cubert_error_t *out_error) {
  cuda_drv_t *d = cuda_drv_of(self);
  cuda_drv_stream_t *s = cuda_drv_stream_of(stream);
  if (s->index + 1u == d->stream_count) { /* the communication stream */
    cuda_group_t *mine[CUDA_COMM_MAX];
    uint32_t gens[CUDA_COMM_MAX];
    uint32_t i, n = 0;
    cuda_comm_lock();
    for (i = 0; i < CUDA_COMM_MAX; i++) {
      cuda_group_t *g = &g_groups[i];
      uint32_t r;
      if (!g->used) continue; /* cuda_comm_poll_async checks the rest under issue_mutex */
      for (r = 0; r < g->size; r++)
        if (g->members[r] && g->members[r]->drv == d) {
          gens[n] = g->generation;
          mine[n++] = g;
          break;
        }
    }
    cuda_comm_unlock();
    for (i = 0; i < n; i++) cuda_comm_poll_async(mine[i], gens[i]);
  }
  return cuda_drv_stream_errors(self, stream, out_error);
}
