/* backend-cpu/cpu_launch.h: kernel launches on the CPU server (not installed). */
#ifndef CUBERT_CPU_LAUNCH_H
#define CUBERT_CPU_LAUNCH_H

#include "cpu_server.h"

typedef struct cpu_launch_buffer_t {
  unsigned char *ptr;
  uint64_t size;
} cpu_launch_buffer_t;

/* The payload of a launch op (fits CPU_OP_PAYLOAD). */
typedef struct cpu_launch_op_t {
  /* The fields every launch writes come first, so an empty launch touches
   * few cache lines of the ring slot (the worker reads them on another core). */
  cpu_server_t *server;
  const cubert_kernel_t *kernel; /* NULL: the launch was cancelled */
  cubert_execution_mode_t execution;
  uint32_t buffer_count;
  uint32_t scalar_count;
  uint32_t count_kind;          /* cubert_cube_count_kind_t */
  cubert_dim3_t count_dims;     /* STATIC counts */
  unsigned char *dynamic_count; /* 12 bytes: u32 x, y, z (DYNAMIC counts) */
  cpu_pins_t pins;
  cpu_launch_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  uint64_t scalars[CUBERT_KERNEL_MAX_SCALARS];
} cpu_launch_op_t;

/* Check a launch against the device before anything is enqueued. Argument
 * errors are returned; resource-limit errors are queued on `stream` as
 * Launch(TooManyResources(...)) (spec 11.14) and *out_queued is set. */
cubert_status_t cpu_launch_validate(cpu_server_t *server, const cubert_kernel_t *kernel,
                                    const cubert_cube_count_t *count,
                                    const cubert_launch_arguments_t *args, bool *out_queued_error,
                                    cubert_error_t *out_error);
/* Run on the stream worker. */
cubert_status_t cpu_launch_execute(cpu_launch_op_t *op, cubert_error_t *error);
cubert_status_t cpu_launch_executor_create(cpu_server_t *server, uint32_t workers,
                                           cubert_error_t *out_error);
void cpu_launch_executor_destroy(cpu_server_t *server);

#endif
