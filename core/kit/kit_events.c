/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit_events.c: the MultiStream's event backend (cubert/backend/
 * stream.h) over the driver. A backend stream is a kit slot (created here
 * with its driver stream and, for regular slots, its memory); a backend
 * event is a kit_event_t: the driver's event plus the race checker's token
 * of the same point, recycled through a free list so steady-state flushes
 * allocate nothing.
 *
 * The race checker hears every wait the MultiStream asks for, even when the
 * point already completed: it checks what the program expresses, not what
 * happened to run (docs/race-checker.md). The test-only faults drop a wait
 * here (neither enqueued nor told to the checker).
 */
#include "kit/kit_internal.h"

static cubert_status_t ev_create_stream(void *self, uint32_t index, void **out_stream,
                                        cubert_error_t *out_error) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  kit_slot_t *slot = NULL;
  cubert_status_t status;
  /* unreachable: the stream pool (max_streams slots + 1 special) refuses larger indices */
  if (index > kit->max_streams)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "no such stream slot");
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  if (cubert_allocator_malloc(kit->allocator, sizeof(*slot), 0, (void **)&slot,
                              NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "stream slot");
  slot->kit = kit;
  slot->index = index;
  status = kit_note(kit, kit->driver->stream_create(kit->self, index, &slot->stream, out_error),
                    out_error);
  if (status == CUBERT_STATUS_OK && index < kit->max_streams) {
    status = kit_memory_create(kit, slot, out_error);
    if (status != CUBERT_STATUS_OK) kit->driver->stream_destroy(kit->self, slot->stream);
  }
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(kit->allocator, slot, sizeof(*slot), 0);
    return status;
  }
  kit->slots[index] = slot;
  *out_stream = slot;
  return CUBERT_STATUS_OK;
}

static void ev_destroy_stream(void *self, void *stream) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  kit_slot_t *slot = (kit_slot_t *)stream;
  /* the memory goes back on the slot's own stream, before it stops */
  kit_memory_destroy(slot);
  if (slot->comm_event) kit->driver->event_destroy(kit->self, slot->comm_event);
  kit->driver->stream_destroy(kit->self, slot->stream);
  kit->slots[slot->index] = NULL;
  cubert_allocator_free(kit->allocator, slot, sizeof(*slot), 0);
}

static cubert_status_t ev_flush(void *self, void *stream, void **out_event,
                                cubert_error_t *out_error) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  kit_slot_t *slot = (kit_slot_t *)stream;
  kit_event_t *ev = kit->free_events;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  if (ev) {
    kit->free_events = ev->next;
  } else if (cubert_allocator_malloc(kit->allocator, sizeof(*ev), 0, (void **)&ev, NULL) !=
             CUBERT_STATUS_OK) {
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "event");
  }
  status = kit_note(kit, kit->driver->event_record(kit->self, slot->stream, &ev->event, out_error),
                    out_error);
  if (status != CUBERT_STATUS_OK) {
    ev->next = kit->free_events;
    kit->free_events = ev;
    return status;
  }
  ev->next = NULL;
  ev->race = kit_race_record(kit, slot->index);
  *out_event = ev;
  return CUBERT_STATUS_OK;
}

static cubert_status_t ev_wait_event(void *self, void *stream, void *event,
                                     cubert_error_t *out_error) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  kit_slot_t *slot = (kit_slot_t *)stream;
  kit_event_t *ev = (kit_event_t *)event;
  /* test-only faults: drop the Nth wait of a regular stream / of the GC stream */
  if (kit->fault_drop_wait && slot->index < kit->max_streams &&
      ++kit->waits_seen == kit->fault_drop_wait)
    return CUBERT_STATUS_OK;
  if (kit->fault_drop_gc_wait && slot->index == kit->max_streams &&
      ++kit->gc_waits_seen == kit->fault_drop_gc_wait)
    return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  kit_race_stream_wait(kit, slot->index, ev->race);
  return kit_note(kit, kit->driver->event_wait(kit->self, slot->stream, ev->event, out_error),
                  out_error);
}

static cubert_status_t ev_wait_event_sync(void *self, void *event, cubert_error_t *out_error) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  CUBERT_RETURN_IF_ERROR(kit_lost(kit, out_error));
  return kit_note(kit,
                  kit->driver->event_synchronize(kit->self, ((kit_event_t *)event)->event,
                                                 UINT64_MAX, out_error),
                  out_error);
}

static bool ev_event_completed(void *self, void *event) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  cubert_status_t status = kit->driver->event_query(kit->self, ((kit_event_t *)event)->event);
  (void)kit_note(kit, status, NULL);
  return status != CUBERT_STATUS_BUSY; /* a lost device completes nothing: release anyway */
}

static void ev_release_event(void *self, void *event) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  kit_event_t *ev = (kit_event_t *)event;
  kit_race_release(kit, ev->race);
  ev->race.index = 0;
  ev->race.generation = 0;
  kit->driver->event_destroy(kit->self, ev->event);
  ev->event = NULL;
  ev->next = kit->free_events;
  kit->free_events = ev;
}

/* The cursor of the last command that may have written the binding on its
 * origin slot. The kit does not track writes per buffer, so it answers with
 * the origin's current cursor: a stream that already synced with the origin
 * waits again whenever the origin enqueued anything since. CubeCL uses the
 * cursor at which the memory was bound, which misses a later kernel that
 * writes the buffer on its origin stream (cts_cross_stream_launch_binding). */
static uint64_t ev_handle_cursor(void *self, void *origin_stream, const cubert_binding_t *binding) {
  cubert_kit_t *kit = (cubert_kit_t *)self;
  (void)binding;
  return cubert_multi_stream_cursor(kit->multi, ((kit_slot_t *)origin_stream)->index);
}

void kit_events_free_all(cubert_kit_t *kit) {
  while (kit->free_events) {
    kit_event_t *ev = kit->free_events;
    kit->free_events = ev->next;
    cubert_allocator_free(kit->allocator, ev, sizeof(*ev), 0);
  }
}

const cubert_event_backend_vtable_t kit_event_backend_vtable = {
    ev_create_stream,   ev_destroy_stream,  ev_flush,         ev_wait_event,
    ev_wait_event_sync, ev_event_completed, ev_release_event, ev_handle_cursor,
};
