/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_cpu_executor_pools.c: the CPU kernel executor's pools:
 * creation and teardown, bad arguments, allocation and thread-start
 * failures, concurrent callers, wake-ups (the kernels themselves:
 * test_cpu_executor.c).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "counting_allocator.h"
#include "cubert/os.h"
#include "cpu/cpu_executor.h"
#include "os/os_thread.h"
#include "cubert_kernels.h"

#include "executor_test.h"

/* ---- pools, lifecycle, errors ---------------------------------------------------------- */

TEST(executor_create_destroy_pools) {
  static const uint32_t pools[] = {0, 1, 4, 0, 4};
  size_t p;
  cubert__cpu_executor_destroy(NULL);
  CHECK_EQ_U64(cubert__cpu_executor_worker_count(NULL), 0);
  for (p = 0; p < sizeof(pools) / sizeof(pools[0]); p++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    CHECK_OK(cubert__cpu_executor_create(a, pools[p], &ex, NULL));
    if (p >= 3) { /* destroy after use too */
      cubert_kernel_args_t args;
      cubert_kernel_args_initialize(&args);
      CHECK_OK(cubert__cpu_executor_run(ex, &ck_empty_kernel, dim3(64, 1, 1), dim3(1, 1, 1), &args,
                                        CUBERT_EXECUTION_CHECKED, NULL, NULL));
    }
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK_EQ_U64(c.bad_frees, 0);
    counting_allocator_destroy(&c);
  }
}

TEST(executor_create_bad_arguments) {
  cubert_cpu_executor_t *ex = NULL;
  cubert_error_t e;
  CHECK_STATUS(cubert__cpu_executor_create(cubert_allocator_libc(), 1, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cpu_executor_create(cubert_allocator_libc(),
                                           CUBERT_CPU_EXECUTOR_MAX_WORKERS + 1, &ex, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(e.field[0], CUBERT_CPU_EXECUTOR_MAX_WORKERS + 1);
  CHECK_EQ_U64(e.field[1], CUBERT_CPU_EXECUTOR_MAX_WORKERS);
  /* the count, where it comes from and the limit */
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT,
               "cpu executor: 1025 workers requested (options.workers or CUBERT_CPU_WORKERS), "
               "at most 1024");
  CHECK(ex == NULL); /* untouched */
}

/* Every allocation of create can fail; each failure leaves nothing behind. */
TEST(executor_create_thread_start_failure) {
  uint32_t nth;
  for (nth = 1; nth <= 4; nth++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    cubert_error_t e;
    cubert__os_thread_inject_failure(nth);
    CHECK_STATUS(cubert__cpu_executor_create(a, 4, &ex, &e), CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(ex == NULL);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
  cubert__os_thread_inject_failure(0);
}

TEST(executor_run_bad_arguments) {
  cubert_cpu_executor_t *ex = NULL;
  cubert_kernel_args_t args;
  cubert_kernel_t k = ck_add_f32_kernel;
  cubert_kernel_report_t r;
  cubert_error_t e;
  float buf[8];
  CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), 1, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, buf, sizeof(buf));
  cubert_kernel_args_set_buffer(&args, 1, buf, sizeof(buf));
  cubert_kernel_args_set_buffer(&args, 2, buf, sizeof(buf));
#define RUN(exe, kern, count, dim, argp, mode)                                                   \
  cubert__cpu_executor_run((exe), (kern), (count), (dim), (argp), (mode), &r, &e)
  CHECK_STATUS(RUN(NULL, &k, dim3(1, 1, 1), dim3(1, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(RUN(ex, NULL, dim3(1, 1, 1), dim3(1, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 1, 1), NULL, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 0, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 1, 1), &args, (cubert_execution_mode_t)4),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* units per cube */
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1025, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_RESOURCE_MAX_UNIT_PER_CUBE);
  CHECK_EQ_U64(e.field[0], 1025);
  CHECK_EQ_U64(e.field[1], CUBERT_KERNEL_MAX_UNITS);
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(32, 8, 5), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(UINT32_MAX, UINT32_MAX, UINT32_MAX), &args,
                   CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_OK(RUN(ex, &k, dim3(1, 1, 1), dim3(32, 8, 4), &args, CUBERT_EXECUTION_CHECKED));
  /* too many cubes */
  CHECK_STATUS(RUN(ex, &k, dim3(UINT32_MAX, UINT32_MAX, UINT32_MAX), dim3(1, 1, 1), &args,
                   CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_RESOURCE_UNITS);
  /* argument counts */
  args.buffer_count = 2;
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  args.buffer_count = CUBERT_KERNEL_MAX_BUFFERS + 1;
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  args.buffer_count = 3;
  args.scalar_count = CUBERT_KERNEL_MAX_SCALARS + 1;
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  args.scalar_count = 0;
  k.scalar_count = 1;
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_INVALID_ARGUMENT);
  k.scalar_count = 0;
  /* no CPU entry */
  k.cpu_entry = NULL;
  CHECK_STATUS(RUN(ex, &k, dim3(1, 1, 1), dim3(1, 1, 1), &args, CUBERT_EXECUTION_CHECKED),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_COMPILATION_GENERIC);
#undef RUN
  /* still usable */
  run_add(ex, 300);
  cubert__cpu_executor_destroy(ex);
}

/* Growing the dynamic shared blocks may fail (all-or-nothing, no leak); the
 * executor stays usable and the next launch grows them. */
/* ---- concurrent callers are serialized ---------------------------------------------- */

typedef struct concurrent_arg_t {
  cubert_cpu_executor_t *ex;
  int ok;
} concurrent_arg_t;

static void *concurrent_main(void *p) {
  concurrent_arg_t *arg = (concurrent_arg_t *)p;
  const size_t n = 3000;
  float *a = (float *)calloc(n, sizeof(float)), *b = (float *)calloc(n, sizeof(float)),
        *out = (float *)calloc(n, sizeof(float));
  cubert_kernel_args_t args;
  size_t i;
  int rep;
  arg->ok = a && b && out;
  if (!arg->ok) return NULL;
  for (i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 2.0f;
  }
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, a, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 1, b, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 2, out, n * sizeof(float));
  for (rep = 0; rep < 50 && arg->ok; rep++) {
    memset(out, 0, n * sizeof(float));
    if (cubert__cpu_executor_run(arg->ex, &ck_add_f32_kernel, dim3(12, 1, 1), dim3(256, 1, 1),
                                 &args, CUBERT_EXECUTION_CHECKED, NULL, NULL) != CUBERT_STATUS_OK)
      arg->ok = 0;
    for (i = 0; i < n; i++)
      if (out[i] != (float)i + 2.0f) arg->ok = 0;
  }
  free(a);
  free(b);
  free(out);
  return NULL;
}

TEST(executor_concurrent_callers) {
  cubert_cpu_executor_t *ex = NULL;
  pthread_t t[3];
  concurrent_arg_t args[3];
  int i;
  CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), 2, &ex, NULL));
  for (i = 0; i < 3; i++) {
    args[i].ex = ex;
    args[i].ok = 0;
    CHECK(pthread_create(&t[i], NULL, concurrent_main, &args[i]) == 0);
  }
  for (i = 0; i < 3; i++) {
    CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(args[i].ok);
  }
  cubert__cpu_executor_destroy(ex);
}

/* Every cube runs exactly once, whether the launcher, a spinning worker or a
 * late worker (whose offer the launcher cancelled) gets to it. */
CUBERT_KERNEL(count_kernel) {
  CUBERT_BUFFER(uint32_t, counts, 0);
  CUBERT_PHASE {
    if (CUBE_POS < CUBERT_LEN(counts))
      (void)__atomic_fetch_add(&counts.ptr[CUBE_POS], 1u, __ATOMIC_RELAXED);
  }
}
CUBERT_KERNEL_DESCRIPTOR(count_kernel_desc, count_kernel, 1, 0, 0, 1, 1, 1);

TEST(executor_each_cube_runs_once) {
  size_t p;
  for (p = 0; p < N_POOLS; p++) {
    cubert_cpu_executor_t *ex = NULL;
    static uint32_t counts[64];
    cubert_kernel_args_t args;
    uint32_t launch, i;
    CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), k_pools[p] + 2, &ex, NULL));
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, counts, sizeof(counts));
    for (launch = 0; launch < 3000; launch++) {
      uint32_t cubes = 1 + launch % 9;
      memset(counts, 0, sizeof(counts));
      if (launch % 500 == 499) cubert__os_sleep_ns(1000000); /* let workers fall asleep */
      CHECK_OK(cubert__cpu_executor_run(ex, &count_kernel_desc, dim3(cubes, 1, 1),
                                        dim3(1 + launch % 3, 1, 1), &args,
                                        CUBERT_EXECUTION_CHECKED, NULL, NULL));
      for (i = 0; i < 64; i++) CHECK_EQ_U64(counts[i], i < cubes ? 1 + launch % 3 : 0);
    }
    cubert__cpu_executor_destroy(ex);
  }
}

/* Workers that fell asleep (idle past the spin window) wake for the next launch. */
TEST(executor_wakes_sleeping_workers) {
  cubert_cpu_executor_t *ex = NULL;
  int i;
  CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), 4, &ex, NULL));
  for (i = 0; i < 5; i++) {
    cubert__os_sleep_ns(2000000); /* 2 ms >> spin window */
    run_add(ex, 20000);
  }
  cubert__cpu_executor_destroy(ex);
}
