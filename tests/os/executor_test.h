/* SPDX-License-Identifier: MIT */
/*
 * tests/os/executor_test.h: helpers of the CPU executor's tests
 * (test_cpu_executor.c, test_cpu_executor_pools.c).
 */
#ifndef CUBERT_TESTS_EXECUTOR_TEST_H
#define CUBERT_TESTS_EXECUTOR_TEST_H

#include <stdlib.h>

#include "test.h"
#include "cpu/cpu_executor.h"
#include "cubert_kernels.h"

/* Worker counts every kernel test runs with. */
static const uint32_t k_pools[] = {0, 1, 4};
#define N_POOLS (sizeof(k_pools) / sizeof(k_pools[0]))

static inline cubert_dim3_t dim3(uint32_t x, uint32_t y, uint32_t z) {
  cubert_dim3_t d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

static inline float *floats(size_t n) {
  float *p = (float *)calloc(n ? n : 1, sizeof(float));
  CHECK(p != NULL);
  return p;
}

/* C = A + B over n elements with ck_add_f32, checked, guard elements untouched. */
static inline void run_add(cubert_cpu_executor_t *ex, size_t n) {
  /* 16 guard elements past the view, which the kernel must not touch. Each
   * mode runs its own copy of the kernel body (cubert/kernel.h): UNCHECKED
   * the raw, vectorized one, CHECKED and VALIDATE the tested one. */
  float *a = floats(n + 16), *b = floats(n + 16), *out = floats(n + 16);
  cubert_kernel_args_t args;
  cubert_kernel_report_t report;
  size_t i;
  int mode;
  uint32_t cubes = (uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK);
  for (i = 0; i < n + 16; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)(i % 1000);
  }
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, a, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 1, b, n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 2, out, n * sizeof(float));
  for (mode = 0; mode < 3; mode++) {
    for (i = 0; i < n + 16; i++) out[i] = -7.0f;
    CHECK_OK(cubert__cpu_executor_run(ex, &ck_add_f32_kernel, dim3(cubes, 1, 1),
                                      ck_add_f32_kernel.cube_dim, &args,
                                      (cubert_execution_mode_t)mode, &report, NULL));
    CHECK_EQ_U64(report.oob_count, 0);
    for (i = 0; i < n; i++)
      CHECK_MSG(out[i] == (float)i + 0.5f * (float)(i % 1000), "n=%zu mode %d i=%zu got %f", n,
                mode, i, (double)out[i]);
    for (i = n; i < n + 16; i++) CHECK_MSG(out[i] == -7.0f, "n=%zu mode %d: guard %zu written", n, mode, i);
  }
  free(a);
  free(b);
  free(out);
}

#endif
