/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_loader.c: libcuda loaded at run time. Every way
 * loading can fail gives FAILED_PRECONDITION, kind SERVICE_CREATION and
 * "CUDA unavailable: <reason>", and leaves nothing loaded; the fake driver
 * loads and resolves every entry point.
 */
#include "cuda_test.h"

static void check_unavailable(cubert_status_t st, const cubert_error_t *err, const char *text,
                              const cubert_cuda_loader_t *cu) {
  CHECK_STATUS(st, CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_EQ_U64(cubert_error_kind(err), CUBERT_ERROR_SERVICE_CREATION);
  CHECK_MSG(strncmp(err->reason, "CUDA unavailable: ", 18) == 0, "reason \"%s\"", err->reason);
  CHECK_REASON_HAS(*err, text);
  CHECK(cu->library == NULL);
}

TEST(cuda_loader_no_library) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  cubert_status_t st = cubert__cuda_loader_open("/nonexistent/libcuda.so.1", &cu, &err);
  check_unavailable(st, &err, "cannot load /nonexistent/libcuda.so.1: ", &cu);
  CHECK_EQ_I64(err.driver_code, 0);
}

TEST(cuda_loader_without_get_proc_address) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  cubert_status_t st = cubert__cuda_loader_open(FAKE_LIBCUDA_NO_GET_PROC, &cu, &err);
  check_unavailable(st, &err, "has no cuGetProcAddress_v2", &cu);
}

TEST(cuda_loader_entry_point_missing) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  cubert_status_t st;
  fake_knob("CUBERT_FAKE_CUDA_MISSING", "cuMemAllocAsync");
  st = cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err);
  check_unavailable(st, &err, "entry point cuMemAllocAsync (ABI 11020) not found: symbol not found",
                    &cu);
}

TEST(cuda_loader_old_driver) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  cubert_status_t st;
  fake_knob("CUBERT_FAKE_CUDA_DRIVER_VERSION", "11080");
  st = cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err);
  check_unavailable(st, &err, "driver version 11.8 (11080) is older than the required 12.0 (12000)",
                    &cu);
}

TEST(cuda_loader_entry_newer_than_driver) {
  /* A 12.0 driver: every required ABI version is at most 12.0, so it loads;
   * the optional programmatic graph edges (12.3) are then absent. */
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  fake_knob("CUBERT_FAKE_CUDA_DRIVER_VERSION", "12000");
  CHECK_OK(cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err));
  CHECK_EQ_I64(cu.driver_version, 12000);
  CHECK(cu.cuGraphAddDependencies == NULL);
  CHECK(cu.cuModuleGetGlobal != NULL);
  cubert__cuda_loader_close(&cu);
}

/* An optional entry point the library lacks is left NULL; the rest loads. */
TEST(cuda_loader_optional_entry_point_missing) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  fake_knob("CUBERT_FAKE_CUDA_MISSING", "cuModuleGetGlobal");
  CHECK_OK(cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err));
  CHECK(cu.cuModuleGetGlobal == NULL);
  CHECK(cu.cuGraphAddDependencies != NULL);
  CHECK(cu.cuLaunchKernel != NULL);
  cubert__cuda_loader_close(&cu);
}

TEST(cuda_loader_init_fails) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  cubert_status_t st;
  fake_knob("CUBERT_FAKE_CUDA_INIT_RESULT", "100");
  st = cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err);
  check_unavailable(st, &err,
                    "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", &cu);
  CHECK_EQ_I64(err.driver_code, 100);
}

TEST(cuda_loader_no_device) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  cubert_status_t st;
  fake_knob("CUBERT_FAKE_CUDA_DEVICES", "0");
  st = cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err);
  check_unavailable(st, &err, "no CUDA device (cuDeviceGetCount reports 0)", &cu);
}

TEST(cuda_loader_opens_the_fake) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  fake_cuda_stats_t s;
  fake_knob("CUBERT_FAKE_CUDA_DEVICES", "3");
  CHECK_OK(cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err));
  CHECK(cu.library != NULL);
  CHECK_EQ_I64(cu.driver_version, 13000);
  CHECK_EQ_I64(cu.device_count, 3);
  CHECK_EQ_STR(cu.path, FAKE_LIBCUDA);
  /* every entry point resolved, through cuGetProcAddress */
#define CHECK_ENTRY_(name, version) CHECK_MSG(cu.name != NULL, "%s unresolved", #name);
  CUBERT_CUDA_ENTRY_POINTS(CHECK_ENTRY_)
  CUBERT_CUDA_OPTIONAL_ENTRY_POINTS(CHECK_ENTRY_) /* the fake has them too */
#undef CHECK_ENTRY_
  s = fake_stats(&cu);
  CHECK_EQ_U64(s.init_calls, 1);
  CHECK(cubert__cuda_loader_symbol(&cu, "no_such_symbol") == NULL);
  cubert__cuda_loader_close(&cu);
  CHECK(cu.library == NULL);
  cubert__cuda_loader_close(&cu); /* closed: no-op */
  cubert__cuda_loader_close(NULL);
  CHECK(cubert__cuda_loader_symbol(&cu, "cubert_fake_cuda_stats") == NULL);
}

TEST(cuda_loader_path_from_environment) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  CHECK_OK(cubert__cuda_loader_open(NULL, &cu, &err));
  CHECK_EQ_STR(cu.path, FAKE_LIBCUDA);
  cubert__cuda_loader_close(&cu);
}

TEST(cuda_loader_bad_arguments) {
  cubert_cuda_loader_t cu;
  cubert_error_t err;
  char path[400];
  CHECK_STATUS(cubert__cuda_loader_open(FAKE_LIBCUDA, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  memset(path, 'a', sizeof path - 1);
  path[sizeof path - 1] = '\0';
  CHECK_STATUS(cubert__cuda_loader_open(path, &cu, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_INVALID_ARGUMENT);
}

/* The process-wide loader and the public queries, without a driver. */
TEST(cuda_available_reports_the_reason) {
  cubert_error_t err, again;
  uint32_t n = 7;
  cubert_cuda_device_info_t info;
  fake_knob("CUBERT_LIBCUDA", "/nonexistent/libcuda.so.1");
  CHECK_STATUS(cubert_cuda_available(&err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_REASON_HAS(err, "CUDA unavailable: cannot load /nonexistent/libcuda.so.1");
  CHECK_STATUS(cubert_cuda_available(NULL), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_cuda_device_count(&n, &again), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_EQ_STR(again.reason, err.reason);
  CHECK_EQ_U64(n, 7); /* untouched */
  CHECK_STATUS(cubert_cuda_device_info(0, &info, &again), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_STATUS(cubert_cuda_device_count(NULL, &again), CUBERT_STATUS_INVALID_ARGUMENT);
}

/* The same queries over the fake driver. */
TEST(cuda_available_with_the_fake) {
  cubert_error_t err;
  uint32_t n = 0;
  cubert_cuda_device_info_t info;
  const cubert_hardware_properties_t *hw = &info.properties.hardware;
  fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  fake_knob("CUBERT_FAKE_CUDA_DEVICES", "2");
  CHECK_OK(cubert_cuda_available(&err));
  CHECK_OK(cubert_cuda_device_count(&n, &err));
  CHECK_EQ_U64(n, 2);
  CHECK_OK(cubert_cuda_device_info(1, &info, &err));
  CHECK_EQ_STR(info.properties.name, "Fake CUDA Device 1");
  CHECK_EQ_STR(info.pci_bus_id, "0000:11:00.0");
  CHECK_EQ_U64(info.ordinal, 1);
  CHECK_EQ_U64(info.compute_major, 9);
  CHECK_EQ_U64(info.compute_minor, 0);
  CHECK_EQ_U64(info.total_memory, 256u << 20);
  CHECK_EQ_U64(info.async_alloc, 1);
  CHECK_EQ_I64(info.driver_version, 13000);
  CHECK_EQ_U64(hw->plane_size_max, 32);
  CHECK_EQ_U64(hw->max_units_per_cube, 1024);
  CHECK_EQ_U64(hw->max_cube_dim.z, 64);
  CHECK_EQ_U64(hw->max_cube_count.x, 2147483647u);
  CHECK_EQ_U64(hw->max_cube_count.y, 65535);
  CHECK_EQ_U64(hw->max_shared_memory_size, 232448);
  CHECK_EQ_U64(hw->num_streaming_multiprocessors, 132);
  CHECK_EQ_U64(hw->max_bindings, CUBERT_KERNEL_MAX_BUFFERS);
  CHECK_EQ_U64(hw->load_width, 128);
  CHECK_EQ_U64(info.properties.memory.alignment, 512);
  CHECK_EQ_U64(info.properties.memory.max_page_size, (256u << 20) / 4);
  CHECK(info.properties.features & CUBERT_FEATURE_DYNAMIC_CUBE_COUNT);
  CHECK(info.properties.features & CUBERT_FEATURE_STAGING);
  CHECK_EQ_U64(info.properties.timing_method, CUBERT_TIMING_DEVICE);
  CHECK_STATUS(cubert_cuda_device_info(2, &info, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(err.field[0], 2);
  CHECK_EQ_U64(err.field[1], 2);
  CHECK_STATUS(cubert_cuda_device_info(0, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
}
