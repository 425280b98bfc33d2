/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit_base.c: what every part of the kit uses: the sticky
 * device-lost state, the stream slots, and the error queues.
 *
 * A stream id maps to a slot (value mod max_streams) that the MultiStream
 * (core/stream) creates on first use through the kit's event backend
 * (kit_events.c): the slot gets a driver stream and a memory manager
 * (kit_memory.c). Errors of asynchronous work live in three places, merged
 * at every drain (flush / sync / read) into one SERVER_UNHEALTHY aggregate:
 * the MultiStream's per-slot queue (what the kit itself finds while
 * enqueueing, e.g. a launch above the device's limits), the driver's
 * per-stream errors (what failed while it ran), and, after a
 * sync_collective, the communication stream's. A driver status UNAVAILABLE
 * means the device was lost: the kit keeps that error and returns it from
 * every later call at once (kit_lost).
 */
#include "kit/kit_internal.h"

/* ---- errors ---------------------------------------------------------------------- */

cubert_status_t kit_lost(const cubert_kit_t *kit, cubert_error_t *out_error) {
  if (kit->lost.status == CUBERT_STATUS_OK) return CUBERT_STATUS_OK;
  if (out_error) *out_error = kit->lost;
  return kit->lost.status;
}

/* A loss noticed without a record (event_query has none): the driver's
 * record of it, from the first stream whose errors report it. */
static bool lost_record(cubert_kit_t *kit, cubert_error_t *out) {
  uint32_t i;
  for (i = 0; i < kit->max_streams; i++) {
    cubert_error_clear(out);
    if (kit->slots[i] &&
        kit->driver->stream_errors(kit->self, kit->slots[i]->stream, out) ==
            CUBERT_STATUS_UNAVAILABLE &&
        out->depth > 0)
      return true;
  }
  return false;
}

cubert_status_t kit_note(cubert_kit_t *kit, cubert_status_t status, const cubert_error_t *error) {
  if (status != CUBERT_STATUS_UNAVAILABLE || kit->lost.status != CUBERT_STATUS_OK) return status;
  if (error && error->depth > 0) {
    kit->lost = *error;
  } else if (!lost_record(kit, &kit->lost)) {
    cubert_error_set(&kit->lost, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "the device was lost");
  }
  kit->lost.status = CUBERT_STATUS_UNAVAILABLE;
  return status;
}

cubert_status_t kit_unsupported(const cubert_kit_t *kit, const char *what,
                                cubert_error_t *out_error) {
  char text[CUBERT_ERROR_REASON_SIZE];
  cubert_fmt_t f;
  cubert_fmt_initialize(&f, text, sizeof text);
  cubert_fmt_append_str(&f, "the ");
  cubert_fmt_append_str(&f, kit->driver->name ? kit->driver->name : "(unnamed)");
  cubert_fmt_append_str(&f, " driver has no ");
  cubert_fmt_append_str(&f, what);
  return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0, text);
}

/* ---- slots --------------------------------------------------------------------------- */

cubert_status_t kit_slot(cubert_kit_t *kit, uint64_t stream_id, kit_slot_t **out_slot,
                         cubert_error_t *out_error) {
  void *stream = NULL;
  kit_slot_t *slot = kit->slots[stream_id % kit->max_streams];
  if (slot) {
    *out_slot = slot;
    return CUBERT_STATUS_OK;
  }
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_stream(kit->multi, stream_id, &stream, out_error));
  *out_slot = (kit_slot_t *)stream;
  return CUBERT_STATUS_OK;
}

kit_slot_t *kit_slot_existing(const cubert_kit_t *kit, uint64_t stream_id) {
  return kit->slots[stream_id % kit->max_streams];
}

/* Move the driver's errors of `slot` so far onto the slot's queue (keeps the
 * order in which they happened relative to what the kit pushes next). */
static void pull_driver_errors(cubert_kit_t *kit, kit_slot_t *slot) {
  cubert_error_t e;
  cubert_error_clear(&e);
  if (kit->driver->stream_errors(kit->self, slot->stream, &e) != CUBERT_STATUS_OK && e.depth > 0)
    (void)cubert_multi_stream_error_push(kit->multi, slot->index, &e);
}

void kit_push_error(cubert_kit_t *kit, uint64_t stream_id, const cubert_error_t *error) {
  kit_slot_t *slot = NULL;
  if (kit_slot(kit, stream_id, &slot, NULL) != CUBERT_STATUS_OK) return;
  pull_driver_errors(kit, slot);
  (void)cubert_multi_stream_error_push(kit->multi, stream_id, error);
}

/* The communication stream's errors up to the slot's sync_collective point,
 * once that point completed (else a later drain takes them). */
static void comm_collect(cubert_kit_t *kit, kit_slot_t *slot, cubert_error_t *aggregate) {
  cubert_error_t e;
  if (!kit->comm || kit->driver->event_query(kit->self, slot->comm_event) != CUBERT_STATUS_OK)
    return;
  kit->driver->event_destroy(kit->self, slot->comm_event);
  slot->comm_event = NULL;
  cubert_error_clear(&e);
  if (kit->driver->stream_errors(kit->self, kit->comm->stream, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(aggregate, &e);
}

cubert_status_t kit_drain(cubert_kit_t *kit, uint64_t stream_id, cubert_error_t *out_error) {
  kit_slot_t *slot = kit_slot_existing(kit, stream_id);
  cubert_error_t aggregate, e;
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  if (!slot) return CUBERT_STATUS_OK;
  cubert_error_clear(&aggregate);
  cubert_error_clear(&e);
  if (cubert_multi_stream_error_drain(kit->multi, stream_id, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(&aggregate, &e);
  cubert_error_clear(&e);
  if (kit->driver->stream_errors(kit->self, slot->stream, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(&aggregate, &e);
  if (slot->comm_event) comm_collect(kit, slot, &aggregate);
  if (aggregate.depth == 0) return CUBERT_STATUS_OK;
  if (out_error) *out_error = aggregate;
  return CUBERT_STATUS_SERVER_UNHEALTHY;
}
