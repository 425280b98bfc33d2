/* SPDX-License-Identifier: MIT */
/*
 * cubert/config.h: compile-time switches that leave optional features out of
 * the core, for small embedded builds. Each switch is 1 (compiled in) unless
 * the library is built with it defined to 0, e.g.
 *
 *   make CONFIG_FLAGS="-DCUBERT_CONFIG_RACE_CHECKER=0 -DCUBERT_CONFIG_PROFILING=0"
 *
 * (`make size` builds the minimal core: every switch 0). The API does not
 * change: a compiled-out feature's public functions still link and return
 * CUBERT_STATUS_UNSUPPORTED with an error record saying the feature was
 * compiled out (functions without a status say so in their comments).
 * cubert_config_features() tells a program what its library holds.
 *
 *   CUBERT_CONFIG_RACE_CHECKER  the happens-before race checker (cubert/backend/race.h)
 *   CUBERT_CONFIG_SIMULATION    the seeded chooser, explorer and shrinker of the
 *                               deterministic simulation (cubert/sim.h)
 *   CUBERT_CONFIG_PROFILING     profilers and profile summaries (cubert/profile.h,
 *                               cubert/backend/profiler.h)
 *   CUBERT_CONFIG_ERROR_TEXT    CubeCL's message texts in cubert_error_format and
 *                               in aggregates; without it a record is written
 *                               in numbers (kinds, status, fields, reason)
 *
 * Thread-safe, non-blocking.
 */
#ifndef CUBERT_CONFIG_H
#define CUBERT_CONFIG_H

#include "cubert/base.h"

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

CUBERT_EXTERN_C_BEGIN

/* Bits of cubert_config_features(). */
#define CUBERT_FEATURE_RACE_CHECKER 0x1u
#define CUBERT_FEATURE_SIMULATION 0x2u
#define CUBERT_FEATURE_PROFILING 0x4u
#define CUBERT_FEATURE_ERROR_TEXT 0x8u

/* The CUBERT_FEATURE_* bits of the features compiled into the library (its
 * CUBERT_CONFIG_* switches, which may differ from the caller's macros). */
CUBERT_API uint32_t cubert_config_features(void);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CONFIG_H */
