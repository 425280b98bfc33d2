/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_error.c: CUresult -> taxonomy (backend-cuda/device/cuda_error.h).
 */
#include "cuda_test.h"

TEST(cuda_error_names) {
  static const struct {
    int code;
    const char *name;
  } k[] = {
      {0, "CUDA_SUCCESS"},
      {1, "CUDA_ERROR_INVALID_VALUE"},
      {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {34, "CUDA_ERROR_STUB_LIBRARY"},
      {100, "CUDA_ERROR_NO_DEVICE"},
      {218, "CUDA_ERROR_INVALID_PTX"},
      {226, "CUDA_ERROR_CONTAINED"},
      {600, "CUDA_ERROR_NOT_READY"},
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
      {719, "CUDA_ERROR_LAUNCH_FAILED"},
      {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
      {911, "CUDA_ERROR_EXTERNAL_DEVICE"},
      {999, "CUDA_ERROR_UNKNOWN"},
  };
  size_t i;
  int code, named = 0;
  for (i = 0; i < sizeof k / sizeof k[0]; i++)
    CHECK_EQ_STR(cubert__cuda_result_name((CUresult)k[i].code), k[i].name);
  CHECK_EQ_STR(cubert__cuda_result_name((CUresult)12345), "CUDA_ERROR_UNRECOGNIZED");
  CHECK_EQ_STR(cubert__cuda_result_name((CUresult)-1), "CUDA_ERROR_UNRECOGNIZED");
  CHECK_EQ_STR(cubert__cuda_result_name((CUresult)3), "CUDA_ERROR_NOT_INITIALIZED");
  /* every name the binary search finds starts with CUDA_ (the table is sorted:
   * a misplaced entry would be missed) and cuda.h 13.0 has 101 codes */
  for (code = 0; code < 1000; code++) {
    const char *n = cubert__cuda_result_name((CUresult)code);
    if (strcmp(n, "CUDA_ERROR_UNRECOGNIZED") == 0) continue;
    CHECK_MSG(strncmp(n, "CUDA_", 5) == 0, "code %d: %s", code, n);
    named++;
  }
  CHECK_EQ_I64(named, 101);
}

TEST(cuda_error_context_poisoning_codes) {
  static const int fatal[] = {214, 220, 226, 700, 702, 710, 714, 715,
                              716, 717, 718, 719, 721, 911};
  size_t i;
  int code, n = 0;
  for (i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
    CHECK_MSG(cubert__cuda_result_is_fatal((CUresult)fatal[i]), "%d not fatal", fatal[i]);
  for (code = 0; code < 1000; code++) n += cubert__cuda_result_is_fatal((CUresult)code) ? 1 : 0;
  CHECK_EQ_I64(n, (int)(sizeof fatal / sizeof fatal[0]));
  CHECK(!cubert__cuda_result_is_fatal(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  CHECK(!cubert__cuda_result_is_fatal(CUDA_ERROR_OUT_OF_MEMORY));
  CHECK(!cubert__cuda_result_is_fatal(CUDA_ERROR_NOT_READY));
}

TEST(cuda_error_kinds) {
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_ILLEGAL_ADDRESS, CUBERT_CUDA_OP_COPY),
               CUBERT_ERROR_DEVICE_LOST);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_OUT_OF_MEMORY, CUBERT_CUDA_OP_MEMORY),
               CUBERT_ERROR_IO_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_OUT_OF_MEMORY, CUBERT_CUDA_OP_HOST),
               CUBERT_ERROR_HOST_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_OUT_OF_MEMORY, CUBERT_CUDA_OP_LAUNCH),
               CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUBERT_CUDA_OP_LAUNCH),
               CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_INVALID_PTX, CUBERT_CUDA_OP_MODULE),
               CUBERT_ERROR_COMPILATION_GENERIC);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_NOT_FOUND, CUBERT_CUDA_OP_MODULE),
               CUBERT_ERROR_COMPILATION_GENERIC);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_NOT_FOUND, CUBERT_CUDA_OP_GENERIC),
               CUBERT_ERROR_SERVER_GENERIC);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_NO_DEVICE, CUBERT_CUDA_OP_GENERIC),
               CUBERT_ERROR_SERVICE_CREATION);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_STUB_LIBRARY, CUBERT_CUDA_OP_GENERIC),
               CUBERT_ERROR_SERVICE_CREATION);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_NOT_SUPPORTED, CUBERT_CUDA_OP_MEMORY),
               CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_TIMEOUT, CUBERT_CUDA_OP_GENERIC),
               CUBERT_ERROR_DEADLINE_EXCEEDED);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_INVALID_VALUE, CUBERT_CUDA_OP_COPY),
               CUBERT_ERROR_INVALID_ARGUMENT);
  /* codes without a fixed kind follow the operation */
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_UNKNOWN, CUBERT_CUDA_OP_MEMORY),
               CUBERT_ERROR_IO_UNKNOWN);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_UNKNOWN, CUBERT_CUDA_OP_COPY),
               CUBERT_ERROR_IO_UNKNOWN);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_UNKNOWN, CUBERT_CUDA_OP_LAUNCH),
               CUBERT_ERROR_LAUNCH_UNKNOWN);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_UNKNOWN, CUBERT_CUDA_OP_MODULE),
               CUBERT_ERROR_COMPILATION_GENERIC);
  CHECK_EQ_U64(cubert__cuda_result_kind(CUDA_ERROR_UNKNOWN, CUBERT_CUDA_OP_GENERIC),
               CUBERT_ERROR_SERVER_GENERIC);
}

TEST(cuda_error_records) {
  cubert_error_t e;
  char text[512];
  /* without a loader: the name only */
  CHECK_STATUS(cubert__cuda_error_set(&e, NULL, CUDA_ERROR_OUT_OF_MEMORY, CUBERT_CUDA_OP_MEMORY,
                                      "cuMemAllocAsync", 4096),
               CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_IO_OUT_OF_MEMORY);
  CHECK_EQ_U64(e.depth, 1);
  CHECK_EQ_U64(e.field[0], 4096);
  CHECK_EQ_I64(e.driver_code, 2);
  CHECK_EQ_STR(e.reason, "cuMemAllocAsync failed: CUDA_ERROR_OUT_OF_MEMORY");
  (void)cubert_error_format(&e, text, sizeof text);
  CHECK_MSG(strstr(text, "Driver code: 2") != NULL, "%s", text);
  /* a launch failure nests as the seed's ServerError::Launch(LaunchError::...) */
  CHECK_STATUS(cubert__cuda_error_set(&e, NULL, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                      CUBERT_CUDA_OP_LAUNCH, "cuLaunchKernel", 0),
               CUBERT_STATUS_LIMIT_EXCEEDED);
  CHECK_EQ_U64(e.depth, 2);
  CHECK_EQ_U64(e.chain[0], CUBERT_ERROR_SERVER_LAUNCH);
  CHECK_EQ_U64(e.chain[1], CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  CHECK_EQ_I64(e.driver_code, 701);
  /* a compilation failure: CompilationError inside LaunchError::CompilationError */
  CHECK_STATUS(cubert__cuda_error_set(&e, NULL, CUDA_ERROR_INVALID_PTX, CUBERT_CUDA_OP_MODULE,
                                      "cuModuleLoadDataEx", 0),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK_EQ_U64(e.depth, 3);
  CHECK_EQ_U64(e.chain[0], CUBERT_ERROR_SERVER_LAUNCH);
  CHECK_EQ_U64(e.chain[1], CUBERT_ERROR_LAUNCH_COMPILATION);
  CHECK_EQ_U64(e.chain[2], CUBERT_ERROR_COMPILATION_GENERIC);
  /* a poisoning code: DEVICE_LOST, not wrapped */
  CHECK_STATUS(cubert__cuda_error_set(&e, NULL, CUDA_ERROR_ILLEGAL_ADDRESS, CUBERT_CUDA_OP_LAUNCH,
                                      "cuLaunchKernel", 0),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(e.depth, 1);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_DEVICE_LOST);
  CHECK_EQ_I64(e.driver_code, 700);
  /* NULL record: only the status */
  CHECK_STATUS(cubert__cuda_error_set(NULL, NULL, CUDA_ERROR_INVALID_VALUE, CUBERT_CUDA_OP_COPY,
                                      "x", 0),
               CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(cuda_error_records_with_driver_text) {
  cubert_cuda_loader_t cu;
  cubert_error_t e;
  CHECK_OK(cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &e));
  (void)cubert__cuda_error_set(&e, &cu, CUDA_ERROR_ILLEGAL_ADDRESS, CUBERT_CUDA_OP_GENERIC,
                               "cuStreamSynchronize", 0);
  CHECK_EQ_STR(e.reason, "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal "
                         "memory access was encountered)");
  /* a code the driver has no text for: the name alone */
  (void)cubert__cuda_error_set(&e, &cu, (CUresult)12345, CUBERT_CUDA_OP_GENERIC, "cuX", 0);
  CHECK_EQ_STR(e.reason, "cuX failed: CUDA_ERROR_UNRECOGNIZED");
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_SERVER_GENERIC);
  cubert__cuda_loader_close(&cu);
}
