/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_exclusive.c: the exclusive pool (CubeCL's ExclusiveMemoryPool;
 * docs/cubecl-mapping.md, "Exclusive pool"): one slice per page; pages sized after a moving average of the
 * requests (SIZE_AVG_DECAY = 0.01); a page free at ALLOC_AFTER_FREE = 5
 * consecutive checks (every dealloc_period/5 reservations) is released.
 *
 * Reservations scan the pages (as CubeCL does): exclusive pools hold few,
 * large pages. Pages are whole-allocation slots (memory_slots.c), whose aux
 * field holds the free count. The moving average is kept in fixed point (integer part and
 * 32 fractional bits), so the core needs no floating point here.
 */
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"
#include "cubert/driver/arith.h"

#if CUBERT_CONFIG_PAGED_POOLS

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

uint64_t cubert__exclusive_pool_average(const cubert_exclusive_pool_t *pool) {
  return pool->avg_int;
}

cubert_status_t cubert__exclusive_pool_initialize(cubert_exclusive_pool_t *pool,
                                                  cubert_memory_env_t *env, uint8_t position,
                                                  const cubert_memory_pool_options_t *opt,
                                                  uint64_t alignment, cubert_error_t *out_error) {
  (void)out_error;
  cubert_memset(pool, 0, sizeof *pool);
  cubert__memory_slots_initialize(&pool->pages, env, position, true, CUBERT_MEMORY_PAGE_SLOTS);
  pool->alignment = alignment == 0 ? 1 : alignment;
  pool->max_alloc_size = opt->max_alloc_size;
  pool->dealloc_period = opt->dealloc_period;
  average_set_half(pool, opt->max_alloc_size);
  return CUBERT_STATUS_OK;
}

void cubert__exclusive_pool_deinitialize(cubert_exclusive_pool_t *pool) {
  cubert__memory_slots_deinitialize(&pool->pages);
}

bool cubert__exclusive_pool_accept(const cubert_exclusive_pool_t *pool, uint64_t size) {
  return size <= pool->max_alloc_size;
}

cubert_status_t cubert__exclusive_pool_try_reserve(cubert_exclusive_pool_t *pool, uint64_t size,
                                                   cubert_memory_id_t owner, bool *out_found,
                                                   cubert_error_t *out_error) {
  cubert_memory_slots_t *pages = &pool->pages;
  uint32_t i, best = CUBERT_MEMORY_NIL;
  *out_found = false;
  average_update(pool, size); /* even when nothing fits */
  for (i = 0; i < pages->count; i++) {
    cubert_memory_slot_t *p = &pages->items[i];
    if (p->storage.size < size || !cubert__memory_slot_is_free(pages->env, p)) continue;
    if (best == CUBERT_MEMORY_NIL || p->aux < pages->items[best].aux) best = i;
  }
  if (best == CUBERT_MEMORY_NIL) return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(cubert__memory_slots_occupy(
      pages, best, size, cubert__memory_padding(size, pool->alignment), owner, out_error));
  if (pages->items[best].aux > 0) pages->items[best].aux--;
  *out_found = true;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__exclusive_pool_alloc(cubert_exclusive_pool_t *pool, uint64_t size,
                                             cubert_memory_id_t owner, cubert_error_t *out_error) {
  cubert_memory_slots_t *pages = &pool->pages;
  uint64_t bytes;
  uint32_t slot;
  if (size > pool->max_alloc_size ||
      cubert_u64_round_up(CUBERT_MAX(pool->avg_int, size), pool->alignment, &bytes) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  slot = cubert__memory_slots_vacant(pages);
  if (slot == pages->count) {
    cubert_status_t room = cubert__memory_slots_room(pages);
    if (room == CUBERT_STATUS_POOL_CAPACITY_EXCEEDED) {
      uint64_t fields[3];
      fields[0] = size;
      fields[1] = UINT64_MAX;
      fields[2] = 0;
      return cubert_error_set(out_error, CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED, fields, 3,
                              "exclusive pool has 65536 pages");
    }
    if (room != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                              "exclusive pool bookkeeping");
  }
  CUBERT_RETURN_IF_ERROR(cubert__memory_slots_allocate(
      pages, slot, bytes, size, cubert__memory_padding(size, pool->alignment), owner, out_error));
  pages->items[slot].aux = FREE_COUNT_NEW;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__exclusive_pool_find(cubert_exclusive_pool_t *pool,
                                            cubert_memory_location_t loc, cubert_memory_id_t id,
                                            cubert_memory_slice_view_t *out,
                                            cubert_error_t *out_error) {
  return cubert__memory_slots_find(&pool->pages, loc, id, out, out_error);
}

void cubert__exclusive_pool_cleanup(cubert_exclusive_pool_t *pool, uint64_t alloc_nr,
                                    bool explicit_) {
  cubert_memory_slots_t *pages = &pool->pages;
  uint64_t check_period =
      pool->dealloc_period == CUBERT_MEMORY_NONE ? UINT64_MAX : pool->dealloc_period / 5;
  uint32_t i;
  if (!explicit_ && (alloc_nr < pool->last_check || alloc_nr - pool->last_check < check_period))
    return;
  pool->last_check = alloc_nr;
  for (i = 0; i < pages->count; i++) {
    cubert_memory_slot_t *p = &pages->items[i];
    if (p->state == CUBERT_SLICE_VACANT || !cubert__memory_slot_is_free(pages->env, p)) continue;
    if (p->aux < UINT32_MAX) p->aux++;
    if (p->aux >= ALLOC_AFTER_FREE || explicit_) cubert__memory_slots_release(pages, i);
  }
  cubert__memory_slots_trim_tail(pages);
}

void cubert__exclusive_pool_report(cubert_exclusive_pool_t *pool, cubert_memory_pool_report_t *out) {
  cubert__memory_slots_report(&pool->pages, CUBERT_MEMORY_POOL_KIND_EXCLUSIVE, out);
  out->max_alloc_size = pool->max_alloc_size;
}

void cubert__exclusive_pool_trim(cubert_exclusive_pool_t *pool) {
  cubert__memory_slots_trim(&pool->pages);
}

#else /* !CUBERT_CONFIG_PAGED_POOLS: no exclusive pool can be made (the configuration
       * refuses the entry first); the manager's dispatch still links */

cubert_status_t cubert__exclusive_pool_initialize(cubert_exclusive_pool_t *pool,
                                                  cubert_memory_env_t *env, uint8_t position,
                                                  const cubert_memory_pool_options_t *opt,
                                                  uint64_t alignment, cubert_error_t *out_error) {
  (void)env;
  (void)position;
  (void)opt;
  (void)alignment;
  cubert_memset(pool, 0, sizeof *pool);
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "exclusive pools (CUBERT_CONFIG_PAGED_POOLS=0)");
}

void cubert__exclusive_pool_deinitialize(cubert_exclusive_pool_t *pool) { (void)pool; }

bool cubert__exclusive_pool_accept(const cubert_exclusive_pool_t *pool, uint64_t size) {
  (void)pool;
  (void)size;
  return false;
}

cubert_status_t cubert__exclusive_pool_try_reserve(cubert_exclusive_pool_t *pool, uint64_t size,
                                                   cubert_memory_id_t owner, bool *out_found,
                                                   cubert_error_t *out_error) {
  (void)pool;
  (void)size;
  (void)owner;
  (void)out_error;
  *out_found = false;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__exclusive_pool_alloc(cubert_exclusive_pool_t *pool, uint64_t size,
                                             cubert_memory_id_t owner, cubert_error_t *out_error) {
  (void)pool;
  (void)size;
  (void)owner;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "exclusive pools (CUBERT_CONFIG_PAGED_POOLS=0)");
}

cubert_status_t cubert__exclusive_pool_find(cubert_exclusive_pool_t *pool,
                                            cubert_memory_location_t loc, cubert_memory_id_t id,
                                            cubert_memory_slice_view_t *out,
                                            cubert_error_t *out_error) {
  (void)pool;
  (void)loc;
  (void)id;
  (void)out;
  return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0, "no exclusive pool");
}

void cubert__exclusive_pool_cleanup(cubert_exclusive_pool_t *pool, uint64_t alloc_nr,
                                    bool explicit_) {
  (void)pool;
  (void)alloc_nr;
  (void)explicit_;
}

void cubert__exclusive_pool_report(cubert_exclusive_pool_t *pool, cubert_memory_pool_report_t *out) {
  (void)pool;
  cubert_memset(out, 0, sizeof *out);
}

void cubert__exclusive_pool_trim(cubert_exclusive_pool_t *pool) { (void)pool; }

uint64_t cubert__exclusive_pool_average(const cubert_exclusive_pool_t *pool) {
  (void)pool;
  return 0;
}

#endif /* CUBERT_CONFIG_PAGED_POOLS */
