/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_base.c: what every part of the server uses: the sticky
 * device-lost state, the stream slots, and the error queues.
 *
 * A stream id maps to a slot (value mod max_streams), made here on first use:
 * a driver stream and a memory manager (server_memory.c); the MultiStream
 * (core/stream) keeps the slot's cursors and queued errors. Errors of asynchronous work live in three places, merged
 * at every drain (flush / sync / read) into one SERVER_UNHEALTHY aggregate:
 * the MultiStream's per-slot queue (what the server itself finds while
 * enqueueing, e.g. a launch above the device's limits), the driver's
 * per-stream errors (what failed while it ran), and, after a
 * sync_collective, the communication stream's. A driver status UNAVAILABLE
 * means the device was lost: the server keeps that error and returns it from
 * every later call at once (server_lost).
 */
#include "server/server_internal.h"

/* ---- errors ---------------------------------------------------------------------- */

cubert_status_t server_lost(const cubert_server_t *server, cubert_error_t *out_error) {
  if (server->lost.status == CUBERT_STATUS_OK) return CUBERT_STATUS_OK;
  if (out_error) *out_error = server->lost;
  return server->lost.status;
}

/* A loss noticed without a record (event_query has none): the driver's
 * record of it, from the first stream whose errors report it. */
static bool lost_record(cubert_server_t *server, cubert_error_t *out) {
  uint32_t i;
  for (i = 0; i < server->max_streams; i++) {
    cubert_error_clear(out);
    if (server->slots[i] &&
        server->driver->stream_errors(server->self, server->slots[i]->stream, out) ==
        CUBERT_STATUS_UNAVAILABLE &&
        out->depth > 0)
      return true;
  }
  return false;
}

cubert_status_t server_note(cubert_server_t *server, cubert_status_t status, const cubert_error_t *error) {
  if (status != CUBERT_STATUS_UNAVAILABLE || server->lost.status != CUBERT_STATUS_OK) return status;
  if (error && error->depth > 0) {
    server->lost = *error;
  } else if (!lost_record(server, &server->lost)) {
    cubert_error_set(&server->lost, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "the device was lost");
  }
  server->lost.status = CUBERT_STATUS_UNAVAILABLE;
  return status;
}

cubert_status_t server_unsupported(const cubert_server_t *server, const char *what,
                                   cubert_error_t *out_error) {
  char text[CUBERT_ERROR_REASON_SIZE];
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, text, sizeof text);
  cubert__fmt_append_str(&f, "the ");
  cubert__fmt_append_str(&f, server->driver->name ? server->driver->name : "(unnamed)");
  cubert__fmt_append_str(&f, " driver has no ");
  cubert__fmt_append_str(&f, what);
  return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0, text);
}

/* ---- slots --------------------------------------------------------------------------- */

/* With several streams a slot takes whole cache-line pairs
 * (CUBERT_FALSE_SHARING_BYTES, core/base/internal.h): the sharded reserve
 * and launch of its stream write it (sharded) and read it from the stream's
 * thread, which must not meet another stream's thread on a line or on its
 * prefetched neighbour (issue 27). One stream (a small device): no padding. */
#define SLOT_LINE CUBERT_FALSE_SHARING_BYTES

static size_t slot_bytes(const cubert_server_t *server) {
  return server->max_streams > 1u ? (sizeof(server_slot_t) + (SLOT_LINE - 1u)) / SLOT_LINE * SLOT_LINE
                                  : sizeof(server_slot_t);
}

static size_t slot_align(const cubert_server_t *server) {
  return server->max_streams > 1u ? SLOT_LINE : 0;
}

cubert_status_t server_slot(cubert_server_t *server, uint64_t stream_id, server_slot_t **out_slot,
                            cubert_error_t *out_error) {
  uint32_t index = (uint32_t)(stream_id % server->max_streams);
  server_slot_t *slot = server->slots[index];
  cubert_status_t status;
  if (slot) {
    *out_slot = slot;
    return CUBERT_STATUS_OK;
  }
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (cubert_allocator_malloc(server->allocator, slot_bytes(server), slot_align(server), (void **)&slot,
                              NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "stream slot");
  slot->server = server;
  slot->index = index;
  slot->comm_event = NULL;
  status = server_note(server, server->driver->stream_create(server->self, index, &slot->stream, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK) {
    status = server_memory_create(server, slot, out_error);
    if (status != CUBERT_STATUS_OK) server->driver->stream_destroy(server->self, slot->stream);
  }
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(server->allocator, slot, slot_bytes(server), slot_align(server));
    return status;
  }
  server->slots[index] = slot;
  *out_slot = slot;
  return CUBERT_STATUS_OK;
}

void server_slots_destroy(cubert_server_t *server) {
  uint32_t i = server->max_streams;
  if (!server->slots) return;
  while (i-- > 0) {
    server_slot_t *slot = server->slots[i];
    if (!slot) continue;
    server_memory_destroy(slot); /* the memory goes back on the slot's own stream, before it stops */
    if (slot->comm_event) server->driver->event_destroy(server->self, slot->comm_event);
    server->driver->stream_destroy(server->self, slot->stream);
    server->slots[i] = NULL;
    cubert_allocator_free(server->allocator, slot, slot_bytes(server), slot_align(server));
  }
}

server_slot_t *server_slot_existing(const cubert_server_t *server, uint64_t stream_id) {
  return server->slots[stream_id % server->max_streams];
}

/* Move the driver's errors of `slot` so far onto the slot's queue (keeps the
 * order in which they happened relative to what the server pushes next). */
static void pull_driver_errors(cubert_server_t *server, server_slot_t *slot) {
  cubert_error_t e;
  cubert_error_clear(&e);
  if (server->driver->stream_errors(server->self, slot->stream, &e) != CUBERT_STATUS_OK && e.depth > 0)
    (void)cubert__multi_stream_error_push(server->multi, slot->index, &e);
}

void server_push_error(cubert_server_t *server, uint64_t stream_id, const cubert_error_t *error) {
  server_slot_t *slot = NULL;
  if (server_slot(server, stream_id, &slot, NULL) != CUBERT_STATUS_OK) return;
  pull_driver_errors(server, slot);
  (void)cubert__multi_stream_error_push(server->multi, stream_id, error);
}

/* The communication stream's errors up to the slot's sync_collective point,
 * once that point completed (else a later drain takes them). */
static void comm_collect(cubert_server_t *server, server_slot_t *slot, cubert_error_t *aggregate) {
  cubert_error_t e;
  if (!server->comm || server->driver->event_query(server->self, slot->comm_event) != CUBERT_STATUS_OK)
    return;
  server->driver->event_destroy(server->self, slot->comm_event);
  slot->comm_event = NULL;
  cubert_error_clear(&e);
  if (server->driver->stream_errors(server->self, server->comm->stream, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(aggregate, &e);
}

cubert_status_t server_drain(cubert_server_t *server, uint64_t stream_id, cubert_error_t *out_error) {
  server_slot_t *slot = server_slot_existing(server, stream_id);
  cubert_error_t aggregate, e;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (!slot) return CUBERT_STATUS_OK;
  cubert_error_clear(&aggregate);
  cubert_error_clear(&e);
  if (cubert__multi_stream_error_drain(server->multi, stream_id, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(&aggregate, &e);
  cubert_error_clear(&e);
  if (server->driver->stream_errors(server->self, slot->stream, &e) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(&aggregate, &e);
  if (slot->comm_event) comm_collect(server, slot, &aggregate);
  if (aggregate.depth == 0) return CUBERT_STATUS_OK;
  if (out_error) *out_error = aggregate;
  return CUBERT_STATUS_SERVER_UNHEALTHY;
}
