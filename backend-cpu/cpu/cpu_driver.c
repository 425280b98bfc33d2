/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_driver.c: the CPU driver's table (cubert/driver/
 * driver.h) over simulated streams (cpu_stream.c) and the kernel worker pool
 * (cpu_executor.c). Device memory is host memory from the allocator, so
 * device addresses are host pointers (CUBERT_DRIVER_HOST_ADDRESSABLE) and
 * staging buffers come from the server's allocator (no host_alloc here).
 *
 * Every primitive that enqueues writes one op into the stream's ring; the
 * stream's worker (or, in deterministic mode, the step loop of a thread
 * that waits) runs it. An event is a point (stream, sequence): complete
 * once the stream's worker completed that op.
 */
#include "cpu/cpu_driver.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "stream/stream.h"
#include "os/os_obs.h"
#include "kernel/cpu_kernel.h"

struct cpu_event_t {
  cpu_event_t *next; /* the free list */
  cpu_event_t *all;  /* every event made */
  cpu_stream_t *stream;
  uint64_t seq;
};

static cpu_device_t *device_of(void *self) { return (cpu_device_t *)self; }
static cpu_stream_t *stream_of(cubert_driver_stream_t *s) { return (cpu_stream_t *)(void *)s; }
static cpu_event_t *event_of(cubert_driver_event_t *e) { return (cpu_event_t *)(void *)e; }

/* ---- timeline trace (cubert/trace.h) ------------------------------------------------ */

/* A span [t0, now] on the calling host thread's track; flow_seq non-zero:
 * a flow starts there, to the execution of op flow_seq of `stream`. */
static void trace_host(const cpu_device_t *d, os_trace_cat_t cat, const char *name, uint64_t t0,
                       const cpu_stream_t *stream, uint64_t flow_seq, const char *arg_name,
                       uint64_t arg) {
  cubert__os_trace_record(d->device_index, cubert__os_trace_thread_tid(), cat, name, t0,
                          cubert__os_trace_now(), 0,
                          flow_seq ? OS_TRACE_FLOW_OUT : OS_TRACE_FLOW_NONE,
                          flow_seq ? cubert__os_trace_flow_id(d->device_index, stream->slot,
                                                                flow_seq)
                                    : 0,
                          arg_name, arg);
}

/* An instant on the calling host thread's track. */
static void trace_host_instant(const cpu_device_t *d, os_trace_cat_t cat, const char *name,
                               const char *arg_name, uint64_t arg) {
  uint64_t now = cubert__os_trace_now();
  cubert__os_trace_record(d->device_index, cubert__os_trace_thread_tid(), cat, name, now, now,
                          1, OS_TRACE_FLOW_NONE, 0, arg_name, arg);
}

/* The op running on `stream` (its worker, or the step loop) ran over
 * [t0, now]: a span on the stream's track, the end of the flow from its
 * enqueue when `flow`. */
static void trace_op(const cpu_stream_t *stream, os_trace_cat_t cat, const char *name,
                     uint64_t t0, int flow, const char *arg_name, uint64_t arg) {
  uint64_t seq = stream->head + 1u; /* the op that runs */
  cubert__os_trace_record(stream->device_index, OS_TRACE_TID_STREAM + stream->slot, cat, name,
                          t0, cubert__os_trace_now(), 0,
                          flow ? OS_TRACE_FLOW_IN : OS_TRACE_FLOW_NONE,
                          flow ? cubert__os_trace_flow_id(stream->device_index, stream->slot, seq)
                                : 0,
                          arg_name, arg);
}

static const char *const copy_names[] = {"copy host to device", "copy device to host",
                                         "copy device to device"};

/* ---- device memory ------------------------------------------------------------------- */

#define CPU_MEMORY_ALIGN 64

static cubert_status_t cpu_memory_alloc(void *self, uint64_t size, cubert_driver_stream_t *stream,
                                        cubert_device_ptr_t *out_address,
                                        cubert_error_t *out_error) {
  cpu_device_t *d = device_of(self);
  void *p = NULL;
  (void)stream; /* host memory: usable at once */
  if (size > (uint64_t)SIZE_MAX)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  if (cubert_allocator_malloc(d->allocator, (size_t)size, CPU_MEMORY_ALIGN, &p,
                              NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1,
                            "host memory allocation failed");
  *out_address = (cubert_device_ptr_t)(uintptr_t)p;
  OS_LOG(CUBERT_LOG_LEVEL_TRACE, "cpu device %u: allocated %llu bytes at %p",
         (unsigned)d->device_index, (unsigned long long)size, p);
  if (OS_TRACE_ON()) trace_host_instant(d, OS_TRACE_CAT_MEMORY, "alloc", "bytes", size);
  return CUBERT_STATUS_OK;
}

typedef struct free_op_t {
  cubert_allocator_t allocator;
  void *ptr;
  uint64_t size;
} free_op_t;

static cubert_status_t free_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  free_op_t *op = (free_op_t *)payload;
  uint64_t t0 = OS_TRACE_ON() ? cubert__os_trace_now() : 0;
  (void)error;
  cubert_allocator_free(op->allocator, op->ptr, (size_t)op->size, CPU_MEMORY_ALIGN);
  if (t0) trace_op(stream, OS_TRACE_CAT_MEMORY, "free", t0, 0, "bytes", op->size);
  return CUBERT_STATUS_OK;
}

static void cpu_memory_free(void *self, cubert_device_ptr_t address, uint64_t size,
                            cubert_driver_stream_t *stream) {
  cpu_device_t *d = device_of(self);
  cpu_op_t *op;
  free_op_t *f;
  OS_LOG(CUBERT_LOG_LEVEL_TRACE, "cpu device %u: free %llu bytes at %p%s",
         (unsigned)d->device_index, (unsigned long long)size, (void *)(uintptr_t)address,
         stream ? " (after the stream's work)" : "");
  if (!stream) {
    if (OS_TRACE_ON()) trace_host_instant(d, OS_TRACE_CAT_MEMORY, "free", "bytes", size);
    cubert_allocator_free(d->allocator, (void *)(uintptr_t)address, (size_t)size, CPU_MEMORY_ALIGN);
    return;
  }
  op = cpu_stream_reserve(stream_of(stream)); /* after the stream's earlier work */
  f = (free_op_t *)cpu_op_payload(op);
  f->allocator = d->allocator;
  f->ptr = (void *)(uintptr_t)address;
  f->size = size;
  op->run = free_run;
  (void)cpu_stream_commit(stream_of(stream));
}

/* ---- copies --------------------------------------------------------------------------- */

typedef struct copy_op_t {
  unsigned char *dst;
  const unsigned char *src;
  uint64_t width, height, src_pitch, dst_pitch;
  uint32_t fault; /* test only: fail when it runs (cpu_fault_plan_t) */
  uint32_t kind; /* cubert_copy_kind_t, for the trace */
} copy_op_t;

static cubert_status_t copy_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  copy_op_t *op = (copy_op_t *)payload;
  uint64_t r, t0;
  if (op->fault) return cpu_fault_copy_error(stream->slot, error);
  t0 = OS_TRACE_ON() ? cubert__os_trace_now() : 0;
  if (op->height == 1) {
    memcpy(op->dst, op->src, (size_t)op->width);
  } else {
    for (r = 0; r < op->height; r++)
      memcpy(op->dst + r * op->dst_pitch, op->src + r * op->src_pitch, (size_t)op->width);
  }
  if (t0)
    trace_op(stream, OS_TRACE_CAT_COPY, copy_names[op->kind], t0, 1, "bytes",
             op->width * op->height);
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_copy(void *self, const cubert_driver_copy_t *c,
                                cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cpu_op_t *op;
  copy_op_t *p;
  uint64_t seq, t0 = OS_TRACE_ON() ? cubert__os_trace_now() : 0;
  if (c->kind > CUBERT_COPY_DEVICE_TO_DEVICE)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "unknown copy kind");
  if (c->width == 0 || c->height == 0) return CUBERT_STATUS_OK;
  op = cpu_stream_reserve(stream_of(stream));
  p = (copy_op_t *)cpu_op_payload(op);
  p->src = c->kind == CUBERT_COPY_HOST_TO_DEVICE ? (const unsigned char *)c->src_host
                                                 : (const unsigned char *)(uintptr_t)c->src_device;
  p->dst = c->kind == CUBERT_COPY_DEVICE_TO_HOST ? (unsigned char *)c->dst_host
                                                 : (unsigned char *)(uintptr_t)c->dst_device;
  p->width = c->width;
  p->height = c->height;
  p->src_pitch = c->src_pitch;
  p->dst_pitch = c->dst_pitch;
  p->fault = cpu_fault_plan_copy(&device_of(self)->faults);
  p->kind = (uint32_t)c->kind;
  op->run = copy_run;
  seq = cpu_stream_commit(stream_of(stream));
  if (t0)
    trace_host(device_of(self), OS_TRACE_CAT_COPY, copy_names[c->kind], t0, stream_of(stream),
               seq, "bytes", c->width * c->height);
  return CUBERT_STATUS_OK;
}

/* ---- launches ------------------------------------------------------------------------- */

/* The grid of a one-cube launch: `planned` (a plan's, checked when the
 * launch was recorded: plan_entry_record) or checked now. */
static cubert_status_t solo_grid(const cpu_device_t *d, const cpu_kernel_launch_t *l,
                                 cubert_dim3_t count, const cubert_kernel_args_t *args,
                                 const cpu_kernel_grid_t *planned, cpu_kernel_grid_t *grid,
                                 cubert_error_t *error) {
  if (planned) {
    *grid = *planned;
    return CUBERT_STATUS_OK;
  }
  CUBERT_RETURN_IF_ERROR(cpu_kernel_grid(l->kernel, count, l->cube_dim, args,
                                         (cubert_execution_mode_t)l->execution, grid, error));
  cpu_kernel_grid_set_shared(grid, l->shared_memory_bytes);
  if (d->plane_dim) grid->plane_dim = d->plane_dim;
  return CUBERT_STATUS_OK;
}

/* A one-cube launch on its stream's own kernel context (d->solo), on the
 * stream's worker, without the executor's run lock: what the executor does
 * for a grid of one cube (cubert__cpu_executor_run_shared: one thread, cubes
 * in order), with a context nobody else uses. The cube reports into the
 * context's report, which is the launch's (*out_report). */
static cubert_status_t launch_solo(cpu_device_t *d, cpu_kernel_context_t *ctx,
                                   const cpu_kernel_launch_t *l, cubert_dim3_t count,
                                   const cubert_kernel_args_t *args,
                                   const cpu_kernel_grid_t *planned,
                                   cubert_kernel_report_t **out_report, cubert_error_t *error) {
  cpu_kernel_grid_t grid;
  CUBERT_RETURN_IF_ERROR(solo_grid(d, l, count, args, planned, &grid, error));
  if (cpu_kernel_context_reserve(ctx, d->allocator, grid.shared_bytes) != CUBERT_STATUS_OK)
    return cubert_error_set(error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cpu executor: cannot allocate the cubes' shared memory");
  ctx->scratch_failed = 0;
  cpu_kernel_report_reset(&ctx->report);
  ctx->report.kernel_name = l->kernel->name;
  *out_report = &ctx->report;
  cpu_kernel_run_all(ctx, l->kernel, args, &grid);
  if (ctx->scratch_failed) /* the executor's words for it */
    return cubert_error_set(error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cpu executor: cannot allocate the cubes' shared memory");
  return CUBERT_STATUS_OK;
}

/* Run a launch on its stream's thread; `planned`: the grid a plan checked
 * for it (a one-cube launch of a static count), or NULL. */
static cubert_status_t launch_run_with(cpu_stream_t *stream, const cpu_kernel_launch_t *l,
                                       const cpu_kernel_grid_t *planned, cubert_error_t *error) {
  cpu_device_t *d = (cpu_device_t *)stream->owner;
  cubert_kernel_args_t args;
  cubert_kernel_report_t report, *r = &report;
  cubert_dim3_t count;
  uint64_t t0 = 0, t1;
  cubert_status_t status;
  if (l->fault) return cpu_fault_launch_error(l->kernel, stream->slot, error);
  if (OS_TRACE_ON() || d->summary) t0 = cubert__os_trace_now();
  status = cpu_kernel_launch_count(l, &d->properties.hardware, &count, error);
  if (status == CUBERT_STATUS_OK) {
    cpu_kernel_launch_args(l, &args);
    if (d->solo && count.x == 1 && count.y == 1 && count.z == 1 &&
        l->execution != (uint8_t)CUBERT_EXECUTION_RACECHECK)
      status = launch_solo(d, &d->solo[stream->slot].context, l, count, &args, planned, &r, error);
    else
      status = cubert__cpu_executor_run_shared(d->executor, l->kernel, count, l->cube_dim,
                                               l->shared_memory_bytes, &args,
                                               (cubert_execution_mode_t)l->execution, &report,
                                               error);
    if (status != CUBERT_STATUS_OK)
      status = cubert_error_wrap(error, CUBERT_ERROR_SERVER_LAUNCH);
    else
      status = cpu_kernel_launch_report(l, r, stream->slot, error);
  }
  if (!t0) return status;
  t1 = cubert__os_trace_now();
  if (d->summary && status == CUBERT_STATUS_OK) {
    pthread_mutex_lock(&d->summary_mutex);
    (void)cubert_profile_summary_record(d->summary, l->kernel->name, t1 - t0, NULL);
    pthread_mutex_unlock(&d->summary_mutex);
  }
  if (OS_TRACE_ON())
    trace_op(stream, OS_TRACE_CAT_KERNEL, l->kernel->name, t0, 1, "cubes",
             status == CUBERT_STATUS_OK ? (uint64_t)count.x * count.y * count.z : 0);
  return status;
}

static cubert_status_t launch_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  return launch_run_with(stream, (const cpu_kernel_launch_t *)payload, NULL, error);
}

static cubert_status_t cpu_launch(void *self, const cubert_driver_launch_t *launch,
                                  cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cpu_op_t *op;
  cpu_kernel_launch_t *l;
  uint64_t seq, t0 = OS_TRACE_ON() ? cubert__os_trace_now() : 0;
  CUBERT_RETURN_IF_ERROR(cpu_kernel_launch_check(launch, out_error));
  op = cpu_stream_reserve(stream_of(stream));
  l = (cpu_kernel_launch_t *)cpu_op_payload(op);
  cpu_kernel_launch_record(launch, l);
  l->fault = cpu_fault_plan_launch(&device_of(self)->faults, launch->kernel);
  op->run = launch_run;
  seq = cpu_stream_commit(stream_of(stream));
  if (t0)
    trace_host(device_of(self), OS_TRACE_CAT_LAUNCH, launch->kernel->name, t0,
               stream_of(stream), seq, "stream", stream_of(stream)->slot);
  return CUBERT_STATUS_OK;
}

/* ---- plans (recorded sequences) ---------------------------------------------------------
 * A plan is a pre-planned task list: the launch records of a recording, made
 * once, run by ONE stream op per replay (the launches in order on the stream's
 * worker), so a replay costs one ring slot and no allocation. The records a
 * pending op reads are a snapshot with a count of the ops that still read it:
 * plan_update writes in place when none does, else into a copy that becomes
 * current (the old snapshot is freed by the host once its ops ran), as
 * cuGraphExecKernelNodeSetParams leaves enqueued launches alone. */

/* A planned launch: its record and, for a one-cube launch of a static count
 * whose grid checked at planning, that grid (launch_run_with then skips the
 * check). A launch whose check failed is checked again when it runs, and
 * fails there as launched one by one; the client refuses such launches
 * before they are recorded (cube dims, argument counts, limits), so that is
 * for a caller of the driver interface only. */
typedef struct cpu_plan_entry_t {
  cpu_kernel_launch_t launch;
  cpu_kernel_grid_t grid;
  uint32_t planned; /* 1: grid holds the launch's checked grid */
} cpu_plan_entry_t;

typedef struct cpu_plan_snapshot_t {
  uint32_t refs; /* ops enqueued that have not run it yet (atomic) */
  uint32_t count;
  struct cpu_plan_snapshot_t *next; /* the retired list */
  cpu_plan_entry_t entries[];
} cpu_plan_snapshot_t;

struct cubert_driver_plan_t {
  cpu_plan_snapshot_t *current;
  cpu_plan_snapshot_t *retired; /* older snapshots still read by pending ops */
  uint32_t count;
};

static size_t snapshot_size(uint32_t count) {
  return sizeof(cpu_plan_snapshot_t) + (size_t)count * sizeof(cpu_plan_entry_t);
}

/* Record a launch into a plan's entry, with its grid when it has one cube
 * and a static count and the grid checks (what launch_run_with would check
 * when it runs: nothing it reads changes between the two). */
static void plan_entry_record(const cpu_device_t *d, const cubert_driver_launch_t *launch,
                              cpu_plan_entry_t *e) {
  cubert_kernel_args_t args;
  const cpu_kernel_launch_t *l = &e->launch;
  cpu_kernel_launch_record(launch, &e->launch);
  e->planned = 0;
  if (l->dynamic || l->count.x != 1 || l->count.y != 1 || l->count.z != 1 ||
      l->execution == (uint8_t)CUBERT_EXECUTION_RACECHECK)
    return;
  cpu_kernel_launch_args(l, &args);
  if (solo_grid(d, l, l->count, &args, NULL, &e->grid, NULL) == CUBERT_STATUS_OK) e->planned = 1;
}

/* Free the retired snapshots no pending op reads any more. */
static void plan_collect(cpu_device_t *d, struct cubert_driver_plan_t *p) {
  cpu_plan_snapshot_t **link = &p->retired;
  while (*link) {
    cpu_plan_snapshot_t *s = *link;
    if (__atomic_load_n(&s->refs, __ATOMIC_ACQUIRE) == 0) {
      *link = s->next;
      cubert_allocator_free(d->allocator, s, snapshot_size(s->count), 64);
    } else {
      link = &s->next;
    }
  }
}

/* A replay's ring op: the snapshot it runs, and the failures after the first
 * (the first is the op's own, queued and carried across waits as a launch's;
 * the later ones, aggregated here, are queued after it by plan_done), so the
 * stream reports every failing launch, in order, as launches one by one. */
typedef struct cpu_plan_op_t {
  cpu_plan_snapshot_t *snapshot;
  cubert_error_t later;
} cpu_plan_op_t;

static cubert_status_t plan_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  cpu_plan_op_t *op = (cpu_plan_op_t *)payload;
  cpu_plan_snapshot_t *s = op->snapshot;
  cubert_status_t status = CUBERT_STATUS_OK;
  uint32_t i;
  for (i = 0; i < s->count; i++) {
    cubert_error_t e;
    cubert_status_t st;
    const cpu_plan_entry_t *entry = &s->entries[i];
    cubert_error_clear(&e);
    st = launch_run_with(stream, &entry->launch, entry->planned ? &entry->grid : NULL, &e);
    if (st == CUBERT_STATUS_OK) continue;
    if (e.status == CUBERT_STATUS_OK) e.status = st;
    if (status == CUBERT_STATUS_OK) {
      status = st;
      *error = e;
    } else {
      (void)cubert_error_aggregate(&op->later, &e);
    }
  }
  __atomic_sub_fetch(&s->refs, 1, __ATOMIC_RELEASE);
  return status;
}

static cubert_status_t plan_done(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  cpu_plan_op_t *op = (cpu_plan_op_t *)payload;
  (void)error;
  if (op->later.depth) cpu_stream_push_error(stream, &op->later);
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_plan_create(void *self, const cubert_driver_launch_t *launches,
                                       uint32_t count, cubert_driver_plan_t **out_plan,
                                       cubert_error_t *out_error) {
  cpu_device_t *d = device_of(self);
  struct cubert_driver_plan_t *p = NULL;
  cpu_plan_snapshot_t *s = NULL;
  uint32_t i;
  for (i = 0; i < count; i++) CUBERT_RETURN_IF_ERROR(cpu_kernel_launch_check(&launches[i], out_error));
  if (cubert_allocator_malloc(d->allocator, sizeof(*p), 0, (void **)&p, NULL) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc(d->allocator, snapshot_size(count), 64, (void **)&s, NULL) !=
          CUBERT_STATUS_OK) {
    if (p) cubert_allocator_free(d->allocator, p, sizeof(*p), 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cpu plan");
  }
  memset(s, 0, snapshot_size(count));
  s->count = count;
  for (i = 0; i < count; i++) plan_entry_record(d, &launches[i], &s->entries[i]);
  p->current = s;
  p->retired = NULL;
  p->count = count;
  *out_plan = p;
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_plan_update(void *self, cubert_driver_plan_t *plan, uint32_t index,
                                       const cubert_driver_launch_t *launch, cubert_error_t *out_error) {
  cpu_device_t *d = device_of(self);
  struct cubert_driver_plan_t *p = plan;
  cpu_plan_snapshot_t *s = p->current, *copy = NULL;
  /* unreachable: an index past the plan (the server updates the launches it planned) */
  if (index >= p->count)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "cpu plan: no such launch");
  plan_collect(d, p);
  if (__atomic_load_n(&s->refs, __ATOMIC_ACQUIRE) != 0) { /* pending ops read it: a new snapshot */
    if (cubert_allocator_malloc(d->allocator, snapshot_size(p->count), 64, (void **)&copy, NULL) !=
        CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cpu plan update");
    /* the records only: `refs` is the workers' (atomic) */
    memcpy(copy->entries, s->entries, (size_t)p->count * sizeof(cpu_plan_entry_t));
    copy->refs = 0;
    copy->count = p->count;
    copy->next = NULL;
    s->next = p->retired;
    p->retired = s;
    p->current = s = copy;
  }
  plan_entry_record(d, launch, &s->entries[index]);
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_plan_launch(void *self, cubert_driver_plan_t *plan,
                                       cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  struct cubert_driver_plan_t *p = plan;
  cpu_plan_op_t *record;
  cpu_op_t *op;
  (void)out_error;
  if (p->retired) plan_collect(device_of(self), p);
  __atomic_add_fetch(&p->current->refs, 1, __ATOMIC_RELAXED); /* published by the commit */
  op = cpu_stream_reserve(stream_of(stream));
  record = (cpu_plan_op_t *)cpu_op_payload(op);
  record->snapshot = p->current;
  cubert_error_clear(&record->later);
  op->run = plan_run;
  op->done = plan_done;
  (void)cpu_stream_commit(stream_of(stream));
  return CUBERT_STATUS_OK;
}

static void cpu_plan_destroy(void *self, cubert_driver_plan_t *plan) {
  cpu_device_t *d = device_of(self);
  struct cubert_driver_plan_t *p = plan;
  /* every op ran (the server synchronized the streams) unless the device was lost */
  while (p->retired) {
    cpu_plan_snapshot_t *s = p->retired;
    p->retired = s->next;
    cubert_allocator_free(d->allocator, s, snapshot_size(s->count), 64);
  }
  cubert_allocator_free(d->allocator, p->current, snapshot_size(p->count), 64);
  cubert_allocator_free(d->allocator, p, sizeof(*p), 0);
}

/* ---- streams --------------------------------------------------------------------------- */

/* What a stream helper may run (cpu_helpers.h): ops whose cost is small and
 * bounded by their record: a one-cube launch (a static count of 1: one
 * thread's work, like the launch path's own), a copy of at most 256 KiB, a
 * free, a satisfied wait. Recorded sequences, many-cube launches (the
 * executor's workers join in), big copies and collectives are the
 * worker's. */
#define CPU_HELPER_COPY_MAX (256u * 1024u)
static int cpu_op_small(const cpu_op_t *op) {
  const void *payload = op->payload;
  if (!op->run || op->run == free_run) return 1;
  if (op->run == launch_run) {
    const cpu_kernel_launch_t *l = (const cpu_kernel_launch_t *)payload;
    return !l->dynamic && l->count.x == 1u && l->count.y == 1u && l->count.z == 1u;
  }
  if (op->run == copy_run) {
    const copy_op_t *c = (const copy_op_t *)payload;
    return c->height <= CPU_HELPER_COPY_MAX && c->width * c->height <= CPU_HELPER_COPY_MAX;
  }
  return 0;
}

static cubert_status_t cpu_stream_create(void *self, uint32_t index,
                                         cubert_driver_stream_t **out_stream,
                                         cubert_error_t *out_error) {
  cpu_device_t *d = device_of(self);
  cpu_stream_t *s = NULL;
  cubert_status_t status;
  if (index >= d->stream_count || __atomic_load_n(&d->streams[index], __ATOMIC_ACQUIRE))
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "no such stream");
  if (cubert_allocator_malloc(d->allocator, sizeof(*s), 64, (void **)&s, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "stream");
  status = cpu_stream_initialize(s, d->allocator, index, d,
                                 d->deterministic ? cpu_sim_run_until : NULL);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(d->allocator, s, sizeof(*s), 64);
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_SERVER_GENERIC,
                            NULL, 0, "cannot start the stream worker");
  }
  /* the server's regular slots carry failures across waits; its GC and
   * communication streams (the last two) do not */
  s->propagates = index + 2u < d->stream_count;
  s->device_index = d->device_index;
  s->op_small = cpu_op_small;
  if (d->helpers) cpu_helpers_register(d->helpers, s);
  cpu_sim_set_stream(d, index, s);
  *out_stream = (cubert_driver_stream_t *)(void *)s;
  return CUBERT_STATUS_OK;
}

static void cpu_stream_destroy(void *self, cubert_driver_stream_t *stream) {
  cpu_device_t *d = device_of(self);
  cpu_stream_t *s = stream_of(stream);
  uint32_t index = s->slot;
  cpu_stream_deinitialize(s); /* runs what is queued (deterministic: in the loop) */
  cpu_sim_set_stream(d, index, NULL);
  cubert_allocator_free(d->allocator, s, sizeof(*s), 64);
}

static cubert_status_t cpu_stream_synchronize(void *self, cubert_driver_stream_t *stream,
                                              cubert_error_t *out_error) {
  cpu_stream_t *s = stream_of(stream);
  cubert_status_t status;
  uint64_t t0 = OS_TRACE_ON() ? cubert__os_trace_now() : 0;
  status = cpu_stream_wait_point(s, s->tail, UINT64_MAX);
  if (t0) {
    char name[48];
    (void)snprintf(name, sizeof name, "sync stream %u", (unsigned)s->slot);
    trace_host(device_of(self), OS_TRACE_CAT_SYNC, name, t0, s, 0, NULL, 0);
  }
  if (status == CUBERT_STATUS_FAILED_PRECONDITION)
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0,
                            "deterministic mode: no step is runnable (deadlock)");
  return status;
}

static cubert_status_t cpu_stream_errors(void *self, cubert_driver_stream_t *stream,
                                         cubert_error_t *out_error) {
  (void)self;
  return cpu_stream_drain_errors(stream_of(stream), out_error);
}

/* ---- events ----------------------------------------------------------------------------- */

static cubert_status_t cpu_event_record(void *self, cubert_driver_stream_t *stream,
                                        cubert_driver_event_t **out_event,
                                        cubert_error_t *out_error) {
  cpu_device_t *d = device_of(self);
  cpu_event_t *ev;
  pthread_mutex_lock(&d->events_mutex);
  ev = d->free_events;
  if (ev) d->free_events = ev->next;
  pthread_mutex_unlock(&d->events_mutex);
  if (!ev) {
    if (cubert_allocator_malloc(d->allocator, sizeof(*ev), 0, (void **)&ev,
                                NULL) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "event");
    pthread_mutex_lock(&d->events_mutex);
    ev->all = d->all_events;
    d->all_events = ev;
    pthread_mutex_unlock(&d->events_mutex);
  }
  ev->next = NULL;
  ev->stream = stream_of(stream);
  ev->seq = ev->stream->tail; /* the last committed op (the producer reads its own index) */
  *out_event = (cubert_driver_event_t *)(void *)ev;
  if (OS_TRACE_ON()) {
    char name[48];
    (void)snprintf(name, sizeof name, "event record stream %u op %llu", (unsigned)ev->stream->slot,
                   (unsigned long long)ev->seq);
    trace_host_instant(d, OS_TRACE_CAT_EVENT, name, NULL, 0);
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_event_wait(void *self, cubert_driver_stream_t *stream,
                                      cubert_driver_event_t *event, cubert_error_t *out_error) {
  cpu_stream_t *s = stream_of(stream);
  cpu_event_t *ev = event_of(event);
  cpu_op_t *op;
  (void)out_error;
  if (ev->stream == s) return CUBERT_STATUS_OK;
  /* a completed point needs no wait, unless the stream failed: the wait
   * op then carries its failures over (cpu_stream.h) */
  if (cpu_stream_point_completed(ev->stream, ev->seq) &&
      !(s->propagates && cpu_stream_has_faults(ev->stream)))
    return CUBERT_STATUS_OK;
  op = cpu_stream_reserve(s);
  op->wait_stream = ev->stream;
  op->wait_seq = ev->seq;
  (void)cpu_stream_commit(s);
  if (OS_TRACE_ON()) {
    char name[48];
    (void)snprintf(name, sizeof name, "stream %u waits for stream %u op %llu", (unsigned)s->slot,
                   (unsigned)ev->stream->slot, (unsigned long long)ev->seq);
    trace_host_instant(device_of(self), OS_TRACE_CAT_EVENT, name, NULL, 0);
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_event_query(void *self, cubert_driver_event_t *event) {
  cpu_event_t *ev = event_of(event);
  (void)self;
  return cpu_stream_point_completed(ev->stream, ev->seq) ? CUBERT_STATUS_OK : CUBERT_STATUS_BUSY;
}

static cubert_status_t cpu_event_synchronize(void *self, cubert_driver_event_t *event,
                                             uint64_t timeout_ns, cubert_error_t *out_error) {
  cpu_event_t *ev = event_of(event);
  cubert_status_t status;
  uint64_t t0 = OS_TRACE_ON() ? cubert__os_trace_now() : 0;
  status = cpu_stream_wait_point(ev->stream, ev->seq, timeout_ns);
  if (t0) {
    char name[48];
    (void)snprintf(name, sizeof name, "wait event stream %u op %llu", (unsigned)ev->stream->slot,
                   (unsigned long long)ev->seq);
    trace_host(device_of(self), OS_TRACE_CAT_SYNC, name, t0, ev->stream, 0, NULL, 0);
  }
  if (status == CUBERT_STATUS_FAILED_PRECONDITION)
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0,
                            "deterministic mode: no step is runnable (deadlock)");
  return status;
}

static void cpu_event_destroy(void *self, cubert_driver_event_t *event) {
  cpu_device_t *d = device_of(self);
  cpu_event_t *ev = event_of(event);
  pthread_mutex_lock(&d->events_mutex);
  ev->next = d->free_events;
  d->free_events = ev;
  pthread_mutex_unlock(&d->events_mutex);
}

/* ---- the device ---------------------------------------------------------------------------- */

static void cpu_properties(void *self, cubert_device_properties_t *out) {
  *out = device_of(self)->properties;
}

/* CUBERT_PROFILE_SUMMARY: the table, to the log's sink. */
static void write_summary(cpu_device_t *d) {
  size_t need, len;
  char *text = NULL;
  char head[96];
  int n;
  if (!d->summary) return;
  if (!cubert_profile_summary_is_empty(d->summary)) {
    need = cubert_profile_summary_format(d->summary, NULL, 0) + 1;
    if (cubert_allocator_malloc(d->allocator, need, 0, (void **)&text, NULL) == CUBERT_STATUS_OK) {
      n = snprintf(head, sizeof head, "cubert: cpu device %u: kernel executions (CUBERT_PROFILE_SUMMARY)\n",
                   (unsigned)d->device_index);
      if (n > 0) cubert_log_sink_default(NULL, head, (size_t)n);
      len = cubert_profile_summary_format(d->summary, text, need);
      cubert_log_sink_default(NULL, text, len < need ? len : need - 1);
      cubert_allocator_free(d->allocator, text, need, 0);
    }
  }
  cubert_profile_summary_destroy(d->summary);
  d->summary = NULL;
}

static void cpu_destroy(void *self) {
  cpu_device_t *d = device_of(self);
  write_summary(d);
  pthread_mutex_destroy(&d->summary_mutex);
  OS_LOG(CUBERT_LOG_LEVEL_INFO, "cpu device %u released", (unsigned)d->device_index);
  cpu_comm_free_all(d);
  while (d->all_events) {
    cpu_event_t *ev = d->all_events;
    d->all_events = ev->all;
    cubert_allocator_free(d->allocator, ev, sizeof(*ev), 0);
  }
  cpu_helpers_destroy(d->helpers); /* every stream is gone */
  cubert__cpu_executor_destroy(d->executor);
  if (d->solo) {
    uint32_t i;
    for (i = 0; i < d->stream_count; i++) cpu_kernel_context_free(&d->solo[i].context, d->allocator);
    cubert_allocator_free(d->allocator, d->solo, d->stream_count * sizeof(cpu_solo_context_t), 64);
  }
  cpu_sim_destroy(d);
  pthread_mutex_destroy(&d->events_mutex);
  cubert_allocator_free(d->allocator, d->streams, d->stream_count * sizeof(cpu_stream_t *), 0);
  cubert_allocator_free(d->allocator, d, sizeof(*d), 0);
}

/* ---- memory of other libraries (DLPack, docs/interop.md) ---- */

/* Host memory: DLPack's kDLCPU, device 0. */
static void cpu_memory_device(void *self, int32_t *out_device_type, int32_t *out_device_id) {
  (void)self;
  *out_device_type = 1; /* kDLCPU */
  *out_device_id = 0;
}

/* Host memory is this device's memory: the pointer is the address. */
static cubert_status_t cpu_memory_import(void *self, uint64_t pointer, uint64_t size,
                                       cubert_device_ptr_t *out_address, cubert_error_t *out_error) {
  (void)self;
  if (pointer == 0 && size != 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "a NULL pointer with a size");
  *out_address = (cubert_device_ptr_t)pointer;
  return CUBERT_STATUS_OK;
}

const cubert_driver_t cpu_driver = {
    .name = "cpu",
    .abi_version = CUBERT_DRIVER_ABI_VERSION,
    .flags = CUBERT_DRIVER_HOST_ADDRESSABLE,
    .destroy = cpu_destroy,
    .properties = cpu_properties,
    .memory_alloc = cpu_memory_alloc,
    .memory_free = cpu_memory_free,
    .host_alloc = NULL, /* staging: simulated pinned memory from the server */
    .host_free = NULL,
    .copy = cpu_copy,
    .launch = cpu_launch,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .stream_errors = cpu_stream_errors,
    .event_record = cpu_event_record,
    .event_wait = cpu_event_wait,
    .event_query = cpu_event_query,
    .event_synchronize = cpu_event_synchronize,
    .event_destroy = cpu_event_destroy,
    .comm_create = cpu_comm_create,
    .comm_query = cpu_comm_query,
    .comm_destroy = cpu_comm_destroy,
    .collective = cpu_collective,
    .plan_create = cpu_plan_create,
    .plan_update = cpu_plan_update,
    .plan_launch = cpu_plan_launch,
    .plan_destroy = cpu_plan_destroy,
    .memory_device = cpu_memory_device, /* DLPack: host memory */
    .memory_import = cpu_memory_import,
};

/* Every op record must fit the stream's fixed op slot. */
typedef char cpu_launch_op_fits_[sizeof(cpu_kernel_launch_t) <= CPU_OP_PAYLOAD ? 1 : -1];
typedef char cpu_plan_op_fits_[sizeof(cpu_plan_op_t) <= CPU_OP_PAYLOAD ? 1 : -1];
/* an empty launch's fields share the op header's cache line */
typedef char cpu_launch_op_first_line_[offsetof(cpu_op_t, payload) +
                                               offsetof(cpu_kernel_launch_t, dynamic_count) <=
                                           64
                                       ? 1
                                       : -1];
typedef char cpu_copy_op_fits_[sizeof(copy_op_t) <= CPU_OP_PAYLOAD ? 1 : -1];
typedef char cpu_stream_indexes_fit_[CUBERT_STREAM_MAX_STREAMS_LIMIT + 2 <= CPU_STREAM_MAX_INDEX
                                          ? 1
                                          : -1];
typedef char cpu_free_op_fits_[sizeof(free_op_t) <= CPU_OP_PAYLOAD ? 1 : -1];
