/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/cuda_smoke.c: the CUDA device layer on a GPU, in one program
 * (built by `make CUDA=1 cuda-smoke`; tools/gpu-run.sh runs it).
 *
 *   cuda-smoke [--quick] [--device N]   device listing, correctness checks
 *                                        over the embedded kernel images,
 *                                        then benchmarks (not with --quick)
 *   cuda-smoke --lost [--device N]      only: an illegal-address kernel loses
 *                                        the device (run it as its own process)
 *
 * Prints every check and figure; exit status 0 when every check passed, 1
 * on a mismatch, 2 when CUDA is unavailable or the setup failed. Benchmarks
 * print medians of repeated runs as ratios to the same work done with raw
 * Driver API calls in the same run; they never fail the program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cubert/os.h"
#include "device/cuda_device.h"
#include "cubert_kernels.h"

static int g_checks, g_failures;

#define SMOKE_CHECK(cond, ...)                                  \
  do {                                                          \
    g_checks++;                                                 \
    if (!(cond)) {                                              \
      g_failures++;                                             \
      printf("  FAIL %s:%d: ", __FILE__, __LINE__);             \
      printf(__VA_ARGS__);                                      \
      printf("\n");                                             \
      fflush(stdout);                                           \
    }                                                           \
  } while (0)

/* A call that must succeed: on failure print the record and count it. */
#define SMOKE_OK(call)                                                       \
  do {                                                                       \
    cubert_error_t smoke_err_;                                               \
    cubert_status_t smoke_st_;                                               \
    cubert_error_clear(&smoke_err_);                                         \
    smoke_st_ = (call);                                                      \
    SMOKE_CHECK(smoke_st_ == CUBERT_STATUS_OK, "%s -> %s: %s", #call,        \
                cubert_status_name(smoke_st_), smoke_err_.reason);           \
  } while (0)

/* The `err` argument SMOKE_OK hands to the call. */
#define E (&smoke_err_)

typedef struct smoke_t {
  const cubert_cuda_loader_t *cu;
  cubert_cuda_device_t *device;
  cubert_cuda_stream_t stream;
} smoke_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const cubert_cuda_function_t *smoke_function(smoke_t *s, const cubert_kernel_t *k) {
  const cubert_cuda_function_t *f = NULL;
  SMOKE_OK(cubert__cuda_function_get(s->device, k, &f, E));
  return f;
}

static CUdeviceptr smoke_alloc(smoke_t *s, uint64_t size) {
  CUdeviceptr p = 0;
  SMOKE_OK(cubert__cuda_memory_alloc(&s->stream, size, &p, E));
  return p;
}

static void smoke_sync(smoke_t *s) {
  SMOKE_OK(cubert__cuda_stream_synchronize(&s->stream, E));
  SMOKE_OK(cubert__cuda_stream_drain_errors(&s->stream, E));
}

static void args_buffer(cubert_kernel_args_t *a, uint32_t slot, CUdeviceptr p, uint64_t bytes) {
  (void)cubert_kernel_args_set_buffer(a, slot, (void *)(uintptr_t)p, bytes);
}

/* ---- listing --------------------------------------------------------------------------- */

static void print_devices(const cubert_cuda_loader_t *cu) {
  int i;
  printf("driver: %s, CUDA %d.%d, %d device(s)\n", cu->path, cu->driver_version / 1000,
         cu->driver_version % 1000 / 10, cu->device_count);
  for (i = 0; i < cu->device_count; i++) {
    cubert_cuda_device_info_t info;
    cubert_error_t err;
    const cubert_hardware_properties_t *hw = &info.properties.hardware;
    if (cubert__cuda_device_query(cu, (uint32_t)i, &info, &err) != CUBERT_STATUS_OK) {
      printf("CUDA device %d: query failed: %s\n", i, err.reason);
      continue;
    }
    printf("CUDA device %d \"%s\" sm_%u%u, %llu MiB, %u SMs, PCI %s\n", i, info.properties.name,
           info.compute_major, info.compute_minor,
           (unsigned long long)(info.total_memory >> 20), hw->num_streaming_multiprocessors,
           info.pci_bus_id);
    printf("  clock %u MHz, memory %u MHz x %u bits, L2 %u KiB, async alloc %s\n",
           info.clock_khz / 1000, info.memory_clock_khz / 1000, info.memory_bus_width,
           info.l2_cache_bytes >> 10, info.async_alloc ? "yes" : "no");
    printf("  max units/cube %u, cube dim (%u, %u, %u), cube count (%u, %u, %u), shared %llu B "
           "(opt-in), warp %u\n",
           hw->max_units_per_cube, hw->max_cube_dim.x, hw->max_cube_dim.y, hw->max_cube_dim.z,
           hw->max_cube_count.x, hw->max_cube_count.y, hw->max_cube_count.z,
           (unsigned long long)hw->max_shared_memory_size, hw->plane_size_max);
  }
}

/* Each image once (several of the kernels looked up may share one). */
static void print_images(void) {
  static const char *const names[] = {"ck_add_scalar_u32", "ck_add_f32", "ck_axpy_f32"};
  const cubert_cuda_image_t *seen[3];
  size_t i, j, nseen = 0;
  printf("kernel images registered: %zu\n", cubert_cuda_image_count());
  for (i = 0; i < sizeof names / sizeof names[0]; i++) {
    const cubert_cuda_image_t *img = cubert_cuda_image_find(names[i]);
    SMOKE_CHECK(img != NULL, "no image holds %s", names[i]);
    for (j = 0; j < nseen && img; j++)
      if (seen[j] == img) img = NULL;
    if (!img) continue;
    seen[nseen++] = img;
    printf("  %s: %u entries, PTX %zu B, cubin %zu B (sm_%u)\n", img->name, img->entry_count,
           img->ptx_size, img->cubin_size, img->cubin_arch);
  }
}

/* ---- correctness --------------------------------------------------------------------- */

static void check_add(smoke_t *s, uint64_t n, bool dynamic) {
  const cubert_cuda_function_t *f = smoke_function(s, &ck_add_f32_kernel);
  float *a = (float *)malloc(n * 4), *b = (float *)malloc(n * 4), *c = (float *)malloc(n * 4);
  CUdeviceptr da = smoke_alloc(s, n * 4), db = smoke_alloc(s, n * 4), dc = smoke_alloc(s, n * 4);
  CUdeviceptr dn = smoke_alloc(s, 16);
  cubert_kernel_args_t args;
  cubert_dim3_t grid = {(uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK), 1, 1}, read = {0, 0, 0};
  uint32_t words[3];
  uint64_t i, bad = 0;
  if (!f || !a || !b || !c) exit(2);
  for (i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)(i % 1000);
  }
  SMOKE_OK(cubert__cuda_staging_upload(&s->stream, da, a, n * 4, E));
  SMOKE_OK(cubert__cuda_staging_upload(&s->stream, db, b, n * 4, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, da, n * 4);
  args_buffer(&args, 1, db, n * 4);
  args_buffer(&args, 2, dc, n * 4);
  if (dynamic) {
    words[0] = grid.x;
    words[1] = words[2] = 1;
    SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, dn, words, sizeof words, E));
    SMOKE_OK(cubert__cuda_launch_dynamic(&s->stream, f, dn, &args, CUBERT_KERNEL_MODE_CHECKED, 0,
                                         &read, E));
    SMOKE_CHECK(read.x == grid.x && read.y == 1 && read.z == 1, "dynamic count read (%u,%u,%u)",
                read.x, read.y, read.z);
  } else {
    SMOKE_OK(cubert__cuda_launch(&s->stream, f, grid, &args, CUBERT_KERNEL_MODE_CHECKED, 0, E));
  }
  SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, c, dc, n * 4, E));
  smoke_sync(s);
  for (i = 0; i < n; i++)
    if (c[i] != (float)i + 0.5f * (float)(i % 1000)) bad++;
  SMOKE_CHECK(bad == 0, "add over %llu floats: %llu wrong", (unsigned long long)n,
              (unsigned long long)bad);
  printf("check: elementwise add, %llu floats%s: %s\n", (unsigned long long)n,
         dynamic ? " (dynamic cube count)" : "", bad ? "FAILED" : "ok");
  cubert__cuda_memory_free(&s->stream, da, NULL);
  cubert__cuda_memory_free(&s->stream, db, NULL);
  cubert__cuda_memory_free(&s->stream, dc, NULL);
  cubert__cuda_memory_free(&s->stream, dn, NULL);
  free(a);
  free(b);
  free(c);
}

static void check_pitched(smoke_t *s) {
  uint64_t shape[3] = {3, 37, 100}, strides[3] = {37 * 128, 128, 1}, i, n = 3 * 37 * 100;
  cubert_copy_plan_t plan;
  cubert_error_t err;
  float *in = (float *)malloc(n * 4), *out = (float *)calloc(n, 4);
  CUdeviceptr d;
  if (!in || !out || cubert_copy_plan(3, shape, strides, 4, &plan, &err) != CUBERT_STATUS_OK)
    exit(2);
  for (i = 0; i < n; i++) in[i] = (float)i - 7.0f;
  d = smoke_alloc(s, plan.span_bytes);
  SMOKE_OK(cubert__cuda_copy_planned(&s->stream, &plan, true, in, d, E));
  SMOKE_OK(cubert__cuda_copy_planned(&s->stream, &plan, false, out, d, E));
  smoke_sync(s);
  SMOKE_CHECK(plan.pitched && memcmp(in, out, n * 4) == 0, "pitched round trip differs");
  printf("check: pitched [3, 37, 100] f32 (rows %llu B apart) write + read: %s\n",
         (unsigned long long)plan.src_pitch_bytes, memcmp(in, out, n * 4) ? "FAILED" : "ok");
  cubert__cuda_memory_free(&s->stream, d, NULL);
  free(in);
  free(out);
}

static void check_modes(smoke_t *s) {
  const cubert_cuda_function_t *f = smoke_function(s, &ck_oob_copy_f32_kernel);
  const cubert_cuda_function_t *w = smoke_function(s, &ck_oob_write_u32_kernel);
  CUdeviceptr din = smoke_alloc(s, 64), dout = smoke_alloc(s, 64), drep = smoke_alloc(s, 128);
  cubert_kernel_report_t rep;
  cubert_kernel_args_t args;
  cubert_dim3_t four = {4, 1, 1}, one = {1, 1, 1};
  float in[16];
  int i;
  for (i = 0; i < 16; i++) in[i] = (float)i;
  SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, din, in, sizeof in, E));
  SMOKE_OK(cubert__cuda_memory_set(&s->stream, drep, 0, sizeof rep, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, din, 9 * 4);
  args_buffer(&args, 1, dout, 9 * 4);
  SMOKE_OK(cubert__cuda_launch(&s->stream, f, four, &args, CUBERT_KERNEL_MODE_VALIDATE, drep, E));
  SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, &rep, drep, sizeof rep, E));
  smoke_sync(s);
  SMOKE_CHECK(rep.oob_count == 14 && rep.has_violation == 1 && rep.buffer_length == 9 &&
              rep.element_index >= 9,
              "VALIDATE report: oob %llu, violation %u, index %llu, length %llu",
              (unsigned long long)rep.oob_count, rep.has_violation,
              (unsigned long long)rep.element_index, (unsigned long long)rep.buffer_length);
  printf("check: VALIDATE out-of-bounds report (oob %llu, first: buffer %u index %llu of %llu, "
         "%s, cube %llu)\n",
         (unsigned long long)rep.oob_count, rep.buffer_index, (unsigned long long)rep.element_index,
         (unsigned long long)rep.buffer_length, rep.is_write ? "store" : "load",
         (unsigned long long)rep.cube_linear);
  /* the conformance kernel that writes one past the end, CHECKED */
  SMOKE_OK(cubert__cuda_memory_set(&s->stream, drep, 0, sizeof rep, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, dout, 8 * 4);
  SMOKE_OK(cubert__cuda_launch(&s->stream, w, one, &args, CUBERT_KERNEL_MODE_CHECKED, drep, E));
  SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, &rep, drep, sizeof rep, E));
  smoke_sync(s);
  SMOKE_CHECK(rep.oob_count == 1 && rep.has_violation == 0, "CHECKED ck_oob_write_u32: oob %llu",
              (unsigned long long)rep.oob_count);
  printf("check: CHECKED ck_oob_write_u32: oob %llu\n", (unsigned long long)rep.oob_count);
  cubert__cuda_memory_free(&s->stream, din, NULL);
  cubert__cuda_memory_free(&s->stream, dout, NULL);
  cubert__cuda_memory_free(&s->stream, drep, NULL);
}

static void check_kernels(smoke_t *s) {
  const uint32_t m = 37, k = 29, n = 53, cubes = 37;
  float a[37 * 29], b[29 * 53], c[37 * 53], alpha = 1.5f;
  uint32_t rin[37 * 128], rout[37 * 128], buf[1000], i, j, t, bad = 0;
  CUdeviceptr da = smoke_alloc(s, sizeof a), db = smoke_alloc(s, sizeof b);
  CUdeviceptr dc = smoke_alloc(s, sizeof c), dr = smoke_alloc(s, sizeof rin);
  CUdeviceptr dr2 = smoke_alloc(s, sizeof rout), dbuf = smoke_alloc(s, sizeof buf);
  cubert_kernel_args_t args;
  cubert_dim3_t grid;
  for (i = 0; i < m * k; i++) a[i] = (float)((int)(i % 7u) - 3);
  for (i = 0; i < k * n; i++) b[i] = (float)((int)(i % 5u) - 2);
  SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, da, a, sizeof a, E));
  SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, db, b, sizeof b, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, da, sizeof a);
  args_buffer(&args, 1, db, sizeof b);
  args_buffer(&args, 2, dc, sizeof c);
  cubert_kernel_args_set_u32(&args, 0, m);
  cubert_kernel_args_set_u32(&args, 1, k);
  cubert_kernel_args_set_u32(&args, 2, n);
  grid.x = (n + CK_TILE - 1) / CK_TILE;
  grid.y = (m + CK_TILE - 1) / CK_TILE;
  grid.z = 1;
  SMOKE_OK(cubert__cuda_launch(&s->stream, smoke_function(s, &ck_matmul_f32_kernel), grid, &args,
                               CUBERT_KERNEL_MODE_CHECKED, 0, E));
  SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, c, dc, sizeof c, E));
  /* dynamic shared memory: reverse each 128-unit block */
  for (i = 0; i < 37 * 128; i++) rin[i] = i * 2654435761u;
  SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, dr, rin, sizeof rin, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, dr, sizeof rin);
  args_buffer(&args, 1, dr2, sizeof rout);
  grid.x = cubes;
  grid.y = 1;
  SMOKE_OK(cubert__cuda_launch(&s->stream, smoke_function(s, &ck_reverse_u32_kernel), grid, &args,
                               CUBERT_KERNEL_MODE_CHECKED, 0, E));
  SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, rout, dr2, sizeof rout, E));
  /* the conformance suite's buf[i] += delta */
  for (i = 0; i < 1000; i++) buf[i] = i;
  SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, dbuf, buf, sizeof buf, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, dbuf, sizeof buf);
  cubert_kernel_args_set_u32(&args, 0, 7);
  grid.x = (1000 + CK_SMALL_BLOCK - 1) / CK_SMALL_BLOCK;
  SMOKE_OK(cubert__cuda_launch(&s->stream, smoke_function(s, &ck_add_scalar_u32_kernel), grid, &args,
                               CUBERT_KERNEL_MODE_CHECKED, 0, E));
  SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, buf, dbuf, sizeof buf, E));
  smoke_sync(s);
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      float ref = 0.0f;
      for (t = 0; t < k; t++) ref += a[i * k + t] * b[t * n + j];
      if (c[i * n + j] != ref) bad++;
    }
  SMOKE_CHECK(bad == 0, "matmul 37x29x53: %u wrong", bad);
  printf("check: ck_matmul_f32 37x29x53: %s\n", bad ? "FAILED" : "ok");
  for (bad = 0, i = 0; i < 37 * 128; i++)
    if (rout[i] != rin[(i / 128) * 128 + (127 - i % 128)]) bad++;
  SMOKE_CHECK(bad == 0, "reverse: %u wrong", bad);
  printf("check: ck_reverse_u32 (dynamic shared memory): %s\n", bad ? "FAILED" : "ok");
  for (bad = 0, i = 0; i < 1000; i++)
    if (buf[i] != i + 7) bad++;
  SMOKE_CHECK(bad == 0, "ck_add_scalar_u32: %u wrong", bad);
  printf("check: ck_add_scalar_u32: %s\n", bad ? "FAILED" : "ok");
  {
    float x[300], y[300], out[300];
    CUdeviceptr dx = smoke_alloc(s, sizeof x), dy = smoke_alloc(s, sizeof y);
    CUdeviceptr dout = smoke_alloc(s, sizeof out);
    for (i = 0; i < 300; i++) {
      x[i] = (float)i;
      y[i] = 1.0f;
    }
    SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, dx, x, sizeof x, E));
    SMOKE_OK(cubert__cuda_copy_h2d(&s->stream, dy, y, sizeof y, E));
    cubert_kernel_args_initialize(&args);
    args_buffer(&args, 0, dx, sizeof x);
    args_buffer(&args, 1, dy, sizeof y);
    args_buffer(&args, 2, dout, sizeof out);
    cubert_kernel_args_set_f32(&args, 0, alpha);
    grid.x = (300 + CK_BLOCK - 1) / CK_BLOCK;
    SMOKE_OK(cubert__cuda_launch(&s->stream, smoke_function(s, &ck_axpy_f32_kernel), grid, &args,
                                 CUBERT_KERNEL_MODE_CHECKED, 0, E));
    SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, out, dout, sizeof out, E));
    smoke_sync(s);
    for (bad = 0, i = 0; i < 300; i++)
      if (out[i] != (float)i * alpha + 1.0f) bad++;
    SMOKE_CHECK(bad == 0, "ck_axpy_f32: %u wrong", bad);
    printf("check: ck_axpy_f32: %s\n", bad ? "FAILED" : "ok");
    cubert__cuda_memory_free(&s->stream, dx, NULL);
    cubert__cuda_memory_free(&s->stream, dy, NULL);
    cubert__cuda_memory_free(&s->stream, dout, NULL);
  }
  cubert__cuda_memory_free(&s->stream, da, NULL);
  cubert__cuda_memory_free(&s->stream, db, NULL);
  cubert__cuda_memory_free(&s->stream, dc, NULL);
  cubert__cuda_memory_free(&s->stream, dr, NULL);
  cubert__cuda_memory_free(&s->stream, dr2, NULL);
  cubert__cuda_memory_free(&s->stream, dbuf, NULL);
}

static void check_errors(smoke_t *s) {
  static const char bad_ptx[] = ".version 7.0\n.target sm_75\n.address_size 64\n"
                                ".visible .entry broken(\n)\n{\n  not ptx at all;\n}\n";
  cubert_kernel_t k;
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t one = {1, 1, 1};
  cubert_error_t err;
  CUdeviceptr p = 0;
  cubert_status_t st;
  memset(&k, 0, sizeof k);
  k.name = k.cuda_entry_name = "broken";
  k.cuda_image = bad_ptx;
  k.cuda_image_size = sizeof bad_ptx;
  k.cube_dim.x = k.cube_dim.y = k.cube_dim.z = 1;
  st = cubert__cuda_function_get(s->device, &k, &f, &err);
  SMOKE_CHECK(st == CUBERT_STATUS_COMPILATION_FAILED && cubert__cuda_module_error_log(s->device)[0],
              "bad PTX gave %s", cubert_status_name(st));
  printf("check: compile error -> %s: %s\n", cubert_status_name(st), err.reason);
  printf("  JIT error log: %s\n", cubert__cuda_module_error_log(s->device));
  st = cubert__cuda_memory_alloc(&s->stream, (uint64_t)1 << 50, &p, &err);
  SMOKE_CHECK(st == CUBERT_STATUS_OUT_OF_MEMORY && err.driver_code == CUDA_ERROR_OUT_OF_MEMORY,
              "1 PiB alloc gave %s", cubert_status_name(st));
  printf("check: 1 PiB allocation -> %s: %s\n", cubert_status_name(st), err.reason);
  cubert_kernel_args_initialize(&args);
  (void)cubert_kernel_args_set_buffer(&args, 0, NULL, 0);
  (void)cubert_kernel_args_set_u32(&args, 0, 1);
  f = smoke_function(s, &ck_add_scalar_u32_huge_cube_kernel);
  st = f ? cubert__cuda_launch(&s->stream, f, one, &args, 0, 0, &err) : CUBERT_STATUS_INTERNAL;
  SMOKE_CHECK(st == CUBERT_STATUS_LIMIT_EXCEEDED, "2048-unit cube gave %s", cubert_status_name(st));
  printf("check: 2048 units per cube -> %s\n", cubert_status_name(st));
  SMOKE_CHECK(!cubert__cuda_device_is_lost(s->device), "device lost by refused calls");
  smoke_sync(s);
}

/* ---- benchmarks -------------------------------------------------------------------------- */

#define REPEATS 7

static void bench_launch(smoke_t *s) {
  const cubert_cuda_function_t *f = smoke_function(s, &ck_empty_kernel);
  const int n = 20000;
  double raw[REPEATS], layer[REPEATS], t;
  cubert_kernel_args_t args;
  cubert_dim3_t one = {1, 1, 1};
  uint32_t mode = CUBERT_KERNEL_MODE_UNCHECKED;
  CUdeviceptr report = 0;
  void *params[3];
  int r, i;
  if (!f) return;
  cubert_kernel_args_initialize(&args);
  params[0] = &args;
  params[1] = &mode;
  params[2] = &report;
  for (r = 0; r < REPEATS; r++) {
    t = now_s();
    for (i = 0; i < n; i++)
      (void)s->cu->cuLaunchKernel(f->handle, 1, 1, 1, 1, 1, 1, 0, s->stream.handle, params, NULL);
    (void)s->cu->cuStreamSynchronize(s->stream.handle);
    raw[r] = (now_s() - t) / n * 1e9;
    t = now_s();
    for (i = 0; i < n; i++)
      (void)cubert__cuda_launch(&s->stream, f, one, &args, CUBERT_KERNEL_MODE_UNCHECKED, 0, NULL);
    (void)s->cu->cuStreamSynchronize(s->stream.handle);
    layer[r] = (now_s() - t) / n * 1e9;
  }
  t = median(raw, REPEATS);
  printf("bench: empty-kernel launch: raw cuLaunchKernel %.0f ns, cubert__cuda_launch %.0f ns "
         "(ratio %.3f; %d launches + sync, median of %d)\n",
         t, median(layer, REPEATS), median(layer, REPEATS) / t, n, REPEATS);
}

static void bench_small_op(smoke_t *s) {
  const cubert_cuda_function_t *f = smoke_function(s, &ck_add_f32_kernel);
  CUdeviceptr da = smoke_alloc(s, 4096), db = smoke_alloc(s, 4096), dc = smoke_alloc(s, 4096);
  cubert_cuda_staging_chunk_t *out = NULL;
  float a[1024];
  cubert_kernel_args_t args;
  cubert_dim3_t grid = {1024 / CK_BLOCK, 1, 1};
  double v[101];
  int i;
  if (!f || cubert__cuda_staging_acquire(s->device, 4096, &out, NULL) != CUBERT_STATUS_OK) return;
  for (i = 0; i < 1024; i++) a[i] = (float)i;
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, da, 4096);
  args_buffer(&args, 1, db, 4096);
  args_buffer(&args, 2, dc, 4096);
  for (i = 0; i < 101; i++) {
    double t = now_s();
    (void)cubert__cuda_copy_h2d(&s->stream, da, a, 4096, NULL);
    (void)cubert__cuda_copy_h2d(&s->stream, db, a, 4096, NULL);
    (void)cubert__cuda_launch(&s->stream, f, grid, &args, CUBERT_KERNEL_MODE_UNCHECKED, 0, NULL);
    (void)cubert__cuda_copy_d2h(&s->stream, out->ptr, dc, 4096, NULL);
    (void)cubert__cuda_stream_synchronize(&s->stream, NULL);
    v[i] = (now_s() - t) * 1e6;
  }
  printf("bench: 1024-float add end to end (2 uploads from pageable, launch, read into pinned, "
         "sync) through the layer: %.1f us (median of 101)\n",
         median(v, 101));
  cubert__cuda_staging_release(s->device, out, NULL);
  cubert__cuda_memory_free(&s->stream, da, NULL);
  cubert__cuda_memory_free(&s->stream, db, NULL);
  cubert__cuda_memory_free(&s->stream, dc, NULL);
}

/* Where a small op's launch + sync goes: raw cuLaunchKernel +
 * cuStreamSynchronize one at a time, for the empty kernel on 1 x 1 and on
 * the add's grid (4 x 256), and the 1024-float add itself in UNCHECKED and
 * CHECKED mode (median of 101 rounds of 50). */
static double round_trip_ns(smoke_t *s, const cubert_cuda_function_t *f, uint32_t cubes,
                            uint32_t units, cubert_kernel_args_t *args, uint32_t mode) {
  CUdeviceptr report = 0;
  void *params[3];
  double v[101];
  int r, i;
  params[0] = args;
  params[1] = &mode;
  params[2] = &report;
  for (r = 0; r < 101; r++) {
    double t = now_s();
    for (i = 0; i < 50; i++) {
      (void)s->cu->cuLaunchKernel(f->handle, cubes, 1, 1, units, 1, 1, 0, s->stream.handle, params,
                                  NULL);
      (void)s->cu->cuStreamSynchronize(s->stream.handle);
    }
    v[r] = (now_s() - t) / 50 * 1e9;
  }
  return median(v, 101);
}

static void bench_round_trips(smoke_t *s) {
  const cubert_cuda_function_t *empty = smoke_function(s, &ck_empty_kernel);
  const cubert_cuda_function_t *add = smoke_function(s, &ck_add_f32_kernel);
  CUdeviceptr da = smoke_alloc(s, 4096), db = smoke_alloc(s, 4096), dc = smoke_alloc(s, 4096);
  cubert_kernel_args_t none, args;
  if (!empty || !add) return;
  cubert_kernel_args_initialize(&none);
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, da, 4096);
  args_buffer(&args, 1, db, 4096);
  args_buffer(&args, 2, dc, 4096);
  printf("bench: raw launch + cuStreamSynchronize, one at a time: empty 1x1 %.0f ns, "
         "empty 4x256 %.0f ns, 1024-float add 4x256 UNCHECKED %.0f ns, CHECKED %.0f ns\n",
         round_trip_ns(s, empty, 1, 1, &none, CUBERT_KERNEL_MODE_UNCHECKED),
         round_trip_ns(s, empty, 4, 256, &none, CUBERT_KERNEL_MODE_UNCHECKED),
         round_trip_ns(s, add, 4, 256, &args, CUBERT_KERNEL_MODE_UNCHECKED),
         round_trip_ns(s, add, 4, 256, &args, CUBERT_KERNEL_MODE_CHECKED));
  cubert__cuda_memory_free(&s->stream, da, NULL);
  cubert__cuda_memory_free(&s->stream, db, NULL);
  cubert__cuda_memory_free(&s->stream, dc, NULL);
}

static void bench_alloc(smoke_t *s) {
  const int n = 2000;
  double raw[REPEATS], layer[REPEATS], t;
  CUdeviceptr p;
  int r, i;
  if (!s->device->async_alloc) {
    printf("bench: alloc+free: skipped (no memory pools on this device)\n");
    return;
  }
  for (r = 0; r < REPEATS; r++) {
    t = now_s();
    for (i = 0; i < n; i++) {
      (void)s->cu->cuMemAllocAsync(&p, 1 << 20, s->stream.handle);
      (void)s->cu->cuMemFreeAsync(p, s->stream.handle);
    }
    (void)s->cu->cuStreamSynchronize(s->stream.handle);
    raw[r] = (now_s() - t) / n * 1e9;
    t = now_s();
    for (i = 0; i < n; i++) {
      (void)cubert__cuda_memory_alloc(&s->stream, 1 << 20, &p, NULL);
      (void)cubert__cuda_memory_free(&s->stream, p, NULL);
    }
    (void)s->cu->cuStreamSynchronize(s->stream.handle);
    layer[r] = (now_s() - t) / n * 1e9;
  }
  t = median(raw, REPEATS);
  printf("bench: 1 MiB alloc+free: raw cuMemAllocAsync+cuMemFreeAsync %.0f ns, layer %.0f ns "
         "(ratio %.3f; the server's pools are measured against this raw pair)\n",
         t, median(layer, REPEATS), median(layer, REPEATS) / t);
}

static void bench_upload(smoke_t *s) {
  const uint64_t size = 256u << 20;
  unsigned char *pageable = (unsigned char *)malloc(size);
  void *pinned = NULL;
  cubert_cuda_staging_chunk_t *chunk = NULL;
  double raw[5], staged[5], reserved[5], t;
  CUdeviceptr d = smoke_alloc(s, size);
  int r;
  if (!pageable || cubert__cuda_host_alloc(s->device, size, &pinned, NULL) != CUBERT_STATUS_OK ||
      cubert__cuda_staging_acquire(s->device, size, &chunk, NULL) != CUBERT_STATUS_OK) {
    printf("bench: 256 MiB upload: skipped (host memory)\n");
    return;
  }
  memset(pageable, 1, size);
  memset(pinned, 2, size);
  memset(chunk->ptr, 3, size);
  for (r = 0; r < 5; r++) {
    t = now_s();
    (void)s->cu->cuMemcpyHtoDAsync(d, pinned, size, s->stream.handle);
    (void)s->cu->cuStreamSynchronize(s->stream.handle);
    raw[r] = (double)size / (now_s() - t) / 1e9;
    t = now_s();
    (void)cubert__cuda_staging_upload(&s->stream, d, pageable, size, NULL);
    (void)s->cu->cuStreamSynchronize(s->stream.handle);
    staged[r] = (double)size / (now_s() - t) / 1e9;
    t = now_s();
    (void)cubert__cuda_copy_h2d(&s->stream, d, chunk->ptr, size, NULL);
    (void)s->cu->cuStreamSynchronize(s->stream.handle);
    reserved[r] = (double)size / (now_s() - t) / 1e9;
  }
  t = median(raw, 5);
  printf("bench: 256 MiB upload: raw pinned cuMemcpyHtoDAsync %.1f GB/s; from pageable through "
         "staging %.1f GB/s (ratio %.2f); from a staging chunk %.1f GB/s (ratio %.2f); median of 5\n",
         t, median(staged, 5), median(staged, 5) / t, median(reserved, 5), median(reserved, 5) / t);
  cubert__cuda_staging_release(s->device, chunk, NULL);
  (void)cubert__cuda_staging_trim(s->device);
  cubert__cuda_host_free(s->device, pinned);
  cubert__cuda_memory_free(&s->stream, d, NULL);
  free(pageable);
}

/* One kernel launched raw and through the layer, timed with events. */
static void bench_kernel(smoke_t *s, const char *what, const cubert_cuda_function_t *f,
                         cubert_dim3_t grid, cubert_kernel_args_t *args, int repeats) {
  double raw[REPEATS], layer[REPEATS], t;
  uint32_t mode = CUBERT_KERNEL_MODE_UNCHECKED;
  CUdeviceptr report = 0;
  void *params[3];
  cubert_cuda_event_t *e0 = NULL, *e1 = NULL;
  uint64_t ns = 0;
  int r;
  params[0] = args;
  params[1] = &mode;
  params[2] = &report;
  if (repeats > REPEATS) repeats = REPEATS;
  (void)cubert__cuda_launch(&s->stream, f, grid, args, mode, 0, NULL); /* warm up */
  for (r = 0; r < repeats; r++) {
    (void)cubert__cuda_event_record(&s->stream, true, &e0, NULL);
    (void)s->cu->cuLaunchKernel(f->handle, grid.x, grid.y, grid.z, f->kernel->cube_dim.x,
                                f->kernel->cube_dim.y, f->kernel->cube_dim.z,
                                f->kernel->shared_memory_bytes, s->stream.handle, params, NULL);
    (void)cubert__cuda_event_record(&s->stream, true, &e1, NULL);
    (void)cubert__cuda_event_synchronize(s->device, e1, NULL);
    (void)cubert__cuda_event_elapsed(s->device, e0, e1, &ns, NULL);
    raw[r] = (double)ns / 1e3;
    cubert__cuda_event_release(s->device, e0);
    cubert__cuda_event_release(s->device, e1);
    (void)cubert__cuda_event_record(&s->stream, true, &e0, NULL);
    (void)cubert__cuda_launch(&s->stream, f, grid, args, mode, 0, NULL);
    (void)cubert__cuda_event_record(&s->stream, true, &e1, NULL);
    (void)cubert__cuda_event_synchronize(s->device, e1, NULL);
    (void)cubert__cuda_event_elapsed(s->device, e0, e1, &ns, NULL);
    layer[r] = (double)ns / 1e3;
    cubert__cuda_event_release(s->device, e0);
    cubert__cuda_event_release(s->device, e1);
  }
  t = median(raw, repeats);
  printf("bench: %s: raw %.1f us, layer %.1f us (raw/layer %.3f, median of %d, device events)\n",
         what, t, median(layer, repeats), t / median(layer, repeats), repeats);
}

static void bench_kernels(smoke_t *s) {
  const uint64_t n = 16u << 20;
  const uint32_t dim = 4096;
  const cubert_cuda_function_t *add = smoke_function(s, &ck_add_f32_kernel);
  const cubert_cuda_function_t *mm = smoke_function(s, &ck_matmul_f32_kernel);
  CUdeviceptr a = smoke_alloc(s, n * 4), b = smoke_alloc(s, n * 4), c = smoke_alloc(s, n * 4);
  cubert_kernel_args_t args;
  cubert_dim3_t grid;
  float *host = (float *)malloc((size_t)dim * dim * 4), *out = (float *)malloc((size_t)dim * 4);
  uint64_t i;
  uint32_t j, t, bad = 0;
  if (!add || !mm || !host || !out) return;
  SMOKE_OK(cubert__cuda_memory_set(&s->stream, a, 0, n * 4, E));
  SMOKE_OK(cubert__cuda_memory_set(&s->stream, b, 0, n * 4, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, a, n * 4);
  args_buffer(&args, 1, b, n * 4);
  args_buffer(&args, 2, c, n * 4);
  grid.x = (uint32_t)(n / CK_BLOCK);
  grid.y = grid.z = 1;
  bench_kernel(s, "16M-float add (ck_add_f32)", add, grid, &args, REPEATS);
  /* 4096^2 matmul on small integers (exact in f32), a few entries checked */
  for (i = 0; i < (uint64_t)dim * dim; i++) host[i] = (float)((int)(i % 7u) - 3);
  SMOKE_OK(cubert__cuda_staging_upload(&s->stream, a, host, (uint64_t)dim * dim * 4, E));
  for (i = 0; i < (uint64_t)dim * dim; i++) host[i] = (float)((int)(i % 5u) - 2);
  SMOKE_OK(cubert__cuda_staging_upload(&s->stream, b, host, (uint64_t)dim * dim * 4, E));
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, a, (uint64_t)dim * dim * 4);
  args_buffer(&args, 1, b, (uint64_t)dim * dim * 4);
  args_buffer(&args, 2, c, (uint64_t)dim * dim * 4);
  cubert_kernel_args_set_u32(&args, 0, dim);
  cubert_kernel_args_set_u32(&args, 1, dim);
  cubert_kernel_args_set_u32(&args, 2, dim);
  grid.x = grid.y = dim / CK_TILE;
  bench_kernel(s, "4096^2 matmul (ck_matmul_f32)", mm, grid, &args, 3);
  SMOKE_OK(cubert__cuda_copy_d2h(&s->stream, out, c + (CUdeviceptr)4u * dim * 1234, dim * 4, E));
  smoke_sync(s);
  for (j = 0; j < dim; j += 97) {
    float ref = 0.0f;
    for (t = 0; t < dim; t++)
      ref += (float)((int)((1234u * dim + t) % 7u) - 3) * (float)((int)((t * dim + j) % 5u) - 2);
    if (out[j] != ref) bad++;
  }
  SMOKE_CHECK(bad == 0, "4096^2 matmul row 1234: %u sampled entries wrong", bad);
  cubert__cuda_memory_free(&s->stream, a, NULL);
  cubert__cuda_memory_free(&s->stream, b, NULL);
  cubert__cuda_memory_free(&s->stream, c, NULL);
  free(host);
  free(out);
}

/* ---- device lost ----------------------------------------------------------------------------- */

static int run_lost(smoke_t *s) {
  const cubert_cuda_function_t *f = smoke_function(s, &ck_oob_copy_f32_kernel);
  CUdeviceptr out = smoke_alloc(s, 4096);
  cubert_kernel_args_t args;
  cubert_dim3_t grid = {1024, 1, 1};
  cubert_error_t err, again;
  cubert_status_t st;
  double t;
  if (!f) return 1;
  cubert_kernel_args_initialize(&args);
  args_buffer(&args, 0, 0x10, (uint64_t)1 << 40); /* reads from an unmapped address */
  args_buffer(&args, 1, out, 4096);
  SMOKE_OK(cubert__cuda_launch(&s->stream, f, grid, &args, CUBERT_KERNEL_MODE_UNCHECKED, 0, E));
  st = cubert__cuda_stream_synchronize(&s->stream, &err);
  printf("lost: synchronize -> %s: %s (driver code %lld)\n", cubert_status_name(st), err.reason,
         (long long)err.driver_code);
  SMOKE_CHECK(st == CUBERT_STATUS_UNAVAILABLE && cubert_error_kind(&err) == CUBERT_ERROR_DEVICE_LOST,
              "the illegal address did not lose the device");
  t = now_s();
  st = cubert__cuda_launch(&s->stream, f, grid, &args, 0, 0, &again);
  SMOKE_CHECK(st == CUBERT_STATUS_UNAVAILABLE && strcmp(again.reason, err.reason) == 0,
              "a later launch gave %s", cubert_status_name(st));
  st = cubert__cuda_stream_drain_errors(&s->stream, &again);
  SMOKE_CHECK(st == CUBERT_STATUS_UNAVAILABLE, "drain gave %s", cubert_status_name(st));
  st = cubert__cuda_memory_alloc(&s->stream, 64, &out, &again);
  SMOKE_CHECK(st == CUBERT_STATUS_UNAVAILABLE, "alloc gave %s", cubert_status_name(st));
  printf("lost: later calls returned in %.1f us\n", (now_s() - t) * 1e6);
  return 0;
}

int main(int argc, char **argv) {
  smoke_t s;
  cubert_error_t err;
  uint32_t ordinal = 0;
  int quick = 0, lost = 0, i;
  double t0 = now_s();
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--lost")) lost = 1;
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) ordinal = (uint32_t)atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: cuda-smoke [--quick] [--lost] [--device N]\n");
      return 2;
    }
  }
  memset(&s, 0, sizeof s);
  if (cubert__cuda_loader_shared(&s.cu, &err) != CUBERT_STATUS_OK) {
    printf("cuda-smoke: %s\n", err.reason);
    return 2;
  }
  print_devices(s.cu);
  print_images();
  if (cubert__cuda_device_open(s.cu, ordinal, cubert_allocator_libc(), &s.device, &err) !=
      CUBERT_STATUS_OK ||
      cubert__cuda_stream_initialize(s.device, &s.stream, &err) != CUBERT_STATUS_OK) {
    printf("cuda-smoke: cannot open device %u: %s\n", ordinal, err.reason);
    return 2;
  }
  printf("device %u open (primary context, non-blocking stream) in %.0f ms\n", ordinal,
         (now_s() - t0) * 1e3);
  if (lost) {
    run_lost(&s);
  } else {
    check_add(&s, 1u << 20, false);
    check_add(&s, 100003, true);
    check_pitched(&s);
    check_modes(&s);
    check_kernels(&s);
    check_errors(&s);
    if (!quick) {
      bench_launch(&s);
      bench_small_op(&s);
      bench_round_trips(&s);
      bench_alloc(&s);
      bench_upload(&s);
      bench_kernels(&s);
    }
  }
  cubert__cuda_stream_deinitialize(&s.stream);
  cubert__cuda_device_close(s.device);
  printf("cuda-smoke: %d checks, %d failed (%.1f s)\n", g_checks, g_failures, now_s() - t0);
  return g_failures ? 1 : 0;
}
