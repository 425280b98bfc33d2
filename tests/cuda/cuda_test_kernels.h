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

#endif /* CUBERT_TESTS_CUDA_TEST_KERNELS_H */
