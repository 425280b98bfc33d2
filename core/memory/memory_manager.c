/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_manager.c: the memory manager of one stream slot (CubeCL's
 * MemoryManagement; docs/cubecl-mapping.md, "Memory manager"): reservation routing through
 * the persistent pool and the dynamic pools, bind, lookups with the identity
 * check, cleanup, allocation modes, pool layouts, usage and reports; plus
 * cubert's additions for what CubeCL users report (docs/cubecl-mapping.md,
 * "Issues CubeCL users report"): reclaim and
 * retry on a device OOM, an OOM error carrying the pool report, and the
 * release of a dead stream slot's pools. Single-threaded (the server thread
 * that owns the slot).
 */
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

struct cubert_memory_manager_t {
  cubert_memory_env_t env;
  cubert_memory_device_properties_t props; /* alignment resolved (never 0) */
  cubert_memory_pool_t *pools;
  uint32_t pool_count;
  cubert_persistent_pool_t persistent;
  uint64_t alloc_reserve_count;
  cubert_persistent_memory_t persistent_memory;
  uint32_t persistent_depth; /* effective mode is Persistent while > 0 */
  bool reclaim_and_retry;
  uint32_t poll_per_reserve;
  uint32_t poll_newest;
  uint32_t handle_lane;
  uint64_t next_check; /* earliest alloc_reserve_count a periodic cleanup does anything */
  bool padded;         /* options.padded: this block and the pools' are padded */
};

static void next_check_update(cubert_memory_manager_t *mm);

/* The manager and its dynamic pools are written at every reservation by the
 * thread of its stream slot. options.padded: each of the two allocations is
 * aligned and padded to CUBERT_FALSE_SHARING_BYTES (core/base/internal.h),
 * so that an allocator that packs small blocks of different threads together
 * (one heap for all threads) puts no other stream's manager or pools on
 * their lines; else the allocator's natural alignment, no padding. */
static size_t mm_align(bool padded) { return padded ? CUBERT_FALSE_SHARING_BYTES : 0; }
static size_t mm_bytes(bool padded) {
  return padded ? CUBERT_FALSE_SHARING_ROUND(sizeof(struct cubert_memory_manager_t))
                : sizeof(struct cubert_memory_manager_t);
}
static size_t pools_bytes(const cubert_memory_manager_t *mm, uint32_t count) {
  size_t bytes = (size_t)count * sizeof(cubert_memory_pool_t); /* count <= the pool maximum */
  return mm->padded ? CUBERT_FALSE_SHARING_ROUND(bytes) : bytes;
}

void cubert__memory_manager_options_initialize(cubert_memory_manager_options_t *options) {
  if (!options) return;
  cubert_memset(options, 0, sizeof *options);
  options->persistent_memory = CUBERT_PERSISTENT_MEMORY_ENABLED;
  options->has_initial_mode = false;
  options->initial_mode = CUBERT_MEMORY_ALLOCATION_MODE_AUTO;
  options->reclaim_and_retry = true;
  options->poll_per_reserve = 0;
  options->poll_newest = 0;
  options->handle_lane = 0;
  options->padded = false;
}

/* ---- pool dispatch ------------------------------------------------------------ */

static void pool_deinitialize(cubert_memory_pool_t *pool) {
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED: cubert__sliced_pool_deinitialize(&pool->u.sliced); break;
    case CUBERT_MEMORY_POOL_EXCLUSIVE: cubert__exclusive_pool_deinitialize(&pool->u.exclusive); break;
    )
    case CUBERT_MEMORY_POOL_DIRECT: cubert__direct_pool_deinitialize(&pool->u.direct); break;
    default: break; /* not a pool type (the enum's width sentinel) */
  }
}

static bool pool_accept(const cubert_memory_pool_t *pool, uint64_t size) {
  (void)size; /* read by the paged pools only */
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED: return cubert__sliced_pool_accept(&pool->u.sliced, size);
    case CUBERT_MEMORY_POOL_EXCLUSIVE: return cubert__exclusive_pool_accept(&pool->u.exclusive, size);
    )
    case CUBERT_MEMORY_POOL_DIRECT: return true;
    default: break; /* not a pool type (the enum's width sentinel) */
  }
  return false;
}

static cubert_status_t pool_try_reserve(cubert_memory_pool_t *pool, uint64_t size,
                                        cubert_memory_id_t owner, bool *found,
                                        cubert_error_t *err) {
  /* unreachable: another pool type (pools_build only makes these three) */
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED:
      return cubert__sliced_pool_try_reserve(&pool->u.sliced, size, owner, found, err);
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      return cubert__exclusive_pool_try_reserve(&pool->u.exclusive, size, owner, found, err);
    )
    case CUBERT_MEMORY_POOL_DIRECT:
      return cubert__direct_pool_try_reserve(&pool->u.direct, size, owner, found, err);
    default: break; /* not a pool type (the enum's width sentinel) */
  }
  *found = false;
  return CUBERT_STATUS_OK;
}

static cubert_status_t pool_alloc(cubert_memory_pool_t *pool, uint64_t size,
                                  cubert_memory_id_t owner, cubert_error_t *err) {
  /* unreachable: another pool type (pools_build only makes these three) */
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED: return cubert__sliced_pool_alloc(&pool->u.sliced, size, owner, err);
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      return cubert__exclusive_pool_alloc(&pool->u.exclusive, size, owner, err);
    )
    case CUBERT_MEMORY_POOL_DIRECT: return cubert__direct_pool_alloc(&pool->u.direct, size, owner, err);
    default: break; /* not a pool type (the enum's width sentinel) */
  }
  return cubert_error_set(err, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
}

static cubert_status_t pool_find(cubert_memory_pool_t *pool, cubert_memory_location_t loc,
                                 cubert_memory_id_t id, cubert_memory_slice_view_t *view,
                                 cubert_error_t *err) {
  /* unreachable: another pool type (pools_build only makes these three) */
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED: return cubert__sliced_pool_find(&pool->u.sliced, loc, id, view, err);
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      return cubert__exclusive_pool_find(&pool->u.exclusive, loc, id, view, err);
    )
    case CUBERT_MEMORY_POOL_DIRECT: return cubert__direct_pool_find(&pool->u.direct, loc, id, view, err);
    default: break; /* not a pool type (the enum's width sentinel) */
  }
  return cubert_error_set(err, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
}

static void pool_cleanup(cubert_memory_pool_t *pool, uint64_t alloc_nr, bool explicit_) {
  (void)alloc_nr; /* read by the exclusive pools only */
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED: cubert__sliced_pool_cleanup(&pool->u.sliced, explicit_); break;
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      cubert__exclusive_pool_cleanup(&pool->u.exclusive, alloc_nr, explicit_);
      break;
    )
    case CUBERT_MEMORY_POOL_DIRECT: cubert__direct_pool_cleanup(&pool->u.direct, explicit_); break;
    default: break; /* not a pool type (the enum's width sentinel) */
  }
}

static void pool_report(cubert_memory_pool_t *pool, cubert_memory_pool_report_t *out) {
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED: cubert__sliced_pool_report(&pool->u.sliced, out); break;
    case CUBERT_MEMORY_POOL_EXCLUSIVE: cubert__exclusive_pool_report(&pool->u.exclusive, out); break;
    )
    case CUBERT_MEMORY_POOL_DIRECT: cubert__direct_pool_report(&pool->u.direct, out); break;
    default: break; /* not a pool type (the enum's width sentinel) */
  }
  out->capacity_exceeded = pool->capacity_exceeded;
}

static void pool_trim(cubert_memory_pool_t *pool) {
  switch (pool->type) {
    MEMORY_IF_PAGED_POOLS(
    case CUBERT_MEMORY_POOL_SLICED: cubert__sliced_pool_trim(&pool->u.sliced); break;
    case CUBERT_MEMORY_POOL_EXCLUSIVE: cubert__exclusive_pool_trim(&pool->u.exclusive); break;
    )
    case CUBERT_MEMORY_POOL_DIRECT: cubert__direct_pool_trim(&pool->u.direct); break;
    default: break; /* not a pool type (the enum's width sentinel) */
  }
}

/* ---- layouts ---------------------------------------------------------------------- */

static void pools_free(cubert_memory_manager_t *mm, cubert_memory_pool_t *pools, uint32_t count) {
  uint32_t i;
  if (!pools) return;
  for (i = 0; i < count; i++) pool_deinitialize(&pools[i]);
  cubert_allocator_free(mm->env.allocator, pools, pools_bytes(mm, count), mm_align(mm->padded));
}

/* Build the dynamic pools of `config` (nothing kept on failure). */
static cubert_status_t pools_build(cubert_memory_manager_t *mm,
                                   const cubert_memory_configuration_t *config,
                                   cubert_memory_device_properties_t props,
                                   cubert_memory_pool_t **out_pools, uint32_t *out_count,
                                   cubert_error_t *out_error) {
  uint32_t count = 0, i;
  cubert_memory_pool_options_t *options = NULL;
  cubert_memory_pool_t *pools = NULL;
  cubert_status_t status;
  cubert_error_t sizing;
  /* the sizing query (capacity 0) answers OUT_OF_RANGE when there are pools:
   * its record stays local, the caller's is written only on a real failure */
  status = cubert_memory_configuration_pools(config, props, NULL, 0, &count,
                                             out_error ? &sizing : NULL);
  if (status != CUBERT_STATUS_OK && status != CUBERT_STATUS_OUT_OF_RANGE) {
    if (out_error) *out_error = sizing;
    return status;
  }
  /* unreachable: count > max (configuration_pools refuses more pools first) */
  if (count > CUBERT_MEMORY_MAX_DYNAMIC_POOLS) {
    uint64_t n = count;
    return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_TOO_MANY_POOLS, &n, 1, NULL);
  }
  if (count == 0) {
    *out_pools = NULL;
    *out_count = 0;
    return CUBERT_STATUS_OK;
  }
  if (cubert_allocator_malloc_array(mm->env.allocator, count, sizeof(*options), 0,
                                    (void **)&options, NULL) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc(mm->env.allocator, pools_bytes(mm, count), mm_align(mm->padded),
                              (void **)&pools, NULL) != CUBERT_STATUS_OK) {
    if (options) cubert_allocator_free(mm->env.allocator, options, count * sizeof(*options), 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "memory pools");
  }
  status = cubert_memory_configuration_pools(config, props, options, count, &count, out_error);
  /* unreachable: a pool failing to initialize (the configuration refused a zero page) */
  for (i = 0; status == CUBERT_STATUS_OK && i < count; i++) {
    pools[i].type = options[i].type;
    pools[i].capacity_exceeded = false;
    /* unreachable: another pool type (the configuration checked each entry) */
    switch (options[i].type) {
      MEMORY_IF_PAGED_POOLS(
      case CUBERT_MEMORY_POOL_SLICED:
        status = cubert__sliced_pool_initialize(&pools[i].u.sliced, &mm->env, (uint8_t)i,
                                                &options[i], props.alignment, mm->poll_per_reserve,
                                                out_error);
        pools[i].u.sliced.poll_newest = mm->poll_newest;
        break;
      case CUBERT_MEMORY_POOL_EXCLUSIVE:
        status = cubert__exclusive_pool_initialize(&pools[i].u.exclusive, &mm->env, (uint8_t)i,
                                                   &options[i], props.alignment, out_error);
        break;
      )
      case CUBERT_MEMORY_POOL_DIRECT:
        cubert__direct_pool_initialize(&pools[i].u.direct, &mm->env, (uint8_t)i, &options[i],
                                       props.alignment);
        break;
      default: break; /* not a pool type (the enum's width sentinel) */
    }
  }
  cubert_allocator_free(mm->env.allocator, options, count * sizeof(*options), 0);
  /* unreachable: status != OK (no pool fails to initialize, above) */
  if (status != CUBERT_STATUS_OK) {
    /* initialized pools hold no memory yet */
    cubert_allocator_free(mm->env.allocator, pools, pools_bytes(mm, count), mm_align(mm->padded));
    return status;
  }
  *out_pools = pools;
  *out_count = count;
  return CUBERT_STATUS_OK;
}

static cubert_memory_device_properties_t resolve_props(cubert_storage_t storage,
                                                       cubert_memory_device_properties_t props) {
  if (props.alignment == 0) props.alignment = storage.vtable->alignment(storage.self);
  if (props.alignment == 0) props.alignment = 1;
  return props;
}

cubert_status_t cubert__memory_manager_create(
    cubert_allocator_t allocator, cubert_storage_t storage, cubert_handle_table_t *table,
    cubert_memory_device_properties_t props, const cubert_memory_configuration_t *config,
    const cubert_memory_manager_options_t *options, cubert_memory_manager_t **out_manager,
    cubert_error_t *out_error) {
  cubert_memory_manager_t *mm = NULL;
  cubert_memory_manager_options_t defaults;
  cubert_status_t status;
  bool padded;
  if (!out_manager || !table || !config || !allocator.fn || !storage.vtable ||
      !storage.vtable->alignment || !storage.vtable->alloc || !storage.vtable->get ||
      !storage.vtable->dealloc || !storage.vtable->flush)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "memory manager arguments");
  if (!options) {
    cubert__memory_manager_options_initialize(&defaults);
    options = &defaults;
  }
  if ((unsigned)options->persistent_memory > (unsigned)CUBERT_PERSISTENT_MEMORY_ENFORCED)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "persistent_memory");
  padded = options->padded;
  if (cubert_allocator_malloc(allocator, mm_bytes(padded), mm_align(padded), (void **)&mm, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "memory manager");
  mm->padded = padded;
  mm->env.allocator = allocator;
  mm->env.storage = storage;
  mm->env.table = table;
  mm->env.flush_pending = false;
  mm->props = resolve_props(storage, props);
  mm->persistent_memory = options->persistent_memory;
  mm->reclaim_and_retry = options->reclaim_and_retry;
  mm->poll_per_reserve = options->poll_per_reserve;
  mm->poll_newest = options->poll_newest;
  mm->handle_lane = options->handle_lane;
  if (options->has_initial_mode)
    mm->persistent_depth = options->initial_mode == CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT;
  else
    mm->persistent_depth = options->persistent_memory == CUBERT_PERSISTENT_MEMORY_ENFORCED;
  cubert__persistent_pool_initialize(&mm->persistent, &mm->env, mm->props.alignment,
                                     mm->props.max_page_size);
  status = pools_build(mm, config, mm->props, &mm->pools, &mm->pool_count, out_error);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, mm, mm_bytes(padded), mm_align(padded));
    return status;
  }
  next_check_update(mm);
  *out_manager = mm;
  return CUBERT_STATUS_OK;
}

void cubert__memory_manager_destroy(cubert_memory_manager_t *mm) {
  cubert_allocator_t allocator;
  bool padded;
  if (!mm) return;
  allocator = mm->env.allocator;
  padded = mm->padded;
  pools_free(mm, mm->pools, mm->pool_count);
  cubert__persistent_pool_deinitialize(&mm->persistent);
  mm->env.storage.vtable->flush(mm->env.storage.self);
  cubert_allocator_free(allocator, mm, mm_bytes(padded), mm_align(padded));
}

/* ---- cleanup and modes ------------------------------------------------------------ */

/* When the next periodic cleanup has work: the earliest exclusive-pool check. */
static void next_check_update(cubert_memory_manager_t *mm) {
  uint32_t i;
  mm->next_check = UINT64_MAX;
  for (i = 0; i < mm->pool_count; i++) {
    const cubert_exclusive_pool_t *p = &mm->pools[i].u.exclusive;
    uint64_t period;
    if (mm->pools[i].type != CUBERT_MEMORY_POOL_EXCLUSIVE || p->dealloc_period == CUBERT_MEMORY_NONE)
      continue;
    period = p->dealloc_period / 5;
    mm->next_check = CUBERT_MIN(mm->next_check, cubert__memory_sat_add(p->last_check, period));
  }
}

static void cleanup(cubert_memory_manager_t *mm, bool explicit_) {
  uint32_t i;
  /* Periodic cleanups only age exclusive pages: skip until one is due. */
  if (!explicit_ && mm->alloc_reserve_count < mm->next_check && !mm->env.flush_pending) return;
  for (i = 0; i < mm->pool_count; i++) pool_cleanup(&mm->pools[i], mm->alloc_reserve_count, explicit_);
  next_check_update(mm);
  MEMORY_IF_PERSISTENT(if (explicit_) cubert__persistent_pool_cleanup(&mm->persistent, true);)
  if (explicit_ || mm->env.flush_pending) {
    mm->env.storage.vtable->flush(mm->env.storage.self);
    mm->env.flush_pending = false;
  }
}

void cubert__memory_manager_cleanup(cubert_memory_manager_t *mm, bool explicit_) {
  if (mm) cleanup(mm, explicit_);
}

void cubert__memory_manager_set_mode(cubert_memory_manager_t *mm,
                                     cubert_memory_allocation_mode_t mode) {
  if (!mm || mm->persistent_memory == CUBERT_PERSISTENT_MEMORY_DISABLED ||
      mm->persistent_memory == CUBERT_PERSISTENT_MEMORY_ENFORCED)
    return;
  if (mode == CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT) {
    /* unreachable: in tests (2^32 - 1 nested persistent modes) */
    if (mm->persistent_depth < UINT32_MAX) mm->persistent_depth++;
  } else if (mm->persistent_depth > 0) {
    mm->persistent_depth--;
  }
}

cubert_memory_allocation_mode_t cubert__memory_manager_mode(const cubert_memory_manager_t *mm) {
  return mm && mm->persistent_depth > 0 ? CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT
                                        : CUBERT_MEMORY_ALLOCATION_MODE_AUTO;
}

/* ---- usage and reports -------------------------------------------------------------- */

static cubert_memory_usage_t usage_and_largest_free(cubert_memory_manager_t *mm,
                                                    uint64_t *largest_free) {
  cubert_memory_usage_t total;
  cubert_memory_pool_report_t r;
  uint32_t i;
  cubert_memset(&total, 0, sizeof total);
  *largest_free = 0;
  for (i = 0; i < mm->pool_count; i++) {
    pool_report(&mm->pools[i], &r);
    total = cubert_memory_usage_combine(total, r.usage);
    if (r.largest_free > *largest_free) *largest_free = r.largest_free;
  }
  cubert__persistent_pool_report(&mm->persistent, &r);
  if (r.largest_free > *largest_free) *largest_free = r.largest_free;
  return cubert_memory_usage_combine(total, r.usage);
}

cubert_memory_usage_t cubert__memory_manager_memory_usage(cubert_memory_manager_t *mm) {
  uint64_t largest;
  cubert_memory_usage_t none;
  if (!mm) {
    cubert_memset(&none, 0, sizeof none);
    return none;
  }
  return usage_and_largest_free(mm, &largest);
}

uint32_t cubert__memory_manager_pool_count(const cubert_memory_manager_t *mm) {
  return mm ? mm->pool_count : 0;
}

uint64_t cubert__memory_manager_alloc_reserve_count(const cubert_memory_manager_t *mm) {
  return mm ? mm->alloc_reserve_count : 0;
}

cubert_status_t cubert__memory_manager_report(cubert_memory_manager_t *mm,
                                              cubert_memory_pool_report_t *out_dynamic,
                                              uint32_t capacity, uint32_t *out_count,
                                              cubert_memory_pool_report_t *out_persistent) {
  uint32_t i;
  if (!mm || (capacity > 0 && !out_dynamic)) return CUBERT_STATUS_INVALID_ARGUMENT;
  for (i = 0; i < mm->pool_count && i < capacity; i++) pool_report(&mm->pools[i], &out_dynamic[i]);
  if (out_persistent) cubert__persistent_pool_report(&mm->persistent, out_persistent);
  if (out_count) *out_count = mm->pool_count;
  return capacity < mm->pool_count ? CUBERT_STATUS_OUT_OF_RANGE : CUBERT_STATUS_OK;
}

/* The OOM record carries the report (cubert's addition): enough to
 * tell a leak (in use ~ reserved) from fragmentation (largest free block
 * small next to reserved - in use). */
static void attach_report(cubert_memory_manager_t *mm, uint64_t size, cubert_error_t *err) {
  cubert_memory_usage_t u;
  uint64_t largest, fields[4];
  int64_t driver;
  char reason[CUBERT_ERROR_REASON_SIZE];
  size_t len = 0;
  if (!err) return;
  driver = err->driver_code;
  u = usage_and_largest_free(mm, &largest);
#define PUT_TEXT_(s) \
  if (len < sizeof reason) len += cubert__strlcpy(reason + len, (s), sizeof reason - len)
#define PUT_BYTES_(v) \
  if (len < sizeof reason) len += cubert_memory_bytes_format((v), reason + len, sizeof reason - len)
  reason[0] = 0;
  /* unreachable(8): len >= sizeof reason (the text stays under 120 of 192 bytes) */
  PUT_TEXT_("reserved ");
  PUT_BYTES_(u.bytes_reserved);
  PUT_TEXT_(", in use ");
  PUT_BYTES_(u.bytes_in_use);
  PUT_TEXT_(", padding ");
  PUT_BYTES_(u.bytes_padding);
  PUT_TEXT_(", largest free block ");
  PUT_BYTES_(largest);
#undef PUT_TEXT_
#undef PUT_BYTES_
  fields[0] = size;
  fields[1] = u.bytes_reserved;
  fields[2] = u.bytes_in_use;
  fields[3] = largest;
  (void)cubert_error_set(err, CUBERT_ERROR_IO_OUT_OF_MEMORY, fields, 4, reason);
  err->field2[0] = u.bytes_padding;
  err->field2[1] = u.number_allocs;
  err->driver_code = driver;
}

/* ---- reserve ---------------------------------------------------------------------------- */

static cubert_status_t route(cubert_memory_manager_t *mm, uint64_t size, cubert_memory_id_t nid,
                             cubert_error_t *err) {
  bool persistent = mm->persistent_depth > 0, found = false, capacity_seen = false;
  bool size_match = mm->persistent_memory == CUBERT_PERSISTENT_MEMORY_SIZE_MATCH;
  cubert_error_t capacity_error;
  cubert_status_t status;
  uint32_t i;
  MEMORY_IF_PERSISTENT(
  if (persistent || size_match) {
    /* unreachable: an error (it fails only for a dead owner; nid was just acquired) */
    CUBERT_RETURN_IF_ERROR(cubert__persistent_pool_try_reserve(&mm->persistent, size, nid, &found, err));
    if (found) return CUBERT_STATUS_OK;
  }
  if (persistent || (size_match && cubert__persistent_pool_has_size(&mm->persistent, size)))
    return cubert__persistent_pool_alloc(&mm->persistent, size, nid, err);
  )
  /* A manager made Persistent (options ENFORCED or initial_mode) cannot allocate. */
  MEMORY_PERSISTENT_OFF(
  (void)size_match;
  if (persistent)
    return cubert_error_set(err, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                            "the persistent pool (CUBERT_CONFIG_PERSISTENT_MEMORY=0)");
  )
  for (i = 0; i < mm->pool_count; i++) {
    cubert_memory_pool_t *pool = &mm->pools[i];
    if (!pool_accept(pool, size)) continue;
    status = pool_try_reserve(pool, size, nid, &found, err);
    if (status == CUBERT_STATUS_OK && found) return CUBERT_STATUS_OK;
    if (status == CUBERT_STATUS_OK) status = pool_alloc(pool, size, nid, err);
    if (status == CUBERT_STATUS_OK) return CUBERT_STATUS_OK;
    if (status == CUBERT_STATUS_POOL_CAPACITY_EXCEEDED) {
      pool->capacity_exceeded = true; /* CubeCL logs a warning once per pool */
      capacity_seen = true;
      if (err) capacity_error = *err;
      continue; /* spill to the next accepting pool */
    }
    if (capacity_seen) break;
    return status;
  }
  if (capacity_seen) {
    if (err) *err = capacity_error;
    return CUBERT_STATUS_POOL_CAPACITY_EXCEEDED;
  }
  return cubert_error_set(err, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
}

static void id_discard(cubert_memory_manager_t *mm, cubert_memory_id_t id) {
  (void)cubert__memory_id_disown(mm->env.table, id);
  (void)cubert__memory_id_release_handle(mm->env.table, id);
}

cubert_status_t cubert__memory_manager_reserve(cubert_memory_manager_t *mm, uint64_t size,
                                               cubert_memory_id_t *out_id,
                                               cubert_error_t *out_error) {
  cubert_memory_id_t nid;
  cubert_memory_location_t unset;
  cubert_status_t status;
  if (!mm || !out_id)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  mm->alloc_reserve_count++;
  cleanup(mm, false);
  cubert_memset(&unset, 0, sizeof unset);
  /* The new id is owned by the manager (its pools) from the start. */
  status = cubert__memory_id_acquire_owned_lane(mm->env.table, mm->handle_lane, unset, &nid);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error,
                            status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                            ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                            : CUBERT_ERROR_OUT_OF_RANGE,
                            NULL, 0, "handle table");
  status = route(mm, size, nid, out_error);
  if (status == CUBERT_STATUS_OUT_OF_MEMORY && mm->reclaim_and_retry) {
    cleanup(mm, true); /* reclaim, then retry once (CubeCL #1468) */
    status = route(mm, size, nid, out_error);
  }
  if (status != CUBERT_STATUS_OK) {
    id_discard(mm, nid);
    if (status == CUBERT_STATUS_OUT_OF_MEMORY) attach_report(mm, size, out_error);
    return status;
  }
  *out_id = nid;
  return CUBERT_STATUS_OK;
}

/* ---- lookups ----------------------------------------------------------------------------- */

static cubert_status_t find(cubert_memory_manager_t *mm, cubert_memory_id_t id,
                            cubert_memory_slice_view_t *view, cubert_memory_location_t *out_loc,
                            cubert_error_t *err) {
  cubert_memory_location_t loc;
  /* unreachable: the location of an alive id failing (in single-threaded tests) */
  if (!cubert__memory_id_is_alive(mm->env.table, id) ||
      cubert__memory_id_location(mm->env.table, id, &loc) != CUBERT_STATUS_OK)
    return cubert_error_set(err, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, "dead memory id");
  if (!loc.init)
    return cubert_error_set(err, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location was never initialized");
  /* unreachable: out_loc set (every caller passes NULL) */
  if (out_loc) *out_loc = loc;
  if (loc.pool == CUBERT_MEMORY_PERSISTENT_POOL_POS)
    return cubert__persistent_pool_find(&mm->persistent, loc, id, view, err);
  if (loc.pool >= mm->pool_count) return cubert__memory_not_found(err, "Pool ", loc.pool, " doesn't exist");
  return pool_find(&mm->pools[loc.pool], loc, id, view, err);
}

cubert_status_t cubert__memory_manager_bind(cubert_memory_manager_t *mm, cubert_memory_id_t reserved,
                                            cubert_memory_id_t assigned, uint64_t cursor,
                                            cubert_error_t *out_error) {
  cubert_memory_location_t loc, assigned_loc;
  cubert_memory_slice_view_t view;
  if (!mm) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  /* unreachable: the location of an alive id failing (in single-threaded tests) */
  if (!cubert__memory_id_is_alive(mm->env.table, reserved) ||
      !cubert__memory_id_is_alive(mm->env.table, assigned) ||
      cubert__memory_id_location(mm->env.table, reserved, &loc) != CUBERT_STATUS_OK ||
      cubert__memory_id_location(mm->env.table, assigned, &assigned_loc) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, "dead memory id");
  if (cubert__memory_id_equal(reserved, assigned))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "bind to the reserved id itself");
  if (!loc.init)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Reserved memory isn't initialized");
  if (loc.pool != CUBERT_MEMORY_PERSISTENT_POOL_POS && loc.pool >= mm->pool_count)
    return cubert__memory_not_found(out_error, "Memory pool ", loc.pool, " doesn't exist");
  if (assigned_loc.init)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "Assigned memory is already bound");
  CUBERT_RETURN_IF_ERROR(find(mm, reserved, &view, NULL, out_error));
  /* unreachable(2): failures (assigned is alive, unbound, so not owned: checked above) */
  if (cubert__memory_id_set_owned(mm->env.table, assigned, true) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, "assigned id");
  if (cubert__memory_id_set_location_owned(mm->env.table, assigned, loc) != CUBERT_STATUS_OK) {
    (void)cubert__memory_id_disown(mm->env.table, assigned);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, "assigned id");
  }
  *view.owner = assigned;
  *view.cursor = cursor;
  (void)cubert__memory_id_disown(mm->env.table, reserved);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_manager_get_cursor(cubert_memory_manager_t *mm,
                                                  cubert_memory_id_t binding, uint64_t *out_cursor,
                                                  cubert_error_t *out_error) {
  cubert_memory_slice_view_t view;
  if (!mm || !out_cursor) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  CUBERT_RETURN_IF_ERROR(find(mm, binding, &view, NULL, out_error));
  *out_cursor = *view.cursor;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_manager_get_storage(cubert_memory_manager_t *mm,
                                                   cubert_memory_id_t binding,
                                                   cubert_storage_handle_t *out_handle,
                                                   cubert_error_t *out_error) {
  cubert_memory_slice_view_t view;
  if (!mm || !out_handle) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  CUBERT_RETURN_IF_ERROR(find(mm, binding, &view, NULL, out_error));
  *out_handle = view.storage;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_manager_get_resource(cubert_memory_manager_t *mm,
                                                    cubert_memory_id_t binding, uint64_t offset_start,
                                                    uint64_t offset_end,
                                                    cubert_storage_resource_t *out_resource,
                                                    cubert_error_t *out_error) {
  cubert_memory_slice_view_t view;
  cubert_storage_handle_t h;
  if (!mm || !out_resource) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  CUBERT_RETURN_IF_ERROR(find(mm, binding, &view, NULL, out_error));
  h = view.storage;
  if (offset_start > h.size || offset_end > h.size - offset_start)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0,
                            "offsets exceed the allocation");
  h.offset += offset_start; /* offset_start(n): offset += n, size -= n */
  h.size -= offset_start + offset_end; /* offset_end(n): size -= n */
  return mm->env.storage.vtable->get(mm->env.storage.self, &h, out_resource, out_error);
}

/* ---- layouts at run time ----------------------------------------------------------------- */

cubert_status_t cubert__memory_manager_install_pools(cubert_memory_manager_t *mm,
                                                     const cubert_memory_configuration_t *config,
                                                     cubert_memory_device_properties_t props,
                                                     cubert_error_t *out_error) {
  cubert_memory_pool_t *pools = NULL;
  cubert_memory_pool_report_t r;
  uint64_t in_use = 0;
  uint32_t count = 0, i;
  if (!mm || !config) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  cleanup(mm, true);
  for (i = 0; i < mm->pool_count; i++) {
    pool_report(&mm->pools[i], &r);
    in_use = cubert__memory_sat_add(in_use, r.usage.bytes_in_use);
  }
  if (in_use > 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INSTALL_POOLS_IN_USE, &in_use, 1, NULL);
  props = resolve_props(mm->env.storage, props);
  CUBERT_RETURN_IF_ERROR(pools_build(mm, config, props, &pools, &count, out_error));
  pools_free(mm, mm->pools, mm->pool_count); /* empty after the explicit cleanup */
  mm->env.storage.vtable->flush(mm->env.storage.self);
  mm->env.flush_pending = false;
  mm->pools = pools;
  mm->pool_count = count;
  mm->props.max_page_size = props.max_page_size;
  next_check_update(mm);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_manager_release_pools(cubert_memory_manager_t *mm,
                                                     cubert_memory_usage_t *out_remaining) {
  uint32_t i;
  if (!mm) return CUBERT_STATUS_INVALID_ARGUMENT;
  cleanup(mm, true);
  for (i = 0; i < mm->pool_count; i++) pool_trim(&mm->pools[i]);
  cubert__persistent_pool_trim(&mm->persistent);
  if (out_remaining) *out_remaining = cubert__memory_manager_memory_usage(mm);
  return CUBERT_STATUS_OK;
}

/* ---- test access --------------------------------------------------------------------------- */

cubert_memory_pool_t *cubert__memory_manager_pool(cubert_memory_manager_t *mm, uint32_t position) {
  return mm && position < mm->pool_count ? &mm->pools[position] : NULL;
}

cubert_persistent_pool_t *cubert__memory_manager_persistent(cubert_memory_manager_t *mm) {
  return mm ? &mm->persistent : NULL;
}
