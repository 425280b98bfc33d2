/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit_profile.c: profiling tokens: host time between two
 * stream syncs, measured with the host's clock hook. A device created
 * without a clock answers UNSUPPORTED.
 */
#include "kit/kit_internal.h"
#include "cubert/backend/profiler.h"

#if CUBERT_CONFIG_PROFILING

bool cubert_kit_has_clock(const cubert_kit_t *kit) { return kit->profiler != NULL; }

/* Wait for the stream and take its queued errors (blocks). */
static cubert_status_t profile_sync(cubert_kit_t *kit, uint64_t stream, cubert_error_t *out_error) {
  kit_slot_t *slot = kit_slot_existing(kit, stream);
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_sync(kit->multi, stream, out_error));
  if (!slot) return CUBERT_STATUS_OK;
  kit_race_host_sync(kit, slot->index);
  kit_gc_poll_if_pending(kit);
  return kit_drain(kit, stream, out_error);
}

/* start_profile: sync the stream (its errors are returned), then a token. */
cubert_status_t cubert_kit_profile_start(cubert_kit_t *kit, uint64_t stream,
                                         cubert_profiling_token_t *out_token,
                                         cubert_error_t *out_error) {
  if (!kit->profiler) return kit_unsupported(kit, "clock: profiling needs one", out_error);
  CUBERT_RETURN_IF_ERROR(profile_sync(kit, stream, out_error));
  return cubert_profiler_start(kit->profiler, out_token, out_error);
}

/* end_profile: sync again; a sync error invalidates every active token
 * (ProfileError::Server), then the token is stopped. */
cubert_status_t cubert_kit_profile_end(cubert_kit_t *kit, uint64_t stream,
                                       cubert_profiling_token_t token,
                                       cubert_profile_duration_t *out_duration,
                                       cubert_error_t *out_error) {
  cubert_error_t sync_error;
  if (!kit->profiler) return kit_unsupported(kit, "clock: profiling needs one", out_error);
  cubert_error_clear(&sync_error);
  if (profile_sync(kit, stream, &sync_error) != CUBERT_STATUS_OK)
    (void)cubert_profiler_error(kit->profiler, &sync_error);
  return cubert_profiler_stop(kit->profiler, token, out_duration, out_error);
}

#else /* !CUBERT_CONFIG_PROFILING: the kit makes no profiler (a clock is ignored) */

bool cubert_kit_has_clock(const cubert_kit_t *kit) {
  (void)kit;
  return false;
}

cubert_status_t cubert_kit_profile_start(cubert_kit_t *kit, uint64_t stream,
                                         cubert_profiling_token_t *out_token,
                                         cubert_error_t *out_error) {
  (void)kit;
  (void)stream;
  (void)out_token;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "profiling (CUBERT_CONFIG_PROFILING=0)");
}

cubert_status_t cubert_kit_profile_end(cubert_kit_t *kit, uint64_t stream,
                                       cubert_profiling_token_t token,
                                       cubert_profile_duration_t *out_duration,
                                       cubert_error_t *out_error) {
  (void)token;
  (void)out_duration;
  return cubert_kit_profile_start(kit, stream, NULL, out_error);
}

#endif /* CUBERT_CONFIG_PROFILING */
