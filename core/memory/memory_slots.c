/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_slots.c: what the exclusive, persistent and direct pools
 * share (memory_internal.h, "whole-allocation slots"). Each of those pools
 * holds one storage allocation per slot and one reservation per allocation;
 * they differ only in which free slot a request may reuse and when a free
 * slot is released. Here: detecting released owners, occupying a slot,
 * allocating into a new or vacant slot, finding a location, releasing,
 * reporting. Slots are tombstoned (VACANT) and recycled, so the location of
 * a live reservation (its slot index) never changes.
 */
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

void cubert__memory_slots_initialize(cubert_memory_slots_t *slots, cubert_memory_env_t *env,
                                     uint8_t position, bool by_page, uint32_t max_count) {
  cubert_memset(slots, 0, sizeof *slots);
  slots->env = env;
  slots->position = position;
  slots->by_page = by_page;
  slots->max_count = max_count;
}

void cubert__memory_slots_deinitialize(cubert_memory_slots_t *slots) {
  uint32_t s;
  for (s = 0; s < slots->count; s++) {
    cubert_memory_slot_t *x = &slots->items[s];
    if (x->state == CUBERT_SLICE_VACANT) continue;
    cubert__memory_owner_drop(slots->env, &x->owner);
    cubert__memory_storage_dealloc(slots->env, x->storage.id);
  }
  slots->live = 0;
  slots->bytes_reserved = 0;
  cubert__memory_slots_trim(slots);
}

void cubert__memory_slot_set_free(cubert_memory_env_t *env, cubert_memory_slot_t *x) {
  cubert__memory_owner_drop(env, &x->owner);
  x->state = CUBERT_SLICE_FREE;
  x->size = x->padding = x->cursor = 0;
}

/* The owner's location: this pool, and the slot as page or as slice. */
static cubert_status_t set_location(cubert_memory_slots_t *slots, cubert_memory_id_t owner,
                                    uint32_t s) {
  cubert_memory_location_t loc;
  loc.pool = slots->position;
  loc.init = 1;
  loc.page = slots->by_page ? (uint16_t)s : 0;
  loc.slice = slots->by_page ? 0 : s;
  return cubert__memory_id_set_location_owned(slots->env->table, owner, loc); /* the pool owns it */
}

static void occupy(cubert_memory_slots_t *slots, cubert_memory_slot_t *x, uint64_t size,
                   uint64_t padding, cubert_memory_id_t owner) {
  x->state = CUBERT_SLICE_USED;
  x->size = size;
  x->padding = padding;
  x->cursor = 0;
  x->owner = owner;
  if (size > slots->largest_alloc) slots->largest_alloc = size;
}

cubert_status_t cubert__memory_slots_occupy(cubert_memory_slots_t *slots, uint32_t s, uint64_t size,
                                            uint64_t padding, cubert_memory_id_t owner,
                                            cubert_error_t *out_error) {
  if (set_location(slots, owner, s) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
  occupy(slots, &slots->items[s], size, padding, owner);
  return CUBERT_STATUS_OK;
}

uint32_t cubert__memory_slots_vacant(const cubert_memory_slots_t *slots) {
  uint32_t s;
  for (s = 0; s < slots->count; s++)
    if (slots->items[s].state == CUBERT_SLICE_VACANT) break;
  return s;
}

cubert_status_t cubert__memory_slots_room(cubert_memory_slots_t *slots) {
  if (slots->count >= slots->max_count) return CUBERT_STATUS_POOL_CAPACITY_EXCEEDED;
  return cubert__memory_array_reserve(slots->env->allocator, (void **)&slots->items, &slots->cap,
                                      slots->count + 1, sizeof(cubert_memory_slot_t), 8);
}

cubert_status_t cubert__memory_slots_allocate(cubert_memory_slots_t *slots, uint32_t s,
                                              uint64_t bytes, uint64_t size, uint64_t padding,
                                              cubert_memory_id_t owner, cubert_error_t *out_error) {
  cubert_storage_handle_t storage;
  cubert_memory_slot_t *x;
  cubert_status_t status =
      slots->env->storage.vtable->alloc(slots->env->storage.self, bytes, &storage, out_error);
  if (status != CUBERT_STATUS_OK) return status;
  if (set_location(slots, owner, s) != CUBERT_STATUS_OK) {
    cubert__memory_storage_dealloc(slots->env, storage.id);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
  }
  if (s == slots->count) slots->count++;
  x = &slots->items[s];
  cubert_memset(x, 0, sizeof *x);
  storage.offset = 0;
  storage.size = bytes;
  x->storage = storage;
  occupy(slots, x, size, padding, owner);
  slots->bytes_reserved += bytes;
  slots->live++;
  if (slots->live > slots->peak) slots->peak = slots->live;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_slots_find(cubert_memory_slots_t *slots,
                                          cubert_memory_location_t loc, cubert_memory_id_t id,
                                          cubert_memory_slice_view_t *out,
                                          cubert_error_t *out_error) {
  uint32_t s = slots->by_page ? loc.page : loc.slice;
  cubert_memory_slot_t *x;
  /* The page is wrong when it is not the slot (by page) or not 0 (by slice). */
  if (slots->by_page ? (s >= slots->count || slots->items[s].state == CUBERT_SLICE_VACANT)
                     : loc.page != 0)
    return cubert__memory_not_found(out_error, "Memory page ", loc.page, " doesn't exist");
  if ((slots->by_page ? loc.slice != 0 : s >= slots->count) ||
      slots->items[s].state != CUBERT_SLICE_USED)
    return cubert__memory_not_found(out_error, "Memory slice ", loc.slice, " doesn't exist");
  x = &slots->items[s];
  if (!cubert__memory_id_equal(x->owner, id))
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location points to a different allocation");
  out->storage.id = x->storage.id;
  out->storage.offset = 0;
  out->storage.size = x->size;
  out->cursor = &x->cursor;
  out->owner = &x->owner;
  return CUBERT_STATUS_OK;
}

void cubert__memory_slots_release(cubert_memory_slots_t *slots, uint32_t s) {
  cubert_memory_slot_t *x = &slots->items[s];
  cubert__memory_storage_dealloc(slots->env, x->storage.id);
  slots->bytes_reserved -= x->storage.size;
  x->state = CUBERT_SLICE_VACANT;
  slots->live--;
}

void cubert__memory_slots_trim_tail(cubert_memory_slots_t *slots) {
  while (slots->count > 0 && slots->items[slots->count - 1].state == CUBERT_SLICE_VACANT)
    slots->count--;
}

uint32_t cubert__memory_slots_release_free(cubert_memory_slots_t *slots) {
  uint32_t s, released = 0;
  for (s = 0; s < slots->count; s++) {
    cubert_memory_slot_t *x = &slots->items[s];
    if (x->state == CUBERT_SLICE_VACANT || !cubert__memory_slot_is_free(slots->env, x)) continue;
    cubert__memory_slots_release(slots, s);
    released++;
  }
  cubert__memory_slots_trim_tail(slots);
  return released;
}

void cubert__memory_slots_report(cubert_memory_slots_t *slots, cubert_memory_pool_kind_t kind,
                                 cubert_memory_pool_report_t *out) {
  uint32_t s;
  cubert_memset(out, 0, sizeof *out);
  out->kind = kind;
  out->max_pool_size = CUBERT_MEMORY_NONE;
  out->reclaim_at = CUBERT_MEMORY_NONE;
  for (s = 0; s < slots->count; s++) {
    cubert_memory_slot_t *x = &slots->items[s];
    if (x->state == CUBERT_SLICE_VACANT) continue;
    if (cubert__memory_slot_is_free(slots->env, x)) {
      if (x->storage.size > out->largest_free) out->largest_free = x->storage.size;
      continue;
    }
    out->usage.number_allocs++;
    out->usage.bytes_in_use = cubert__memory_sat_add(out->usage.bytes_in_use, x->size);
    out->usage.bytes_padding = cubert__memory_sat_add(out->usage.bytes_padding, x->padding);
  }
  out->usage.bytes_reserved = slots->bytes_reserved;
  out->pages = slots->live;
  out->pages_peak = slots->peak;
  out->largest_alloc = slots->largest_alloc;
}

void cubert__memory_slots_trim(cubert_memory_slots_t *slots) {
  if (slots->live != 0) return;
  cubert__memory_array_free(slots->env->allocator, (void **)&slots->items, &slots->cap,
                            sizeof(cubert_memory_slot_t));
  slots->count = 0;
}
