/* SPDX-License-Identifier: MIT */
/*
 * cubert/device.h: device ids (CubeCL's DeviceId) and the injected device
 * lock a host hands to a device it creates (cubert/inline.h; the OS layer
 * makes one with cubert_os_lock_create, cubert/os.h). The device handle
 * that serializes access to a server, and the device registry, are the
 * server's: cubert/driver/device.h.
 */
#ifndef CUBERT_DEVICE_H
#define CUBERT_DEVICE_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* CubeCL's DeviceId: a driver type id and an index. */
typedef struct cubert_device_id_t {
  uint16_t type_id;
  uint32_t index_id;
} cubert_device_id_t;

/* An injected recursive lock (the OS layer provides a pthread one; a
 * single-threaded host may pass lock/unlock functions that do nothing). */
typedef struct cubert_lock_t {
  void *self;
  void (*lock)(void *self);
  void (*unlock)(void *self);
} cubert_lock_t;

CUBERT_EXTERN_C_END

#endif /* CUBERT_DEVICE_H */
