/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/cts_kernels.h: the conformance suite's own kernels (the rest
 * come from the kernel library, examples/kernels/cubert_kernels.h). One
 * source for every device: compiled as C into the tests and, in a CUDA=1
 * build, by nvcc into the image the CUDA device finds them in
 * (docs/kernels.md). Every function here is static: include it where the
 * descriptors are made.
 */
#ifndef CUBERT_TESTS_CTS_KERNELS_H
#define CUBERT_TESTS_CTS_KERNELS_H

#include "cubert/kernel.h"

#if !defined(__CUDACC__)
#include <time.h>
#endif

/* How long cts_sleep_u32 sleeps. */
#define CTS_SLEEP_MS 20

/* Sleep about `ms` milliseconds (one unit). */
#if defined(__CUDACC__)
static __device__ void cts_sleep_ms_(unsigned ms) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(100000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < (unsigned long long)ms * 1000000ull);
}
#elif defined(CUBERT_CTS_INLINE_ONLY) && CUBERT_CTS_INLINE_ONLY
/* the embedded CTS (no OS): the virtual clock of tests/cts/cts.c moves on */
void cts_sleep_ms(uint32_t ms);
static void cts_sleep_ms_(unsigned ms) { cts_sleep_ms(ms); }
#else
static void cts_sleep_ms_(unsigned ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000u);
  ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
  nanosleep(&ts, NULL);
}
#endif

/* Unit 0 of cube 0 sleeps CTS_SLEEP_MS, then buf[0] += 1. */
CUBERT_KERNEL(cts_sleep_u32) {
  CUBERT_BUFFER(uint32_t, buf, 0);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) {
      cts_sleep_ms_(CTS_SLEEP_MS);
      CUBERT_STORE(buf, 0, CUBERT_LOAD(buf, 0) + 1u);
    }
  }
}

/* Unit 0 of cube 0: out[0] = buf[len] (out-of-bounds read), then
 * buf[len] = 77 (out-of-bounds write), then out[1] = 1 (proof it ran). */
CUBERT_KERNEL(cts_oob_rw_u32) {
  CUBERT_BUFFER(uint32_t, buf, 0);
  CUBERT_BUFFER(uint32_t, out, 1);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) {
      CUBERT_STORE(out, 0, CUBERT_LOAD(buf, CUBERT_LEN(buf)));
      CUBERT_STORE(buf, CUBERT_LEN(buf), 77u);
      CUBERT_STORE(out, 1, 1u);
    }
  }
}

/* Unit 0 of cube 0: buf[0] += 1. */
CUBERT_KERNEL(cts_nop) {
  CUBERT_BUFFER(uint32_t, buf, 0);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) CUBERT_STORE(buf, 0, CUBERT_LOAD(buf, 0) + 1u);
  }
}

#endif /* CUBERT_TESTS_CTS_KERNELS_H */
