/* SPDX-License-Identifier: MIT */
/*
 * core/memory/handle_internal.h: test and debug hooks of the handle table
 * (core/memory/handle.c). Not installed, not exported from the shared library.
 * Only tests use these; library code never calls them.
 */
#ifndef CUBERT_CORE_HANDLE_INTERNAL_H
#define CUBERT_CORE_HANDLE_INTERNAL_H

#include "cubert/handle.h"
#include "memory/handle_table.h"

/* Overwrite the counts of a live id: handle count = handles, binding count =
 * bindings, descriptor count = handles + bindings (the owned flag is kept).
 * Lets tests reach CUBERT_HANDLE_MAX_COUNT without 2^30 retains.
 * INVALID_ARGUMENT: NULL table, handles + bindings == 0 or above
 * CUBERT_HANDLE_MAX_COUNT. INVALID_HANDLE: the id is not alive.
 * Not thread-safe: no other thread may use the id meanwhile. */
cubert_status_t cubert__handle_table_debug_set_counts(cubert_handle_table_t *table,
                                                      cubert_memory_id_t id, uint32_t handles,
                                                      uint32_t bindings);

/* Walk every grown slot of a quiescent table (no call in flight) and check
 * the invariants: a slot is in the free set exactly when it is marked free;
 * a free slot has no counts and an even generation; an alive slot (odd
 * generation) has descriptor count == handles + bindings, >= 1, and at most
 * CUBERT_HANDLE_MAX_COUNT; a dead slot that is not free is still owned with
 * no counts; no pins are left; slots beyond max_slots are never free, and
 * cubert__handle_table_live() == alive + dead-owned slots.
 * Reports the number of alive ids and of dead-but-owned slots (either out
 * pointer may be NULL). Returns OK, INVALID_ARGUMENT (NULL table) or
 * INTERNAL (an invariant is broken). */
cubert_status_t cubert__handle_table_debug_check(const cubert_handle_table_t *table,
                                                 uint32_t *out_alive, uint32_t *out_dead_owned);

#endif /* CUBERT_CORE_HANDLE_INTERNAL_H */
