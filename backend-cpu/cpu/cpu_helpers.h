/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_helpers.h: a CPU device's stream helpers, a few threads
 * shared by all its streams that run the ops of a stream whose own worker
 * sleeps (issue 27: "64 streams from one thread"; docs/streams.md, "Stream
 * helpers").
 *
 * Why: every stream has its worker (cpu_stream.c), which spins a while when
 * idle, then sleeps. A program that spreads launches over more streams than
 * there are cores finds each stream's worker asleep, and every launch paid
 * for waking one (a futex wake, 2 us on a 16-core host: 64 streams cost 10x
 * one stream). A helper that is awake serves any stream: a commit that finds
 * the stream's worker asleep offers the stream to the helpers (a bit in a
 * bitmap) instead of waking the worker, and an idle helper spinning on the
 * bitmap takes the stream's consumer role and runs its ops (the same role a
 * waiting host thread takes: cpu_stream.h, "Who runs the ops").
 *
 * Rules, so that no op is delayed behind another and none is lost:
 *   - An offer that finds no helper idle wakes a sleeping helper; with every
 *     helper busy it takes its offer back and wakes the stream's own worker
 *     (as without helpers). A helper that takes an offer while others are
 *     pending and no helper is left idle does the same for them. So a long
 *     kernel run by a helper never holds up another stream's op.
 *   - A helper never blocks: it stops at an op whose wait is not satisfied
 *     yet (a cross-stream wait) and hands the stream to its worker; it runs
 *     at most CPU_HELPERS_BATCH ops per offer, then offers the stream again.
 *   - Streams that carry collectives (worker_only) and streams whose worker a
 *     test holds are never offered.
 *   - A stream leaves the helpers (cpu_helpers_unregister, at its teardown)
 *     only when no helper uses it: helpers announce the stream they are
 *     about to use (a hazard pointer each) and re-check it is registered.
 *
 * Threading: offer and register/unregister are thread-safe; create/destroy
 * are not (the device's creation and teardown).
 */
#ifndef CUBERT_CPU_HELPERS_H
#define CUBERT_CPU_HELPERS_H

#include "cubert/cubert.h"
#include "os/os_thread.h"

struct cpu_stream_t; /* cpu_stream.h */
typedef struct cpu_helpers_t cpu_helpers_t;

/* The most helpers a device may have (cubert_cpu_options_t.stream_helpers). */
#define CPU_HELPERS_MAX 64u
/* Ops a helper runs per offer before it offers the stream again. */
#define CPU_HELPERS_BATCH 64u

/* Start `count` (1..CPU_HELPERS_MAX) helper threads for streams with indexes
 * below stream_count. OK; RESOURCE_EXHAUSTED (memory or threads: nothing
 * is left running); INVALID_ARGUMENT for a count out of range. */
cubert_status_t cpu_helpers_create(cubert_allocator_t allocator, uint32_t count,
                                   uint32_t stream_count, cpu_helpers_t **out_helpers);
/* Stop and join the helpers (no stream may be registered); NULL: no-op. */
void cpu_helpers_destroy(cpu_helpers_t *helpers);

/* The stream may be offered from now on (sets stream->helpers). Its slot
 * must be below stream_count and not registered. Thread-safe. */
void cpu_helpers_register(cpu_helpers_t *helpers, struct cpu_stream_t *stream);
/* No helper uses the stream after this returns (it may wait for one that
 * runs its ops to finish them). Thread-safe; blocks briefly. */
void cpu_helpers_unregister(cpu_helpers_t *helpers, struct cpu_stream_t *stream);

/* A commit found the stream's worker asleep: have a helper run its
 * published ops (see the rules above). Called once per offer by the
 * producer side (cpu_stream.c: the stream's `offered` flag); never blocks
 * beyond a wake-up. */
void cpu_helpers_offer(cpu_helpers_t *helpers, struct cpu_stream_t *stream);

/* Statistics (tests): offers the helpers took and ran ops for; offers that
 * went to the stream's worker because every helper was busy. */
uint64_t cpu_helpers_served(const cpu_helpers_t *helpers);
uint64_t cpu_helpers_handed_back(const cpu_helpers_t *helpers);
uint32_t cpu_helpers_count(const cpu_helpers_t *helpers);

#endif
