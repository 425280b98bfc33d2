/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_persistent.c: the persistent pool (docs/cubecl-mapping.md,
 * "Persistent pool"): exact-fit
 * slices, each a whole storage allocation of the padded size, indexed by
 * padded size (both reuse and allocation key by size + padding: the #1224
 * regression). Released only by explicit cleanups. Location: pool 255,
 * page 0, slice = slot index (stable; memory_slots.c).
 */
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

#if CUBERT_CONFIG_PERSISTENT_MEMORY

static uint32_t hash_u64(uint64_t key, uint32_t mask) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (uint32_t)key & mask;
}

/* Cell of `key`, or of the empty cell where it would go. */
static uint32_t bucket_slot(const cubert_persistent_pool_t *pool, uint64_t key) {
  uint32_t mask = pool->bucket_cap - 1, i = hash_u64(key, mask);
  while (pool->buckets[i].head != CUBERT_MEMORY_NIL && pool->buckets[i].key != key)
    i = (i + 1) & mask;
  return i;
}

static uint32_t bucket_find(const cubert_persistent_pool_t *pool, uint64_t key) {
  uint32_t i;
  if (pool->bucket_cap == 0) return CUBERT_MEMORY_NIL;
  i = bucket_slot(pool, key);
  return pool->buckets[i].head == CUBERT_MEMORY_NIL ? CUBERT_MEMORY_NIL : i;
}

static void buckets_clear(cubert_persistent_bucket_t *cells, uint32_t cap) {
  uint32_t i;
  for (i = 0; i < cap; i++) {
    cells[i].key = 0;
    cells[i].head = cells[i].tail = CUBERT_MEMORY_NIL;
  }
}

/* Append slice s to its size's bucket (room guaranteed). */
static void bucket_append(cubert_persistent_pool_t *pool, uint32_t s) {
  uint64_t key = pool->slices.items[s].storage.size;
  uint32_t i = bucket_slot(pool, key);
  cubert_persistent_bucket_t *b = &pool->buckets[i];
  pool->slices.items[s].aux = CUBERT_MEMORY_NIL;
  if (b->head == CUBERT_MEMORY_NIL) {
    b->key = key;
    b->head = b->tail = s;
    pool->bucket_used++;
  } else {
    pool->slices.items[b->tail].aux = s;
    b->tail = s;
  }
}

/* Rebuild the index from the slots in index order (no allocation). */
static void buckets_rebuild(cubert_persistent_pool_t *pool) {
  uint32_t s;
  if (pool->bucket_cap == 0) return;
  buckets_clear(pool->buckets, pool->bucket_cap);
  pool->bucket_used = 0;
  for (s = 0; s < pool->slices.count; s++)
    if (pool->slices.items[s].state != CUBERT_SLICE_VACANT) bucket_append(pool, s);
}

/* Room for one more bucket at a load of at most 1/2. */
static cubert_status_t buckets_ensure(cubert_persistent_pool_t *pool) {
  uint32_t cap = pool->bucket_cap ? pool->bucket_cap : 8;
  void *cells = NULL;
  cubert_persistent_bucket_t *old = pool->buckets;
  uint32_t old_cap = pool->bucket_cap;
  if (pool->bucket_cap != 0 && (pool->bucket_used + 1) * 2 <= pool->bucket_cap)
    return CUBERT_STATUS_OK;
  while ((pool->bucket_used + 1) * 2 > cap) {
    if (cap > (UINT32_MAX >> 2)) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
    cap *= 2;
  }
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc_array(pool->slices.env->allocator, cap,
                                                       sizeof(cubert_persistent_bucket_t), 0,
                                                       &cells, NULL));
  pool->buckets = (cubert_persistent_bucket_t *)cells;
  pool->bucket_cap = cap;
  buckets_rebuild(pool);
  if (old) cubert_allocator_free(pool->slices.env->allocator, old, old_cap * sizeof(*old), 0);
  return CUBERT_STATUS_OK;
}

void cubert__persistent_pool_initialize(cubert_persistent_pool_t *pool, cubert_memory_env_t *env,
                                        uint64_t alignment, uint64_t max_alloc_size) {
  cubert_memset(pool, 0, sizeof *pool);
  cubert__memory_slots_initialize(&pool->slices, env, (uint8_t)CUBERT_MEMORY_PERSISTENT_POOL_POS,
                                  false, CUBERT_MEMORY_NIL - 1);
  pool->alignment = alignment == 0 ? 1 : alignment;
  pool->max_alloc_size = max_alloc_size;
}

void cubert__persistent_pool_deinitialize(cubert_persistent_pool_t *pool) {
  cubert__memory_slots_deinitialize(&pool->slices);
  cubert__persistent_pool_trim(pool);
}

bool cubert__persistent_pool_has_size(const cubert_persistent_pool_t *pool, uint64_t size) {
  uint64_t eff;
  if (cubert__memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK) return false;
  return bucket_find(pool, eff) != CUBERT_MEMORY_NIL;
}

cubert_status_t cubert__persistent_pool_try_reserve(cubert_persistent_pool_t *pool, uint64_t size,
                                                    cubert_memory_id_t owner, bool *out_found,
                                                    cubert_error_t *out_error) {
  cubert_memory_slots_t *slots = &pool->slices;
  uint64_t eff;
  uint32_t b, s;
  *out_found = false;
  if (cubert__memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_OK;
  b = bucket_find(pool, eff);
  if (b == CUBERT_MEMORY_NIL) return CUBERT_STATUS_OK;
  for (s = pool->buckets[b].head; s != CUBERT_MEMORY_NIL; s = slots->items[s].aux) {
    if (!cubert__memory_slot_is_free(slots->env, &slots->items[s])) continue;
    CUBERT_RETURN_IF_ERROR(cubert__memory_slots_occupy(slots, s, size, eff - size, owner, out_error));
    *out_found = true;
    return CUBERT_STATUS_OK;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__persistent_pool_alloc(cubert_persistent_pool_t *pool, uint64_t size,
                                              cubert_memory_id_t owner, cubert_error_t *out_error) {
  cubert_memory_slots_t *slots = &pool->slices;
  uint64_t eff;
  uint32_t s;
  if (cubert__memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  s = cubert__memory_slots_vacant(slots);
  if ((s == slots->count && cubert__memory_slots_room(slots) != CUBERT_STATUS_OK) ||
      (bucket_find(pool, eff) == CUBERT_MEMORY_NIL && buckets_ensure(pool) != CUBERT_STATUS_OK))
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "persistent pool bookkeeping");
  CUBERT_RETURN_IF_ERROR(
      cubert__memory_slots_allocate(slots, s, eff, size, eff - size, owner, out_error));
  bucket_append(pool, s);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__persistent_pool_find(cubert_persistent_pool_t *pool,
                                             cubert_memory_location_t loc, cubert_memory_id_t id,
                                             cubert_memory_slice_view_t *out,
                                             cubert_error_t *out_error) {
  return cubert__memory_slots_find(&pool->slices, loc, id, out, out_error);
}

void cubert__persistent_pool_cleanup(cubert_persistent_pool_t *pool, bool explicit_) {
  if (explicit_ && cubert__memory_slots_release_free(&pool->slices) > 0) buckets_rebuild(pool);
}

void cubert__persistent_pool_report(cubert_persistent_pool_t *pool,
                                    cubert_memory_pool_report_t *out) {
  cubert__memory_slots_report(&pool->slices, CUBERT_MEMORY_POOL_KIND_PERSISTENT, out);
  out->max_alloc_size = pool->max_alloc_size;
}

void cubert__persistent_pool_trim(cubert_persistent_pool_t *pool) {
  if (pool->slices.live != 0) return;
  cubert__memory_slots_trim(&pool->slices);
  if (pool->buckets)
    cubert_allocator_free(pool->slices.env->allocator, pool->buckets,
                          pool->bucket_cap * sizeof(cubert_persistent_bucket_t), 0);
  pool->buckets = NULL;
  pool->bucket_cap = pool->bucket_used = 0;
}

#else /* !CUBERT_CONFIG_PERSISTENT_MEMORY: an empty pool nothing is ever put in */

void cubert__persistent_pool_initialize(cubert_persistent_pool_t *pool, cubert_memory_env_t *env,
                                        uint64_t alignment, uint64_t max_alloc_size) {
  cubert_memset(pool, 0, sizeof *pool);
  cubert__memory_slots_initialize(&pool->slices, env, (uint8_t)CUBERT_MEMORY_PERSISTENT_POOL_POS,
                                  false, CUBERT_MEMORY_NIL - 1);
  pool->alignment = alignment == 0 ? 1 : alignment;
  pool->max_alloc_size = max_alloc_size;
}

void cubert__persistent_pool_deinitialize(cubert_persistent_pool_t *pool) {
  cubert__memory_slots_deinitialize(&pool->slices);
}

bool cubert__persistent_pool_has_size(const cubert_persistent_pool_t *pool, uint64_t size) {
  (void)pool;
  (void)size;
  return false;
}

cubert_status_t cubert__persistent_pool_try_reserve(cubert_persistent_pool_t *pool, uint64_t size,
                                                    cubert_memory_id_t owner, bool *out_found,
                                                    cubert_error_t *out_error) {
  (void)pool;
  (void)size;
  (void)owner;
  (void)out_error;
  *out_found = false;
  return CUBERT_STATUS_OK;
}

/* A manager made Persistent (options ENFORCED or initial_mode) cannot allocate. */
cubert_status_t cubert__persistent_pool_alloc(cubert_persistent_pool_t *pool, uint64_t size,
                                              cubert_memory_id_t owner, cubert_error_t *out_error) {
  (void)pool;
  (void)size;
  (void)owner;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "the persistent pool (CUBERT_CONFIG_PERSISTENT_MEMORY=0)");
}

cubert_status_t cubert__persistent_pool_find(cubert_persistent_pool_t *pool,
                                             cubert_memory_location_t loc, cubert_memory_id_t id,
                                             cubert_memory_slice_view_t *out,
                                             cubert_error_t *out_error) {
  return cubert__memory_slots_find(&pool->slices, loc, id, out, out_error);
}

void cubert__persistent_pool_cleanup(cubert_persistent_pool_t *pool, bool explicit_) {
  (void)pool;
  (void)explicit_;
}

void cubert__persistent_pool_report(cubert_persistent_pool_t *pool,
                                    cubert_memory_pool_report_t *out) {
  cubert__memory_slots_report(&pool->slices, CUBERT_MEMORY_POOL_KIND_PERSISTENT, out);
  out->max_alloc_size = pool->max_alloc_size;
}

void cubert__persistent_pool_trim(cubert_persistent_pool_t *pool) {
  cubert__memory_slots_trim(&pool->slices);
}

#endif /* CUBERT_CONFIG_PERSISTENT_MEMORY */
