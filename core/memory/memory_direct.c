/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_direct.c: the direct pool (CubeCL's DirectPool;
 * docs/cubecl-mapping.md, "Direct pool"): one storage
 * allocation per reservation, sized to the padded request, reused only by
 * the exact padded size. Slots are tombstoned and recycled so live
 * locations stay valid (memory_slots.c). Before a new allocation, free
 * slices are released in slot order until reserved + new <= reclaim_at (a
 * watermark, not a budget: the allocation proceeds even if it still does not
 * fit).
 */
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

void cubert__direct_pool_initialize(cubert_direct_pool_t *pool, cubert_memory_env_t *env,
                                    uint8_t position, const cubert_memory_pool_options_t *opt,
                                    uint64_t alignment) {
  cubert_memset(pool, 0, sizeof *pool);
  cubert__memory_slots_initialize(&pool->slices, env, position, false, CUBERT_MEMORY_NIL - 1);
  pool->alignment = alignment == 0 ? 1 : alignment;
  pool->reclaim_at = opt->reclaim_at;
}

void cubert__direct_pool_deinitialize(cubert_direct_pool_t *pool) {
  cubert__memory_slots_deinitialize(&pool->slices);
}

cubert_status_t cubert__direct_pool_try_reserve(cubert_direct_pool_t *pool, uint64_t size,
                                                cubert_memory_id_t owner, bool *out_found,
                                                cubert_error_t *out_error) {
  cubert_memory_slots_t *slots = &pool->slices;
  uint64_t eff;
  uint32_t s;
  *out_found = false;
  if (cubert__memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_OK;
  for (s = 0; s < slots->count; s++) {
    cubert_memory_slot_t *x = &slots->items[s];
    if (x->state == CUBERT_SLICE_VACANT || x->storage.size != eff ||
        !cubert__memory_slot_is_free(slots->env, x))
      continue;
    CUBERT_RETURN_IF_ERROR(cubert__memory_slots_occupy(slots, s, size, eff - size, owner, out_error));
    *out_found = true;
    return CUBERT_STATUS_OK;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__direct_pool_alloc(cubert_direct_pool_t *pool, uint64_t size,
                                          cubert_memory_id_t owner, cubert_error_t *out_error) {
  cubert_memory_slots_t *slots = &pool->slices;
  uint64_t eff;
  uint32_t s;
  if (cubert__memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  /* Room for one more slot first, so a bookkeeping failure changes nothing. */
  if (cubert__memory_slots_room(slots) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "direct pool bookkeeping");
  if (pool->reclaim_at != CUBERT_MEMORY_NONE) {
    for (s = 0; s < slots->count &&
                cubert__memory_sat_add(slots->bytes_reserved, eff) > pool->reclaim_at;
         s++) {
      cubert_memory_slot_t *x = &slots->items[s];
      if (x->state != CUBERT_SLICE_VACANT && cubert__memory_slot_is_free(slots->env, x))
        cubert__memory_slots_release(slots, s);
    }
  }
  return cubert__memory_slots_allocate(slots, cubert__memory_slots_vacant(slots), eff, size,
                                       eff - size, owner, out_error);
}

cubert_status_t cubert__direct_pool_find(cubert_direct_pool_t *pool, cubert_memory_location_t loc,
                                         cubert_memory_id_t id, cubert_memory_slice_view_t *out,
                                         cubert_error_t *out_error) {
  return cubert__memory_slots_find(&pool->slices, loc, id, out, out_error);
}

void cubert__direct_pool_cleanup(cubert_direct_pool_t *pool, bool explicit_) {
  if (explicit_) (void)cubert__memory_slots_release_free(&pool->slices);
}

void cubert__direct_pool_report(cubert_direct_pool_t *pool, cubert_memory_pool_report_t *out) {
  cubert__memory_slots_report(&pool->slices, CUBERT_MEMORY_POOL_KIND_DIRECT, out);
  out->reclaim_at = pool->reclaim_at;
}

void cubert__direct_pool_trim(cubert_direct_pool_t *pool) { cubert__memory_slots_trim(&pool->slices); }
