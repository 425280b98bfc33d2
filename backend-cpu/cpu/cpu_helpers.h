/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_helpers.h: a CPU device's stream helpers, a few threads
 * shared by all its streams that run the ops of cold streams whose own
 * worker sleeps (issue 27: "64 streams from one thread"; docs/streams.md,
 * "Stream helpers"). One by default with 16 usable CPUs or more, else none
 * (cubert_cpu_options_t.stream_helpers, cpu_stream_helpers_default).
 *
 * Why: every stream has its worker (cpu_stream.c), which spins a while when
 * idle, then sleeps. A program that spreads launches over more streams than
 * there are cores finds each stream's worker asleep, and every launch paid
 * for waking one (a futex wake, about 2 us on a 16-core host: 64 streams
 * cost 10x one stream).
 *
 * How: an awake helper makes passes over the registered streams; a stream
 * whose worker sleeps and that has published ops not run yet (and, every
 * 50 us, committed ones: its tail, CPU_STREAM_HELPERS_PULL_NS) is served: the helper takes the stream's
 * consumer role (the role a waiting host thread takes: cpu_stream.h, "Who
 * runs the ops") and runs its ops. A commit on a cold stream (its previous
 * commit found the worker asleep too) then writes nothing shared: no
 * wake-up, no flag; it publishes every 32 ops as always. A hot stream (the
 * worker fell asleep between bursts) is woken by its producer as without
 * helpers, and a helper that finds a stream hot (ops committed while it ran
 * them) hands it to its worker.
 *
 * Rules:
 *   - A helper never blocks and leaves long ops to the worker: it stops
 *     before a wait op whose point is not done and before an op the driver
 *     does not call small (cpu_stream_t.op_small: one-cube launches, small
 *     copies, frees), and wakes the stream's worker for it. A helper that
 *     goes busy as the last free one wakes a sleeping helper, if any.
 *   - Streams that carry collectives (worker_only) and streams whose worker a
 *     test holds are never served.
 *   - Waking: an awake helper that found nothing for 200 us (or was
 *     descheduled) sleeps; `awake` drops first, then it looks at every
 *     stream's tail. A commit on a cold stream that finds no helper awake
 *     publishes and wakes one. Its look at `awake` is relaxed (no fence on
 *     the commit): a helper falling asleep at that instant may miss the op,
 *     so a helper's first sleep lasts at most 1 ms and ends with a look.
 *   - A stream leaves the helpers (cpu_helpers_unregister, at its teardown)
 *     only when no helper uses it: helpers look at the registered streams
 *     inside an epoch (odd while looking); the unregister clears the slot,
 *     then waits for every epoch in progress to end.
 *
 * Pulls: reading a cold stream's tail costs its producer a cache-line
 * transfer at its next commit, so a helper reads at most one tail per 16 us
 * (HELPERS_PULL_GAP_NS), each stream's at most every 50 us: with 64 busy
 * streams a stream's unpublished ops wait up to about 1 ms (a wait or a
 * sync publishes them at once; every 32 commits publish too). Reading every
 * due tail on each pass cost 64 streams from one thread about 0.65x one
 * stream's launch rate against 0.79-0.91x with about 1 ms between reads
 * (docs/benchmarks.md, "Stream helpers").
 *
 * Threading: register/unregister/awake/wake are thread-safe; create/destroy
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
/* Ops a helper runs per turn; more means the stream is hot (its worker's). */
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

/* True when a helper is awake (a relaxed look: cpu_stream_commit's). */
int cpu_helpers_awake(const cpu_helpers_t *helpers);
/* Wake one sleeping helper, if any (takes the helpers' mutex). */
void cpu_helpers_wake(cpu_helpers_t *helpers);
/* Count a stream a helper handed to its worker (statistics). */
void cpu_helpers_handed_back_one(cpu_helpers_t *helpers);

/* Statistics (tests): turns in which a helper ran ops; streams it handed to
 * their workers. */
uint64_t cpu_helpers_served(const cpu_helpers_t *helpers);
uint64_t cpu_helpers_handed_back(const cpu_helpers_t *helpers);
uint32_t cpu_helpers_count(const cpu_helpers_t *helpers);

#endif
