/* SPDX-License-Identifier: MIT */
/*
 * cubert/handle.h: handles and bindings as values (CubeCL's Handle and
 * Binding). A user gets, clones, offsets and releases them through the client
 * (cubert_client_handle_* in cubert/client.h); the handle table behind them
 * (memory ids, reference counts, locations) is the server's:
 * core/memory/handle_table.h.
 *
 * A handle is a value: a reference to (part of) one base allocation, plus the
 * device and stream it was created on and the stream cursor at creation.
 * Copying the struct does not retain; use cubert_client_handle_clone. Every
 * handle obtained from a create/clone/offset call must be released exactly
 * once (cubert_client_handle_release). A binding has the same shape but holds
 * only a descriptor reference (the server's; users pass handles).
 *
 * A memory id is {index, generation}: an id whose generation no longer
 * matches its slot (stale, forged, double-released) is refused with
 * CUBERT_STATUS_INVALID_HANDLE and never touches the slot's new occupant.
 *
 * A handle names the device that issued it: `device` (the device id's
 * index) and `device_key` (its type id in bits 16..31 and the device's
 * instance number in bits 0..15, drawn from the device registry when the
 * device is created; never 0 for a handle a device issued). Every client
 * call refuses a handle of any other device, of another type with the same
 * index, of the same type with another index, or of an earlier device
 * released and created again under the same id, with
 * CUBERT_STATUS_DEVICE_MISMATCH (kind DEVICE_MISMATCH; fields: the handle's
 * and the device's key) before it touches anything. Instance numbers wrap
 * after 65,536 device creations in one process. sizeof(cubert_handle_t) is
 * 56 bytes (it was 56 bytes before device_key replaced a reserved word).
 */
#ifndef CUBERT_HANDLE_H
#define CUBERT_HANDLE_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* Identifies a managed memory slot. {0, 0} is the null id (never issued). */
typedef struct cubert_memory_id_t {
  uint32_t index;      /* slot index + 1 (0 = null) with a table tag in the top 8 bits */
  uint32_t generation; /* odd while the id is alive */
} cubert_memory_id_t;

typedef struct cubert_handle_t {
  cubert_memory_id_t memory;
  uint32_t device;       /* device id index */
  uint32_t device_key;   /* device type id << 16 | instance number (see above) */
  uint64_t stream;       /* stream id value */
  uint64_t cursor;       /* position on that stream when created */
  uint64_t offset_start; /* bytes skipped at the start of the base allocation */
  uint64_t offset_end;   /* bytes skipped at the end */
  uint64_t size;         /* size of the base allocation in bytes */
} cubert_handle_t;

typedef cubert_handle_t cubert_binding_t;

/* Bytes this (sub-)handle covers: size - offset_start - offset_end (0 for
 * NULL or offsets beyond size). Pure. */
CUBERT_API uint64_t cubert_handle_size_in_used(const cubert_handle_t *handle);

CUBERT_EXTERN_C_END

#endif /* CUBERT_HANDLE_H */
