/*
 * core/memory/memory_exclusive.c: the exclusive pool (CubeCL's ExclusiveMemoryPool,
 * spec 4.4.2): one slice per page; pages sized after a moving average of the
 * requests (SIZE_AVG_DECAY = 0.01); a page free at ALLOC_AFTER_FREE = 5
 * consecutive checks (every dealloc_period/5 reservations) is released.
 *
 * Reservations scan the pages (as CubeCL does): exclusive pools hold few,
 * large pages. The moving average is kept in fixed point (integer part and
 * 32 fractional bits), so the core needs no floating point here.
 */
#include "memory/memory_internal.h"

#define ALLOC_AFTER_FREE 5u
#define FREE_COUNT_NEW 4u /* a new page is "almost ready to free" */

static void average_set_half(cubert_exclusive_pool_t *pool, uint64_t max_alloc) {
  pool->avg_int = max_alloc / 2;
  pool->avg_frac = (max_alloc & 1) ? 0x80000000u : 0;
}

/* avg = 0.99 avg + 0.01 size = avg - avg/100 + size/100, each /100 exact to
 * 2^-32. */
static void average_update(cubert_exclusive_pool_t *pool, uint64_t size) {
  uint64_t a_q = pool->avg_int / 100, a_f, s_q = size / 100, s_f, frac, whole;
  a_f = (((pool->avg_int % 100) << 32) | pool->avg_frac) / 100;
  s_f = ((size % 100) << 32) / 100;
  whole = pool->avg_int - a_q;
  frac = pool->avg_frac;
  if (frac < a_f) {
    whole--;
    frac += (uint64_t)1 << 32;
  }
  frac -= a_f;
  frac += s_f;
  whole += s_q + (frac >> 32);
  pool->avg_int = whole;
  pool->avg_frac = (uint32_t)frac;
}

uint64_t cubert_exclusive_pool_average(const cubert_exclusive_pool_t *pool) {
  return pool->avg_int;
}

cubert_status_t cubert_exclusive_pool_initialize(cubert_exclusive_pool_t *pool,
                                                 cubert_memory_env_t *env, uint8_t position,
                                                 const cubert_memory_pool_options_t *opt,
                                                 uint64_t alignment, cubert_error_t *out_error) {
  (void)out_error;
  cubert_memset(pool, 0, sizeof *pool);
  pool->env = env;
  pool->position = position;
  pool->alignment = alignment == 0 ? 1 : alignment;
  pool->max_alloc_size = opt->max_alloc_size;
  pool->dealloc_period = opt->dealloc_period;
  average_set_half(pool, opt->max_alloc_size);
  return CUBERT_STATUS_OK;
}

void cubert_exclusive_pool_deinitialize(cubert_exclusive_pool_t *pool) {
  uint32_t i;
  for (i = 0; i < pool->page_count; i++) {
    cubert_exclusive_page_t *p = &pool->pages[i];
    if (p->state == CUBERT_SLICE_VACANT) continue;
    cubert_memory_owner_drop(pool->env, &p->owner);
    cubert_memory_storage_dealloc(pool->env, p->storage.id);
  }
  cubert_memory_array_free(pool->env->allocator, (void **)&pool->pages, &pool->page_cap,
                           sizeof(cubert_exclusive_page_t));
  pool->page_count = pool->pages_live = 0;
}

bool cubert_exclusive_pool_accept(const cubert_exclusive_pool_t *pool, uint64_t size) {
  return size <= pool->max_alloc_size;
}

/* A used page whose owner is released becomes free. */
static bool page_free(cubert_exclusive_pool_t *pool, cubert_exclusive_page_t *p) {
  if (p->state == CUBERT_SLICE_FREE) return true;
  /* unreachable: state != USED (FREE returned above; callers skip VACANT pages) */
  if (p->state != CUBERT_SLICE_USED || !cubert_memory_owner_is_free(pool->env, p->owner))
    return false;
  cubert_memory_owner_drop(pool->env, &p->owner);
  p->state = CUBERT_SLICE_FREE;
  p->size = p->padding = p->cursor = 0;
  return true;
}

static cubert_status_t set_location(cubert_exclusive_pool_t *pool, cubert_memory_id_t owner,
                                    uint32_t page) {
  cubert_memory_location_t loc;
  loc.pool = pool->position;
  loc.init = 1;
  loc.page = (uint16_t)page;
  loc.slice = 0;
  return cubert_memory_id_set_location_owned(pool->env->table, owner, loc); /* the pool owns it */
}

static void occupy(cubert_exclusive_pool_t *pool, cubert_exclusive_page_t *p, uint64_t size,
                   cubert_memory_id_t owner) {
  p->state = CUBERT_SLICE_USED;
  p->size = size;
  p->padding = cubert_memory_padding(size, pool->alignment);
  p->cursor = 0;
  p->owner = owner;
  if (size > pool->largest_alloc) pool->largest_alloc = size;
}

cubert_status_t cubert_exclusive_pool_try_reserve(cubert_exclusive_pool_t *pool, uint64_t size,
                                                  cubert_memory_id_t owner, bool *out_found,
                                                  cubert_error_t *out_error) {
  uint32_t i, best = CUBERT_MEMORY_NIL;
  *out_found = false;
  average_update(pool, size); /* even when nothing fits */
  for (i = 0; i < pool->page_count; i++) {
    cubert_exclusive_page_t *p = &pool->pages[i];
    if (p->storage.size < size || !page_free(pool, p)) continue;
    if (best == CUBERT_MEMORY_NIL || p->free_count < pool->pages[best].free_count) best = i;
  }
  if (best == CUBERT_MEMORY_NIL) return CUBERT_STATUS_OK;
  if (set_location(pool, owner, best) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
  occupy(pool, &pool->pages[best], size, owner);
  if (pool->pages[best].free_count > 0) pool->pages[best].free_count--;
  *out_found = true;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_exclusive_pool_alloc(cubert_exclusive_pool_t *pool, uint64_t size,
                                            cubert_memory_id_t owner, cubert_error_t *out_error) {
  uint64_t bytes;
  uint32_t slot;
  cubert_storage_handle_t storage;
  cubert_status_t status;
  if (size > pool->max_alloc_size ||
      cubert_u64_round_up(CUBERT_MAX(pool->avg_int, size), pool->alignment, &bytes) !=
          CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  for (slot = 0; slot < pool->page_count; slot++)
    if (pool->pages[slot].state == CUBERT_SLICE_VACANT) break;
  if (slot == pool->page_count) {
    /* unreachable: in tests (65536 pages) */
    if (slot >= CUBERT_MEMORY_PAGE_SLOTS) {
      uint64_t fields[3];
      fields[0] = size;
      fields[1] = UINT64_MAX;
      fields[2] = 0;
      return cubert_error_set(out_error, CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED, fields, 3,
                              "exclusive pool has 65536 pages");
    }
    if (cubert_memory_array_reserve(pool->env->allocator, (void **)&pool->pages, &pool->page_cap,
                                    slot + 1, sizeof(cubert_exclusive_page_t),
                                    8) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                              "exclusive pool bookkeeping");
  }
  status = pool->env->storage.vtable->alloc(pool->env->storage.self, bytes, &storage, out_error);
  if (status != CUBERT_STATUS_OK) return status;
  if (set_location(pool, owner, slot) != CUBERT_STATUS_OK) {
    cubert_memory_storage_dealloc(pool->env, storage.id);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
  }
  if (slot == pool->page_count) pool->page_count++;
  cubert_memset(&pool->pages[slot], 0, sizeof(cubert_exclusive_page_t));
  storage.offset = 0;
  storage.size = bytes;
  pool->pages[slot].storage = storage;
  pool->pages[slot].free_count = FREE_COUNT_NEW;
  occupy(pool, &pool->pages[slot], size, owner);
  pool->pages_live++;
  if (pool->pages_live > pool->pages_peak) pool->pages_peak = pool->pages_live;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_exclusive_pool_find(cubert_exclusive_pool_t *pool,
                                           cubert_memory_location_t loc, cubert_memory_id_t id,
                                           cubert_memory_slice_view_t *out,
                                           cubert_error_t *out_error) {
  cubert_exclusive_page_t *p;
  if (loc.page >= pool->page_count || pool->pages[loc.page].state == CUBERT_SLICE_VACANT)
    return cubert_memory_not_found(out_error, "Memory page ", loc.page, " doesn't exist");
  p = &pool->pages[loc.page];
  if (loc.slice != 0 || p->state != CUBERT_SLICE_USED)
    return cubert_memory_not_found(out_error, "Memory slice ", loc.slice, " doesn't exist");
  if (!cubert_memory_id_equal(p->owner, id))
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location points to a different allocation");
  out->storage.id = p->storage.id;
  out->storage.offset = 0;
  out->storage.size = p->size;
  out->cursor = &p->cursor;
  out->owner = &p->owner;
  return CUBERT_STATUS_OK;
}

void cubert_exclusive_pool_cleanup(cubert_exclusive_pool_t *pool, uint64_t alloc_nr,
                                   bool explicit_) {
  uint64_t check_period =
      pool->dealloc_period == CUBERT_MEMORY_NONE ? UINT64_MAX : pool->dealloc_period / 5;
  uint32_t i;
  if (!explicit_ && (alloc_nr < pool->last_check || alloc_nr - pool->last_check < check_period))
    return;
  pool->last_check = alloc_nr;
  for (i = 0; i < pool->page_count; i++) {
    cubert_exclusive_page_t *p = &pool->pages[i];
    if (p->state == CUBERT_SLICE_VACANT || !page_free(pool, p)) continue;
    if (p->free_count < UINT32_MAX) p->free_count++;
    if (p->free_count >= ALLOC_AFTER_FREE || explicit_) {
      cubert_memory_storage_dealloc(pool->env, p->storage.id);
      p->state = CUBERT_SLICE_VACANT;
      pool->pages_live--;
    }
  }
  while (pool->page_count > 0 && pool->pages[pool->page_count - 1].state == CUBERT_SLICE_VACANT)
    pool->page_count--;
}

void cubert_exclusive_pool_report(cubert_exclusive_pool_t *pool, cubert_memory_pool_report_t *out) {
  uint32_t i;
  cubert_memset(out, 0, sizeof *out);
  out->kind = CUBERT_MEMORY_POOL_KIND_EXCLUSIVE;
  out->max_alloc_size = pool->max_alloc_size;
  out->max_pool_size = CUBERT_MEMORY_NONE;
  out->reclaim_at = CUBERT_MEMORY_NONE;
  for (i = 0; i < pool->page_count; i++) {
    cubert_exclusive_page_t *p = &pool->pages[i];
    if (p->state == CUBERT_SLICE_VACANT) continue;
    out->usage.bytes_reserved = cubert_memory_sat_add(out->usage.bytes_reserved, p->storage.size);
    if (page_free(pool, p)) {
      if (p->storage.size > out->largest_free) out->largest_free = p->storage.size;
      continue;
    }
    out->usage.number_allocs++;
    out->usage.bytes_in_use = cubert_memory_sat_add(out->usage.bytes_in_use, p->size);
    out->usage.bytes_padding = cubert_memory_sat_add(out->usage.bytes_padding, p->padding);
  }
  out->pages = pool->pages_live;
  out->pages_peak = pool->pages_peak;
  out->largest_alloc = pool->largest_alloc;
}

void cubert_exclusive_pool_trim(cubert_exclusive_pool_t *pool) {
  if (pool->pages_live != 0) return;
  cubert_memory_array_free(pool->env->allocator, (void **)&pool->pages, &pool->page_cap,
                           sizeof(cubert_exclusive_page_t));
  pool->page_count = 0;
}
