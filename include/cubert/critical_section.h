/* SPDX-License-Identifier: MIT */
/*
 * cubert/critical_section.h: the critical-section hook, for targets without atomic
 * read-modify-write instructions (Cortex-M0/M0+ and other ARMv6-M cores, RISC-V cores
 * without the A extension). docs/embedding.md shows implementations.
 *
 * When the core is compiled with CUBERT_ATOMIC_CRITICAL_SECTION=1 (every core/ file;
 * the flag changes nothing else), each of its atomic operations (load, store,
 * fetch-add/sub/and/or, compare-exchange on 32-bit and pointer values) becomes plain
 * memory accesses between one cubert_critical_enter() and the matching
 * cubert_critical_exit(). The host provides both functions; the core then needs no
 * __atomic_* or __sync_* library call. Without the flag nothing here is used.
 *
 * The contract the host's implementation keeps:
 *  - between enter and exit, no other context that calls into the core runs: on a
 *    single-core microcontroller, save PRIMASK and disable interrupts (cpsid i), then
 *    restore; under an RTOS, a scheduler lock (or a mutex when no interrupt handler
 *    calls into the core);
 *  - both calls are full memory barriers (compiler and hardware): an out-of-line call
 *    is a compiler barrier; an inline one needs a "memory" clobber;
 *  - the core never nests them and calls nothing between the two, so a section lasts
 *    a few instructions; enter's return value is passed to exit unchanged (e.g. the
 *    saved interrupt mask);
 *  - callable from every context that calls into the core (threads, interrupt
 *    handlers when the host calls cubert there).
 * Neither function may call into cubert.
 */
#ifndef CUBERT_CRITICAL_SECTION_H
#define CUBERT_CRITICAL_SECTION_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* Saved state (interrupt mask, lock token) handed from enter to exit. */
typedef uint32_t cubert_critical_state_t;

/* Provided by the host (not by libcubert). Enters the critical section; returns the
 * state exit restores. */
cubert_critical_state_t cubert_critical_enter(void);

/* Provided by the host. Leaves the section entered by the enter that returned `state`. */
void cubert_critical_exit(cubert_critical_state_t state);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CRITICAL_SECTION_H */
