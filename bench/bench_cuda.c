/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_cuda.c: the CUDA device through the client API
 * (cubert/cuda.h), each figure next to the same operation through the raw
 * Driver API (the same libcuda entry points, kernels and GPU) measured in
 * the same run, alternating run by run. docs/benchmarks.md ("GPU").
 *
 *  1. empty-kernel launches, sustained: N launches (1 cube of 1 unit) then
 *     one sync; launches/s vs a raw cuLaunchKernel loop + cuStreamSynchronize
 *     (goal >= 0.9x);
 *  2. async launch, client side: bursts of 256 launches into an idle stream,
 *     timed until the last launch returned; ns per launch vs raw
 *     cuLaunchKernel, and the difference (what the client adds; goal
 *     <= 500 ns, a constant peer);
 *  3. a 1024-float add end to end: launch + sync (goal <= 5 us; raw
 *     cuLaunchKernel + cuStreamSynchronize as context);
 *  4. alloc + free of 1 MiB through the pools (empty + release) vs
 *     cuMemAllocAsync + cuMemFreeAsync on a stream (goal >= 15x);
 *  5. a 256 MiB upload from pageable memory (create_bytes of a malloc'd
 *     buffer, then sync: the pinned piece ring) with 1, 4 and the default
 *     number of copy threads, vs a raw pageable cuMemcpyHtoDAsync + sync,
 *     with the goal >= 20 GB/s as a constant peer; context rows: create()
 *     (the client copies the data first), raw pinned, raw
 *     cuMemHostRegister + copy + cuMemHostUnregister;
 *  6. the same upload from a reserve_staging buffer vs a raw pinned
 *     cuMemcpyHtoDAsync (goal >= 0.9x);
 *  7. a 16M-float add and a 4096^2 matmul (kernel library) through the
 *     client vs the same functions launched raw (goal >= 0.95x).
 * Medians over --runs runs (default 11) with [min..max]. Rows in the table
 * and CSV of bench/bench_util.h (CUBERT_BENCH_CSV; `make bench
 * BENCH_EXTRA_CSV=...` joins them to the CPU rows).
 *
 *   build/cuda/bench/bench_cuda [--runs R] [--quick]
 * Without a GPU (or in a build without CUDA) it prints one line
 * "bench_cuda: skipped: CUDA unavailable: <reason>" and exits 0. Exit
 * status 1 when an operation failed or a result did not check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#if !defined(CUBERT_HAVE_BACKEND_CUDA)
int main(void) {
  printf("bench_cuda: skipped: CUDA unavailable: this build has no CUDA backend (make CUDA=1)\n");
  return 0;
}
#else

#include "cubert/client.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/host.h"
#include "cubert_kernels.h"
#include "cuda_loader.h"

#define MAX_RUNS BENCH_MAX_RUNS
#define BIG (256u << 20)

static int g_failed;

#define MUST(what, expr)                                                                  \
  do {                                                                                    \
    cubert_error_t must_err_;                                                             \
    cubert_status_t must_st_ = (expr);                                                    \
    (void)must_err_;                                                                      \
    if (must_st_ != CUBERT_STATUS_OK) {                                                   \
      fprintf(stderr, "bench_cuda: %s failed: %s\n", what, cubert_status_name(must_st_)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define CU(what, expr)                                                                   \
  do {                                                                                   \
    CUresult cu_r_ = (expr);                                                             \
    if (cu_r_ != CUDA_SUCCESS) {                                                         \
      fprintf(stderr, "bench_cuda: %s failed: CUresult %d\n", what, (int)cu_r_);         \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

typedef struct cfg_t {
  int runs;
  int quick;
} cfg_t;

/* ---- the raw Driver API side ---------------------------------------------------------- */

typedef struct raw_t {
  const cubert_cuda_loader_t *cu;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUmodule modules[4];
  int nmodules;
} raw_t;

static void raw_open(raw_t *r) {
  memset(r, 0, sizeof *r);
  MUST("loader", cubert_cuda_loader_shared(&r->cu, NULL));
  CU("cuDeviceGet", r->cu->cuDeviceGet(&r->dev, 0));
  CU("cuDevicePrimaryCtxRetain", r->cu->cuDevicePrimaryCtxRetain(&r->ctx, r->dev));
  CU("cuCtxSetCurrent", r->cu->cuCtxSetCurrent(r->ctx));
  CU("cuStreamCreate", r->cu->cuStreamCreate(&r->stream, CU_STREAM_NON_BLOCKING));
}

static void raw_close(raw_t *r) {
  int i;
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  for (i = 0; i < r->nmodules; i++) (void)r->cu->cuModuleUnload(r->modules[i]);
  (void)r->cu->cuStreamDestroy(r->stream);
  (void)r->cu->cuDevicePrimaryCtxRelease(r->dev);
}

/* The kernel's function from its registered image (the cubin when it is
 * for this GPU, else the PTX), as the client's device loads it. */
static CUfunction raw_function(raw_t *r, const cubert_kernel_t *k) {
  const cubert_cuda_image_t *img = cubert_cuda_image_find(k->cuda_entry_name);
  cubert_cuda_device_info_t info;
  CUmodule m = NULL;
  CUfunction f = NULL;
  if (!img) {
    fprintf(stderr, "bench_cuda: no image holds %s\n", k->cuda_entry_name);
    exit(1);
  }
  MUST("device info", cubert_cuda_device_info(0, &info, NULL));
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  if (!(img->cubin && img->cubin_arch == info.compute_major * 10 + info.compute_minor &&
        r->cu->cuModuleLoadDataEx(&m, img->cubin, 0, NULL, NULL) == CUDA_SUCCESS))
    CU("cuModuleLoadDataEx", r->cu->cuModuleLoadDataEx(&m, img->ptx, 0, NULL, NULL));
  r->modules[r->nmodules++] = m;
  CU("cuModuleGetFunction", r->cu->cuModuleGetFunction(&f, m, k->cuda_entry_name));
  return f;
}

/* Launch as the client's device does: (args by value, CHECKED, no report). */
static void raw_launch(raw_t *r, CUfunction f, const cubert_kernel_t *k, cubert_dim3_t count,
                       const cubert_kernel_args_t *args) {
  uint32_t mode = CUBERT_KERNEL_MODE_CHECKED;
  CUdeviceptr report = 0;
  void *params[3];
  params[0] = (void *)args;
  params[1] = &mode;
  params[2] = &report;
  CU("cuLaunchKernel", r->cu->cuLaunchKernel(f, count.x, count.y, count.z, k->cube_dim.x,
                                             k->cube_dim.y, k->cube_dim.z,
                                             k->shared_memory_bytes, r->stream, params, NULL));
}

static void raw_sync(raw_t *r) { CU("cuStreamSynchronize", r->cu->cuStreamSynchronize(r->stream)); }

static CUdeviceptr raw_alloc(raw_t *r, size_t n) {
  CUdeviceptr p = 0;
  CU("cuMemAllocAsync", r->cu->cuMemAllocAsync(&p, n, r->stream));
  return p;
}

static void raw_free(raw_t *r, CUdeviceptr p) {
  CU("cuMemFreeAsync", r->cu->cuMemFreeAsync(p, r->stream));
}

/* ---- the client side ---------------------------------------------------------------------- */

static cubert_client_t *client_new(uint32_t index, uint32_t upload_threads) {
  cubert_cuda_options_t o;
  cubert_client_t *c = NULL;
  cubert_error_t err;
  cubert_cuda_options_initialize(&o);
  o.device_index = index;
  o.upload_threads = upload_threads;
  if (cubert_cuda_client_create(cubert_allocator_libc(), &o, &c, &err) != CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_cuda: cannot create the CUDA device: %s\n", err.reason);
    exit(1);
  }
  return c;
}

static cubert_launch_arguments_t args_of(const cubert_binding_t *b, uint32_t nb,
                                         const uint64_t *s, uint32_t ns) {
  cubert_launch_arguments_t a;
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = s;
  a.scalar_count = ns;
  return a;
}

static bench_stat_t constant(double v) {
  bench_stat_t s;
  s.median = s.min = s.max = v;
  s.runs = 1;
  return s;
}

static void emit(const char *section, const char *figure, const char *unit, int higher,
                 bench_stat_t ours, const char *peer, bench_stat_t theirs, double goal) {
  bench_row_t row = bench_row(section, figure, unit, higher, ours);
  row.peer = peer;
  row.peer_stat = theirs;
  row.goal = goal;
  bench_emit(&row);
}

/* ---- 1-3: launches ---------------------------------------------------------------------------- */

static void bench_launches(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  const int n = cfg->quick ? 2000 : 20000, burst = 256;
  double thr_c[MAX_RUNS], thr_r[MAX_RUNS], bur_c[MAX_RUNS], bur_r[MAX_RUNS], diff[MAX_RUNS];
  double e2e_c[MAX_RUNS], e2e_r[MAX_RUNS];
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_cube_count_t four = cubert_cube_count_new_1d(1024 / CK_BLOCK);
  cubert_launch_arguments_t none = args_of(NULL, 0, NULL, 0), add3;
  cubert_kernel_args_t raw_none, raw_add;
  cubert_handle_t h[3];
  cubert_dim3_t d1 = {1, 1, 1}, d4 = {1024 / CK_BLOCK, 1, 1};
  CUfunction f_empty = raw_function(r, &ck_empty_kernel), f_add = raw_function(r, &ck_add_f32_kernel);
  CUdeviceptr rb[3];
  float host[1024];
  int run, i, k;
  for (i = 0; i < 1024; i++) host[i] = (float)i;
  for (k = 0; k < 3; k++) {
    MUST("create", cubert_client_create_from_slice(c, host, sizeof host, &h[k], NULL));
    rb[k] = raw_alloc(r, sizeof host);
  }
  add3 = args_of(h, 3, NULL, 0);
  cubert_kernel_args_initialize(&raw_none);
  cubert_kernel_args_initialize(&raw_add);
  for (k = 0; k < 3; k++) cubert_kernel_args_set_buffer(&raw_add, (uint32_t)k, (void *)(uintptr_t)rb[k], sizeof host);
  /* warm up both */
  for (i = 0; i < 100; i++) {
    MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL));
    raw_launch(r, f_empty, &ck_empty_kernel, d1, &raw_none);
  }
  MUST("sync", cubert_client_sync(c, NULL));
  raw_sync(r);
  for (run = 0; run < cfg->runs; run++) {
    double t0, t1;
    /* 1: sustained */
    t0 = bench_now_ns();
    for (i = 0; i < n; i++) MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    thr_c[run] = (bench_now_ns() - t0) / n;
    t0 = bench_now_ns();
    for (i = 0; i < n; i++) raw_launch(r, f_empty, &ck_empty_kernel, d1, &raw_none);
    raw_sync(r);
    thr_r[run] = (bench_now_ns() - t0) / n;
    /* 2: a burst into an idle stream, until the last launch returned */
    t0 = bench_now_ns();
    for (i = 0; i < burst; i++) MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL));
    t1 = bench_now_ns();
    MUST("sync", cubert_client_sync(c, NULL));
    bur_c[run] = (t1 - t0) / burst;
    t0 = bench_now_ns();
    for (i = 0; i < burst; i++) raw_launch(r, f_empty, &ck_empty_kernel, d1, &raw_none);
    t1 = bench_now_ns();
    raw_sync(r);
    bur_r[run] = (t1 - t0) / burst;
    diff[run] = bur_c[run] - bur_r[run];
    /* 3: 1024 floats, launch + sync, one op at a time */
    t0 = bench_now_ns();
    for (i = 0; i < 200; i++) {
      MUST("launch", cubert_client_launch(c, &ck_add_f32_kernel, &four, &add3, NULL));
      MUST("sync", cubert_client_sync(c, NULL));
    }
    e2e_c[run] = (bench_now_ns() - t0) / 200;
    t0 = bench_now_ns();
    for (i = 0; i < 200; i++) {
      raw_launch(r, f_add, &ck_add_f32_kernel, d4, &raw_add);
      raw_sync(r);
    }
    e2e_r[run] = (bench_now_ns() - t0) / 200;
  }
  {
    float out[1024];
    MUST("read", cubert_client_read_one(c, &h[2], out, sizeof out, NULL));
    for (i = 0; i < 1024; i++)
      if (out[i] != 2.0f * (float)i) g_failed = 1;
  }
  emit("gpu launch", "empty kernel, sustained launches (then 1 sync)", "M launches/s", 1,
       bench_stat_rate(bench_stat_of(thr_c, cfg->runs), 1e3), "raw cuLaunchKernel loop",
       bench_stat_rate(bench_stat_of(thr_r, cfg->runs), 1e3), 0.9);
  emit("gpu launch", "async launch, client side (bursts of 256)", "ns", 0,
       bench_stat_of(bur_c, cfg->runs), "raw cuLaunchKernel", bench_stat_of(bur_r, cfg->runs), 0);
  emit("gpu launch", "what the client adds to an async launch", "ns", 0,
       bench_stat_of(diff, cfg->runs), "goal", constant(500), 1.0);
  emit("gpu launch", "1024-float add, launch + sync", "ns", 0, bench_stat_of(e2e_c, cfg->runs),
       "goal", constant(5000), 1.0);
  emit("gpu launch", "1024-float add, launch + sync (vs raw)", "ns", 0,
       bench_stat_of(e2e_c, cfg->runs), "raw launch + cuStreamSynchronize",
       bench_stat_of(e2e_r, cfg->runs), 0);
  for (k = 0; k < 3; k++) {
    MUST("release", cubert_client_handle_release(c, &h[k], NULL));
    raw_free(r, rb[k]);
  }
  raw_sync(r);
}

/* ---- 4: allocation ------------------------------------------------------------------------------ */

static void bench_alloc(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  const int n = cfg->quick ? 500 : 5000;
  double pool[MAX_RUNS], raw[MAX_RUNS];
  int run, i;
  cubert_handle_t h;
  for (i = 0; i < 100; i++) { /* warm: the pool's page exists */
    MUST("empty", cubert_client_empty(c, 1u << 20, &h, NULL));
    MUST("release", cubert_client_handle_release(c, &h, NULL));
    raw_free(r, raw_alloc(r, 1u << 20));
  }
  MUST("sync", cubert_client_sync(c, NULL));
  raw_sync(r);
  for (run = 0; run < cfg->runs; run++) {
    double t0 = bench_now_ns();
    for (i = 0; i < n; i++) {
      MUST("empty", cubert_client_empty(c, 1u << 20, &h, NULL));
      MUST("release", cubert_client_handle_release(c, &h, NULL));
    }
    pool[run] = (bench_now_ns() - t0) / n;
    t0 = bench_now_ns();
    for (i = 0; i < n; i++) raw_free(r, raw_alloc(r, 1u << 20));
    raw[run] = (bench_now_ns() - t0) / n;
    raw_sync(r);
    MUST("sync", cubert_client_sync(c, NULL));
  }
  emit("gpu memory", "alloc + free 1 MiB (pools: empty + release)", "ns", 0,
       bench_stat_of(pool, cfg->runs), "cuMemAllocAsync + cuMemFreeAsync",
       bench_stat_of(raw, cfg->runs), 15.0);
}

/* ---- 5-6: uploads ---------------------------------------------------------------------------- */

static void no_release(void *owner, void *data, uint64_t size) {
  (void)owner;
  (void)data;
  (void)size;
}

/* One create_bytes of `src` (not owned: released by no_release) + sync. */
static double upload_bytes(cubert_client_t *c, void *src, uint64_t n,
                           cubert_allocation_property_t property) {
  cubert_bytes_t b;
  cubert_handle_t h;
  double t0;
  b.data = src;
  b.size = n;
  b.property = property;
  b.owner = NULL;
  b.release = no_release;
  t0 = bench_now_ns();
  MUST("create_bytes", cubert_client_create_from_bytes(c, b, &h, NULL));
  MUST("sync", cubert_client_sync(c, NULL));
  t0 = bench_now_ns() - t0;
  MUST("release", cubert_client_handle_release(c, &h, NULL));
  return (double)n / t0; /* GB/s */
}

static void bench_uploads(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  const uint64_t n = cfg->quick ? (64u << 20) : BIG;
  static const uint32_t threads[3] = {1, 4, 0};
  cubert_client_t *ct[3];
  double up[3][MAX_RUNS], mk[MAX_RUNS], st[MAX_RUNS], pg[MAX_RUNS], pn[MAX_RUNS], rg[MAX_RUNS];
  unsigned char *src = NULL, *pinned = NULL; /* src page-aligned: cuMemHostRegister wants it */
  cubert_cuda_client_stats_t stats;
  CUdeviceptr d;
  char figure[96];
  int run, t;
  uint64_t i;
  int registered = 1;
  if (posix_memalign((void **)&src, 4096, n) != 0) exit(1);
  for (i = 0; i < n; i++) src[i] = (unsigned char)(i * 131u);
  for (t = 0; t < 3; t++) ct[t] = threads[t] == 0 ? c : client_new(10u + (uint32_t)t, threads[t]);
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  CU("cuMemHostAlloc", r->cu->cuMemHostAlloc((void **)&pinned, n, CU_MEMHOSTALLOC_PORTABLE));
  memcpy(pinned, src, n);
  d = raw_alloc(r, n);
  for (t = 0; t < 3; t++) (void)upload_bytes(ct[t], src, n, CUBERT_ALLOCATION_NATIVE); /* warm */
  for (run = 0; run < cfg->runs; run++) {
    double t0;
    cubert_handle_t h;
    cubert_bytes_t staged;
    for (t = 0; t < 3; t++) up[t][run] = upload_bytes(ct[t], src, n, CUBERT_ALLOCATION_NATIVE);
    t0 = bench_now_ns();
    MUST("create", cubert_client_create_from_slice(c, src, n, &h, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    mk[run] = (double)n / (bench_now_ns() - t0);
    MUST("release", cubert_client_handle_release(c, &h, NULL));
    /* a staging buffer (filled before the clock starts) */
    MUST("reserve_staging", cubert_client_reserve_staging(c, &n, 1, &staged, NULL));
    memcpy(staged.data, src, n);
    t0 = bench_now_ns();
    MUST("create_bytes", cubert_client_create_from_bytes(c, staged, &h, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    st[run] = (double)n / (bench_now_ns() - t0);
    MUST("release", cubert_client_handle_release(c, &h, NULL));
    /* raw: pageable, pinned, registered */
    (void)r->cu->cuCtxSetCurrent(r->ctx);
    t0 = bench_now_ns();
    CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(d, src, n, r->stream));
    raw_sync(r);
    pg[run] = (double)n / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(d, pinned, n, r->stream));
    raw_sync(r);
    pn[run] = (double)n / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    if (registered && r->cu->cuMemHostRegister(src, n, 0) == CUDA_SUCCESS) {
      CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(d, src, n, r->stream));
      raw_sync(r);
      CU("cuMemHostUnregister", r->cu->cuMemHostUnregister(src));
      rg[run] = (double)n / (bench_now_ns() - t0);
    } else {
      registered = 0; /* the row says so */
      rg[run] = 0;
    }
  }
  for (t = 0; t < 3; t++) {
    MUST("stats", cubert_cuda_client_stats(ct[t], &stats));
    snprintf(figure, sizeof figure, "%u MiB upload from pageable, %u thread(s)",
             (unsigned)(n >> 20), (unsigned)stats.upload_threads);
    emit("gpu upload", figure, "GB/s", 1, bench_stat_of(up[t], cfg->runs),
         "raw pageable cuMemcpyHtoDAsync", bench_stat_of(pg, cfg->runs), 0);
    if (threads[t] == 0)
      emit("gpu upload", "  the same against the goal", "GB/s", 1, bench_stat_of(up[t], cfg->runs),
           "goal", constant(20.0), 1.0);
  }
  emit("gpu upload", "  create() (the client copies the data first)", "GB/s", 1,
       bench_stat_of(mk, cfg->runs), "raw pageable cuMemcpyHtoDAsync", bench_stat_of(pg, cfg->runs), 0);
  if (registered) {
    emit("gpu upload", "  raw cuMemHostRegister + copy + unregister", "GB/s", 1,
         bench_stat_of(rg, cfg->runs), "raw pinned cuMemcpyHtoDAsync",
         bench_stat_of(pn, cfg->runs), 0);
  } else {
    bench_row_t row = bench_row("gpu upload", "  raw cuMemHostRegister + copy + unregister", "GB/s",
                                1, bench_stat_of(pn, cfg->runs));
    row.peer = "cuMemHostRegister";
    row.skipped = "cuMemHostRegister failed";
    bench_emit(&row);
  }
  emit("gpu upload", "upload from a reserve_staging buffer", "GB/s", 1,
       bench_stat_of(st, cfg->runs), "raw pinned cuMemcpyHtoDAsync", bench_stat_of(pn, cfg->runs), 0.9);
  raw_free(r, d);
  raw_sync(r);
  (void)r->cu->cuMemFreeHost(pinned);
  for (t = 0; t < 3; t++)
    if (ct[t] != c) cubert_client_release(ct[t]);
  free(src);
}

/* ---- 7: compute ---------------------------------------------------------------------------------- */

static void bench_compute(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  const uint32_t n = cfg->quick ? (1u << 22) : (1u << 24), m = cfg->quick ? 1024 : 4096;
  double add_c[MAX_RUNS], add_r[MAX_RUNS], mm_c[MAX_RUNS], mm_r[MAX_RUNS];
  const uint64_t words = (uint64_t)n > (uint64_t)m * m ? (uint64_t)n : (uint64_t)m * m;
  float *host = (float *)malloc((size_t)words * sizeof(float));
  cubert_handle_t ha[3], hm[3];
  CUdeviceptr ra[3], rm[3];
  cubert_kernel_args_t raw_add, raw_mm;
  cubert_launch_arguments_t add3, mm3;
  uint64_t scal[3];
  cubert_cube_count_t cadd = cubert_cube_count_new_1d((n + CK_BLOCK - 1) / CK_BLOCK);
  cubert_cube_count_t cmm = cubert_cube_count_new_2d(m / CK_TILE, m / CK_TILE);
  cubert_dim3_t dadd = {(n + CK_BLOCK - 1) / CK_BLOCK, 1, 1}, dmm = {m / CK_TILE, m / CK_TILE, 1};
  CUfunction f_add = raw_function(r, &ck_add_f32_kernel), f_mm = raw_function(r, &ck_matmul_f32_kernel);
  int run, k;
  uint64_t i;
  if (!host) exit(1);
  for (i = 0; i < words; i++) host[i] = (float)(i % 7);
  cubert_kernel_args_initialize(&raw_add);
  cubert_kernel_args_initialize(&raw_mm);
  for (k = 0; k < 3; k++) {
    MUST("create", cubert_client_create_from_slice(c, host, (uint64_t)n * 4, &ha[k], NULL));
    MUST("create", cubert_client_create_from_slice(c, host, (uint64_t)m * m * 4, &hm[k], NULL));
    ra[k] = raw_alloc(r, (size_t)n * 4);
    rm[k] = raw_alloc(r, (size_t)m * m * 4);
    cubert_kernel_args_set_buffer(&raw_add, (uint32_t)k, (void *)(uintptr_t)ra[k], (uint64_t)n * 4);
    cubert_kernel_args_set_buffer(&raw_mm, (uint32_t)k, (void *)(uintptr_t)rm[k], (uint64_t)m * m * 4);
  }
  scal[0] = scal[1] = scal[2] = m;
  for (k = 0; k < 3; k++) cubert_kernel_args_set_u64(&raw_mm, (uint32_t)k, m);
  add3 = args_of(ha, 3, NULL, 0);
  mm3 = args_of(hm, 3, scal, 3);
  MUST("launch", cubert_client_launch(c, &ck_add_f32_kernel, &cadd, &add3, NULL)); /* warm */
  MUST("launch", cubert_client_launch(c, &ck_matmul_f32_kernel, &cmm, &mm3, NULL));
  MUST("sync", cubert_client_sync(c, NULL));
  raw_launch(r, f_add, &ck_add_f32_kernel, dadd, &raw_add);
  raw_launch(r, f_mm, &ck_matmul_f32_kernel, dmm, &raw_mm);
  raw_sync(r);
  for (run = 0; run < cfg->runs; run++) {
    double t0 = bench_now_ns();
    MUST("launch", cubert_client_launch(c, &ck_add_f32_kernel, &cadd, &add3, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    add_c[run] = 3.0 * n * 4 / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    raw_launch(r, f_add, &ck_add_f32_kernel, dadd, &raw_add);
    raw_sync(r);
    add_r[run] = 3.0 * n * 4 / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    MUST("launch", cubert_client_launch(c, &ck_matmul_f32_kernel, &cmm, &mm3, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    mm_c[run] = 2.0 * m * m * m / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    raw_launch(r, f_mm, &ck_matmul_f32_kernel, dmm, &raw_mm);
    raw_sync(r);
    mm_r[run] = 2.0 * m * m * m / (bench_now_ns() - t0);
  }
  {
    float row[64];
    double ref = 0;
    uint64_t p;
    /* out[0][j] for j < 64 against the host: the matmul ran on the right data */
    MUST("read", cubert_client_read_one(c, &hm[2], host, (uint64_t)m * m * 4, NULL));
    memcpy(row, host, sizeof row);
    for (p = 0; p < m; p++) ref += (double)(p % 7) * (double)((p * m) % 7);
    if (row[0] != (float)ref) {
      fprintf(stderr, "bench_cuda: matmul out[0][0] = %g, expected %g\n", row[0], ref);
      g_failed = 1;
    }
  }
  emit("gpu compute", cfg->quick ? "4M-float add (client launch + sync)" : "16M-float add (client launch + sync)",
       "GB/s", 1, bench_stat_of(add_c, cfg->runs), "the same function launched raw",
       bench_stat_of(add_r, cfg->runs), 0.95);
  emit("gpu compute", cfg->quick ? "1024^2 matmul (client launch + sync)" : "4096^2 matmul (client launch + sync)",
       "GFLOP/s", 1, bench_stat_of(mm_c, cfg->runs), "the same function launched raw",
       bench_stat_of(mm_r, cfg->runs), 0.95);
  for (k = 0; k < 3; k++) {
    MUST("release", cubert_client_handle_release(c, &ha[k], NULL));
    MUST("release", cubert_client_handle_release(c, &hm[k], NULL));
    raw_free(r, ra[k]);
    raw_free(r, rm[k]);
  }
  raw_sync(r);
  free(host);
}

int main(int argc, char **argv) {
  cfg_t cfg;
  cubert_cuda_device_info_t info;
  cubert_client_t *c;
  cubert_error_t err;
  raw_t r;
  int k;
  cfg.runs = 11;
  cfg.quick = 0;
  for (k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--quick") == 0) {
      cfg.quick = 1;
      cfg.runs = 5;
    } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
      cfg.runs = atoi(argv[++k]);
    } else {
      fprintf(stderr, "usage: bench_cuda [--runs R] [--quick]\n");
      return 2;
    }
  }
  if (cfg.runs < 1 || cfg.runs > MAX_RUNS) {
    fprintf(stderr, "bench_cuda: --runs must be 1..%d\n", MAX_RUNS);
    return 2;
  }
  if (cubert_cuda_available(&err) != CUBERT_STATUS_OK) {
    printf("bench_cuda: skipped: %s\n", err.reason);
    return 0;
  }
  if (!cubert_cuda_image_find(ck_empty_kernel.cuda_entry_name)) {
    printf("bench_cuda: skipped: no kernel images (nvcc was not found when this was built)\n");
    return 0;
  }
  MUST("device info", cubert_cuda_device_info(0, &info, &err));
  printf("bench_cuda: GPU 0 \"%s\" (sm_%u%u, %llu MiB), driver %d.%d, %d runs%s\n",
         info.properties.name, info.compute_major, info.compute_minor,
         (unsigned long long)(info.total_memory >> 20), info.driver_version / 1000,
         info.driver_version % 1000 / 10, cfg.runs, cfg.quick ? " (--quick: not for the record)" : "");
  bench_print_load("before");
  c = client_new(0, 0);
  raw_open(&r);
  bench_table_begin("bench_cuda");
  bench_launches(&cfg, c, &r);
  bench_alloc(&cfg, c, &r);
  bench_uploads(&cfg, c, &r);
  bench_compute(&cfg, c, &r);
  raw_close(&r);
  cubert_client_release(c);
  bench_print_load("after");
  if (g_failed) printf("bench_cuda: a result did not check\n");
  return g_failed ? 1 : 0;
}
#endif /* CUBERT_HAVE_BACKEND_CUDA */
