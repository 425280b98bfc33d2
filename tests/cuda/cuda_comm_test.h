/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/cuda_comm_test.h: helpers of the CUDA collectives' tests
 * (test_cuda_comm*.c): CUDA devices over the fake libcuda with a chosen
 * number of fake GPUs and the fake libnccl (every test is its own process,
 * so the process-wide loaders open what the test's knobs name), or on the
 * machine's GPUs with libnccl.so.2.
 */
#ifndef CUBERT_TESTS_CUDA_COMM_TEST_H
#define CUBERT_TESTS_CUDA_COMM_TEST_H

#include "comm/cuda_comm.h"
#include "cuda_test.h"
#include "cubert/cuda.h"
#include "fake_libnccl.h"

#define FAKE_LIBNCCL CUBERT_TEST_BUILD_DIR "/cuda-fake-nccl/libnccl.so.2"
#define FAKE_LIBNCCL_OLD CUBERT_TEST_BUILD_DIR "/cuda-fake-nccl-old/libnccl.so.2"
#define FAKE_LIBNCCL_NO_SEND CUBERT_TEST_BUILD_DIR "/cuda-fake-nccl-nosend/libnccl.so.2"

#define COMM_MAX 8

typedef struct comm_env_t {
  uint32_t n;
  int gpu; /* the machine's GPUs and libnccl.so.2 */
  counting_allocator_t counting[COMM_MAX];
  cubert_allocator_t allocator[COMM_MAX];
  cubert_client_t *c[COMM_MAX];
  cubert_device_id_t ids[COMM_MAX];
} comm_env_t;

/* The fake libcuda with `gpus` GPUs and the fake libnccl (gpu 0), or the
 * machine's (gpu 1: skipped without a GPU, or with fewer than `gpus`). */
void comm_use(int gpu, uint32_t gpus);
/* n CUDA devices, indices 0..n-1 on GPU index % GPUs, with the collective
 * timeout (0: the default). comm_use first. */
void comm_open(comm_env_t *e, uint32_t n, uint32_t timeout_ms);
/* The same on the first max_gpus GPUs only (0: all of them). */
void comm_open_on(comm_env_t *e, uint32_t n, uint32_t timeout_ms, uint32_t max_gpus);
/* Release them; every allocator back to 0, no communicator left (and, on
 * the fake, no NCCL communicator). */
void comm_close(comm_env_t *e);
/* An f32 buffer on c / read it back. */
cubert_handle_t comm_f32(cubert_client_t *c, const float *v, size_t n);
void comm_read_f32(cubert_client_t *c, const cubert_handle_t *h, float *out, size_t n);
/* The next sync of c (after sync_collective) reports an error of `kind`
 * whose text holds `text` (NULL: any). */
void comm_expect_queued(cubert_client_t *c, cubert_error_kind_t kind, const char *text);
/* The fakes' counters (through the process-wide loaders). */
fake_nccl_stats_t comm_nccl_stats(void);
fake_cuda_stats_t comm_cuda_stats(void);
/* The fake libnccl's async error injection. */
void comm_nccl_async_error(int result);

#endif /* CUBERT_TESTS_CUDA_COMM_TEST_H */
