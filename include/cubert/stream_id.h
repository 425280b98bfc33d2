/* SPDX-License-Identifier: MIT */
/*
 * cubert/stream_id.h: stream identity (CubeCL's StreamId and
 * StreamPolicy). A stream id is a plain u64 value; drivers map it to one of
 * their `max_streams` stream slots by `value mod max_streams`, so threads
 * whose ids differ by a multiple of max_streams share a slot (and its memory
 * pools).
 *
 * Which id the calling thread uses:
 *  - freestanding builds (core only): always cubert_stream_id_default(), the
 *    single stream 0 (CubeCL's no-std behaviour);
 *  - hosted builds: cubert_stream_id_current() in cubert/os.h (per-thread
 *    ids, a scoped override, a process-wide policy).
 * A client may also be pinned to an explicit id at any time.
 * Pure value functions: thread-safe, non-blocking, no allocation.
 */
#ifndef CUBERT_STREAM_ID_H
#define CUBERT_STREAM_ID_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

typedef struct cubert_stream_id_t {
  uint64_t value;
} cubert_stream_id_t;

/* How the OS layer picks the calling thread's stream (CubeCL's
 * StreamPolicy; config key streaming.policy). Values are stable ABI. */
typedef enum cubert_stream_policy_e {
  CUBERT_STREAM_POLICY_PER_THREAD = 0, /* default: one id per OS thread, lazily allocated */
  CUBERT_STREAM_POLICY_PER_TASK = 1,   /* CubeCL's tokio-task policy; cubert has no task
                                          runtime, so this behaves as PER_THREAD (as CubeCL
                                          does without its tokio feature) */
  CUBERT_STREAM_POLICY_SINGLE = 2,     /* every thread uses stream 0 */
  CUBERT_STREAM_POLICY_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_stream_policy_t;

/* The id of freestanding builds and of the SINGLE policy: value 0. */
CUBERT_API cubert_stream_id_t cubert_stream_id_default(void);

/* A stream id with the given value. */
CUBERT_API cubert_stream_id_t cubert_stream_id_from_value(uint64_t value);

/* a.value == b.value. */
CUBERT_API bool cubert_stream_id_equal(cubert_stream_id_t a, cubert_stream_id_t b);

/* The stream slot of `id` among `max_streams` slots: id.value mod
 * max_streams. max_streams == 0 (no slots configured) yields slot 0, so the
 * result is always a valid index for any driver with at least one slot. */
CUBERT_API uint32_t cubert_stream_id_slot(cubert_stream_id_t id, uint32_t max_streams);

/* Whether `policy` is one of the values above. */
CUBERT_API bool cubert_stream_policy_is_valid(cubert_stream_policy_t policy);

CUBERT_EXTERN_C_END

#endif /* CUBERT_STREAM_ID_H */
