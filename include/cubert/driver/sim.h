/* SPDX-License-Identifier: MIT */
/*
 * cubert/driver/sim.h: the server's side of deterministic simulation
 * (docs/simulation.md): a deterministic server asks its chooser
 * (cubert/sim.h) at every choice point and folds every step into the trace
 * hash. Not thread-safe (the server's simulation lock). Nothing blocks.
 * Compiled out (CUBERT_CONFIG_SIMULATION 0): cubert_sim_choose returns 0 and
 * cubert_sim_trace does nothing.
 */
#ifndef CUBERT_DRIVER_SIM_H
#define CUBERT_DRIVER_SIM_H

#include "cubert/sim.h"

CUBERT_EXTERN_C_BEGIN

/* Pick one of n runnable steps: 0..n-1. ids (may be NULL: ids[i] = i) are
 * stable identities of the steps (e.g. stream slots); only PCT uses them.
 * n < 2: returns 0, records nothing. NULL chooser: 0. */
CUBERT_API uint32_t cubert_sim_choose(cubert_sim_chooser_t *chooser, uint32_t n,
                                      const uint32_t *ids);

/* Fold a step (what ran: kind, identity, sequence) into the trace hash. */
CUBERT_API void cubert_sim_trace(cubert_sim_chooser_t *chooser, uint32_t kind, uint32_t id,
                                 uint64_t seq);

CUBERT_EXTERN_C_END

#endif /* CUBERT_DRIVER_SIM_H */
