/*
 * cubert/cpu.h: the CPU server (hosted layer). Streams are simulated by one
 * worker thread per stream slot; kernels are C functions (written in the
 * kernel dialect of cubert/kernel.h) run over the cube grid by a persistent
 * worker pool.
 */
#ifndef CUBERT_CPU_H
#define CUBERT_CPU_H

#include "cubert/client.h"

CUBERT_EXTERN_C_BEGIN

/* Type id of CPU devices in the device registry. */
#define CUBERT_CPU_DEVICE_TYPE 1

typedef struct cubert_cpu_options_t {
  uint32_t device_index;  /* registered as {CUBERT_CPU_DEVICE_TYPE, device_index} */
  uint32_t max_streams;   /* stream slots (stream id mod max_streams); 0: 16 */
  uint32_t workers;       /* kernel worker threads; 0: online CPUs - 1 */
  uint64_t memory_size;   /* max_page_size advertised; 0: 1 GiB */
  uint32_t max_handles;   /* handle table capacity; 0: 1 << 20 */
  cubert_bounds_check_mode_t bounds_check;
  /* Kernel profiling of the new device (cubert_client_set_profiling) with
   * the stderr sink. cubert_cpu_options_initialize takes it from the
   * CUBERT_PROFILE_LEVEL environment variable ("off", "execution-only",
   * "basic", "medium", "full"; anything else: off). */
  cubert_profile_level_t profile_level;
  uint32_t collective_timeout_ms; /* how long a collective (all_reduce, send, recv) waits
                                     for its peers before it fails with DEADLINE_EXCEEDED
                                     and aborts its communicator; 0: 60000. Collectives
                                     run in order on the device's communication stream
                                     (one worker); a call blocks while 512 of them are
                                     pending there. A device released with collectives
                                     pending lets them wait 1 s more for their peers,
                                     then cancels them (the communicator is aborted). */
} cubert_cpu_options_t;

/* Defaults for every field (zeros mean "default" too). Reads the
 * CUBERT_PROFILE_LEVEL environment variable (getenv: not thread-safe against
 * setenv). */
CUBERT_API void cubert_cpu_options_initialize(cubert_cpu_options_t *options);

/* Create a CPU device and its first client (registered in the device
 * registry; cubert_client_load finds it). Streams default to per-thread ids.
 * ALREADY_EXISTS when the device index is taken; RESOURCE_EXHAUSTED; INTERNAL
 * when a thread cannot be started; INVALID_ARGUMENT for an invalid
 * profile_level (nothing is left registered). Thread-safe; blocks while starting. */
CUBERT_API cubert_status_t cubert_cpu_client_create(cubert_allocator_t allocator,
                                                    const cubert_cpu_options_t *options,
                                                    cubert_client_t **out_client,
                                                    cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CPU_H */
