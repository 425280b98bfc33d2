/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_launch.c: the image registry, the module / function
 * cache (JIT logs, cubin before PTX) and launches (argument block, limits,
 * dynamic cube counts, driver failures), over the fake driver.
 */
#include "cuda_test.h"

#include "cubert_kernels.h"

/* A fake PTX image (the fake driver reads only its `.entry` lines). */
static const char k_ptx[] =
    "// fake\n.version 9.0\n.target sm_75\n"
    ".visible .entry ck_add_scalar_u32(\n)\n{\n}\n"
    ".visible .entry fake_noop(\n)\n{\n}\n"
    ".visible .entry fake_registry_entry(\n)\n{\n}\n";
static const char k_bad_ptx[] = "// fake\n.version 9.0\nFAKE_SYNTAX_ERROR\n";
static const char k_cubin[] = "\x7f" "ELF fake cubin\n.visible .entry fake_registry_entry(\n";
static const char k_bad_cubin[] = "\x7f" "ELF FAKE_CUBIN_FAIL\n.visible .entry fake_registry_entry(\n";

static const char *const k_entries[] = {"fake_registry_entry", "fake_noop"};

TEST(cuda_image_registry) {
  static const cubert_cuda_image_t image = {"fake_registry", k_ptx, sizeof k_ptx, NULL, 0, 0,
                                            k_entries, 2};
  static const cubert_cuda_image_t no_code = {"empty", NULL, 0, NULL, 0, 0, k_entries, 2};
  static const cubert_cuda_image_t no_entries = {"none", k_ptx, sizeof k_ptx, NULL, 0, 0, NULL, 0};
  cubert_error_t err;
  size_t before = cubert_cuda_image_count();
  CHECK(cubert_cuda_image_find("fake_registry_entry") == NULL);
  CHECK_OK(cubert_cuda_image_register(&image, &err));
  CHECK_OK(cubert_cuda_image_register(&image, &err)); /* twice: once */
  CHECK_EQ_U64(cubert_cuda_image_count(), before + 1);
  CHECK(cubert_cuda_image_find("fake_registry_entry") == &image);
  CHECK(cubert_cuda_image_find("fake_noop") == &image);
  CHECK(cubert_cuda_image_find("nope") == NULL);
  CHECK(cubert_cuda_image_find(NULL) == NULL);
  CHECK_STATUS(cubert_cuda_image_register(NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cuda_image_register(&no_code, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cuda_image_register(&no_entries, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_cuda_image_count(), before + 1);
}

TEST(cuda_image_registry_full) {
  static cubert_cuda_image_t images[CUBERT_CUDA_IMAGE_REGISTRY_MAX + 1];
  cubert_error_t err;
  size_t i, before = cubert_cuda_image_count();
  for (i = 0; i + before < CUBERT_CUDA_IMAGE_REGISTRY_MAX; i++) {
    images[i].name = "many";
    images[i].ptx = k_ptx;
    images[i].ptx_size = sizeof k_ptx;
    images[i].entries = k_entries;
    images[i].entry_count = 1;
    CHECK_OK(cubert_cuda_image_register(&images[i], &err));
  }
  images[i] = images[0];
  CHECK_STATUS(cubert_cuda_image_register(&images[i], &err), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(cubert_cuda_image_count(), CUBERT_CUDA_IMAGE_REGISTRY_MAX);
}

TEST(cuda_function_cache_and_launch) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = fake_kernel("ck_add_scalar_u32", k_ptx, 64, 1, 1);
  const cubert_cuda_function_t *f = NULL, *again = NULL;
  cubert_kernel_args_t args;
  CUdeviceptr buf = 0, report = 0;
  uint32_t host[100], i;
  cubert_dim3_t grid = {2, 1, 1};
  fake_cuda_stats_t s;
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &f, &err));
  CHECK(f->kernel == &k);
  CHECK_EQ_U64(f->max_threads, 1024);
  CHECK_EQ_U64(f->registers, 16);
  CHECK_EQ_STR(cubert__cuda_module_info_log(env.device), "fake: PTX compiled");
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &again, &err));
  CHECK(again == f);
  CHECK_EQ_U64(fake_stats(&env.cu).module_loads, 1);
  /* buf[i] += 7 over 2 cubes of 64 units: the first 100 elements */
  for (i = 0; i < 100; i++) host[i] = i;
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, sizeof host, &buf, &err));
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, sizeof(cubert_kernel_report_t), &report, &err));
  CHECK_OK(cubert__cuda_copy_h2d(&env.stream, buf, host, sizeof host, &err));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, (void *)(uintptr_t)buf, sizeof host);
  cubert_kernel_args_set_u32(&args, 0, 7);
  CHECK_OK(cubert__cuda_launch(&env.stream, f, grid, &args, CUBERT_KERNEL_MODE_VALIDATE, report,
                               &err));
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, host, buf, sizeof host, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  for (i = 0; i < 100; i++) CHECK_EQ_U64(host[i], i + 7);
  /* what cuLaunchKernel received: grid, the kernel's cube dim, the argument
   * block by value, the mode and the report address */
  s = fake_stats(&env.cu);
  CHECK_EQ_U64(s.launches, 1);
  CHECK_EQ_STR(s.kernel, "ck_add_scalar_u32");
  CHECK_EQ_U64(s.grid[0], 2);
  CHECK_EQ_U64(s.grid[1], 1);
  CHECK_EQ_U64(s.block[0], 64);
  CHECK_EQ_U64(s.block[1], 1);
  CHECK_EQ_U64(s.shared_bytes, 0);
  CHECK_EQ_U64(s.mode, CUBERT_KERNEL_MODE_VALIDATE);
  CHECK_EQ_U64(s.report, report);
  CHECK(sizeof args == FAKE_CUDA_ARGS_BYTES);
  CHECK(memcmp(s.args, &args, sizeof args) == 0);
  /* an empty count launches nothing */
  grid.x = 0;
  CHECK_OK(cubert__cuda_launch(&env.stream, f, grid, &args, CUBERT_KERNEL_MODE_CHECKED, 0, &err));
  CHECK_EQ_U64(fake_stats(&env.cu).launches, 1);
  /* bad input */
  grid.x = 1;
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, grid, &args, 3, 0, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, grid, NULL, 0, 0, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cubert_kernel_args_initialize(&args); /* fewer slots than the kernel reads */
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, grid, &args, 0, 0, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(fake_stats(&env.cu).launches, 1);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, buf, &err));
  CHECK_OK(cubert__cuda_memory_free(&env.stream, report, &err));
  fake_env_close(&env);
}

/* A stream's memo (cubert__cuda_function_get_memo): a hit is the table's
 * record; a descriptor address reused for another kernel misses it and gets
 * a new record, while the old one stays readable (retired, freed with the
 * cache: fake_env_close checks the allocator). */
TEST(cuda_function_memo_hits_and_a_reused_descriptor) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_function_memo_t memo;
  cubert_kernel_t k = fake_kernel("ck_add_scalar_u32", k_ptx, 64, 1, 1);
  const cubert_cuda_function_t *f = NULL, *again = NULL, *g = NULL, *table = NULL;
  fake_env_open(&env);
  memset(&memo, 0, sizeof memo);
  CHECK_OK(cubert__cuda_function_get_memo(env.device, &memo, &k, &f, &err));
  CHECK_EQ_STR(f->entry_name, "ck_add_scalar_u32");
  CHECK_OK(cubert__cuda_function_get_memo(env.device, &memo, &k, &again, &err));
  CHECK(again == f);
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &table, &err));
  CHECK(table == f);
  CHECK_EQ_U64(fake_stats(&env.cu).module_loads, 1);
  /* the same address now describes fake_noop */
  k = fake_kernel("fake_noop", k_ptx, 32, 0, 0);
  CHECK_OK(cubert__cuda_function_get_memo(env.device, &memo, &k, &g, &err));
  CHECK(g != f);
  CHECK_EQ_STR(g->entry_name, "fake_noop");
  CHECK_EQ_STR(f->entry_name, "ck_add_scalar_u32"); /* retired, unchanged */
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &table, &err));
  CHECK(table == g);
  CHECK_OK(cubert__cuda_function_get_memo(env.device, &memo, &k, &again, &err));
  CHECK(again == g);
  /* and back: another new record (the memo's entry is replaced again) */
  k = fake_kernel("ck_add_scalar_u32", k_ptx, 64, 1, 1);
  CHECK_OK(cubert__cuda_function_get_memo(env.device, &memo, &k, &again, &err));
  CHECK(again != f && again != g);
  CHECK_EQ_STR(again->entry_name, "ck_add_scalar_u32");
  /* bad input answers as the plain lookup does */
  CHECK_STATUS(cubert__cuda_function_get_memo(env.device, &memo, NULL, &again, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  fake_env_close(&env);
}

TEST(cuda_function_from_the_registry) {
  static const cubert_cuda_image_t image = {"fake_registry", k_ptx, sizeof k_ptx, k_cubin,
                                            sizeof k_cubin, 90, k_entries, 2};
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = fake_kernel("fake_registry_entry", NULL, 32, 0, 0);
  cubert_kernel_t missing = fake_kernel("fake_in_no_image", NULL, 32, 0, 0);
  const cubert_cuda_function_t *f = NULL;
  fake_env_open(&env);
  CHECK_STATUS(cubert__cuda_function_get(env.device, &missing, &f, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_REASON_HAS(err, "no CUDA image holds kernel fake_in_no_image");
  CHECK_EQ_U64(err.chain[0], CUBERT_ERROR_SERVER_LAUNCH);
  CHECK_EQ_U64(err.chain[1], CUBERT_ERROR_LAUNCH_COMPILATION);
  CHECK_OK(cubert_cuda_image_register(&image, &err));
  /* the device is sm_90, the image has an sm_90 cubin: loaded as is */
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &f, &err));
  CHECK_EQ_STR(cubert__cuda_module_info_log(env.device), "fake: cubin loaded");
  CHECK_EQ_U64(fake_stats(&env.cu).module_loads, 1);
  fake_env_close(&env);
}

TEST(cuda_function_cubin_falls_back_to_ptx) {
  static const cubert_cuda_image_t image = {"fake_fallback", k_ptx, sizeof k_ptx, k_bad_cubin,
                                            sizeof k_bad_cubin, 90, k_entries, 2};
  static const cubert_cuda_image_t other_arch = {"fake_sm80", NULL, 0, k_cubin, sizeof k_cubin,
                                                 80, k_entries + 1, 1};
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = fake_kernel("fake_registry_entry", NULL, 32, 0, 0);
  cubert_kernel_t k80 = fake_kernel("fake_noop", NULL, 32, 0, 0);
  const cubert_cuda_function_t *f = NULL;
  fake_env_open(&env);
  CHECK_OK(cubert_cuda_image_register(&other_arch, &err)); /* first: it wins fake_noop */
  CHECK_OK(cubert_cuda_image_register(&image, &err));
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &f, &err));
  CHECK_EQ_STR(cubert__cuda_module_info_log(env.device), "fake: PTX compiled");
  /* a cubin for another architecture and no PTX: NO_BINARY_FOR_GPU */
  CHECK_STATUS(cubert__cuda_function_get(env.device, &k80, &f, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_REASON_HAS(err, "image fake_sm80 has no PTX and its cubin is for sm_80, the device is sm_90");
  CHECK_EQ_I64(err.driver_code, CUDA_ERROR_NO_BINARY_FOR_GPU);
  fake_env_close(&env);
}

TEST(cuda_function_compile_error_keeps_the_log) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = fake_kernel("fake_noop", k_bad_ptx, 32, 0, 0);
  cubert_kernel_t absent = fake_kernel("fake_absent", k_ptx, 32, 0, 0);
  cubert_kernel_t garbage = fake_kernel("fake_noop", NULL, 32, 0, 0);
  static const unsigned char no_nul[4] = {'a', 'b', 'c', 'd'};
  const cubert_cuda_function_t *f = NULL;
  char text[1024];
  fake_env_open(&env);
  CHECK_STATUS(cubert__cuda_function_get(env.device, &k, &f, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_EQ_U64(err.depth, 3);
  CHECK_EQ_U64(err.chain[2], CUBERT_ERROR_COMPILATION_GENERIC);
  CHECK_EQ_I64(err.driver_code, CUDA_ERROR_INVALID_PTX);
  CHECK_REASON_HAS(err, "cuModuleLoadDataEx(fake_noop, PTX) failed: CUDA_ERROR_INVALID_PTX: ");
  CHECK_REASON_HAS(err, "Parsing error near 'FAKE_SYNTAX_ERROR'");
  CHECK_MSG(strchr(err.reason, '\n') == NULL, "the log's lines are joined: %s", err.reason);
  /* the whole JIT log stays available */
  CHECK(strstr(cubert__cuda_module_error_log(env.device), "Ptx assembly aborted") != NULL);
  (void)cubert_error_format(&err, text, sizeof text);
  CHECK_MSG(strstr(text, "FAKE_SYNTAX_ERROR") != NULL, "%s", text);
  /* nothing was cached: the same kernel fails again */
  CHECK_STATUS(cubert__cuda_function_get(env.device, &k, &f, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  /* an entry the image does not hold */
  CHECK_STATUS(cubert__cuda_function_get(env.device, &absent, &f, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_REASON_HAS(err, "kernel fake_absent is not in image fake_absent");
  /* a descriptor image that is neither binary nor NUL-terminated text */
  garbage.cuda_image = no_nul;
  garbage.cuda_image_size = sizeof no_nul;
  CHECK_STATUS(cubert__cuda_function_get(env.device, &garbage, &f, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_REASON_HAS(err, "neither a cubin/fatbin nor NUL-terminated PTX");
  garbage.cuda_entry_name = NULL;
  CHECK_STATUS(cubert__cuda_function_get(env.device, &garbage, &f, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  fake_env_close(&env);
}

static void check_limit(fake_env_t *env, cubert_kernel_t *k, cubert_dim3_t grid,
                        cubert_error_kind_t kind, uint64_t requested, uint64_t max) {
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  cubert_error_t err;
  cubert_kernel_args_initialize(&args);
  CHECK_OK(cubert__cuda_function_get(env->device, k, &f, &err));
  CHECK_STATUS(cubert__cuda_launch(&env->stream, f, grid, &args, 0, 0, &err),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_U64(err.chain[0], CUBERT_ERROR_SERVER_LAUNCH);
  CHECK_EQ_U64(err.chain[1], CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  CHECK_EQ_U64(cubert_error_kind(&err), kind);
  if (kind != CUBERT_ERROR_RESOURCE_CUBE_DIM) {
    CHECK_EQ_U64(err.field[0], requested);
    CHECK_EQ_U64(err.field[1], max);
  }
}

TEST(cuda_launch_limits) {
  fake_env_t env;
  cubert_kernel_t dim_z = fake_kernel("fake_noop", k_ptx, 1, 0, 0);
  cubert_kernel_t units = fake_kernel("fake_noop", k_ptx, 1024, 0, 0);
  cubert_kernel_t shared = fake_kernel("fake_noop", k_ptx, 32, 0, 0);
  cubert_kernel_t ok = fake_kernel("fake_noop", k_ptx, 32, 0, 0);
  cubert_dim3_t one = {1, 1, 1}, big_y = {1, 65536, 1}, big_z = {1, 1, 70000};
  fake_knob("CUBERT_FAKE_CUDA_FUNC_MAX_THREADS", "512");
  fake_env_open(&env);
  dim_z.cube_dim.z = 65;
  check_limit(&env, &dim_z, one, CUBERT_ERROR_RESOURCE_CUBE_DIM, 0, 0);
  units.cube_dim.y = 2; /* 2048 units, the device allows 1024 */
  check_limit(&env, &units, one, CUBERT_ERROR_RESOURCE_UNITS, 2048, 1024);
  units.cube_dim.y = 1; /* 1024 units, the compiled function allows 512 */
  check_limit(&env, &units, one, CUBERT_ERROR_RESOURCE_MAX_UNIT_PER_CUBE, 1024, 512);
  shared.shared_memory_bytes = 232449; /* one byte above the opt-in maximum */
  {
    const cubert_cuda_function_t *f = NULL;
    cubert_error_t err;
    CHECK_STATUS(cubert__cuda_function_get(env.device, &shared, &f, &err),
                 CUBERT_STATUS_LIMIT_EXCEEDED);
    CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_RESOURCE_SHARED_MEMORY);
    CHECK_EQ_U64(err.field[0], 232449);
    CHECK_EQ_U64(err.field[1], 232448);
    /* above 48 KiB the function opts in to the dynamic shared size */
    shared.shared_memory_bytes = 100000;
    CHECK_OK(cubert__cuda_function_get(env.device, &shared, &f, &err));
    CHECK_EQ_I64(fake_stats(&env.cu).last_dynamic_shared_attribute, 100000);
  }
  check_limit(&env, &ok, big_y, CUBERT_ERROR_RESOURCE_UNITS, 65536, 65535);
  check_limit(&env, &ok, big_z, CUBERT_ERROR_RESOURCE_UNITS, 70000, 65535);
  CHECK_EQ_U64(fake_stats(&env.cu).launches, 0);
  fake_env_close(&env);
}

TEST(cuda_launch_dynamic_cube_count) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = fake_kernel("fake_noop", k_ptx, 32, 0, 0);
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  uint32_t count[3] = {5, 3, 2}, too_big[3] = {1, 70000, 1};
  cubert_dim3_t read = {0, 0, 0};
  CUdeviceptr d = 0;
  fake_cuda_stats_t s;
  fake_env_open(&env);
  cubert_kernel_args_initialize(&args);
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &f, &err));
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, sizeof count, &d, &err));
  CHECK_OK(cubert__cuda_copy_h2d(&env.stream, d, count, sizeof count, &err));
  CHECK_OK(cubert__cuda_launch_dynamic(&env.stream, f, d, &args, 0, 0, &read, &err));
  CHECK_EQ_U64(read.x, 5);
  CHECK_EQ_U64(read.y, 3);
  CHECK_EQ_U64(read.z, 2);
  s = fake_stats(&env.cu);
  CHECK_EQ_U64(s.launches, 1);
  CHECK_EQ_U64(s.grid[0], 5);
  CHECK_EQ_U64(s.grid[1], 3);
  CHECK_EQ_U64(s.grid[2], 2);
  /* a count read from the device is checked like any other */
  CHECK_OK(cubert__cuda_copy_h2d(&env.stream, d, too_big, sizeof too_big, &err));
  CHECK_STATUS(cubert__cuda_launch_dynamic(&env.stream, f, d, &args, 0, 0, NULL, &err),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_STATUS(cubert__cuda_launch_dynamic(&env.stream, f, 0, &args, 0, 0, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(fake_stats(&env.cu).launches, 1);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, d, &err));
  fake_env_close(&env);
}

TEST(cuda_launch_driver_refusals) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = fake_kernel("fake_noop", k_ptx, 32, 0, 0);
  const cubert_cuda_function_t *f = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t one = {1, 1, 1};
  fake_env_open(&env);
  cubert_kernel_args_initialize(&args);
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &f, &err));
  fake_knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", "701");
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, one, &args, 0, 0, &err),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  CHECK_EQ_I64(err.driver_code, 701);
  CHECK_REASON_HAS(err, "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
  fake_knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", "2");
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, one, &args, 0, 0, &err),
               CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY);
  fake_knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", "999");
  CHECK_STATUS(cubert__cuda_launch(&env.stream, f, one, &args, 0, 0, &err),
               CUBERT_STATUS_LAUNCH_FAILED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_LAUNCH_UNKNOWN);
  /* none of these loses the device */
  CHECK(!cubert__cuda_device_is_lost(env.device));
  fake_env_close(&env);
}

/* The conformance kernels' own descriptors, through the registry when the
 * build embedded their images (nvcc), else through a PTX given here. */
TEST(cuda_launch_cts_descriptor) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t k = ck_add_scalar_u32_kernel;
  const cubert_cuda_function_t *f = NULL;
  fake_env_open(&env);
#if CUBERT_TEST_HAVE_IMAGES
  CHECK_MSG(cubert_cuda_image_find("ck_add_scalar_u32") != NULL,
            "the build embedded no image of examples/kernels/cubert_kernels.h");
  CHECK(cubert_cuda_image_find("ck_matmul_f32") != NULL);
  CHECK(cubert_cuda_image_find("ck_axpy_f32") != NULL);
  CHECK_EQ_U64(cubert_cuda_image_find("ck_add_scalar_u32")->cubin_arch, 90);
#else
  k.cuda_image = k_ptx;
  k.cuda_image_size = sizeof k_ptx;
#endif
  CHECK_OK(cubert__cuda_function_get(env.device, &k, &f, &err));
  CHECK(f->handle != NULL);
  fake_env_close(&env);
}
