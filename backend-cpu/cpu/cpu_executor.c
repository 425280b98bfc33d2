/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_executor.c: the persistent worker pool that runs dialect
 * kernels over a cube grid (see cpu_executor.h).
 *
 * Protocol (one launch at a time, under run_mutex):
 *   1. the launching thread writes the job fields and the ranges, resets
 *      `remaining` (= offered workers), sets each offered worker's `state` to
 *      OFFERED, bumps its `wake` counter and signals it if it sleeps;
 *   2. a woken worker claims the job with CAS(state, OFFERED -> RUNNING);
 *      the linear cube indices are cut into one contiguous range per
 *      participant (offered worker i: range i, the launching thread: the
 *      last), as OpenMP's static schedule does, so a worker runs the same
 *      part of the grid launch after launch and finds its data in its own
 *      caches; each participant takes chunks of its own range (an atomic
 *      counter per range), then of the others' ranges in turn (stealing,
 *      which balances uneven cubes and covers offers never taken up);
 *   3. when the launching thread runs out of cubes it cancels the offers not
 *      yet claimed (CAS OFFERED -> IDLE) and decrements `remaining` for
 *      them, so a small launch never waits for a sleeping worker to wake;
 *   4. a claimant sets state IDLE and decrements `remaining`; the last one
 *      signals the launching thread if it sleeps; after that decrement a
 *      worker touches no job field;
 *   5. the launching thread waits for remaining == 0, then merges reports.
 * A worker's claim succeeds only while its offer stands, and the launcher
 * changes the job only after every offer was claimed-and-finished or
 * cancelled, so a late worker never sees a half-written job.
 * Sleep/wake uses the Dekker pattern on (wake, sleeping) and (remaining,
 * caller_waiting): each side stores its flag, then reads the other's, both
 * seq_cst, so at least one side sees the other and no wake-up is lost.
 */
#include "cpu/cpu_executor.h"

#include <stdio.h>

#include "os/os_obs.h"
#include "os/os_thread.h"
#include "kernel/cpu_kernel.h"

/* Padding against false sharing between threads' hot data (two lines: the
 * adjacent-line prefetcher pairs them), and the allocation alignment. */
#define EXECUTOR_LINE 128u
#define EXECUTOR_ALIGN 64u
/* Cubes per chunk: about 8 chunks per participant's range, at most this many. */
#define EXECUTOR_MAX_CHUNK 4096u

typedef cpu_kernel_context_t executor_context_t;

/* One participant's contiguous range of linear cube indices: [next, end),
 * `next` taken in chunks with an atomic add (by its owner, then by the
 * others once they ran out). Each range has a line of its own. */
typedef struct executor_range_t {
  uint64_t next; /* atomic */
  uint64_t end;
} executor_range_t;

typedef struct executor_worker_t {
  executor_context_t context;
  struct cubert_cpu_executor_t *executor;
  cubert_os_thread_t thread;
  cubert_os_mutex_t mutex;
  cubert_os_cond_t cond;
  uint32_t wake;     /* atomic: bumped by the launcher (only writer) */
  uint32_t state;    /* atomic: WORKER_IDLE / WORKER_OFFERED / WORKER_RUNNING */
  uint32_t sleeping; /* atomic: 1 while blocked (or about to) on cond */
  uint32_t index;    /* its place in `workers` (and its range's, when offered) */
  cubert_os_backoff_t backoff; /* its idle wait (adapts to the machine) */
  int sync_ready;    /* mutex and cond initialized */
  int started;       /* thread running */
} executor_worker_t;

struct cubert_cpu_executor_t {
  cubert_allocator_t allocator;
  uint32_t worker_count;
  size_t worker_stride;   /* bytes per worker in `workers`: the worker, then its range */
  size_t range_offset;    /* where a worker's range starts in its stride */
  unsigned char *workers; /* worker_count * worker_stride bytes */
  cubert_os_mutex_t run_mutex;
  cubert_os_mutex_t done_mutex;
  cubert_os_cond_t done_cond;
  /* The job, written under run_mutex before the wake-up. */
  const cubert_kernel_t *kernel;
  const cubert_kernel_args_t *args;
  cpu_kernel_grid_t grid;
  uint64_t chunk;
  uint32_t parts; /* ranges of this launch: offered workers + the launching thread */
  unsigned char pad0[EXECUTOR_LINE];
  executor_range_t caller_range; /* the launching thread's range (the last) */
  unsigned char pad1[EXECUTOR_LINE];
  uint32_t remaining;      /* atomic: participants still working */
  uint32_t caller_waiting; /* atomic */
  uint32_t shutdown;       /* atomic */
  unsigned char pad2[EXECUTOR_LINE];
  executor_context_t caller; /* the launching thread's context */
  uint32_t trace_device;     /* the device's index, for the timeline trace */
  uint32_t plane_dim;        /* PLANE_DIM of the kernels (0: CPU_KERNEL_PLANE_DIM) */
  cubert_os_backoff_t backoff; /* the launcher's wait for the participants */
};

enum { WORKER_IDLE = 0, WORKER_OFFERED = 1, WORKER_RUNNING = 2 };

static executor_worker_t *executor_worker(cubert_cpu_executor_t *ex, uint32_t i) {
  return (executor_worker_t *)(void *)(ex->workers + (size_t)i * ex->worker_stride);
}

/* ---- running cubes ----------------------------------------------------------- */

/* Range `part` of the current launch (parts - 1: the launching thread's). */
static executor_range_t *executor_range(cubert_cpu_executor_t *ex, uint32_t part) {
  if (part + 1u == ex->parts) return &ex->caller_range;
  return (executor_range_t *)(void *)(ex->workers + (size_t)part * ex->worker_stride +
                                      ex->range_offset);
}

/* Run participant `self`'s range, then whatever is left of the others'. */
static void executor_work(cubert_cpu_executor_t *ex, executor_context_t *ctx, uint32_t self) {
  const cubert_kernel_t *kernel = ex->kernel;
  const cubert_kernel_args_t *args = ex->args;
  const uint64_t chunk = ex->chunk;
  const uint32_t parts = ex->parts;
  uint32_t k;
  cpu_kernel_context_begin(ctx, kernel, &ex->grid);
  for (k = 0; k < parts; k++) {
    executor_range_t *r = executor_range(ex, (self + k) % parts);
    const uint64_t end = r->end;
    for (;;) {
      uint64_t start = __atomic_fetch_add(&r->next, chunk, __ATOMIC_RELAXED);
      if (start >= end) break;
      cpu_kernel_run_range(ctx, kernel, args, start, end - start < chunk ? end : start + chunk);
    }
  }
}

/* ---- workers ----------------------------------------------------------------- */

typedef struct wake_look_t {
  executor_worker_t *worker;
  uint32_t seen;
  uint32_t value;
} wake_look_t;

static int wake_ready(void *arg) {
  wake_look_t *l = (wake_look_t *)arg;
  l->value = __atomic_load_n(&l->worker->wake, __ATOMIC_ACQUIRE);
  return l->value != l->seen;
}

/* An idle worker: spin (adaptive, cubert__os_backoff_wait), then sleep
 * until the launcher bumps `wake`. */
static uint32_t worker_wait(executor_worker_t *w, uint32_t seen) {
  wake_look_t look;
  uint32_t v;
  look.worker = w;
  look.seen = seen;
  if (cubert__os_backoff_wait(&w->backoff, wake_ready, &look, UINT64_MAX)) return look.value;
  cubert__os_mutex_lock(&w->mutex);
  __atomic_store_n(&w->sleeping, 1u, __ATOMIC_SEQ_CST);
  while ((v = __atomic_load_n(&w->wake, __ATOMIC_SEQ_CST)) == seen)
    cubert__os_cond_wait(&w->cond, &w->mutex);
  __atomic_store_n(&w->sleeping, 0u, __ATOMIC_RELAXED);
  cubert__os_mutex_unlock(&w->mutex);
  return v;
}

static void worker_finish(cubert_cpu_executor_t *ex) {
  if (__atomic_sub_fetch(&ex->remaining, 1u, __ATOMIC_SEQ_CST) == 0 &&
      __atomic_load_n(&ex->caller_waiting, __ATOMIC_SEQ_CST)) {
    cubert__os_mutex_lock(&ex->done_mutex);
    cubert__os_cond_broadcast(&ex->done_cond);
    cubert__os_mutex_unlock(&ex->done_mutex);
  }
}

static void worker_main(void *arg) {
  executor_worker_t *w = (executor_worker_t *)arg;
  cubert_cpu_executor_t *ex = w->executor;
  uint32_t seen = 0;
  for (;;) {
    uint32_t offered = WORKER_OFFERED;
    seen = worker_wait(w, seen);
    if (__atomic_load_n(&ex->shutdown, __ATOMIC_ACQUIRE)) return;
    if (!__atomic_compare_exchange_n(&w->state, &offered, (uint32_t)WORKER_RUNNING, false,
                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      continue; /* the offer was cancelled: the launch finished without us */
    if (OS_TRACE_ON()) { /* this worker's share of the kernel, on its own track */
      uint64_t t0 = cubert__os_trace_now();
      executor_work(ex, &w->context, w->index);
      cubert__os_trace_record(ex->trace_device, OS_TRACE_TID_WORKER + w->index,
                              OS_TRACE_CAT_KERNEL, ex->kernel->name, t0,
                              cubert__os_trace_now(), 0, OS_TRACE_FLOW_NONE, 0, NULL, 0);
    } else {
      executor_work(ex, &w->context, w->index);
    }
    __atomic_store_n(&w->state, (uint32_t)WORKER_IDLE, __ATOMIC_RELEASE);
    worker_finish(ex);
  }
}

/* Called by the launcher only (the only writer of w->wake). */
static void worker_wake(executor_worker_t *w) {
  uint32_t next = __atomic_load_n(&w->wake, __ATOMIC_RELAXED) + 1u;
  __atomic_store_n(&w->wake, next, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&w->sleeping, __ATOMIC_SEQ_CST)) {
    cubert__os_mutex_lock(&w->mutex);
    cubert__os_cond_signal(&w->cond);
    cubert__os_mutex_unlock(&w->mutex);
  }
}

static int all_done(void *arg) {
  return __atomic_load_n(&((cubert_cpu_executor_t *)arg)->remaining, __ATOMIC_ACQUIRE) == 0;
}

/* The launcher: spin (adaptive), then sleep until the last participant
 * finished. */
static void executor_wait_done(cubert_cpu_executor_t *ex) {
  if (cubert__os_backoff_wait(&ex->backoff, all_done, ex, UINT64_MAX)) return;
  cubert__os_mutex_lock(&ex->done_mutex);
  __atomic_store_n(&ex->caller_waiting, 1u, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&ex->remaining, __ATOMIC_SEQ_CST) != 0)
    cubert__os_cond_wait(&ex->done_cond, &ex->done_mutex);
  __atomic_store_n(&ex->caller_waiting, 0u, __ATOMIC_RELAXED);
  cubert__os_mutex_unlock(&ex->done_mutex);
}

/* ---- lifecycle ---------------------------------------------------------------- */

static void context_free(cubert_allocator_t a, executor_context_t *ctx) {
  cpu_kernel_context_free(ctx, a);
}

/* Stop and join the started workers, release their sync objects and
 * memory, then the executor. Works on a partially created executor. */
static void executor_teardown(cubert_cpu_executor_t *ex, int ex_sync_ready) {
  uint32_t i;
  __atomic_store_n(&ex->shutdown, 1u, __ATOMIC_SEQ_CST);
  for (i = 0; i < ex->worker_count; i++) {
    executor_worker_t *w = executor_worker(ex, i);
    if (w->started) worker_wake(w);
  }
  for (i = 0; i < ex->worker_count; i++) {
    executor_worker_t *w = executor_worker(ex, i);
    if (w->started) cubert__os_thread_join(&w->thread);
    if (w->sync_ready) {
      cubert__os_cond_deinitialize(&w->cond);
      cubert__os_mutex_deinitialize(&w->mutex);
    }
    context_free(ex->allocator, &w->context);
  }
  context_free(ex->allocator, &ex->caller);
  if (ex_sync_ready) {
    cubert__os_cond_deinitialize(&ex->done_cond);
    cubert__os_mutex_deinitialize(&ex->done_mutex);
    cubert__os_mutex_deinitialize(&ex->run_mutex);
  }
  if (ex->workers)
    cubert_allocator_free(ex->allocator, ex->workers, (size_t)ex->worker_count * ex->worker_stride,
                          EXECUTOR_ALIGN);
  cubert_allocator_free(ex->allocator, ex, sizeof(*ex), EXECUTOR_ALIGN);
}

static cubert_status_t executor_sync_init(cubert_os_mutex_t *m1, cubert_os_mutex_t *m2,
                                          cubert_os_cond_t *c) {
  cubert_status_t s = cubert__os_mutex_initialize(m1);
  if (s != CUBERT_STATUS_OK) return s;
  if (m2) {
    s = cubert__os_mutex_initialize(m2);
    if (s != CUBERT_STATUS_OK) {
      cubert__os_mutex_deinitialize(m1);
      return s;
    }
  }
  s = cubert__os_cond_initialize(c);
  if (s != CUBERT_STATUS_OK) {
    if (m2) cubert__os_mutex_deinitialize(m2);
    cubert__os_mutex_deinitialize(m1);
  }
  return s;
}

static cubert_status_t executor_fail(cubert_error_t *out_error, cubert_status_t s,
                                     const char *reason) {
  if (s == CUBERT_STATUS_RESOURCE_EXHAUSTED)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, reason);
  if (s == CUBERT_STATUS_INVALID_ARGUMENT)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
  return cubert_error_set(out_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, reason);
}

cubert_status_t cubert__cpu_executor_create(cubert_allocator_t allocator, uint32_t n_workers,
                                            cubert_cpu_executor_t **out_executor,
                                            cubert_error_t *out_error) {
  cubert_cpu_executor_t *ex = NULL;
  cubert_status_t s;
  uint32_t i;
  size_t stride, bytes;
  if (!out_executor)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cpu executor: NULL out_executor");
  if (n_workers > CUBERT_CPU_EXECUTOR_MAX_WORKERS) {
    uint64_t f[2];
    char reason[128];
    f[0] = n_workers;
    f[1] = CUBERT_CPU_EXECUTOR_MAX_WORKERS;
    snprintf(reason, sizeof reason,
             "cpu executor: %u workers requested (options.workers or CUBERT_CPU_WORKERS), "
             "at most %u",
             (unsigned)n_workers, (unsigned)CUBERT_CPU_EXECUTOR_MAX_WORKERS);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2, reason);
  }
  s = cubert_allocator_malloc(allocator, sizeof(*ex), EXECUTOR_ALIGN, (void **)&ex, NULL);
  if (s != CUBERT_STATUS_OK) return executor_fail(out_error, s, "cpu executor: allocation failed");
  ex->allocator = allocator;
  cubert__os_backoff_initialize(&ex->backoff);
  stride = (sizeof(executor_worker_t) + EXECUTOR_LINE - 1) / EXECUTOR_LINE * EXECUTOR_LINE;
  ex->range_offset = stride;
  stride += EXECUTOR_LINE; /* the worker's range, on a line of its own */
  ex->worker_stride = stride;
  if (n_workers) {
    /* n_workers <= 1024 and stride is small: no overflow. */
    bytes = (size_t)n_workers * stride;
    s = cubert_allocator_malloc(allocator, bytes, EXECUTOR_ALIGN, (void **)&ex->workers, NULL);
    if (s != CUBERT_STATUS_OK) {
      cubert_allocator_free(allocator, ex, sizeof(*ex), EXECUTOR_ALIGN);
      return executor_fail(out_error, s, "cpu executor: allocation failed");
    }
  }
  ex->worker_count = n_workers; /* zero-filled workers: nothing initialized or started yet */
  s = executor_sync_init(&ex->run_mutex, &ex->done_mutex, &ex->done_cond);
  if (s != CUBERT_STATUS_OK) {
    executor_teardown(ex, 0);
    return executor_fail(out_error, s, "cpu executor: mutex/cond initialization failed");
  }
  for (i = 0; i < n_workers; i++) {
    executor_worker_t *w = executor_worker(ex, i);
    w->executor = ex;
    w->index = i;
    cubert__os_backoff_initialize(&w->backoff);
    s = executor_sync_init(&w->mutex, NULL, &w->cond);
    if (s != CUBERT_STATUS_OK) break;
    w->sync_ready = 1;
    s = cubert__os_thread_create(&w->thread, worker_main, w, CUBERT_CPU_EXECUTOR_STACK_BYTES);
    if (s != CUBERT_STATUS_OK) break;
    w->started = 1;
  }
  if (s != CUBERT_STATUS_OK) {
    executor_teardown(ex, 1);
    return executor_fail(out_error, s, "cpu executor: could not start a worker thread");
  }
  *out_executor = ex;
  return CUBERT_STATUS_OK;
}

void cubert__cpu_executor_destroy(cubert_cpu_executor_t *executor) {
  if (executor) executor_teardown(executor, 1);
}

void cubert__cpu_executor_set_plane_dim(cubert_cpu_executor_t *executor, uint32_t plane_dim) {
  if (executor && CPU_KERNEL_PLANE_DIM_VALID(plane_dim)) executor->plane_dim = plane_dim;
}

void cubert__cpu_executor_set_trace_device(cubert_cpu_executor_t *executor, uint32_t device_index) {
  if (executor) executor->trace_device = device_index;
}

uint32_t cubert__cpu_executor_worker_count(const cubert_cpu_executor_t *executor) {
  return executor ? executor->worker_count : 0;
}

/* ---- launching ------------------------------------------------------------------ */

static executor_context_t *executor_context(cubert_cpu_executor_t *ex, uint32_t i) {
  return i < ex->worker_count ? &executor_worker(ex, i)->context : &ex->caller;
}

/* Make every context's dynamic shared block at least `need` bytes, all or
 * nothing. */
static cubert_status_t executor_reserve_shared(cubert_cpu_executor_t *ex, size_t need) {
  uint32_t i, n = ex->worker_count + 1;
  cubert_status_t s = CUBERT_STATUS_OK;
  if (need == 0 || ex->caller.dynamic_capacity >= need) return CUBERT_STATUS_OK;
  for (i = 0; i < n && s == CUBERT_STATUS_OK; i++)
    s = cubert_allocator_malloc(ex->allocator, need, 64, (void **)&executor_context(ex, i)->pending,
                                NULL);
  for (i = 0; i < n; i++) {
    executor_context_t *ctx = executor_context(ex, i);
    if (!ctx->pending) continue;
    if (s != CUBERT_STATUS_OK) {
      cubert_allocator_free(ex->allocator, ctx->pending, need, 64);
    } else {
      cubert_allocator_free(ex->allocator, ctx->dynamic_shared, ctx->dynamic_capacity, 64);
      ctx->dynamic_shared = ctx->pending;
      ctx->dynamic_capacity = need;
    }
    ctx->pending = NULL;
  }
  return s;
}

/* A cube whose shared arrays and unit variables could not get their block
 * (it did not run; cpu_kernel_run_range). */
static cubert_status_t executor_scratch_error(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                          "cpu executor: cannot allocate the cubes' shared memory");
}

/* Offer the job to `participants` workers, run cubes on this thread too,
 * cancel the offers nobody took up, wait for the rest. */
static void executor_run_pool(cubert_cpu_executor_t *ex, uint32_t participants) {
  const uint64_t total = ex->grid.total;
  uint32_t i;
  ex->parts = participants + 1u;
  for (i = 0; i < ex->parts; i++) { /* part i: [total * i / parts, total * (i + 1) / parts) */
    executor_range_t *r = executor_range(ex, i);
    uint64_t begin = total / ex->parts * i + total % ex->parts * i / ex->parts;
    uint64_t end = total / ex->parts * (i + 1u) + total % ex->parts * (i + 1u) / ex->parts;
    __atomic_store_n(&r->next, begin, __ATOMIC_RELAXED);
    r->end = end;
  }
  __atomic_store_n(&ex->remaining, participants, __ATOMIC_RELAXED);
  cpu_kernel_report_reset(&ex->caller.report);
  for (i = 0; i < participants; i++) {
    executor_worker_t *w = executor_worker(ex, i);
    cpu_kernel_report_reset(&w->context.report);
    __atomic_store_n(&w->state, (uint32_t)WORKER_OFFERED, __ATOMIC_SEQ_CST);
    worker_wake(w);
  }
  executor_work(ex, &ex->caller, participants);
  for (i = 0; i < participants; i++) { /* cancel the offers nobody took up yet */
    uint32_t offered = WORKER_OFFERED;
    if (__atomic_compare_exchange_n(&executor_worker(ex, i)->state, &offered,
                                    (uint32_t)WORKER_IDLE, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
      (void)__atomic_sub_fetch(&ex->remaining, 1u, __ATOMIC_SEQ_CST);
  }
  executor_wait_done(ex);
}

cubert_status_t cubert__cpu_executor_run(cubert_cpu_executor_t *executor,
                                         const cubert_kernel_t *kernel, cubert_dim3_t cube_count,
                                         cubert_dim3_t cube_dim, const cubert_kernel_args_t *args,
                                         cubert_execution_mode_t mode,
                                         cubert_kernel_report_t *out_report,
                                         cubert_error_t *out_error) {
  return cubert__cpu_executor_run_shared(executor, kernel, cube_count, cube_dim,
                                         kernel ? kernel->shared_memory_bytes : 0u, args, mode,
                                         out_report, out_error);
}

cubert_status_t cubert__cpu_executor_run_shared(cubert_cpu_executor_t *executor,
                                                const cubert_kernel_t *kernel,
                                                cubert_dim3_t cube_count, cubert_dim3_t cube_dim,
                                                uint32_t shared_memory_bytes,
                                                const cubert_kernel_args_t *args,
                                                cubert_execution_mode_t mode,
                                                cubert_kernel_report_t *out_report,
                                                cubert_error_t *out_error) {
  cubert_cpu_executor_t *ex = executor;
  cpu_kernel_grid_t grid;
  uint64_t chunk;
  uint32_t participants, i;
  int failed = 0;
  if (!ex)
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, NULL, 0,
                            "cpu executor: NULL argument");
  CUBERT_RETURN_IF_ERROR(cpu_kernel_grid(kernel, cube_count, cube_dim, args, mode, &grid, out_error));
  cpu_kernel_grid_set_shared(&grid, shared_memory_bytes);
  if (out_report) {
    cpu_kernel_report_reset(out_report);
    out_report->kernel_name = kernel->name;
  }
  if (grid.total == 0) return CUBERT_STATUS_OK;

  cubert__os_mutex_lock(&ex->run_mutex);
  if (executor_reserve_shared(ex, grid.shared_bytes) != CUBERT_STATUS_OK) {
    cubert__os_mutex_unlock(&ex->run_mutex);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cpu executor: cannot allocate the cubes' shared memory");
  }
  if (ex->plane_dim) grid.plane_dim = ex->plane_dim;
  for (i = 0; i <= ex->worker_count; i++) executor_context(ex, i)->allocator = ex->allocator;
  if (mode == CUBERT_EXECUTION_RACECHECK) { /* the race checker: cubes in order, one thread */
    cpu_kernel_race_t race;
    cubert_status_t st;
    cpu_kernel_report_reset(&ex->caller.report);
    cpu_kernel_context_begin(&ex->caller, kernel, &grid);
    st = cpu_kernel_race_begin(&ex->caller, &race, ex->allocator);
    if (st == CUBERT_STATUS_OK) {
      cpu_kernel_run_all(&ex->caller, kernel, args, &grid);
      st = cpu_kernel_race_end(&ex->caller, &race);
    }
    if (out_report) cpu_kernel_report_merge(out_report, &ex->caller.report);
    failed = ex->caller.scratch_failed != 0; /* read under the run mutex */
    cubert__os_mutex_unlock(&ex->run_mutex);
    if (failed) return executor_scratch_error(out_error);
    if (st != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                              "cpu executor: the kernel race checker ran out of memory");
    return CUBERT_STATUS_OK;
  }
  participants = grid.total - 1 < ex->worker_count ? (uint32_t)(grid.total - 1) : ex->worker_count;
  if (participants == 0) { /* one thread: cubes in order, no shared counter */
    cpu_kernel_report_reset(&ex->caller.report);
    cpu_kernel_run_all(&ex->caller, kernel, args, &grid);
    if (out_report) cpu_kernel_report_merge(out_report, &ex->caller.report);
    failed = ex->caller.scratch_failed != 0; /* read before the next launch may reset it */
    cubert__os_mutex_unlock(&ex->run_mutex);
    if (failed) return executor_scratch_error(out_error);
    return CUBERT_STATUS_OK;
  }
  chunk = grid.total / (((uint64_t)participants + 1) * 8u); /* 8 chunks per range */
  if (chunk < 1) chunk = 1;
  if (chunk > EXECUTOR_MAX_CHUNK) chunk = EXECUTOR_MAX_CHUNK;
  ex->kernel = kernel;
  ex->args = args;
  ex->grid = grid;
  ex->chunk = chunk;
  /* a participant that gets no cube of this launch must not report the last one's failure */
  for (i = 0; i < participants; i++) executor_worker(ex, i)->context.scratch_failed = 0;
  ex->caller.scratch_failed = 0;
  executor_run_pool(ex, participants);
  if (out_report) {
    for (i = 0; i < participants; i++)
      cpu_kernel_report_merge(out_report, &executor_worker(ex, i)->context.report);
    cpu_kernel_report_merge(out_report, &ex->caller.report);
  }
  for (i = 0; i < participants; i++)
    if (executor_worker(ex, i)->context.scratch_failed) failed = 1;
  if (ex->caller.scratch_failed) failed = 1; /* read under the run mutex */
  cubert__os_mutex_unlock(&ex->run_mutex);
  if (failed) return executor_scratch_error(out_error);
  return CUBERT_STATUS_OK;
}
