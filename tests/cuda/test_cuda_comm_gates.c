/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_comm_gates.c: what a stream waiting on a gate does to
 * the CUDA driver (backend-cuda/comm/cuda_comm_setup.c). Seen on two H200s: while
 * a stream of a context waits on a gate word, cuModuleLoadData, cuMemFree
 * and NCCL's kernel loading and connection set-up wait for the context to
 * drain, holding a lock that the gate's opener needs: the in-process
 * all_reduce made its NCCL communicators under the first member's gate and
 * hung. The fake libcuda models the wait (fake_context_drain; it gives up
 * after CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS where the real driver deadlocks),
 * the fake libnccl drains as NCCL does, and these tests check that no drain
 * ever meets a closed gate of the collectives.
 */
#include "cuda_comm_test.h"
#include "cubert/cube.h"
#include "cuda_test_kernels.h"

#include <string.h>
#include <time.h>

static const float k_v[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static uint64_t now_ms(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Device 1 posts first (its stream waits on its gate), device 0 completes
 * the round: the communicators were made and connected at device 1's post,
 * before its gate, so nothing drains behind a closed gate. */
TEST(cuda_comm_nccl_is_set_up_before_the_first_gate) {
  comm_env_t e;
  cubert_handle_t h[2];
  float out[8];
  uint32_t i, k;
  fake_cuda_stats_t c;
  fake_nccl_stats_t n;
  uint64_t t0;
  comm_use(0, 2);
  fake_knob("CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS", "3000");
  comm_open(&e, 2, 0);
  for (i = 0; i < 2; i++) {
    float v[8];
    for (k = 0; k < 8; k++) v[k] = (float)(i * 10 + k);
    h[i] = comm_f32(e.c[i], v, 8);
  }
  t0 = now_ms();
  for (i = 2; i-- > 0;)
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
    CHECK_OK(cubert_client_sync(e.c[i], NULL));
    comm_read_f32(e.c[i], &h[i], out, 8);
    for (k = 0; k < 8; k++) CHECK(out[k] == 10.0f + 2.0f * (float)k);
  }
  CHECK_MSG(now_ms() - t0 < 2000, "the round took %llu ms", (unsigned long long)(now_ms() - t0));
  c = comm_cuda_stats();
  n = comm_nccl_stats();
  CHECK(c.context_drains >= 4); /* kernels and connections of both GPUs */
  CHECK_EQ_U64(c.context_drains_waited, 0);
  CHECK_EQ_U64(n.init_all, 1);
  CHECK_EQ_U64(n.group_ends, 1 + 2); /* the round, and the two first collectives */
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

/* The fake's model itself: a cuMemFree in a context whose stream waits on
 * a gate that nobody opens gives up with CUDA_ERROR_TIMEOUT (a real driver
 * blocks for good), and counts the drain that waited. */
TEST(cuda_comm_fake_drain_waits_for_a_closed_gate) {
  const cubert_cuda_loader_t *cu = NULL;
  CUcontext ctx = NULL;
  CUdevice dev = 0;
  CUstream s = NULL;
  CUdeviceptr word = 0, other = 0;
  fake_cuda_stats_t before, after;
  uint64_t t0;
  comm_use(0, 2);
  fake_knob("CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS", "200");
  CHECK_OK(cubert__cuda_loader_shared(&cu, NULL));
  CHECK(cu->cuDeviceGet(&dev, 1) == CUDA_SUCCESS);
  CHECK(cu->cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
  CHECK(cu->cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  CHECK(cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cu->cuMemAlloc(&word, 64) == CUDA_SUCCESS);
  CHECK(cu->cuMemAlloc(&other, 64) == CUDA_SUCCESS);
  memset((void *)(uintptr_t)word, 0, 64);
  before = comm_cuda_stats();
  CHECK(cu->cuStreamWaitValue32(s, word, 1, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
  t0 = now_ms();
  CHECK(cu->cuMemFree(other) == CUDA_ERROR_TIMEOUT);
  CHECK(now_ms() - t0 >= 150);
  after = comm_cuda_stats();
  CHECK_EQ_U64(after.context_drains_waited - before.context_drains_waited, 1);
  *(volatile uint32_t *)(uintptr_t)word = 1; /* opened: the free goes through */
  CHECK(cu->cuMemFree(other) == CUDA_SUCCESS);
  CHECK(cu->cuMemFree(word) == CUDA_SUCCESS);
  CHECK(cu->cuStreamDestroy(s) == CUDA_SUCCESS);
  CHECK(cu->cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
  CHECK(cu->cuDevicePrimaryCtxRelease(dev) == CUDA_SUCCESS);
}

/* A round that never completes (device 1 does not post): the watchdog
 * aborts the communicator. The gates are opened before ncclCommAbort, whose
 * frees would otherwise drain behind device 0's closed gate. */
TEST(cuda_comm_abort_opens_the_gates_before_nccl_frees) {
  comm_env_t e;
  cubert_handle_t h[2];
  uint32_t i;
  uint64_t t0;
  comm_use(0, 2);
  fake_knob("CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS", "3000");
  comm_open(&e, 2, 100);
  for (i = 0; i < 2; i++) h[i] = comm_f32(e.c[i], k_v, 8);
  for (i = 0; i < 2; i++) /* the communicators made and used */
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
  t0 = now_ms();
  CHECK_OK(cubert_client_all_reduce(e.c[0], &h[0], &h[0], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  comm_expect_queued(e.c[0], CUBERT_ERROR_DEADLINE_EXCEEDED, "collective timeout");
  CHECK_MSG(now_ms() - t0 < 2000, "the abort took %llu ms", (unsigned long long)(now_ms() - t0));
  { /* the watchdog queues the errors first, then aborts NCCL: wait for it (bounded) */
    struct timespec tick = {0, 1000000};
    uint64_t t1 = now_ms();
    while (comm_nccl_stats().aborts < 2 && now_ms() - t1 < 5000) nanosleep(&tick, NULL);
  }
  CHECK_EQ_U64(comm_cuda_stats().context_drains_waited, 0);
  CHECK_EQ_U64(comm_nccl_stats().aborts, 2);
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e);
}

/* ---- a lost GPU ------------------------------------------------------------------------------ */

static const char k_fault_ptx[] = "// fake\n.visible .entry fake_fault(\n)\n{\n}\n";

/* Device 1 posts an all_reduce its peer never joins; then a kernel of
 * device 0 faults. One sticky error loses the process's CUDA state (the
 * driver fails every context): device 1's collective ends with the loss,
 * naming the first cause, at once rather than at the collective timeout
 * (60 s), and both devices go away without hanging or leaking. */
static void loss_body(int gpu) {
  comm_env_t e;
  cubert_handle_t h[2];
  cubert_kernel_t fault;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  uint64_t address = 16; /* nothing is mapped there */
  cubert_error_t err;
  uint32_t i;
  uint64_t t0;
  CUBERT_KERNEL_DESCRIPTOR(poke, cuda_test_poke_u32, 0, 1, 0, 1, 1, 1);
  comm_use(gpu, 2);
  comm_open(&e, 2, 0);
  fault = poke;
  if (!gpu) {
    fault.cuda_entry_name = "fake_fault";
    fault.cuda_image = k_fault_ptx;
    fault.cuda_image_size = sizeof k_fault_ptx;
  }
  for (i = 0; i < 2; i++) h[i] = comm_f32(e.c[i], k_v, 8);
  for (i = 0; i < 2; i++) /* the communicators made and used */
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_sync_collective(e.c[i], NULL));
  CHECK_OK(cubert_client_all_reduce(e.c[1], &h[1], &h[1], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  t0 = now_ms();
  cubert_launch_arguments_initialize(&args);
  args.buffers = NULL;
  args.buffer_count = 0;
  args.scalars = &address;
  args.scalar_count = 1;
  CHECK_OK(cubert_client_launch(e.c[0], &fault, &one, &args, NULL));
  CHECK_STATUS(cubert_client_sync(e.c[0], &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_MSG(strstr(err.reason, "CUDA device 0 lost: ") == err.reason, "%s", err.reason);
  (void)cubert_client_sync_collective(e.c[1], NULL);
  CHECK_STATUS(cubert_client_sync(e.c[1], &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_MSG(strstr(err.reason, "CUDA device 0 lost first") != NULL, "%s", err.reason);
  CHECK_MSG(strstr(err.reason, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s", err.reason);
  CHECK_MSG(now_ms() - t0 < 10000, "the loss took %llu ms to reach device 1",
            (unsigned long long)(now_ms() - t0));
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  comm_close(&e); /* no hang; every allocator back to 0 */
}

TEST(cuda_comm_lost_gpu_ends_the_peers_collective) { loss_body(0); }
TEST(cuda_gpu_comm_lost_gpu_ends_the_peers_collective) { loss_body(1); }
