/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_gc.c: what waits for the device before it may go: pinned
 * cross-stream bindings (the MultiStream's GC tasks) and host
 * bytes a copy still reads (a write's data, a staging buffer). Both retire
 * once an event recorded after their last use completed.
 *
 * One ring, oldest first. Polling: every server call that may add an entry (and
 * flush, sync and read completions) releases the entries whose event
 * completed, in order, with the driver's non-blocking event_query. A full
 * ring first blocks on its oldest entry (event_synchronize), the bounded
 * back-pressure of CubeCL's GC channel. memory_usage / cleanup and teardown
 * drain it. No thread: the server is freestanding; a driver whose events are
 * complete when recorded (CUBERT_DRIVER_SYNCHRONOUS) retires at once.
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"

cubert_status_t server_gc_create(cubert_server_t *server, uint32_t capacity, cubert_error_t *out_error) {
  if (cubert_allocator_malloc_array(server->allocator, capacity, sizeof(server_retire_t), 0,
                                    (void **)&server->ring, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "server: GC ring");
  server->ring_capacity = capacity;
  server->ring_head = 0;
  server->ring_len = 0;
  return CUBERT_STATUS_OK;
}

void server_gc_destroy(cubert_server_t *server) {
  if (server->ring)
    cubert_allocator_free(server->allocator, server->ring,
                          (size_t)server->ring_capacity * sizeof(server_retire_t), 0);
  server->ring = NULL;
}

static cubert_driver_event_t *entry_event(const server_retire_t *e) {
  return e->task.event_ ? server_event_driver(e->task.event_) : e->event;
}

static void entry_release(cubert_server_t *server, server_retire_t *e) {
  if (e->task.event_) {
    server_race_release_task(server, &e->task); /* releases the pins and the event */
    return;
  }
  if (e->bytes.release) e->bytes.release(e->bytes.owner, e->bytes.data, e->bytes.size);
  e->bytes.release = NULL;
  while (e->pin_count) (void)cubert__memory_id_release_binding(server->table, e->pins[--e->pin_count]);
  if (e->event) server->driver->event_destroy(server->self, e->event);
  e->event = NULL;
}

/* Release the oldest entry (its event completed, or the caller waited). */
static void pop_release(cubert_server_t *server) {
  server_retire_t e = server->ring[server->ring_head];
  server->ring_head = (server->ring_head + 1u) % server->ring_capacity;
  server->ring_len--;
  entry_release(server, &e);
}

/* Block on the oldest entry's event, then release it. A failed wait
 * (device lost) releases anyway: nothing will run any more. */
static void wait_oldest(cubert_server_t *server) {
  cubert_error_t e;
  cubert_status_t status;
  cubert_error_clear(&e);
  SERVER_OBSERVE(server, CUBERT_SERVER_OBSERVE_GC_WAIT, server->ring_len, 0);
  status = server->driver->event_synchronize(server->self, entry_event(&server->ring[server->ring_head]),
                                             UINT64_MAX, &e);
  (void)server_note(server, status, &e);
  pop_release(server);
}

static server_retire_t *push_slot(cubert_server_t *server) {
  server_retire_t *e;
  if (server->ring_len == server->ring_capacity && server_gc_poll(server) == 0) wait_oldest(server);
  e = &server->ring[(server->ring_head + server->ring_len) % server->ring_capacity];
  server->ring_len++;
  cubert_memset(e, 0, sizeof(*e));
  return e;
}

uint32_t server_gc_poll(cubert_server_t *server) {
  uint32_t released = 0;
  while (server->ring_len) {
    cubert_status_t status =
        server->driver->event_query(server->self, entry_event(&server->ring[server->ring_head]));
    if (status == CUBERT_STATUS_BUSY) break;
    (void)server_note(server, status, NULL); /* a lost device completes nothing: release anyway */
    pop_release(server);
    released++;
  }
  if (released) SERVER_OBSERVE(server, CUBERT_SERVER_OBSERVE_GC_RELEASE, released, server->ring_len);
  return released;
}

void server_gc_drain(cubert_server_t *server) {
  while (server->ring_len) wait_oldest(server);
}

void server_gc_take_tasks(cubert_server_t *server) {
  cubert_stream_gc_task_t task;
  while (cubert__multi_stream_gc_take(server->multi, &task)) {
    server_retire_t *e = push_slot(server);
    e->task = task;
  }
  if (server->driver->flags & CUBERT_DRIVER_SYNCHRONOUS) (void)server_gc_poll(server);
}

void server_gc_retire_pins(cubert_server_t *server, cubert_driver_stream_t *stream,
                           const cubert_memory_id_t *pins, uint32_t count) {
  cubert_driver_event_t *event = NULL;
  cubert_error_t e;
  server_retire_t *entry;
  uint32_t i;
  cubert_error_clear(&e);
  if (server_lost(server, NULL) != CUBERT_STATUS_OK ||
      server_note(server, server->driver->event_record(server->self, stream, &event, &e), &e) !=
      CUBERT_STATUS_OK) {
    /* no event (host memory exhausted, or the device is lost): wait for the
     * stream (no allocation) unless the device is gone, then release */
    if (server_lost(server, NULL) == CUBERT_STATUS_OK)
      (void)server_note(server, server->driver->stream_synchronize(server->self, stream, &e), &e);
    for (i = 0; i < count; i++) (void)cubert__memory_id_release_binding(server->table, pins[i]);
    return;
  }
  entry = push_slot(server);
  entry->event = event;
  for (i = 0; i < count && i < 2; i++) entry->pins[entry->pin_count++] = pins[i];
}

void server_gc_retire_bytes(cubert_server_t *server, server_slot_t *slot, cubert_bytes_t *bytes,
                            size_t count) {
  size_t i;
  for (i = 0; i < count; i++) {
    cubert_driver_event_t *event = NULL;
    cubert_error_t e;
    cubert_status_t status;
    server_retire_t *entry;
    if (!bytes[i].release) continue;
    cubert_error_clear(&e);
    status = server_lost(server, NULL);
    if (status == CUBERT_STATUS_OK)
      status = server_note(server, server->driver->event_record(server->self, slot->stream, &event, &e), &e);
    if (status != CUBERT_STATUS_OK) {
      /* no event to wait for (host memory exhausted): the copy may still read
       * the bytes unless the device is gone; wait for the stream (no
       * allocation) before they go */
      if (server_lost(server, NULL) == CUBERT_STATUS_OK)
        (void)server_note(server, server->driver->stream_synchronize(server->self, slot->stream, &e), &e);
      bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
      bytes[i].release = NULL;
      continue;
    }
    entry = push_slot(server);
    entry->event = event;
    entry->bytes = bytes[i];
    bytes[i].release = NULL;
  }
  if (server->driver->flags & CUBERT_DRIVER_SYNCHRONOUS) (void)server_gc_poll(server);
}
