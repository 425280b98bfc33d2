/* SPDX-License-Identifier: MIT */
/*
 * core/stream/stream_internal.h: the stream slot pool (CubeCL's StreamPool, spec
 * 6.1), shared by the multi-stream and any other per-slot stream scheduler.
 * Not installed. No lock: the owner serializes every call.
 */
#ifndef CUBERT_CORE_STREAM_INTERNAL_H
#define CUBERT_CORE_STREAM_INTERNAL_H

#include "base/internal.h"
#include "stream/stream.h"

/* Creates the entry of slot `index` (regular 0..max_streams-1, special k at
 * max_streams + k). Returns OK with *out_entry non-NULL, or an error with
 * nothing created. */
typedef cubert_status_t (*cubert_stream_pool_create_fn_t)(void *context, uint32_t index,
                                                          void **out_entry,
                                                          cubert_error_t *out_error);
typedef void (*cubert_stream_pool_destroy_fn_t)(void *context, uint32_t index, void *entry);

/* `max_streams` regular slots and `num_special` special slots, each created
 * lazily on first access by `create`. */
typedef struct cubert_stream_pool_t {
  cubert_allocator_t allocator;
  uint32_t max_streams;
  uint32_t num_special;
  void **entries; /* max_streams + num_special, NULL until created */
  cubert_stream_pool_create_fn_t create;
  cubert_stream_pool_destroy_fn_t destroy;
  void *context;
} cubert_stream_pool_t;

/* Initialize caller storage. INVALID_ARGUMENT (NULL pool/create/destroy,
 * max_streams 0, overflowing total), RESOURCE_EXHAUSTED. On failure the pool
 * is left zeroed (deinitialize is then a no-op). */
cubert_status_t cubert__stream_pool_initialize(cubert_stream_pool_t *pool,
                                               cubert_allocator_t allocator, uint32_t max_streams,
                                               uint32_t num_special,
                                               cubert_stream_pool_create_fn_t create,
                                               cubert_stream_pool_destroy_fn_t destroy,
                                               void *context);

/* Destroy every created entry (highest index first) and free the table. */
void cubert__stream_pool_deinitialize(cubert_stream_pool_t *pool);

/* Slot of a stream id: value mod max_streams. */
uint32_t cubert__stream_pool_index(const cubert_stream_pool_t *pool, uint64_t stream_id);

/* Index of special slot k (max_streams + k). */
uint32_t cubert__stream_pool_special_index(const cubert_stream_pool_t *pool, uint32_t k);

/* Total number of slots (regular + special). */
uint32_t cubert__stream_pool_size(const cubert_stream_pool_t *pool);

/* The entry at `index`, NULL when not created yet or out of range. */
void *cubert__stream_pool_get(const cubert_stream_pool_t *pool, uint32_t index);

/* The entry at `index`, created now if needed; *out_created (may be NULL)
 * says whether this call created it. OUT_OF_RANGE, or create's codes. */
cubert_status_t cubert__stream_pool_get_or_create(cubert_stream_pool_t *pool, uint32_t index,
                                                  void **out_entry, bool *out_created,
                                                  cubert_error_t *out_error);

/* Destroy the entry at `index` if created (undo of a lazy creation). */
void cubert__stream_pool_remove(cubert_stream_pool_t *pool, uint32_t index);

/* Number of created regular slots (StreamPool::stream_ids().count()). */
uint32_t cubert__stream_pool_count(const cubert_stream_pool_t *pool);

#endif /* CUBERT_CORE_STREAM_INTERNAL_H */
