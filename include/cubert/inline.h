/* SPDX-License-Identifier: MIT */
/*
 * cubert/inline.h: the inline device (backend-cpu/inline, freestanding): the
 * inline driver under the server. Every operation runs to completion on
 * the calling thread before the call returns (IREE's local-sync idea):
 * copies are memcpy, a launch runs its cubes one after another, streams are
 * trivial and events are always complete. No thread, no OS: memory comes
 * from the injected allocator, and the host supplies the device lock (may
 * do nothing on a single-threaded host) and, optionally, a clock.
 *
 * Kernels are the CPU entry points of the kernel dialect (cubert/kernel.h),
 * as on the CPU device. No collectives (UNSUPPORTED). The server's race checker
 * works as on every device (cubert/driver/server.h: cubert_client_race_counters).
 */
#ifndef CUBERT_INLINE_H
#define CUBERT_INLINE_H

#include "cubert/client.h"
#include "cubert/race.h"

CUBERT_EXTERN_C_BEGIN

/* Type id of inline devices in the device registry. */
#define CUBERT_INLINE_DEVICE_TYPE 3

typedef struct cubert_inline_options_t {
  /* What every device has (cubert/client.h): registered as
   * {CUBERT_INLINE_DEVICE_TYPE, device.index}; memory_size 0: 1 GiB;
   * device.faults: the inline driver injects every fault. */
  cubert_device_options_t device;
  /* The device lock (recursive; borrowed: it must outlive the device).
   * NULL functions: no lock (a single-threaded host). */
  cubert_lock_t lock;
  /* The profiling clock; now_ns NULL: profiling returns UNSUPPORTED. */
  cubert_profile_clock_t clock;
  /* The calling thread's stream id; NULL: every call uses stream 0. */
  cubert_stream_source_fn_t stream_source;
  void *stream_source_self;
  /* Called once when the device is gone (the last client released), e.g. to
   * free the lock; NULL: nothing. Not called when the creation fails. */
  void (*release)(void *self);
  void *release_self;
  /* The memory pools of each stream slot (cubert/memory.h). Zeroed: CubeCL's
   * SubSlices preset, whose pages are sized for large devices (below 32 MiB
   * of memory_size: one exclusive pool whose pages start at memory_size / 2).
   * A small target wants a CUSTOM list of one direct pool,
   * cubert_memory_pool_direct(0): every buffer is one allocation of its own
   * size from the allocator, given back when released (docs/embedding.md).
   * A CUSTOM list is copied (borrowed for the call only). */
  cubert_memory_configuration_t memory_config;
  /* PLANE_DIM of the kernels (cubert/kernel_plane.h): a power of two from 1
   * to 64; 0: 32. */
  uint32_t plane_dim;
} cubert_inline_options_t;

/* Zeros (the defaults above): no lock, no clock, stream 0. NULL: no-op. */
CUBERT_API void cubert_inline_options_initialize(cubert_inline_options_t *options);

/* Create an inline device and its first client (registered in the device
 * registry; cubert_client_load finds it). options NULL: the defaults.
 * INVALID_ARGUMENT (NULL out_client, max_streams above 255, half a lock, a
 * plane_dim that is not a power of two from 1 to 64);
 * a bad memory_config: the errors of cubert_memory_configuration_pools;
 * ALREADY_EXISTS (kind SERVICE_CREATION) when the index is taken;
 * RESOURCE_EXHAUSTED. Nothing is left behind on failure. Thread-safe when
 * the lock is; never blocks the OS. */
CUBERT_API cubert_status_t cubert_inline_client_create(cubert_allocator_t allocator,
                                                       const cubert_inline_options_t *options,
                                                       cubert_client_t **out_client,
                                                       cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_INLINE_H */
