/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_profile.c: profiling tokens: host time between two
 * stream syncs, measured with the host's clock hook. A device created
 * without a clock answers UNSUPPORTED.
 */
#include "server/server_internal.h"
#include "profile/profiler.h"

#if CUBERT_CONFIG_PROFILING /* else its calls answer COMPILED_OUT where they stand (server.h) */

bool cubert__server_has_clock(const cubert_server_t *server) { return server->profiler != NULL; }

/* Wait for the stream and take its queued errors (blocks). */
static cubert_status_t profile_sync(cubert_server_t *server, uint64_t stream, cubert_error_t *out_error) {
  server_slot_t *slot = server_slot_existing(server, stream);
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(server_stream_sync(server, stream, out_error));
  if (!slot) return CUBERT_STATUS_OK;
  server_race_host_sync(server, slot->index);
  server_gc_poll_if_pending(server);
  return server_drain(server, stream, out_error);
}

/* start_profile: sync the stream (its errors are returned), then a token. */
cubert_status_t cubert__server_profile_start(cubert_server_t *server, uint64_t stream,
                                             cubert_profiling_token_t *out_token,
                                             cubert_error_t *out_error) {
  if (!server->profiler) return server_unsupported(server, "clock: profiling needs one", out_error);
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, stream, "profile", out_error));
  CUBERT_RETURN_IF_ERROR(profile_sync(server, stream, out_error));
  return cubert__profiler_start(server->profiler, out_token, out_error);
}

/* end_profile: sync again; a sync error invalidates every active token
 * (ProfileError::Server), then the token is stopped. */
cubert_status_t cubert__server_profile_end(cubert_server_t *server, uint64_t stream,
                                           cubert_profiling_token_t token,
                                           cubert_profile_duration_t *out_duration,
                                           cubert_error_t *out_error) {
  cubert_error_t sync_error;
  if (!server->profiler) return server_unsupported(server, "clock: profiling needs one", out_error);
  cubert_error_clear(&sync_error);
  if (profile_sync(server, stream, &sync_error) != CUBERT_STATUS_OK)
    (void)cubert__profiler_error(server->profiler, &sync_error);
  return cubert__profiler_stop(server->profiler, token, out_duration, out_error);
}

#endif /* CUBERT_CONFIG_PROFILING */
