/* SPDX-License-Identifier: MIT */
/*
 * core/device/device_registry.h: the process-wide device registry (not installed): one
 * entry per open device, so that a second create of the same device id is refused and
 * cubert_client_load finds the client. Fixed size, lock-free (atomics only): the one piece of
 * global mutable state in core/ (check-freestanding allows it by name).
 */
#ifndef CUBERT_CORE_DEVICE_REGISTRY_H
#define CUBERT_CORE_DEVICE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "cubert/config.h"
#include "cubert/device.h"
#include "cubert/status.h"

/* ---- device registry (process-global, fixed size, lock-free) ------------- */

/* Entries of the registry: CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY (cubert/config.h; 64
 * unless the library is built with another value: a program must be compiled with the
 * library's value). */
#define CUBERT_DEVICE_REGISTRY_CAPACITY CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY

/* Register `client` (opaque pointer) for `device`. ALREADY_EXISTS if one is
 * registered; OUT_OF_RANGE when the registry is full. Thread-safe. */
cubert_status_t cubert__device_registry_insert(cubert_device_id_t device, void *client);
/* The registered pointer, or NOT_FOUND. Thread-safe. */
cubert_status_t cubert__device_registry_lookup(cubert_device_id_t device, void **out_client);
/* Remove the entry if it is `client`. NOT_FOUND otherwise. Thread-safe. */
cubert_status_t cubert__device_registry_remove(cubert_device_id_t device, void *client);
/* A device instance number for a device being created: 1..65535, a new one
 * at each call (wrapping after 65,535 calls). Handles carry it
 * (cubert_handle_t.device_key) so that a device refuses handles of an
 * earlier device created under the same id. Thread-safe, lock-free. */
uint32_t cubert__device_registry_next_instance(void);
/* Number of registered devices with this type id (all types when type_id is
 * UINT16_MAX), and their ids in registration order (up to capacity). */
size_t cubert__device_registry_enumerate(uint16_t type_id, cubert_device_id_t *out_ids,
                                                   size_t capacity);

#endif /* CUBERT_CORE_DEVICE_REGISTRY_H */
