/* SPDX-License-Identifier: MIT */
/*
 * core/check/race.h: the predictive cross-stream race checker, as servers
 * drive it (docs/race-checker.md). Reports, sinks and counters: cubert/race.h.
 *
 * A happens-before checker over vector clocks. One clock domain (timeline)
 * is the host; every stream slot 0..max_streams-1 is another. The owning
 * server reports, in program order and AT ENQUEUE TIME, what the program
 * expresses:
 *   - an op (kernel, copy, read, host-side write ...) enqueued on a stream or
 *     run by the host: cubert__race_op_begin (the timeline's clock ticks; an op
 *     enqueued on a stream also inherits everything the host has done or
 *     observed so far, since the host enqueued it after that);
 *   - every binding access of that op: cubert__race_access;
 *   - synchronization: events (record / stream wait / host wait), stream
 *     waits on another stream (the multi-stream's flush + wait), host syncs;
 *   - memory reuse: cubert__race_reclaim / cubert__race_reclaim_at_event.
 * Every access is checked against the recorded accesses of the same buffer
 * (a read against the last writes, a write against the last writes and every
 * read since) and reported when the earlier access does not happen-before
 * the current one. The check never looks at what actually ran: it is
 * PREDICTIVE, a missing synchronization is reported even when the run
 * happened to execute in a safe order.
 *
 * Ranges: an access may cover a byte range [start, end) of the buffer (a
 * sub-handle, a view); accesses whose ranges do not overlap never conflict.
 * CUBERT_RACE_WHOLE_END as end with start 0 means the whole buffer.
 *
 * One report per missing synchronization: after a conflict between the
 * current timeline t and an earlier access of timeline u is reported, the
 * checker assumes the missing edge was there (t's clock joins u's current
 * clock, as if t had waited for u just now), so further accesses that lack
 * the same edge are not reported again. Conflicts with other timelines are
 * still reported. CUBERT_RACE_FLAG_REPORT_ALL turns this off. Reclamation
 * checks never change a timeline's clock.
 *
 * Reports are fixed-size records (cubert_race_report_t) delivered to a sink
 * (a vtable the user sets), counted, and the last one is kept
 * (cubert__race_last_report). cubert_race_report_format renders one as text.
 *
 * ERRORS. Hot-path calls here return a status only where they take no
 * out_error (the rule of include/cubert/cubert.h); their caller writes the
 * record.
 *
 * THREADING CONTRACT. The checker has no lock and never blocks. Every
 * cubert_race_* call on one checker must be serialized by the caller (the
 * server's lock or its runner thread); calls on distinct checkers are
 * independent. The sink is called synchronously from inside the call that
 * found the conflict, on that thread; it must not call back into the checker.
 *
 * DISABLED CHECKER. A server that runs without the checker keeps a NULL
 * checker pointer and calls the cubert_race_hook_* inline wrappers at the
 * end of this header: each costs one branch and does nothing for NULL. The
 * real functions reject NULL with INVALID_ARGUMENT.
 *
 * Memory: create allocates (max_streams + 1)^2 clock entries of 8 bytes
 * (about 0.5 MiB for 256 streams) plus small per-timeline state. Events take
 * (max_streams + 1) * 8 bytes each from a pool that grows by doubling and is
 * reused after cubert__race_event_release; the per-buffer shadow (hash table
 * plus access records) grows by doubling. Nothing else allocates: in steady
 * state (no new buffers, no more live events than before) no call allocates.
 * Every call that fails has no side effect (a pool may have grown, invisibly).
 *
 * Compiled out (CUBERT_CONFIG_RACE_CHECKER 0, cubert/config.h): create
 * returns UNSUPPORTED with a COMPILED_OUT record and no checker; every other
 * call returns UNSUPPORTED or reports nothing (counters 0, no last report),
 * the names and cubert_race_report_format write "(race checker compiled
 * out)", and the hooks below still do nothing for a NULL checker.
 */
#ifndef CUBERT_CORE_CHECK_RACE_H
#define CUBERT_CORE_CHECK_RACE_H

#include "cubert/config.h"
#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/handle.h"
#include "cubert/race.h"

CUBERT_EXTERN_C_BEGIN

/* cubert__race_reclaim_at_event only: the reuser is not known. */
#define CUBERT_RACE_NO_STREAM 0xFFFFFFFEu
/* Largest max_streams a checker accepts. */
#define CUBERT_RACE_MAX_STREAMS_LIMIT 1024u
/* Default max_streams: every regular slot of a multi-stream plus its GC
 * stream (CUBERT_STREAM_MAX_STREAMS_LIMIT + 1). */
#define CUBERT_RACE_DEFAULT_MAX_STREAMS 256u

typedef struct cubert_race_checker_t cubert_race_checker_t;


/* An event token: a point on a stream captured by cubert__race_event_record.
 * A value; {0, 0} is the null token (never issued). */
typedef struct cubert_race_event_t {
  uint32_t index;      /* slot + 1 */
  uint32_t generation; /* must match the slot's (stale tokens are rejected) */
} cubert_race_event_t;
/* Option flag: report every conflicting access. Without it (the default)
 * the checker assumes a reported missing edge from then on (see the top of
 * this header), so one missing synchronization gives one report. */
#define CUBERT_RACE_FLAG_REPORT_ALL 0x1u

typedef struct cubert_race_options_t {
  uint32_t max_streams;    /* stream slots 0..max_streams-1, 1..CUBERT_RACE_MAX_STREAMS_LIMIT */
  uint32_t flags;          /* CUBERT_RACE_FLAG_* */
  cubert_race_sink_t sink; /* copied; sink.self must outlive the checker */
} cubert_race_options_t;

/* max_streams CUBERT_RACE_DEFAULT_MAX_STREAMS, no flags, no sink. NULL is a
 * no-op. */
void cubert__race_options_initialize(cubert_race_options_t *options);

/* Create a checker (options NULL: defaults). Every clock starts at 0, no
 * buffer is tracked, no seed is set. The checker keeps the allocator.
 * INVALID_ARGUMENT (NULL out, NULL allocator function, max_streams 0 or above
 * the limit, an unknown flag, a sink vtable without a report function),
 * OVERFLOW (sizes),
 * RESOURCE_EXHAUSTED (*out_checker untouched, nothing leaked). Not
 * thread-safe (setup). Does not block. */
cubert_status_t cubert__race_checker_create(cubert_allocator_t allocator,
                                                      const cubert_race_options_t *options,
                                                      cubert_race_checker_t **out_checker,
                                                      cubert_error_t *out_error);

/* Free everything (outstanding event tokens become invalid). NULL: no-op. */
void cubert__race_checker_destroy(cubert_race_checker_t *checker);

/* Back to the state right after create: clocks 0, no buffer tracked, every
 * event token invalid, counters and the last report cleared. The sink, the
 * seed and the allocated capacity are kept (a deterministic driver resets
 * between runs). NULL: no-op. Never fails, never allocates. */
void cubert__race_checker_reset(cubert_race_checker_t *checker);

uint32_t cubert__race_checker_max_streams(const cubert_race_checker_t *checker);

/* Replace the sink (NULL or a NULL vtable: none). INVALID_ARGUMENT (NULL
 * checker, a vtable without report; nothing changes). */
cubert_status_t cubert__race_set_sink(cubert_race_checker_t *checker,
                                                const cubert_race_sink_t *sink);

/* The deterministic mode's seed, copied into every later report (has_seed 1)
 * until cleared. NULL checker: no-op. */
void cubert__race_set_seed(cubert_race_checker_t *checker, uint64_t seed);
void cubert__race_clear_seed(cubert_race_checker_t *checker);

/* ---- program events (all at enqueue / API time, in program order) -------- */

/* An op begins on `stream` (a slot, or CUBERT_RACE_HOST for work the host
 * does itself, e.g. a synchronous upload or a host-side read). For a stream,
 * its clock first joins the host's clock (work enqueued after a host action
 * happens after it), then its own component ticks: *out_op_index is the new
 * value (1 for the first op). `name` (kernel name, "write_buffer", ...) is
 * borrowed and must stay valid as long as the checker may report it (a string
 * literal or the kernel's static name). The op is OPEN: its accesses must be
 * reported (cubert__race_access with this index) before the next op_begin or
 * join on the same timeline. INVALID_ARGUMENT (NULL checker or out, stream
 * out of range), OVERFLOW (2^64 - 1 ops on one timeline; nothing changes).
 * Never allocates. */
cubert_status_t cubert__race_op_begin(cubert_race_checker_t *checker, uint32_t stream,
                                                const char *name, uint64_t *out_op_index);

/* Op `op_index` (the open op of `stream`) accesses bytes [start, end) of
 * `buffer` (any non-zero id; cubert__race_buffer_id makes one from a memory
 * id) as READ or WRITE. Checked against the buffer's recorded accesses whose
 * ranges overlap: a READ conflicts with a WRITE, a WRITE with any access,
 * when the earlier access does not happen-before this op. Conflicts are
 * reported lowest timeline first (host, then slots in order), each naming that
 * timeline's latest conflicting access; by default each report makes the
 * checker assume the missing edge (this timeline joins the earlier
 * timeline's clock), so timelines covered by it are not reported again; with
 * CUBERT_RACE_FLAG_REPORT_ALL every timeline in conflict is reported and no
 * clock changes. Then the access is recorded and the records it supersedes
 * (covered by its range, ordered before it, and not a write superseded by a
 * read) are dropped. An empty range (start == end) is counted and checks
 * nothing.
 * INVALID_ARGUMENT (NULL checker, buffer 0, stream out of range, mode not
 * READ/WRITE, start > end), FAILED_PRECONDITION (op_index is not the open op
 * of that timeline: never begun, superseded, or closed by a join),
 * RESOURCE_EXHAUSTED (growing the shadow failed: nothing checked, nothing
 * recorded, nothing reported). */
cubert_status_t cubert__race_access(cubert_race_checker_t *checker, uint64_t buffer,
                                              uint32_t stream, uint64_t op_index,
                                              cubert_race_access_t mode, uint64_t start,
                                              uint64_t end);

/* Record an event on `stream` (a slot): the token captures the stream's
 * clock now, i.e. every op begun on it so far (CUDA's cudaEventRecord). The
 * token stays valid until cubert__race_event_release. INVALID_ARGUMENT (NULL
 * checker or out, stream out of range or the host), RESOURCE_EXHAUSTED
 * (growing the event pool failed; *out_event untouched). Allocates only when
 * more events are live than ever before. */
cubert_status_t cubert__race_event_record(cubert_race_checker_t *checker,
                                                    uint32_t stream,
                                                    cubert_race_event_t *out_event);

/* Release a token (its slot is reused). INVALID_ARGUMENT (NULL checker),
 * INVALID_HANDLE (null, stale, forged or already released token). */
cubert_status_t cubert__race_event_release(cubert_race_checker_t *checker,
                                                     cubert_race_event_t event);

/* `stream` waits for `event` (cudaStreamWaitEvent): ops begun on it from now
 * on happen after everything the event captured. Closes stream's open op.
 * INVALID_ARGUMENT (NULL checker, stream out of range or the host: use
 * cubert__race_host_wait_event), INVALID_HANDLE (bad token). */
cubert_status_t cubert__race_stream_wait_event(cubert_race_checker_t *checker,
                                                         uint32_t stream,
                                                         cubert_race_event_t event);

/* `stream` waits for everything begun on `origin` so far: an event recorded
 * on origin now and waited on at once (the multi-stream's flush + wait_event
 * in resolve). No token is needed. Closes stream's open op. INVALID_ARGUMENT
 * (NULL checker, either out of range or the host). */
cubert_status_t cubert__race_stream_wait_stream(cubert_race_checker_t *checker,
                                                          uint32_t stream, uint32_t origin);

/* The host blocked until `event` completed (event synchronize, or a query
 * the program relied on): the host, and every op enqueued from now on,
 * happens after what the event captured. Closes the host's open op.
 * INVALID_ARGUMENT (NULL checker), INVALID_HANDLE (bad token). */
cubert_status_t cubert__race_host_wait_event(cubert_race_checker_t *checker,
                                                       cubert_race_event_t event);

/* The host synced `stream` (everything begun on it so far completed) /
 * every stream (device synchronize). Close the host's open op.
 * INVALID_ARGUMENT (NULL checker, stream out of range or the host). */
cubert_status_t cubert__race_host_sync_stream(cubert_race_checker_t *checker,
                                                        uint32_t stream);
cubert_status_t cubert__race_host_sync_all(cubert_race_checker_t *checker);

/* ---- memory reuse -------------------------------------------------------- */

/* `buffer`'s memory is reclaimed for reuse by `stream` (a slot: the reuse is
 * its next op, which also inherits the host's clock) or by the host. Asserts
 * that every recorded access of the buffer happens-before that point; each
 * earlier timeline in conflict gives one CUBERT_RACE_KIND_RECLAIM report
 * (current.index = the reclaimer's op count). Then the buffer's shadow is
 * dropped: a reused id starts fresh. Changes no clock. An untracked buffer
 * is fine (nothing to check). INVALID_ARGUMENT (NULL checker, buffer 0,
 * stream out of range). Never allocates. */
cubert_status_t cubert__race_reclaim(cubert_race_checker_t *checker, uint64_t buffer,
                                               uint32_t stream);

/* The GC form: `buffer`'s memory is reused by `stream` (a slot; or
 * CUBERT_RACE_HOST; or CUBERT_RACE_NO_STREAM when the reuser is not known)
 * and the runtime lets that happen only once `event` completed (e.g. the GC
 * stream's event after it waited on the consumers of a pinned binding).
 * Checks every recorded access against the event's clock joined with the
 * reuse point's (a slot's clock and the host's, as in cubert__race_reclaim;
 * nothing more for CUBERT_RACE_NO_STREAM), then drops the shadow. Reports
 * name the reuser (current.stream / index = the stream and its op count, or
 * for CUBERT_RACE_NO_STREAM the event's stream and the op count it
 * captured). Changes no clock. INVALID_ARGUMENT (NULL checker, buffer 0,
 * stream out of range), INVALID_HANDLE (bad token). Never allocates. */
cubert_status_t cubert__race_reclaim_at_event(cubert_race_checker_t *checker,
                                                        uint64_t buffer, uint32_t stream,
                                                        cubert_race_event_t event);

/* Drop `buffer`'s shadow without checking (teardown). INVALID_ARGUMENT (NULL
 * checker, buffer 0). */
cubert_status_t cubert__race_forget(cubert_race_checker_t *checker, uint64_t buffer);

/* ---- results ------------------------------------------------------------- */

/* Copy the counters (all 0 for NULL checker). NULL out: no-op. */
void cubert__race_counters(const cubert_race_checker_t *checker,
                                     cubert_race_counters_t *out_counters);

/* Copy the most recent report. False (out untouched) when there was none
 * since create / reset, or for NULL arguments. */
bool cubert__race_last_report(const cubert_race_checker_t *checker,
                                        cubert_race_report_t *out_report);

/* The current clock component of `stream` (or the host) as seen by `of`:
 * how many ops of `stream` happen-before the next op of `of` (before it
 * inherits the host). 0 for NULL or out-of-range arguments. For tests and
 * diagnostics. */
uint64_t cubert__race_clock(const cubert_race_checker_t *checker, uint32_t of,
                                      uint32_t stream);

/* A buffer id from a memory id (index in the high 32 bits, generation in the
 * low): distinct ids give distinct buffers, a reused slot a new buffer. */
static inline uint64_t cubert__race_buffer_id(cubert_memory_id_t id) {
  return ((uint64_t)id.index << 32) | (uint64_t)id.generation;
}

/* ---- hooks: one branch when the checker is off (NULL) --------------------
 * Same semantics and codes as the functions they call; for NULL they return
 * OK and touch nothing (out parameters included). */

static inline cubert_status_t cubert__race_hook_op_begin(cubert_race_checker_t *checker,
                                                         uint32_t stream, const char *name,
                                                         uint64_t *out_op_index) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_op_begin(checker, stream, name, out_op_index);
}

static inline cubert_status_t cubert__race_hook_access(cubert_race_checker_t *checker,
                                                       uint64_t buffer, uint32_t stream,
                                                       uint64_t op_index, cubert_race_access_t mode,
                                                       uint64_t start, uint64_t end) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_access(checker, buffer, stream, op_index, mode, start, end);
}

static inline cubert_status_t cubert__race_hook_event_record(cubert_race_checker_t *checker,
                                                             uint32_t stream,
                                                             cubert_race_event_t *out_event) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_event_record(checker, stream, out_event);
}

static inline cubert_status_t cubert__race_hook_event_release(cubert_race_checker_t *checker,
                                                              cubert_race_event_t event) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_event_release(checker, event);
}

static inline cubert_status_t cubert__race_hook_stream_wait_event(cubert_race_checker_t *checker,
                                                                  uint32_t stream,
                                                                  cubert_race_event_t event) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_stream_wait_event(checker, stream, event);
}

static inline cubert_status_t cubert__race_hook_stream_wait_stream(cubert_race_checker_t *checker,
                                                                   uint32_t stream,
                                                                   uint32_t origin) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_stream_wait_stream(checker, stream, origin);
}

static inline cubert_status_t cubert__race_hook_host_wait_event(cubert_race_checker_t *checker,
                                                                cubert_race_event_t event) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_host_wait_event(checker, event);
}

static inline cubert_status_t cubert__race_hook_host_sync_stream(cubert_race_checker_t *checker,
                                                                 uint32_t stream) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_host_sync_stream(checker, stream);
}

static inline cubert_status_t cubert__race_hook_host_sync_all(cubert_race_checker_t *checker) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_host_sync_all(checker);
}

static inline cubert_status_t cubert__race_hook_reclaim(cubert_race_checker_t *checker,
                                                        uint64_t buffer, uint32_t stream) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_reclaim(checker, buffer, stream);
}

static inline cubert_status_t cubert__race_hook_reclaim_at_event(cubert_race_checker_t *checker,
                                                                 uint64_t buffer, uint32_t stream,
                                                                 cubert_race_event_t event) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_reclaim_at_event(checker, buffer, stream, event);
}

static inline cubert_status_t cubert__race_hook_forget(cubert_race_checker_t *checker,
                                                       uint64_t buffer) {
  if (!checker) return CUBERT_STATUS_OK;
  return cubert__race_forget(checker, buffer);
}

CUBERT_EXTERN_C_END

#endif /* CUBERT_CORE_CHECK_RACE_H */
