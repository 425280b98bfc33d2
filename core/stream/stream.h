/* SPDX-License-Identifier: MIT */
/*
 * core/stream/stream.h: the multi-stream (CubeCL's MultiStream and
 * StreamPool; docs/cubecl-mapping.md, docs/streams.md): the bookkeeping that
 * decides how a command on one stream is ordered after work of other streams.
 * It PLANS and never acts: it calls no driver and pins nothing.
 *
 * Every stream id value maps to a slot `value mod max_streams` (as
 * cubert_stream_id_slot in cubert/stream_id.h computes it). Each slot keeps a
 * cursor (commands committed on it), the cursor of every origin slot it last
 * synced with, and the errors of asynchronous work queued on it. Before a
 * command runs on stream S with some bindings, `cubert__multi_stream_plan`
 * returns, as plain data (cubert_stream_plan_t):
 *  - the waits: every OTHER slot that may have written one of the bindings
 *    past the point S already synced with, once per origin slot, with the
 *    origin's cursor to wait for;
 *  - the pins: which bindings must stay alive after the command (the
 *    cross-stream ones, cubert__stream_plan_pins), and the release point:
 *    they may be released once the command's point on S (plan.slot,
 *    plan.cursor) completed;
 *  - the command's cursor.
 * The caller (the server, core/server/server_stream.c) issues the waits on
 * its driver, enqueues the command, and holds the pins in its release ring
 * until an event recorded after the command completed. Then
 * `cubert__multi_stream_commit` records the plan (S's cursor += 1, S's
 * last_synced of each origin). A plan that is never committed changes
 * nothing.
 *
 * ERRORS. Hot-path calls here return a status only where they take no
 * out_error (the rule of include/cubert/cubert.h); their caller writes the
 * record.
 *
 * THREADING. No lock: the owner serializes every call (the server holds its
 * device). Nothing here blocks; allocation happens only the first time a slot
 * is used (its bookkeeping), never in steady state.
 */
#ifndef CUBERT_CORE_STREAM_STREAM_H
#define CUBERT_CORE_STREAM_STREAM_H

#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/client.h"
#include "memory/handle_table.h"

CUBERT_EXTERN_C_BEGIN

/* Default number of regular slots (config streaming.max_streams). */
#define CUBERT_STREAM_DEFAULT_MAX_STREAMS 128u
/* Largest accepted max_streams (CubeCL's config value is a u8). */
#define CUBERT_STREAM_MAX_STREAMS_LIMIT 255u
/* Per-binding result of cubert__multi_stream_analyze for an unshared binding. */
#define CUBERT_STREAM_NOT_SHARED 0xFFFFFFFFu

typedef struct cubert_multi_stream_t cubert_multi_stream_t;

typedef struct cubert_multi_stream_options_t {
  uint32_t max_streams; /* regular slots, 1..CUBERT_STREAM_MAX_STREAMS_LIMIT */
  /* Non-zero: a binding's point on its origin slot is the origin's current
   * cursor (the server: it does not track writes per buffer, so a stream that
   * synced with the origin waits again whenever the origin committed anything
   * since). Zero: binding->cursor, the cursor at which its memory was bound
   * (CubeCL's handle_cursor; it misses a later write of the buffer on its
   * origin stream). */
  uint32_t wait_on_origin_cursor;
} cubert_multi_stream_options_t;

/* Defaults: max_streams 128, wait_on_origin_cursor 0. NULL is a no-op. */
void cubert__multi_stream_options_initialize(cubert_multi_stream_options_t *options);

/* Create a multi-stream (options NULL: defaults). No slot exists yet.
 * INVALID_ARGUMENT (NULL out, bad options), RESOURCE_EXHAUSTED. */
cubert_status_t cubert__multi_stream_create(cubert_allocator_t allocator,
                                            const cubert_multi_stream_options_t *options,
                                            cubert_multi_stream_t **out_multi_stream,
                                            cubert_error_t *out_error);

/* Free the bookkeeping. NULL is a no-op. Never blocks. */
void cubert__multi_stream_destroy(cubert_multi_stream_t *multi_stream);

uint32_t cubert__multi_stream_max_streams(const cubert_multi_stream_t *multi_stream);

/* One wait of a plan: the command's slot waits (device side) for everything
 * committed on origin_slot up to origin_cursor (record an event at the
 * origin's current end, wait on it). */
typedef struct cubert_stream_wait_t {
  uint32_t origin_slot;
  uint32_t reserved_;
  uint64_t origin_cursor;
} cubert_stream_wait_t;

/* How to order one command (CubeCL's ResolvedStreams, as data). Every field
 * is public. */
typedef struct cubert_stream_plan_t {
  uint64_t stream_id;  /* the stream id planned for */
  uint64_t cursor;     /* the command's cursor: its slot's cursor once committed
                          (allocations bound by the command use it) */
  uint32_t slot;       /* the command's slot: stream_id mod max_streams */
  uint32_t wait_count; /* entries of waits */
  /* [wait_count], first-use order. Points into the multi-stream: valid until
   * the next plan or commit. */
  const cubert_stream_wait_t *waits;
  /* Bindings to pin (cubert__stream_plan_pins says which): keep them alive
   * until the command's point on its slot (slot, cursor) completed. */
  uint32_t pin_count;
  uint32_t serial; /* which plan this is: commit refuses any but the latest */
} cubert_stream_plan_t;

/* Plan a command on `stream_id` over bindings[0..count) (borrowed; may be
 * NULL when count is 0):
 *  1. if enforce_healthy and the slot has queued errors: SERVER_UNHEALTHY,
 *     *out_error = a copy of the queued aggregate (not drained). (CubeCL
 *     returns Generic("Can't resolve the stream since it is currently in an
 *     error state") and still advances the cursor; cubert changes nothing.)
 *  2. the slot's bookkeeping is made if this is its first use (the only
 *     allocation; it stays: a plan never committed leaves cursor 0);
 *  3. waits: origin slot o of a binding whose stream id differs from
 *     stream_id needs a wait when the slot never synced with o or synced with
 *     o before the binding's point (see wait_on_origin_cursor); once per o,
 *     waiting for o's current cursor. Distinct stream ids of one slot are
 *     still cross-stream (the slot waits on itself, as CubeCL does);
 *  4. pins: every binding whose stream id differs from stream_id, even if no
 *     wait is needed (another stream may release and reuse it otherwise).
 * Does not block, calls nothing outside. INVALID_ARGUMENT (NULL ms/out, NULL
 * bindings with count > 0), OVERFLOW (more than 2^32-1 bindings),
 * SERVER_UNHEALTHY (1), RESOURCE_EXHAUSTED (2). On failure nothing changed. */
cubert_status_t cubert__multi_stream_plan(cubert_multi_stream_t *multi_stream, uint64_t stream_id,
                                          const cubert_binding_t *bindings, size_t count,
                                          bool enforce_healthy, cubert_stream_plan_t *out_plan,
                                          cubert_error_t *out_error);

/* Must `binding` be pinned until the plan's release point? (It belongs to
 * another stream id.) */
static inline bool cubert__stream_plan_pins(const cubert_stream_plan_t *plan,
                                            const cubert_binding_t *binding) {
  return binding->stream != plan->stream_id;
}

/* Record the plan, after its waits were issued and its command enqueued:
 * the slot's cursor becomes plan->cursor and its last_synced of each origin
 * the wait's origin_cursor. FAILED_PRECONDITION (nothing changed) for a plan
 * that is not the latest one made, or was committed already; INVALID_ARGUMENT
 * for NULLs. Never allocates. */
cubert_status_t cubert__multi_stream_commit(cubert_multi_stream_t *multi_stream,
                                            const cubert_stream_plan_t *plan);

/* The plan and commit of a command on stream_id whose bindings all belong to
 * stream_id (no wait, no pin: the plan would hold only cursor + 1), made
 * without the latest-plan state, so it may run concurrently with the same
 * call on another slot (core/device/device_shards.h): the slot's cursor += 1.
 * false (nothing changed) when the slot was never made. */
bool cubert__multi_stream_advance(cubert_multi_stream_t *multi_stream, uint64_t stream_id);

/* The waits alone (seed's update_shared_bindings; no side effect, creates
 * nothing): for each binding, out_origin_slots[i] (may be NULL) = the origin
 * slot it needs a wait on, or CUBERT_STREAM_NOT_SHARED. Returns the number of
 * distinct origin slots (0 for NULL ms or NULL bindings). O(count^2): for
 * tests, logs and debugging. */
uint32_t cubert__multi_stream_analyze(const cubert_multi_stream_t *multi_stream,
                                      uint64_t stream_id, const cubert_binding_t *bindings,
                                      size_t count, uint32_t *out_origin_slots);

/* Inspection (no side effect). A slot never used reads as cursor 0, nothing
 * synced, healthy. */
bool cubert__multi_stream_slot_exists(const cubert_multi_stream_t *multi_stream, uint32_t slot);
uint64_t cubert__multi_stream_cursor(const cubert_multi_stream_t *multi_stream,
                                     uint64_t stream_id);
/* True and *out_cursor set when stream_id's slot has synced with origin_slot. */
bool cubert__multi_stream_last_synced(const cubert_multi_stream_t *multi_stream,
                                      uint64_t stream_id, uint32_t origin_slot,
                                      uint64_t *out_cursor);
/* Number of origin slots stream_id's slot has synced with. */
uint32_t cubert__multi_stream_synced_count(const cubert_multi_stream_t *multi_stream,
                                           uint64_t stream_id);

/* ---- per-stream error queue --------------------------------------- */

/* Queue an error of asynchronous work on stream_id's slot (making its
 * bookkeeping if needed). The slot keeps one SERVER_UNHEALTHY aggregate built
 * with cubert_error_aggregate: the exact count of queued errors, the first
 * one's kinds and fields, every message joined (truncated to the record).
 * INVALID_ARGUMENT (NULL ms/error, a record with status OK or no kind),
 * RESOURCE_EXHAUSTED when the slot must be made. */
cubert_status_t cubert__multi_stream_error_push(cubert_multi_stream_t *multi_stream,
                                                uint64_t stream_id, const cubert_error_t *error);

/* Number of errors queued on stream_id's slot (0: healthy). */
uint32_t cubert__multi_stream_error_count(const cubert_multi_stream_t *multi_stream,
                                          uint64_t stream_id);

/* Drain (flush = true): when errors are queued, move their aggregate into
 * *out_error (may be NULL), empty the queue and return SERVER_UNHEALTHY; the
 * drain is the purpose of the call, so it happens although the status is not
 * OK. OK when nothing was queued (out_error untouched). */
cubert_status_t cubert__multi_stream_error_drain(cubert_multi_stream_t *multi_stream,
                                                 uint64_t stream_id, cubert_error_t *out_error);

/* As drain, without emptying the queue (flush = false, ignore = false). */
cubert_status_t cubert__multi_stream_error_peek(const cubert_multi_stream_t *multi_stream,
                                                uint64_t stream_id, cubert_error_t *out_error);

/* ---- completions (cubert_completion_t, cubert/client.h) --------------------- */

/* For servers: mark a completion as already finished with `status` /
 * `error` (NULL: none). Not thread-safe on one completion; non-blocking. */
void cubert__completion_set_done(cubert_completion_t *completion, cubert_status_t status,
                                           const cubert_error_t *error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CORE_STREAM_STREAM_H */
