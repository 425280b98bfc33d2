/* SPDX-License-Identifier: MIT */
/*
 * core/memory/handle_binding.c: handles and bindings (cubert/handle.h, core/memory/handle_table.h), the
 * descriptors the user holds: a memory id from the handle table (handle.c)
 * plus device, stream, cursor, size and offsets. Each one holds one handle
 * or binding reference on its id.
 */
#include "base/internal.h"
#include "memory/handle_table.h"
#include "cubert/driver/arith.h"

uint64_t cubert_handle_size_in_used(const cubert_handle_t *handle) {
  if (!handle || handle->offset_start > handle->size ||
      handle->offset_end > handle->size - handle->offset_start)
    return 0;
  return handle->size - handle->offset_start - handle->offset_end;
}

cubert_status_t cubert__handle_create(cubert_handle_table_t *table, uint32_t device,
                                      uint64_t stream, uint64_t cursor, uint64_t size,
                                      cubert_handle_t *out_handle) {
  cubert_handle_t h;
  cubert_status_t st;
  if (!table || !out_handle) return CUBERT_STATUS_INVALID_ARGUMENT;
  cubert_memset(&h, 0, sizeof h);
  st = cubert__memory_id_acquire(table, &h.memory);
  if (st != CUBERT_STATUS_OK) return st;
  h.device = device;
  h.stream = stream;
  h.cursor = cursor;
  h.size = size;
  *out_handle = h;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__handle_clone(cubert_handle_table_t *table, const cubert_handle_t *handle,
                                     cubert_handle_t *out_handle) {
  cubert_handle_t h;
  cubert_status_t st;
  if (!table || !handle || !out_handle) return CUBERT_STATUS_INVALID_ARGUMENT;
  h = *handle;
  st = cubert__memory_id_retain_handle(table, h.memory);
  if (st != CUBERT_STATUS_OK) return st;
  *out_handle = h;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__handle_offset(cubert_handle_table_t *table, const cubert_handle_t *handle,
                                      uint64_t offset_start, uint64_t offset_end,
                                      cubert_handle_t *out_handle) {
  cubert_handle_t h;
  uint64_t start, end, trimmed;
  cubert_status_t st;
  if (!table || !handle || !out_handle) return CUBERT_STATUS_INVALID_ARGUMENT;
  h = *handle;
  if (cubert_u64_add(h.offset_start, offset_start, &start) != CUBERT_STATUS_OK ||
      cubert_u64_add(h.offset_end, offset_end, &end) != CUBERT_STATUS_OK ||
      cubert_u64_add(start, end, &trimmed) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_OVERFLOW;
  if (trimmed > h.size) return CUBERT_STATUS_OUT_OF_RANGE;
  st = cubert__memory_id_retain_handle(table, h.memory);
  if (st != CUBERT_STATUS_OK) return st;
  h.offset_start = start;
  h.offset_end = end;
  *out_handle = h;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__handle_binding(cubert_handle_table_t *table, const cubert_handle_t *handle,
                                       cubert_binding_t *out_binding) {
  cubert_handle_t h;
  cubert_status_t st;
  if (!table || !handle || !out_binding) return CUBERT_STATUS_INVALID_ARGUMENT;
  h = *handle;
  st = cubert__memory_id_retain_binding(table, h.memory);
  if (st != CUBERT_STATUS_OK) return st;
  *out_binding = h;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__binding_clone(cubert_handle_table_t *table, const cubert_binding_t *binding,
                                      cubert_binding_t *out_binding) {
  return cubert__handle_binding(table, binding, out_binding);
}

cubert_status_t cubert__handle_release(cubert_handle_table_t *table,
                                       const cubert_handle_t *handle) {
  if (!table || !handle) return CUBERT_STATUS_INVALID_ARGUMENT;
  return cubert__memory_id_release_handle(table, handle->memory);
}

cubert_status_t cubert__binding_release(cubert_handle_table_t *table,
                                        const cubert_binding_t *binding) {
  if (!table || !binding) return CUBERT_STATUS_INVALID_ARGUMENT;
  return cubert__memory_id_release_binding(table, binding->memory);
}

bool cubert__handle_can_mut(const cubert_handle_table_t *table, const cubert_handle_t *handle) {
  return table && handle && cubert__memory_id_can_mut(table, handle->memory);
}
