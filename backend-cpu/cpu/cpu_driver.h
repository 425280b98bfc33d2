/* SPDX-License-Identifier: MIT */
/* backend-cpu/cpu/cpu_driver.h: the CPU driver's state (not installed).
 *
 * The CPU driver is the device under the server (cubert/driver/server.h):
 * streams are cpu_stream_t rings run by one worker thread each (threaded
 * mode) or by the step loop of a waiting host thread (deterministic mode,
 * cpu_sim.c); kernels run on the executor's worker pool; device memory is
 * host memory from the allocator; an event is a point (stream, sequence).
 * Include order: cpu_stream.h, cpu_executor.h, then this. */
#ifndef CUBERT_CPU_DRIVER_H
#define CUBERT_CPU_DRIVER_H

#include <pthread.h>

#include "cubert/driver/server.h"
#include "cubert/cpu.h"
#include "cubert/sim.h"
#include "cpu/cpu_executor.h"
#include "cpu/cpu_helpers.h"
#include "cpu/cpu_stream.h"
#include "kernel/cpu_kernel.h"

typedef struct cpu_event_t cpu_event_t;
typedef struct cpu_comm_t cpu_comm_t;

/* A stream's own kernel context on cache lines of its own (its worker writes
 * the cube record and the report of every launch it runs). */
typedef union cpu_solo_context_t {
  cpu_kernel_context_t context;
  unsigned char lines_[((sizeof(cpu_kernel_context_t) + 63u) / 64u) * 64u];
} cpu_solo_context_t;

typedef struct cpu_device_t {
  cubert_allocator_t allocator;
  cubert_device_properties_t properties;
  uint32_t device_index;
  uint32_t stream_count;  /* max_streams + 2: regular, GC, communication */
  cpu_stream_t **streams; /* by index, NULL until created */
  cubert_cpu_executor_t *executor;
  /* threaded mode: the stream helpers (cpu_helpers.h) that run the ops of
   * streams whose worker sleeps; NULL: none (options.stream_helpers NONE,
   * deterministic mode) */
  cpu_helpers_t *helpers;
  /* events: a free list, and every event made (freed at destroy) */
  pthread_mutex_t events_mutex;
  cpu_event_t *free_events;
  cpu_event_t *all_events;
  /* collectives (cpu_comm.c) */
  uint64_t collective_timeout_ns;
  cpu_comm_t *comms; /* communicators left but not yet gone (leave at destroy) */
  /* deterministic mode (cpu_sim.c); sim_mutex serializes the step loop */
  int deterministic;
  pthread_mutex_t sim_mutex;
  cubert_sim_chooser_t sim_own; /* the built-in chooser */
  cubert_sim_chooser_t *sim;    /* the active chooser (sim_own or attached) */
  uint32_t *sim_log;            /* sim_own's log */
  size_t sim_log_capacity;
  uint32_t *sim_ids;            /* stream_count step identities */
  uint64_t *sim_seqs;           /* their sequence numbers */
  uint64_t sim_deadlocks;
  /* test-only run-time faults (core/server/server_faults.h), decided at submit */
  cpu_fault_plan_t faults;
  /* threaded mode: one kernel context per stream (stream_count), where a
   * one-cube launch runs on its stream's worker without the executor's run
   * lock, so small launches on different streams do not serialize (issue 27);
   * NULL in deterministic mode (every launch goes through the executor) */
  cpu_solo_context_t *solo; /* 64-byte aligned */
  uint32_t plane_dim; /* options.plane_dim (0: the kernels' default) */
  /* options.profile_summary (cpu_client.c): executions by kernel name,
   * written to the log's sink at destroy; NULL: off */
  cubert_profile_summary_t *summary;
  pthread_mutex_t summary_mutex;
} cpu_device_t;

/* The CPU driver's table (cpu_driver.c). */
extern const cubert_driver_t cpu_driver;

/* ---- cpu_driver.c ---- */
/* The device of a client made by cubert_cpu_client_create. NOT_FOUND when
 * it is another driver's; INVALID_ARGUMENT for NULL. */
cubert_status_t cpu_device_of(cubert_client_t *client, cpu_device_t **out_device);
void cpu_fill_properties(const cubert_cpu_options_t *options, cubert_device_properties_t *out);
/* The CPUs this process may run on: its affinity mask on Linux (taskset,
 * a cgroup's cpuset), else the online CPUs; at least 1. */
uint32_t cpu_usable_cpus(void);
/* Usable CPUs from which a device has a stream helper by default. */
#define CPU_STREAM_HELPERS_AUTO_CPUS 16u
/* cubert_cpu_options_t.stream_helpers when left at 0 (and no variable):
 * one helper with CPU_STREAM_HELPERS_AUTO_CPUS usable CPUs or more (64
 * streams from one thread 7-10x faster there, 8 threads on their own
 * streams within 10%: docs/benchmarks.md, "Stream helpers"), else
 * CUBERT_CPU_STREAM_HELPERS_NONE (an awake helper takes a core the
 * workers and the caller need on a small machine). */
uint32_t cpu_stream_helpers_default(uint32_t usable_cpus);

/* ---- deterministic mode (cpu_sim.c) ---- */
cubert_status_t cpu_sim_create(cpu_device_t *d, const cubert_cpu_options_t *options,
                               cubert_error_t *out_error);
void cpu_sim_destroy(cpu_device_t *d);
/* Run steps until done(arg) (NULL: until nothing is runnable); `device` is
 * the cpu_device_t (a cpu_stream_run_fn_t). OK, or FAILED_PRECONDITION when
 * no step is runnable and done is still false. */
cubert_status_t cpu_sim_run_until(void *device, cpu_stream_done_fn_t done, void *arg);
/* Set streams[index] (NULL: gone), visible to the step loop. */
void cpu_sim_set_stream(cpu_device_t *d, uint32_t index, cpu_stream_t *stream);

/* ---- collectives (cpu_comm.c): the driver's optional primitives ---- */
cubert_status_t cpu_comm_create(void *self, const uint32_t *devices, uint32_t count, uint32_t rank,
                                cubert_driver_comm_t **out_comm, cubert_error_t *out_error);
cubert_status_t cpu_comm_query(void *self, cubert_driver_comm_t *comm, cubert_error_t *out_error);
void cpu_comm_destroy(void *self, cubert_driver_comm_t *comm);
cubert_status_t cpu_collective(void *self, cubert_driver_comm_t *comm,
                               const cubert_driver_collective_t *collective,
                               cubert_driver_stream_t *stream, cubert_error_t *out_error);
/* Teardown: leave every communicator left at comm_destroy. */
void cpu_comm_free_all(cpu_device_t *d);

#endif
