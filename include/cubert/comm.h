/*
 * cubert/comm.h: value types of collective communication (spec 2.1):
 * CommunicationId (one id per unordered set of devices, naming the
 * communicator those devices share) and ReduceOperation.
 * Pure, thread-safe, non-blocking, no allocation.
 */
#ifndef CUBERT_COMM_H
#define CUBERT_COMM_H

#include "cubert/base.h"
#include "cubert/status.h"
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
 * Borrows `devices` for the call. Returns INVALID_ARGUMENT for a NULL out_id
 * or NULL devices with count > 0, OUT_OF_RANGE for count >
 * CUBERT_COMMUNICATION_MAX_DEVICES. On failure *out_id is untouched. */
CUBERT_API cubert_status_t cubert_communication_id(const cubert_device_id_t *devices, size_t count,
                                                   uint64_t *out_id);

/* CubeCL's ReduceOperation for all_reduce. Values are stable ABI. */
typedef enum cubert_reduce_operation_e {
  CUBERT_REDUCE_OPERATION_SUM = 0,
  CUBERT_REDUCE_OPERATION_MEAN = 1
} cubert_reduce_operation_t;

/* Whether `op` is one of the values above (for servers validating input
 * that crossed an ABI boundary). Pure. */
CUBERT_API bool cubert_reduce_operation_is_valid(cubert_reduce_operation_t op);

CUBERT_EXTERN_C_END

#endif /* CUBERT_COMM_H */
