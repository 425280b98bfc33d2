/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_native.c: a stream slot's driver stream, for a
 * driver's own calls that order its device's work with code outside cubert
 * (the CUDA driver's cubert_cuda_export_event and friends, cubert/cuda.h).
 * A recording stream has no work to order: refused (cubert/record.h).
 */
#include "server/server_internal.h"

cubert_status_t cubert__server_driver_stream(cubert_server_t *server, uint64_t stream,
                                             cubert_driver_stream_t **out_stream,
                                             cubert_error_t *out_error) {
  server_slot_t *slot = NULL;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(
      cubert__server_not_recording(server, stream, "ordering with code outside cubert", out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream, &slot, out_error));
  *out_stream = slot->stream;
  return CUBERT_STATUS_OK;
}
