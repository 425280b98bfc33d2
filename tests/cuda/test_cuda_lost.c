/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_lost.c: a context-poisoning error (an illegal
 * address in a kernel, ...) loses the device: every later call on it
 * returns that error at once, without calling the driver, nothing waits,
 * and another device keeps working. Over the fake driver.
 */
#include "cuda_test.h"
#include "cubert/driver/error.h"

static const char k_ptx[] =
    "// fake\n.visible .entry fake_fault(\n)\n{\n}\n.visible .entry fake_noop(\n)\n{\n}\n";

static void check_lost(cubert_status_t st, const cubert_error_t *err) {
  CHECK_STATUS(st, CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_EQ_I64(err->driver_code, CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_MSG(strstr(err->reason, "CUDA device 0 lost: ") == err->reason, "%s", err->reason);
  CHECK_MSG(strstr(err->reason, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s", err->reason);
}

TEST(cuda_device_lost_after_a_faulting_kernel) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t fault = fake_kernel("fake_fault", k_ptx, 32, 0, 0);
  cubert_kernel_t noop = fake_kernel("fake_noop", k_ptx, 32, 0, 0);
  const cubert_cuda_function_t *f = NULL, *g = NULL;
  cubert_cuda_event_t *e = NULL;
  cubert_cuda_staging_chunk_t *chunk = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t one = {1, 1, 1};
  CUdeviceptr p = 0;
  unsigned char host[16];
  fake_cuda_stats_t before, after;
  fake_env_open(&env);
  cubert_kernel_args_initialize(&args);
  CHECK_OK(cubert__cuda_function_get(env.device, &fault, &f, &err));
  CHECK_OK(cubert__cuda_function_get(env.device, &noop, &g, &err));
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, 64, &p, &err));
  /* the launch itself succeeds: the fault shows up later, as on a GPU */
  CHECK_OK(cubert__cuda_launch(&env.stream, f, one, &args, 0, 0, &err));
  CHECK(!cubert__cuda_device_is_lost(env.device));
  check_lost(cubert__cuda_stream_drain_errors(&env.stream, &err), &err);
  CHECK(cubert__cuda_device_is_lost(env.device));
  /* from now on every call returns the lost record without a driver call */
  before = fake_stats(&env.cu);
  check_lost(cubert__cuda_stream_synchronize(&env.stream, &err), &err);
  check_lost(cubert__cuda_launch(&env.stream, g, one, &args, 0, 0, &err), &err);
  check_lost(cubert__cuda_memory_alloc(&env.stream, 64, &p, &err), &err);
  check_lost(cubert__cuda_copy_h2d(&env.stream, p, host, sizeof host, &err), &err);
  check_lost(cubert__cuda_copy_d2h(&env.stream, host, p, sizeof host, &err), &err);
  check_lost(cubert__cuda_event_record(&env.stream, false, &e, &err), &err);
  check_lost(cubert__cuda_staging_acquire(env.device, 64, &chunk, &err), &err);
  check_lost(cubert__cuda_staging_upload(&env.stream, p, host, sizeof host, &err), &err);
  check_lost(cubert__cuda_function_get(env.device, &fault, &f, &err), &err);
  check_lost(cubert__cuda_memory_free(&env.stream, p, &err), &err);
  check_lost(cubert__cuda_stream_drain_errors(&env.stream, &err), &err);
  check_lost(cubert__cuda_device_lost_error(env.device, &err), &err);
  {
    cubert_cuda_stream_t s2;
    check_lost(cubert__cuda_stream_initialize(env.device, &s2, &err), &err);
  }
  after = fake_stats(&env.cu);
  CHECK_EQ_U64(after.ctx_set_current_calls, before.ctx_set_current_calls);
  CHECK_EQ_U64(after.launches, before.launches);
  CHECK_EQ_U64(after.copies_h2d + after.copies_d2h, before.copies_h2d + before.copies_d2h);
  CHECK_EQ_U64(after.mem_alloc_async, before.mem_alloc_async);
  /* the device closes without waiting on anything and frees what it holds;
   * the block `p` goes with the context (the fake resets it as CUDA does) */
  fake_env_close(&env);
}

TEST(cuda_device_lost_on_a_synchronous_poisoning_code) {
  fake_env_t env;
  cubert_error_t err;
  cubert_kernel_t noop = fake_kernel("fake_noop", k_ptx, 32, 0, 0);
  const cubert_cuda_function_t *g = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t one = {1, 1, 1};
  bool done = false;
  cubert_cuda_event_t *e = NULL;
  cubert_cuda_function_memo_t memo;
  fake_env_open(&env);
  cubert_kernel_args_initialize(&args);
  memset(&memo, 0, sizeof memo);
  CHECK_OK(cubert__cuda_function_get_memo(env.device, &memo, &noop, &g, &err));
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &e, &err));
  fake_knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", "700");
  check_lost(cubert__cuda_launch(&env.stream, g, one, &args, 0, 0, &err), &err);
  /* a memo's hit answers the lost record too */
  check_lost(cubert__cuda_function_get_memo(env.device, &memo, &noop, &g, &err), &err);
  check_lost(cubert__cuda_event_query(env.device, e, &done, &err), &err);
  check_lost(cubert__cuda_event_synchronize(env.device, e, &err), &err);
  cubert__cuda_event_release(env.device, e); /* still accepted: back to the pool */
  fake_env_close(&env);
}

TEST(cuda_device_lost_leaves_other_devices_working) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cubert_cuda_loader_t cu;
  cubert_cuda_device_t *d0 = NULL, *d1 = NULL;
  cubert_cuda_stream_t s0, s1;
  cubert_error_t err, cause;
  CUdeviceptr p = 0;
  uint32_t v = 42, back = 0;
  fake_knob("CUBERT_FAKE_CUDA_DEVICES", "2");
  CHECK_OK(cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err));
  CHECK_OK(cubert__cuda_device_open(&cu, 0, a, &d0, &err));
  CHECK_OK(cubert__cuda_device_open(&cu, 1, a, &d1, &err));
  CHECK_OK(cubert__cuda_stream_initialize(d0, &s0, &err));
  CHECK_OK(cubert__cuda_stream_initialize(d1, &s1, &err));
  /* mark device 0 lost directly (first cause wins) */
  cubert_error_set_driver(&cause, CUBERT_ERROR_SERVER_GENERIC, 719, "the cause");
  cubert__cuda_device_mark_lost(d0, &cause);
  cubert_error_set_driver(&cause, CUBERT_ERROR_SERVER_GENERIC, 700, "a later cause");
  cubert__cuda_device_mark_lost(d0, &cause);
  CHECK_STATUS(cubert__cuda_stream_synchronize(&s0, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_I64(err.driver_code, 719);
  CHECK_EQ_STR(err.reason, "CUDA device 0 lost: the cause");
  /* device 1, on this same thread, is untouched */
  CHECK(!cubert__cuda_device_is_lost(d1));
  CHECK_OK(cubert__cuda_memory_alloc(&s1, 4, &p, &err));
  CHECK_OK(cubert__cuda_copy_h2d(&s1, p, &v, 4, &err));
  CHECK_OK(cubert__cuda_copy_d2h(&s1, &back, p, 4, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&s1, &err));
  CHECK_EQ_U64(back, 42);
  CHECK_OK(cubert__cuda_memory_free(&s1, p, &err));
  CHECK_OK(cubert__cuda_stream_drain_errors(&s1, &err));
  cubert__cuda_stream_deinitialize(&s0);
  cubert__cuda_stream_deinitialize(&s1);
  cubert__cuda_device_close(d0);
  cubert__cuda_device_close(d1);
  CHECK_EQ_I64(ca.live_blocks, 0);
  CHECK_EQ_I64(fake_stats(&cu).contexts_retained, 0);
  cubert__cuda_loader_close(&cu);
  counting_allocator_destroy(&ca);
}
