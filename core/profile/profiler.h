/* SPDX-License-Identifier: MIT */
/*
 * core/profile/profiler.h: the timestamp profiler (CubeCL's
 * TimestampProfiler), the token table behind a server's start_profile /
 * end_profile: tokens issued from a counter, each remembering the host
 * instant it started at, or the error that invalidated it. Servers without
 * device timing (CPU, CUDA) call start/stop around two stream syncs, so a
 * profile is host wall-clock time between those syncs (TimingMethod::System).
 * Tokens, durations and the clock are in cubert/profile.h.
 *
 * Freestanding: memory from the injected allocator at create only. Not
 * thread-safe (the device handle serializes server calls). Nothing blocks.
 * Compiled out (CUBERT_CONFIG_PROFILING 0, cubert/config.h): nothing
 * declared here is built and nothing may call it (the server makes no
 * profiler; its token calls answer COMPILED_OUT, core/server/server.h). The
 * public entry points of cubert/profile.h: core/client/profile_off.c.
 */
#ifndef CUBERT_CORE_PROFILE_PROFILER_H
#define CUBERT_CORE_PROFILE_PROFILER_H

#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/profile.h"

CUBERT_EXTERN_C_BEGIN

/* ---- timestamp profiler ------------------------------------------------------ */

/* Capacity suggested for a server: simultaneously active (started, not yet
 * stopped) tokens. Nested `profile` calls nest tokens, so this is the
 * nesting/overlap depth a server supports. */
#define CUBERT_PROFILER_DEFAULT_CAPACITY 64u
/* Largest capacity cubert__profiler_create accepts. */
#define CUBERT_PROFILER_MAX_CAPACITY 65536u

typedef struct cubert_profiler_t cubert_profiler_t;

/* Create a profiler holding at most `capacity` active tokens (1 ..
 * CUBERT_PROFILER_MAX_CAPACITY). All its memory is allocated here, once;
 * start/stop/error never allocate. The allocator is stored and used to free
 * the profiler; the clock is stored (clock.self is borrowed for the
 * profiler's lifetime). Token ids start at 0.
 * Returns OK; INVALID_ARGUMENT for a NULL out_profiler, a NULL allocator
 * function, a NULL clock.now_ns, or a capacity out of range;
 * RESOURCE_EXHAUSTED when the allocator fails (kind HOST_OUT_OF_MEMORY).
 * On failure *out_profiler is untouched and nothing is leaked.
 * Not blocking; thread-safe (touches nothing shared). */
cubert_status_t cubert__profiler_create(cubert_allocator_t allocator,
                                                  cubert_profile_clock_t clock, uint32_t capacity,
                                                  cubert_profiler_t **out_profiler,
                                                  cubert_error_t *out_error);

/* Free the profiler (active tokens are dropped). NULL is a no-op. */
void cubert__profiler_destroy(cubert_profiler_t *profiler);

/* TimestampProfiler::start: issue the next token id (a 64-bit counter;
 * ids are never reused before it wraps after 2^64 starts) and record the
 * current instant (one clock call) for it.
 * Returns OK; INVALID_ARGUMENT for NULL arguments; PROFILE_FAILED (kind
 * PROFILE_UNKNOWN, "too many active profiles ...") when `capacity` tokens are
 * already active. On failure nothing changes (no id is consumed, the clock is
 * not read). Not thread-safe (one profiler, one user at a time). */
cubert_status_t cubert__profiler_start(cubert_profiler_t *profiler,
                                                 cubert_profiling_token_t *out_token,
                                                 cubert_error_t *out_error);

/* TimestampProfiler::stop: end `token` and forget it (a token stops once).
 *  - token unknown (never issued, already stopped): PROFILE_FAILED, kind
 *    PROFILE_NOT_REGISTERED ("No profiling registered"); nothing changes;
 *  - token invalidated by cubert__profiler_error: the token is forgotten and
 *    that error is returned: *out_error receives the stored record (a
 *    ProfileError chain, see cubert__profiler_error) and its status is
 *    returned; *out_duration is untouched;
 *  - otherwise reads the clock once and writes {start_ns, end_ns}; end_ns
 *    is clamped to start_ns if the clock went back. Returns OK.
 * INVALID_ARGUMENT for a NULL profiler or out_duration (nothing changes).
 * Not thread-safe. */
cubert_status_t cubert__profiler_stop(cubert_profiler_t *profiler,
                                                cubert_profiling_token_t token,
                                                cubert_profile_duration_t *out_duration,
                                                cubert_error_t *out_error);

/* TimestampProfiler::error: any error during a profile invalidates every
 * overlapping profile, so every active token (also one invalidated before)
 * now holds `error`; tokens started later are not affected. `error` is
 * copied and stored as a ProfileError:
 *  - outermost kind PROFILE_*: stored as is;
 *  - outermost kind LAUNCH_* (a LaunchError): wrapped in PROFILE_LAUNCH;
 *  - anything else (a ServerError, e.g. a stream's SERVER_UNHEALTHY
 *    aggregate from the sync in end_profile): wrapped in PROFILE_SERVER, as
 *    CubeCL's servers record ProfileError::Server(error).
 * The stored record keeps the status of `error`. With no active token this
 * does nothing. Borrows `error`.
 * Returns OK; INVALID_ARGUMENT for a NULL profiler, a NULL error or an empty
 * one (depth 0); nothing changes then. Not thread-safe. */
cubert_status_t cubert__profiler_error(cubert_profiler_t *profiler,
                                                 const cubert_error_t *error);

/* Number of active tokens (started, not stopped; invalidated ones count).
 * 0 for NULL. Not thread-safe against writers. */
uint32_t cubert__profiler_active_count(const cubert_profiler_t *profiler);

/* The capacity given at create; 0 for NULL. */
uint32_t cubert__profiler_capacity(const cubert_profiler_t *profiler);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CORE_PROFILE_PROFILER_H */
