/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/cuda_test.h: helpers of the CUDA driver's tests. Most tests
 * run the driver against the fake driver (fake_libcuda.h) built next to
 * the test binary; the GPU tests (test_cuda_gpu.c) load the real
 * libcuda.so.1 and print "skipped: <reason>" where there is none.
 */
#ifndef CUBERT_TESTS_CUDA_TEST_H
#define CUBERT_TESTS_CUDA_TEST_H

#include "counting_allocator.h"
#include "device/cuda_device.h"
#include "fake_libcuda.h"
#include "test.h"

#ifndef CUBERT_TEST_BUILD_DIR
#define CUBERT_TEST_BUILD_DIR "build/cuda"
#endif
#define FAKE_LIBCUDA CUBERT_TEST_BUILD_DIR "/cuda-fake/libcuda.so.1"
#define FAKE_LIBCUDA_NO_GET_PROC CUBERT_TEST_BUILD_DIR "/cuda-fake-nogpa/libcuda.so.1"

/* Everything a fake-driver test holds. */
typedef struct fake_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  cubert_cuda_loader_t cu;
  cubert_cuda_device_t *device;
  cubert_cuda_stream_t stream;
} fake_env_t;

/* Open the fake driver (knobs must be set before), device 0 and a stream. */
void fake_env_open(fake_env_t *env);
/* Close them and check nothing leaked: the counting allocator, and in the
 * fake: device memory, pinned memory, events, streams, modules, contexts. */
void fake_env_close(fake_env_t *env);
/* The fake's counters. */
fake_cuda_stats_t fake_stats(const cubert_cuda_loader_t *cu);
/* Set an environment knob (CHECKs setenv). */
void fake_knob(const char *name, const char *value);

/* A kernel descriptor over `entry` with `image` (NULL: the registry). */
cubert_kernel_t fake_kernel(const char *entry, const char *image, uint32_t dim_x,
                            uint32_t buffers, uint32_t scalars);

/* The error record's reason contains `text`. */
#define CHECK_REASON_HAS(err, text)                                                      \
  CHECK_MSG(strstr((err).reason, (text)) != NULL, "reason \"%s\" lacks \"%s\"",         \
            (err).reason, (text))

#endif /* CUBERT_TESTS_CUDA_TEST_H */
