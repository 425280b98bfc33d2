/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_events.c: the MultiStream's event driver (cubert/driver/
 * stream.h) over the driver. A driver stream is a server slot (created here
 * with its driver stream and, for regular slots, its memory); a driver
 * event is a server_event_t: the driver's event plus the race checker's token
 * of the same point, recycled through a free list so steady-state flushes
 * allocate nothing.
 *
 * The race checker hears every wait the MultiStream asks for, even when the
 * point already completed: it checks what the program expresses, not what
 * happened to run (docs/race-checker.md). The test-only faults drop a wait
 * here (neither enqueued nor told to the checker).
 */
#include "server/server_internal.h"

static cubert_status_t ev_create_stream(void *self, uint32_t index, void **out_stream,
                                        cubert_error_t *out_error) {
  cubert_server_t *server = (cubert_server_t *)self;
  server_slot_t *slot = NULL;
  cubert_status_t status;
  /* unreachable: the stream pool (max_streams slots + 1 special) refuses larger indices */
  if (index > server->max_streams)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "no such stream slot");
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (cubert_allocator_malloc(server->allocator, sizeof(*slot), 0, (void **)&slot,
                              NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "stream slot");
  slot->server = server;
  slot->index = index;
  status = server_note(server, server->driver->stream_create(server->self, index, &slot->stream, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK && index < server->max_streams) {
    status = server_memory_create(server, slot, out_error);
    if (status != CUBERT_STATUS_OK) server->driver->stream_destroy(server->self, slot->stream);
  }
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(server->allocator, slot, sizeof(*slot), 0);
    return status;
  }
  server->slots[index] = slot;
  *out_stream = slot;
  return CUBERT_STATUS_OK;
}

static void ev_destroy_stream(void *self, void *stream) {
  cubert_server_t *server = (cubert_server_t *)self;
  server_slot_t *slot = (server_slot_t *)stream;
  /* the memory goes back on the slot's own stream, before it stops */
  server_memory_destroy(slot);
  if (slot->comm_event) server->driver->event_destroy(server->self, slot->comm_event);
  server->driver->stream_destroy(server->self, slot->stream);
  server->slots[slot->index] = NULL;
  cubert_allocator_free(server->allocator, slot, sizeof(*slot), 0);
}

static cubert_status_t ev_flush(void *self, void *stream, void **out_event,
                                cubert_error_t *out_error) {
  cubert_server_t *server = (cubert_server_t *)self;
  server_slot_t *slot = (server_slot_t *)stream;
  server_event_t *ev = server->free_events;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (ev) {
    server->free_events = ev->next;
  } else if (cubert_allocator_malloc(server->allocator, sizeof(*ev), 0, (void **)&ev, NULL) !=
             CUBERT_STATUS_OK) {
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "event");
  }
  status = server_note(server, server->driver->event_record(server->self, slot->stream, &ev->event, out_error),
                       out_error);
  if (status != CUBERT_STATUS_OK) {
    ev->next = server->free_events;
    server->free_events = ev;
    return status;
  }
  ev->next = NULL;
  ev->race = server_race_record(server, slot->index);
  *out_event = ev;
  return CUBERT_STATUS_OK;
}

static cubert_status_t ev_wait_event(void *self, void *stream, void *event,
                                     cubert_error_t *out_error) {
  cubert_server_t *server = (cubert_server_t *)self;
  server_slot_t *slot = (server_slot_t *)stream;
  server_event_t *ev = (server_event_t *)event;
  /* test-only faults: drop the Nth wait of a regular stream / of the GC stream */
  if (server->fault_drop_wait && slot->index < server->max_streams &&
      ++server->waits_seen == server->fault_drop_wait)
    return CUBERT_STATUS_OK;
  if (server->fault_drop_gc_wait && slot->index == server->max_streams &&
      ++server->gc_waits_seen == server->fault_drop_gc_wait)
    return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  server_race_stream_wait(server, slot->index, ev->race);
  return server_note(server, server->driver->event_wait(server->self, slot->stream, ev->event, out_error),
                     out_error);
}

static cubert_status_t ev_wait_event_sync(void *self, void *event, cubert_error_t *out_error) {
  cubert_server_t *server = (cubert_server_t *)self;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  return server_note(server,
                     server->driver->event_synchronize(server->self, ((server_event_t *)event)->event,
                                                 UINT64_MAX, out_error),
                     out_error);
}

static bool ev_event_completed(void *self, void *event) {
  cubert_server_t *server = (cubert_server_t *)self;
  cubert_status_t status = server->driver->event_query(server->self, ((server_event_t *)event)->event);
  (void)server_note(server, status, NULL);
  return status != CUBERT_STATUS_BUSY; /* a lost device completes nothing: release anyway */
}

static void ev_release_event(void *self, void *event) {
  cubert_server_t *server = (cubert_server_t *)self;
  server_event_t *ev = (server_event_t *)event;
  server_race_release(server, ev->race);
  ev->race.index = 0;
  ev->race.generation = 0;
  server->driver->event_destroy(server->self, ev->event);
  ev->event = NULL;
  ev->next = server->free_events;
  server->free_events = ev;
}

/* The cursor of the last command that may have written the binding on its
 * origin slot. The server does not track writes per buffer, so it answers with
 * the origin's current cursor: a stream that already synced with the origin
 * waits again whenever the origin enqueued anything since. CubeCL uses the
 * cursor at which the memory was bound, which misses a later kernel that
 * writes the buffer on its origin stream (cts_cross_stream_launch_binding). */
static uint64_t ev_handle_cursor(void *self, void *origin_stream, const cubert_binding_t *binding) {
  cubert_server_t *server = (cubert_server_t *)self;
  (void)binding;
  return cubert__multi_stream_cursor(server->multi, ((server_slot_t *)origin_stream)->index);
}

void server_events_free_all(cubert_server_t *server) {
  while (server->free_events) {
    server_event_t *ev = server->free_events;
    server->free_events = ev->next;
    cubert_allocator_free(server->allocator, ev, sizeof(*ev), 0);
  }
}

const cubert_event_backend_vtable_t server_event_backend_vtable = {
    ev_create_stream,   ev_destroy_stream,  ev_flush,         ev_wait_event,
    ev_wait_event_sync, ev_event_completed, ev_release_event, ev_handle_cursor,
};
