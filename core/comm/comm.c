/* SPDX-License-Identifier: MIT */
/*
 * core/comm/comm.c: CommunicationId and ReduceOperation (docs/cubecl-mapping.md,
 * "Value types").
 */
#include "base/internal.h"
#include "cubert/comm.h"

#define COMM_FNV_OFFSET 0xcbf29ce484222325ull
#define COMM_FNV_PRIME 0x100000001b3ull

static int comm_device_compare(const cubert_device_id_t *a, const cubert_device_id_t *b) {
  if (a->type_id != b->type_id) return a->type_id < b->type_id ? -1 : 1;
  if (a->index_id != b->index_id) return a->index_id < b->index_id ? -1 : 1;
  return 0;
}

/* FNV-1a over the `nbytes` low bytes of v, least significant first. */
static uint64_t comm_fnv_le(uint64_t h, uint64_t v, unsigned nbytes) {
  unsigned i;
  for (i = 0; i < nbytes; i++) {
    h ^= (v >> (8u * i)) & 0xffu;
    h *= COMM_FNV_PRIME;
  }
  return h;
}

static uint64_t comm_splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

cubert_status_t cubert_communication_id(const cubert_device_id_t *devices, size_t count,
                                        uint64_t *out_id, cubert_error_t *out_error) {
  cubert_device_id_t sorted[CUBERT_COMMUNICATION_MAX_DEVICES];
  size_t i, j;
  uint64_t h = COMM_FNV_OFFSET;
  if (!out_id) return cubert__invalid_argument(out_error, "cubert_communication_id: out_id is NULL");
  if (!devices && count > 0)
    return cubert__invalid_argument(out_error,
                                    "cubert_communication_id: devices is NULL, count is not 0");
  if (count > CUBERT_COMMUNICATION_MAX_DEVICES) {
    uint64_t fields[2];
    fields[0] = (uint64_t)count;
    fields[1] = CUBERT_COMMUNICATION_MAX_DEVICES;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, fields, 2,
                            "cubert_communication_id: more devices than "
                            "CUBERT_COMMUNICATION_MAX_DEVICES");
  }
  /* Insertion sort of a copy: at most 64 entries. */
  for (i = 0; i < count; i++) {
    cubert_device_id_t d = devices[i];
    j = i;
    while (j > 0 && comm_device_compare(&sorted[j - 1], &d) > 0) {
      sorted[j] = sorted[j - 1];
      j--;
    }
    sorted[j] = d;
  }
  h = comm_fnv_le(h, (uint64_t)count, 8);
  for (i = 0; i < count; i++) {
    h = comm_fnv_le(h, sorted[i].type_id, 2);
    h = comm_fnv_le(h, sorted[i].index_id, 4);
  }
  *out_id = comm_splitmix64_mix(h);
  return CUBERT_STATUS_OK;
}

bool cubert_reduce_operation_is_valid(cubert_reduce_operation_t op) {
  return op == CUBERT_REDUCE_OPERATION_SUM || op == CUBERT_REDUCE_OPERATION_MEAN;
}

uint32_t cubert_comm_dtype_size(uint32_t dtype) {
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F64:
    case CUBERT_COMM_DTYPE_I64:
    case CUBERT_COMM_DTYPE_U64:
      return 8;
    case CUBERT_COMM_DTYPE_F32:
    case CUBERT_COMM_DTYPE_I32:
    case CUBERT_COMM_DTYPE_U32:
      return 4;
    case CUBERT_COMM_DTYPE_F16:
    case CUBERT_COMM_DTYPE_BF16:
      return 2;
    case CUBERT_COMM_DTYPE_I8:
    case CUBERT_COMM_DTYPE_U8:
    case CUBERT_COMM_DTYPE_E4M3:
    case CUBERT_COMM_DTYPE_E5M2:
      return 1;
    default:
      return 0;
  }
}

bool cubert_comm_dtype_reducible(uint32_t dtype) {
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F32:
    case CUBERT_COMM_DTYPE_F64:
    case CUBERT_COMM_DTYPE_I32:
    case CUBERT_COMM_DTYPE_I64:
    case CUBERT_COMM_DTYPE_U32:
    case CUBERT_COMM_DTYPE_U64:
    case CUBERT_COMM_DTYPE_I8:
    case CUBERT_COMM_DTYPE_U8:
      return true;
    default:
      return false;
  }
}
