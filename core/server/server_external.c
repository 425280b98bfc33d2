/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_external.c: memory shared with other libraries
 * (DLPack, docs/interop.md).
 *
 * Import: memory another library allocated on this device is adopted
 * without a copy. The driver says which address its device uses for it
 * (memory_import); the server acquires a memory id it owns, located in
 * SERVER_EXTERNAL_POOL (no pool of the memory manager: server_resolve asks
 * this table first while it holds anything), and keeps {id, address, size,
 * slot, owner}. The memory manager never sees the id. When the id's last
 * reference went (a handle or a pinned binding: pins keep it alive until the
 * other streams' work completed), server_external_poll hands the owner's
 * release to the release ring after an event recorded on the slot's stream,
 * so the owner gets its memory back only after every command that used it
 * ran, and exactly once. Polled at flush, sync, import, memory usage and
 * cleanup; at teardown every entry goes (a handle the user still holds is
 * dead with its device).
 *
 * Share: a binding's address handed to another library, with its pending
 * writes ordered before the consumer: the host (both streams synchronized:
 * blocks), a stream of this device (an event wait), a native stream of
 * another library (the driver's stream_order_native), a completion the
 * caller waits on, or nothing.
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"

/* ---- the table ------------------------------------------------------------------------------ */

bool server_external_resolve(cubert_server_t *server, const cubert_binding_t *b,
                             cubert_device_ptr_t *out_address, uint64_t *out_size,
                             cubert_status_t *out_status, cubert_error_t *out_error) {
  cubert_memory_location_t loc;
  const server_external_t *e;
  uint64_t f[3];
  if (cubert__memory_id_location(server->table, b->memory, &loc) != CUBERT_STATUS_OK ||
      !loc.init || loc.pool != SERVER_EXTERNAL_POOL || loc.slice >= server->external_capacity)
    return false;
  e = &server->externals[loc.slice];
  if (e->memory.index != b->memory.index || e->memory.generation != b->memory.generation)
    return false; /* unreachable: an id located here is the entry's */
  if (b->offset_start > e->size || b->offset_end > e->size - b->offset_start) {
    f[0] = b->offset_start;
    f[1] = b->offset_end;
    f[2] = e->size;
    *out_status = cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 3,
                                   "binding offsets beyond the imported memory");
    return true;
  }
  *out_address = e->address ? e->address + b->offset_start : 0;
  *out_size = e->size - b->offset_start - b->offset_end;
  *out_status = CUBERT_STATUS_OK;
  return true;
}

static void external_give_back(cubert_server_t *server, server_external_t *e) {
  server_slot_t *slot = server->slots[e->slot];
  cubert_bytes_t owner = e->owner;
  (void)cubert__memory_id_disown(server->table, e->memory);
  cubert_memset(e, 0, sizeof(*e));
  server->external_live--;
  if (!owner.release) return;
  if (slot) {
    server_gc_retire_bytes(server, slot, &owner, 1); /* after the slot's work */
  } else { /* unreachable: the import created the slot, which lives until teardown */
    owner.release(owner.owner, owner.data, owner.size);
  }
}

void server_external_poll(cubert_server_t *server, bool all) {
  uint32_t i;
  for (i = 0; i < server->external_capacity && server->external_live; i++) {
    server_external_t *e = &server->externals[i];
    if (e->memory.index == 0) continue;
    if (all || cubert__memory_id_is_free(server->table, e->memory)) external_give_back(server, e);
  }
}

void server_external_destroy(cubert_server_t *server) {
  if (server->externals)
    cubert_allocator_free(server->allocator, server->externals,
                          (size_t)server->external_capacity * sizeof(server_external_t), 0);
  server->externals = NULL;
  server->external_capacity = server->external_live = 0;
}

/* A free entry (the table grown when full): its index, or RESOURCE_EXHAUSTED. */
static cubert_status_t external_entry(cubert_server_t *server, uint32_t *out_index,
                                      cubert_error_t *out_error) {
  uint32_t i, cap;
  void *grown = NULL;
  for (i = 0; i < server->external_capacity; i++)
    if (server->externals[i].memory.index == 0) {
      *out_index = i;
      return CUBERT_STATUS_OK;
    }
  cap = server->external_capacity ? server->external_capacity * 2u : 8u;
  if (cap > CUBERT_HANDLE_TABLE_MAX_SLOTS || /* (more than the handle table could ever hold) */
      cubert_allocator_realloc(server->allocator, server->externals,
                               (size_t)server->external_capacity * sizeof(server_external_t),
                               (size_t)cap * sizeof(server_external_t), 0, &grown,
                               NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "the table of imported memory");
  server->externals = (server_external_t *)grown;
  *out_index = server->external_capacity;
  server->external_capacity = cap;
  return CUBERT_STATUS_OK;
}

/* ---- ordering against another party --------------------------------------------------------- */

/* `slot` waits for everything enqueued on `origin` so far. */
static cubert_status_t slot_wait_slot(cubert_server_t *server, server_slot_t *slot,
                                      server_slot_t *origin, cubert_error_t *out_error) {
  cubert_driver_event_t *event = NULL;
  cubert_status_t status;
  if (!origin || origin == slot) return CUBERT_STATUS_OK;
  status = server_note(server, server->driver->event_record(server->self, origin->stream, &event, out_error),
                       out_error);
  if (status != CUBERT_STATUS_OK) return status;
  status = server_note(server, server->driver->event_wait(server->self, slot->stream, event, out_error),
                       out_error);
  server->driver->event_destroy(server->self, event);
  if (status == CUBERT_STATUS_OK) server_race_stream_wait_stream(server, slot->index, origin->index);
  return status;
}

static cubert_status_t native_order(cubert_server_t *server, server_slot_t *slot, uint64_t native,
                                    uint32_t direction, cubert_error_t *out_error) {
  if (!slot) return CUBERT_STATUS_OK;
  return server_note(server,
                     server->driver->stream_order_native(server->self, slot->stream, native,
                                                         direction, out_error),
                     out_error);
}

/* The order kinds a caller may name need the driver's primitive (native
 * streams) and a stream id of this device (cubert streams). */
static cubert_status_t order_check(cubert_server_t *server, uint32_t order, cubert_error_t *out_error) {
  if (order == CUBERT_SERVER_ORDER_NATIVE && !server->driver->stream_order_native)
    return server_unsupported(server, "stream_order_native (a native stream)", out_error);
  if (order > CUBERT_SERVER_ORDER_COMPLETION) { /* unreachable: the client maps its four kinds */
    uint64_t f = order;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "unknown stream-order kind");
  }
  return CUBERT_STATUS_OK;
}

/* ---- import ----------------------------------------------------------------------------------- */

cubert_status_t cubert__server_import_memory(cubert_server_t *server, const cubert_server_import_t *op,
                                             cubert_memory_id_t *out_memory, cubert_error_t *out_error) {
  server_slot_t *slot = NULL, *producer = NULL;
  cubert_memory_location_t loc;
  cubert_memory_id_t id;
  cubert_device_ptr_t address = 0;
  uint32_t index = 0;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(
      cubert__server_not_recording(server, op->stream, "import (DLPack)", out_error));
  if (!server->driver->memory_import)
    return server_unsupported(server, "memory_import (adopting another library's memory)", out_error);
  CUBERT_RETURN_IF_ERROR(order_check(server, op->order, out_error));
  if (op->order == CUBERT_SERVER_ORDER_COMPLETION) /* unreachable: the client never asks */
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "an import is ordered after a stream, not a completion");
  CUBERT_RETURN_IF_ERROR(server_slot(server, op->stream, &slot, out_error));
  if (op->order == CUBERT_SERVER_ORDER_STREAM)
    CUBERT_RETURN_IF_ERROR(server_slot(server, op->value, &producer, out_error));
  server_external_poll(server, false);
  CUBERT_RETURN_IF_ERROR(external_entry(server, &index, out_error));
  CUBERT_RETURN_IF_ERROR(server_note(
      server, server->driver->memory_import(server->self, op->pointer, op->size, &address, out_error),
      out_error));
  loc.pool = SERVER_EXTERNAL_POOL;
  loc.init = 1;
  loc.page = 0;
  loc.slice = index;
  status = cubert__memory_id_acquire_owned(server->table, loc, &id);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_OUT_OF_RANGE,
                            NULL, 0, "no handle slot for the imported memory");
  /* the producer's writes come before this stream's later work */
  if (op->order == CUBERT_SERVER_ORDER_STREAM)
    status = slot_wait_slot(server, slot, producer, out_error);
  else if (op->order == CUBERT_SERVER_ORDER_NATIVE)
    status = native_order(server, slot, op->value, CUBERT_STREAM_WAITS, out_error);
  if (status != CUBERT_STATUS_OK) { /* nothing adopted: the id goes back */
    (void)cubert__memory_id_release_handle(server->table, id);
    (void)cubert__memory_id_disown(server->table, id);
    return status;
  }
  server->externals[index].memory = id;
  server->externals[index].address = address;
  server->externals[index].size = op->size;
  server->externals[index].slot = slot->index;
  server->externals[index].owner = op->owner;
  server->external_live++;
  *out_memory = id;
  return CUBERT_STATUS_OK;
}

/* ---- share ------------------------------------------------------------------------------------ */

cubert_status_t cubert__server_share(cubert_server_t *server, const cubert_server_share_t *op,
                                     cubert_resource_t *out_resource, cubert_error_t *out_error) {
  cubert_device_ptr_t address = 0;
  uint64_t size = 0;
  server_slot_t *slot = NULL, *origin, *consumer = NULL;
  cubert_status_t status = CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  /* ordering a consumer after a recording stream's work: no work is there */
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, op->stream, "share (DLPack export, "
                                                      "get_resource_async)", out_error));
  CUBERT_RETURN_IF_ERROR(order_check(server, op->order, out_error));
  CUBERT_RETURN_IF_ERROR(server_resolve(server, op->binding, &address, &size, out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, op->stream, &slot, out_error));
  if (op->order == CUBERT_SERVER_ORDER_STREAM)
    CUBERT_RETURN_IF_ERROR(server_slot(server, op->value, &consumer, out_error));
  /* the binding's pending writes are on its own stream or on the caller's */
  origin = server_slot_existing(server, op->binding->stream);
  if (origin == slot) origin = NULL;
  switch (op->order) {
  case CUBERT_SERVER_ORDER_HOST:
    status = server_stream_sync(server, op->binding->stream, out_error);
    if (status == CUBERT_STATUS_OK) status = server_stream_sync(server, op->stream, out_error);
    if (status == CUBERT_STATUS_OK) {
      if (origin) server_race_host_sync(server, origin->index);
      server_race_host_sync(server, slot->index);
      server_race_host_op(server, "dlpack export", op->binding);
    }
    break;
  case CUBERT_SERVER_ORDER_STREAM:
    status = slot_wait_slot(server, consumer, origin, out_error);
    if (status == CUBERT_STATUS_OK) status = slot_wait_slot(server, consumer, slot, out_error);
    break;
  case CUBERT_SERVER_ORDER_NATIVE:
    status = native_order(server, origin, op->value, CUBERT_NATIVE_WAITS, out_error);
    if (status == CUBERT_STATUS_OK)
      status = native_order(server, slot, op->value, CUBERT_NATIVE_WAITS, out_error);
    break;
  case CUBERT_SERVER_ORDER_COMPLETION:
    /* the caller's stream waits for the binding's, then a completion at its end */
    status = slot_wait_slot(server, slot, origin, out_error);
    if (status == CUBERT_STATUS_OK) status = cubert__server_sync(server, op->stream, op->completion, out_error);
    break;
  default: /* CUBERT_SERVER_ORDER_NONE: the consumer orders itself */
    break;
  }
  if (status != CUBERT_STATUS_OK) return status;
  out_resource->address = address;
  out_resource->ptr = (server->driver->flags & CUBERT_DRIVER_HOST_ADDRESSABLE)
                          ? (void *)(uintptr_t)address
                          : NULL;
  out_resource->size = size;
  return CUBERT_STATUS_OK;
}

void cubert__server_memory_device(const cubert_server_t *server, int32_t *out_device_type,
                                  int32_t *out_device_id) {
  *out_device_type = 0;
  *out_device_id = 0;
  if (server->driver->memory_device)
    server->driver->memory_device(server->self, out_device_type, out_device_id);
}
