/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/cubert_kernels.cu: the kernel library (cubert_kernels.h)
 * compiled by nvcc, proving the dialect's CUDA expansion builds the very
 * source the CPU servers run. Each CUBERT_KERNEL(name) becomes
 *   extern "C" __global__ void name(const cubert_kernel_args_t args,
 *                                   uint32_t mode, cubert_kernel_report_t *report)
 * (args by value: the CUDA server passes {&args, &mode, &report} to
 * cuLaunchKernel; report may be NULL in UNCHECKED mode).
 *
 *   nvcc -std=c++14 -arch=sm_90 -Iinclude -Iexamples/kernels -c examples/kernels/cubert_kernels.cu -o k.o
 *   nvcc -std=c++14 -arch=sm_90 -Iinclude -Iexamples/kernels -ptx examples/kernels/cubert_kernels.cu -o k.ptx
 *
 * With -DCK_CUDA_MAIN it is also a program that runs the kernels on a GPU
 * (CUDA runtime API) and checks them against plain C references:
 *   nvcc -std=c++14 -arch=sm_90 -DCK_CUDA_MAIN -Iinclude -Iexamples/kernels \
 *        examples/kernels/cubert_kernels.cu -o ck_cuda && ./ck_cuda
 */
#include "cubert_kernels.h"

#ifdef CK_CUDA_MAIN
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_checks, g_failures;

#define CK_CHECK(cond, ...)                                                                  \
  do {                                                                                       \
    g_checks++;                                                                              \
    if (!(cond)) {                                                                           \
      if (g_failures++ < 20) {                                                               \
        printf("FAIL %s:%d: ", __FILE__, __LINE__);                                          \
        printf(__VA_ARGS__);                                                                 \
        printf("\n");                                                                        \
      }                                                                                      \
    }                                                                                        \
  } while (0)

#define CU(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__,       \
             cudaGetErrorString(e_));                                                        \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

/* A device copy of a host array, bound to buffer slot `slot`. */
static void *dev_buffer(cubert_kernel_args_t *args, uint32_t slot, const void *host, size_t bytes) {
  void *d = NULL;
  CU(cudaMalloc(&d, bytes ? bytes : 4));
  if (host) CU(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  else CU(cudaMemset(d, 0, bytes ? bytes : 4));
  cubert_kernel_args_set_buffer(args, slot, d, bytes);
  return d;
}

static void test_add(void) {
  const size_t n = 100003;
  float *a = (float *)malloc(n * 4), *b = (float *)malloc(n * 4), *out = (float *)malloc(n * 4);
  cubert_kernel_args_t args;
  void *da, *db, *dout;
  size_t i;
  for (i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)(i % 1000);
  }
  cubert_kernel_args_initialize(&args);
  da = dev_buffer(&args, 0, a, n * 4);
  db = dev_buffer(&args, 1, b, n * 4);
  dout = dev_buffer(&args, 2, NULL, n * 4);
  ck_add_f32<<<(unsigned)((n + CK_BLOCK - 1) / CK_BLOCK), CK_BLOCK>>>(
      args, CUBERT_KERNEL_MODE_UNCHECKED, NULL);
  CU(cudaGetLastError());
  CU(cudaMemcpy(out, dout, n * 4, cudaMemcpyDeviceToHost));
  for (i = 0; i < n; i++)
    CK_CHECK(out[i] == (float)i + 0.5f * (float)(i % 1000), "add i=%zu got %f", i, out[i]);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  free(a);
  free(b);
  free(out);
}

static void test_reduce(void) {
  const size_t n = 100003, cubes = (n + CK_BLOCK - 1) / CK_BLOCK;
  float *in = (float *)malloc(n * 4), *partial = (float *)malloc(cubes * 4);
  cubert_kernel_args_t args;
  void *din, *dp;
  size_t i, c;
  for (i = 0; i < n; i++) in[i] = (float)(int)((i * 7919u) % 13u) - 6.0f;
  cubert_kernel_args_initialize(&args);
  din = dev_buffer(&args, 0, in, n * 4);
  dp = dev_buffer(&args, 1, NULL, cubes * 4);
  ck_reduce_sum_f32<<<(unsigned)cubes, CK_BLOCK>>>(args, CUBERT_KERNEL_MODE_CHECKED, NULL);
  CU(cudaGetLastError());
  CU(cudaMemcpy(partial, dp, cubes * 4, cudaMemcpyDeviceToHost));
  for (c = 0; c < cubes; c++) {
    float ref = 0.0f;
    for (i = c * CK_BLOCK; i < (c + 1) * CK_BLOCK && i < n; i++) ref += in[i];
    CK_CHECK(partial[c] == ref, "reduce cube %zu: %f != %f", c, partial[c], ref);
  }
  cudaFree(din);
  cudaFree(dp);
  free(in);
  free(partial);
}

static void test_matmul(uint32_t m, uint32_t k, uint32_t n) {
  float *a = (float *)malloc((size_t)m * k * 4), *b = (float *)malloc((size_t)k * n * 4),
        *c = (float *)malloc((size_t)m * n * 4);
  cubert_kernel_args_t args;
  cubert_kernel_report_t *drep, rep;
  void *da, *db, *dc;
  uint32_t i, j, t;
  for (i = 0; i < m * k; i++) a[i] = (float)((int)(i % 7u) - 3);
  for (i = 0; i < k * n; i++) b[i] = (float)((int)(i % 5u) - 2);
  cubert_kernel_args_initialize(&args);
  da = dev_buffer(&args, 0, a, (size_t)m * k * 4);
  db = dev_buffer(&args, 1, b, (size_t)k * n * 4);
  dc = dev_buffer(&args, 2, NULL, (size_t)m * n * 4);
  cubert_kernel_args_set_u32(&args, 0, m);
  cubert_kernel_args_set_u32(&args, 1, k);
  cubert_kernel_args_set_u32(&args, 2, n);
  CU(cudaMalloc((void **)&drep, sizeof(*drep)));
  CU(cudaMemset(drep, 0, sizeof(*drep)));
  ck_matmul_f32<<<dim3((n + CK_TILE - 1) / CK_TILE, (m + CK_TILE - 1) / CK_TILE, 1),
                  dim3(CK_TILE, CK_TILE, 1)>>>(args, CUBERT_KERNEL_MODE_VALIDATE, drep);
  CU(cudaGetLastError());
  CU(cudaMemcpy(c, dc, (size_t)m * n * 4, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(&rep, drep, sizeof(rep), cudaMemcpyDeviceToHost));
  CK_CHECK(rep.oob_count == 0 && rep.has_violation == 0, "matmul oob %llu",
           (unsigned long long)rep.oob_count);
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      float ref = 0.0f;
      for (t = 0; t < k; t++) ref += a[i * k + t] * b[t * n + j];
      CK_CHECK(c[i * n + j] == ref, "matmul %ux%ux%u c[%u][%u]=%f want %f", m, k, n, i, j,
               c[i * n + j], ref);
    }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(drep);
  free(a);
  free(b);
  free(c);
}

static void test_positions(void) {
  const dim3 count(3, 2, 4), d(4, 2, 3);
  const uint32_t units = 4 * 2 * 3, cubes = 3 * 2 * 4, total = units * cubes;
  uint32_t *pos = (uint32_t *)malloc(total * 8 * 4), *ab = (uint32_t *)malloc(total * 3 * 4), g;
  cubert_kernel_args_t args;
  void *dpos, *dab;
  cubert_kernel_args_initialize(&args);
  dpos = dev_buffer(&args, 0, NULL, total * 8 * 4);
  dab = dev_buffer(&args, 1, NULL, total * 3 * 4);
  ck_positions<<<count, d>>>(args, CUBERT_KERNEL_MODE_CHECKED, NULL);
  CU(cudaGetLastError());
  CU(cudaMemcpy(pos, dpos, total * 8 * 4, cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(ab, dab, total * 3 * 4, cudaMemcpyDeviceToHost));
  for (g = 0; g < total; g++) {
    uint32_t cube = g / units, unit = g % units;
    uint32_t cx = cube % 3, cy = cube / 3 % 2, cz = cube / 6;
    uint32_t ux = unit % 4, uy = unit / 4 % 2, uz = unit / 8;
    const uint32_t *w = pos + g * 8, *a3 = ab + g * 3;
    CK_CHECK(w[0] == cx && w[1] == cy && w[2] == cz && w[3] == ux && w[4] == uy && w[5] == uz &&
                 w[6] == unit && w[7] == cube,
             "positions g=%u", g);
    CK_CHECK(a3[0] == cx * 4 + ux && a3[1] == cy * 2 + uy && a3[2] == cz * 3 + uz,
             "absolute g=%u", g);
  }
  cudaFree(dpos);
  cudaFree(dab);
  free(pos);
  free(ab);
}

static void test_modes(void) {
  float in[16], out[16];
  cubert_kernel_args_t args;
  cubert_kernel_report_t *drep, rep;
  float *din, *dout;
  uint32_t mode;
  int i;
  for (i = 0; i < 16; i++) in[i] = (float)(10 * i);
  CU(cudaMalloc((void **)&din, sizeof(in)));
  CU(cudaMalloc((void **)&dout, sizeof(out)));
  CU(cudaMalloc((void **)&drep, sizeof(*drep)));
  CU(cudaMemcpy(din, in, sizeof(in), cudaMemcpyHostToDevice));
  for (mode = 0; mode < 3; mode++) {
    for (i = 0; i < 16; i++) out[i] = -1.0f;
    CU(cudaMemcpy(dout, out, sizeof(out), cudaMemcpyHostToDevice));
    CU(cudaMemset(drep, 0, sizeof(*drep)));
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, din, 9 * 4);
    cubert_kernel_args_set_buffer(&args, 1, dout, 9 * 4);
    ck_oob_copy_f32<<<4, 4>>>(args, mode, drep);
    CU(cudaGetLastError());
    CU(cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(&rep, drep, sizeof(rep), cudaMemcpyDeviceToHost));
    for (i = 0; i < 16; i++) {
      float want = (i < 9 || mode == CUBERT_KERNEL_MODE_UNCHECKED) ? (float)(10 * i) + 1.0f : -1.0f;
      CK_CHECK(out[i] == want, "mode %u out[%d]=%f want %f", mode, i, out[i], want);
    }
    CK_CHECK(rep.oob_count == (mode == CUBERT_KERNEL_MODE_UNCHECKED ? 0u : 14u),
             "mode %u oob_count %llu", mode, (unsigned long long)rep.oob_count);
    if (mode == CUBERT_KERNEL_MODE_VALIDATE)
      CK_CHECK(rep.has_violation == 1 && rep.element_index >= 9 && rep.buffer_length == 9 &&
                   rep.cube_linear >= 2,
               "validate report: has=%u index=%llu len=%llu cube=%llu", rep.has_violation,
               (unsigned long long)rep.element_index, (unsigned long long)rep.buffer_length,
               (unsigned long long)rep.cube_linear);
    else
      CK_CHECK(rep.has_violation == 0, "mode %u has_violation", mode);
  }
  cudaFree(din);
  cudaFree(dout);
  cudaFree(drep);
}

static void test_axpy_and_reverse(void) {
  float x[200], y[100], out[100];
  uint32_t rin[37 * 128], rout[37 * 128];
  cubert_kernel_args_t args;
  void *dx, *dy, *dout, *drin, *drout;
  int i;
  for (i = 0; i < 200; i++) x[i] = (float)i;
  for (i = 0; i < 100; i++) y[i] = 1000.0f;
  cubert_kernel_args_initialize(&args);
  dx = dev_buffer(&args, 0, x, sizeof(x));
  dy = dev_buffer(&args, 1, y, sizeof(y));
  dout = dev_buffer(&args, 2, NULL, sizeof(out));
  cubert_kernel_args_set_f32(&args, 0, 2.5f);
  cubert_kernel_args_set_i64(&args, 1, -3);
  ck_axpy_offset_f32<<<2, 64>>>(args, CUBERT_KERNEL_MODE_CHECKED, NULL);
  CU(cudaGetLastError());
  CU(cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost));
  for (i = 0; i < 100; i++)
    CK_CHECK(out[i] == (i < 3 ? 1000.0f : 2.5f * (float)(i - 3) + 1000.0f), "axpy %d: %f", i,
             out[i]);
  for (i = 0; i < 37 * 128; i++) rin[i] = (uint32_t)i * 2654435761u;
  cubert_kernel_args_initialize(&args);
  drin = dev_buffer(&args, 0, rin, sizeof(rin));
  drout = dev_buffer(&args, 1, NULL, sizeof(rout));
  ck_reverse_u32<<<37, 128, 128 * 4>>>(args, CUBERT_KERNEL_MODE_CHECKED, NULL);
  CU(cudaGetLastError());
  CU(cudaMemcpy(rout, drout, sizeof(rout), cudaMemcpyDeviceToHost));
  for (i = 0; i < 37 * 128; i++)
    CK_CHECK(rout[i] == rin[(i / 128) * 128 + (127 - i % 128)], "reverse %d", i);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dout);
  cudaFree(drin);
  cudaFree(drout);
}

int main(void) {
  cudaDeviceProp prop;
  CU(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  test_add();
  test_reduce();
  test_matmul(64, 48, 80);
  test_matmul(37, 29, 53);
  test_positions();
  test_modes();
  test_axpy_and_reverse();
  CU(cudaDeviceSynchronize());
  printf("cubert_kernels.cu: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
#endif /* CK_CUDA_MAIN */
