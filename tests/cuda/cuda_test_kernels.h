/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/cuda_test_kernels.h: kernels only the CUDA tests launch,
 * compiled by nvcc into an image in a CUDA=1 build (docs/kernels.md).
 */
#ifndef CUBERT_TESTS_CUDA_TEST_KERNELS_H
#define CUBERT_TESTS_CUDA_TEST_KERNELS_H

#include "cubert/kernel.h"

/* Unit 0 of cube 0 stores 1 at the device address in scalar slot 0 (u64):
 * given an address no allocation holds, an illegal-address fault that
 * loses the device. On the CPU it does nothing (never run it there). */
CUBERT_KERNEL(cuda_test_poke_u32) {
  CUBERT_SCALAR_U64(address, 0);
  CUBERT_PHASE {
#if defined(__CUDACC__)
    if (UNIT_POS == 0 && CUBE_POS == 0) *(volatile uint32_t *)(uintptr_t)address = 1u;
#else
    (void)address;
#endif
  }
}

/* Unit 0 of each cube takes a ticket (atomic add on counter[0]) and stores
 * it at order[CUBE_POS]: the order the cubes ran in (the fake libcuda's cube
 * order, tests/cuda/test_cuda_fake_user.c). Buffers: counter, order. */
CUBERT_KERNEL(cuda_test_ticket_u32) {
  CUBERT_BUFFER(uint32_t, counter, 0);
  CUBERT_BUFFER(uint32_t, order, 1);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS < CUBERT_LEN(order))
      CUBERT_STORE(order, CUBE_POS, CUBERT_ATOMIC_ADD(counter, 0, 1u));
  }
}

#endif /* CUBERT_TESTS_CUDA_TEST_KERNELS_H */
