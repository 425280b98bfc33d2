/* backend-cpu/cpu/cpu_server.h: internals of the CPU server (not installed). */
#ifndef CUBERT_CPU_SERVER_H
#define CUBERT_CPU_SERVER_H

#include <pthread.h>

#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"
#include "cubert/race.h"
#include "cubert/sim.h"
#include "cubert/stream.h"
#include "cpu/cpu_stream.h"

#define CPU_MAX_BINDINGS (CUBERT_KERNEL_MAX_BUFFERS + 1)
#define CPU_MAX_SCALAR_BYTES 256

typedef struct cpu_server_t cpu_server_t;

/* Bindings an operation holds (descriptor references) until it completed. */
typedef struct cpu_pins_t {
  uint32_t count;
  cubert_memory_id_t ids[CPU_MAX_BINDINGS];
} cpu_pins_t;

typedef struct cpu_slot_t {
  int initialized;
  cpu_stream_t stream;
  struct cpu_memory_t *memory;
} cpu_slot_t;

struct cpu_server_t {
  cubert_server_t base;
  cubert_allocator_t allocator;
  cubert_device_properties_t properties;
  cubert_handle_table_t *table; /* borrowed from the client */
  uint32_t max_streams;
  cpu_slot_t *slots; /* max_streams + 1 (the last is the GC stream) */
  cubert_multi_stream_t *multi;
  struct cpu_executor_t *executor;
  pthread_mutex_t events_mutex;
  struct cpu_event_t *free_events;
  uint64_t profile_counter;
  struct cubert_profiler_t *profiler; /* tokens of start/end_profile (spec 7) */
  /* GC thread (cpu_gc.c) */
  int gc_started, gc_running;
  pthread_t gc_thread;
  pthread_mutex_t gc_mutex;
  pthread_cond_t gc_cond;
  cubert_stream_gc_task_t *gc_ring;
  uint64_t gc_head, gc_tail, gc_released;
  /* collectives (cpu_comm.c) */
  uint32_t device_index;
  uint64_t collective_timeout_ns;
  struct cpu_comm_t *comm; /* communication stream + joined communicators; NULL until comm_init */
  /* deterministic mode (cpu_sim.c); sim_mutex serializes the step loop */
  int deterministic;
  pthread_mutex_t sim_mutex;
  cubert_sim_chooser_t sim_own;  /* the built-in chooser */
  cubert_sim_chooser_t *sim;     /* the active chooser (sim_own or attached) */
  uint32_t *sim_log;             /* sim_own's log */
  size_t sim_log_capacity;
  uint32_t *sim_ids;             /* max_streams + 2 step identities */
  uint64_t *sim_seqs;            /* their sequence numbers */
  uint64_t sim_deadlocks;
  /* race checker (cpu_race.c); NULL: off. race_mutex serializes its calls */
  cubert_race_checker_t *race;
  pthread_mutex_t race_mutex;
  uint64_t race_errors;          /* checker calls that failed (allocation) */
  uint32_t fault_drop_wait, waits_seen, fault_drop_gc_wait, gc_waits_seen;
  struct cpu_server_t *registry_next; /* cpu_sim.c: servers of this process */
};

/* ---- staging (cpu_staging.c): the vtable's staging ---- */
cubert_status_t cpu_staging(cubert_server_t *server, const uint64_t *sizes, size_t count,
                            cubert_bytes_t *out_bytes, uint64_t stream, cubert_error_t *out_error);

/* ---- deterministic mode (cpu_sim.c) ---- */
typedef bool (*cpu_sim_done_fn_t)(void *arg);
cubert_status_t cpu_sim_create(cpu_server_t *s, const cubert_cpu_options_t *options,
                               cubert_error_t *out_error);
void cpu_sim_destroy(cpu_server_t *s);
/* Run steps until done(arg) (NULL: until nothing is runnable). OK, or
 * FAILED_PRECONDITION when no step is runnable and done is still false. */
cubert_status_t cpu_sim_run_until(cpu_server_t *s, cpu_sim_done_fn_t done, void *arg);
void cpu_registry_add(cpu_server_t *s);
void cpu_registry_remove(cpu_server_t *s);

/* ---- race checker hooks (cpu_race.c): one branch when off ---- */
cubert_status_t cpu_race_create(cpu_server_t *s, const cubert_cpu_options_t *options,
                                cubert_error_t *out_error);
void cpu_race_destroy(cpu_server_t *s);
/* One op on `slot` with its bindings; modes[i] is CUBERT_RACE_READ/WRITE. */
void cpu_race_op(cpu_server_t *s, uint32_t slot, const char *name, const cubert_binding_t *b,
                 const uint8_t *modes, uint32_t count);
void cpu_race_host_op(cpu_server_t *s, const char *name, const cubert_binding_t *b);
cubert_race_event_t cpu_race_record(cpu_server_t *s, uint32_t slot);
void cpu_race_stream_wait(cpu_server_t *s, uint32_t slot, cubert_race_event_t event);
void cpu_race_release(cpu_server_t *s, cubert_race_event_t event);
void cpu_race_host_sync(cpu_server_t *s, uint32_t slot);
/* A GC task is about to be released: its pins' buffers that die by it are
 * checked against the task's event (cubert_race_reclaim_at_event). */
void cpu_gc_release_task(cpu_server_t *s, cubert_stream_gc_task_t *task);

/* ---- GC thread (cpu_gc.c) ---- */
cubert_status_t cpu_gc_start(cpu_server_t *server, cubert_error_t *out_error);
void cpu_gc_hand_off(cpu_server_t *server);
void cpu_gc_drain(cpu_server_t *server);
void cpu_gc_stop(cpu_server_t *server);
/* Deterministic mode: true when the oldest handed-off task's event completed
 * (*out_index: its position); cpu_gc_step releases it. */
bool cpu_gc_runnable(cpu_server_t *server, uint64_t *out_index);
void cpu_gc_step(cpu_server_t *server);

/* ---- memory of one slot (cpu_memory.c) ---- */
typedef struct cpu_memory_t cpu_memory_t;
cubert_status_t cpu_memory_create(cpu_server_t *server, uint32_t slot, cpu_memory_t **out,
                                  cubert_error_t *out_error);
void cpu_memory_destroy(cpu_memory_t *memory);
cubert_status_t cpu_memory_reserve_bind(cpu_memory_t *memory, const cubert_handle_t *handle,
                                        uint64_t size, uint64_t cursor, cubert_error_t *out_error);
/* Host pointer to the binding's first byte (offsets applied) and its size in use. */
cubert_status_t cpu_memory_resolve(cpu_memory_t *memory, const cubert_binding_t *binding,
                                   unsigned char **out_ptr, uint64_t *out_size,
                                   cubert_error_t *out_error);
void cpu_memory_usage(cpu_memory_t *memory, cubert_memory_usage_t *out_usage);
void cpu_memory_cleanup(cpu_memory_t *memory, bool explicit_cleanup);
cubert_status_t cpu_memory_mode(cpu_memory_t *memory, cubert_memory_allocation_mode_t mode,
                                cubert_error_t *out_error);

/* ---- events over cpu_stream (cpu_events.c) ---- */
extern const cubert_event_backend_vtable_t cpu_event_backend_vtable;
void cpu_events_free_all(cpu_server_t *server);
/* Take the race token out of a backend event (its release then leaves the
 * token alone; the caller releases it). */
cubert_race_event_t cpu_event_race_take(void *event);
/* True when the backend event's point completed. */
bool cpu_event_completed(void *event);

/* ---- construction (cpu_server.c, cpu_client.c) ---- */
cubert_status_t cpu_server_create(cubert_allocator_t allocator, const cubert_cpu_options_t *options,
                                  cubert_handle_table_t *table, cpu_server_t **out_server,
                                  cubert_error_t *out_error);
void cpu_fill_properties(const cubert_cpu_options_t *options, cubert_device_properties_t *out);

/* ---- ServerCommunication (cpu_comm.c) ---- */
cubert_status_t cpu_comm_init(cubert_server_t *server, const uint32_t *device_indices, size_t count,
                              cubert_error_t *out_error);
cubert_status_t cpu_all_reduce(cubert_server_t *server, const cubert_binding_t *src,
                               const cubert_binding_t *dst, uint32_t dtype, uint64_t stream,
                               uint32_t op, const uint32_t *device_indices, size_t count,
                               cubert_error_t *out_error);
cubert_status_t cpu_send(cubert_server_t *server, const cubert_copy_descriptor_t *descriptor,
                         uint32_t dtype, uint64_t stream, uint32_t dst_device,
                         cubert_error_t *out_error);
cubert_status_t cpu_recv(cubert_server_t *server, const cubert_handle_t *handle, uint32_t dtype,
                         uint64_t stream, uint32_t src_device, cubert_error_t *out_error);
cubert_status_t cpu_sync_collective(cubert_server_t *server, uint64_t stream,
                                    cubert_error_t *out_error);
/* Teardown, first step (before the compute streams stop): cancel pending
 * collectives, wait for the communication stream, leave every communicator. */
void cpu_comm_shutdown(cpu_server_t *server);
/* Teardown, last step (after the compute streams stopped: their ops may wait
 * on the communication stream): stop it and free the state. */
void cpu_comm_destroy(cpu_server_t *server);

/* ---- pins ---- */
void pins_release(cpu_server_t *s, cpu_pins_t *pins);

#endif
