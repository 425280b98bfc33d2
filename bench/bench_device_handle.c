/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_device_handle.c: cost of the two device-handle implementations
 * (cubert/device.h): the direct (locked) handle over a recursive pthread
 * mutex, and the runner-thread handle (cubert/os.h).
 *
 * For each implementation, median over --runs repeated runs of:
 *  (a) ns per non-blocking submit of an empty task from one thread (the
 *      timed loop ends with one blocking call, so every task ran);
 *  (b) ns per submit_blocking round trip of an empty task;
 *  (c) ns per non-blocking submit when 4 threads submit at once (wall time
 *      / all submits, ending with a blocking call per thread);
 *  (d) ns per non-blocking submit in bursts of 32 into an idle handle (the
 *      caller's cost while the queue has room; the drain after each burst
 *      is not timed).
 * Prints a table with the ratio runner/direct.
 *
 *   build/bench/bench_device_handle [--runs R] [--n N] [--queue Q]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/os.h"
#include "cubert/driver/device.h"
#include "os/os_thread.h"

#define BENCH_THREADS 4
#define BENCH_MAX_RUNS 101

typedef struct bench_rlock_t {
  pthread_mutex_t mutex;
} bench_rlock_t;

static void bench_lock(void *self) { (void)pthread_mutex_lock(&((bench_rlock_t *)self)->mutex); }
static void bench_unlock(void *self) {
  (void)pthread_mutex_unlock(&((bench_rlock_t *)self)->mutex);
}

static void task_empty(void *context, void *payload) {
  (void)context;
  (void)payload;
}

typedef struct bench_config_t {
  int runs;
  long n;
  uint32_t queue;
} bench_config_t;

typedef struct bench_impl_t {
  const char *name;
  bool runner;
  bench_rlock_t rlock;
} bench_impl_t;

static void bench_die(const char *what, cubert_status_t status) {
  fprintf(stderr, "bench_device_handle: %s failed: %s\n", what, cubert_status_name(status));
  exit(1);
}

static void bench_create(bench_impl_t *impl, const bench_config_t *cfg,
                         cubert_device_handle_t *out) {
  cubert_status_t status;
  if (impl->runner) {
    status = cubert_device_handle_runner_create(cubert_allocator_libc(), NULL, cfg->queue, out,
                                                NULL);
  } else {
    cubert_lock_t lock;
    lock.self = &impl->rlock;
    lock.lock = bench_lock;
    lock.unlock = bench_unlock;
    status = cubert_device_handle_direct_create(cubert_allocator_libc(), NULL, lock, out);
  }
  if (status != CUBERT_STATUS_OK) bench_die("create", status);
}

static void bench_check(cubert_status_t status) {
  if (status != CUBERT_STATUS_OK) bench_die("device call", status);
}

/* (a) */
static double bench_submit(cubert_device_handle_t *h, long n) {
  uint64_t start = cubert__os_clock_ns();
  long i;
  for (i = 0; i < n; i++) bench_check(h->vtable->submit(h->self, task_empty, NULL, 0));
  bench_check(h->vtable->submit_blocking(h->self, task_empty, NULL));
  return (double)(cubert__os_clock_ns() - start) / (double)n;
}

/* (b) */
static double bench_blocking(cubert_device_handle_t *h, long n) {
  uint64_t start = cubert__os_clock_ns();
  long i;
  for (i = 0; i < n; i++) bench_check(h->vtable->submit_blocking(h->self, task_empty, NULL));
  return (double)(cubert__os_clock_ns() - start) / (double)n;
}

/* (d) */
#define BENCH_BURST 32

static double bench_burst(cubert_device_handle_t *h, long n) {
  uint64_t total = 0;
  long bursts = n / BENCH_BURST + 1, b;
  int i;
  for (b = 0; b < bursts; b++) {
    uint64_t start = cubert__os_clock_ns();
    for (i = 0; i < BENCH_BURST; i++) bench_check(h->vtable->submit(h->self, task_empty, NULL, 0));
    total += cubert__os_clock_ns() - start;
    bench_check(h->vtable->submit_blocking(h->self, task_empty, NULL));
  }
  return (double)total / (double)(bursts * BENCH_BURST);
}

/* (c) */
typedef struct bench_thread_t {
  cubert_device_handle_t *handle;
  long n;
  uint32_t *go;
} bench_thread_t;

static void *bench_thread_main(void *arg) {
  bench_thread_t *t = (bench_thread_t *)arg;
  long i;
  while (!__atomic_load_n(t->go, __ATOMIC_ACQUIRE)) cubert__os_cpu_relax();
  for (i = 0; i < t->n; i++)
    bench_check(t->handle->vtable->submit(t->handle->self, task_empty, NULL, 0));
  bench_check(t->handle->vtable->submit_blocking(t->handle->self, task_empty, NULL));
  return NULL;
}

static double bench_threads(cubert_device_handle_t *h, long n) {
  pthread_t threads[BENCH_THREADS];
  bench_thread_t args[BENCH_THREADS];
  uint32_t go = 0;
  uint64_t start;
  int i;
  for (i = 0; i < BENCH_THREADS; i++) {
    args[i].handle = h;
    args[i].n = n;
    args[i].go = &go;
    if (pthread_create(&threads[i], NULL, bench_thread_main, &args[i]) != 0) {
      fprintf(stderr, "bench_device_handle: pthread_create failed\n");
      exit(1);
    }
  }
  start = cubert__os_clock_ns();
  __atomic_store_n(&go, 1u, __ATOMIC_RELEASE);
  for (i = 0; i < BENCH_THREADS; i++) (void)pthread_join(threads[i], NULL);
  return (double)(cubert__os_clock_ns() - start) / (double)(n * BENCH_THREADS);
}

static int bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

static double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Median of cfg->runs runs of one measurement on a fresh handle each run. */
static double bench_measure(bench_impl_t *impl, const bench_config_t *cfg, int which) {
  double samples[BENCH_MAX_RUNS];
  int r;
  for (r = 0; r < cfg->runs; r++) {
    cubert_device_handle_t h;
    bench_create(impl, cfg, &h);
    (void)bench_submit(&h, cfg->n / 10 + 1); /* warm up */
    if (which == 0)
      samples[r] = bench_submit(&h, cfg->n);
    else if (which == 1)
      samples[r] = bench_blocking(&h, cfg->n / 5 + 1);
    else if (which == 2)
      samples[r] = bench_threads(&h, cfg->n / BENCH_THREADS + 1);
    else
      samples[r] = bench_burst(&h, cfg->n / 4 + 1);
    h.vtable->destroy(h.self);
  }
  return bench_median(samples, cfg->runs);
}

int main(int argc, char **argv) {
  static const char *const rows[4] = {
      "(a) submit, 1 thread (ns/submit)",
      "(b) submit_blocking round trip (ns)",
      "(c) submit, 4 threads (ns/submit, wall)",
      "(d) submit, bursts of 32 (ns/submit)",
  };
  bench_config_t cfg;
  bench_impl_t direct, runner;
  pthread_mutexattr_t attr;
  int i, row;
  cfg.runs = 11;
  cfg.n = 200000;
  cfg.queue = 0;
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: bench_device_handle [--runs R (1..%d)] [--n N] [--queue Q] [--quick] "
           "[-h|--help]\nSubmit costs of the direct (locked) and runner-thread device handles.\n",
           BENCH_MAX_RUNS);
    return 0;
  }
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
      cfg.runs = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
      cfg.n = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--queue") && i + 1 < argc) {
      cfg.queue = (uint32_t)strtoul(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--quick")) { /* make bench BENCH_ARGS=--quick */
      cfg.runs = 5;
      cfg.n = 20000;
    } else {
      fprintf(stderr, "usage: %s [--runs R (1..%d)] [--n N] [--queue Q] [--quick]\n", argv[0],
              BENCH_MAX_RUNS);
      return 2;
    }
  }
  if (cfg.runs < 1 || cfg.runs > BENCH_MAX_RUNS || cfg.n < 1) {
    fprintf(stderr, "bench_device_handle: bad --runs or --n\n");
    return 2;
  }
  direct.name = "direct";
  direct.runner = false;
  runner.name = "runner";
  runner.runner = true;
  if (pthread_mutexattr_init(&attr) != 0 ||
      pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE) != 0 ||
      pthread_mutex_init(&direct.rlock.mutex, &attr) != 0) {
    fprintf(stderr, "bench_device_handle: recursive mutex unavailable\n");
    return 1;
  }
  (void)pthread_mutexattr_destroy(&attr);
  printf("device handle: median of %d runs, n = %ld, runner queue = %u, %u CPUs\n", cfg.runs,
         cfg.n, cfg.queue ? cfg.queue : CUBERT_DEVICE_RUNNER_QUEUE_DEFAULT,
         cubert__os_cpu_count());
  printf("| %-40s | %10s | %10s | %13s |\n", "operation", "direct", "runner", "runner/direct");
  printf("|%s|------------|------------|---------------|\n",
         "------------------------------------------");
  for (row = 0; row < 4; row++) {
    double d = bench_measure(&direct, &cfg, row);
    double r = bench_measure(&runner, &cfg, row);
    printf("| %-40s | %10.1f | %10.1f | %13.2f |\n", rows[row], d, r, r / d);
    fflush(stdout);
  }
  (void)pthread_mutex_destroy(&direct.rlock.mutex);
  return 0;
}
