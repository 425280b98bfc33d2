/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_executor.h: the CPU kernel executor. Runs a kernel written
 * in the dialect of cubert/kernel.h over a cube grid on a persistent worker
 * pool.
 *
 * - Workers are created once (cubert__cpu_executor_create) and sleep between
 *   launches (after spinning briefly, so back-to-back launches do not pay a
 *   wake-up; the spin adapts to the machine: it stops as soon as the
 *   thread was descheduled, cubert__os_backoff_wait in os/os_thread.h). A launch creates no thread and, in steady state, allocates
 *   nothing: the per-worker dynamic shared blocks only grow when a kernel asks
 *   for more than any kernel before it.
 * - The linear cube indices (x fastest, then y, then z) are cut into one
 *   contiguous range per participating thread (the calling thread takes
 *   part), like OpenMP's static schedule, so a worker meets the same data
 *   launch after launch; each thread takes its range in chunks, then steals
 *   chunks from the other ranges until every cube ran.
 *   A launch with fewer cubes than threads wakes only as many workers as it
 *   can use (a 1-cube launch runs on the caller alone).
 * - Each running cube has its own shared memory: each thread owns a block
 *   holding the static CUBERT_SHARED arrays, the CUBERT_UNIT_VAR copies and
 *   the dynamic shared memory of the cube it runs, so two cubes running at
 *   the same time never share a byte (CubeCL's CPU driver aliased them,
 *   cubecl#1575).
 * - n_workers == 0: everything runs on the calling thread, cubes in linear
 *   order (deterministic).
 */
#ifndef CUBERT_CPU_EXECUTOR_H
#define CUBERT_CPU_EXECUTOR_H

#include "cubert/cubert.h"
#include "cubert/kernel.h"

typedef struct cubert_cpu_executor_t cubert_cpu_executor_t;

/* Most worker threads an executor accepts. */
#define CUBERT_CPU_EXECUTOR_MAX_WORKERS 1024
/* Worker stack size (kernels' locals; shared arrays and unit variables are
 * in the thread's block, not on the stack). */
#define CUBERT_CPU_EXECUTOR_STACK_BYTES ((size_t)8 << 20)

/* Create an executor with n_workers worker threads (0: run on the caller
 * only); the caller of run is one more thread. The executor keeps
 * `allocator` and frees everything with it.
 * Returns INVALID_ARGUMENT (NULL out_executor, n_workers >
 * CUBERT_CPU_EXECUTOR_MAX_WORKERS), RESOURCE_EXHAUSTED (the allocator failed
 * or a thread could not be started; kind HOST_OUT_OF_MEMORY), INTERNAL
 * (another thread-start failure). On failure nothing is left behind (started
 * workers are stopped and joined). Thread-safe; blocks while starting
 * threads. */
cubert_status_t cubert__cpu_executor_create(cubert_allocator_t allocator, uint32_t n_workers,
                                            cubert_cpu_executor_t **out_executor,
                                            cubert_error_t *out_error);

/* Stop and join the workers and free the executor. NULL is a no-op. Must not
 * be called while a run is in progress or from a kernel. Blocks. */
void cubert__cpu_executor_destroy(cubert_cpu_executor_t *executor);

/* Number of worker threads (not counting the caller). */
uint32_t cubert__cpu_executor_worker_count(const cubert_cpu_executor_t *executor);
/* PLANE_DIM of the kernels it runs from now on (cubert/kernel_plane.h): a
 * power of two from 1 to 64; another value is ignored. Default 32. Not
 * thread-safe against a run. */
void cubert__cpu_executor_set_plane_dim(cubert_cpu_executor_t *executor, uint32_t plane_dim);
/* Timeline trace (cubert/trace.h): record each pool worker's share of a
 * kernel on track OS_TRACE_TID_WORKER + worker of device `device_index`. */
void cubert__cpu_executor_set_trace_device(cubert_cpu_executor_t *executor, uint32_t device_index);

/* Run `kernel->cpu_entry` for every cube of the grid `cube_count` with
 * `cube_dim` units per cube, and return when every cube has finished.
 *   args    borrowed for the call; buffer pointers are host pointers;
 *   mode    how the dialect's accessors check indices (cubert/kernel.h);
 *   out_report (may be NULL)  OOB count and, in VALIDATE mode, the first
 *           violation (lowest linear cube; same for every worker count); its
 *           kernel_name is kernel->name. Zeroed for a launch with no cube.
 *           RACECHECK: as VALIDATE plus the race checker's count and first
 *           report (cubert/kernel_race.h); the cubes then run in linear
 *           order on the calling thread.
 * A cube_count with a zero component runs nothing and returns OK.
 * Errors (nothing runs, executor unchanged):
 *   INVALID_ARGUMENT  NULL executor/kernel/args; a zero cube_dim component;
 *                     mode not a cubert_execution_mode_t; args->buffer_count >
 *                     CUBERT_KERNEL_MAX_BUFFERS or scalar_count >
 *                     CUBERT_KERNEL_MAX_SCALARS; fewer buffers or scalars
 *                     than kernel->buffer_count / scalar_count
 *                     (kind SERVER_VALIDATION);
 *   COMPILATION_FAILED  kernel->cpu_entry is NULL: no CPU build of the
 *                     kernel (kind COMPILATION_GENERIC);
 *   LIMIT_EXCEEDED    more than CUBERT_KERNEL_MAX_UNITS units per cube (kind
 *                     RESOURCE_MAX_UNIT_PER_CUBE: requested, max), or a grid
 *                     of more than 2^63 cubes (kind RESOURCE_UNITS);
 *   RESOURCE_EXHAUSTED  growing the cubes' blocks (shared memory, unit
 *                     variables) failed, or RACECHECK's shadow table (its
 *                     reports are then incomplete; kind HOST_OUT_OF_MEMORY).
 * Thread-safe: concurrent runs on one executor are serialized (each uses the
 * whole pool). Blocks. Must not be called from inside a kernel. */
cubert_status_t cubert__cpu_executor_run(cubert_cpu_executor_t *executor,
                                         const cubert_kernel_t *kernel, cubert_dim3_t cube_count,
                                         cubert_dim3_t cube_dim, const cubert_kernel_args_t *args,
                                         cubert_execution_mode_t mode,
                                         cubert_kernel_report_t *out_report,
                                         cubert_error_t *out_error);
/* The same with `shared_memory_bytes` of dynamic shared memory per cube (a
 * launch-time size) instead of kernel->shared_memory_bytes. */
cubert_status_t cubert__cpu_executor_run_shared(cubert_cpu_executor_t *executor,
                                                const cubert_kernel_t *kernel,
                                                cubert_dim3_t cube_count, cubert_dim3_t cube_dim,
                                                uint32_t shared_memory_bytes,
                                                const cubert_kernel_args_t *args,
                                                cubert_execution_mode_t mode,
                                                cubert_kernel_report_t *out_report,
                                                cubert_error_t *out_error);

#endif /* CUBERT_CPU_EXECUTOR_H */
