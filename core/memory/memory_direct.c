/*
 * core/memory/memory_direct.c: the direct pool (spec 4.4.4): one storage
 * allocation per reservation, sized to the padded request, reused only by
 * the exact padded size. Slots are tombstoned and recycled so live
 * locations stay valid. Before a new allocation, free slices are released
 * in slot order until reserved + new <= reclaim_at (a watermark, not a
 * budget: the allocation proceeds even if it still does not fit).
 */
#include "memory/memory_internal.h"

void cubert_direct_pool_initialize(cubert_direct_pool_t *pool, cubert_memory_env_t *env,
                                   uint8_t position, const cubert_memory_pool_options_t *opt,
                                   uint64_t alignment) {
  cubert_memset(pool, 0, sizeof *pool);
  pool->env = env;
  pool->position = position;
  pool->alignment = alignment == 0 ? 1 : alignment;
  pool->reclaim_at = opt->reclaim_at;
}

void cubert_direct_pool_deinitialize(cubert_direct_pool_t *pool) {
  uint32_t s;
  for (s = 0; s < pool->slice_count; s++) {
    cubert_exact_slice_t *x = &pool->slices[s];
    if (x->state == CUBERT_SLICE_VACANT) continue;
    cubert_memory_owner_drop(pool->env, &x->owner);
    cubert_memory_storage_dealloc(pool->env, x->storage.id);
  }
  cubert_memory_array_free(pool->env->allocator, (void **)&pool->slices, &pool->slice_cap,
                           sizeof(cubert_exact_slice_t));
  pool->slice_count = pool->live = 0;
  pool->bytes_reserved = 0;
}

static bool slice_free(cubert_memory_env_t *env, cubert_exact_slice_t *x) {
  if (x->state == CUBERT_SLICE_FREE) return true;
  /* unreachable: state != USED (FREE returned above; callers skip VACANT slots) */
  if (x->state != CUBERT_SLICE_USED || !cubert_memory_owner_is_free(env, x->owner)) return false;
  cubert_memory_owner_drop(env, &x->owner);
  x->state = CUBERT_SLICE_FREE;
  x->size = x->padding = x->cursor = 0;
  return true;
}

static void slice_release(cubert_direct_pool_t *pool, cubert_exact_slice_t *x) {
  cubert_memory_storage_dealloc(pool->env, x->storage.id);
  pool->bytes_reserved -= x->storage.size;
  x->state = CUBERT_SLICE_VACANT;
  pool->live--;
}

static cubert_status_t set_location(cubert_direct_pool_t *pool, cubert_memory_id_t owner,
                                    uint32_t slice) {
  cubert_memory_location_t loc;
  loc.pool = pool->position;
  loc.init = 1;
  loc.page = 0;
  loc.slice = slice;
  return cubert_memory_id_set_location_owned(pool->env->table, owner, loc); /* the pool owns it */
}

static void occupy(cubert_direct_pool_t *pool, cubert_exact_slice_t *x, uint64_t size,
                   uint64_t eff, cubert_memory_id_t owner) {
  x->state = CUBERT_SLICE_USED;
  x->size = size;
  x->padding = eff - size;
  x->cursor = 0;
  x->owner = owner;
  if (size > pool->largest_alloc) pool->largest_alloc = size;
}

cubert_status_t cubert_direct_pool_try_reserve(cubert_direct_pool_t *pool, uint64_t size,
                                               cubert_memory_id_t owner, bool *out_found,
                                               cubert_error_t *out_error) {
  uint64_t eff;
  uint32_t s;
  *out_found = false;
  if (cubert_memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_OK;
  for (s = 0; s < pool->slice_count; s++) {
    cubert_exact_slice_t *x = &pool->slices[s];
    if (x->state == CUBERT_SLICE_VACANT || x->storage.size != eff || !slice_free(pool->env, x))
      continue;
    if (set_location(pool, owner, s) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
    occupy(pool, x, size, eff, owner);
    *out_found = true;
    return CUBERT_STATUS_OK;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_direct_pool_alloc(cubert_direct_pool_t *pool, uint64_t size,
                                         cubert_memory_id_t owner, cubert_error_t *out_error) {
  uint64_t eff;
  uint32_t s;
  cubert_storage_handle_t storage;
  cubert_status_t status;
  if (cubert_memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  /* Room for one more slot first, so a bookkeeping failure changes nothing. */
  /* unreachable: in tests (2^32 - 2 slots) */
  if (pool->slice_count >= CUBERT_MEMORY_NIL - 1 ||
      cubert_memory_array_reserve(pool->env->allocator, (void **)&pool->slices, &pool->slice_cap,
                                  pool->slice_count + 1, sizeof(cubert_exact_slice_t),
                                  8) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "direct pool bookkeeping");
  if (pool->reclaim_at != CUBERT_MEMORY_NONE) {
    for (s = 0; s < pool->slice_count &&
                cubert_memory_sat_add(pool->bytes_reserved, eff) > pool->reclaim_at;
         s++) {
      cubert_exact_slice_t *x = &pool->slices[s];
      if (x->state != CUBERT_SLICE_VACANT && slice_free(pool->env, x)) slice_release(pool, x);
    }
  }
  status = pool->env->storage.vtable->alloc(pool->env->storage.self, eff, &storage, out_error);
  if (status != CUBERT_STATUS_OK) return status;
  for (s = 0; s < pool->slice_count; s++)
    if (pool->slices[s].state == CUBERT_SLICE_VACANT) break;
  if (set_location(pool, owner, s) != CUBERT_STATUS_OK) {
    cubert_memory_storage_dealloc(pool->env, storage.id);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
  }
  if (s == pool->slice_count) pool->slice_count++;
  cubert_memset(&pool->slices[s], 0, sizeof(cubert_exact_slice_t));
  storage.offset = 0;
  storage.size = eff;
  pool->slices[s].storage = storage;
  occupy(pool, &pool->slices[s], size, eff, owner);
  pool->bytes_reserved += eff;
  pool->live++;
  if (pool->live > pool->peak) pool->peak = pool->live;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_direct_pool_find(cubert_direct_pool_t *pool, cubert_memory_location_t loc,
                                        cubert_memory_id_t id, cubert_memory_slice_view_t *out,
                                        cubert_error_t *out_error) {
  cubert_exact_slice_t *x;
  if (loc.page != 0)
    return cubert_memory_not_found(out_error, "Memory page ", loc.page, " doesn't exist");
  if (loc.slice >= pool->slice_count || pool->slices[loc.slice].state != CUBERT_SLICE_USED)
    return cubert_memory_not_found(out_error, "Memory slice ", loc.slice, " doesn't exist");
  x = &pool->slices[loc.slice];
  if (!cubert_memory_id_equal(x->owner, id))
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location points to a different allocation");
  out->storage.id = x->storage.id;
  out->storage.offset = 0;
  out->storage.size = x->size;
  out->cursor = &x->cursor;
  out->owner = &x->owner;
  return CUBERT_STATUS_OK;
}

void cubert_direct_pool_cleanup(cubert_direct_pool_t *pool, bool explicit_) {
  uint32_t s;
  if (!explicit_) return;
  for (s = 0; s < pool->slice_count; s++) {
    cubert_exact_slice_t *x = &pool->slices[s];
    if (x->state != CUBERT_SLICE_VACANT && slice_free(pool->env, x)) slice_release(pool, x);
  }
  while (pool->slice_count > 0 && pool->slices[pool->slice_count - 1].state == CUBERT_SLICE_VACANT)
    pool->slice_count--;
}

void cubert_direct_pool_report(cubert_direct_pool_t *pool, cubert_memory_pool_report_t *out) {
  uint32_t s;
  cubert_memset(out, 0, sizeof *out);
  out->kind = CUBERT_MEMORY_POOL_KIND_DIRECT;
  out->max_pool_size = CUBERT_MEMORY_NONE;
  out->reclaim_at = pool->reclaim_at;
  for (s = 0; s < pool->slice_count; s++) {
    cubert_exact_slice_t *x = &pool->slices[s];
    if (x->state == CUBERT_SLICE_VACANT) continue;
    if (slice_free(pool->env, x)) {
      if (x->storage.size > out->largest_free) out->largest_free = x->storage.size;
      continue;
    }
    out->usage.number_allocs++;
    out->usage.bytes_in_use = cubert_memory_sat_add(out->usage.bytes_in_use, x->size);
    out->usage.bytes_padding = cubert_memory_sat_add(out->usage.bytes_padding, x->padding);
  }
  out->usage.bytes_reserved = pool->bytes_reserved;
  out->pages = pool->live;
  out->pages_peak = pool->peak;
  out->largest_alloc = pool->largest_alloc;
}

void cubert_direct_pool_trim(cubert_direct_pool_t *pool) {
  if (pool->live != 0) return;
  cubert_memory_array_free(pool->env->allocator, (void **)&pool->slices, &pool->slice_cap,
                           sizeof(cubert_exact_slice_t));
  pool->slice_count = 0;
}
