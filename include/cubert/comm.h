/* SPDX-License-Identifier: MIT */
/*
 * cubert/comm.h: value types of collective communication:
 * CommunicationId (one id per unordered set of devices, naming the
 * communicator those devices share) and ReduceOperation.
 * Pure, thread-safe, non-blocking, no allocation.
 */
#ifndef CUBERT_COMM_H
#define CUBERT_COMM_H

#include "cubert/base.h"
#include "cubert/status.h"
#include "cubert/error.h"
#include "cubert/device.h"

CUBERT_EXTERN_C_BEGIN

/* Most devices one communication id may name (the ids are sorted in a stack
 * buffer of this size: no allocation). */
#define CUBERT_COMMUNICATION_MAX_DEVICES 64

/* CubeCL's CommunicationId::from(Vec<DeviceId>): sort a copy of the device ids
 * by (type_id, index_id) and hash the sorted list, so any permutation of the
 * same devices yields the same id. Duplicates are kept (the list [a, a, b]
 * is a different multiset from [a, b] and gets a different id, as in CubeCL).
 *
 * The hash is fixed and documented (CubeCL's fixed-key AHasher is not stable
 * across versions; this one is stable across runs, builds and machines):
 * FNV-1a 64 over the count as 8 little-endian bytes, then per device
 * type_id as 2 LE bytes and index_id as 4 LE bytes, finished with the
 * splitmix64 mixer. count == 0 is allowed (devices may then be NULL) and
 * yields the hash of the empty list.
 *
 * Borrows `devices` for the call. Returns INVALID_ARGUMENT (kind
 * INVALID_ARGUMENT) for a NULL out_id or NULL devices with count > 0,
 * OUT_OF_RANGE (kind OUT_OF_RANGE, fields count and the maximum) for count >
 * CUBERT_COMMUNICATION_MAX_DEVICES. On failure *out_id is untouched and
 * *out_error (may be NULL) holds the record. */
CUBERT_API cubert_status_t cubert_communication_id(const cubert_device_id_t *devices, size_t count,
                                                   uint64_t *out_id, cubert_error_t *out_error);

/* CubeCL's ReduceOperation for all_reduce. Values are stable ABI. */
typedef enum cubert_reduce_operation_e {
  CUBERT_REDUCE_OPERATION_SUM = 0,
  CUBERT_REDUCE_OPERATION_MEAN = 1,
  CUBERT_REDUCE_OPERATION_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_reduce_operation_t;

/* Whether `op` is one of the values above (for servers validating input
 * that crossed an ABI boundary). Pure. */
CUBERT_API bool cubert_reduce_operation_is_valid(cubert_reduce_operation_t op);


/* Element type of a collective (CubeCL's ElemType as far as collectives
 * accept it). Values are stable ABI. send/recv move bytes of any of
 * these; all_reduce computes on F32, F64, I8, I32, I64, U8, U32, U64 and
 * returns UNSUPPORTED for the 16- and 8-bit float types. */
typedef enum cubert_comm_dtype_e {
  CUBERT_COMM_DTYPE_F32 = 0,
  CUBERT_COMM_DTYPE_F64 = 1,
  CUBERT_COMM_DTYPE_I32 = 2,
  CUBERT_COMM_DTYPE_I64 = 3,
  CUBERT_COMM_DTYPE_U32 = 4,
  CUBERT_COMM_DTYPE_U64 = 5,
  CUBERT_COMM_DTYPE_I8 = 6,
  CUBERT_COMM_DTYPE_U8 = 7,
  CUBERT_COMM_DTYPE_F16 = 8,
  CUBERT_COMM_DTYPE_BF16 = 9,
  CUBERT_COMM_DTYPE_E4M3 = 10,
  CUBERT_COMM_DTYPE_E5M2 = 11,
  CUBERT_COMM_DTYPE_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_comm_dtype_t;

/* Width in bytes of one element of `dtype`; 0 for a value not listed above
 * (an unknown dtype). Pure. */
CUBERT_API uint32_t cubert_comm_dtype_size(uint32_t dtype);
/* Whether all_reduce can compute on `dtype` (see above). Pure. */
CUBERT_API bool cubert_comm_dtype_reducible(uint32_t dtype);

/* Integer Mean (all_reduce with CUBERT_REDUCE_OPERATION_MEAN on an integer
 * dtype) is defined as: the Sum computed in the type's wrapping arithmetic
 * (modulo 2^bits, two's complement for signed types), then divided by the
 * number of participants with C's integer division (truncation toward zero).
 * It is exact only while the sum fits the type. Float Mean is the Sum (added
 * in rank order, rank = position in the sorted device list) divided by the
 * number of participants in the type's precision. */

CUBERT_EXTERN_C_END

#endif /* CUBERT_COMM_H */
