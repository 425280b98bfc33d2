/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_gpu.c: the CUDA device layer on a real GPU, through
 * libcuda.so.1 (or $CUBERT_LIBCUDA) and the kernel images the build
 * embedded. Without a driver or a GPU every test prints
 * "skipped: CUDA unavailable: <reason>"; without images (nvcc missing at
 * build time) the kernel tests print "skipped: no kernel images ...".
 * Each test runs in its own process (the runner forks before any CUDA
 * call), so the device-lost test poisons only its own context.
 */
#include <time.h>

#include "cuda_test.h"
#include "cubert_kernels.h"

typedef struct gpu_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  const cubert_cuda_loader_t *cu;
  cubert_cuda_device_t *device;
  cubert_cuda_stream_t stream;
} gpu_env_t;

static char g_skip[CUBERT_ERROR_REASON_SIZE + 16];

/* Open device 0 of the real driver, or skip the test with the reason. */
static void gpu_open(gpu_env_t *env, bool needs_images) {
  cubert_error_t err;
  memset(env, 0, sizeof *env);
  if (cubert__cuda_loader_shared(&env->cu, &err) != CUBERT_STATUS_OK) {
    snprintf(g_skip, sizeof g_skip, "%s", err.reason); /* the runner prints "skipped: " */
    TEST_SKIP(g_skip);
  }
  if (needs_images && !CUBERT_TEST_HAVE_IMAGES)
    TEST_SKIP("no kernel images (nvcc was not found when this was built)");
  env->allocator = counting_allocator_initialize(&env->counting);
  CHECK_OK(cubert__cuda_device_open(env->cu, 0, env->allocator, &env->device, &err));
  CHECK_OK(cubert__cuda_stream_initialize(env->device, &env->stream, &err));
}

static void gpu_close(gpu_env_t *env) {
  cubert__cuda_stream_deinitialize(&env->stream);
  cubert__cuda_device_close(env->device);
  CHECK_EQ_I64(env->counting.live_blocks, 0);
  counting_allocator_destroy(&env->counting);
}

static CUdeviceptr gpu_alloc(gpu_env_t *env, uint64_t size) {
  CUdeviceptr p = 0;
  cubert_error_t err;
  CHECK_OK(cubert__cuda_memory_alloc(&env->stream, size, &p, &err));
  return p;
}

static void gpu_free(gpu_env_t *env, CUdeviceptr p) {
  cubert_error_t err;
  CHECK_OK(cubert__cuda_memory_free(&env->stream, p, &err));
}

TEST(cuda_gpu_device_properties) {
  gpu_env_t env;
  cubert_device_properties_t p;
  uint64_t free_bytes = 0, total = 0;
  cubert_error_t err;
  gpu_open(&env, false);
  cubert__cuda_device_properties(env.device, &p);
  printf("device 0: %s, sm_%u%u\n", p.name, (unsigned)env.device->info.compute_major,
         (unsigned)env.device->info.compute_minor);
  CHECK(p.name[0] != '\0');
  CHECK(p.hardware.plane_size_max == 32);
  CHECK(p.hardware.max_units_per_cube >= 1024);
  CHECK(p.hardware.max_cube_count.x >= 65535);
  CHECK(p.hardware.max_shared_memory_size >= 48 * 1024);
  CHECK(p.hardware.num_streaming_multiprocessors > 0);
  CHECK_OK(cubert__cuda_memory_info(env.device, &free_bytes, &total, &err));
  CHECK(total == env.device->info.total_memory && free_bytes > 0 && free_bytes <= total);
  gpu_close(&env);
}

TEST(cuda_gpu_pitched_round_trip) {
  gpu_env_t env;
  cubert_error_t err;
  uint64_t shape[2] = {37, 100}, strides[2] = {128, 1}, i;
  cubert_copy_plan_t plan;
  float *in = (float *)malloc(37 * 100 * 4), *out = (float *)malloc(37 * 100 * 4), row[128];
  uint32_t pad;
  CUdeviceptr d;
  gpu_open(&env, false);
  CHECK(in && out);
  for (i = 0; i < 3700; i++) in[i] = (float)i * 0.5f - 3.0f;
  CHECK_OK(cubert_copy_plan(2, shape, strides, 4, &plan, &err));
  CHECK(plan.pitched && plan.src_pitch_bytes == 512);
  d = gpu_alloc(&env, plan.span_bytes);
  CHECK_OK(cubert__cuda_memory_set(&env.stream, d, 0xff, plan.span_bytes, &err));
  CHECK_OK(cubert__cuda_copy_planned(&env.stream, &plan, true, in, d, &err));
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, row, d + 3 * 512, sizeof row, &err));
  memset(out, 0, 3700 * 4);
  CHECK_OK(cubert__cuda_copy_planned(&env.stream, &plan, false, out, d, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  CHECK(memcmp(in, out, 3700 * 4) == 0);
  for (i = 0; i < 100; i++) CHECK(row[i] == in[300 + i]);
  memcpy(&pad, &row[100], 4);
  CHECK_EQ_U64(pad, 0xffffffffu); /* the row's padding is untouched */
  gpu_free(&env, d);
  free(in);
  free(out);
  gpu_close(&env);
}

TEST(cuda_gpu_staging_upload) {
  gpu_env_t env;
  cubert_error_t err;
  const uint64_t n = (24u << 20) / 4 + 5; /* three 8 MiB pieces and a tail */
  uint32_t *src = (uint32_t *)malloc(n * 4), *back = (uint32_t *)malloc(n * 4);
  cubert_cuda_staging_stats_t st;
  uint64_t i;
  CUdeviceptr d;
  gpu_open(&env, false);
  CHECK(src && back);
  for (i = 0; i < n; i++) src[i] = (uint32_t)(i * 2654435761u);
  d = gpu_alloc(&env, n * 4);
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, src, n * 4, &err));
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, src, n * 4, &err));
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, back, d, n * 4, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  CHECK(memcmp(src, back, n * 4) == 0);
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 2); /* two chunks for both uploads */
  CHECK_EQ_U64(st.handed_out, 0);
  gpu_free(&env, d);
  free(src);
  free(back);
  gpu_close(&env);
}

/* ck_add_f32 over n floats; `dynamic`: the cube count read from the device. */
static void gpu_add(gpu_env_t *env, uint64_t n, bool dynamic) {
  cubert_error_t err;
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  float *a = (float *)malloc(n * 4), *b = (float *)malloc(n * 4), *c = (float *)malloc(n * 4);
  uint32_t count[3];
  cubert_dim3_t grid, read;
  CUdeviceptr da, db, dc, dcount;
  uint64_t i;
  CHECK(a && b && c);
  for (i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)(i % 1000);
  }
  da = gpu_alloc(env, n * 4);
  db = gpu_alloc(env, n * 4);
  dc = gpu_alloc(env, n * 4);
  dcount = gpu_alloc(env, sizeof count);
  CHECK_OK(cubert__cuda_staging_upload(&env->stream, da, a, n * 4, &err));
  CHECK_OK(cubert__cuda_staging_upload(&env->stream, db, b, n * 4, &err));
  CHECK_OK(cubert__cuda_function_get(env->device, &ck_add_f32_kernel, &f, &err));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, (void *)(uintptr_t)da, n * 4);
  cubert_kernel_args_set_buffer(&args, 1, (void *)(uintptr_t)db, n * 4);
  cubert_kernel_args_set_buffer(&args, 2, (void *)(uintptr_t)dc, n * 4);
  grid.x = (uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK);
  grid.y = grid.z = 1;
  if (dynamic) {
    count[0] = grid.x;
    count[1] = count[2] = 1;
    CHECK_OK(cubert__cuda_copy_h2d(&env->stream, dcount, count, sizeof count, &err));
    CHECK_OK(cubert__cuda_launch_dynamic(&env->stream, f, dcount, &args,
                                         CUBERT_KERNEL_MODE_UNCHECKED, 0, &read, &err));
    CHECK_EQ_U64(read.x, grid.x);
  } else {
    CHECK_OK(cubert__cuda_launch(&env->stream, f, grid, &args, CUBERT_KERNEL_MODE_UNCHECKED, 0,
                                 &err));
  }
  CHECK_OK(cubert__cuda_copy_d2h(&env->stream, c, dc, n * 4, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env->stream, &err));
  CHECK_OK(cubert__cuda_stream_drain_errors(&env->stream, &err));
  for (i = 0; i < n; i++)
    CHECK_MSG(c[i] == (float)i + 0.5f * (float)(i % 1000), "c[%llu] = %f",
              (unsigned long long)i, c[i]);
  gpu_free(env, da);
  gpu_free(env, db);
  gpu_free(env, dc);
  gpu_free(env, dcount);
  free(a);
  free(b);
  free(c);
}

TEST(cuda_gpu_elementwise_add) {
  gpu_env_t env;
  gpu_open(&env, true);
  gpu_add(&env, 1u << 20, false);
  gpu_close(&env);
}

TEST(cuda_gpu_dynamic_cube_count) {
  gpu_env_t env;
  gpu_open(&env, true);
  gpu_add(&env, 100003, true);
  gpu_close(&env);
}

/* CHECKED / VALIDATE report out-of-bounds accesses as on the CPU: ck_oob_copy_f32
 * over 16 units with views of 9 elements: 7 loads and 7 stores out of bounds. */
TEST(cuda_gpu_checked_and_validate_modes) {
  gpu_env_t env;
  cubert_error_t err;
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  cubert_kernel_report_t rep;
  float in[16], out[16];
  cubert_dim3_t grid = {4, 1, 1};
  CUdeviceptr din, dout, drep;
  uint32_t mode;
  int i;
  gpu_open(&env, true);
  for (i = 0; i < 16; i++) in[i] = (float)(10 * i);
  din = gpu_alloc(&env, sizeof in);
  dout = gpu_alloc(&env, sizeof out);
  drep = gpu_alloc(&env, sizeof rep);
  CHECK_OK(cubert__cuda_copy_h2d(&env.stream, din, in, sizeof in, &err));
  CHECK_OK(cubert__cuda_function_get(env.device, &ck_oob_copy_f32_kernel, &f, &err));
  for (mode = CUBERT_KERNEL_MODE_CHECKED; mode <= CUBERT_KERNEL_MODE_VALIDATE; mode++) {
    CHECK_OK(cubert__cuda_memory_set(&env.stream, drep, 0, sizeof rep, &err));
    CHECK_OK(cubert__cuda_memory_set(&env.stream, dout, 0, sizeof out, &err));
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, (void *)(uintptr_t)din, 9 * 4);
    cubert_kernel_args_set_buffer(&args, 1, (void *)(uintptr_t)dout, 9 * 4);
    CHECK_OK(cubert__cuda_launch(&env.stream, f, grid, &args, mode, drep, &err));
    CHECK_OK(cubert__cuda_copy_d2h(&env.stream, &rep, drep, sizeof rep, &err));
    CHECK_OK(cubert__cuda_copy_d2h(&env.stream, out, dout, sizeof out, &err));
    CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
    CHECK_EQ_U64(rep.oob_count, 14);
    for (i = 0; i < 16; i++) CHECK(out[i] == (i < 9 ? (float)(10 * i) + 1.0f : 0.0f));
    if (mode == CUBERT_KERNEL_MODE_VALIDATE) {
      CHECK_EQ_U64(rep.has_violation, 1);
      CHECK(rep.element_index >= 9 && rep.element_index < 16);
      CHECK_EQ_U64(rep.buffer_length, 9);
      CHECK(rep.cube_linear >= 2);
    } else {
      CHECK_EQ_U64(rep.has_violation, 0);
    }
  }
  gpu_free(&env, din);
  gpu_free(&env, dout);
  gpu_free(&env, drep);
  gpu_close(&env);
}

TEST(cuda_gpu_compile_error_log) {
  static const char bad_ptx[] =
      ".version 7.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry broken(\n)\n{\n  this is not ptx;\n  ret;\n}\n";
  gpu_env_t env;
  cubert_error_t err;
  cubert_kernel_t k;
  const cubert_cuda_function_t *f = NULL;
  gpu_open(&env, false);
  memset(&k, 0, sizeof k);
  k.name = "broken";
  k.cuda_entry_name = "broken";
  k.cuda_image = bad_ptx;
  k.cuda_image_size = sizeof bad_ptx;
  k.cube_dim.x = k.cube_dim.y = k.cube_dim.z = 1;
  CHECK_STATUS(cubert__cuda_function_get(env.device, &k, &f, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_COMPILATION_GENERIC);
  printf("reason: %s\nJIT log: %s\n", err.reason, cubert__cuda_module_error_log(env.device));
  CHECK(cubert__cuda_module_error_log(env.device)[0] != '\0');
  CHECK_REASON_HAS(err, "cuModuleLoadDataEx(broken, PTX) failed: CUDA_ERROR_");
  CHECK(!cubert__cuda_device_is_lost(env.device));
  gpu_close(&env);
}

TEST(cuda_gpu_error_mapping) {
  gpu_env_t env;
  cubert_error_t err;
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t one = {1, 1, 1};
  CUdeviceptr p = 0;
  gpu_open(&env, true);
  /* far more memory than any GPU has: the driver's OUT_OF_MEMORY */
  CHECK_STATUS(cubert__cuda_memory_alloc(&env.stream, (uint64_t)1 << 50, &p, &err),
               CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_OUT_OF_MEMORY);
  CHECK_EQ_I64(err.driver_code, CUDA_ERROR_OUT_OF_MEMORY);
  /* 2048 units per cube: refused before the driver sees it */
  CHECK_OK(cubert__cuda_function_get(env.device, &ck_add_scalar_u32_huge_cube_kernel, &f, &err));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, NULL, 0);
  cubert_kernel_args_set_u32(&args, 0, 1);
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, one, &args, 0, 0, &err),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_RESOURCE_UNITS);
  CHECK(!cubert__cuda_device_is_lost(env.device));
  CHECK_OK(cubert__cuda_stream_drain_errors(&env.stream, &err));
  gpu_close(&env);
}

TEST(cuda_gpu_events) {
  gpu_env_t env;
  cubert_error_t err;
  cubert_cuda_event_t *t0 = NULL, *t1 = NULL, *e = NULL;
  uint64_t ns = 0, created, before;
  bool done = false;
  int i;
  gpu_open(&env, true);
  CHECK_OK(cubert__cuda_event_record(&env.stream, true, &t0, &err));
  gpu_add(&env, 1u << 16, false);
  CHECK_OK(cubert__cuda_event_record(&env.stream, true, &t1, &err));
  CHECK_OK(cubert__cuda_event_synchronize(env.device, t1, &err));
  CHECK_OK(cubert__cuda_event_query(env.device, t1, &done, &err));
  CHECK(done);
  CHECK_OK(cubert__cuda_event_elapsed(env.device, t0, t1, &ns, &err));
  CHECK(ns > 0);
  cubert__cuda_event_pool_counts(env.device, &before, NULL, NULL);
  for (i = 0; i < 1000; i++) {
    CHECK_OK(cubert__cuda_event_record(&env.stream, false, &e, &err));
    cubert__cuda_event_release(env.device, e);
  }
  cubert__cuda_event_pool_counts(env.device, &created, NULL, NULL);
  CHECK(created - before <= 1); /* one event, recorded 1000 times */
  cubert__cuda_event_release(env.device, t0);
  cubert__cuda_event_release(env.device, t1);
  gpu_close(&env);
}

static double gpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An illegal address in a kernel loses the device: every later call returns
 * the record at once and closing does not hang. */
TEST(cuda_gpu_device_lost_after_illegal_address) {
  gpu_env_t env;
  cubert_error_t err, first;
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t grid = {1024, 1, 1};
  CUdeviceptr out;
  uint32_t word = 0;
  double t;
  gpu_open(&env, true);
  out = gpu_alloc(&env, 4096);
  CHECK_OK(cubert__cuda_function_get(env.device, &ck_oob_copy_f32_kernel, &f, &err));
  cubert_kernel_args_initialize(&args);
  /* an input "buffer" at an address nothing maps, read without checks */
  cubert_kernel_args_set_buffer(&args, 0, (void *)(uintptr_t)0x10, (uint64_t)1 << 40);
  cubert_kernel_args_set_buffer(&args, 1, (void *)(uintptr_t)out, 4096);
  CHECK_OK(cubert__cuda_launch(&env.stream, f, grid, &args, CUBERT_KERNEL_MODE_UNCHECKED, 0, &err));
  CHECK_STATUS(cubert__cuda_stream_synchronize(&env.stream, &first), CUBERT_STATUS_UNAVAILABLE);
  printf("lost: %s (code %lld)\n", first.reason, (long long)first.driver_code);
  CHECK_EQ_U64(cubert_error_kind(&first), CUBERT_ERROR_DEVICE_LOST);
  CHECK(cubert__cuda_result_is_fatal((CUresult)first.driver_code));
  CHECK(cubert__cuda_device_is_lost(env.device));
  t = gpu_now();
  CHECK_STATUS(cubert__cuda_stream_drain_errors(&env.stream, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_STR(err.reason, first.reason);
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, grid, &args, 0, 0, &err),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert__cuda_copy_d2h(&env.stream, &word, out, 4, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert__cuda_stream_synchronize(&env.stream, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert__cuda_memory_free(&env.stream, out, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_MSG(gpu_now() - t < 1.0, "calls on a lost device took %.3f s", gpu_now() - t);
  gpu_close(&env);
}
