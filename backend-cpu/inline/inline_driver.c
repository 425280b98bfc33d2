/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/inline/inline_driver.c: the inline driver (cubert/inline.h):
 * every primitive finishes its work before it returns, on the calling
 * thread (IREE's local-sync idea). Streams only hold their errors, events
 * are always complete, copies are memcpy, a launch runs its cubes one after
 * another with the CPU kernel runner (backend-cpu/kernel). Device memory is
 * memory from the allocator, so addresses are host pointers.
 *
 * Freestanding: the core's rules (no libc, no OS, no global mutable state),
 * checked by `make check-freestanding`. The smallest complete driver: the
 * example of docs/writing-a-server.md.
 */
#include "cubert/inline.h"
#include "cubert/backend/kit.h"
#include "kernel/cpu_kernel.h"

#define INLINE_ALIGN 64

/* A stream: what failed while its work ran, until stream_errors drains it. */
typedef struct inline_stream_t {
  cubert_error_t errors;
} inline_stream_t;

typedef struct inline_device_t {
  cubert_allocator_t allocator;
  cubert_device_properties_t properties;
  cpu_kernel_context_t context; /* cubes run one after another: one context */
  unsigned char event;          /* every event: complete when recorded */
} inline_device_t;

static inline_device_t *device_of(void *self) { return (inline_device_t *)self; }
static inline_stream_t *stream_of(cubert_driver_stream_t *s) { return (inline_stream_t *)(void *)s; }

/* ---- the device ---- */

static void inline_destroy(void *self) {
  inline_device_t *d = device_of(self);
  cpu_kernel_context_free(&d->context, d->allocator);
  cubert_allocator_free(d->allocator, d, sizeof(*d), 0);
}

static void inline_properties(void *self, cubert_device_properties_t *out) {
  *out = device_of(self)->properties;
}

/* ---- memory: the allocator; a free is immediate (nothing is pending) ---- */

static cubert_status_t inline_memory_alloc(void *self, uint64_t size,
                                           cubert_driver_stream_t *stream,
                                           cubert_device_ptr_t *out_address,
                                           cubert_error_t *out_error) {
  inline_device_t *d = device_of(self);
  void *p = 0;
  (void)stream;
  if (size > (uint64_t)SIZE_MAX)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, 0);
  if (cubert_allocator_malloc(d->allocator, (size_t)size, INLINE_ALIGN, &p,
                              NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1,
                            "memory allocation failed");
  *out_address = (cubert_device_ptr_t)(uintptr_t)p;
  return CUBERT_STATUS_OK;
}

static void inline_memory_free(void *self, cubert_device_ptr_t address, uint64_t size,
                               cubert_driver_stream_t *stream) {
  (void)stream;
  cubert_allocator_free(device_of(self)->allocator, (void *)(uintptr_t)address, (size_t)size,
                        INLINE_ALIGN);
}

/* ---- work: done before the call returns ---- */

static cubert_status_t inline_copy(void *self, const cubert_driver_copy_t *c,
                                   cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  const unsigned char *src;
  unsigned char *dst;
  uint64_t r;
  (void)self;
  (void)stream;
  if (c->kind > CUBERT_COPY_DEVICE_TO_DEVICE)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0, "unknown copy kind");
  src = c->kind == CUBERT_COPY_HOST_TO_DEVICE ? (const unsigned char *)c->src_host
                                              : (const unsigned char *)(uintptr_t)c->src_device;
  dst = c->kind == CUBERT_COPY_DEVICE_TO_HOST ? (unsigned char *)c->dst_host
                                              : (unsigned char *)(uintptr_t)c->dst_device;
  for (r = 0; r < c->height && c->width; r++)
    __builtin_memcpy(dst + r * c->dst_pitch, src + r * c->src_pitch, (size_t)c->width);
  return CUBERT_STATUS_OK;
}

/* Run a recorded launch; a failure goes to the stream's errors. */
static cubert_status_t run_launch(inline_device_t *d, const cpu_kernel_launch_t *l,
                                  cubert_error_t *error) {
  cubert_kernel_args_t args;
  cubert_dim3_t count;
  cpu_kernel_grid_t grid;
  CUBERT_RETURN_IF_ERROR(cpu_kernel_launch_count(l, &d->properties.hardware, &count, error));
  cpu_kernel_launch_args(l, &args);
  if (cpu_kernel_grid(l->kernel, count, l->kernel->cube_dim, &args,
                      (cubert_execution_mode_t)l->execution, &grid, error) != CUBERT_STATUS_OK)
    return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
  if (grid.total == 0) return CUBERT_STATUS_OK;
  if (cpu_kernel_context_reserve(&d->context, d->allocator, grid.shared_bytes) != CUBERT_STATUS_OK) {
    cubert_error_set(error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0,
                     "cannot allocate dynamic shared memory");
    return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
  }
  cpu_kernel_report_reset(&d->context.report);
  cpu_kernel_run_all(&d->context, l->kernel, &args, &grid);
  return cpu_kernel_launch_report(l, &d->context.report, error);
}

static cubert_status_t inline_launch(void *self, const cubert_driver_launch_t *launch,
                                     cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cpu_kernel_launch_t l;
  cubert_error_t error;
  CUBERT_RETURN_IF_ERROR(cpu_kernel_launch_check(launch, out_error));
  cpu_kernel_launch_record(launch, &l);
  cubert_error_clear(&error);
  if (run_launch(device_of(self), &l, &error) != CUBERT_STATUS_OK)
    (void)cubert_error_aggregate(&stream_of(stream)->errors, &error);
  return CUBERT_STATUS_OK;
}

/* ---- streams ---- */

static cubert_status_t inline_stream_create(void *self, uint32_t index,
                                            cubert_driver_stream_t **out_stream,
                                            cubert_error_t *out_error) {
  inline_stream_t *s = 0;
  (void)index;
  if (cubert_allocator_malloc(device_of(self)->allocator, sizeof(*s), 0, (void **)&s, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0, "stream");
  *out_stream = (cubert_driver_stream_t *)(void *)s;
  return CUBERT_STATUS_OK;
}

static void inline_stream_destroy(void *self, cubert_driver_stream_t *stream) {
  cubert_allocator_free(device_of(self)->allocator, stream_of(stream), sizeof(inline_stream_t), 0);
}

static cubert_status_t inline_stream_synchronize(void *self, cubert_driver_stream_t *stream,
                                                 cubert_error_t *out_error) {
  (void)self;
  (void)stream;
  (void)out_error;
  return CUBERT_STATUS_OK; /* nothing is ever pending */
}

static cubert_status_t inline_stream_errors(void *self, cubert_driver_stream_t *stream,
                                            cubert_error_t *out_error) {
  inline_stream_t *s = stream_of(stream);
  (void)self;
  if (s->errors.depth == 0) return CUBERT_STATUS_OK;
  if (out_error) *out_error = s->errors;
  cubert_error_clear(&s->errors);
  return CUBERT_STATUS_SERVER_UNHEALTHY;
}

/* ---- events: all complete ---- */

static cubert_status_t inline_event_record(void *self, cubert_driver_stream_t *stream,
                                           cubert_driver_event_t **out_event,
                                           cubert_error_t *out_error) {
  (void)stream;
  (void)out_error;
  *out_event = (cubert_driver_event_t *)(void *)&device_of(self)->event;
  return CUBERT_STATUS_OK;
}

static cubert_status_t inline_event_wait(void *self, cubert_driver_stream_t *stream,
                                         cubert_driver_event_t *event, cubert_error_t *out_error) {
  (void)self;
  (void)stream;
  (void)event;
  (void)out_error;
  return CUBERT_STATUS_OK;
}

static cubert_status_t inline_event_query(void *self, cubert_driver_event_t *event) {
  (void)self;
  (void)event;
  return CUBERT_STATUS_OK;
}

static cubert_status_t inline_event_synchronize(void *self, cubert_driver_event_t *event,
                                                uint64_t timeout_ns, cubert_error_t *out_error) {
  (void)self;
  (void)event;
  (void)timeout_ns;
  (void)out_error;
  return CUBERT_STATUS_OK;
}

static void inline_event_destroy(void *self, cubert_driver_event_t *event) {
  (void)self;
  (void)event;
}

static const cubert_driver_t g_inline_driver = {
    .name = "inline",
    .abi_version = CUBERT_DRIVER_ABI_VERSION,
    .flags = CUBERT_DRIVER_HOST_ADDRESSABLE | CUBERT_DRIVER_SYNCHRONOUS,
    .destroy = inline_destroy,
    .properties = inline_properties,
    .memory_alloc = inline_memory_alloc,
    .memory_free = inline_memory_free,
    .copy = inline_copy,
    .launch = inline_launch,
    .stream_create = inline_stream_create,
    .stream_destroy = inline_stream_destroy,
    .stream_synchronize = inline_stream_synchronize,
    .stream_errors = inline_stream_errors,
    .event_record = inline_event_record,
    .event_wait = inline_event_wait,
    .event_query = inline_event_query,
    .event_synchronize = inline_event_synchronize,
    .event_destroy = inline_event_destroy,
    /* no pinned memory (the kit serves staging from its allocator), no collectives */
};

/* ---- creating a device ---- */

static void no_lock(void *self) { (void)self; }

void cubert_inline_options_initialize(cubert_inline_options_t *options) {
  if (options) __builtin_memset(options, 0, sizeof(*options));
}

static void fill_properties(const cubert_inline_options_t *o, cubert_device_properties_t *p) {
  static const char name[] = "cubert inline";
  __builtin_memset(p, 0, sizeof(*p));
  __builtin_memcpy(p->name, name, sizeof name);
  p->features = CUBERT_FEATURE_DYNAMIC_CUBE_COUNT | CUBERT_FEATURE_SHARED_MEMORY |
                CUBERT_FEATURE_CHECKED_EXECUTION | CUBERT_FEATURE_UNALIGNED_IO |
                CUBERT_FEATURE_STAGING;
  p->hardware.load_width = 512;
  p->hardware.plane_size_min = 1;
  p->hardware.plane_size_max = 1;
  p->hardware.max_bindings = CUBERT_KERNEL_MAX_BUFFERS + 1;
  p->hardware.max_shared_memory_size = 64 * 1024;
  p->hardware.max_cube_count.x = 0x7FFFFFFFu; /* CUDA's limits: portable tests */
  p->hardware.max_cube_count.y = 65535;
  p->hardware.max_cube_count.z = 65535;
  p->hardware.max_units_per_cube = 1024;
  p->hardware.max_cube_dim.x = 1024;
  p->hardware.max_cube_dim.y = 1024;
  p->hardware.max_cube_dim.z = 64;
  p->hardware.num_cpu_cores = 1;
  p->hardware.max_vector_size = UINT64_MAX;
  p->memory.max_page_size = o->memory_size ? o->memory_size : ((uint64_t)1 << 30);
  p->memory.alignment = 8;
  p->timing_method = CUBERT_TIMING_SYSTEM;
}

cubert_status_t cubert_inline_client_create(cubert_allocator_t allocator,
                                            const cubert_inline_options_t *options,
                                            cubert_client_t **out_client,
                                            cubert_error_t *out_error) {
  cubert_inline_options_t o;
  cubert_kit_options_t k;
  inline_device_t *d = 0;
  cubert_status_t status;
  cubert_inline_options_initialize(&o);
  if (options) o = *options;
  if (!out_client || (!o.lock.lock) != (!o.lock.unlock))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0,
                            "inline: NULL out_client or half a lock");
  if (cubert_allocator_malloc(allocator, sizeof(*d), 0, (void **)&d, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0, "inline device");
  d->allocator = allocator;
  fill_properties(&o, &d->properties);
  cubert_kit_options_initialize(&k);
  k.device.type_id = CUBERT_INLINE_DEVICE_TYPE;
  k.device.index_id = o.device_index;
  if (o.max_streams) k.max_streams = o.max_streams;
  k.max_handles = o.max_handles;
  k.gc_capacity = 4; /* events are complete when recorded: entries go at the next poll */
  k.layout_policy.kind = CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  k.layout_policy.mem_alignment = 8;
  k.bounds_check = o.bounds_check;
  k.race_check = o.race_check;
  k.race_sink = o.race_sink;
  k.lock = o.lock;
  if (!k.lock.lock) {
    k.lock.lock = no_lock;
    k.lock.unlock = no_lock;
  }
  k.clock = o.clock;
  k.stream_source = o.stream_source;
  k.stream_source_self = o.stream_source_self;
  k.host_release = o.release;
  k.host_release_self = o.release_self;
  k.memory_config = o.memory_config;
  status = cubert_kit_client_create(allocator, &k, &g_inline_driver, d, out_client, out_error);
  if (status != CUBERT_STATUS_OK) inline_destroy(d);
  return status;
}
