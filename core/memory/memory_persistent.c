/*
 * core/memory/memory_persistent.c: the persistent pool (spec 4.4.3): exact-fit
 * slices, each a whole storage allocation of the padded size, indexed by
 * padded size (both reuse and allocation key by size + padding: the #1224
 * regression). Released only by explicit cleanups. Location: pool 255,
 * page 0, slice = slot index (stable).
 */
#include "memory/memory_internal.h"

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
  uint64_t key = pool->slices[s].storage.size;
  uint32_t i = bucket_slot(pool, key);
  cubert_persistent_bucket_t *b = &pool->buckets[i];
  pool->slices[s].bucket_next = CUBERT_MEMORY_NIL;
  if (b->head == CUBERT_MEMORY_NIL) {
    b->key = key;
    b->head = b->tail = s;
    pool->bucket_used++;
  } else {
    pool->slices[b->tail].bucket_next = s;
    b->tail = s;
  }
}

/* Rebuild the index from the slots in index order (no allocation). */
static void buckets_rebuild(cubert_persistent_pool_t *pool) {
  uint32_t s;
  /* unreachable: no index (a slice to release means one was allocated with it) */
  if (pool->bucket_cap == 0) return;
  buckets_clear(pool->buckets, pool->bucket_cap);
  pool->bucket_used = 0;
  for (s = 0; s < pool->slice_count; s++)
    if (pool->slices[s].state != CUBERT_SLICE_VACANT) bucket_append(pool, s);
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
    /* unreachable: in tests (2^29 distinct sizes) */
    if (cap > (UINT32_MAX >> 2)) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
    cap *= 2;
  }
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc_array(pool->env->allocator, cap,
                                                       sizeof(cubert_persistent_bucket_t), 0,
                                                       &cells));
  pool->buckets = (cubert_persistent_bucket_t *)cells;
  pool->bucket_cap = cap;
  buckets_rebuild(pool);
  if (old) cubert_allocator_free(pool->env->allocator, old, old_cap * sizeof(*old), 0);
  return CUBERT_STATUS_OK;
}

void cubert_persistent_pool_initialize(cubert_persistent_pool_t *pool, cubert_memory_env_t *env,
                                       uint64_t alignment, uint64_t max_alloc_size) {
  cubert_memset(pool, 0, sizeof *pool);
  pool->env = env;
  pool->alignment = alignment == 0 ? 1 : alignment;
  pool->max_alloc_size = max_alloc_size;
}

void cubert_persistent_pool_deinitialize(cubert_persistent_pool_t *pool) {
  uint32_t s;
  for (s = 0; s < pool->slice_count; s++) {
    cubert_exact_slice_t *x = &pool->slices[s];
    if (x->state == CUBERT_SLICE_VACANT) continue;
    cubert_memory_owner_drop(pool->env, &x->owner);
    cubert_memory_storage_dealloc(pool->env, x->storage.id);
  }
  pool->live = 0;
  cubert_persistent_pool_trim(pool);
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

static cubert_status_t set_location(cubert_persistent_pool_t *pool, cubert_memory_id_t owner,
                                    uint32_t slice) {
  cubert_memory_location_t loc;
  loc.pool = (uint8_t)CUBERT_MEMORY_PERSISTENT_POOL_POS;
  loc.init = 1;
  loc.page = 0;
  loc.slice = slice;
  return cubert_memory_id_set_location_owned(pool->env->table, owner, loc); /* the pool owns it */
}

static void occupy(cubert_persistent_pool_t *pool, cubert_exact_slice_t *x, uint64_t size,
                   uint64_t eff, cubert_memory_id_t owner) {
  x->state = CUBERT_SLICE_USED;
  x->size = size;
  x->padding = eff - size;
  x->cursor = 0;
  x->owner = owner;
  if (size > pool->largest_alloc) pool->largest_alloc = size;
}

bool cubert_persistent_pool_has_size(const cubert_persistent_pool_t *pool, uint64_t size) {
  uint64_t eff;
  if (cubert_memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK) return false;
  return bucket_find(pool, eff) != CUBERT_MEMORY_NIL;
}

cubert_status_t cubert_persistent_pool_try_reserve(cubert_persistent_pool_t *pool, uint64_t size,
                                                   cubert_memory_id_t owner, bool *out_found,
                                                   cubert_error_t *out_error) {
  uint64_t eff;
  uint32_t b, s;
  *out_found = false;
  if (cubert_memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_OK;
  b = bucket_find(pool, eff);
  if (b == CUBERT_MEMORY_NIL) return CUBERT_STATUS_OK;
  for (s = pool->buckets[b].head; s != CUBERT_MEMORY_NIL; s = pool->slices[s].bucket_next) {
    if (!slice_free(pool->env, &pool->slices[s])) continue;
    if (set_location(pool, owner, s) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
    occupy(pool, &pool->slices[s], size, eff, owner);
    *out_found = true;
    return CUBERT_STATUS_OK;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_persistent_pool_alloc(cubert_persistent_pool_t *pool, uint64_t size,
                                             cubert_memory_id_t owner, cubert_error_t *out_error) {
  uint64_t eff;
  uint32_t s;
  cubert_storage_handle_t storage;
  cubert_status_t status;
  if (cubert_memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  for (s = 0; s < pool->slice_count; s++)
    if (pool->slices[s].state == CUBERT_SLICE_VACANT) break;
  /* unreachable: in tests (2^32 - 2 slots) */
  if ((s == pool->slice_count &&
       (s >= CUBERT_MEMORY_NIL - 1 ||
        cubert_memory_array_reserve(pool->env->allocator, (void **)&pool->slices,
                                    &pool->slice_cap, s + 1, sizeof(cubert_exact_slice_t),
                                    8) != CUBERT_STATUS_OK)) ||
      (bucket_find(pool, eff) == CUBERT_MEMORY_NIL && buckets_ensure(pool) != CUBERT_STATUS_OK))
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "persistent pool bookkeeping");
  status = pool->env->storage.vtable->alloc(pool->env->storage.self, eff, &storage, out_error);
  if (status != CUBERT_STATUS_OK) return status;
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
  bucket_append(pool, s);
  pool->live++;
  if (pool->live > pool->peak) pool->peak = pool->live;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_persistent_pool_find(cubert_persistent_pool_t *pool,
                                            cubert_memory_location_t loc, cubert_memory_id_t id,
                                            cubert_memory_slice_view_t *out,
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

void cubert_persistent_pool_cleanup(cubert_persistent_pool_t *pool, bool explicit_) {
  uint32_t s;
  bool released = false;
  if (!explicit_) return;
  for (s = 0; s < pool->slice_count; s++) {
    cubert_exact_slice_t *x = &pool->slices[s];
    if (x->state == CUBERT_SLICE_VACANT || !slice_free(pool->env, x)) continue;
    cubert_memory_storage_dealloc(pool->env, x->storage.id);
    x->state = CUBERT_SLICE_VACANT;
    pool->live--;
    released = true;
  }
  while (pool->slice_count > 0 && pool->slices[pool->slice_count - 1].state == CUBERT_SLICE_VACANT)
    pool->slice_count--;
  if (released) buckets_rebuild(pool);
}

void cubert_persistent_pool_report(cubert_persistent_pool_t *pool,
                                   cubert_memory_pool_report_t *out) {
  uint32_t s;
  cubert_memset(out, 0, sizeof *out);
  out->kind = CUBERT_MEMORY_POOL_KIND_PERSISTENT;
  out->max_alloc_size = pool->max_alloc_size;
  out->max_pool_size = CUBERT_MEMORY_NONE;
  out->reclaim_at = CUBERT_MEMORY_NONE;
  for (s = 0; s < pool->slice_count; s++) {
    cubert_exact_slice_t *x = &pool->slices[s];
    if (x->state == CUBERT_SLICE_VACANT) continue;
    out->usage.bytes_reserved = cubert_memory_sat_add(out->usage.bytes_reserved, x->storage.size);
    if (slice_free(pool->env, x)) {
      if (x->storage.size > out->largest_free) out->largest_free = x->storage.size;
      continue;
    }
    out->usage.number_allocs++;
    out->usage.bytes_in_use = cubert_memory_sat_add(out->usage.bytes_in_use, x->size);
    out->usage.bytes_padding = cubert_memory_sat_add(out->usage.bytes_padding, x->padding);
  }
  out->pages = pool->live;
  out->pages_peak = pool->peak;
  out->largest_alloc = pool->largest_alloc;
}

void cubert_persistent_pool_trim(cubert_persistent_pool_t *pool) {
  if (pool->live != 0) return;
  cubert_memory_array_free(pool->env->allocator, (void **)&pool->slices, &pool->slice_cap,
                           sizeof(cubert_exact_slice_t));
  pool->slice_count = 0;
  if (pool->buckets)
    cubert_allocator_free(pool->env->allocator, pool->buckets,
                          pool->bucket_cap * sizeof(cubert_persistent_bucket_t), 0);
  pool->buckets = NULL;
  pool->bucket_cap = pool->bucket_used = 0;
}
