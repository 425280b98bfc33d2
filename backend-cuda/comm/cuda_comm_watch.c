/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm_watch.c: the collectives' watchdog. One thread per
 * process, running while a communicator of several members or a process
 * communicator exists; every CUDA_COMM_WATCH_PERIOD_NS it looks at each
 * such communicator:
 *   - a round of a local group whose peers did not all post within the
 *     collective timeout: the group is aborted (DEADLINE_EXCEEDED queued on
 *     the members that wait, their gates opened: a sync returns);
 *   - a collective of a process communicator not complete within the
 *     timeout (a peer process never took part): ncclCommAbort, which makes
 *     NCCL's kernels give up, and DEADLINE_EXCEEDED;
 *   - ncclCommGetAsyncError reporting an error (a peer process died, a
 *     network failure): the communicator is aborted and the error queued.
 * So no sync waits on NCCL forever: the device's own waits
 * (cuEventSynchronize, cuStreamSynchronize) return once the watchdog has
 * aborted what they wait for. A group whose issue_mutex is busy (a round
 * being issued) is looked at the next time.
 */
#include "comm/cuda_comm.h"

#include <time.h>

static pthread_mutex_t g_watch_control = PTHREAD_MUTEX_INITIALIZER; /* start / stop */
static pthread_mutex_t g_watch_mutex = PTHREAD_MUTEX_INITIALIZER;   /* the fields below */
static pthread_cond_t g_watch_cond;
static pthread_once_t g_watch_once = PTHREAD_ONCE_INIT;
static int g_watch_cond_ok;
static uint32_t g_watch_needed;
static int g_watch_running, g_watch_stop;
static pthread_t g_watch_thread;
static int g_watch_fail_next; /* tests: the next start fails */

void cuda_comm_watch_fail_next(void) {
  (void)pthread_mutex_lock(&g_watch_mutex);
  g_watch_fail_next = 1;
  (void)pthread_mutex_unlock(&g_watch_mutex);
}

static void watch_once(void) {
  pthread_condattr_t a;
  if (pthread_condattr_init(&a) != 0) return;
  (void)pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  g_watch_cond_ok = pthread_cond_init(&g_watch_cond, &a) == 0;
  (void)pthread_condattr_destroy(&a);
}

void cuda_comm_watch_add(void) {
  (void)pthread_mutex_lock(&g_watch_mutex);
  g_watch_needed++;
  (void)pthread_mutex_unlock(&g_watch_mutex);
}

void cuda_comm_watch_remove(void) {
  (void)pthread_mutex_lock(&g_watch_mutex);
  if (g_watch_needed) g_watch_needed--;
  (void)pthread_mutex_unlock(&g_watch_mutex);
}

void cuda_comm_poll_async(cuda_group_t *g, uint32_t generation) {
  cubert_nccl_comm_t comms[CUDA_COMM_MAX_MEMBERS];
  uint32_t ordinals[CUDA_COMM_MAX_MEMBERS];
  const cubert_nccl_loader_t *nl = NULL;
  uint32_t i, n = 0;
  int bad = CUBERT_NCCL_SUCCESS;
  if (pthread_mutex_trylock(g->issue_mutex) != 0) return;
  cuda_comm_lock();
  if (g->used && g->generation == generation && !g->aborted && g->nccl_state == CUDA_NCCL_READY) {
    nl = g->nl;
    if (g->kind == CUDA_GROUP_WORLD) {
      for (i = 0; i < g->size && !n; i++) /* this process's one rank */
        if (g->members[i] && g->world && cuda_world_comm(g->world)) {
          ordinals[n] = g->ordinals[i];
          comms[n++] = cuda_world_comm(g->world);
        }
    } else {
      for (i = 0; i < g->size; i++)
        if (g->nccl[i]) {
          ordinals[n] = g->ordinals[i];
          comms[n++] = g->nccl[i];
        }
    }
  }
  cuda_comm_unlock();
  for (i = 0; i < n && bad == CUBERT_NCCL_SUCCESS; i++) {
    cubert__nccl_result_t state = CUBERT_NCCL_SUCCESS;
    int r;
    cuda_comm_nccl_lock(ordinals[i]);
    r = (int)nl->ncclCommGetAsyncError(comms[i], &state);
    cuda_comm_nccl_unlock(ordinals[i]);
    if (r != CUBERT_NCCL_SUCCESS) bad = r;
    else if (state != CUBERT_NCCL_SUCCESS && state != CUBERT_NCCL_IN_PROGRESS) bad = (int)state;
  }
  if (bad != CUBERT_NCCL_SUCCESS) {
    cubert_error_t e;
    (void)cubert__nccl_error_set(&e, nl, bad, "a collective (ncclCommGetAsyncError)");
    cuda_comm_abort(g, &e, &e, &e);
  }
  (void)pthread_mutex_unlock(g->issue_mutex);
}

/* One look at every communicator that needs watching. */
/* The process's CUDA state is lost (cubert__cuda_process_lost): every
 * communicator of several members is aborted with the first cause, so the
 * rounds waiting for a member end with an error now instead of at their
 * timeout (a group whose issue_mutex is busy: the next look). */
static void abort_all_lost(const cubert_error_t *cause) {
  uint32_t i;
  for (i = 0; i < CUDA_COMM_MAX; i++) {
    cuda_group_t *g = cuda_comm_slot(i);
    pthread_mutex_t *mutex;
    uint32_t take;
    cuda_comm_lock();
    mutex = g->used && g->size > 1 && !g->aborted ? g->issue_mutex : NULL;
    cuda_comm_unlock();
    if (!mutex || pthread_mutex_trylock(mutex) != 0) continue;
    cuda_comm_lock();
    take = g->used && g->size > 1 && !g->aborted;
    cuda_comm_unlock();
    if (take) cuda_comm_abort(g, cause, cause, cause);
    (void)pthread_mutex_unlock(mutex);
  }
}

static void watch_scan(void) {
  cubert_error_t cause;
  uint32_t i;
  if (cubert__cuda_process_lost(&cause)) abort_all_lost(&cause);
  for (i = 0; i < CUDA_COMM_MAX; i++) {
    cuda_group_t *g = cuda_comm_slot(i);
    uint32_t generation, kind, take;
    cuda_comm_lock();
    take = g->used && g->size > 1 && !g->aborted;
    generation = g->generation;
    kind = g->kind;
    cuda_comm_unlock();
    if (!take) continue;
    if (kind == CUDA_GROUP_LOCAL) cuda_comm_round_check(g, generation, cuda_comm_now_ns());
    else cuda_world_check(g, generation, cuda_comm_now_ns());
    cuda_comm_poll_async(g, generation);
  }
}

static void *watch_main(void *arg) {
  (void)arg;
  (void)pthread_mutex_lock(&g_watch_mutex);
  while (!g_watch_stop) {
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)CUDA_COMM_WATCH_PERIOD_NS;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    (void)pthread_cond_timedwait(&g_watch_cond, &g_watch_mutex, &ts);
    if (g_watch_stop) break;
    (void)pthread_mutex_unlock(&g_watch_mutex);
    watch_scan();
    (void)pthread_mutex_lock(&g_watch_mutex);
  }
  (void)pthread_mutex_unlock(&g_watch_mutex);
  return NULL;
}

cubert_status_t cuda_comm_watch_sync(cubert_error_t *out_error) {
  cubert_status_t st = CUBERT_STATUS_OK;
  (void)pthread_once(&g_watch_once, watch_once);
  (void)pthread_mutex_lock(&g_watch_control);
  (void)pthread_mutex_lock(&g_watch_mutex);
  if (g_watch_needed && !g_watch_running) {
    int fail = g_watch_fail_next;
    g_watch_fail_next = 0;
    g_watch_stop = 0;
    if (fail || !g_watch_cond_ok || pthread_create(&g_watch_thread, NULL, watch_main, NULL) != 0)
      st = cubert_error_set(out_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0,
                            "cannot start the collectives' watchdog thread");
    else
      g_watch_running = 1;
    (void)pthread_mutex_unlock(&g_watch_mutex);
  } else if (!g_watch_needed && g_watch_running) {
    g_watch_stop = 1;
    (void)pthread_cond_signal(&g_watch_cond);
    (void)pthread_mutex_unlock(&g_watch_mutex);
    (void)pthread_join(g_watch_thread, NULL);
    (void)pthread_mutex_lock(&g_watch_mutex);
    g_watch_running = 0;
    (void)pthread_mutex_unlock(&g_watch_mutex);
  } else {
    (void)pthread_mutex_unlock(&g_watch_mutex);
  }
  (void)pthread_mutex_unlock(&g_watch_control);
  return st;
}
