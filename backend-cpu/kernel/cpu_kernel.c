/* SPDX-License-Identifier: MIT */
/* backend-cpu/kernel/cpu_kernel.c: running CPU kernels, shared by the CPU
 * drivers (see cpu_kernel.h). Freestanding. */
#include "kernel/cpu_kernel.h"
#include "base/fmt.h"
#include "cubert/driver/arith.h"

typedef char cpu_kernel_mode_values_match_[(CUBERT_KERNEL_MODE_CHECKED == CUBERT_EXECUTION_CHECKED &&
                                            CUBERT_KERNEL_MODE_VALIDATE ==
                                            CUBERT_EXECUTION_VALIDATE &&
                                            CUBERT_KERNEL_MODE_UNCHECKED ==
                                            CUBERT_EXECUTION_UNCHECKED &&
                                            CUBERT_KERNEL_MODE_RACECHECK ==
                                            CUBERT_EXECUTION_RACECHECK)
                                               ? 1
                                               : -1];

static cubert_status_t grid_invalid(cubert_error_t *out_error, const char *reason) {
  return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, NULL, 0, reason);
}

cubert_status_t cpu_kernel_grid(const cubert_kernel_t *kernel, cubert_dim3_t cube_count,
                                cubert_dim3_t cube_dim, const cubert_kernel_args_t *args,
                                cubert_execution_mode_t mode, cpu_kernel_grid_t *out_grid,
                                cubert_error_t *out_error) {
  uint64_t units, total;
  if (!kernel || !args) return grid_invalid(out_error, "cpu executor: NULL argument");
  if (cube_dim.x == 0 || cube_dim.y == 0 || cube_dim.z == 0)
    return grid_invalid(out_error, "cpu executor: cube dim has a zero component");
  if ((unsigned)mode > (unsigned)CUBERT_EXECUTION_RACECHECK)
    return grid_invalid(out_error, "cpu executor: unknown execution mode");
  if (args->buffer_count > CUBERT_KERNEL_MAX_BUFFERS ||
      args->scalar_count > CUBERT_KERNEL_MAX_SCALARS)
    return grid_invalid(out_error, "cpu executor: too many buffers or scalars");
  if (args->buffer_count < kernel->buffer_count || args->scalar_count < kernel->scalar_count)
    return grid_invalid(out_error, "cpu executor: fewer arguments than the kernel reads");
  if (!kernel->cpu_entry)
    return cubert_error_set(out_error, CUBERT_ERROR_COMPILATION_GENERIC, NULL, 0,
                            "cpu executor: kernel has no CPU entry point");
  units = (uint64_t)cube_dim.x * cube_dim.y; /* < 2^64 */
  if (units <= CUBERT_KERNEL_MAX_UNITS) units *= cube_dim.z; /* <= 2^42: no overflow */
  if (units > CUBERT_KERNEL_MAX_UNITS) {
    uint64_t f[2];
    f[0] = units; /* x*y alone when that already exceeds the limit */
    f[1] = CUBERT_KERNEL_MAX_UNITS;
    return cubert_error_set(out_error, CUBERT_ERROR_RESOURCE_MAX_UNIT_PER_CUBE, f, 2,
                            "cpu executor: too many units per cube");
  }
  total = (uint64_t)cube_count.x * cube_count.y;
  if (cubert_u64_mul(total, cube_count.z, &total) != CUBERT_STATUS_OK ||
      total > ((uint64_t)1 << 63)) {
    uint64_t f[1];
    f[0] = cube_count.z;
    return cubert_error_set(out_error, CUBERT_ERROR_RESOURCE_UNITS, f, 1,
                            "cpu executor: more than 2^63 cubes");
  }
  out_grid->count = cube_count;
  out_grid->dim = cube_dim;
  out_grid->units = (uint32_t)units;
  out_grid->mode = (uint32_t)mode;
  out_grid->total = total;
  out_grid->shared_bytes = ((size_t)kernel->shared_memory_bytes + 63u) & ~(size_t)63u;
  out_grid->dynamic_bytes = kernel->shared_memory_bytes;
  out_grid->plane_dim = CPU_KERNEL_PLANE_DIM;
  return CUBERT_STATUS_OK;
}

void cpu_kernel_grid_set_shared(cpu_kernel_grid_t *grid, uint32_t bytes) {
  grid->shared_bytes = ((size_t)bytes + 63u) & ~(size_t)63u;
  grid->dynamic_bytes = bytes;
}

/* ---- reports ---------------------------------------------------------------------- */

void cpu_kernel_report_reset(cubert_kernel_report_t *r) {
  r->oob_count = 0;
  r->has_violation = 0;
  r->buffer_index = 0;
  r->element_index = 0;
  r->buffer_length = 0;
  r->is_write = 0;
  r->reserved = 0;
  r->cube_pos.x = r->cube_pos.y = r->cube_pos.z = 0;
  r->cube_linear = 0;
  r->kernel_name = 0;
  r->race_count = 0;
  r->race_kind = 0;
  r->race_phase = 0;
  r->race_view = 0;
  r->race_access = 0;
  r->race_unit_a = r->race_unit_b = 0;
  r->race_cube_a = r->race_cube_b = 0;
  r->race_element = 0;
  r->race_name = 0;
}

void cpu_kernel_report_merge(cubert_kernel_report_t *total, const cubert_kernel_report_t *part) {
  total->oob_count += part->oob_count;
  total->race_count += part->race_count;
  if (part->has_violation && (!total->has_violation || part->cube_linear < total->cube_linear)) {
    total->has_violation = 1;
    total->buffer_index = part->buffer_index;
    total->element_index = part->element_index;
    total->buffer_length = part->buffer_length;
    total->is_write = part->is_write;
    total->cube_pos = part->cube_pos;
    total->cube_linear = part->cube_linear;
  }
  if (part->race_kind && (!total->race_kind || part->race_cube_b < total->race_cube_b)) {
    total->race_kind = part->race_kind;
    total->race_phase = part->race_phase;
    total->race_view = part->race_view;
    total->race_access = part->race_access;
    total->race_unit_a = part->race_unit_a;
    total->race_unit_b = part->race_unit_b;
    total->race_cube_a = part->race_cube_a;
    total->race_cube_b = part->race_cube_b;
    total->race_element = part->race_element;
    total->race_name = part->race_name;
  }
}

/* ---- contexts --------------------------------------------------------------------- */

cubert_status_t cpu_kernel_context_reserve(cpu_kernel_context_t *ctx, cubert_allocator_t allocator,
                                           size_t need) {
  void *block = 0;
  ctx->allocator = allocator;
  if (need == 0 || ctx->dynamic_capacity >= need) return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(allocator, need, 64, &block, NULL));
  cubert_allocator_free(allocator, ctx->dynamic_shared, ctx->dynamic_capacity, 64);
  ctx->dynamic_shared = (unsigned char *)block;
  ctx->dynamic_capacity = need;
  return CUBERT_STATUS_OK;
}

void cpu_kernel_context_free(cpu_kernel_context_t *ctx, cubert_allocator_t allocator) {
  cubert_allocator_free(allocator, ctx->dynamic_shared, ctx->dynamic_capacity, 64);
  ctx->dynamic_shared = 0;
  ctx->dynamic_capacity = 0;
  cubert_allocator_free(allocator, ctx->scratch, ctx->scratch_capacity, 64);
  ctx->scratch = 0;
  ctx->scratch_capacity = 0;
}

/* Grow the cubes' block to `need` bytes (the content goes: the cube runs
 * again). 0 when it cannot. */
static int scratch_grow(cpu_kernel_context_t *ctx, uint64_t need) {
  void *block = 0;
  size_t bytes;
  if (need > (uint64_t)((size_t)-1 / 2)) return 0;
  bytes = ((size_t)need + 63u) & ~(size_t)63u;
  if (bytes < 2 * ctx->scratch_capacity) bytes = 2 * ctx->scratch_capacity; /* fewer regrowths */
  if (cubert_allocator_malloc(ctx->allocator, bytes, 64, &block, NULL) != CUBERT_STATUS_OK) return 0;
  cubert_allocator_free(ctx->allocator, ctx->scratch, ctx->scratch_capacity, 64);
  ctx->scratch = (unsigned char *)block;
  ctx->scratch_capacity = bytes;
  ctx->cube.scratch = ctx->scratch;
  ctx->cube.scratch_bytes = bytes;
  return 1;
}

void cpu_kernel_context_begin(cpu_kernel_context_t *ctx, const cubert_kernel_t *kernel,
                              const cpu_kernel_grid_t *grid) {
  cubert_kernel_cube_t *cube = &ctx->cube;
  cube->count = grid->count;
  cube->dim = grid->dim;
  cube->units = grid->units;
  cube->count_linear = grid->total;
  cube->mode = grid->mode;
  cube->scratch = ctx->scratch;
  cube->scratch_bytes = ctx->scratch_capacity;
  cube->dynamic_shared = ctx->dynamic_shared;
  ctx->scratch_failed = 0;
  cube->dynamic_shared_bytes = grid->dynamic_bytes;
  cube->plane_dim = grid->plane_dim; /* race / race_note: cpu_kernel_race_begin, _end */
  (void)kernel;
  cube->report = &ctx->report;
  cube->oob_sink = ctx->oob_sink.bytes;
  cube->oob_zero = ctx->oob_zero.bytes;
}

/* What a cube starts with: uniform code, no phase yet, no storage handed out. */
static void cpu_kernel_cube_reset(cubert_kernel_cube_t *cube) {
  cube->unit = CUBERT_KERNEL_UNIFORM;
  cube->phase = 0;
  cube->unit_done = 0;
  cube->scratch_used = 0;
  cube->scratch_short = 0;
  cube->plane_scratch = 0;
}

/* Run the cube at cube->pos: again, with a grown block, when its
 * declarations did not fit (it ran no phase: it wrote nothing). 0 when the
 * block cannot grow. */
static int run_cube(cpu_kernel_context_t *ctx, cubert_kernel_cpu_fn_t entry,
                    const cubert_kernel_args_t *args) {
  cubert_kernel_cube_t *cube = &ctx->cube;
  cpu_kernel_cube_reset(cube);
  entry(args, cube);
  if (!cube->scratch_short) return 1;
  if (!scratch_grow(ctx, cube->scratch_used)) {
    ctx->scratch_failed = 1;
    return 0;
  }
  cpu_kernel_cube_reset(cube);
  entry(args, cube);
  return 1;
}

void cpu_kernel_run_range(cpu_kernel_context_t *ctx, const cubert_kernel_t *kernel,
                          const cubert_kernel_args_t *args, uint64_t start, uint64_t end) {
  cubert_kernel_cpu_fn_t entry = kernel->cpu_entry;
  cubert_kernel_cube_t *cube = &ctx->cube;
  const uint32_t cx = cube->count.x, cy = cube->count.y;
  uint64_t i, rest = start / cx;
  uint32_t x = (uint32_t)(start % cx), y = (uint32_t)(rest % cy), z = (uint32_t)(rest / cy);
  for (i = start; i < end; i++) {
    cube->pos.x = x;
    cube->pos.y = y;
    cube->pos.z = z;
    cube->pos_linear = i;
    if (!run_cube(ctx, entry, args)) return;
    if (++x == cx) {
      x = 0;
      if (++y == cy) {
        y = 0;
        z++;
      }
    }
  }
}

void cpu_kernel_run_all(cpu_kernel_context_t *ctx, const cubert_kernel_t *kernel,
                        const cubert_kernel_args_t *args, const cpu_kernel_grid_t *grid) {
  cubert_kernel_cpu_fn_t entry = kernel->cpu_entry;
  cubert_kernel_cube_t *cube = &ctx->cube;
  uint64_t linear = 0;
  uint32_t x, y, z;
  cpu_kernel_context_begin(ctx, kernel, grid);
  for (z = 0; z < grid->count.z; z++)
    for (y = 0; y < grid->count.y; y++)
      for (x = 0; x < grid->count.x; x++) {
        cube->pos.x = x;
        cube->pos.y = y;
        cube->pos.z = z;
        cube->pos_linear = linear++;
        if (!run_cube(ctx, entry, args)) return;
      }
}

/* ---- driver launches ------------------------------------------------------------------ */

cubert_status_t cpu_kernel_launch_check(const cubert_driver_launch_t *launch,
                                        cubert_error_t *out_error) {
  cubert_status_t status;
  if (launch->kernel->cpu_entry) return CUBERT_STATUS_OK;
  status = cubert_error_set(out_error, CUBERT_ERROR_COMPILATION_UNSUPPORTED_INSTRUCTION, 0, 0,
                            "kernel has no CPU entry point");
  cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_COMPILATION);
  cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  return status; /* out_error may be NULL: wrapping nothing returns OK */
}

void cpu_kernel_launch_record(const cubert_driver_launch_t *l, cpu_kernel_launch_t *out) {
  uint32_t i;
  /* an empty launch writes the first fields only */
  out->kernel = l->kernel;
  out->execution = (uint8_t)l->execution;
  out->dynamic = (uint8_t)l->dynamic;
  out->buffer_count = (uint8_t)l->buffer_count;
  out->scalar_count = (uint8_t)l->scalar_count;
  out->fault = 0;
  out->count = l->count;
  out->cube_dim = l->cube_dim;
  out->shared_memory_bytes = l->shared_memory_bytes;
  if (l->dynamic) out->dynamic_count = (const unsigned char *)(uintptr_t)l->dynamic_count;
  for (i = 0; i < l->buffer_count; i++) {
    out->buffers[i].ptr = (void *)(uintptr_t)l->buffers[i].address;
    out->buffers[i].size_bytes = l->buffers[i].size;
  }
  if (l->scalar_count)
    __builtin_memcpy(out->scalars, l->scalars, l->scalar_count * sizeof(uint64_t));
}

static cubert_status_t limit_error(cubert_error_t *e, uint64_t requested, uint64_t max,
                                   const char *what) {
  uint64_t f[2];
  f[0] = requested;
  f[1] = max;
  cubert_error_set(e, CUBERT_ERROR_RESOURCE_UNITS, f, 2, what);
  cubert_error_wrap(e, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
  return cubert_error_wrap(e, CUBERT_ERROR_SERVER_LAUNCH);
}

cubert_status_t cpu_kernel_launch_count(const cpu_kernel_launch_t *l,
                                        const cubert_hardware_properties_t *hw,
                                        cubert_dim3_t *out_count, cubert_error_t *out_error) {
  cubert_dim3_t d;
  if (!l->dynamic) {
    *out_count = l->count;
    return CUBERT_STATUS_OK;
  }
  __builtin_memcpy(&d.x, l->dynamic_count, 4);
  __builtin_memcpy(&d.y, l->dynamic_count + 4, 4);
  __builtin_memcpy(&d.z, l->dynamic_count + 8, 4);
  if (d.x > hw->max_cube_count.x)
    return limit_error(out_error, d.x, hw->max_cube_count.x,
                       "dynamic cube count above the device's maximum");
  if (d.y > hw->max_cube_count.y)
    return limit_error(out_error, d.y, hw->max_cube_count.y,
                       "dynamic cube count above the device's maximum");
  if (d.z > hw->max_cube_count.z)
    return limit_error(out_error, d.z, hw->max_cube_count.z,
                       "dynamic cube count above the device's maximum");
  *out_count = d;
  return CUBERT_STATUS_OK;
}

void cpu_kernel_launch_args(const cpu_kernel_launch_t *l, cubert_kernel_args_t *args) {
  uint32_t i;
  /* only the slots below the counts are read (the grid check compares the
   * counts with the kernel's): no need to zero the rest */
  for (i = 0; i < l->buffer_count; i++) args->buffers[i] = l->buffers[i];
  args->buffer_count = l->buffer_count;
  for (i = 0; i < l->scalar_count; i++) args->scalars[i] = l->scalars[i];
  args->scalar_count = l->scalar_count;
}

/* "kernel <name> failed on stream <stream>: <what>" */
static void kernel_failed(char *text, size_t size, const cubert_kernel_t *k, uint32_t stream,
                          const char *what) {
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, text, size);
  cubert__fmt_append_str(&f, "kernel ");
  cubert__fmt_append_str(&f, k->name ? k->name : "(unnamed)");
  cubert__fmt_append_str(&f, " failed on stream ");
  cubert__fmt_append_u64(&f, stream);
  cubert__fmt_append_str(&f, ": ");
  cubert__fmt_append_str(&f, what);
}

cubert_status_t cpu_kernel_launch_report(const cpu_kernel_launch_t *l,
                                         const cubert_kernel_report_t *r, uint32_t stream,
                                         cubert_error_t *out_error) {
  uint64_t f[4];
  char text[CUBERT_ERROR_REASON_SIZE], race[CUBERT_ERROR_REASON_SIZE];
  /* RACECHECK's reports; in VALIDATE the one kind it checks too (a unit that
   * went on after CUBERT_UNIT_DONE, cubert_kernel_after_unit_done_) */
  if ((l->execution == (uint8_t)CUBERT_EXECUTION_RACECHECK ||
       (l->execution == (uint8_t)CUBERT_EXECUTION_VALIDATE &&
        r->race_kind == CUBERT_KERNEL_RACE_UNIT_DONE)) &&
      !r->has_violation && r->race_kind) {
    f[0] = r->race_kind;
    f[1] = r->race_view;
    f[2] = r->race_element;
    f[3] = r->race_phase;
    cpu_kernel_race_text(r, race, sizeof race);
    kernel_failed(text, sizeof text, l->kernel, stream, race);
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 4, text);
  }
  if ((l->execution != (uint8_t)CUBERT_EXECUTION_VALIDATE &&
       l->execution != (uint8_t)CUBERT_EXECUTION_RACECHECK) ||
      !r->has_violation)
    return CUBERT_STATUS_OK;
  f[0] = r->buffer_index;
  f[1] = r->element_index;
  f[2] = r->buffer_length;
  f[3] = r->is_write;
  kernel_failed(text, sizeof text, l->kernel, stream,
                r->is_write ? "out-of-bounds write" : "out-of-bounds read");
  return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 4, text);
}

/* ---- test-only run-time faults --------------------------------------------------------- */

void cpu_fault_plan_initialize(cpu_fault_plan_t *p, const cubert_server_faults_t *faults) {
  size_t n = 0;
  __builtin_memset(p, 0, sizeof(*p));
  if (!faults) return;
  p->fail_launch = faults->fail_launch;
  p->fail_copy = faults->fail_copy;
  if (faults->fail_kernel) {
    p->has_kernel = 1;
    while (n + 1 < sizeof p->kernel && faults->fail_kernel[n]) {
      p->kernel[n] = faults->fail_kernel[n];
      n++;
    }
    p->kernel[n] = 0;
  }
}

static int name_is(const char *name, const char *want) {
  size_t i;
  if (!name) return 0;
  for (i = 0; i + 1 < CPU_FAULT_KERNEL_NAME; i++) {
    if (name[i] != want[i]) return 0;
    if (!name[i]) return 1;
  }
  return want[i] == 0; /* a longer name matches its truncated copy */
}

uint32_t cpu_fault_plan_launch_counted(cpu_fault_plan_t *p, const cubert_kernel_t *kernel) {
  if (p->has_kernel && !name_is(kernel->name, p->kernel)) return 0;
  if (!p->fail_launch) return 1; /* every launch of that kernel */
  if (p->launches_seen < p->fail_launch) p->launches_seen++;
  else return 0;
  return p->launches_seen == p->fail_launch;
}

cubert_status_t cpu_fault_launch_error(const cubert_kernel_t *kernel, uint32_t stream,
                                       cubert_error_t *out_error) {
  char text[CUBERT_ERROR_REASON_SIZE];
  kernel_failed(text, sizeof text, kernel, stream, "injected fault");
  cubert_error_set(out_error, CUBERT_ERROR_LAUNCH_UNKNOWN, 0, 0, text);
  cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  return CUBERT_STATUS_LAUNCH_FAILED;
}

cubert_status_t cpu_fault_copy_error(uint32_t stream, cubert_error_t *out_error) {
  char text[CUBERT_ERROR_REASON_SIZE];
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, text, sizeof text);
  cubert__fmt_append_str(&f, "copy failed on stream ");
  cubert__fmt_append_u64(&f, stream);
  cubert__fmt_append_str(&f, ": injected fault");
  cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, 0, 0, text);
  cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_IO);
  return CUBERT_STATUS_IO_FAILED;
}

/* ---- failures carried across streams ----------------------------------------------------- */

void cpu_fault_log_add(cpu_fault_log_t *log, uint64_t seq, uint32_t origin, uint64_t origin_seq,
                       const cubert_error_t *error) {
  cpu_fault_entry_t *e;
  if (!log->capacity) return;
  e = &log->entries[log->total % log->capacity];
  e->seq = seq;
  e->origin = origin;
  e->origin_seq = origin_seq;
  e->error = *error;
  log->total++;
}

uint32_t cpu_fault_log_next(const cpu_fault_log_t *log, uint64_t upto, uint32_t self,
                            uint64_t *marks, uint32_t mark_count, cpu_fault_entry_t *out) {
  uint64_t i = log->total > log->capacity ? log->total - log->capacity : 0;
  for (; i < log->total; i++) { /* oldest first */
    const cpu_fault_entry_t *e = &log->entries[i % log->capacity];
    if (e->seq > upto || e->origin == self || e->origin >= mark_count ||
        e->origin_seq <= marks[e->origin])
      continue;
    marks[e->origin] = e->origin_seq;
    *out = *e;
    return 1;
  }
  return 0;
}
