/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_gc.c: the one release ring: what waits for the device
 * before it may go, each entry released once a driver event recorded after
 * its last use completed: the pinned cross-stream bindings of a command (the
 * multi-stream's plan says which, and after which point), host bytes a copy
 * still reads (a write's data, a staging buffer), a collective's bindings.
 *
 * One ring, oldest first; the pins live in a second ring (each entry's pins
 * contiguous), so nothing is allocated after creation. Polling: every server
 * call that may add an entry (and flush, sync and read completions) releases
 * the entries whose event completed, in order, with the driver's non-blocking
 * event_query. A full ring first blocks on its oldest entry
 * (event_synchronize), the bounded back-pressure of CubeCL's GC channel.
 * memory_usage / cleanup and teardown drain it. No thread: the server is
 * freestanding; a driver whose events are complete when recorded
 * (CUBERT_DRIVER_SYNCHRONOUS) retires at once. The race checker hears each
 * release of a command's pins through one hook (server_race_released).
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"

/* Pins of one command at most (a launch's bindings): the pin ring holds at
 * least twice that, so one entry always fits once the ring is empty. */
#define GC_MIN_PINS (2u * SERVER_MAX_BINDINGS)
/* the collectives' held pins (server_comm.c) fit one entry */
typedef char gc_held_pins_fit[2u * SERVER_COMM_HELD <= GC_MIN_PINS ? 1 : -1];

cubert_status_t server_gc_create(cubert_server_t *server, uint32_t capacity, cubert_error_t *out_error) {
  /* twice the entries (most commands pin one or two bindings), at least GC_MIN_PINS */
  uint32_t pins = capacity > GC_MIN_PINS / 2u ? capacity : GC_MIN_PINS / 2u;
  if (pins <= UINT32_MAX / 2u) pins *= 2u;
  server->ring_capacity = capacity; /* before: a failure frees what was made by these sizes */
  server->pin_capacity = pins;
  if (cubert_allocator_malloc_array(server->allocator, capacity, sizeof(server_retire_t), 0,
                                    (void **)&server->ring, NULL) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc_array(server->allocator, pins, sizeof(server_pin_t), 0,
                                    (void **)&server->pins, NULL) != CUBERT_STATUS_OK) {
    server_gc_destroy(server);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "server: GC ring");
  }
  server->ring_head = server->ring_len = 0;
  server->pin_tail = server->pin_used = 0;
  return CUBERT_STATUS_OK;
}

void server_gc_destroy(cubert_server_t *server) {
  if (server->ring)
    cubert_allocator_free(server->allocator, server->ring,
                          (size_t)server->ring_capacity * sizeof(server_retire_t), 0);
  if (server->pins)
    cubert_allocator_free(server->allocator, server->pins,
                          (size_t)server->pin_capacity * sizeof(server_pin_t), 0);
  server->ring = NULL;
  server->pins = NULL;
}

/* Release the oldest entry (its event completed, or the caller waited). */
static void pop_release(cubert_server_t *server) {
  server_retire_t e = server->ring[server->ring_head];
  const server_pin_t *pins = server->pins + e.pin_first;
  uint32_t i;
  server->ring_head = (server->ring_head + 1u) % server->ring_capacity;
  server->ring_len--;
  server->pin_used -= e.pin_span;
  if (e.bytes.release) e.bytes.release(e.bytes.owner, e.bytes.data, e.bytes.size);
  for (i = 0; i < e.pin_count; i++) (void)cubert__memory_id_release_binding(server->table, pins[i].memory);
  if (e.race.index) server_race_released(server, e.race, pins, e.pin_count);
  server->driver->event_destroy(server->self, e.event);
}

/* Block on the oldest entry's event, then release it. A failed wait
 * (device lost) releases anyway: nothing will run any more. */
static void wait_oldest(cubert_server_t *server) {
  cubert_error_t e;
  cubert_status_t status;
  cubert_error_clear(&e);
  SERVER_OBSERVE(server, CUBERT_SERVER_OBSERVE_GC_WAIT, server->ring_len, 0);
  status = server->driver->event_synchronize(server->self, server->ring[server->ring_head].event,
                                             UINT64_MAX, &e);
  (void)server_note(server, status, &e);
  pop_release(server);
}

uint32_t server_gc_poll(cubert_server_t *server) {
  uint32_t released = 0;
  while (server->ring_len) {
    cubert_status_t status =
        server->driver->event_query(server->self, server->ring[server->ring_head].event);
    if (status == CUBERT_STATUS_BUSY) break;
    (void)server_note(server, status, NULL); /* a lost device completes nothing: release anyway */
    pop_release(server);
    released++;
  }
  if (released) SERVER_OBSERVE(server, CUBERT_SERVER_OBSERVE_GC_RELEASE, released, server->ring_len);
  return released;
}

void server_gc_drain(cubert_server_t *server) {
  server_comm_release_held(server); /* the collectives' held pins too (server_comm.c) */
  while (server->ring_len) wait_oldest(server);
}

/* Where `npins` contiguous pins would go (*out_first) and how many pin ring
 * entries they hold: their own, plus the tail they skip when they do not fit
 * before the end. */
static uint32_t pin_span(const cubert_server_t *server, uint32_t npins, uint32_t *out_first) {
  uint32_t tail = server->ring_len ? server->pin_tail : 0; /* empty: start over */
  if (npins == 0 || tail + npins <= server->pin_capacity) {
    *out_first = tail;
    return npins;
  }
  *out_first = 0;
  return server->pin_capacity - tail + npins;
}

static bool has_room(const cubert_server_t *server, uint32_t npins) {
  uint32_t first;
  return server->ring_len < server->ring_capacity &&
         server->pin_used + pin_span(server, npins, &first) <= server->pin_capacity;
}

/* A new entry after `event` with room for `npins` contiguous pins (at most
 * GC_MIN_PINS, which the pin ring always holds, so an empty ring has room: a
 * command's pins, or the held pins of SERVER_COMM_HELD collectives):
 * completed entries go first, then the oldest are waited for. */
static server_retire_t *push_entry(cubert_server_t *server, cubert_driver_event_t *event,
                                   uint32_t npins) {
  server_retire_t *e;
  uint32_t first, span;
  if (!has_room(server, npins) && server_gc_poll(server) == 0) wait_oldest(server);
  while (!has_room(server, npins)) wait_oldest(server);
  span = pin_span(server, npins, &first);
  e = &server->ring[(server->ring_head + server->ring_len) % server->ring_capacity];
  server->ring_len++;
  cubert_memset(e, 0, sizeof(*e));
  e->event = event;
  e->pin_first = first;
  e->pin_span = span;
  server->pin_used += span;
  server->pin_tail = first + npins;
  return e;
}

/* No event after the last use (host memory exhausted, or the device is
 * lost): wait for the stream (no allocation) unless the device is gone. */
static void sync_instead(cubert_server_t *server, cubert_driver_stream_t *stream) {
  cubert_error_t e;
  cubert_error_clear(&e);
  if (server_lost(server, NULL) == CUBERT_STATUS_OK)
    (void)server_note(server, server->driver->stream_synchronize(server->self, stream, &e), &e);
}

static cubert_driver_event_t *record_after(cubert_server_t *server, cubert_driver_stream_t *stream) {
  cubert_driver_event_t *event = NULL;
  cubert_error_t e;
  cubert_error_clear(&e);
  if (server_lost(server, NULL) != CUBERT_STATUS_OK ||
      server_note(server, server->driver->event_record(server->self, stream, &event, &e), &e) !=
      CUBERT_STATUS_OK)
    return NULL;
  return event;
}

void server_gc_retire_command(cubert_server_t *server, const server_order_t *order,
                              cubert_driver_event_t *event, cubert_race_event_t race,
                              const cubert_binding_t *bindings, uint32_t count) {
  server_retire_t *entry;
  uint32_t i;
  bool unpinned = false;
  if (!event) { /* the command completes before its bindings may go */
    sync_instead(server, order->slot->stream);
    server_race_host_sync(server, order->slot->index); /* the host saw the slot finish */
    server_race_release(server, race);
    return;
  }
  entry = push_entry(server, event, order->plan.pin_count);
  entry->race = race;
  for (i = 0; i < count; i++) {
    server_pin_t *pin = &server->pins[entry->pin_first + entry->pin_count];
    if (!cubert__stream_plan_pins(&order->plan, &bindings[i])) continue;
    if (cubert__memory_id_retain_binding(server->table, bindings[i].memory) != CUBERT_STATUS_OK) {
      unpinned = true; /* a saturated count: hold the command's completion instead */
      continue;
    }
    pin->memory = bindings[i].memory;
    pin->slot = (uint32_t)(bindings[i].stream % server->max_streams);
    entry->pin_count++;
  }
  if (unpinned) {
    cubert_error_t e;
    cubert_error_clear(&e);
    (void)server_note(server, server->driver->event_synchronize(server->self, event, UINT64_MAX, &e), &e);
    server_race_host_sync(server, order->slot->index); /* the host saw the command finish */
  }
  if (server->driver->flags & CUBERT_DRIVER_SYNCHRONOUS) (void)server_gc_poll(server);
}

void server_gc_retire_pins(cubert_server_t *server, cubert_driver_stream_t *stream,
                           const cubert_memory_id_t *pins, uint32_t count) {
  cubert_driver_event_t *event = record_after(server, stream);
  server_retire_t *entry;
  uint32_t i;
  if (!event) {
    sync_instead(server, stream);
    for (i = 0; i < count; i++) (void)cubert__memory_id_release_binding(server->table, pins[i]);
    return;
  }
  entry = push_entry(server, event, count);
  for (i = 0; i < count; i++) {
    server->pins[entry->pin_first + i].memory = pins[i];
    server->pins[entry->pin_first + i].slot = 0;
  }
  entry->pin_count = count;
}

void server_gc_retire_bytes(cubert_server_t *server, server_slot_t *slot, cubert_bytes_t *bytes,
                            size_t count) {
  size_t i;
  for (i = 0; i < count; i++) {
    cubert_driver_event_t *event;
    if (!bytes[i].release) continue;
    event = record_after(server, slot->stream);
    if (!event) {
      /* the copy may still read the bytes unless the device is gone */
      sync_instead(server, slot->stream);
      bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
    } else {
      push_entry(server, event, 0)->bytes = bytes[i];
    }
    bytes[i].release = NULL;
  }
  if (server->driver->flags & CUBERT_DRIVER_SYNCHRONOUS) (void)server_gc_poll(server);
}
