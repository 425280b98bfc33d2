/* SPDX-License-Identifier: MIT */
/* tests/cuda/test_cuda_comm_support.c: helpers of cuda_comm_test.h (no tests here). */
#include "cuda_comm_test.h"

#include <stdio.h>

int cts_cuda_prepare(char *skip, size_t size);

static char g_skip[CUBERT_ERROR_REASON_SIZE + 64];

void comm_use(int gpu, uint32_t gpus) {
  char n[16];
  uint32_t have = 0;
  if (!gpu) {
    snprintf(n, sizeof n, "%u", (unsigned)gpus);
    fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
    fake_knob("CUBERT_FAKE_CUDA_DEVICES", n);
    if (!getenv("CUBERT_LIBNCCL")) fake_knob("CUBERT_LIBNCCL", FAKE_LIBNCCL);
  } else if (getenv("CUBERT_LIBCUDA") && strstr(getenv("CUBERT_LIBCUDA"), "cuda-fake")) {
    TEST_SKIP("CUDA unavailable: CUBERT_LIBCUDA names the fake driver");
  }
  if (cts_cuda_prepare(g_skip, sizeof g_skip) != 0) TEST_SKIP(g_skip);
  if (gpu) {
    const cubert_nccl_loader_t *nl = NULL;
    cubert_error_t err;
    if (cuda_comm_nccl(&nl, &err) != CUBERT_STATUS_OK) {
      snprintf(g_skip, sizeof g_skip, "%s", err.reason);
      TEST_SKIP(g_skip);
    }
    CHECK_OK(cubert_cuda_device_count(&have, NULL));
    if (have < gpus) {
      snprintf(g_skip, sizeof g_skip,
               "needs %u GPUs, this machine has %u",
               (unsigned)gpus, (unsigned)have);
      TEST_SKIP(g_skip);
    }
  }
}

void comm_open(comm_env_t *e, uint32_t n, uint32_t timeout_ms) { comm_open_on(e, n, timeout_ms, 0); }

void comm_open_on(comm_env_t *e, uint32_t n, uint32_t timeout_ms, uint32_t max_gpus) {
  uint32_t i, gpus = 1;
  CHECK(n <= COMM_MAX);
  memset(e, 0, sizeof *e);
  e->n = n;
  CHECK_OK(cubert_cuda_device_count(&gpus, NULL));
  if (max_gpus && gpus > max_gpus) gpus = max_gpus;
  for (i = 0; i < n; i++) {
    cubert_cuda_options_t o;
    cubert_error_t err;
    char msg[512];
    e->allocator[i] = counting_allocator_initialize(&e->counting[i]);
    cubert_cuda_options_initialize(&o);
    o.device.index = i;
    o.ordinal = i % gpus;
    o.device.max_streams = 8;
    o.collective_timeout_ms = timeout_ms;
    if (cubert_cuda_client_create(e->allocator[i], &o, &e->c[i], &err) != CUBERT_STATUS_OK) {
      cubert_error_format(&err, msg, sizeof msg);
      test_fail(__FILE__, __LINE__, "cannot create CUDA device %u: %s", (unsigned)i, msg);
    }
    e->ids[i] = cubert_client_device(e->c[i]);
  }
}

void comm_close(comm_env_t *e) {
  uint32_t i;
  for (i = 0; i < e->n; i++) {
    if (!e->c[i]) continue;
    cubert_client_release(e->c[i]);
    e->c[i] = NULL;
    CHECK_MSG(e->counting[i].live_blocks == 0, "device %u leaked %lld blocks", (unsigned)i,
              (long long)e->counting[i].live_blocks);
    CHECK_EQ_U64(e->counting[i].bad_frees, 0);
    counting_allocator_destroy(&e->counting[i]);
  }
  CHECK_EQ_U64(cuda_comm_live(), 0);
  CHECK_EQ_U64(cuda_world_live(), 0);
  if (!getenv("CUBERT_LIBCUDA") || !strstr(getenv("CUBERT_LIBCUDA"), "cuda-fake")) return;
  {
    const cubert_nccl_loader_t *nl = NULL;
    if (cuda_comm_nccl(&nl, NULL) == CUBERT_STATUS_OK &&
        cubert__nccl_loader_symbol(nl, "cubert_fake_nccl_stats"))
      CHECK_EQ_I64(comm_nccl_stats().comms_live, 0);
  }
}

cubert_handle_t comm_f32(cubert_client_t *c, const float *v, size_t n) {
  cubert_handle_t h;
  CHECK_OK(cubert_client_create_from_slice(c, v, n * sizeof(float), &h, NULL));
  return h;
}

void comm_read_f32(cubert_client_t *c, const cubert_handle_t *h, float *out, size_t n) {
  CHECK_OK(cubert_client_read_one(c, h, out, n * sizeof(float), NULL));
}

void comm_expect_queued(cubert_client_t *c, cubert_error_kind_t kind, const char *text) {
  cubert_error_t err;
  char msg[1024];
  CHECK_OK(cubert_client_sync_collective(c, NULL));
  CHECK_STATUS(cubert_client_sync(c, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(cubert_error_has_kind(&err, kind), "expected %s in: %s", cubert_error_kind_name(kind),
            msg);
  if (text) CHECK_MSG(strstr(msg, text) != NULL, "expected \"%s\" in: %s", text, msg);
  CHECK_OK(cubert_client_sync(c, NULL)); /* drained */
}

fake_nccl_stats_t comm_nccl_stats(void) {
  const cubert_nccl_loader_t *nl = NULL;
  fake_nccl_stats_t s;
  fake_nccl_stats_fn fn;
  void *sym;
  CHECK_OK(cuda_comm_nccl(&nl, NULL));
  sym = cubert__nccl_loader_symbol(nl, "cubert_fake_nccl_stats");
  CHECK_MSG(sym != NULL, "the loaded NCCL is not the fake");
  memcpy(&fn, &sym, sizeof sym);
  fn(&s);
  return s;
}

fake_cuda_stats_t comm_cuda_stats(void) {
  const cubert_cuda_loader_t *cu = NULL;
  CHECK_OK(cubert__cuda_loader_shared(&cu, NULL));
  return fake_stats(cu);
}

void comm_nccl_async_error(int result) {
  const cubert_nccl_loader_t *nl = NULL;
  fake_nccl_set_async_error_fn fn;
  void *sym;
  CHECK_OK(cuda_comm_nccl(&nl, NULL));
  sym = cubert__nccl_loader_symbol(nl, "cubert_fake_nccl_set_async_error");
  CHECK(sym != NULL);
  memcpy(&fn, &sym, sizeof sym);
  fn(result);
}
