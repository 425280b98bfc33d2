/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm_world.c: process communicators, one rank per
 * process (cubert/cuda.h: cubert_cuda_comm_init_rank). docs/collectives.md.
 *
 * The NCCL unique id reaches every rank either from the caller (the 128
 * bytes of cubert_cuda_comm_unique_id, sent however it likes) or through a
 * file the caller names: rank 0 makes the id and writes "<file>.<pid>.tmp",
 * renamed to <file> once complete (so a reader never sees half an id); the
 * other ranks poll for <file> (every millisecond, up to the timeout). Rank 0
 * removes the file once every rank joined (NCCL's init completes only then).
 * The file must not exist before the run (a stale one from an earlier run
 * would be read): give each run its own path, e.g. in a fresh mkdtemp
 * directory, as examples/cuda_multiprocess.c does.
 *
 * The communicator is non-blocking (ncclCommInitRankConfig, blocking = 0;
 * NCCL 2.14): its init and every call that NCCL answers ncclInProgress are
 * polled (ncclCommGetAsyncError) for at most the timeout, then aborted, so
 * a rank whose peers never come returns an error instead of hanging.
 * A collective's device set on such a device names one device per rank, and
 * this device's position in the sorted list must be its rank (the example
 * gives process r the device index r).
 *
 * The record lives until its device is destroyed (cuda_comm_device_gone:
 * ncclCommDestroy, its work having been synchronized by the server).
 */
#include "comm/cuda_comm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cubert/driver/server.h"
#include "cubert/cuda.h"

#define CUDA_WORLD_MAX 8
#define ID_FILE_MAGIC "cubertid"

struct cuda_world_t {
  uint32_t used;
  uint32_t index;  /* the device's index id */
  uint32_t rank, nranks;
  cuda_drv_t *drv;
  const cubert_nccl_loader_t *nl;
  cubert_nccl_comm_t comm; /* NULL once aborted */
  cuda_group_t *group;     /* the server's communicator over it, if made */
  uint64_t timeout_ns;
  /* collectives enqueued, oldest first: the event after each (raw) */
  CUevent track[CUDA_COMM_TRACK];
  uint64_t track_ns[CUDA_COMM_TRACK];
  uint32_t head, count;
  uint64_t progress_ns; /* when the oldest tracked one was last seen complete */
};

static cuda_world_t g_worlds[CUDA_WORLD_MAX]; /* g_comm_mutex */

cuda_world_t *cuda_world_find(uint32_t index, uint32_t nranks) {
  uint32_t i;
  for (i = 0; i < CUDA_WORLD_MAX; i++)
    if (g_worlds[i].used == 1 && g_worlds[i].index == index && g_worlds[i].nranks == nranks)
      return &g_worlds[i];
  return NULL;
}

uint32_t cuda_world_rank(const cuda_world_t *w) { return w->rank; }
cubert_nccl_comm_t cuda_world_comm(const cuda_world_t *w) { return w->comm; }

void cuda_world_attach(cuda_world_t *w, cuda_group_t *g) {
  w->group = g;
  g->world = w;
  g->nl = w->nl;
  g->nccl_state = CUDA_NCCL_READY;
}

void cuda_world_detach(cuda_world_t *w) {
  if (w->group) w->group->world = NULL;
  w->group = NULL;
}

uint32_t cuda_world_live(void) {
  uint32_t i, n = 0;
  cuda_comm_lock();
  for (i = 0; i < CUDA_WORLD_MAX; i++) n += g_worlds[i].used == 1;
  cuda_comm_unlock();
  return n;
}

/* issue_mutex of the group held (or no group): abort the NCCL communicator. */
void cuda_world_abort_comm(cuda_world_t *w) {
  if (!w->comm) return;
  cuda_comm_nccl_lock(w->drv->dev->ordinal);
  (void)w->nl->ncclCommAbort(w->comm);
  cuda_comm_nccl_unlock(w->drv->dev->ordinal);
  w->comm = NULL;
}

/* ---- the timeout ----------------------------------------------------------------------------- */

void cuda_world_track(cuda_world_t *w, cuda_member_t *m) {
  uint32_t slot;
  CUresult r;
  if (w->count == CUDA_COMM_TRACK) { /* the newest one's completion covers the oldest */
    w->head = (w->head + 1u) % CUDA_COMM_TRACK;
    w->count--;
  }
  slot = (w->head + w->count) % CUDA_COMM_TRACK;
  if (!w->track[slot] && m->cu->cuEventCreate(&w->track[slot], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    w->track[slot] = NULL;
    return;
  }
  r = m->cu->cuEventRecord(w->track[slot], m->s->s.handle);
  if (r != CUDA_SUCCESS) return;
  if (w->count == 0) w->progress_ns = cuda_comm_now_ns();
  w->track_ns[slot] = cuda_comm_now_ns();
  w->count++;
}

void cuda_world_check(cuda_group_t *g, uint32_t generation, uint64_t now_ns) {
  cuda_world_t *w;
  uint64_t start;
  int expired = 0;
  if (pthread_mutex_trylock(g->issue_mutex) != 0) return;
  cuda_comm_lock();
  w = g->used && g->generation == generation && !g->aborted ? g->world : NULL;
  cuda_comm_unlock();
  if (w) {
    CUcontext saved = cuda_comm_ctx_enter(g->cu, w->drv->dev->context);
    while (w->count) {
      CUresult r = g->cu->cuEventQuery(w->track[w->head]);
      if (r == CUDA_ERROR_NOT_READY) break;
      w->head = (w->head + 1u) % CUDA_COMM_TRACK;
      w->count--;
      w->progress_ns = now_ns;
    }
    cuda_comm_ctx_restore(g->cu, saved);
    if (w->count) {
      start = w->track_ns[w->head] > w->progress_ns ? w->track_ns[w->head] : w->progress_ns;
      expired = now_ns > start && now_ns - start > w->timeout_ns;
    }
  }
  if (expired) {
    cubert_error_t e;
    uint64_t t = w->timeout_ns;
    (void)cubert_error_set(&e, CUBERT_ERROR_DEADLINE_EXCEEDED, &t, 1,
                           "a collective of the process communicator did not complete before the "
                           "collective timeout (a peer never took part); it is aborted");
    cuda_comm_abort(g, &e, &e, &e);
  }
  (void)pthread_mutex_unlock(g->issue_mutex);
}

/* ---- teardown with the device --------------------------------------------------------------- */

void cuda_comm_device_gone(cuda_drv_t *d) {
  uint32_t i;
  for (i = 0; i < CUDA_WORLD_MAX; i++) {
    cuda_world_t *w = &g_worlds[i];
    uint32_t k;
    cuda_comm_lock();
    if (!w->used || w->drv != d) {
      cuda_comm_unlock();
      continue;
    }
    if (w->group) cuda_world_detach(w);
    cuda_comm_unlock();
    if (cubert__cuda_device_enter(d->dev, NULL) == CUBERT_STATUS_OK) {
      CUcontext saved = cuda_comm_ctx_enter(d->dev->cu, d->dev->context);
      cuda_comm_nccl_lock(d->dev->ordinal);
      if (w->comm) (void)w->nl->ncclCommDestroy(w->comm); /* the server synchronized its work */
      cuda_comm_nccl_unlock(d->dev->ordinal);
      cuda_comm_ctx_restore(d->dev->cu, saved);
      for (k = 0; k < CUDA_COMM_TRACK; k++)
        if (w->track[k]) (void)d->dev->cu->cuEventDestroy(w->track[k]);
    } else if (w->comm) {
      cuda_world_abort_comm(w); /* a lost device: nothing is waited for */
    }
    cuda_comm_lock();
    memset(w, 0, sizeof *w);
    cuda_comm_watch_remove();
    cuda_comm_unlock();
    (void)cuda_comm_watch_sync(NULL);
  }
}

/* ---- the unique id ----------------------------------------------------------------------------- */

cubert_status_t cubert_cuda_comm_unique_id(cubert_cuda_comm_id_t *out_id, cubert_error_t *out_error) {
  const cubert_nccl_loader_t *nl = NULL;
  cubert_nccl_unique_id_t id;
  int res;
  if (!out_id)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_comm_unique_id: NULL out_id");
  CUBERT_RETURN_IF_ERROR(cuda_comm_nccl(&nl, out_error));
  res = (int)nl->ncclGetUniqueId(&id);
  if (res != CUBERT_NCCL_SUCCESS) return cubert__nccl_error_set(out_error, nl, res, "ncclGetUniqueId");
  memcpy(out_id->bytes, id.internal, sizeof out_id->bytes);
  return CUBERT_STATUS_OK;
}

static cubert_status_t id_file_write(const char *path, const cubert_cuda_comm_id_t *id,
                                     cubert_error_t *out_error) {
  char tmp[4096];
  FILE *f;
  int ok;
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= sizeof tmp)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "id_file: path too long");
  f = fopen(tmp, "wb");
  if (!f) {
    uint64_t e = (uint64_t)errno;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, &e, 1,
                            "id_file: cannot create the temporary file next to it");
  }
  ok = fwrite(ID_FILE_MAGIC, 1, 8, f) == 8 && fwrite(id->bytes, 1, sizeof id->bytes, f) == sizeof id->bytes;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    uint64_t e = (uint64_t)errno;
    (void)remove(tmp);
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, &e, 1, "id_file: cannot write it");
  }
  return CUBERT_STATUS_OK;
}

/* 1: read, 0: not there (yet), -1: there but not an id. */
static int id_file_read(const char *path, cubert_cuda_comm_id_t *out_id) {
  unsigned char buf[8 + sizeof out_id->bytes + 1];
  size_t n;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  n = fread(buf, 1, sizeof buf, f);
  (void)fclose(f);
  if (n != 8 + sizeof out_id->bytes || memcmp(buf, ID_FILE_MAGIC, 8) != 0) return -1;
  memcpy(out_id->bytes, buf + 8, sizeof out_id->bytes);
  return 1;
}

static cubert_status_t id_file_wait(const char *path, uint64_t timeout_ns, cubert_cuda_comm_id_t *out_id,
                                    cubert_error_t *out_error) {
  uint64_t start = cuda_comm_now_ns();
  for (;;) {
    int r = id_file_read(path, out_id);
    if (r > 0) return CUBERT_STATUS_OK;
    if (r < 0)
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "id_file: the file is not a cubert NCCL id (136 bytes)");
    if (cuda_comm_now_ns() - start > timeout_ns) {
      uint64_t t = timeout_ns;
      return cubert_error_set(out_error, CUBERT_ERROR_DEADLINE_EXCEEDED, &t, 1,
                              "id_file: rank 0 wrote no NCCL id before the timeout");
    }
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 1000000;
      (void)nanosleep(&ts, NULL);
    }
  }
}

/* ---- cubert_cuda_comm_init_rank --------------------------------------------------------------- */

void cubert_cuda_comm_options_initialize(cubert_cuda_comm_options_t *options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
}

typedef struct init_task_t {
  const cubert_cuda_comm_options_t *o;
  const cubert_nccl_loader_t *nl;
  cuda_drv_t *drv;
  cubert_cuda_comm_id_t id;
  uint64_t timeout_ns;
  uint32_t index;
} init_task_t;

/* ncclCommInitRankConfig (non-blocking), polled up to the timeout. */
static cubert_status_t init_comm(init_task_t *t, cubert_nccl_comm_t *out_comm, cubert_error_t *out_error) {
  cubert_nccl_config_t cfg;
  cubert_nccl_unique_id_t id;
  cubert_nccl_comm_t comm = NULL;
  cubert__nccl_result_t state = CUBERT_NCCL_IN_PROGRESS;
  uint64_t start = cuda_comm_now_ns();
  uint32_t ord = t->drv->dev->ordinal;
  CUcontext saved;
  int res;
  cfg.size = sizeof cfg;
  cfg.magic = CUBERT_NCCL_CONFIG_MAGIC;
  cfg.version = CUBERT_NCCL_CONFIG_VERSION;
  cfg.blocking = 0;
  memcpy(id.internal, t->id.bytes, sizeof id.internal);
  CUBERT_RETURN_IF_ERROR(cubert__cuda_device_enter(t->drv->dev, out_error));
  saved = cuda_comm_ctx_enter(t->drv->dev->cu, t->drv->dev->context);
  cuda_comm_nccl_lock(ord);
  res = (int)t->nl->ncclCommInitRankConfig(&comm, (int)t->o->nranks, id, (int)t->o->rank, &cfg);
  cuda_comm_nccl_unlock(ord);
  while ((res == CUBERT_NCCL_SUCCESS || res == CUBERT_NCCL_IN_PROGRESS) && comm) {
    int r;
    cuda_comm_nccl_lock(ord);
    r = (int)t->nl->ncclCommGetAsyncError(comm, &state);
    cuda_comm_nccl_unlock(ord);
    if (r != CUBERT_NCCL_SUCCESS) state = CUBERT_NCCL_INTERNAL_ERROR;
    if (state != CUBERT_NCCL_IN_PROGRESS) break;
    if (cuda_comm_now_ns() - start > t->timeout_ns) break;
    {
      struct timespec ts;
      ts.tv_sec = 0;
      ts.tv_nsec = 200000;
      (void)nanosleep(&ts, NULL);
    }
  }
  cuda_comm_ctx_restore(t->drv->dev->cu, saved);
  if (res != CUBERT_NCCL_SUCCESS && res != CUBERT_NCCL_IN_PROGRESS) {
    cuda_comm_nccl_lock(ord);
    if (comm) (void)t->nl->ncclCommAbort(comm);
    cuda_comm_nccl_unlock(ord);
    return cubert__nccl_error_set(out_error, t->nl, res, "ncclCommInitRankConfig");
  }
  if (!comm) return cubert__nccl_error_set(out_error, t->nl, CUBERT_NCCL_INTERNAL_ERROR, "ncclCommInitRankConfig");
  if (state != CUBERT_NCCL_SUCCESS) {
    cuda_comm_nccl_lock(ord);
    (void)t->nl->ncclCommAbort(comm);
    cuda_comm_nccl_unlock(ord);
    if (state == CUBERT_NCCL_IN_PROGRESS) {
      uint64_t f = t->timeout_ns;
      return cubert_error_set(out_error, CUBERT_ERROR_DEADLINE_EXCEEDED, &f, 1,
                              "the NCCL communicator's ranks did not all join before the timeout");
    }
    return cubert__nccl_error_set(out_error, t->nl, (int)state, "ncclCommInitRankConfig (asynchronous)");
  }
  *out_comm = comm;
  return CUBERT_STATUS_OK;
}

static cubert_status_t init_run(void *user, cubert_error_t *out_error) {
  init_task_t *t = (init_task_t *)user;
  cubert_nccl_comm_t comm = NULL;
  cuda_world_t *w = NULL;
  uint32_t i;
  cubert_status_t st;
  cuda_comm_lock();
  for (i = 0; i < CUDA_WORLD_MAX; i++)
    if (g_worlds[i].used && g_worlds[i].index == t->index) {
      cuda_comm_unlock();
      return cubert_error_set(out_error, CUBERT_ERROR_FAILED_PRECONDITION, NULL, 0,
                              "this device has a process communicator already");
    }
  for (i = 0; i < CUDA_WORLD_MAX && !w; i++)
    if (!g_worlds[i].used) w = &g_worlds[i];
  if (w) { /* reserved while NCCL initializes */
    w->used = 2;
    w->index = t->index;
  }
  cuda_comm_unlock();
  if (!w) {
    uint64_t f = CUDA_WORLD_MAX;
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &f, 1,
                            "no process communicator left (8 in the process)");
  }
  st = init_comm(t, &comm, out_error);
  if (st != CUBERT_STATUS_OK) {
    cuda_comm_lock();
    w->used = 0;
    cuda_comm_unlock();
    return st;
  }
  cuda_comm_lock();
  memset(w, 0, sizeof *w);
  w->used = 1;
  w->index = t->index;
  w->rank = t->o->rank;
  w->nranks = t->o->nranks;
  w->drv = t->drv;
  w->nl = t->nl;
  w->comm = comm;
  w->timeout_ns = t->timeout_ns;
  cuda_comm_watch_add();
  cuda_comm_unlock();
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_cuda_comm_init_rank(cubert_client_t *client,
                                           const cubert_cuda_comm_options_t *options,
                                           cubert_error_t *out_error) {
  const cubert_driver_t *driver = NULL;
  void *self = NULL;
  init_task_t t;
  cubert_status_t st;
  char have[32];
  if (!client || !options)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_comm_init_rank: NULL argument");
  if (options->nranks < 2 || options->nranks > CUDA_COMM_MAX_MEMBERS || options->rank >= options->nranks) {
    uint64_t f[2];
    f[0] = options->rank;
    f[1] = options->nranks;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "cubert_cuda_comm_init_rank: needs 2..64 ranks and rank < nranks");
  }
  if (!options->id == !options->id_file || (options->id_file && !*options->id_file))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_cuda_comm_init_rank: give exactly one of id and id_file");
  if (cubert_server_driver_of(client, &driver, &self) != CUBERT_STATUS_OK || driver != &cuda_driver)
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, NULL, 0,
                            "cubert_cuda_comm_init_rank: not a CUDA device");
  memset(&t, 0, sizeof t);
  t.o = options;
  t.drv = (cuda_drv_t *)self;
  t.index = cubert_client_device(client).index_id;
  t.timeout_ns = (uint64_t)(options->timeout_ms ? options->timeout_ms : CUDA_COMM_DEFAULT_TIMEOUT_MS) *
                 1000000ull;
  CUBERT_RETURN_IF_ERROR(cuda_comm_nccl(&t.nl, out_error));
  if (!t.nl->ncclCommInitRankConfig) {
    cubert__nccl_version_text(t.nl->version, have, sizeof have);
    return cubert__nccl_unavailable(out_error, 0,
                                    "process communicators need NCCL 2.14 or newer "
                                    "(ncclCommInitRankConfig); this is %s", have);
  }
  if (options->id) {
    t.id = *options->id;
  } else if (options->rank == 0) {
    CUBERT_RETURN_IF_ERROR(cubert_cuda_comm_unique_id(&t.id, out_error));
    CUBERT_RETURN_IF_ERROR(id_file_write(options->id_file, &t.id, out_error));
  } else {
    CUBERT_RETURN_IF_ERROR(id_file_wait(options->id_file, t.timeout_ns, &t.id, out_error));
  }
  st = cubert_client_exclusive(client, init_run, &t, out_error);
  if (options->id_file && options->rank == 0) (void)remove(options->id_file);
  if (st == CUBERT_STATUS_OK) st = cuda_comm_watch_sync(out_error);
  return st;
}
