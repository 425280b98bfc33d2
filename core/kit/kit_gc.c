/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit_gc.c: what waits for the device before it may go: pinned
 * cross-stream bindings (the MultiStream's GC tasks) and host
 * bytes a copy still reads (a write's data, a staging buffer). Both retire
 * once an event recorded after their last use completed.
 *
 * One ring, oldest first. Polling: every kit call that may add an entry (and
 * flush, sync and read completions) releases the entries whose event
 * completed, in order, with the driver's non-blocking event_query. A full
 * ring first blocks on its oldest entry (event_synchronize), the bounded
 * back-pressure of CubeCL's GC channel. memory_usage / cleanup and teardown
 * drain it. No thread: the kit is freestanding; a driver whose events are
 * complete when recorded (CUBERT_DRIVER_SYNCHRONOUS) retires at once.
 */
#include "kit/kit_internal.h"
#include "cubert/backend/handle_table.h"

cubert_status_t kit_gc_create(cubert_kit_t *kit, uint32_t capacity, cubert_error_t *out_error) {
  if (cubert_allocator_malloc_array(kit->allocator, capacity, sizeof(kit_retire_t), 0,
                                    (void **)&kit->ring, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "kit: GC ring");
  kit->ring_capacity = capacity;
  kit->ring_head = 0;
  kit->ring_len = 0;
  return CUBERT_STATUS_OK;
}

void kit_gc_destroy(cubert_kit_t *kit) {
  if (kit->ring)
    cubert_allocator_free(kit->allocator, kit->ring,
                          (size_t)kit->ring_capacity * sizeof(kit_retire_t), 0);
  kit->ring = NULL;
}

static cubert_driver_event_t *entry_event(const kit_retire_t *e) {
  return e->task.event_ ? kit_event_driver(e->task.event_) : e->event;
}

static void entry_release(cubert_kit_t *kit, kit_retire_t *e) {
  if (e->task.event_) {
    kit_race_release_task(kit, &e->task); /* releases the pins and the event */
    return;
  }
  if (e->bytes.release) e->bytes.release(e->bytes.owner, e->bytes.data, e->bytes.size);
  e->bytes.release = NULL;
  while (e->pin_count) (void)cubert_memory_id_release_binding(kit->table, e->pins[--e->pin_count]);
  if (e->event) kit->driver->event_destroy(kit->self, e->event);
  e->event = NULL;
}

/* Release the oldest entry (its event completed, or the caller waited). */
static void pop_release(cubert_kit_t *kit) {
  kit_retire_t e = kit->ring[kit->ring_head];
  kit->ring_head = (kit->ring_head + 1u) % kit->ring_capacity;
  kit->ring_len--;
  entry_release(kit, &e);
}

/* Block on the oldest entry's event, then release it. A failed wait
 * (device lost) releases anyway: nothing will run any more. */
static void wait_oldest(cubert_kit_t *kit) {
  cubert_error_t e;
  cubert_status_t status;
  cubert_error_clear(&e);
  KIT_OBSERVE(kit, CUBERT_KIT_OBSERVE_GC_WAIT, kit->ring_len, 0);
  status = kit->driver->event_synchronize(kit->self, entry_event(&kit->ring[kit->ring_head]),
                                          UINT64_MAX, &e);
  (void)kit_note(kit, status, &e);
  pop_release(kit);
}

static kit_retire_t *push_slot(cubert_kit_t *kit) {
  kit_retire_t *e;
  if (kit->ring_len == kit->ring_capacity && kit_gc_poll(kit) == 0) wait_oldest(kit);
  e = &kit->ring[(kit->ring_head + kit->ring_len) % kit->ring_capacity];
  kit->ring_len++;
  cubert_memset(e, 0, sizeof(*e));
  return e;
}

uint32_t kit_gc_poll(cubert_kit_t *kit) {
  uint32_t released = 0;
  while (kit->ring_len) {
    cubert_status_t status =
        kit->driver->event_query(kit->self, entry_event(&kit->ring[kit->ring_head]));
    if (status == CUBERT_STATUS_BUSY) break;
    (void)kit_note(kit, status, NULL); /* a lost device completes nothing: release anyway */
    pop_release(kit);
    released++;
  }
  if (released) KIT_OBSERVE(kit, CUBERT_KIT_OBSERVE_GC_RELEASE, released, kit->ring_len);
  return released;
}

void kit_gc_drain(cubert_kit_t *kit) {
  while (kit->ring_len) wait_oldest(kit);
}

void kit_gc_take_tasks(cubert_kit_t *kit) {
  cubert_stream_gc_task_t task;
  while (cubert_multi_stream_gc_take(kit->multi, &task)) {
    kit_retire_t *e = push_slot(kit);
    e->task = task;
  }
  if (kit->driver->flags & CUBERT_DRIVER_SYNCHRONOUS) (void)kit_gc_poll(kit);
}

void kit_gc_retire_pins(cubert_kit_t *kit, cubert_driver_stream_t *stream,
                        const cubert_memory_id_t *pins, uint32_t count) {
  cubert_driver_event_t *event = NULL;
  cubert_error_t e;
  kit_retire_t *entry;
  uint32_t i;
  cubert_error_clear(&e);
  if (kit_lost(kit, NULL) != CUBERT_STATUS_OK ||
      kit_note(kit, kit->driver->event_record(kit->self, stream, &event, &e), &e) !=
          CUBERT_STATUS_OK) {
    /* no event (host memory exhausted, or the device is lost): wait for the
     * stream (no allocation) unless the device is gone, then release */
    if (kit_lost(kit, NULL) == CUBERT_STATUS_OK)
      (void)kit_note(kit, kit->driver->stream_synchronize(kit->self, stream, &e), &e);
    for (i = 0; i < count; i++) (void)cubert_memory_id_release_binding(kit->table, pins[i]);
    return;
  }
  entry = push_slot(kit);
  entry->event = event;
  for (i = 0; i < count && i < 2; i++) entry->pins[entry->pin_count++] = pins[i];
}

void kit_gc_retire_bytes(cubert_kit_t *kit, kit_slot_t *slot, cubert_bytes_t *bytes,
                         size_t count) {
  size_t i;
  for (i = 0; i < count; i++) {
    cubert_driver_event_t *event = NULL;
    cubert_error_t e;
    cubert_status_t status;
    kit_retire_t *entry;
    if (!bytes[i].release) continue;
    cubert_error_clear(&e);
    status = kit_lost(kit, NULL);
    if (status == CUBERT_STATUS_OK)
      status = kit_note(kit, kit->driver->event_record(kit->self, slot->stream, &event, &e), &e);
    if (status != CUBERT_STATUS_OK) {
      /* no event to wait for (host memory exhausted): the copy may still read
       * the bytes unless the device is gone; wait for the stream (no
       * allocation) before they go */
      if (kit_lost(kit, NULL) == CUBERT_STATUS_OK)
        (void)kit_note(kit, kit->driver->stream_synchronize(kit->self, slot->stream, &e), &e);
      bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
      bytes[i].release = NULL;
      continue;
    }
    entry = push_slot(kit);
    entry->event = event;
    entry->bytes = bytes[i];
    bytes[i].release = NULL;
  }
  if (kit->driver->flags & CUBERT_DRIVER_SYNCHRONOUS) (void)kit_gc_poll(kit);
}
