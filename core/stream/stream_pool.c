/* SPDX-License-Identifier: MIT */
/* core/stream/stream_pool.c: lazily created stream slots, `id mod max_streams`
 * regular slots plus special slots after them (CubeCL's StreamPool). */
#include "stream/stream_internal.h"

cubert_status_t cubert__stream_pool_initialize(cubert_stream_pool_t *pool,
                                               cubert_allocator_t allocator, uint32_t max_streams,
                                               uint32_t num_special,
                                               cubert_stream_pool_create_fn_t create,
                                               cubert_stream_pool_destroy_fn_t destroy,
                                               void *context) {
  void *entries = NULL;
  uint32_t total;
  if (!pool) return CUBERT_STATUS_INVALID_ARGUMENT;
  cubert_memset(pool, 0, sizeof(*pool));
  if (!create || !destroy || max_streams == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
  total = max_streams + num_special;
  if (total < max_streams) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(
      cubert_allocator_malloc_array(allocator, total, sizeof(void *), 0, &entries, NULL));
  pool->allocator = allocator;
  pool->max_streams = max_streams;
  pool->num_special = num_special;
  pool->entries = (void **)entries;
  pool->create = create;
  pool->destroy = destroy;
  pool->context = context;
  return CUBERT_STATUS_OK;
}

void cubert__stream_pool_deinitialize(cubert_stream_pool_t *pool) {
  uint32_t i;
  if (!pool || !pool->entries) return;
  for (i = cubert__stream_pool_size(pool); i > 0; i--) cubert__stream_pool_remove(pool, i - 1);
  cubert_allocator_free(pool->allocator, pool->entries,
                        (size_t)cubert__stream_pool_size(pool) * sizeof(void *), 0);
  cubert_memset(pool, 0, sizeof(*pool));
}

uint32_t cubert__stream_pool_index(const cubert_stream_pool_t *pool, uint64_t stream_id) {
  if (stream_id < pool->max_streams) return (uint32_t)stream_id; /* common: no division */
  if (pool->max_streams == 0) return 0;
  return (uint32_t)(stream_id % (uint64_t)pool->max_streams);
}

uint32_t cubert__stream_pool_special_index(const cubert_stream_pool_t *pool, uint32_t k) {
  return pool->max_streams + k;
}

uint32_t cubert__stream_pool_size(const cubert_stream_pool_t *pool) {
  return pool->max_streams + pool->num_special;
}

void *cubert__stream_pool_get(const cubert_stream_pool_t *pool, uint32_t index) {
  if (!pool->entries || index >= cubert__stream_pool_size(pool)) return NULL;
  return pool->entries[index];
}

cubert_status_t cubert__stream_pool_get_or_create(cubert_stream_pool_t *pool, uint32_t index,
                                                  void **out_entry, bool *out_created,
                                                  cubert_error_t *out_error) {
  void *entry = NULL;
  if (out_created) *out_created = false;
  if (!pool->entries || index >= cubert__stream_pool_size(pool))
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0,
                            "stream slot index out of range");
  if (pool->entries[index]) {
    *out_entry = pool->entries[index];
    return CUBERT_STATUS_OK;
  }
  CUBERT_RETURN_IF_ERROR(pool->create(pool->context, index, &entry, out_error));
  pool->entries[index] = entry;
  *out_entry = entry;
  if (out_created) *out_created = true;
  return CUBERT_STATUS_OK;
}

void cubert__stream_pool_remove(cubert_stream_pool_t *pool, uint32_t index) {
  void *entry;
  if (!pool->entries || index >= cubert__stream_pool_size(pool)) return;
  entry = pool->entries[index];
  if (!entry) return;
  pool->entries[index] = NULL;
  pool->destroy(pool->context, index, entry);
}

uint32_t cubert__stream_pool_count(const cubert_stream_pool_t *pool) {
  uint32_t i, n = 0;
  if (!pool->entries) return 0;
  for (i = 0; i < pool->max_streams; i++)
    if (pool->entries[i]) n++;
  return n;
}
