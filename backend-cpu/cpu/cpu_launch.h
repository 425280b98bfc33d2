/* backend-cpu/cpu/cpu_launch.h: kernel launches on the CPU server (not installed). */
#ifndef CUBERT_CPU_LAUNCH_H
#define CUBERT_CPU_LAUNCH_H

#include "cpu/cpu_server.h"

typedef struct cpu_launch_buffer_t {
  unsigned char *ptr;
  uint64_t size;
} cpu_launch_buffer_t;

/* The payload of a launch op (fits CPU_OP_PAYLOAD). */
typedef struct cpu_launch_op_t {
  /* What every launch writes: with the 32-byte op header these share one
   * cache line of the ring slot, which the worker reads on another core. */
  const cubert_kernel_t *kernel; /* NULL: the launch was cancelled */
  uint8_t execution;             /* cubert_execution_mode_t */
  uint8_t count_kind;            /* cubert_cube_count_kind_t */
  uint8_t buffer_count;          /* <= CUBERT_KERNEL_MAX_BUFFERS */
  uint8_t scalar_count;          /* <= CUBERT_KERNEL_MAX_SCALARS */
  uint8_t pinned;                /* 1: pins holds the launch's bindings */
  uint8_t reserved_[3];
  cubert_dim3_t count_dims; /* STATIC counts */
  /* Written only when used. */
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
cubert_status_t cpu_launch_execute(cpu_server_t *server, const cpu_launch_op_t *op,
                                   cubert_error_t *error);
cubert_status_t cpu_launch_executor_create(cpu_server_t *server, uint32_t workers,
                                           cubert_error_t *out_error);
void cpu_launch_executor_destroy(cpu_server_t *server);

#endif
