/* SPDX-License-Identifier: MIT */
/*
 * core/stream/stream.h: streams and events (CubeCL's EventStreamBackend,
 * StreamPool and MultiStream; docs/cubecl-mapping.md).
 *
 * A server that runs work on several device streams keeps one multi-stream.
 * Every stream id value maps to a slot `value mod max_streams` (as
 * cubert_stream_id_slot in cubert/stream_id.h computes it); slots are
 * created lazily through an event driver (a small vtable, below). Before a
 * command runs on stream S with some bindings, `cubert__multi_stream_resolve`
 *  - makes S wait (device side, no host block) on every OTHER slot that last
 *    wrote one of the bindings past the point S already synced with: one
 *    flush + one wait per origin slot, however many bindings it wrote;
 *  - pins every cross-stream binding (retains a binding reference in the
 *    handle table) so its memory is not reused while S may still read it;
 *  - advances S's cursor (the number of commands resolved on S).
 * After the command was enqueued on S, `cubert__multi_stream_resolve_end`
 * hands the pins to the garbage collector (GC): a GC stream waits for S, and
 * the pins are released (cubert__binding_release) only once the GC stream's
 * event has completed, by `cubert__multi_stream_gc_collect` (polling, never
 * blocks) or by a GC thread (`cubert__multi_stream_gc_take` + the task calls).
 *
 * Each slot also keeps the errors of asynchronous work enqueued on it:
 * pushed as they happen, surfaced together as one
 * SERVER_UNHEALTHY record when drained at flush / sync / read.
 *
 * ERRORS. Hot-path calls here return a status only where they take no
 * out_error (the rule of include/cubert/cubert.h); their caller writes the
 * record.
 *
 * THREADING CONTRACT. The multi-stream has no lock. Every cubert_multi_stream_*
 * function must be called by one thread at a time: the owning server
 * serializes them (its device handle's lock or its runner thread). Only the
 * cubert_stream_gc_task_* functions may run on another thread (a GC thread),
 * concurrently with the server, on a task it took with
 * cubert__multi_stream_gc_take; that needs a driver whose wait_event_sync and
 * release_event are callable from that thread, a thread-safe allocator (as
 * cubert/allocator.h requires anyway) and the handle table (whose binding
 * release is thread-safe). A GC thread therefore runs:
 *     lock(server); got = cubert__multi_stream_gc_take(ms, &task); unlock(server);
 *     if (got) { cubert__stream_gc_task_wait(&task, &err);   -- blocks, no lock held
 *                cubert__stream_gc_task_release(&task); }
 * Nothing here blocks the OS except through the driver's wait_event_sync,
 * which resolve never calls (see each function for when it is called).
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
/* Default number of pending GC tasks before resolve_end waits for the oldest
 * (CubeCL's GC channel capacity). */
#define CUBERT_STREAM_DEFAULT_GC_CAPACITY 8u
/* Per-binding result of cubert__multi_stream_analyze for an unshared binding. */
#define CUBERT_STREAM_NOT_SHARED 0xFFFFFFFFu

/* ---- event driver (EventStreamBackend) ------------------------------------
 *
 * Streams and events are opaque pointers owned by the driver. Every function
 * receives the driver's `self`. The multi-stream calls them from the thread
 * that serializes it, except wait_event_sync / release_event, which a GC
 * thread may call through cubert_stream_gc_task_* (see the contract above).
 */
typedef struct cubert_event_backend_vtable_t {
  /* Create the driver stream of `slot` (0..max_streams-1: regular slots,
   * max_streams: the GC stream). Returns OK with *out_stream set (non-NULL),
   * or any error code (nothing created). */
  cubert_status_t (*create_stream)(void *self, uint32_t slot, void **out_stream,
                                   cubert_error_t *out_error);
  /* Destroy a stream made by create_stream (its pending work may be dropped:
   * the multi-stream syncs what it must before). Never fails. */
  void (*destroy_stream)(void *self, void *stream);
  /* Submit everything enqueued on `stream` and record an event at that point
   * (CubeCL's flush -> Event). *out_event is a new event the caller owns and
   * releases with release_event. Any error code: no event made. */
  cubert_status_t (*flush)(void *self, void *stream, void **out_event,
                           cubert_error_t *out_error);
  /* Make `stream` wait (device side) until `event` completed before running
   * what is enqueued on it later. Borrows the event. Must not block the host. */
  cubert_status_t (*wait_event)(void *self, void *stream, void *event,
                                cubert_error_t *out_error);
  /* Block the calling host thread until `event` completed. Borrows the event.
   * Errors (device lost, ...) are returned. */
  cubert_status_t (*wait_event_sync)(void *self, void *event, cubert_error_t *out_error);
  /* Non-blocking: has `event` completed? (GC polling.) */
  bool (*event_completed)(void *self, void *event);
  /* Release an event made by flush. Never fails. */
  void (*release_event)(void *self, void *event);
  /* Optional (NULL: use binding->cursor). The cursor at which the binding's
   * memory was last written on its origin slot, looked up in that slot's
   * state (CubeCL's handle_cursor; UINT64_MAX when unknown, which forces a
   * wait). `origin_stream` is the origin slot's driver stream. */
  uint64_t (*handle_cursor)(void *self, void *origin_stream, const cubert_binding_t *binding);
} cubert_event_backend_vtable_t;

typedef struct cubert_event_backend_t {
  const cubert_event_backend_vtable_t *vtable;
  void *self;
} cubert_event_backend_t;

/* ---- multi-stream ----------------------------------------------------------- */

typedef struct cubert_multi_stream_t cubert_multi_stream_t;

typedef struct cubert_multi_stream_options_t {
  uint32_t max_streams; /* regular slots, 1..CUBERT_STREAM_MAX_STREAMS_LIMIT */
  uint32_t gc_capacity; /* pending GC tasks kept before resolve_end waits, >= 1 */
} cubert_multi_stream_options_t;

/* Defaults: max_streams 128, gc_capacity 8. NULL is a no-op. */
void cubert__multi_stream_options_initialize(cubert_multi_stream_options_t *options);

/* Create a multi-stream over `driver` (copied; driver->self must outlive
 * the multi-stream) pinning bindings in `handles` (borrowed; must outlive it
 * and every GC task taken from it). options NULL: defaults. No stream is
 * created yet. INVALID_ARGUMENT (NULL backend/vtable entry except
 * handle_cursor, NULL handles or out, bad options), RESOURCE_EXHAUSTED. */
cubert_status_t cubert__multi_stream_create(cubert_allocator_t allocator,
                                                      const cubert_event_backend_t *driver,
                                                      cubert_handle_table_t *handles,
                                                      const cubert_multi_stream_options_t *options,
                                                      cubert_multi_stream_t **out_multi_stream,
                                                      cubert_error_t *out_error);

/* Destroy: releases the pins of an unfinished resolution, then for every
 * pending GC task waits for its event (driver wait_event_sync: may BLOCK;
 * errors are ignored, the device is being torn down anyway) and releases its
 * pins; then destroys every stream. Tasks already taken by a GC thread are
 * the thread's. NULL is a no-op. */
void cubert__multi_stream_destroy(cubert_multi_stream_t *multi_stream);

uint32_t cubert__multi_stream_max_streams(const cubert_multi_stream_t *multi_stream);

/* The result of a resolve (CubeCL's ResolvedStreams guard), valid until
 * cubert__multi_stream_resolve_end. Plain data. */
typedef struct cubert_resolved_streams_t {
  uint64_t current; /* the stream id value resolved */
  uint64_t cursor;  /* current's cursor after this resolve: the cursor of allocations bound
                       by this command */
  void *stream;     /* current's driver stream (borrowed): enqueue the command here */
  uint32_t slot;    /* current's slot index */
  uint32_t waits;   /* origin slots current was made to wait on */
  uint32_t pinned;  /* cross-stream bindings pinned until the GC releases them */
  uint32_t reserved_;
} cubert_resolved_streams_t;

/* Resolve stream `stream_id` for a command that uses bindings[0..count)
 * (borrowed; bindings may be NULL when count is 0):
 *  1. if enforce_healthy and the slot has queued errors: fail with
 *     SERVER_UNHEALTHY, *out_error = a copy of the queued aggregate (not
 *     drained). (CubeCL returns Generic("Can't resolve the stream since it is
 *     currently in an error state") and still advances the cursor; cubert
 *     changes nothing, as every failing call.)
 *  2. create the current slot, the bindings' origin slots and (when there is
 *     a cross-stream binding) the GC stream if they do not exist yet;
 *  3. pin (retain) every binding whose stream id value differs from
 *     stream_id, even if no wait is needed;
 *  4. shared-binding analysis: origin slot o needs a sync when current has
 *     never synced with o or synced with o before the binding's cursor
 *     (binding->cursor or the driver's handle_cursor); for each such o, once:
 *     e = flush(o); wait_event(current, e); release e; current's
 *     last_synced[o] = o's cursor;
 *  5. current's cursor += 1.
 * Distinct stream ids of one slot are still cross-stream (the slot waits on
 * itself, as CubeCL does). Only one resolution may be open at a time.
 * Does not block. Codes: INVALID_ARGUMENT (NULL ms/out, NULL bindings with
 * count > 0), FAILED_PRECONDITION (a resolution is open), SERVER_UNHEALTHY
 * (step 1), RESOURCE_EXHAUSTED, OVERFLOW (more than 2^32-1 bindings),
 * INVALID_HANDLE / OVERFLOW (pinning a dead or saturated binding), and
 * whatever the driver's create_stream / flush / wait_event return. On
 * failure nothing changed: slots created by this call are destroyed again,
 * pins released, cursors and last_synced untouched (driver flushes/waits
 * already issued stay issued; they only add synchronization). */
cubert_status_t cubert__multi_stream_resolve(cubert_multi_stream_t *multi_stream,
                                                       uint64_t stream_id,
                                                       const cubert_binding_t *bindings,
                                                       size_t count, bool enforce_healthy,
                                                       cubert_resolved_streams_t *out_resolved,
                                                       cubert_error_t *out_error);

/* End the open resolution after its command was enqueued on resolved->stream
 * (CubeCL's ResolvedStreams drop). If bindings were pinned: e1 = flush(current),
 * the GC stream waits on e1, e2 = flush(GC stream), and (e2, pins) becomes a
 * pending GC task. When gc_capacity tasks are already pending it first
 * collects completed ones and, if none completed, waits for the oldest
 * (driver wait_event_sync: BLOCKS like CubeCL's bounded GC channel) and
 * releases it. Never fails: a driver error here is pushed onto current's
 * error queue (surfaced at the next drain) and the pins are released at once.
 * `resolved` must be the open resolution's (else nothing happens); it is
 * cleared. */
void cubert__multi_stream_resolve_end(cubert_multi_stream_t *multi_stream,
                                                cubert_resolved_streams_t *resolved);

/* Shared-binding analysis only (seed's update_shared_bindings; no side
 * effect, creates nothing): for each binding, out_origin_slots[i] (may be
 * NULL) = the origin slot whose sync it needs, or CUBERT_STREAM_NOT_SHARED.
 * Returns the number of distinct origin slots needing a sync (0 for NULL ms,
 * or NULL bindings). O(count^2): for tests, logs and debugging. */
uint32_t cubert__multi_stream_analyze(const cubert_multi_stream_t *multi_stream,
                                                uint64_t stream_id,
                                                const cubert_binding_t *bindings, size_t count,
                                                uint32_t *out_origin_slots);

/* The driver stream of stream_id's slot, created if needed (ResolvedStreams::
 * get). INVALID_ARGUMENT, RESOURCE_EXHAUSTED, create_stream's codes. */
cubert_status_t cubert__multi_stream_stream(cubert_multi_stream_t *multi_stream,
                                                      uint64_t stream_id, void **out_stream,
                                                      cubert_error_t *out_error);

/* Host sync of one stream: e = flush(slot); wait_event_sync(e) (BLOCKS in the
 * driver); release e. Does not drain errors (the server drains first, spec
 * 6.6). A slot never created has nothing to wait for: OK. Codes:
 * INVALID_ARGUMENT and the driver's flush / wait_event_sync codes. */
cubert_status_t cubert__multi_stream_sync(cubert_multi_stream_t *multi_stream,
                                                    uint64_t stream_id,
                                                    cubert_error_t *out_error);

/* Inspection (for servers, reports and tests; no side effect). A slot never
 * created reads as cursor 0, nothing synced, healthy. */
bool cubert__multi_stream_slot_exists(const cubert_multi_stream_t *multi_stream,
                                                uint32_t slot);
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

/* Queue an error of asynchronous work on stream_id's slot (creating it if
 * needed). The slot keeps one SERVER_UNHEALTHY aggregate built with
 * cubert_error_aggregate: the exact count of queued errors, the first one's
 * kinds and fields, every message joined (truncated to the record). INVALID_ARGUMENT (NULL ms/error, a record with
 * status OK or no kind),
 * RESOURCE_EXHAUSTED / create_stream's codes when the slot must be created. */
cubert_status_t cubert__multi_stream_error_push(cubert_multi_stream_t *multi_stream,
                                                          uint64_t stream_id,
                                                          const cubert_error_t *error);

/* Number of errors queued on stream_id's slot (0: healthy). */
uint32_t cubert__multi_stream_error_count(const cubert_multi_stream_t *multi_stream,
                                                    uint64_t stream_id);

/* Drain (flush = true): when errors are queued, move their aggregate into
 * *out_error (may be NULL), empty the queue and return SERVER_UNHEALTHY; the
 * drain is the purpose of the call, so it happens although the status is not
 * OK. OK when nothing was queued (out_error untouched). */
cubert_status_t cubert__multi_stream_error_drain(cubert_multi_stream_t *multi_stream,
                                                           uint64_t stream_id,
                                                           cubert_error_t *out_error);

/* As drain, without emptying the queue (flush = false, ignore = false). */
cubert_status_t cubert__multi_stream_error_peek(const cubert_multi_stream_t *multi_stream,
                                                          uint64_t stream_id,
                                                          cubert_error_t *out_error);

/* ---- garbage collection of pinned bindings ------------------------------------ */

/* Called once, after the task's event completed, to free what it holds
 * besides pins (e.g. a staging buffer). Must not call the multi-stream. */
typedef void (*cubert_stream_gc_drop_fn_t)(void *user);

/* A pending GC task, as handed to a GC thread. Fields are private. */
typedef struct cubert_stream_gc_task_t {
  cubert_event_backend_t backend_;
  cubert_allocator_t allocator_;
  cubert_handle_table_t *handles_;
  void *event_;
  cubert_binding_t *pins_;
  uint32_t pin_count_;
  uint32_t pin_capacity_;
  cubert_stream_gc_drop_fn_t drop_;
  void *drop_user_;
} cubert_stream_gc_task_t;

/* Register a GC task on behalf of stream_id: when `event` (from the
 * driver's flush; owned from now on) completed, drop(user) is called and the
 * event released (CubeCL's MultiStream::gc(GcTask)). Same back-pressure as
 * resolve_end (may BLOCK when gc_capacity tasks are pending; a failed wait is
 * queued on stream_id's slot). INVALID_ARGUMENT (NULL ms/event/drop),
 * RESOURCE_EXHAUSTED / create_stream's codes when stream_id's slot must be
 * created; on failure the event is not taken. */
cubert_status_t cubert__multi_stream_gc_register(cubert_multi_stream_t *multi_stream,
                                                           uint64_t stream_id, void *event,
                                                           cubert_stream_gc_drop_fn_t drop,
                                                           void *user, cubert_error_t *out_error);

/* Release every pending task whose event completed (driver event_completed;
 * never blocks): its pins are released in the handle table exactly once, its
 * drop runs, its event is released. Returns the number of tasks released. */
uint32_t cubert__multi_stream_gc_collect(cubert_multi_stream_t *multi_stream);

/* Number of pending tasks. */
uint32_t cubert__multi_stream_gc_pending(const cubert_multi_stream_t *multi_stream);

/* Move the oldest pending task into *out_task for a GC thread. False when
 * none is pending (out_task untouched). The caller must then call
 * cubert__stream_gc_task_release exactly once (after task_wait). */
bool cubert__multi_stream_gc_take(cubert_multi_stream_t *multi_stream,
                                            cubert_stream_gc_task_t *out_task);

/* Block until the task's event completed (driver wait_event_sync). May run
 * on any thread (see the contract above). The driver's codes; the task is
 * unchanged either way. */
cubert_status_t cubert__stream_gc_task_wait(const cubert_stream_gc_task_t *task,
                                                      cubert_error_t *out_error);

/* Release the task's pins, run its drop, release its event and free it; the
 * task is cleared (a second call does nothing). Any thread. Never fails. */
void cubert__stream_gc_task_release(cubert_stream_gc_task_t *task);

/* ---- completions (cubert_completion_t, cubert/client.h) --------------------- */

/* For servers: mark a completion as already finished with `status` /
 * `error` (NULL: none). Not thread-safe on one completion; non-blocking. */
void cubert__completion_set_done(cubert_completion_t *completion, cubert_status_t status,
                                           const cubert_error_t *error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CORE_STREAM_STREAM_H */
