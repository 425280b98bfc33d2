/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_memory.c: the memory of each stream slot: a memory manager
 * (core/memory: pools, reuse, persistent windows) over a storage whose pages
 * come from the driver's memory_alloc and go back through its stream-ordered
 * memory_free on the slot's stream.
 *
 * Why no per-operation pins are needed: work enqueued on a slot reads and
 * writes memory of that slot in stream order, so a slice freed and reused
 * by the slot's next allocation is touched only after the earlier work; a
 * page given back to the driver is freed after the slot's earlier work
 * (stream-ordered free); memory used on another slot is pinned by the
 * MultiStream until that consumer's GC event completed, and only then can
 * its slice become free (docs/architecture.md).
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

/* ---- the storage over the driver ------------------------------------------------------ */

static uint64_t st_alignment(void *self) {
  server_storage_t *st = (server_storage_t *)self;
  uint64_t a = st->server->properties.memory.alignment;
  return a ? a : 8;
}

static cubert_status_t st_alloc(void *self, uint64_t size, cubert_storage_handle_t *out,
                                cubert_error_t *out_error) {
  server_storage_t *st = (server_storage_t *)self;
  cubert_server_t *server = st->server;
  cubert_device_ptr_t address = 0;
  if (st->count == st->capacity) {
    size_t cap = st->capacity ? st->capacity * 2 : 16;
    void *grown = NULL;
    if (cubert_allocator_realloc(server->allocator, st->blocks, st->capacity * sizeof(server_block_t),
                                 cap * sizeof(server_block_t), 0, &grown, NULL) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1,
                              "storage bookkeeping");
    st->blocks = (server_block_t *)grown;
    st->capacity = cap;
  }
  if (size) {
    cubert_status_t status = server_lost(server, out_error);
    if (status != CUBERT_STATUS_OK) return status;
    status = server->driver->memory_alloc(server->self, size, st->slot->stream, &address, out_error);
    /* a sharded reserve: the caller notes a loss with the device held */
    if (!st->slot->sharded) status = server_note(server, status, out_error);
    if (status != CUBERT_STATUS_OK) return status;
  }
  st->blocks[st->count].id = st->next_id++;
  st->blocks[st->count].size = size;
  st->blocks[st->count].address = address;
  out->id = st->blocks[st->count].id;
  out->offset = 0;
  out->size = size;
  st->count++;
  return CUBERT_STATUS_OK;
}

static server_block_t *st_find(server_storage_t *st, uint64_t id) {
  size_t lo = 0, hi = st->count;
  while (lo < hi) { /* ids are increasing in the array */
    size_t mid = lo + (hi - lo) / 2;
    if (st->blocks[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < st->count && st->blocks[lo].id == id ? &st->blocks[lo] : NULL;
}

static cubert_status_t st_get(void *self, const cubert_storage_handle_t *h,
                              cubert_storage_resource_t *out, cubert_error_t *out_error) {
  server_storage_t *st = (server_storage_t *)self;
  server_block_t *b = st_find(st, h->id);
  if (!b || h->offset > b->size || h->size > b->size - h->offset)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_STORAGE_HANDLE_NOT_FOUND, &h->id, 1,
                            "StorageId not found in the device storage");
  out->address = b->address ? b->address + h->offset : 0;
  out->ptr = (st->server->driver->flags & CUBERT_DRIVER_HOST_ADDRESSABLE) && out->address
                 ? (void *)(uintptr_t)out->address
                 : NULL;
  out->size = h->size;
  return CUBERT_STATUS_OK;
}

/* Give a block back to the driver: stream-ordered on the slot's stream. */
static void st_free_block(server_storage_t *st, const server_block_t *b) {
  cubert_server_t *server = st->server;
  if (b->address) server->driver->memory_free(server->self, b->address, b->size, st->slot->stream);
}

static void st_dealloc(void *self, uint64_t id) {
  server_storage_t *st = (server_storage_t *)self;
  server_block_t *b = st_find(st, id);
  size_t index;
  if (!b) return;
  st_free_block(st, b);
  index = (size_t)(b - st->blocks);
  cubert_memmove(b, b + 1, (st->count - index - 1) * sizeof(*b));
  st->count--;
}

static void st_flush(void *self) { (void)self; }

static const cubert_storage_vtable_t g_kit_storage = {st_alignment, st_alloc, st_get, st_dealloc,
                                                      st_flush};

/* ---- per-slot memory ------------------------------------------------------------------- */

/* Newest slices a slot's sliced pools poll at every reserve (options.poll_newest). */
#define SERVER_POLL_NEWEST 4u

cubert_status_t server_memory_create(cubert_server_t *server, server_slot_t *slot, cubert_error_t *out_error) {
  cubert_storage_t storage;
  cubert_memory_manager_options_t options;
  slot->storage.server = server;
  slot->storage.slot = slot;
  slot->storage.blocks = NULL;
  slot->storage.count = 0;
  slot->storage.capacity = 0;
  slot->storage.next_id = 1;
  storage.self = &slot->storage;
  storage.vtable = &g_kit_storage;
  /* the slot's own lane of the handle table: reserves on different streams
   * (cubert__server_reserve_sharded, from several threads) take their ids
   * from different chunks */
  cubert__memory_manager_options_initialize(&options);
  options.handle_lane = slot->index;
  options.padded = server->max_streams > 1u; /* other streams' threads reserve beside it */
  /* a temporary released before the stream's next reserve is found free
   * there: the slot's pool and its lane of the table keep one such slice
   * and id, not a 16 MiB page's worth (a few hundred ids, which overflowed
   * the lane's chunk into chunks other streams' threads write) */
  options.poll_newest = SERVER_POLL_NEWEST;
  return cubert__memory_manager_create(server->allocator, storage, server->table, server->properties.memory,
                                       &server->memory_config, &options, &slot->manager, out_error);
}

void server_memory_destroy(server_slot_t *slot) {
  server_storage_t *st = &slot->storage;
  size_t i;
  if (!slot->manager) return;
  cubert__memory_manager_destroy(slot->manager);
  slot->manager = NULL;
  for (i = 0; i < st->count; i++) st_free_block(st, &st->blocks[i]);
  cubert_allocator_free(st->server->allocator, st->blocks, st->capacity * sizeof(server_block_t), 0);
  st->blocks = NULL;
  st->count = st->capacity = 0;
}

cubert_status_t server_resolve(cubert_server_t *server, const cubert_binding_t *b,
                               cubert_device_ptr_t *out_address, uint64_t *out_size,
                               cubert_error_t *out_error) {
  server_slot_t *slot;
  cubert_storage_resource_t r;
  if (b->device != server->device_index || b->device_key != server->device_key) {
    uint64_t f[4];
    f[0] = b->device;
    f[1] = b->device_key;
    f[2] = server->device_index;
    f[3] = server->device_key;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 4,
                            "binding belongs to another device");
  }
  if (!cubert__memory_id_is_alive(server->table, b->memory))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                            "binding was released");
  if (server->external_live) { /* one branch while nothing was adopted */
    cubert_status_t status = CUBERT_STATUS_OK;
    if (server_external_resolve(server, b, out_address, out_size, &status, out_error)) return status;
  }
  slot = server_slot_existing(server, b->stream);
  if (!slot || !slot->manager)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location was never initialized");
  CUBERT_RETURN_IF_ERROR(cubert__memory_manager_get_resource(slot->manager, b->memory,
                                                             b->offset_start, b->offset_end, &r,
                                                             out_error));
  *out_address = r.address;
  *out_size = r.size;
  return CUBERT_STATUS_OK;
}

/* ---- client operations ------------------------------------------------------------------ */

cubert_status_t cubert__server_memory_usage(cubert_server_t *server, cubert_memory_usage_t *out_usage,
                                            cubert_error_t *out_error) {
  uint32_t i;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  server_external_poll(server, false);
  server_gc_drain(server); /* exact: what the GC still pins is released first */
  cubert_memset(out_usage, 0, sizeof(*out_usage));
  for (i = 0; i < server->max_streams; i++) {
    cubert_memory_usage_t u;
    if (!server->slots[i] || !server->slots[i]->manager) continue;
    u = cubert__memory_manager_memory_usage(server->slots[i]->manager);
    *out_usage = cubert_memory_usage_combine(*out_usage, u);
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_memory_cleanup(cubert_server_t *server, cubert_error_t *out_error) {
  uint32_t i;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  server_external_poll(server, false);
  server_gc_drain(server);
  for (i = 0; i < server->max_streams; i++)
    if (server->slots[i] && server->slots[i]->manager)
      cubert__memory_manager_cleanup(server->slots[i]->manager, true);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_allocation_mode(cubert_server_t *server, uint64_t stream,
                                               cubert_memory_allocation_mode_t mode,
                                               cubert_error_t *out_error) {
  server_slot_t *slot = NULL;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream, &slot, out_error));
  cubert__memory_manager_set_mode(slot->manager, mode);
  return CUBERT_STATUS_OK;
}
