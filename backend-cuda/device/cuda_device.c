/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_device.c: device attributes and properties, open /
 * close with the primary context, entering a device on a thread, and the
 * sticky "device lost" state.
 */
#include "device/cuda_device.h"
#include "cubert/driver/error.h"

#include <stdio.h>
#include <string.h>

/* The context this thread made current through the layer, valid while the
 * global epoch is unchanged (a device open / close bumps it, so a context
 * handle reused after a close is never trusted). */
static __thread CUcontext t_current;
static __thread uint32_t t_current_epoch;
static uint32_t g_context_epoch = 1;

static void context_epoch_bump(void) {
  (void)__atomic_add_fetch(&g_context_epoch, 1u, __ATOMIC_ACQ_REL);
  t_current = NULL;
}

/* ---- attributes ------------------------------------------------------------- */

typedef struct attr_query_t {
  CUdevice_attribute attribute;
  int *out;
  int optional; /* informational only: a failed query reads as 0 */
} attr_query_t;

static uint32_t clamp_u32(int v) {
  return v < 0 ? 0u : (uint32_t)v;
}

cubert_status_t cubert__cuda_device_query(const cubert_cuda_loader_t *cu, uint32_t ordinal,
                                          cubert_cuda_device_info_t *out_info,
                                          cubert_error_t *out_error) {
  cubert_cuda_device_info_t info;
  cubert_device_properties_t *p = &info.properties;
  cubert_hardware_properties_t *hw = &p->hardware;
  int major = 0, minor = 0, warp = 0, threads = 0, bx = 0, by = 0, bz = 0, gx = 0, gy = 0, gz = 0;
  int optin = 0, shared = 0, sms = 0, clock = 0, mclock = 0, bus = 0, l2 = 0, regs = 0, pools = 0;
  attr_query_t q[19];
  size_t nq = 0, i;
  CUdevice dev = 0;
  size_t total = 0;
  CUresult r;
  if (!cu || !out_info)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_device_query: NULL argument");
  if (ordinal >= (uint32_t)cu->device_count) {
    uint64_t f[2];
    f[0] = ordinal;
    f[1] = (uint64_t)cu->device_count;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "CUDA device ordinal past the device count");
  }
  r = cu->cuDeviceGet(&dev, (int)ordinal);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_error_set(out_error, cu, r, CUBERT_CUDA_OP_GENERIC, "cuDeviceGet", 0);
#define Q(attr, var) (q[nq].attribute = (attr), q[nq].out = &(var), q[nq].optional = 0, nq++)
#define QO(attr, var) (q[nq].attribute = (attr), q[nq].out = &(var), q[nq].optional = 1, nq++)
  Q(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major);
  Q(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor);
  Q(CU_DEVICE_ATTRIBUTE_WARP_SIZE, warp);
  Q(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, threads);
  Q(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, bx);
  Q(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, by);
  Q(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, bz);
  Q(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, gx);
  Q(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, gy);
  Q(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, gz);
  Q(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, optin);
  Q(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, shared);
  Q(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms);
  QO(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, clock);
  QO(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, mclock);
  QO(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, bus);
  QO(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, l2);
  QO(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, regs);
  QO(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, pools);
#undef Q
#undef QO
  for (i = 0; i < nq; i++) {
    r = cu->cuDeviceGetAttribute(q[i].out, q[i].attribute, dev);
    if (r != CUDA_SUCCESS && q[i].optional) {
      *q[i].out = 0;
      continue;
    }
    if (r != CUDA_SUCCESS)
      return cubert__cuda_error_set(out_error, cu, r, CUBERT_CUDA_OP_GENERIC,
                                    "cuDeviceGetAttribute", 0);
  }
  r = cu->cuDeviceTotalMem(&total, dev);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_error_set(out_error, cu, r, CUBERT_CUDA_OP_GENERIC, "cuDeviceTotalMem", 0);
  memset(&info, 0, sizeof info);
  if (cu->cuDeviceGetName(p->name, (int)sizeof p->name, dev) != CUDA_SUCCESS || !p->name[0])
    cubert__cuda_format(p->name, sizeof p->name, "unknown CUDA device");
  p->name[sizeof p->name - 1] = '\0';
  if (cu->cuDeviceGetPCIBusId(info.pci_bus_id, (int)sizeof info.pci_bus_id, dev) != CUDA_SUCCESS)
    info.pci_bus_id[0] = '\0';
  info.pci_bus_id[sizeof info.pci_bus_id - 1] = '\0';
  info.ordinal = ordinal;
  info.compute_major = clamp_u32(major);
  info.compute_minor = clamp_u32(minor);
  info.total_memory = (uint64_t)total;
  info.clock_khz = clamp_u32(clock);
  info.memory_clock_khz = clamp_u32(mclock);
  info.memory_bus_width = clamp_u32(bus);
  info.l2_cache_bytes = clamp_u32(l2);
  info.async_alloc = pools > 0 ? 1u : 0u;
  info.max_shared_memory_per_block = clamp_u32(shared);
  info.registers_per_block = clamp_u32(regs);
  info.driver_version = cu->driver_version;
  /* Properties as the seed's CUDA server reports them (load width 128,
   * plane = warp, limits from attributes, max page = total / 4, alignment
   * 512); bindings are capped by the fixed argument block. */
  p->features = CUBERT_FEATURE_DYNAMIC_CUBE_COUNT | CUBERT_FEATURE_SHARED_MEMORY |
                CUBERT_FEATURE_CHECKED_EXECUTION | CUBERT_FEATURE_STAGING | CUBERT_FEATURE_PLANE;
  hw->load_width = 128;
  hw->plane_size_min = clamp_u32(warp);
  hw->plane_size_max = clamp_u32(warp);
  hw->max_bindings = CUBERT_KERNEL_MAX_BUFFERS;
  hw->max_shared_memory_size = (uint64_t)clamp_u32(optin > shared ? optin : shared);
  hw->max_cube_count.x = clamp_u32(gx);
  hw->max_cube_count.y = clamp_u32(gy);
  hw->max_cube_count.z = clamp_u32(gz);
  hw->max_units_per_cube = clamp_u32(threads);
  hw->max_cube_dim.x = clamp_u32(bx);
  hw->max_cube_dim.y = clamp_u32(by);
  hw->max_cube_dim.z = clamp_u32(bz);
  hw->num_streaming_multiprocessors = clamp_u32(sms);
  hw->num_cpu_cores = 0;
  hw->max_vector_size = UINT64_MAX;
  p->memory.max_page_size = (uint64_t)total / 4;
  p->memory.alignment = CUBERT_CUDA_MEMORY_ALIGNMENT;
  p->timing_method = CUBERT_TIMING_DEVICE;
  *out_info = info;
  return CUBERT_STATUS_OK;
}

/* ---- lost state ---------------------------------------------------------------- */

/* The process's first context-poisoning error. Seen on two H200s (driver
 * 580): after an illegal address on GPU 0, every call of every context of
 * the process fails with it (a context open before too, from any thread),
 * no new primary context can be made, and neither releasing nor resetting
 * clears it. So one such error loses every CUDA device of the process:
 * each reports the first cause (no driver call), a device opened later
 * fails at once. */
static pthread_mutex_t g_process_lost_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_process_lost; /* atomic: 1 once g_process_cause is written */
static cubert_error_t g_process_cause;

bool cubert__cuda_process_lost(cubert_error_t *out_cause) {
  if (!__atomic_load_n(&g_process_lost, __ATOMIC_ACQUIRE)) return false;
  if (out_cause) *out_cause = g_process_cause; /* immutable once set */
  return true;
}

static void process_lose(uint32_t ordinal, const cubert_error_t *cause) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  (void)pthread_mutex_lock(&g_process_lost_mutex);
  if (!__atomic_load_n(&g_process_lost, __ATOMIC_ACQUIRE)) {
    cubert__cuda_format(reason, sizeof reason,
                        "CUDA device %u lost first (one sticky error loses every CUDA device of "
                       "the process): %s",
                        (unsigned)ordinal, cause && cause->depth ? cause->reason : "unknown cause");
    (void)cubert_error_set_driver(&g_process_cause, CUBERT_ERROR_DEVICE_LOST,
                                  cause ? cause->driver_code : 0, reason);
    __atomic_store_n(&g_process_lost, 1u, __ATOMIC_RELEASE);
  }
  (void)pthread_mutex_unlock(&g_process_lost_mutex);
}

/* Another device's loss reached this one: lost with the first cause. */
static void reached_by_loss(cubert_cuda_device_t *device) {
  cubert_error_t cause;
  if (cubert__cuda_device_is_lost(device) || !cubert__cuda_process_lost(&cause)) return;
  cubert__cuda_device_mark_lost(device, &cause);
}

bool cubert__cuda_device_is_lost(const cubert_cuda_device_t *device) {
  return __atomic_load_n(&device->lost, __ATOMIC_ACQUIRE) != 0;
}

cubert_status_t cubert__cuda_device_lost_error(cubert_cuda_device_t *device,
                                               cubert_error_t *out_error) {
  if (!cubert__cuda_device_is_lost(device)) return CUBERT_STATUS_OK;
  if (out_error) *out_error = device->lost_error; /* immutable once `lost` is set */
  return CUBERT_STATUS_UNAVAILABLE;
}

void cubert__cuda_device_mark_lost(cubert_cuda_device_t *device, const cubert_error_t *cause) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  (void)pthread_mutex_lock(&device->lost_mutex);
  if (!cubert__cuda_device_is_lost(device)) {
    cubert__cuda_format(reason, sizeof reason, "CUDA device %u lost: %s", (unsigned)device->ordinal,
                   cause && cause->depth ? cause->reason : "unknown cause");
    (void)cubert_error_set_driver(&device->lost_error, CUBERT_ERROR_DEVICE_LOST,
                                  cause ? cause->driver_code : 0, reason);
    __atomic_store_n(&device->lost, 1u, __ATOMIC_RELEASE);
  }
  (void)pthread_mutex_unlock(&device->lost_mutex);
}

cubert_status_t cubert__cuda_device_fail(cubert_cuda_device_t *device, CUresult result,
                                         cubert_cuda_op_t op, const char *what, uint64_t size,
                                         cubert_error_t *out_error) {
  cubert_error_t e;
  cubert_status_t st = cubert__cuda_error_set(&e, device->cu, result, op, what, size);
  if (cubert__cuda_result_is_fatal(result)) {
    cubert_error_t first;
    if (cubert__cuda_process_lost(&first)) {
      cubert__cuda_device_mark_lost(device, &first); /* the loss came from another device */
    } else {
      process_lose(device->ordinal, &e);
      cubert__cuda_device_mark_lost(device, &e);
    }
    return cubert__cuda_device_lost_error(device, out_error);
  }
  if (out_error) *out_error = e;
  return st;
}

cubert_status_t cubert__cuda_device_check(cubert_cuda_device_t *device, cubert_error_t *out_error) {
  if (__atomic_load_n(&g_process_lost, __ATOMIC_ACQUIRE)) reached_by_loss(device);
  return cubert__cuda_device_lost_error(device, out_error);
}

cubert_status_t cubert__cuda_device_enter(cubert_cuda_device_t *device, cubert_error_t *out_error) {
  uint32_t epoch;
  CUresult r;
  if (__atomic_load_n(&g_process_lost, __ATOMIC_ACQUIRE)) reached_by_loss(device);
  if (cubert__cuda_device_is_lost(device)) return cubert__cuda_device_lost_error(device, out_error);
  epoch = __atomic_load_n(&g_context_epoch, __ATOMIC_ACQUIRE);
  if (t_current == device->context && t_current_epoch == epoch) return CUBERT_STATUS_OK;
  r = device->cu->cuCtxSetCurrent(device->context);
  if (r != CUDA_SUCCESS) {
    t_current = NULL;
    return cubert__cuda_device_fail(device, r, CUBERT_CUDA_OP_GENERIC, "cuCtxSetCurrent", 0,
                                    out_error);
  }
  t_current = device->context;
  t_current_epoch = epoch;
  return CUBERT_STATUS_OK;
}

void cubert__cuda_device_properties(const cubert_cuda_device_t *device,
                                    cubert_device_properties_t *out_properties) {
  *out_properties = device->info.properties;
}

/* ---- open / close ----------------------------------------------------------------- */

static void device_free(cubert_cuda_device_t *d) {
  cubert_allocator_free(d->allocator, d, sizeof *d, 0);
}

cubert_status_t cubert__cuda_device_open(const cubert_cuda_loader_t *cu, uint32_t ordinal,
                                         cubert_allocator_t allocator,
                                         cubert_cuda_device_t **out_device,
                                         cubert_error_t *out_error) {
  cubert_cuda_device_t *d = NULL;
  cubert_cuda_device_info_t info;
  void *scratch = NULL;
  CUresult r;
  cubert_status_t st;
  if (!cu || !out_device)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_device_open: NULL argument");
  {
    cubert_error_t first;
    if (cubert__cuda_process_lost(&first)) { /* no new context in a poisoned process */
      char reason[CUBERT_ERROR_REASON_SIZE];
      cubert__cuda_format(reason, sizeof reason, "CUDA device %u cannot be opened: %s",
                          (unsigned)ordinal, first.reason);
      (void)cubert_error_set_driver(out_error, CUBERT_ERROR_DEVICE_LOST, first.driver_code,
                                    reason);
      return CUBERT_STATUS_UNAVAILABLE;
    }
  }
  st = cubert__cuda_device_query(cu, ordinal, &info, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  st = cubert_allocator_malloc(allocator, sizeof *d, 0, (void **)&d, NULL);
  if (st != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot allocate the CUDA device");
  d->cu = cu;
  d->allocator = allocator;
  d->ordinal = ordinal;
  d->info = info;
  d->async_alloc = info.async_alloc != 0;
  if (pthread_mutex_init(&d->lost_mutex, NULL) != 0) {
    device_free(d);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot create a mutex");
  }
  if (cubert__cuda_event_pool_initialize(&d->events) != CUBERT_STATUS_OK) {
    (void)pthread_mutex_destroy(&d->lost_mutex);
    device_free(d);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot create a mutex");
  }
  if (cubert__cuda_staging_pool_initialize(&d->staging) != CUBERT_STATUS_OK) {
    (void)pthread_mutex_destroy(&d->events.mutex);
    (void)pthread_mutex_destroy(&d->lost_mutex);
    device_free(d);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot create a mutex");
  }
  if (pthread_mutex_init(&d->modules.mutex, NULL) != 0) {
    (void)pthread_mutex_destroy(&d->staging.mutex);
    (void)pthread_mutex_destroy(&d->events.mutex);
    (void)pthread_mutex_destroy(&d->lost_mutex);
    device_free(d);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot create a mutex");
  }
  /* a context current on this thread answers for the next calls: a poisoned
   * one (another device lost) would fail this device's retain */
  (void)cu->cuCtxSetCurrent(NULL);
  t_current = NULL;
  r = cu->cuDeviceGet(&d->device, (int)ordinal);
  if (r == CUDA_SUCCESS) r = cu->cuDevicePrimaryCtxRetain(&d->context, d->device);
  if (r != CUDA_SUCCESS) {
    st = cubert__cuda_error_set(out_error, cu, r, CUBERT_CUDA_OP_GENERIC,
                                "cuDevicePrimaryCtxRetain", 0);
    d->context = NULL;
    cubert__cuda_device_close(d);
    return st;
  }
  context_epoch_bump();
  st = cubert__cuda_device_enter(d, out_error);
  if (st == CUBERT_STATUS_OK) st = cubert__cuda_host_alloc(d, 64, &scratch, out_error);
  if (st != CUBERT_STATUS_OK) {
    cubert__cuda_device_close(d);
    return st;
  }
  d->count_scratch = (uint32_t *)scratch;
  *out_device = d;
  return CUBERT_STATUS_OK;
}

void cubert__cuda_device_close(cubert_cuda_device_t *device) {
  if (!device) return;
  /* The context current here, lost or not: teardown calls return at once on
   * a poisoned context but still free what they own. */
  if (device->context) {
    (void)device->cu->cuCtxSetCurrent(device->context);
    t_current = NULL;
  }
  cubert__cuda_word_retire_all(device);
  cubert__cuda_staging_pool_deinitialize(device);
  cubert__cuda_module_cache_deinitialize(device);
  cubert__cuda_event_pool_deinitialize(device);
  if (device->count_scratch) cubert__cuda_host_free(device, device->count_scratch);
  if (device->context) {
    (void)device->cu->cuCtxSetCurrent(NULL); /* nothing of a lost context stays current */
    (void)device->cu->cuDevicePrimaryCtxRelease(device->device);
    context_epoch_bump();
  }
  (void)pthread_mutex_destroy(&device->modules.mutex);
  (void)pthread_mutex_destroy(&device->staging.mutex);
  (void)pthread_mutex_destroy(&device->events.mutex);
  (void)pthread_mutex_destroy(&device->lost_mutex);
  device_free(device);
}
