/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/cortex-m0/critical_section.c: the critical-section hook
 * (cubert/critical_section.h) for a single-core Cortex-M0/M0+: interrupts off, the
 * previous PRIMASK restored on exit, so the pair nests safely inside a caller's own
 * interrupt-off region. The "memory" clobbers make both calls compiler barriers; the
 * M0 is in-order with no cache, so no hardware barrier is needed on one core.
 * Used by `make check-cortex-m0`; a host can take it as is (docs/embedding.md).
 */
#include "cubert/critical_section.h"

cubert_critical_state_t cubert_critical_enter(void) {
  uint32_t primask;
  __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask) : : "memory");
  return primask;
}

void cubert_critical_exit(cubert_critical_state_t state) {
  __asm__ volatile("msr primask, %0" : : "r"(state) : "memory");
}
