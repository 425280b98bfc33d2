/* SPDX-License-Identifier: MIT */
/*
 * cubert/memory.h: what a user sees of device memory (CubeCL's MemoryUsage,
 * BytesFormat and MemoryAllocationMode): the usage figures of
 * cubert_client_memory_usage, their text forms, and the allocation mode of
 * cubert_client_allocation_mode (cubert/client.h). The memory manager, its
 * pools, storages and configurations are the server's:
 * core/memory/memory.h (docs/memory.md).
 * Pure, thread-safe, non-blocking, no allocation.
 */
#ifndef CUBERT_MEMORY_H
#define CUBERT_MEMORY_H

#include "cubert/base.h"
#include "cubert/error.h"
#include "cubert/properties.h"

CUBERT_EXTERN_C_BEGIN

typedef struct cubert_memory_usage_t {
  uint64_t number_allocs;  /* live allocations (slices), not pages */
  uint64_t bytes_in_use;   /* requested bytes of live allocations */
  uint64_t bytes_padding;  /* alignment padding of live allocations */
  uint64_t bytes_reserved; /* storage bytes held */
} cubert_memory_usage_t;

/* Field-wise sum (saturating). Pure. */
CUBERT_API cubert_memory_usage_t cubert_memory_usage_combine(cubert_memory_usage_t a,
                                                             cubert_memory_usage_t b);

/* Write `bytes` in binary units ("1023 B", "64.00 KiB", "1.50 GiB": base
 * 1024, two decimals rounded half up; CubeCL's BytesFormat prints base 1000
 * "KB"/"MB", cubert prints what the sizes are, powers of two). snprintf-like: returns the full length, NUL-terminates when
 * size > 0. No libc, pure. */
CUBERT_API size_t cubert_memory_bytes_format(uint64_t bytes, char *buf, size_t size);

/* Write the usage in CubeCL's Display form ("Memory Usage Report:\n  Number
 * of allocations: ..."; efficiency and padding overhead with two decimals,
 * "n/a" for a zero denominator, where CubeCL prints "NaN%"/"inf%").
 * snprintf-like. Pure. */
CUBERT_API size_t cubert_memory_usage_format(const cubert_memory_usage_t *usage, char *buf,
                                             size_t size);

/* How new allocations of a stream are placed (CubeCL's MemoryAllocationMode):
 * AUTO routes through the dynamic pools, PERSISTENT to the persistent pool
 * (exact-size reuse; cubert_client_memory_persistent_allocation). */
typedef enum cubert_memory_allocation_mode_e {
  CUBERT_MEMORY_ALLOCATION_MODE_AUTO = 0,
  CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT = 1,
  CUBERT_MEMORY_ALLOCATION_MODE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_memory_allocation_mode_t;

/* ---- pool configuration -------------------------------------------------- */

/* "None" for the optional fields of cubert_memory_pool_options_t. */
#define CUBERT_MEMORY_NONE UINT64_MAX
/* Limits of a layout: 254 dynamic pools, 65535 pages in a capped pool. */
#define CUBERT_MEMORY_MAX_DYNAMIC_POOLS 254u
#define CUBERT_MEMORY_MAX_PAGES 65535u
/* Pool position of the persistent pool in a memory location. */
#define CUBERT_MEMORY_PERSISTENT_POOL_POS 255u

typedef enum cubert_memory_pool_type_e {
  CUBERT_MEMORY_POOL_SLICED = 0,    /* SlicedPages { page_size, max_slice_size, max_pool_size } */
  CUBERT_MEMORY_POOL_EXCLUSIVE = 1, /* ExclusivePages { max_alloc_size } */
  CUBERT_MEMORY_POOL_DIRECT = 2,    /* Direct { reclaim_at } */
  CUBERT_MEMORY_POOL_TYPE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_memory_pool_type_t;

/* One dynamic pool (CubeCL's MemoryPoolOptions, and the entries of an
 * explicit layout). Fields a type does not use are ignored. Optional fields
 * hold CUBERT_MEMORY_NONE for "None".
 *  sliced:    page_size; max_slice_size (None = page size);
 *             max_pool_size (None = uncapped); dealloc_period (ignored).
 *  exclusive: max_alloc_size; dealloc_period (None = never periodic).
 *  direct:    reclaim_at (None = never reclaim before allocating). */
typedef struct cubert_memory_pool_options_t {
  cubert_memory_pool_type_t type;
  uint64_t page_size;
  uint64_t max_slice_size;
  uint64_t max_pool_size;
  uint64_t max_alloc_size;
  uint64_t reclaim_at;
  uint64_t dealloc_period;
} cubert_memory_pool_options_t;

/* Convenience constructors (pure). */
CUBERT_API cubert_memory_pool_options_t cubert_memory_pool_sliced(uint64_t page_size,
                                                                  uint64_t max_slice_size,
                                                                  uint64_t max_pool_size);
CUBERT_API cubert_memory_pool_options_t cubert_memory_pool_exclusive(uint64_t max_alloc_size,
                                                                     uint64_t dealloc_period);
CUBERT_API cubert_memory_pool_options_t cubert_memory_pool_direct(uint64_t reclaim_at);

/* MemoryConfiguration. CUSTOM borrows `pools` (pool_count entries). A device
 * create refuses a CUSTOM configuration with 0 pools (CONFIG_INVALID, kind
 * CONFIG_EMPTY_POOL_LIST: it could allocate nothing) and one with NULL pools
 * (INVALID_ARGUMENT), each with a reason; cubert_memory_configuration_pools
 * itself accepts 0 pools (a manager with persistent memory only). */
typedef enum cubert_memory_configuration_kind_e {
  CUBERT_MEMORY_CONFIGURATION_SUB_SLICES = 0,
  CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES = 1,
  CUBERT_MEMORY_CONFIGURATION_CUSTOM = 2,
  CUBERT_MEMORY_CONFIGURATION_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_memory_configuration_kind_t;

typedef struct cubert_memory_configuration_t {
  cubert_memory_configuration_kind_t kind;
  const cubert_memory_pool_options_t *pools;
  uint32_t pool_count;
} cubert_memory_configuration_t;

/* MemoryPoolsConfig: a programmatic layout. EXPLICIT borrows `entries`. */
typedef enum cubert_memory_pools_config_kind_e {
  CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES = 0,
  CUBERT_MEMORY_POOLS_PRESET_EXCLUSIVE_PAGES = 1,
  CUBERT_MEMORY_POOLS_EXPLICIT = 2,
  CUBERT_MEMORY_POOLS_CONFIG_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_memory_pools_config_kind_t;

typedef struct cubert_memory_pools_config_t {
  cubert_memory_pools_config_kind_t kind;
  const cubert_memory_pool_options_t *entries;
  uint32_t count;
} cubert_memory_pools_config_t;

/* The runtime's default: SubSlices, or ExclusivePages when
 * exclusive_memory_only. Pure. */
CUBERT_API cubert_memory_configuration_t cubert_memory_configuration_default(
    bool exclusive_memory_only);

/* MemoryConfiguration::resolve. `pools` NULL keeps
 * `runtime_choice`; a preset replaces it; an explicit list is validated and
 * normalized (alignment = max(1, props.alignment)) into pool_buffer[0..count)
 * and *out_config becomes CUSTOM pointing at pool_buffer. Pure, thread-safe.
 * Errors (nothing written to *out_config): CONFIG_INVALID with kind
 * CONFIG_EMPTY_POOL_LIST, CONFIG_TOO_MANY_POOLS {count} (>= 255 entries),
 * CONFIG_ZERO_SIZE (reason "page_size" | "max_slice_size" | "max_pool_size"),
 * CONFIG_SLICE_LARGER_THAN_PAGE {page_size, max_slice_size},
 * CONFIG_CAP_SMALLER_THAN_PAGE {page_size, max_pool_size},
 * CONFIG_TOO_MANY_PAGES {pages}, CONFIG_PRESET_UNAVAILABLE (SubSlices preset
 * when exclusive_memory_only; reason "SubSlices"),
 * CONFIG_SLICED_POOLS_UNAVAILABLE (a sliced entry when exclusive_memory_only);
 * INVALID_ARGUMENT (NULL pointers, an unknown kind/type, pool_buffer smaller
 * than the list), OVERFLOW (rounding up overflows). */
CUBERT_API cubert_status_t cubert_memory_configuration_resolve(
    const cubert_memory_configuration_t *runtime_choice, const cubert_memory_pools_config_t *pools,
    cubert_memory_device_properties_t props, bool exclusive_memory_only,
    cubert_memory_pool_options_t *pool_buffer, uint32_t pool_buffer_capacity,
    cubert_memory_configuration_t *out_config, cubert_error_t *out_error);

/* The ordered dynamic pools of a configuration for these device properties:
 * the SubSlices ladder, the 24 ExclusivePages buckets, or the CUSTOM list
 * taken as given, like CubeCL's MemoryPoolOptions (a cap below the page
 * size shrinks the page; exclusive sizes are rounded up to the
 * alignment); only a sliced page_size of 0 (CONFIG_ZERO_SIZE), an unknown
 * type (INVALID_ARGUMENT) and more than 254 pools (CONFIG_TOO_MANY_POOLS)
 * are rejected. Writes at most
 * `capacity` entries and always the needed count to *out_count;
 * OUT_OF_RANGE when capacity is too small (then out_pools may be NULL).
 * The numbers are CubeCL's f64 formulas: the ExclusivePages bucket i is
 * floor(exp(ln 32768 + (ln max_page - ln 32768) * i/23)) rounded up to the
 * alignment, with ln and exp correctly rounded (every max_page 1..65536 at
 * alignments 1, 8 and 256 matches a correctly rounded reference); an
 * exclusive pool's dealloc_period (SubSlices tail, ExclusivePages buckets) is
 * 5000 * round_half_away(1 + size / 2^30) computed as CubeCL does in f64:
 * a size >= 2^53 is first rounded to 53 significant bits (nearest, ties to
 * even), so a size just below an odd multiple of 2^29 may round up to it and
 * get the next period: 2^53 + 2^29 - 1 gives 5000 * (2^23 + 2), not
 * 5000 * (2^23 + 1).
 * Other errors as cubert_memory_configuration_resolve. Pure, thread-safe. */
CUBERT_API cubert_status_t cubert_memory_configuration_pools(
    const cubert_memory_configuration_t *config, cubert_memory_device_properties_t props,
    cubert_memory_pool_options_t *out_pools, uint32_t capacity, uint32_t *out_count,
    cubert_error_t *out_error);

typedef enum cubert_memory_pool_kind_e {
  CUBERT_MEMORY_POOL_KIND_SLICED = 0,
  CUBERT_MEMORY_POOL_KIND_EXCLUSIVE = 1,
  CUBERT_MEMORY_POOL_KIND_DIRECT = 2,
  CUBERT_MEMORY_POOL_KIND_PERSISTENT = 3,
  CUBERT_MEMORY_POOL_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_memory_pool_kind_t;

/* MemoryPoolReport, plus the largest free block (cubert's addition: with
 * usage it tells fragmentation from a leak). */
typedef struct cubert_memory_pool_report_t {
  cubert_memory_pool_kind_t kind;
  uint64_t page_size;       /* sliced: effective page size (after a cap shrink) */
  uint64_t max_slice_size;  /* sliced */
  uint64_t max_pool_size;   /* sliced: max_pages * page_size, or CUBERT_MEMORY_NONE */
  uint64_t max_alloc_size;  /* exclusive */
  uint64_t reclaim_at;      /* direct, or CUBERT_MEMORY_NONE */
  cubert_memory_usage_t usage;
  uint64_t pages;           /* storage allocations held */
  uint64_t pages_peak;      /* most ever held at once */
  uint64_t pages_unmapped;  /* always 0: cubert has no lazy (dry-run) backing */
  uint64_t largest_alloc;   /* largest request ever served (pre-padding) */
  uint64_t largest_free;    /* largest free contiguous block */
  bool capacity_exceeded;   /* hit PoolCapacityExceeded since the layout was installed */
} cubert_memory_pool_report_t;
CUBERT_EXTERN_C_END

#endif /* CUBERT_MEMORY_H */
