/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_device.c: device open / close, memory, copies and
 * streams of the CUDA device layer, over the fake driver.
 */
#include "cuda_test.h"

TEST(cuda_device_open_close_leaves_nothing) {
  fake_env_t env;
  cubert_device_properties_t p;
  fake_cuda_stats_t s;
  fake_env_open(&env);
  s = fake_stats(&env.cu);
  CHECK_EQ_I64(s.contexts_retained, 1);
  CHECK_EQ_U64(s.streams_created, 1);
  CHECK(env.device->async_alloc);
  cubert__cuda_device_properties(env.device, &p);
  CHECK_EQ_STR(p.name, "Fake CUDA Device 0");
  CHECK_EQ_U64(p.memory.alignment, CUBERT_CUDA_MEMORY_ALIGNMENT);
  CHECK(!cubert__cuda_device_is_lost(env.device));
  fake_env_close(&env);
}

TEST(cuda_device_open_errors) {
  counting_allocator_t ca;
  cubert_allocator_t a = counting_allocator_initialize(&ca);
  cubert_cuda_loader_t cu;
  cubert_cuda_device_t *d = NULL;
  cubert_error_t err;
  CHECK_OK(cubert__cuda_loader_open(FAKE_LIBCUDA, &cu, &err));
  CHECK_STATUS(cubert__cuda_device_open(&cu, 1, a, &d, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert__cuda_device_open(NULL, 0, a, &d, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_device_open(&cu, 0, a, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  /* every allocation the open makes can fail, and then nothing is left behind */
  {
    uint64_t n;
    for (n = 1; n < 8; n++) {
      cubert_status_t st;
      counting_allocator_fail_at(&ca, n, 0);
      st = cubert__cuda_device_open(&cu, 0, a, &d, &err);
      if (st == CUBERT_STATUS_OK) {
        cubert__cuda_device_close(d);
        break;
      }
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK_EQ_I64(ca.live_blocks, 0);
      CHECK_EQ_I64(fake_stats(&cu).contexts_retained, 0);
      CHECK_EQ_I64(fake_stats(&cu).host_bytes_live, 0);
    }
    CHECK_MSG(n > 1, "the first allocation did not fail");
  }
  CHECK_EQ_I64(ca.live_blocks, 0);
  CHECK_EQ_I64(fake_stats(&cu).contexts_retained, 0);
  cubert__cuda_loader_close(&cu);
  counting_allocator_destroy(&ca);
}

TEST(cuda_memory_alloc_free_async) {
  fake_env_t env;
  cubert_error_t err;
  CUdeviceptr p = 0, q = 0;
  fake_cuda_stats_t s;
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, 1000, &p, &err));
  CHECK(p != 0);
  CHECK_EQ_U64(p % 512, 0);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, 1, &q, &err));
  s = fake_stats(&env.cu);
  CHECK_EQ_U64(s.mem_alloc_async, 2);
  CHECK_EQ_U64(s.mem_alloc_sync, 0);
  CHECK_EQ_I64(s.device_bytes_live, 1024 + 512); /* sizes rounded up to 512 */
  CHECK_OK(cubert__cuda_memory_free(&env.stream, p, &err));
  CHECK_OK(cubert__cuda_memory_free(&env.stream, q, &err));
  CHECK_OK(cubert__cuda_memory_free(&env.stream, 0, &err)); /* no-op */
  s = fake_stats(&env.cu);
  CHECK_EQ_U64(s.mem_free_async, 2);
  /* bad input */
  CHECK_STATUS(cubert__cuda_memory_alloc(&env.stream, 0, &p, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_memory_alloc(&env.stream, 64, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_memory_alloc(NULL, 64, &p, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_memory_alloc(&env.stream, UINT64_MAX, &p, &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  fake_env_close(&env);
}

TEST(cuda_memory_without_pools_uses_cuMemAlloc) {
  fake_env_t env;
  cubert_error_t err;
  CUdeviceptr p = 0;
  fake_cuda_stats_t s;
  fake_knob("CUBERT_FAKE_CUDA_NO_POOLS", "1");
  fake_env_open(&env);
  CHECK(!env.device->async_alloc);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, 4096, &p, &err));
  CHECK_OK(cubert__cuda_memory_free(&env.stream, p, &err));
  s = fake_stats(&env.cu);
  CHECK_EQ_U64(s.mem_alloc_sync, 1);
  CHECK_EQ_U64(s.mem_free_sync, 1);
  CHECK_EQ_U64(s.mem_alloc_async, 0);
  fake_env_close(&env);
}

typedef struct reclaim_t {
  cubert_cuda_stream_t *stream;
  CUdeviceptr held;
  int calls;
} reclaim_t;

static void reclaim_free(void *user) {
  reclaim_t *r = (reclaim_t *)user;
  r->calls++;
  CHECK_OK(cubert__cuda_memory_free(r->stream, r->held, NULL));
  r->held = 0;
}

TEST(cuda_memory_out_of_memory_and_retry) {
  fake_env_t env;
  cubert_error_t err;
  CUdeviceptr p = 7, q = 0;
  reclaim_t r;
  fake_knob("CUBERT_FAKE_CUDA_MEMORY", "1048576");
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, 768 * 1024, &q, &err));
  /* the driver's OUT_OF_MEMORY: IoError::OutOfMemory with the size, nothing allocated */
  CHECK_STATUS(cubert__cuda_memory_alloc(&env.stream, 512 * 1024, &p, &err),
               CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_OUT_OF_MEMORY);
  CHECK_EQ_U64(err.field[0], 512 * 1024);
  CHECK_EQ_I64(err.driver_code, CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_REASON_HAS(err, "cuMemAllocAsync failed: CUDA_ERROR_OUT_OF_MEMORY");
  CHECK_EQ_U64(p, 7);
  CHECK_EQ_I64(fake_stats(&env.cu).device_allocs_live, 1);
  /* reclaim-and-retry: the reclaim frees the held block, the retry fits */
  r.stream = &env.stream;
  r.held = q;
  r.calls = 0;
  CHECK_OK(cubert__cuda_memory_alloc_retry(&env.stream, 512 * 1024, reclaim_free, &r, &p, &err));
  CHECK_EQ_I64(r.calls, 1);
  /* a retry that cannot help still fails, once */
  CHECK_STATUS(cubert__cuda_memory_alloc_retry(&env.stream, 900 * 1024, reclaim_free, &r, &q, &err),
               CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_I64(r.calls, 2);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, p, &err));
  fake_env_close(&env);
}

TEST(cuda_memory_set_and_info) {
  fake_env_t env;
  cubert_error_t err;
  CUdeviceptr p = 0;
  unsigned char host[64];
  uint64_t free_bytes = 0, total = 0;
  size_t i;
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, sizeof host, &p, &err));
  CHECK_OK(cubert__cuda_memory_set(&env.stream, p, 0xab, sizeof host, &err));
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, host, p, sizeof host, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  for (i = 0; i < sizeof host; i++) CHECK_EQ_U64(host[i], 0xab);
  CHECK_OK(cubert__cuda_memory_info(env.device, &free_bytes, &total, &err));
  CHECK_EQ_U64(total, 256u << 20);
  CHECK_EQ_U64(free_bytes, (256u << 20) - 512);
  CHECK_STATUS(cubert__cuda_memory_set(&env.stream, 0, 1, 4, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_memory_info(env.device, NULL, &total, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, p, &err));
  fake_env_close(&env);
}

TEST(cuda_host_memory) {
  fake_env_t env;
  cubert_error_t err;
  void *p = NULL;
  fake_knob("CUBERT_FAKE_CUDA_HOST_MEMORY", "1048576");
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_host_alloc(env.device, 4096, &p, &err));
  memset(p, 1, 4096);
  cubert__cuda_host_free(env.device, p);
  cubert__cuda_host_free(env.device, NULL);
  CHECK_STATUS(cubert__cuda_host_alloc(env.device, 2u << 20, &p, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
  CHECK_EQ_U64(err.field[0], 2u << 20);
  CHECK_STATUS(cubert__cuda_host_alloc(env.device, 0, &p, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  fake_env_close(&env);
}

TEST(cuda_copy_1d_round_trip) {
  fake_env_t env;
  cubert_error_t err;
  CUdeviceptr a = 0, b = 0;
  uint32_t in[300], out[300];
  size_t i;
  fake_cuda_stats_t s;
  fake_env_open(&env);
  for (i = 0; i < 300; i++) in[i] = (uint32_t)(i * 2654435761u);
  memset(out, 0, sizeof out);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, sizeof in, &a, &err));
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, sizeof in, &b, &err));
  CHECK_OK(cubert__cuda_copy_h2d(&env.stream, a, in, sizeof in, &err));
  CHECK_OK(cubert__cuda_copy_d2d(&env.stream, b, a, sizeof in, &err));
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, out, b, sizeof out, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  CHECK(memcmp(in, out, sizeof in) == 0);
  /* empty copies do nothing; NULL pointers are refused */
  CHECK_OK(cubert__cuda_copy_h2d(&env.stream, 0, NULL, 0, &err));
  CHECK_STATUS(cubert__cuda_copy_h2d(&env.stream, a, NULL, 4, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_copy_d2h(&env.stream, NULL, a, 4, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_copy_d2d(&env.stream, 0, a, 4, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_copy_h2d(NULL, a, in, 4, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  s = fake_stats(&env.cu);
  CHECK_EQ_U64(s.copies_h2d, 1);
  CHECK_EQ_U64(s.copies_d2d, 1);
  CHECK_EQ_U64(s.copies_d2h, 1);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, a, &err));
  CHECK_OK(cubert__cuda_memory_free(&env.stream, b, &err));
  fake_env_close(&env);
}

/* A [5, 7] f32 tensor written to a pitched buffer (rows 512 bytes apart, as
 * the pitched policy lays it out), then read back packed. */
TEST(cuda_copy_pitched_round_trip) {
  fake_env_t env;
  cubert_error_t err;
  CUdeviceptr d = 0;
  float in[35], out[35], row[128];
  uint64_t shape[2] = {5, 7}, strides[2] = {128, 1};
  cubert_copy_plan_t plan;
  cubert_cuda_copy_2d_t c;
  size_t i;
  fake_env_open(&env);
  for (i = 0; i < 35; i++) in[i] = (float)i + 0.25f;
  CHECK_OK(cubert_copy_plan(2, shape, strides, 4, &plan, &err));
  CHECK(plan.pitched);
  CHECK_EQ_U64(plan.src_pitch_bytes, 512);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, plan.span_bytes, &d, &err));
  CHECK_OK(cubert__cuda_memory_set(&env.stream, d, 0xff, plan.span_bytes, &err));
  CHECK_OK(cubert__cuda_copy_planned(&env.stream, &plan, true, in, d, &err));
  /* the device rows are pitched: row 1 starts 512 bytes in, its padding untouched */
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, row, d + 512, sizeof row, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  for (i = 0; i < 7; i++) CHECK(row[i] == in[7 + i]);
  {
    uint32_t bits;
    memcpy(&bits, &row[7], 4);
    CHECK_EQ_U64(bits, 0xffffffffu);
  }
  memset(out, 0, sizeof out);
  CHECK_OK(cubert__cuda_copy_planned(&env.stream, &plan, false, out, d, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  CHECK(memcmp(in, out, sizeof in) == 0);
  CHECK_EQ_U64(fake_stats(&env.cu).copies_2d, 2);
  /* a contiguous plan is one linear copy */
  strides[0] = 7;
  CHECK_OK(cubert_copy_plan(2, shape, strides, 4, &plan, &err));
  CHECK(!plan.pitched);
  CHECK_OK(cubert__cuda_copy_planned(&env.stream, &plan, false, out, d, &err));
  CHECK_EQ_U64(fake_stats(&env.cu).copies_2d, 2);
  /* bad 2-D copies */
  memset(&c, 0, sizeof c);
  c.kind = CUBERT_CUDA_COPY_H2D;
  c.src_host = in;
  c.dst_device = d;
  c.width_bytes = 28;
  c.height = 5;
  c.src_pitch = 28;
  c.dst_pitch = 16; /* below the width */
  CHECK_STATUS(cubert__cuda_copy_2d(&env.stream, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  c.dst_pitch = 512;
  c.src_host = NULL;
  CHECK_STATUS(cubert__cuda_copy_2d(&env.stream, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  c.src_host = in;
  c.kind = (cubert_cuda_copy_kind_t)9;
  CHECK_STATUS(cubert__cuda_copy_2d(&env.stream, &c, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  c.kind = CUBERT_CUDA_COPY_H2D;
  c.height = UINT64_MAX;
  CHECK_STATUS(cubert__cuda_copy_2d(&env.stream, &c, &err), CUBERT_STATUS_OVERFLOW);
  c.height = 0;
  CHECK_OK(cubert__cuda_copy_2d(&env.stream, &c, &err)); /* empty */
  CHECK_STATUS(cubert__cuda_copy_2d(&env.stream, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(fake_stats(&env.cu).copies_2d, 2);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, d, &err));
  fake_env_close(&env);
}

TEST(cuda_stream_error_queue) {
  fake_env_t env;
  cubert_error_t err, e1, e2;
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_stream_drain_errors(&env.stream, &err));
  cubert_error_set(&e1, CUBERT_ERROR_IO_UNKNOWN, NULL, 0, "first");
  cubert_error_set(&e2, CUBERT_ERROR_LAUNCH_UNKNOWN, NULL, 0, "second");
  cubert__cuda_stream_queue_error(&env.stream, &e1);
  cubert__cuda_stream_queue_error(&env.stream, &e2);
  cubert__cuda_stream_queue_error(&env.stream, NULL);
  CHECK_STATUS(cubert__cuda_stream_drain_errors(&env.stream, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 2);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNKNOWN);
  CHECK_REASON_HAS(err, "second");
  /* drained */
  CHECK_OK(cubert__cuda_stream_drain_errors(&env.stream, &err));
  CHECK_STATUS(cubert__cuda_stream_drain_errors(NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_stream_synchronize(NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_stream_initialize(NULL, &env.stream, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  fake_env_close(&env);
}

TEST(cuda_device_context_made_current_once_per_thread) {
  fake_env_t env;
  cubert_error_t err;
  uint64_t before;
  int i;
  fake_env_open(&env);
  before = fake_stats(&env.cu).ctx_set_current_calls;
  for (i = 0; i < 10; i++) CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  CHECK_EQ_U64(fake_stats(&env.cu).ctx_set_current_calls, before);
  fake_env_close(&env);
}
