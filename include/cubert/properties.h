/* SPDX-License-Identifier: MIT */
/*
 * cubert/properties.h: device properties (CubeCL's DeviceProperties,
 * HardwareProperties, MemoryDeviceProperties). Plain data, read-only after a
 * server publishes them; safe to read from any thread.
 */
#ifndef CUBERT_PROPERTIES_H
#define CUBERT_PROPERTIES_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* Dim3: three u32 extents (cube counts, cube dims). */
typedef struct cubert_dim3_t {
  uint32_t x, y, z;
} cubert_dim3_t;

/* What the memory manager needs to know about device memory. */
typedef struct cubert_memory_device_properties_t {
  uint64_t max_page_size; /* largest single storage allocation */
  uint64_t alignment;     /* storage alignment (power of two) */
} cubert_memory_device_properties_t;

/* Hardware limits. */
typedef struct cubert_hardware_properties_t {
  uint32_t load_width;             /* bits per vectorized load: CUDA 128, CPU 512 */
  uint32_t plane_size_min;
  uint32_t plane_size_max;         /* warp/subgroup size */
  uint32_t max_bindings;
  uint64_t max_shared_memory_size; /* bytes per cube */
  cubert_dim3_t max_cube_count;
  uint32_t max_units_per_cube;
  cubert_dim3_t max_cube_dim;
  uint32_t num_streaming_multiprocessors; /* 0 if unknown */
  uint32_t num_cpu_cores;          /* 0 = None (GPU); CPU servers set it */
  uint64_t max_vector_size;        /* UINT64_MAX = unbounded (CubeCL usize::MAX) */
} cubert_hardware_properties_t;

typedef enum cubert_timing_method_e {
  CUBERT_TIMING_SYSTEM = 0, /* host clock around stream syncs */
  CUBERT_TIMING_DEVICE = 1, /* device events */
  CUBERT_TIMING_METHOD_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_timing_method_t;

/* Device features (CubeCL's feature set), a bit mask. */
#define CUBERT_FEATURE_DYNAMIC_CUBE_COUNT (1u << 0) /* CubeCount::Dynamic */
#define CUBERT_FEATURE_SHARED_MEMORY (1u << 1)      /* per-cube shared memory */
#define CUBERT_FEATURE_CHECKED_EXECUTION (1u << 2)  /* Checked / Validate modes */
#define CUBERT_FEATURE_UNALIGNED_IO (1u << 3)       /* unaligned vector loads (CPU) */
#define CUBERT_FEATURE_COLLECTIVES (1u << 4)        /* all_reduce / send / recv */
#define CUBERT_FEATURE_STAGING (1u << 5)            /* pinned staging buffers */
#define CUBERT_FEATURE_PLANE (1u << 6)              /* plane (warp) operations */

typedef struct cubert_device_properties_t {
  char name[64];
  uint64_t features; /* CUBERT_FEATURE_* */
  cubert_hardware_properties_t hardware;
  cubert_memory_device_properties_t memory;
  cubert_timing_method_t timing_method;
} cubert_device_properties_t;

CUBERT_EXTERN_C_END

#endif /* CUBERT_PROPERTIES_H */
