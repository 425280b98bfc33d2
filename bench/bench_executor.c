/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_executor.c: the CPU kernel executor.
 *   1. launch + wait round trip of an empty kernel (median over repeated
 *      batches), for a 1-cube launch (runs on the caller alone) and for a
 *      launch with one cube per thread (wakes every worker); launches/s from
 *      one thread is 1 / that median;
 *   2. elementwise f32 add over 64 MiB buffers (a + b -> out, CHECKED mode),
 *      with the whole pool and with 0 workers, next to memcpy of 64 MiB
 *      measured in the same run. GB/s counts bytes read + written (add: 3 x
 *      64 MiB, memcpy: 2 x 64 MiB);
 *   3. the kernel race checker's cost: add over 256 Ki floats and a
 *      128 x 128 x 128 matmul in RACECHECK mode against CHECKED, both on the
 *      calling thread (RACECHECK runs the cubes in order on one thread).
 *
 *   make BUILD=build bench   or   build/bench/bench_executor [workers]
 * workers defaults to online CPUs - 1 (the caller is the extra thread).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/os.h"
#include "cpu/cpu_executor.h"
#include "os/os_thread.h"
#include "cubert_kernels.h"

#define REPEATS 15

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n) {
  qsort(v, n, sizeof(*v), cmp_u64);
  return v[n / 2];
}

static cubert_dim3_t dim3(uint32_t x, uint32_t y, uint32_t z) {
  cubert_dim3_t d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

/* Median nanoseconds per launch+wait of ck_empty over `cubes` cubes. */
static double bench_empty(cubert_cpu_executor_t *ex, uint32_t cubes) {
  const int batch = 2000;
  uint64_t t[REPEATS];
  cubert_kernel_args_t args;
  int r, i;
  cubert_kernel_args_initialize(&args);
  for (i = 0; i < batch; i++) /* warm-up */
    (void)cubert__cpu_executor_run(ex, &ck_empty_kernel, dim3(cubes, 1, 1), dim3(1, 1, 1), &args,
                                   CUBERT_EXECUTION_CHECKED, NULL, NULL);
  for (r = 0; r < REPEATS; r++) {
    uint64_t t0 = cubert__os_clock_ns();
    for (i = 0; i < batch; i++)
      if (cubert__cpu_executor_run(ex, &ck_empty_kernel, dim3(cubes, 1, 1), dim3(1, 1, 1), &args,
                                   CUBERT_EXECUTION_CHECKED, NULL, NULL) != CUBERT_STATUS_OK) {
        fprintf(stderr, "bench_executor: launch failed\n");
        exit(1);
      }
    t[r] = cubert__os_clock_ns() - t0;
  }
  return (double)median(t, REPEATS) / batch;
}

/* Median nanoseconds of one add over n floats. */
static double bench_add(cubert_cpu_executor_t *ex, float *a, float *b, float *out, size_t n) {
  uint64_t t[REPEATS];
  cubert_kernel_args_t args;
  uint32_t cubes = (uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK);
  int r;
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, a, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 1, b, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 2, out, n * sizeof(float));
  for (r = -1; r < REPEATS; r++) { /* r = -1: warm-up */
    uint64_t t0 = cubert__os_clock_ns();
    if (cubert__cpu_executor_run(ex, &ck_add_f32_kernel, dim3(cubes, 1, 1),
                                 ck_add_f32_kernel.cube_dim, &args, CUBERT_EXECUTION_CHECKED, NULL,
                                 NULL) != CUBERT_STATUS_OK) {
      fprintf(stderr, "bench_executor: add failed\n");
      exit(1);
    }
    if (r >= 0) t[r] = cubert__os_clock_ns() - t0;
  }
  /* check a few values so the work cannot be skipped */
  if (out[0] != a[0] + b[0] || out[n - 1] != a[n - 1] + b[n - 1] || out[n / 3] != a[n / 3] + b[n / 3]) {
    fprintf(stderr, "bench_executor: wrong result\n");
    exit(1);
  }
  return (double)median(t, REPEATS);
}

/* Median nanoseconds of one launch of `k` over `count` in `mode`. */
static double bench_mode(cubert_cpu_executor_t *ex, const cubert_kernel_t *k, cubert_dim3_t count,
                         cubert_kernel_args_t *args, cubert_execution_mode_t mode) {
  uint64_t t[REPEATS];
  int r;
  for (r = -1; r < REPEATS; r++) {
    cubert_kernel_report_t report;
    uint64_t t0 = cubert__os_clock_ns();
    if (cubert__cpu_executor_run(ex, k, count, k->cube_dim, args, mode, &report, NULL) !=
        CUBERT_STATUS_OK ||
        report.race_count != 0) {
      fprintf(stderr, "bench_executor: %s failed or raced\n", k->name);
      exit(1);
    }
    if (r >= 0) t[r] = cubert__os_clock_ns() - t0;
  }
  return (double)median(t, REPEATS);
}

/* RACECHECK against CHECKED on one thread: add over 256 Ki floats, matmul 128^3. */
static void bench_racecheck(cubert_cpu_executor_t *ex0, float *a, float *b, float *out) {
  const size_t n = (size_t)1 << 18;
  const uint32_t m = 128;
  cubert_kernel_args_t args;
  double add_c, add_r, mm_c, mm_r;
  cubert_dim3_t add_count = dim3((uint32_t)(n / CK_BLOCK), 1, 1), mm_count = dim3(m / CK_TILE, m / CK_TILE, 1);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, a, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 1, b, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 2, out, n * sizeof(float));
  add_c = bench_mode(ex0, &ck_add_f32_kernel, add_count, &args, CUBERT_EXECUTION_CHECKED);
  add_r = bench_mode(ex0, &ck_add_f32_kernel, add_count, &args, CUBERT_EXECUTION_RACECHECK);
  cubert_kernel_args_set_u32(&args, 0, m);
  cubert_kernel_args_set_u32(&args, 1, m);
  cubert_kernel_args_set_u32(&args, 2, m);
  mm_c = bench_mode(ex0, &ck_matmul_f32_kernel, mm_count, &args, CUBERT_EXECUTION_CHECKED);
  mm_r = bench_mode(ex0, &ck_matmul_f32_kernel, mm_count, &args, CUBERT_EXECUTION_RACECHECK);
  printf("race checker, 1 thread: add f32 256 Ki  CHECKED %8.3f ms  RACECHECK %8.3f ms  (%.0fx)\n",
         add_c / 1e6, add_r / 1e6, add_r / add_c);
  printf("race checker, 1 thread: matmul 128^3   CHECKED %8.3f ms  RACECHECK %8.3f ms  (%.0fx)\n",
         mm_c / 1e6, mm_r / 1e6, mm_r / mm_c);
}

static double bench_memcpy(void *dst, const void *src, size_t bytes) {
  uint64_t t[REPEATS];
  int r;
  for (r = -1; r < REPEATS; r++) {
    uint64_t t0 = cubert__os_clock_ns();
    memcpy(dst, src, bytes);
    __asm__ __volatile__("" : : "r"(dst) : "memory");
    if (r >= 0) t[r] = cubert__os_clock_ns() - t0;
  }
  return (double)median(t, REPEATS);
}

int main(int argc, char **argv) {
  const size_t bytes = (size_t)64 << 20, n = bytes / sizeof(float);
  uint32_t cpus = cubert__os_cpu_count();
  uint32_t workers = cpus > 1 ? cpus - 1 : 0;
  cubert_cpu_executor_t *ex = NULL, *ex0 = NULL;
  float *a, *b, *out;
  double e1, en, e0, add_pool, add_one, mc, gb = 1e9;
  size_t i;
  int k;
  /* [WORKERS] [--quick] (--quick is accepted for make bench BENCH_ARGS=--quick) */
  for (k = 1; k < argc; k++) {
    int help = strcmp(argv[k], "-h") == 0 || strcmp(argv[k], "--help") == 0;
    if (strcmp(argv[k], "--quick") == 0) continue;
    if (argv[k][0] >= '0' && argv[k][0] <= '9') {
      workers = (uint32_t)strtoul(argv[k], NULL, 10);
      continue;
    }
    fprintf(help ? stdout : stderr,
            "usage: bench_executor [WORKERS] [--quick] [-h|--help]\nThe CPU executor's pool on a "
            "64 MiB add next to one thread and memcpy.\n");
    return help ? 0 : 2;
  }
  if (cubert__cpu_executor_create(cubert_allocator_libc(), workers, &ex, NULL) != CUBERT_STATUS_OK ||
      cubert__cpu_executor_create(cubert_allocator_libc(), 0, &ex0, NULL) != CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_executor: cannot create executors\n");
    return 1;
  }
  a = (float *)malloc(bytes);
  b = (float *)malloc(bytes);
  out = (float *)malloc(bytes);
  if (!a || !b || !out) return 1;
  for (i = 0; i < n; i++) {
    a[i] = (float)(i & 1023);
    b[i] = 0.25f;
  }
  memset(out, 0, bytes);

  printf("bench_executor: %u online CPUs, pool of %u workers + the calling thread, median of %d\n",
         cpus, workers, REPEATS);
  e0 = bench_empty(ex0, 1);
  e1 = bench_empty(ex, 1);
  en = bench_empty(ex, workers + 1);
  printf("empty kernel launch+wait, 0 workers, 1 cube      : %8.0f ns  (%.2f M launches/s)\n", e0,
         1e3 / e0);
  printf("empty kernel launch+wait, pool, 1 cube (caller)  : %8.0f ns  (%.2f M launches/s)\n", e1,
         1e3 / e1);
  printf("empty kernel launch+wait, pool, %3u cubes (all)   : %8.0f ns  (%.3f M launches/s)\n",
         workers + 1, en, 1e3 / en);

  add_pool = bench_add(ex, a, b, out, n);
  add_one = bench_add(ex0, a, b, out, n);
  mc = bench_memcpy(out, a, bytes);
  printf("add f32 64 MiB, pool (%3u threads)  : %7.2f ms  %6.2f GB/s (3 x 64 MiB)\n", workers + 1,
         add_pool / 1e6, 3.0 * (double)bytes / add_pool * 1e9 / gb);
  printf("add f32 64 MiB, 1 thread            : %7.2f ms  %6.2f GB/s\n", add_one / 1e6,
         3.0 * (double)bytes / add_one * 1e9 / gb);
  printf("memcpy 64 MiB, 1 thread             : %7.2f ms  %6.2f GB/s (2 x 64 MiB)\n", mc / 1e6,
         2.0 * (double)bytes / mc * 1e9 / gb);
  printf("ratio GB/s add(pool)/memcpy = %.2f, add(1 thread)/memcpy = %.2f\n",
         (3.0 * (double)bytes / add_pool) / (2.0 * (double)bytes / mc),
         (3.0 * (double)bytes / add_one) / (2.0 * (double)bytes / mc));
  bench_racecheck(ex0, a, b, out);
  cubert__cpu_executor_destroy(ex);
  cubert__cpu_executor_destroy(ex0);
  free(a);
  free(b);
  free(out);
  return 0;
}
