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
 * example of docs/writing-a-driver.md.
 *
 * Failures carried across streams (docs/errors.md, "Errors from a running
 * stream"): a regular stream (not the server's GC or communication stream)
 * logs what failed on it (cpu_fault_log_t, backend-cpu/kernel); an event
 * recorded on a stream that ever failed is an object naming the point
 * (stream, position), and a wait on it queues on the waiting stream each
 * failure logged there up to that point that it has not inherited yet.
 * Every other event is the device's one always-complete byte.
 */
#include "cubert/inline.h"
#include "server/server_faults.h"
#include "cubert/driver/server.h"
#include "kernel/cpu_kernel.h"

#define INLINE_ALIGN 64
/* Failures a stream keeps for the streams that wait on it. */
#define INLINE_FAULT_LOG 4

/* A stream: what failed while its work ran, until stream_errors drains it,
 * and the log of failures for its waiters; `marks` (stream_count entries)
 * follows it in the same block. */
typedef struct inline_stream_t {
  cubert_error_t errors;
  uint32_t index;
  uint32_t regular; /* carries failures across waits */
  uint64_t ops;     /* copies and launches so far: the stream's position */
  cpu_fault_log_t faults;
  cpu_fault_entry_t entries[INLINE_FAULT_LOG];
  uint64_t *marks;
} inline_stream_t;

/* An event on a stream that failed: the point (stream, position). */
typedef struct inline_event_t {
  inline_stream_t *stream;
  uint64_t seq;
} inline_event_t;

typedef struct inline_device_t {
  cubert_allocator_t allocator;
  cubert_device_properties_t properties;
  cpu_kernel_context_t context; /* cubes run one after another: one context */
  unsigned char event;          /* every event of a stream that never failed */
  uint32_t stream_count;        /* the server's max_streams + its GC and communication streams */
  cpu_fault_plan_t faults;      /* test only (core/server/server_faults.h) */
} inline_device_t;

static inline_device_t *device_of(void *self) { return (inline_device_t *)self; }
static inline_stream_t *stream_of(cubert_driver_stream_t *s) { return (inline_stream_t *)(void *)s; }

static size_t stream_bytes(const inline_device_t *d) {
  return sizeof(inline_stream_t) + (size_t)d->stream_count * sizeof(uint64_t);
}

/* Queue a failure of work that ran on `s` and log it for its waiters. */
static void stream_failed(inline_stream_t *s, const cubert_error_t *error, uint32_t origin,
                          uint64_t origin_seq) {
  (void)cubert_error_aggregate(&s->errors, error);
  if (s->regular) cpu_fault_log_add(&s->faults, s->ops, origin, origin_seq, error);
}

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
  inline_stream_t *s = stream_of(stream);
  const unsigned char *src;
  unsigned char *dst;
  uint64_t r;
  if (c->kind > CUBERT_COPY_DEVICE_TO_DEVICE)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0, "unknown copy kind");
  if (c->width == 0 || c->height == 0) return CUBERT_STATUS_OK;
  s->ops++;
  if (cpu_fault_plan_copy(&device_of(self)->faults)) { /* test only: fails as it runs */
    cubert_error_t error;
    (void)cpu_fault_copy_error(s->index, &error);
    stream_failed(s, &error, s->index, s->ops);
    return CUBERT_STATUS_OK;
  }
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
                                  uint32_t stream, cubert_error_t *error) {
  cubert_kernel_args_t args;
  cubert_dim3_t count;
  cpu_kernel_grid_t grid;
  if (l->fault) return cpu_fault_launch_error(l->kernel, stream, error);
  CUBERT_RETURN_IF_ERROR(cpu_kernel_launch_count(l, &d->properties.hardware, &count, error));
  cpu_kernel_launch_args(l, &args);
  if (cpu_kernel_grid(l->kernel, count, l->cube_dim, &args,
                      (cubert_execution_mode_t)l->execution, &grid, error) != CUBERT_STATUS_OK)
    return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
  cpu_kernel_grid_set_shared(&grid, l->shared_memory_bytes);
  if (grid.total == 0) return CUBERT_STATUS_OK;
  grid.plane_dim = d->properties.hardware.plane_size_max;
  if (cpu_kernel_context_reserve(&d->context, d->allocator, grid.shared_bytes) != CUBERT_STATUS_OK) {
    cubert_error_set(error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0,
                     "cannot allocate dynamic shared memory");
    return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
  }
  cpu_kernel_report_reset(&d->context.report);
  if (l->execution == (uint8_t)CUBERT_EXECUTION_RACECHECK) {
    cpu_kernel_race_t race;
    cubert_status_t st;
    cpu_kernel_context_begin(&d->context, l->kernel, &grid);
    if (cpu_kernel_race_begin(&d->context, &race, d->allocator) != CUBERT_STATUS_OK) {
      cubert_error_set(error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0,
                       "the kernel race checker ran out of memory");
      return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
    }
    cpu_kernel_run_all(&d->context, l->kernel, &args, &grid);
    st = cpu_kernel_race_end(&d->context, &race);
    if (st != CUBERT_STATUS_OK || d->context.scratch_failed) {
      cubert_error_set(error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0,
                       "the kernel race checker ran out of memory");
      return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
    }
  } else {
    cpu_kernel_run_all(&d->context, l->kernel, &args, &grid);
  }
  if (d->context.scratch_failed) {
    cubert_error_set(error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0,
                     "cannot allocate the cubes' shared memory");
    return cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
  }
  return cpu_kernel_launch_report(l, &d->context.report, stream, error);
}

static cubert_status_t inline_launch(void *self, const cubert_driver_launch_t *launch,
                                     cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  inline_device_t *d = device_of(self);
  inline_stream_t *s = stream_of(stream);
  cpu_kernel_launch_t l;
  cubert_error_t error;
  CUBERT_RETURN_IF_ERROR(cpu_kernel_launch_check(launch, out_error));
  cpu_kernel_launch_record(launch, &l);
  l.fault = cpu_fault_plan_launch(&d->faults, launch->kernel);
  s->ops++;
  cubert_error_clear(&error);
  if (run_launch(d, &l, s->index, &error) != CUBERT_STATUS_OK)
    stream_failed(s, &error, s->index, s->ops);
  return CUBERT_STATUS_OK;
}

/* ---- streams ---- */

static cubert_status_t inline_stream_create(void *self, uint32_t index,
                                            cubert_driver_stream_t **out_stream,
                                            cubert_error_t *out_error) {
  inline_device_t *d = device_of(self);
  inline_stream_t *s = 0;
  if (cubert_allocator_malloc(d->allocator, stream_bytes(d), 0, (void **)&s, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0, "stream");
  __builtin_memset(s, 0, stream_bytes(d));
  s->index = index;
  s->regular = index + 2u < d->stream_count; /* not the GC or communication stream */
  s->faults.entries = s->entries;
  s->faults.capacity = INLINE_FAULT_LOG;
  s->marks = (uint64_t *)(void *)(s + 1);
  *out_stream = (cubert_driver_stream_t *)(void *)s;
  return CUBERT_STATUS_OK;
}

static void inline_stream_destroy(void *self, cubert_driver_stream_t *stream) {
  inline_device_t *d = device_of(self);
  cubert_allocator_free(d->allocator, stream_of(stream), stream_bytes(d), 0);
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
  inline_device_t *d = device_of(self);
  inline_stream_t *s = stream_of(stream);
  inline_event_t *ev = 0;
  if (s->faults.total == 0) { /* nothing to carry over: the shared byte */
    *out_event = (cubert_driver_event_t *)(void *)&d->event;
    return CUBERT_STATUS_OK;
  }
  if (cubert_allocator_malloc(d->allocator, sizeof(*ev), 0, (void **)&ev, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0, "event");
  ev->stream = s;
  ev->seq = s->ops;
  *out_event = (cubert_driver_event_t *)(void *)ev;
  return CUBERT_STATUS_OK;
}

/* The waiting stream inherits the failures logged up to the event's point. */
static cubert_status_t inline_event_wait(void *self, cubert_driver_stream_t *stream,
                                         cubert_driver_event_t *event, cubert_error_t *out_error) {
  inline_device_t *d = device_of(self);
  inline_stream_t *s = stream_of(stream);
  inline_event_t *ev = (inline_event_t *)(void *)event;
  cpu_fault_entry_t e;
  (void)out_error;
  if ((void *)event == (void *)&d->event || ev->stream == s || !s->regular) return CUBERT_STATUS_OK;
  while (cpu_fault_log_next(&ev->stream->faults, ev->seq, s->index, s->marks, d->stream_count, &e))
    stream_failed(s, &e.error, e.origin, e.origin_seq);
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
  inline_device_t *d = device_of(self);
  if ((void *)event != (void *)&d->event)
    cubert_allocator_free(d->allocator, event, sizeof(inline_event_t), 0);
}

/* ---- memory of other libraries (DLPack, docs/interop.md) ---- */

/* Host memory: DLPack's kDLCPU, device 0. */
static void inline_memory_device(void *self, int32_t *out_device_type, int32_t *out_device_id) {
  (void)self;
  *out_device_type = 1; /* kDLCPU */
  *out_device_id = 0;
}

/* Host memory is this device's memory: the pointer is the address. */
static cubert_status_t inline_memory_import(void *self, uint64_t pointer, uint64_t size,
                                       cubert_device_ptr_t *out_address, cubert_error_t *out_error) {
  (void)self;
  if (pointer == 0 && size != 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "a NULL pointer with a size");
  *out_address = (cubert_device_ptr_t)pointer;
  return CUBERT_STATUS_OK;
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
    /* no pinned memory (the server serves staging from its allocator), no collectives */
    .memory_device = inline_memory_device, /* DLPack: host memory */
    .memory_import = inline_memory_import,
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
                CUBERT_FEATURE_STAGING | CUBERT_FEATURE_PLANE;
  p->hardware.load_width = 512;
  p->hardware.plane_size_min = o->plane_dim ? o->plane_dim : CPU_KERNEL_PLANE_DIM;
  p->hardware.plane_size_max = p->hardware.plane_size_min;
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
  p->memory.max_page_size = o->device.memory_size ? o->device.memory_size : ((uint64_t)1 << 30);
  p->memory.alignment = 16; /* a 16-byte line (cubert/kernel_line.h) of any buffer is aligned */
  p->timing_method = CUBERT_TIMING_SYSTEM;
}

cubert_status_t cubert_inline_client_create(cubert_allocator_t allocator,
                                            const cubert_inline_options_t *options,
                                            cubert_client_t **out_client,
                                            cubert_error_t *out_error) {
  cubert_inline_options_t o;
  cubert_server_options_t k;
  inline_device_t *d = 0;
  cubert_status_t status;
  cubert_inline_options_initialize(&o);
  if (options) o = *options;
  if (!out_client || (!o.lock.lock) != (!o.lock.unlock))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0,
                            "inline: NULL out_client or half a lock");
  if (o.plane_dim && !CPU_KERNEL_PLANE_DIM_VALID(o.plane_dim)) {
    uint64_t f[1];
    f[0] = o.plane_dim;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 1,
                            "inline: plane_dim is not a power of two from 1 to 64");
  }
  if (cubert_allocator_malloc(allocator, sizeof(*d), 0, (void **)&d, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, 0, 0, "inline device");
  __builtin_memset(d, 0, sizeof(*d));
  d->allocator = allocator;
  fill_properties(&o, &d->properties);
  /* the server's slots (max_streams, 0: its default) + GC + communication */
  d->stream_count = (o.device.max_streams ? o.device.max_streams : CUBERT_SERVER_DEFAULT_MAX_STREAMS) + 2u;
  cpu_fault_plan_initialize(&d->faults, o.device.faults);
  cubert_server_options_initialize(&k);
  cubert_server_options_from_device(&k, CUBERT_INLINE_DEVICE_TYPE, &o.device);
  k.gc_capacity = 4; /* events are complete when recorded: entries go at the next poll */
  k.layout_policy.kind = CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  k.layout_policy.mem_alignment = 8;
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
  status = cubert_server_client_create(allocator, &k, &g_inline_driver, d, out_client, out_error);
  if (status != CUBERT_STATUS_OK) inline_destroy(d);
  return status;
}
