/* SPDX-License-Identifier: MIT */
/*
 * cubert/memory.h: what a user sees of device memory (CubeCL's MemoryUsage,
 * BytesFormat and MemoryAllocationMode): the usage figures of
 * cubert_client_memory_usage, their text forms, and the allocation mode of
 * cubert_client_allocation_mode (cubert/client.h). The memory manager, its
 * pools, storages and configurations are the server's:
 * cubert/backend/memory.h (docs/memory.md).
 * Pure, thread-safe, non-blocking, no allocation.
 */
#ifndef CUBERT_MEMORY_H
#define CUBERT_MEMORY_H

#include "cubert/base.h"

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

/* Write `bytes` in CubeCL's BytesFormat ("999 B", "1.05 MB": base 1000, two
 * decimals). snprintf-like: returns the full length, NUL-terminates when
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

CUBERT_EXTERN_C_END

#endif /* CUBERT_MEMORY_H */
