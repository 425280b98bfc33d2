/* tests/cts/cts_kernels.h: conformance-suite kernels in the portable dialect. */
#ifndef CUBERT_CTS_KERNELS_H
#define CUBERT_CTS_KERNELS_H

#include "cubert/kernel.h"

#define CTS_BLOCK 64

/* The dummy server's DummyElementwiseAddition (spec 11.12): bytes. */
CUBERT_KERNEL(cts_add_u8) {
  CUBERT_BUFFER(const uint8_t, lhs, 0);
  CUBERT_BUFFER(const uint8_t, rhs, 1);
  CUBERT_BUFFER(uint8_t, out, 2);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(lhs)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, (uint8_t)(CUBERT_LOAD(lhs, i) + CUBERT_LOAD(rhs, i)));
  }
}

/* buf[i] += delta for i < len(buf). */
CUBERT_KERNEL(cts_add_scalar_u32) {
  CUBERT_BUFFER(uint32_t, buf, 0);
  CUBERT_SCALAR_U32(delta, 0);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(buf)) CUBERT_UNIT_DONE;
    CUBERT_STORE(buf, i, CUBERT_LOAD(buf, i) + delta);
  }
}

/* dst[i] = src[i] * 2 */
CUBERT_KERNEL(cts_double_u32) {
  CUBERT_BUFFER(const uint32_t, src, 0);
  CUBERT_BUFFER(uint32_t, dst, 1);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(dst)) CUBERT_UNIT_DONE;
    CUBERT_STORE(dst, i, CUBERT_LOAD(src, i) * 2u);
  }
}

/* dst[i] = dst[i] * 3 + src[i] (order-sensitive: the simulation drivers
 * tools/cubert_sim.c and fuzz/fuzz_sim_schedule.c use it). */
CUBERT_KERNEL(cts_mix_u32) {
  CUBERT_BUFFER(const uint32_t, src, 0);
  CUBERT_BUFFER(uint32_t, dst, 1);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(dst)) CUBERT_UNIT_DONE;
    CUBERT_STORE(dst, i, CUBERT_LOAD(dst, i) * 3u + CUBERT_LOAD(src, i));
  }
}

/* Writes one element past the end of its buffer (index = len). */
CUBERT_KERNEL(cts_oob_write_u32) {
  CUBERT_BUFFER(uint32_t, buf, 0);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) CUBERT_STORE(buf, CUBERT_LEN(buf), 7u);
  }
}

CUBERT_KERNEL_DESCRIPTOR_RO(cts_add_u8_kernel, cts_add_u8, 3, 0, 0, CTS_BLOCK, 1, 1, 0x3u);
CUBERT_KERNEL_DESCRIPTOR(cts_add_scalar_kernel, cts_add_scalar_u32, 1, 1, 0, CTS_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR_RO(cts_double_kernel, cts_double_u32, 2, 0, 0, CTS_BLOCK, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR(cts_oob_kernel, cts_oob_write_u32, 1, 0, 0, CTS_BLOCK, 1, 1);
/* Too many units per cube for any device (spec 11.14 limit test). */
CUBERT_KERNEL_DESCRIPTOR(cts_huge_cube_kernel, cts_add_scalar_u32, 1, 1, 0, 1024, 2, 1);

#endif
