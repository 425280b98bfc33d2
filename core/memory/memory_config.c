/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_config.c: memory configurations (docs/cubecl-mapping.md,
 * "Memory configuration"): the SubSlices
 * preset ladder, the ExclusivePages buckets, and the resolution of explicit
 * layouts with every validation error.
 */
#include "memory/memory_internal.h"
#include "memory/memory.h"
#include "cubert/driver/arith.h"

#define MIB ((uint64_t)1 << 20)

#if CUBERT_CONFIG_PAGED_POOLS
/* ---- natural log and exp without libm -------------------------------------
 * The ExclusivePages buckets are defined through ln/exp; these
 * are accurate to about an ulp, which the bucket vectors check. */

static const double k_ln2_hi = 6.93147180369123816490e-01;
static const double k_ln2_lo = 1.90821492927058770002e-10;

static double memory_ln(double x) {
  uint64_t bits;
  int e;
  double m, f, f2, term, sum;
  int k;
  /* unreachable: x <= 0 (callers pass 32768 and max_page_size >= 1) */
  if (!(x > 0.0)) return -1.0e308; /* callers pass positive values only */
  cubert_memcpy(&bits, &x, sizeof bits);
  e = (int)((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull; /* m in [1, 2) */
  cubert_memcpy(&m, &bits, sizeof m);
  if (m > 1.41421356237309504880) {
    m *= 0.5;
    e += 1;
  }
  /* ln m = 2 atanh(f), f = (m-1)/(m+1), |f| < 0.172 */
  f = (m - 1.0) / (m + 1.0);
  f2 = f * f;
  term = f;
  sum = 0.0;
  for (k = 1; k < 60; k += 2) {
    sum += term / (double)k;
    term *= f2;
  }
  return ((double)e * k_ln2_lo + 2.0 * sum) + (double)e * k_ln2_hi;
}

static double memory_exp(double x) {
  double kd, r, term, sum;
  int k, i;
  uint64_t bits;
  double scale;
  /* unreachable(5): NaN, x > 709, x < 0 (callers pass ln of sizes in [32768, 2^64)) */
  if (x != x) return x;
  if (x > 709.0) return 1.0e308;
  if (x < -745.0) return 0.0;
  kd = x / 6.93147180559945309417e-01;
  k = (int)(kd < 0 ? kd - 0.5 : kd + 0.5);
  r = (x - (double)k * k_ln2_hi) - (double)k * k_ln2_lo; /* |r| <= ln2/2 */
  term = 1.0;
  sum = 1.0;
  for (i = 1; i < 30; i++) {
    term *= r / (double)i;
    sum += term;
  }
  /* 2^k in two steps so that k near the exponent limits stays finite */
  bits = (uint64_t)(1023 + k / 2) << 52;
  cubert_memcpy(&scale, &bits, sizeof scale);
  sum *= scale;
  bits = (uint64_t)(1023 + (k - k / 2)) << 52;
  cubert_memcpy(&scale, &bits, sizeof scale);
  return sum * scale;
}

#endif /* CUBERT_CONFIG_PAGED_POOLS */

/* ---- constructors ----------------------------------------------------------- */

static cubert_memory_pool_options_t pool_options_empty(cubert_memory_pool_type_t type) {
  cubert_memory_pool_options_t o;
  o.type = type;
  o.page_size = 0;
  o.max_slice_size = CUBERT_MEMORY_NONE;
  o.max_pool_size = CUBERT_MEMORY_NONE;
  o.max_alloc_size = 0;
  o.reclaim_at = CUBERT_MEMORY_NONE;
  o.dealloc_period = CUBERT_MEMORY_NONE;
  return o;
}

cubert_memory_pool_options_t cubert_memory_pool_sliced(uint64_t page_size, uint64_t max_slice_size,
                                                       uint64_t max_pool_size) {
  cubert_memory_pool_options_t o = pool_options_empty(CUBERT_MEMORY_POOL_SLICED);
  o.page_size = page_size;
  o.max_slice_size = max_slice_size;
  o.max_pool_size = max_pool_size;
  return o;
}

cubert_memory_pool_options_t cubert_memory_pool_exclusive(uint64_t max_alloc_size,
                                                          uint64_t dealloc_period) {
  cubert_memory_pool_options_t o = pool_options_empty(CUBERT_MEMORY_POOL_EXCLUSIVE);
  o.max_alloc_size = max_alloc_size;
  o.dealloc_period = dealloc_period;
  return o;
}

cubert_memory_pool_options_t cubert_memory_pool_direct(uint64_t reclaim_at) {
  cubert_memory_pool_options_t o = pool_options_empty(CUBERT_MEMORY_POOL_DIRECT);
  o.reclaim_at = reclaim_at;
  return o;
}

cubert_memory_configuration_t cubert_memory_configuration_default(bool exclusive_memory_only) {
  cubert_memory_configuration_t c;
  c.kind = exclusive_memory_only ? CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES
                                 : CUBERT_MEMORY_CONFIGURATION_SUB_SLICES;
  c.pools = NULL;
  c.pool_count = 0;
  return c;
}

uint64_t cubert__memory_dealloc_period(uint64_t size) {
  /* round_half_away(1 + size/2^30) = 1 + floor((size + 2^29) / 2^30) */
  uint64_t units = 1 + (((size >> 29) + 1) >> 1);
  /* unreachable: saturation (units <= 2^34 + 1 for any u64 size) */
  return units > UINT64_MAX / 5000 ? UINT64_MAX - 1 : 5000 * units;
}

/* ---- presets ---------------------------------------------------------------- */

static uint64_t props_alignment(cubert_memory_device_properties_t props) {
  return props.alignment == 0 ? 1 : props.alignment;
}

/* Emit one pool into out[*n] when there is room; always count it. */
static void emit(cubert_memory_pool_options_t *out, uint32_t capacity, uint32_t *n,
                 cubert_memory_pool_options_t pool) {
  if (out && *n < capacity) out[*n] = pool;
  (*n)++;
}

#if CUBERT_CONFIG_PAGED_POOLS
static cubert_status_t preset_sub_slices(cubert_memory_device_properties_t props,
                                         cubert_memory_pool_options_t *out, uint32_t capacity,
                                         uint32_t *out_count, cubert_error_t *out_error) {
  uint64_t align = props_alignment(props);
  uint64_t pages[64], slices[64], current = props.max_page_size, tail;
  uint32_t recorded = 0, n = 0, base = 1, i;
  /* unreachable(4): 64 levels, or rounding current / 4 <= 2^62 up past 2^64 (sizes fit u64) */
  while (current >= 32 * MIB && recorded < 64) {
    if (cubert_u64_round_up(current / 4, align, &current) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "page size");
    pages[recorded] = current;
    slices[recorded] = base < 64 ? current >> base : 0;
    recorded++;
    base++;
  }
  emit(out, capacity, &n, cubert_memory_pool_exclusive(0, CUBERT_MEMORY_NONE));
  for (i = recorded; i > 0; i--)
    emit(out, capacity, &n,
         cubert_memory_pool_sliced(pages[i - 1], slices[i - 1], CUBERT_MEMORY_NONE));
  tail = props.max_page_size / align * align;
  emit(out, capacity, &n, cubert_memory_pool_exclusive(tail, cubert__memory_dealloc_period(tail)));
  *out_count = n;
  return CUBERT_STATUS_OK;
}

static cubert_status_t preset_exclusive_pages(cubert_memory_device_properties_t props,
                                              cubert_memory_pool_options_t *out,
                                              uint32_t capacity, uint32_t *out_count,
                                              cubert_error_t *out_error) {
  uint64_t align = props_alignment(props), prev = 0, size, aligned;
  double log_min, log_max, log_range, value;
  uint32_t i, n = 0;
  if (props.max_page_size == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "max_page_size");
  log_min = memory_ln(32768.0);
  log_max = memory_ln((double)props.max_page_size);
  log_range = log_max - log_min;
  for (i = 0; i < 24; i++) {
    double p = (double)i / 23.0;
    value = memory_exp(log_min + log_range * p);
    /* Rust's `as u64` saturates */
    /* unreachable(2): value <= 0 or >= 2^64 (exp(ln x) stays within a few ulps of x) */
    if (!(value > 0.0)) size = 0;
    else if (value >= 18446744073709551616.0) size = UINT64_MAX;
    else size = (uint64_t)value;
    if (cubert_u64_round_up(size, align, &aligned) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "bucket size");
    if (i > 0 && aligned == prev) continue; /* consecutive duplicates removed */
    prev = aligned;
    emit(out, capacity, &n,
         cubert_memory_pool_exclusive(aligned, cubert__memory_dealloc_period(aligned)));
  }
  *out_count = n;
  return CUBERT_STATUS_OK;
}

#else /* !CUBERT_CONFIG_PAGED_POOLS: a direct pool is the only kind */

/* Both presets: one direct pool that gives free allocations back before the next one. */
static cubert_status_t preset_direct(cubert_memory_pool_options_t *out, uint32_t capacity,
                                     uint32_t *out_count) {
  uint32_t n = 0;
  emit(out, capacity, &n, cubert_memory_pool_direct(0));
  *out_count = n;
  return CUBERT_STATUS_OK;
}

#define PAGED_OMITTED "sliced and exclusive pools (CUBERT_CONFIG_PAGED_POOLS=0)"

#endif /* CUBERT_CONFIG_PAGED_POOLS */

/* ---- explicit entries --------------------------------------------------------- */

static cubert_status_t round_field(uint64_t value, uint64_t align, uint64_t *out,
                                   cubert_error_t *out_error) {
  if (cubert_u64_round_up(value, align, out) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "pool size rounded up to the alignment overflows");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_pool_entry_resolve(const cubert_memory_pool_options_t *entry,
                                                  uint64_t alignment, bool exclusive_memory_only,
                                                  cubert_memory_pool_options_t *out,
                                                  cubert_error_t *out_error) {
  cubert_memory_pool_options_t r;
  uint64_t fields[2];
  if (alignment == 0) alignment = 1;
  switch (entry->type) {
#if !CUBERT_CONFIG_PAGED_POOLS
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
    case CUBERT_MEMORY_POOL_SLICED:
      (void)fields;
      (void)exclusive_memory_only;
      return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PAGED_OMITTED);
#else
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      r = pool_options_empty(CUBERT_MEMORY_POOL_EXCLUSIVE);
      CUBERT_RETURN_IF_ERROR(round_field(entry->max_alloc_size, alignment, &r.max_alloc_size,
                                         out_error));
      r.dealloc_period = entry->dealloc_period;
      break;
    case CUBERT_MEMORY_POOL_SLICED:
      if (exclusive_memory_only)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_SLICED_POOLS_UNAVAILABLE, NULL, 0,
                                NULL);
      r = pool_options_empty(CUBERT_MEMORY_POOL_SLICED);
      if (entry->page_size == 0)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "page_size");
      CUBERT_RETURN_IF_ERROR(round_field(entry->page_size, alignment, &r.page_size, out_error));
      if (entry->max_slice_size == CUBERT_MEMORY_NONE) {
        r.max_slice_size = r.page_size;
      } else if (entry->max_slice_size == 0) {
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0,
                                "max_slice_size");
      } else {
        CUBERT_RETURN_IF_ERROR(
            round_field(entry->max_slice_size, alignment, &r.max_slice_size, out_error));
      }
      if (r.max_slice_size > r.page_size) {
        fields[0] = r.page_size;
        fields[1] = r.max_slice_size;
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_SLICE_LARGER_THAN_PAGE, fields, 2,
                                NULL);
      }
      if (entry->max_pool_size != CUBERT_MEMORY_NONE) {
        if (entry->max_pool_size == 0)
          return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0,
                                  "max_pool_size");
        if (entry->max_pool_size < r.page_size) {
          fields[0] = r.page_size;
          fields[1] = entry->max_pool_size;
          return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_CAP_SMALLER_THAN_PAGE, fields,
                                  2, NULL);
        }
        if (entry->max_pool_size / r.page_size > CUBERT_MEMORY_MAX_PAGES) {
          fields[0] = entry->max_pool_size / r.page_size;
          return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_TOO_MANY_PAGES, fields, 1,
                                  NULL);
        }
        r.max_pool_size = entry->max_pool_size;
      }
      r.dealloc_period = entry->dealloc_period;
      break;
#endif
    case CUBERT_MEMORY_POOL_DIRECT:
      r = pool_options_empty(CUBERT_MEMORY_POOL_DIRECT);
      r.reclaim_at = entry->reclaim_at; /* dealloc period dropped */
      break;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown memory pool type");
  }
  *out = r;
  return CUBERT_STATUS_OK;
}

/* A CUSTOM configuration's entries are taken as given (CubeCL builds its
 * pools from MemoryPoolOptions without the explicit-layout checks: a cap
 * smaller than the page shrinks the page); only what would make
 * a pool meaningless is rejected. */
static cubert_status_t custom_entry_check(const cubert_memory_pool_options_t *entry,
                                          cubert_error_t *out_error) {
  switch (entry->type) {
#if !CUBERT_CONFIG_PAGED_POOLS
    case CUBERT_MEMORY_POOL_SLICED:
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PAGED_OMITTED);
#else
    case CUBERT_MEMORY_POOL_SLICED:
      if (entry->page_size == 0)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "page_size");
      return CUBERT_STATUS_OK;
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
#endif
    case CUBERT_MEMORY_POOL_DIRECT:
      return CUBERT_STATUS_OK;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown memory pool type");
  }
}

static cubert_status_t too_many_pools(uint64_t count, cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_TOO_MANY_POOLS, &count, 1, NULL);
}

cubert_status_t cubert_memory_configuration_pools(const cubert_memory_configuration_t *config,
                                                  cubert_memory_device_properties_t props,
                                                  cubert_memory_pool_options_t *out_pools,
                                                  uint32_t capacity, uint32_t *out_count,
                                                  cubert_error_t *out_error) {
  uint32_t n = 0, i;
  cubert_status_t status;
  if (!config || !out_count || (capacity > 0 && !out_pools))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  switch (config->kind) {
#if CUBERT_CONFIG_PAGED_POOLS
    case CUBERT_MEMORY_CONFIGURATION_SUB_SLICES:
      status = preset_sub_slices(props, out_pools, capacity, &n, out_error);
      break;
    case CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES:
      status = preset_exclusive_pages(props, out_pools, capacity, &n, out_error);
      break;
#else
    case CUBERT_MEMORY_CONFIGURATION_SUB_SLICES:
    case CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES:
      status = preset_direct(out_pools, capacity, &n);
      break;
#endif
    case CUBERT_MEMORY_CONFIGURATION_CUSTOM:
      if (config->pool_count > 0 && !config->pools)
        return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
      if (config->pool_count > CUBERT_MEMORY_MAX_DYNAMIC_POOLS)
        return too_many_pools(config->pool_count, out_error);
      for (i = 0; i < config->pool_count; i++)
        CUBERT_RETURN_IF_ERROR(custom_entry_check(&config->pools[i], out_error));
      for (i = 0; i < config->pool_count; i++) {
        cubert_memory_pool_options_t p = config->pools[i];
        if (p.type == CUBERT_MEMORY_POOL_EXCLUSIVE &&
            round_field(p.max_alloc_size, props_alignment(props), &p.max_alloc_size, out_error) !=
            CUBERT_STATUS_OK)
          return CUBERT_STATUS_OVERFLOW;
        emit(out_pools, capacity, &n, p);
      }
      status = CUBERT_STATUS_OK;
      break;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown memory configuration");
  }
  if (status != CUBERT_STATUS_OK) return status;
  *out_count = n;
  if (n > capacity)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0,
                            "pool buffer too small");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_memory_configuration_resolve(
    const cubert_memory_configuration_t *runtime_choice, const cubert_memory_pools_config_t *pools,
    cubert_memory_device_properties_t props, bool exclusive_memory_only,
    cubert_memory_pool_options_t *pool_buffer, uint32_t pool_buffer_capacity,
    cubert_memory_configuration_t *out_config, cubert_error_t *out_error) {
  uint32_t i;
  uint64_t align = props_alignment(props);
  if (!runtime_choice || !out_config)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, NULL);
  if (!pools) {
    *out_config = *runtime_choice;
    return CUBERT_STATUS_OK;
  }
  switch (pools->kind) {
    case CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES:
      if (exclusive_memory_only)
        return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_PRESET_UNAVAILABLE, NULL, 0,
                                "SubSlices");
      *out_config = cubert_memory_configuration_default(false);
      return CUBERT_STATUS_OK;
    case CUBERT_MEMORY_POOLS_PRESET_EXCLUSIVE_PAGES:
      *out_config = cubert_memory_configuration_default(true);
      return CUBERT_STATUS_OK;
    case CUBERT_MEMORY_POOLS_EXPLICIT:
      break;
    default:
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "unknown pools config");
  }
  if (pools->count == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST, NULL, 0, NULL);
  if (pools->count > CUBERT_MEMORY_MAX_DYNAMIC_POOLS) return too_many_pools(pools->count, out_error);
  if (!pools->entries || !pool_buffer || pool_buffer_capacity < pools->count)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "pool buffer too small");
  /* Validate everything before writing the caller's buffer. */
  for (i = 0; i < pools->count; i++) {
    cubert_memory_pool_options_t tmp;
    CUBERT_RETURN_IF_ERROR(cubert__memory_pool_entry_resolve(&pools->entries[i], align,
                                                             exclusive_memory_only, &tmp,
                                                             out_error));
  }
  for (i = 0; i < pools->count; i++)
    (void)cubert__memory_pool_entry_resolve(&pools->entries[i], align, exclusive_memory_only,
                                            &pool_buffer[i], NULL);
  out_config->kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  out_config->pools = pool_buffer;
  out_config->pool_count = pools->count;
  return CUBERT_STATUS_OK;
}
