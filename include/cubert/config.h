/* SPDX-License-Identifier: MIT */
/*
 * cubert/config.h: compile-time switches that leave optional features out of
 * the core, for small embedded builds. Each switch is 1 (compiled in) unless
 * the library is built with it defined to 0, e.g.
 *
 *   make CONFIG_FLAGS="-DCUBERT_CONFIG_RACE_CHECKER=0 -DCUBERT_CONFIG_PROFILING=0"
 *
 * or, with every choice in one header of the host's own, with
 *
 *   -DCUBERT_CONFIG_FILE='"my_cubert_config.h"'
 *
 * (that header is included first; examples/embedded/cubert_config_minimal.h
 * is the minimal core's). The library and every file that includes cubert's
 * headers must be compiled with the same choices.
 * (`make size` builds the minimal core: every switch 0). The API does not
 * change: a compiled-out feature's public functions still link and return
 * CUBERT_STATUS_UNSUPPORTED with an error record saying the feature was
 * compiled out (functions without a status say so in their comments).
 * cubert_config_features() tells a program what its library holds.
 *
 *   CUBERT_CONFIG_RACE_CHECKER  the happens-before race checker (core/check/race.h)
 *   CUBERT_CONFIG_SIMULATION    the seeded chooser, explorer and shrinker of the
 *                               deterministic simulation (cubert/sim.h)
 *   CUBERT_CONFIG_PROFILING     profilers and profile summaries (cubert/profile.h,
 *                               core/profile/profiler.h)
 *   CUBERT_CONFIG_ERROR_TEXT    CubeCL's message texts in cubert_error_format and
 *                               in aggregates; without it a record is written
 *                               in numbers (kinds, status, fields, reason)
 *   CUBERT_CONFIG_ERROR_REASONS the reason strings the core writes into error
 *                               records (cubert_error_t.reason): without it
 *                               the core's records carry kinds, status and
 *                               fields only (a caller's own reasons stay)
 *   CUBERT_CONFIG_COLLECTIVES   collectives (all_reduce, send, recv,
 *                               to_client_tensor, ensure_init_collective: they
 *                               return UNSUPPORTED/COMPILED_OUT; to_client and
 *                               change_client_sync copy through the host,
 *                               sync_collective has nothing to wait for)
 *   CUBERT_CONFIG_STAGING       the server's staging buffers: reserve_staging
 *                               gives buffers from the client's allocator (as
 *                               when a server refuses), staging() changes
 *                               nothing, the _pinned creates copy from those
 *   CUBERT_CONFIG_PAGED_POOLS   the memory pools that carve pages (sliced and
 *                               exclusive) and the presets' ladders: only
 *                               direct pools remain; both presets (SubSlices,
 *                               ExclusivePages) become one direct pool
 *                               (reclaim_at 0), a sliced or exclusive entry is
 *                               refused (UNSUPPORTED/COMPILED_OUT)
 *   CUBERT_CONFIG_PERSISTENT_MEMORY  the persistent pool and persistent
 *                               allocation windows (cubert_client_memory_
 *                               persistent_allocation returns UNSUPPORTED/
 *                               COMPILED_OUT; the allocation mode stays Auto)
 *
 * and one size:
 *
 *   CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY  devices registered at once (the
 *                               registry is the core's only static data: 16
 *                               bytes an entry on 32-bit targets); 64 unless
 *                               defined (the minimal core: 8)
 *
 * Thread-safe, non-blocking.
 */
#ifndef CUBERT_CONFIG_H
#define CUBERT_CONFIG_H

#include "cubert/base.h"

#ifdef CUBERT_CONFIG_FILE
#include CUBERT_CONFIG_FILE
#endif

#ifndef CUBERT_CONFIG_RACE_CHECKER
#define CUBERT_CONFIG_RACE_CHECKER 1
#endif
#ifndef CUBERT_CONFIG_SIMULATION
#define CUBERT_CONFIG_SIMULATION 1
#endif
#ifndef CUBERT_CONFIG_PROFILING
#define CUBERT_CONFIG_PROFILING 1
#endif
#ifndef CUBERT_CONFIG_ERROR_TEXT
#define CUBERT_CONFIG_ERROR_TEXT 1
#endif
#ifndef CUBERT_CONFIG_ERROR_REASONS
#define CUBERT_CONFIG_ERROR_REASONS 1
#endif
#ifndef CUBERT_CONFIG_COLLECTIVES
#define CUBERT_CONFIG_COLLECTIVES 1
#endif
#ifndef CUBERT_CONFIG_STAGING
#define CUBERT_CONFIG_STAGING 1
#endif
#ifndef CUBERT_CONFIG_PAGED_POOLS
#define CUBERT_CONFIG_PAGED_POOLS 1
#endif
#ifndef CUBERT_CONFIG_PERSISTENT_MEMORY
#define CUBERT_CONFIG_PERSISTENT_MEMORY 1
#endif
#ifndef CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY
#define CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY 64
#endif

CUBERT_EXTERN_C_BEGIN

/* Bits of cubert_config_features(). */
#define CUBERT_FEATURE_RACE_CHECKER 0x1u
#define CUBERT_FEATURE_SIMULATION 0x2u
#define CUBERT_FEATURE_PROFILING 0x4u
#define CUBERT_FEATURE_ERROR_TEXT 0x8u
/* (not CUBERT_FEATURE_COLLECTIVES / _STAGING of cubert/properties.h: those say
 * what a device offers, these what the library holds) */
#define CUBERT_FEATURE_COLLECTIVE_OPS 0x10u
#define CUBERT_FEATURE_STAGING_BUFFERS 0x20u
#define CUBERT_FEATURE_PAGED_POOLS 0x40u
#define CUBERT_FEATURE_PERSISTENT_MEMORY 0x80u
#define CUBERT_FEATURE_ERROR_REASONS 0x100u

/* The CUBERT_FEATURE_* bits of the features compiled into the library (its
 * CUBERT_CONFIG_* switches, which may differ from the caller's macros). */
CUBERT_API uint32_t cubert_config_features(void);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CONFIG_H */
