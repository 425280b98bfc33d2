/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/kernel/cpu_kernel.h: running CPU kernels (the dialect of
 * cubert/kernel.h), shared by the two CPU drivers: the threaded one's worker
 * pool (backend-cpu/cpu/cpu_executor.c) and the inline driver
 * (backend-cpu/inline). Freestanding (the core's rules: no libc, no OS,
 * memory from the allocator given), checked by `make check-freestanding`.
 *
 * A thread that runs cubes owns a cpu_kernel_context_t: the cube record the
 * dialect's macros read, its own dynamic shared block (two cubes running at
 * once never share a byte, unlike CubeCL's CPU driver, cubecl#1575) and
 * its own bounds-check report, merged after the launch.
 */
#ifndef CUBERT_CPU_KERNEL_H
#define CUBERT_CPU_KERNEL_H

#include "cubert/driver/driver.h"
#include "server/server_faults.h"
#include "cubert/kernel.h"

/* Scratch an out-of-bounds access reads (zeros) or writes (dropped). */
typedef union cpu_kernel_scratch_t {
  unsigned char bytes[CUBERT_KERNEL_MAX_ELEMENT_BYTES];
  uint64_t u64;
  double f64;
  long double f128;
  void *ptr;
} cpu_kernel_scratch_t;

/* What one thread needs to run cubes. Zero it before first use. */
typedef struct cpu_kernel_context_t {
  cubert_kernel_cube_t cube;
  cubert_kernel_report_t report;
  unsigned char *dynamic_shared; /* this thread's dynamic shared block */
  size_t dynamic_capacity;
  unsigned char *pending;        /* a larger block being prepared */
  cpu_kernel_scratch_t oob_sink; /* written by dropped stores, never read */
  cpu_kernel_scratch_t oob_zero; /* read by out-of-bounds loads, never written */
  /* The cubes' shared arrays and unit variables (kernel.h: cube.scratch),
   * grown by the runner to what a kernel declares (64-aligned). */
  unsigned char *scratch;
  size_t scratch_capacity;
  cubert_allocator_t allocator; /* of `scratch` (set by cpu_kernel_context_reserve) */
  uint32_t scratch_failed;      /* a cube could not get its block: it did not run */
} cpu_kernel_context_t;

/* One launch's grid, checked (cpu_kernel_grid). */
typedef struct cpu_kernel_grid_t {
  cubert_dim3_t count;
  cubert_dim3_t dim;
  uint32_t units;
  uint32_t mode; /* CUBERT_KERNEL_MODE_* */
  uint64_t total; /* cubes */
  size_t shared_bytes; /* dynamic shared memory per cube, rounded up to 64 */
  uint64_t dynamic_bytes; /* CUBERT_SHARED_DYNAMIC_BYTES: the kernel's, or the launch's
                             (cpu_kernel_grid_set_shared) */
  uint32_t plane_dim; /* PLANE_DIM: CPU_KERNEL_PLANE_DIM unless the caller sets it */
} cpu_kernel_grid_t;

/* Units per plane by default (a warp). */
#define CPU_KERNEL_PLANE_DIM 32u
/* 1 when n is a plane size the CPU drivers accept (a power of two, 1..64). */
#define CPU_KERNEL_PLANE_DIM_VALID(n) ((n) >= 1u && (n) <= 64u && ((n) & ((n) - 1u)) == 0u)

/* The kernel race checker's state for one RACECHECK launch (cpu_race.c). */
typedef struct cpu_kernel_race_t {
  cubert_allocator_t allocator;
  struct race_cell_t *cells;
  size_t capacity; /* a power of two, or 0 */
  size_t used;
  int failed;      /* the table could not grow: checking stopped */
} cpu_kernel_race_t;

/* Start checking the launch `ctx` is about to run (its cubes must run in
 * linear order on this thread: cpu_kernel_run_all). RESOURCE_EXHAUSTED when
 * the first table cannot be allocated (nothing to end then). */
cubert_status_t cpu_kernel_race_begin(cpu_kernel_context_t *ctx, cpu_kernel_race_t *race,
                                      cubert_allocator_t allocator);
/* Stop checking and free the table; RESOURCE_EXHAUSTED when it could not
 * grow during the launch (the reports are incomplete). */
cubert_status_t cpu_kernel_race_end(cpu_kernel_context_t *ctx, cpu_kernel_race_t *race);

/* Check a run of `kernel` over cube_count x cube_dim with `args` in `mode`
 * and fill *out_grid. Errors as cubert__cpu_executor_run documents
 * (cpu_executor.h): SERVER_VALIDATION (INVALID_ARGUMENT) for bad arguments,
 * COMPILATION_GENERIC for a kernel without a CPU entry, LIMIT_EXCEEDED for
 * too many units or cubes. total is 0 for a count with a zero component. */
cubert_status_t cpu_kernel_grid(const cubert_kernel_t *kernel, cubert_dim3_t cube_count,
                                cubert_dim3_t cube_dim, const cubert_kernel_args_t *args,
                                cubert_execution_mode_t mode, cpu_kernel_grid_t *out_grid,
                                cubert_error_t *out_error);

/* Give the grid `bytes` of dynamic shared memory per cube (a launch-time
 * size) instead of the kernel descriptor's. */
void cpu_kernel_grid_set_shared(cpu_kernel_grid_t *grid, uint32_t bytes);

/* Zero a report. */
void cpu_kernel_report_reset(cubert_kernel_report_t *report);
/* Add `part` to `total`: counts summed, the violation of the lowest cube kept. */
void cpu_kernel_report_merge(cubert_kernel_report_t *total, const cubert_kernel_report_t *part);

/* Make the context's dynamic shared block at least `need` bytes (64-aligned
 * from `allocator`, which the context keeps for its cubes' block too).
 * RESOURCE_EXHAUSTED leaves it unchanged. */
cubert_status_t cpu_kernel_context_reserve(cpu_kernel_context_t *ctx, cubert_allocator_t allocator,
                                           size_t need);
/* Free the context's blocks. */
void cpu_kernel_context_free(cpu_kernel_context_t *ctx, cubert_allocator_t allocator);

/* Point the context's cube record at a launch (reset its report first). */
void cpu_kernel_context_begin(cpu_kernel_context_t *ctx, const cubert_kernel_t *kernel,
                              const cpu_kernel_grid_t *grid);
/* Run the linear cubes [start, end) (x fastest, then y, then z). A cube
 * whose shared arrays and unit variables do not fit the context's block runs
 * again once the block has grown; when it cannot grow, scratch_failed is set
 * and the cubes left do not run (the caller fails the launch:
 * RESOURCE_EXHAUSTED). */
void cpu_kernel_run_range(cpu_kernel_context_t *ctx, const cubert_kernel_t *kernel,
                          const cubert_kernel_args_t *args, uint64_t start, uint64_t end);
/* Run every cube in linear order on this thread (begin included). */
void cpu_kernel_run_all(cpu_kernel_context_t *ctx, const cubert_kernel_t *kernel,
                        const cubert_kernel_args_t *args, const cpu_kernel_grid_t *grid);

/* ---- a driver launch (cubert_driver_launch_t) on a CPU driver ---- */

/* What a CPU driver keeps of a launch until it runs (plain data). */
typedef struct cpu_kernel_launch_t {
  const cubert_kernel_t *kernel;
  uint8_t execution;    /* cubert_execution_mode_t */
  uint8_t dynamic;      /* 1: the count is read from dynamic_count */
  uint8_t buffer_count; /* <= CUBERT_KERNEL_MAX_BUFFERS */
  uint8_t scalar_count; /* <= CUBERT_KERNEL_MAX_SCALARS */
  uint32_t fault;       /* test only: 1 fails the launch when it runs (cpu_fault_plan_t) */
  cubert_dim3_t count;
  const unsigned char *dynamic_count; /* 12 bytes: u32 x, y, z */
  cubert_dim3_t cube_dim;       /* the launch's (cubert_driver_launch_t) */
  uint32_t shared_memory_bytes; /* the launch's dynamic shared bytes per cube */
  cubert_kernel_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  uint64_t scalars[CUBERT_KERNEL_MAX_SCALARS];
} cpu_kernel_launch_t;

/* Refuse a launch a CPU driver cannot run: no CPU entry point
 * (COMPILATION_FAILED, kinds COMPILATION_UNSUPPORTED_INSTRUCTION <
 * LAUNCH_COMPILATION < SERVER_LAUNCH). */
cubert_status_t cpu_kernel_launch_check(const cubert_driver_launch_t *launch,
                                        cubert_error_t *out_error);
/* Copy what the launch needs into *out (only the used slots are written). */
void cpu_kernel_launch_record(const cubert_driver_launch_t *launch, cpu_kernel_launch_t *out);
/* The cube count to run: the static one, or the dynamic one read now and
 * checked against the device's limits (LIMIT_EXCEEDED, kinds
 * RESOURCE_UNITS < LAUNCH_TOO_MANY_RESOURCES < SERVER_LAUNCH). */
cubert_status_t cpu_kernel_launch_count(const cpu_kernel_launch_t *launch,
                                        const cubert_hardware_properties_t *hardware,
                                        cubert_dim3_t *out_count, cubert_error_t *out_error);
/* The kernel arguments of a launch. */
void cpu_kernel_launch_args(const cpu_kernel_launch_t *launch, cubert_kernel_args_t *out_args);
/* A VALIDATE launch's first violation as a stream error (SERVER_VALIDATION,
 * fields {buffer slot, element index, buffer length, is_write}, reason
 * "kernel <name> failed on stream <stream>: out-of-bounds <read|write>");
 * OK when there was none. A RACECHECK launch: the same for an out-of-bounds
 * access, else its first race report (cpu_kernel_race_text: fields {kind,
 * view, element, phase}; the reason names both units or cubes). `stream` is the driver's stream index (the server's
 * slot: stream id mod max_streams). */
cubert_status_t cpu_kernel_launch_report(const cpu_kernel_launch_t *launch,
                                         const cubert_kernel_report_t *report, uint32_t stream,
                                         cubert_error_t *out_error);

/* The reason text of a race report (no prefix), e.g. "race: units 3 and 4
 * of cube 0 in phase 2: write/read of shared sums[3] (no barrier between)". */
void cpu_kernel_race_text(const cubert_kernel_report_t *report, char *text, size_t size);

/* ---- test-only run-time faults (core/server/server_faults.h) ----------------------------
 * Which launches and copies fail while they run: decided at submit (in
 * submit order, with the device held), carried by the op, raised when it
 * runs. */

#define CPU_FAULT_KERNEL_NAME 64

typedef struct cpu_fault_plan_t {
  uint32_t fail_launch, fail_copy;   /* cubert_server_faults_t's */
  uint32_t launches_seen, copies_seen;
  uint32_t has_kernel;               /* fail_kernel was given */
  char kernel[CPU_FAULT_KERNEL_NAME]; /* its copy (truncated) */
} cpu_fault_plan_t;

/* From the test's faults (NULL: none). */
void cpu_fault_plan_initialize(cpu_fault_plan_t *plan, const cubert_server_faults_t *faults);
/* At submit: 1 when this launch of `kernel` must fail when it runs (one
 * branch when no fault was asked for). */
uint32_t cpu_fault_plan_launch_counted(cpu_fault_plan_t *plan, const cubert_kernel_t *kernel);
static inline uint32_t cpu_fault_plan_launch(cpu_fault_plan_t *plan, const cubert_kernel_t *kernel) {
  return (plan->fail_launch | plan->has_kernel) ? cpu_fault_plan_launch_counted(plan, kernel) : 0u;
}
/* At submit: 1 when this copy must fail when it runs. */
static inline uint32_t cpu_fault_plan_copy(cpu_fault_plan_t *plan) {
  if (!plan->fail_copy || plan->copies_seen >= plan->fail_copy) return 0;
  return ++plan->copies_seen == plan->fail_copy;
}
/* The stream errors of an injected failure (they return its status):
 * SERVER_LAUNCH > LAUNCH_UNKNOWN "kernel <name> failed on stream <stream>:
 * injected fault"; SERVER_IO > IO_UNKNOWN "copy failed on stream <stream>:
 * injected fault". */
cubert_status_t cpu_fault_launch_error(const cubert_kernel_t *kernel, uint32_t stream,
                                       cubert_error_t *out_error);
cubert_status_t cpu_fault_copy_error(uint32_t stream, cubert_error_t *out_error);

/* ---- failures carried across streams (both CPU drivers) --------------------------------
 * Each regular stream keeps a log of the last failures of work that ran on
 * it, its own and those it inherited: (its position on this stream, the
 * stream where the failure happened and its position there, the record).
 * A stream that waits on a point of another inherits, once, each failure
 * logged there at or before that point: marks[origin] is the position (on
 * the origin stream) of the last failure of that origin it inherited, so a
 * failure reaching it along two paths, or coming back to where it happened,
 * is not taken twice. No locking here: the threaded driver holds the
 * stream's mutex. */

typedef struct cpu_fault_entry_t {
  uint64_t seq;        /* the position on the stream whose log holds it */
  uint64_t origin_seq; /* its position on the stream where it happened */
  uint32_t origin;     /* that stream's index */
  cubert_error_t error;
} cpu_fault_entry_t;

typedef struct cpu_fault_log_t {
  cpu_fault_entry_t *entries; /* capacity entries, the owner's storage */
  uint32_t capacity;
  uint64_t total;             /* failures ever added (the newest: (total - 1) % capacity) */
} cpu_fault_log_t;

/* Add a failure (the oldest entry goes when the log is full). */
void cpu_fault_log_add(cpu_fault_log_t *log, uint64_t seq, uint32_t origin, uint64_t origin_seq,
                       const cubert_error_t *error);
/* The oldest failure of `log` at or before `upto` that a waiter with index
 * `self` and marks[0..mark_count) has not inherited (origin != self,
 * origin_seq above its mark): copied to *out, its mark raised; 0 when none. */
uint32_t cpu_fault_log_next(const cpu_fault_log_t *log, uint64_t upto, uint32_t self,
                            uint64_t *marks, uint32_t mark_count, cpu_fault_entry_t *out);

#endif /* CUBERT_CPU_KERNEL_H */
