/* SPDX-License-Identifier: MIT */
/*
 * cubert/backend/testing.h: TEST-ONLY switches of the server kit (seeded-bug
 * programs of the race checker, docs/race-checker.md). Not for production
 * use: they make the runtime drop synchronization it needs. A device gets
 * them through cubert_kit_options_t.faults (cubert/backend/kit.h) or its
 * backend's testing entry point (cubert/backend/cpu_testing.h).
 */
#ifndef CUBERT_BACKEND_TESTING_H
#define CUBERT_BACKEND_TESTING_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* Faults the kit injects. Zero: none. */
typedef struct cubert_kit_faults_t {
  /* Drop the Nth (1-based) cross-stream wait the multi-stream asks for on a
   * regular stream (neither enqueued nor told to the race checker). Waits
   * of the GC stream are not counted. */
  uint32_t drop_wait;
  /* Drop the Nth (1-based) wait of the GC stream on a consumer (the fence a
   * GC reclamation relies on). */
  uint32_t drop_gc_wait;
} cubert_kit_faults_t;

CUBERT_EXTERN_C_END

#endif /* CUBERT_BACKEND_TESTING_H */
