/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_nccl_loader.c: libnccl opened at run time
 * (backend-cuda/comm/cuda_nccl_loader.h): the fake NCCL and its variants (too
 * old, a symbol missing), every "NCCL unavailable" reason, the result
 * names and kinds; the private ABI header against nccl.h where the build
 * finds one; the machine's libnccl.so.2 where there is one.
 */
#include "cuda_comm_test.h"

#include <stdio.h>

#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#define HAVE_NCCL_H 1
#endif
#endif
#ifndef HAVE_NCCL_H
#define HAVE_NCCL_H 0
#endif

TEST(cuda_nccl_loader_opens_the_fake) {
  cubert_nccl_loader_t n;
  cubert_error_t err;
  char v[32];
  CHECK_OK(cubert__nccl_loader_open(FAKE_LIBNCCL, &n, &err));
  CHECK(n.library != NULL);
  CHECK_EQ_I64(n.version, 22809);
  cubert__nccl_version_text(n.version, v, sizeof v);
  CHECK(strcmp(v, "2.28.9") == 0);
  CHECK(strcmp(n.path, FAKE_LIBNCCL) == 0);
  CHECK(n.ncclAllReduce && n.ncclSend && n.ncclRecv && n.ncclCommInitAll && n.ncclCommAbort);
  CHECK(n.ncclCommInitRankConfig != NULL);
  CHECK(cubert__nccl_loader_symbol(&n, "cubert_fake_nccl_stats") != NULL);
  CHECK(cubert__nccl_loader_symbol(&n, "no_such_symbol") == NULL);
  CHECK(cubert__nccl_loader_symbol(NULL, "ncclSend") == NULL);
  cubert__nccl_loader_close(&n);
  CHECK(n.library == NULL);
  cubert__nccl_loader_close(&n); /* closed: no-op */
  cubert__nccl_loader_close(NULL);
  /* the environment names the library when no path is given */
  fake_knob("CUBERT_LIBNCCL", FAKE_LIBNCCL);
  CHECK_OK(cubert__nccl_loader_open(NULL, &n, &err));
  CHECK(strcmp(n.path, FAKE_LIBNCCL) == 0);
  cubert__nccl_loader_close(&n);
  /* 2.13: no ncclCommInitRankConfig (process communicators need 2.14) */
  fake_knob("CUBERT_FAKE_NCCL_VERSION", "21304");
  CHECK_OK(cubert__nccl_loader_open(FAKE_LIBNCCL, &n, &err));
  CHECK(n.ncclCommInitRankConfig == NULL);
  cubert__nccl_loader_close(&n);
}

/* Each failure: UNSUPPORTED, kind IO_UNSUPPORTED_IO_OPERATION, "NCCL
 * unavailable: <reason>", and nothing left open. */
static void expect_unavailable(const char *path, const char *reason) {
  cubert_nccl_loader_t n;
  cubert_error_t err;
  memset(&n, 0x5a, sizeof n);
  CHECK_STATUS(cubert__nccl_loader_open(path, &n, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION);
  CHECK_REASON_HAS(err, "NCCL unavailable: ");
  CHECK_REASON_HAS(err, reason);
  CHECK(n.library == NULL);
}

TEST(cuda_nccl_loader_failures) {
  cubert_nccl_loader_t n;
  cubert_error_t err;
  char longpath[300];
  expect_unavailable(CUBERT_TEST_BUILD_DIR "/no-such-dir/libnccl.so.2", "cannot load");
  expect_unavailable(FAKE_LIBNCCL_OLD, "NCCL 2.6.4 (2604) is older than the required 2.7.0 (2700)");
  expect_unavailable(FAKE_LIBNCCL_NO_SEND, "has no ncclSend");
  fake_knob("CUBERT_FAKE_NCCL_VERSION_RESULT", "3");
  expect_unavailable(FAKE_LIBNCCL, "ncclGetVersion failed: ncclInternalError");
  unsetenv("CUBERT_FAKE_NCCL_VERSION_RESULT");
  CHECK_STATUS(cubert__nccl_loader_open(FAKE_LIBNCCL, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  memset(longpath, 'a', sizeof longpath - 1);
  longpath[sizeof longpath - 1] = 0;
  CHECK_STATUS(cubert__nccl_loader_open(longpath, &n, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "255 bytes");
}

TEST(cuda_nccl_loader_shared_answers_the_same_every_time) {
  const cubert_nccl_loader_t *a = NULL, *b = NULL;
  cubert_error_t e1, e2;
  fake_knob("CUBERT_LIBNCCL", CUBERT_TEST_BUILD_DIR "/no-such-dir/libnccl.so.2");
  CHECK_STATUS(cubert__nccl_loader_shared(&a, &e1), CUBERT_STATUS_UNSUPPORTED);
  fake_knob("CUBERT_LIBNCCL", FAKE_LIBNCCL); /* opened once: the answer stays */
  CHECK_STATUS(cubert__nccl_loader_shared(&b, &e2), CUBERT_STATUS_UNSUPPORTED);
  CHECK(a == NULL && b == NULL);
  CHECK(strcmp(e1.reason, e2.reason) == 0);
  CHECK_REASON_HAS(e2, "cannot load");
}

TEST(cuda_nccl_results_names_kinds_and_versions) {
  cubert_error_t err;
  char v[32];
  CHECK(strcmp(cubert__nccl_result_name(0), "ncclSuccess") == 0);
  CHECK(strcmp(cubert__nccl_result_name(6), "ncclRemoteError") == 0);
  CHECK(strcmp(cubert__nccl_result_name(7), "ncclInProgress") == 0);
  CHECK(strcmp(cubert__nccl_result_name(99), "ncclUnknownResult") == 0);
  CHECK(cubert__nccl_result_kind(0) == CUBERT_ERROR_NONE);
  CHECK(cubert__nccl_result_kind(1) == CUBERT_ERROR_SERVER_GENERIC);
  CHECK(cubert__nccl_result_kind(4) == CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK(cubert__nccl_result_kind(5) == CUBERT_ERROR_FAILED_PRECONDITION);
  CHECK(cubert__nccl_result_kind(6) == CUBERT_ERROR_DEVICE_LOST);
  CHECK(cubert__nccl_result_kind(8) == CUBERT_ERROR_DEADLINE_EXCEEDED);
  CHECK(strcmp(cubert__nccl_result_name(8), "ncclTimeout") == 0);
  CHECK_STATUS(cubert__nccl_error_set(&err, NULL, 2, "ncclAllReduce"), CUBERT_STATUS_INTERNAL);
  CHECK(strcmp(err.reason, "ncclAllReduce failed: ncclSystemError (no description)") == 0);
  CHECK_EQ_I64(err.driver_code, 2);
  CHECK_STATUS(cubert__nccl_error_set(&err, NULL, 0, NULL), CUBERT_STATUS_INTERNAL);
  cubert__nccl_version_text(2704, v, sizeof v);
  CHECK(strcmp(v, "2.7.4") == 0);
  cubert__nccl_version_text(21903, v, sizeof v);
  CHECK(strcmp(v, "2.19.3") == 0);
  CHECK_STATUS(cubert__nccl_unavailable(&err, 7, "x %d", 1), CUBERT_STATUS_UNSUPPORTED);
  CHECK(strcmp(err.reason, "NCCL unavailable: x 1") == 0);
}

/* cuda_nccl_abi.h against nccl.h: every value and layout the driver uses. */
TEST(cuda_nccl_abi_matches_nccl_h) {
#if HAVE_NCCL_H
  ncclConfig_t real = NCCL_CONFIG_INITIALIZER;
  CHECK_EQ_I64(CUBERT_NCCL_SUCCESS, ncclSuccess);
  CHECK_EQ_I64(CUBERT_NCCL_UNHANDLED_CUDA_ERROR, ncclUnhandledCudaError);
  CHECK_EQ_I64(CUBERT_NCCL_SYSTEM_ERROR, ncclSystemError);
  CHECK_EQ_I64(CUBERT_NCCL_INTERNAL_ERROR, ncclInternalError);
  CHECK_EQ_I64(CUBERT_NCCL_INVALID_ARGUMENT, ncclInvalidArgument);
  CHECK_EQ_I64(CUBERT_NCCL_INVALID_USAGE, ncclInvalidUsage);
  CHECK_EQ_I64(CUBERT_NCCL_REMOTE_ERROR, ncclRemoteError);
  CHECK_EQ_I64(CUBERT_NCCL_IN_PROGRESS, ncclInProgress);
  CHECK_EQ_I64(CUBERT_NCCL_INT8, ncclInt8);
  CHECK_EQ_I64(CUBERT_NCCL_UINT8, ncclUint8);
  CHECK_EQ_I64(CUBERT_NCCL_INT32, ncclInt32);
  CHECK_EQ_I64(CUBERT_NCCL_UINT32, ncclUint32);
  CHECK_EQ_I64(CUBERT_NCCL_INT64, ncclInt64);
  CHECK_EQ_I64(CUBERT_NCCL_UINT64, ncclUint64);
  CHECK_EQ_I64(CUBERT_NCCL_FLOAT16, ncclFloat16);
  CHECK_EQ_I64(CUBERT_NCCL_FLOAT32, ncclFloat32);
  CHECK_EQ_I64(CUBERT_NCCL_FLOAT64, ncclFloat64);
  CHECK_EQ_I64(CUBERT_NCCL_SUM, ncclSum);
  CHECK_EQ_I64(CUBERT_NCCL_PROD, ncclProd);
  CHECK_EQ_I64(CUBERT_NCCL_MAX, ncclMax);
  CHECK_EQ_I64(CUBERT_NCCL_MIN, ncclMin);
  CHECK_EQ_U64(CUBERT_NCCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
  CHECK_EQ_U64(sizeof(cubert_nccl_unique_id_t), sizeof(ncclUniqueId));
  /* the prefix of ncclConfig_t the driver fills */
  CHECK_EQ_U64(offsetof(cubert_nccl_config_t, size), offsetof(ncclConfig_t, size));
  CHECK_EQ_U64(offsetof(cubert_nccl_config_t, magic), offsetof(ncclConfig_t, magic));
  CHECK_EQ_U64(offsetof(cubert_nccl_config_t, version), offsetof(ncclConfig_t, version));
  CHECK_EQ_U64(offsetof(cubert_nccl_config_t, blocking), offsetof(ncclConfig_t, blocking));
  CHECK_EQ_U64(real.magic, CUBERT_NCCL_CONFIG_MAGIC);
  CHECK_EQ_I64(real.blocking, CUBERT_NCCL_CONFIG_UNDEF_INT);
  CHECK_EQ_I64(NCCL_VERSION(2, 14, 0), (long long)CUBERT_NCCL_CONFIG_VERSION);
  CHECK_EQ_I64(NCCL_VERSION(2, 7, 0), CUBERT_NCCL_VERSION(2, 7, 0));
  CHECK_EQ_I64(NCCL_VERSION(2, 28, 9), CUBERT_NCCL_VERSION(2, 28, 9));
#else
  TEST_SKIP("nccl.h is not in the CUDA include path of this build (cuda_nccl_abi.h is used alone)");
#endif
}

/* The machine's libnccl.so.2 opens and passes the version gate (no GPU is
 * needed for that). */
TEST(cuda_nccl_loader_opens_the_machine_library) {
  cubert_nccl_loader_t n;
  cubert_error_t err;
  char v[32];
  static char why[CUBERT_ERROR_REASON_SIZE + 16];
  if (cubert__nccl_loader_open(CUBERT_NCCL_LIBRARY_DEFAULT, &n, &err) != CUBERT_STATUS_OK) {
    snprintf(why, sizeof why, "%s", err.reason);
    TEST_SKIP(why);
  }
  cubert__nccl_version_text(n.version, v, sizeof v);
  printf("libnccl.so.2: NCCL %s, ncclCommInitRankConfig %s\n", v,
         n.ncclCommInitRankConfig ? "present" : "absent");
  CHECK(n.version >= CUBERT_NCCL_VERSION_MIN);
  cubert__nccl_loader_close(&n);
}
