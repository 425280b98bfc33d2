/* SPDX-License-Identifier: MIT */
/*
 * cubert/trace.h: the timeline trace of the OS layer (docs/profiling.md,
 * "Timeline trace"). While a trace records, the CPU devices of the process
 * record what they do: kernel launches (on the host thread that launched),
 * kernel executions (on their stream's track, and per kernel worker), copies
 * (enqueued and run), stream and event synchronizations, events recorded,
 * cross-stream waits (enqueued and waited), device memory allocations and
 * frees, and the GC's releases, with a flow arrow from each launch or copy
 * to its execution. cubert_trace_stop writes them as a Chrome / Perfetto
 * trace-event JSON file (open it in https://ui.perfetto.dev or
 * chrome://tracing): one process per device ("cubert cpu device N"), one
 * track per host thread, stream slot and kernel worker.
 *
 * The same trace starts from the environment: CUBERT_TRACE=trace.json starts
 * it at the first CPU client create of the process and writes the file at
 * exit (docs/configuration.md).
 *
 * Cost: each recording point is one load and one branch while no trace
 * records. While one records, events go to a bounded ring of `capacity`
 * events (a span, an instant, a flow end: one event each) with no lock and
 * no allocation; when it is full the oldest events are overwritten and
 * counted as dropped (cubert_trace_stats, and "dropped_events" in the
 * file's "otherData").
 *
 * One trace per process at a time. Include this header on its own (the
 * umbrella cubert/cubert.h does not); link libcubert (hosted).
 */
#ifndef CUBERT_TRACE_H
#define CUBERT_TRACE_H

#include "cubert/allocator.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

/* Default ring size (events) when neither the options nor
 * CUBERT_TRACE_BUFFER give one; 112 bytes an event: 7 MiB. */
#define CUBERT_TRACE_DEFAULT_CAPACITY 65536u
/* Smallest and largest ring sizes accepted. */
#define CUBERT_TRACE_MIN_CAPACITY 16u
#define CUBERT_TRACE_MAX_CAPACITY (1u << 24)

typedef struct cubert_trace_options_t {
  /* The file cubert_trace_stop writes (copied at start). Required. */
  const char *path;
  /* Ring size in events (CUBERT_TRACE_MIN_CAPACITY .. _MAX_CAPACITY);
   * 0: CUBERT_TRACE_BUFFER from the environment, else
   * CUBERT_TRACE_DEFAULT_CAPACITY. */
  uint32_t capacity;
  /* Allocates the ring and the path copy at start (freed at stop); a NULL
   * fn: the libc allocator. */
  cubert_allocator_t allocator;
} cubert_trace_options_t;

/* Counters of the trace that records (or of the last one stopped). */
typedef struct cubert_trace_stats_t {
  uint64_t recorded; /* events recorded since start (kept + dropped) */
  uint64_t dropped;  /* events overwritten because the ring was full */
  uint32_t capacity; /* the ring size */
  uint32_t active;   /* 1 while recording */
} cubert_trace_stats_t;

/* Zeros (path NULL, default capacity, the libc allocator). NULL: no-op. */
CUBERT_API void cubert_trace_options_initialize(cubert_trace_options_t *options);

/* Start recording into a fresh ring. Returns OK; INVALID_ARGUMENT (kind
 * INVALID_ARGUMENT) for NULL options or path, a capacity out of range, an
 * invalid CUBERT_TRACE_BUFFER (when capacity is 0); FAILED_PRECONDITION
 * (kind FAILED_PRECONDITION) when a trace already records (started by this
 * call or by CUBERT_TRACE); RESOURCE_EXHAUSTED (kind HOST_OUT_OF_MEMORY)
 * when the ring cannot be allocated. Nothing changes on failure.
 * out_error may be NULL. Thread-safe; does not block. */
CUBERT_API cubert_status_t cubert_trace_start(const cubert_trace_options_t *options,
                                              cubert_error_t *out_error);

/* Stop recording, wait for recordings in flight (a few instructions each),
 * write the JSON file to the path given at start, free the ring. The stats
 * of the stopped trace go to *out_stats (may be NULL). Returns OK;
 * FAILED_PRECONDITION (kind FAILED_PRECONDITION) when no trace records (a
 * CUBERT_TRACE trace is stopped and written here too, and then not again at
 * exit); IO_FAILED (kind IO_UNKNOWN, the reason
 * names the path) when the file cannot be written (the trace is stopped and
 * freed all the same); RESOURCE_EXHAUSTED when the events cannot be sorted
 * for want of memory (idem). Thread-safe; blocks on the file write. */
CUBERT_API cubert_status_t cubert_trace_stop(cubert_trace_stats_t *out_stats,
                                             cubert_error_t *out_error);

/* The counters of the trace that records, or of the last one stopped
 * (zeros when none ran). Thread-safe (takes the start / stop mutex
 * briefly); does not block otherwise. NULL: no-op. */
CUBERT_API void cubert_trace_stats(cubert_trace_stats_t *out_stats);

CUBERT_EXTERN_C_END

#endif /* CUBERT_TRACE_H */
