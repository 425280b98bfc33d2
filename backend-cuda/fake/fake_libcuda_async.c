/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/fake/fake_libcuda_async.c: the fake's asynchronous mode
 * (CUBERT_FAKE_CUDA_ASYNC=1, read once per process): work is queued on its
 * stream and runs later, as on a GPU, instead of when it is enqueued.
 *
 * Queued: kernels the host runner captured (libcubert's: the launched
 * descriptor and argument block are copied at the launch), device-to-device
 * copies and memsets, host-to-device copies (the source is read at the call,
 * as CUDA does for pageable memory), device-to-host copies into pinned memory
 * (cuMemHostAlloc), event records and cuStreamWaitEvent. Everything else runs
 * at once after the stream's queue ran (a device-to-host copy into pageable
 * memory returns once done, as in CUDA). A queue runs only when something
 * needs it (lazily, on the thread that asks): cuStreamSynchronize /
 * cuStreamQuery of its stream, cuEventSynchronize / cuEventQuery of an event
 * recorded there (up to that event), a stream that waits on such an event
 * reaching the wait, and the context-synchronizing calls (cuMemFree,
 * cuMemFreeHost, cuModuleLoadDataEx, cuModuleUnload, ...: every queue). So a
 * program that reads a result before waiting for it, or a stream that reads
 * what another one writes without waiting for it, sees the old bytes: the
 * fake catches the missing wait, deterministically. The NULL stream's work
 * runs at once.
 */
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda_internal.h"

typedef enum fake_op_kind_e { OP_COPY, OP_SET, OP_LAUNCH, OP_RECORD, OP_WAIT } fake_op_kind_t;

struct fake_op_t {
  struct fake_op_t *next;
  fake_op_kind_t kind;
  void *dst;
  const void *src;
  void *owned; /* a snapshot of the source (freed with the op) */
  size_t n;
  unsigned char value;
  void *token; /* OP_LAUNCH: the captured kernel */
  unsigned grid[3], block[3], shared;
  struct CUstream_st *target; /* OP_WAIT */
  uint64_t seq;               /* OP_RECORD: the record's number; OP_WAIT: the target's */
};

static pthread_mutex_t g_exec = PTHREAD_MUTEX_INITIALIZER;
static int g_async = -1;
static fake_cuda_kernel_capture_fn g_capture;
static fake_cuda_kernel_run_fn g_run;
static fake_cuda_kernel_release_fn g_release;

int fake_async_on(void) {
  int v = __atomic_load_n(&g_async, __ATOMIC_ACQUIRE);
  if (v < 0) {
    v = fake_knob("CUBERT_FAKE_CUDA_ASYNC", 0) ? 1 : 0;
    __atomic_store_n(&g_async, v, __ATOMIC_RELEASE);
  }
  return v;
}

void cubert_fake_cuda_set_kernel_capture(fake_cuda_kernel_capture_fn capture,
                                         fake_cuda_kernel_run_fn run,
                                         fake_cuda_kernel_release_fn release) {
  pthread_mutex_lock(&fake_mutex);
  g_capture = capture;
  g_run = run;
  g_release = release;
  pthread_mutex_unlock(&fake_mutex);
}

/* ---- pinned memory (cuMemHostAlloc blocks) ---------------------------------- */

typedef struct pinned_t {
  struct pinned_t *next;
  const unsigned char *p;
  size_t n;
} pinned_t;
static pinned_t *g_pinned;

void fake_pinned_add(const void *p, size_t n) {
  pinned_t *x = (pinned_t *)malloc(sizeof *x);
  if (!x) return; /* then it counts as pageable: copies into it run at once */
  x->p = (const unsigned char *)p;
  x->n = n;
  pthread_mutex_lock(&fake_mutex);
  x->next = g_pinned;
  g_pinned = x;
  pthread_mutex_unlock(&fake_mutex);
}

void fake_pinned_remove(const void *p) {
  pinned_t **pp, *x = NULL;
  pthread_mutex_lock(&fake_mutex);
  for (pp = &g_pinned; *pp; pp = &(*pp)->next)
    if ((*pp)->p == (const unsigned char *)p) {
      x = *pp;
      *pp = x->next;
      break;
    }
  pthread_mutex_unlock(&fake_mutex);
  free(x);
}

static int pinned_has(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  const pinned_t *x;
  int found = 0;
  pthread_mutex_lock(&fake_mutex);
  for (x = g_pinned; x && !found; x = x->next) found = c >= x->p && c + n <= x->p + x->n;
  pthread_mutex_unlock(&fake_mutex);
  return found;
}

/* ---- running queues -------------------------------------------------------------- */

static void op_free(struct fake_op_t *op) {
  if (op->token && g_release) g_release(op->token);
  free(op->owned);
  free(op);
}

static void run_locked(struct CUstream_st *s, uint64_t upto);

static void op_run(struct CUstream_st *s, struct fake_op_t *op) {
  switch (op->kind) {
    case OP_COPY: memmove(op->dst, op->owned ? op->owned : op->src, op->n); break;
    case OP_SET: memset(op->dst, op->value, op->n); break;
    case OP_LAUNCH:
      if (fake_process_poisoned() == CUDA_SUCCESS && g_run) {
        CUresult r = (CUresult)g_run(op->token, op->grid, op->block, op->shared);
        if (r != CUDA_SUCCESS) { /* a kernel that failed on the device: sticky */
          struct CUctx_st *saved = fake_current;
          fake_current = s->ctx;
          fake_poison(fake_is_fatal(r) ? r : CUDA_ERROR_LAUNCH_FAILED);
          fake_current = saved;
        }
      }
      break;
    case OP_RECORD:
      pthread_mutex_lock(&fake_mutex);
      if (s->ran < op->seq) s->ran = op->seq;
      pthread_mutex_unlock(&fake_mutex);
      break;
    case OP_WAIT:
      run_locked(op->target, op->seq);
      pthread_mutex_lock(&fake_mutex);
      fake_stream_unref(op->target);
      pthread_mutex_unlock(&fake_mutex);
      break;
  }
}

/* Run s's queue until its record `upto` ran (UINT64_MAX: all of it); g_exec held. */
static void run_locked(struct CUstream_st *s, uint64_t upto) {
  for (;;) {
    struct fake_op_t *op;
    pthread_mutex_lock(&fake_mutex);
    op = s->ops_head;
    if (!op || (upto != UINT64_MAX && s->ran >= upto)) {
      if (!op) s->ran = s->recorded; /* nothing left: every record ran */
      pthread_mutex_unlock(&fake_mutex);
      return;
    }
    s->ops_head = op->next;
    if (!s->ops_head) s->ops_tail = NULL;
    pthread_mutex_unlock(&fake_mutex);
    op_run(s, op);
    op_free(op);
  }
}

void fake_async_run(struct CUstream_st *s, uint64_t upto) {
  if (!s || !fake_async_on()) return;
  pthread_mutex_lock(&g_exec);
  run_locked(s, upto);
  pthread_mutex_unlock(&g_exec);
}

void fake_async_run_all(void) {
  if (!fake_async_on()) return;
  pthread_mutex_lock(&g_exec);
  for (;;) { /* a queue's waits may run other queues: restart until all are empty */
    struct CUstream_st *s, *busy = NULL;
    pthread_mutex_lock(&fake_mutex);
    for (s = fake_live_streams; s && !busy; s = s->live_next)
      if (s->ops_head) busy = s;
    pthread_mutex_unlock(&fake_mutex);
    if (!busy) break;
    run_locked(busy, UINT64_MAX);
  }
  pthread_mutex_unlock(&g_exec);
}

/* ---- queueing ---------------------------------------------------------------------- */

static int enqueue(struct CUstream_st *s, struct fake_op_t *op) {
  op->next = NULL;
  pthread_mutex_lock(&fake_mutex);
  if (s->ops_tail) s->ops_tail->next = op;
  else s->ops_head = op;
  s->ops_tail = op;
  pthread_mutex_unlock(&fake_mutex);
  return 1;
}

static struct fake_op_t *op_new(fake_op_kind_t kind) {
  struct fake_op_t *op = (struct fake_op_t *)calloc(1, sizeof *op);
  if (op) op->kind = kind;
  return op;
}

int fake_async_copy(CUstream s, void *dst, const void *src, size_t n, int from_host, int to_host) {
  struct fake_op_t *op;
  if (!s || !fake_async_on() || n == 0) return 0;
  if (to_host && !pinned_has(dst, n)) return 0; /* pageable: the call returns once done */
  op = op_new(OP_COPY);
  if (!op) return 0;
  if (from_host) { /* read now (pageable memory is staged by the call) */
    op->owned = malloc(n);
    if (!op->owned) {
      free(op);
      return 0;
    }
    memcpy(op->owned, src, n);
  }
  op->dst = dst;
  op->src = src;
  op->n = n;
  return enqueue(s, op);
}

int fake_async_set(CUstream s, void *dst, unsigned char value, size_t n) {
  struct fake_op_t *op;
  if (!s || !fake_async_on() || n == 0) return 0;
  op = op_new(OP_SET);
  if (!op) return 0;
  op->dst = dst;
  op->value = value;
  op->n = n;
  return enqueue(s, op);
}

int fake_async_launch(CUstream s, const char *entry, const unsigned grid[3],
                      const unsigned block[3], unsigned shared, void **params) {
  struct fake_op_t *op;
  void *token;
  fake_cuda_kernel_capture_fn capture;
  if (!s || !fake_async_on()) return 0;
  pthread_mutex_lock(&fake_mutex);
  capture = g_capture;
  pthread_mutex_unlock(&fake_mutex);
  if (!capture) return 0;
  token = capture(entry, params);
  if (!token) return 0;
  op = op_new(OP_LAUNCH);
  if (!op) {
    if (g_release) g_release(token);
    return 0;
  }
  op->token = token;
  memcpy(op->grid, grid, sizeof op->grid);
  memcpy(op->block, block, sizeof op->block);
  op->shared = shared;
  return enqueue(s, op);
}

void fake_async_record(struct CUstream_st *s, uint64_t seq) {
  struct fake_op_t *op;
  int queued;
  if (!s) return;
  pthread_mutex_lock(&fake_mutex);
  queued = s->ops_head != NULL;
  if (!queued) s->ran = seq; /* nothing before it: the point is reached */
  pthread_mutex_unlock(&fake_mutex);
  if (!queued) return;
  op = op_new(OP_RECORD);
  if (!op) { /* cannot queue the mark: run what is before it */
    fake_async_run(s, UINT64_MAX);
    return;
  }
  op->seq = seq;
  (void)enqueue(s, op);
}

void fake_async_wait(struct CUstream_st *s, struct CUstream_st *target, uint64_t seq) {
  struct fake_op_t *op;
  int reached;
  if (!s || !target || !fake_async_on()) return;
  pthread_mutex_lock(&fake_mutex);
  reached = target->ran >= seq;
  if (!reached) target->refs++; /* the op keeps the target until it ran */
  pthread_mutex_unlock(&fake_mutex);
  if (reached) return;
  op = op_new(OP_WAIT);
  if (!op) { /* cannot queue the wait: run the target up to it now */
    fake_async_run(target, seq);
    pthread_mutex_lock(&fake_mutex);
    fake_stream_unref(target);
    pthread_mutex_unlock(&fake_mutex);
    return;
  }
  op->target = target;
  op->seq = seq;
  (void)enqueue(s, op);
}
