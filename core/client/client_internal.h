/* SPDX-License-Identifier: MIT */
/* core/client/client_internal.h: the client's shared state, for the client's own
 * files (client.c, client_memory.c, client_io.c, ...). Not installed.
 *
 * A device's state is shared by every client object of the device; the
 * server behind it is the server (core/server/server.h). Each client operation is a
 * typed device task: a small record (client_task_t first, then the server's
 * operation record) run by the device handle with the device held, calling
 * the one server function of that operation. */
#ifndef CUBERT_CORE_CLIENT_INTERNAL_H
#define CUBERT_CORE_CLIENT_INTERNAL_H

#include "base/internal.h"
#include "base/atomic.h"
#include "cubert/client.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"
#include "cubert/profile.h"
#include "memory/handle_table.h"
#include "cubert/driver/device.h"
#include "server/server.h"

/* Buffers / tensors per create_tensors, read or staging call. */
#define CLIENT_MAX_BATCH 64

/* Shared per-device state: one per registered device. */
typedef struct device_state_t {
  cubert_allocator_t allocator;
  cubert_device_id_t device;
  uint32_t device_key; /* type id << 16 | instance number: cubert_handle_t.device_key */
  cubert_layout_policy_t layout_policy;
  cubert_bounds_check_mode_t bounds_check;
  cubert_stream_source_fn_t stream_source; /* NULL: stream 0 */
  void *stream_source_self;
  cubert_server_t *server;
  cubert_device_handle_t handle;
  /* the device lock's shards (core/device/device_shards.h): NULL unless the
   * server was made with concurrent_launch over the direct handle */
  struct cubert_device_shards_t *shards;
  cubert_handle_table_t *table;
  cubert_device_properties_t properties;
  void (*host_release)(void *self);
  void *host_release_self;
  cubert_atomic_u32_t refs; /* client objects alive */
  /* exclusive sections and profile(f) running (client_launch.c): their
   * function runs with the device lock held, and a launch from it must not
   * wait for that lock's holder (itself) before its shard (client_task.c) */
  cubert_atomic_u32_t exclusive_depth;
  /* kernel profiling (client_profile.c): level read lock-free, the rest
   * under ext_lock (a spin lock: held for short, non-blocking work only) */
  cubert_atomic_u32_t profile_level;
  cubert_atomic_u32_t ext_lock;
  struct cubert_profile_summary_t *summary;
  cubert_log_sink_fn_t sink;
  void *sink_self;
  /* persistent allocation windows (client_persistent.c), touched only
   * inside exclusive sections */
  struct {
    uint64_t stream;
    uint32_t depth;
  } persistent[CUBERT_CLIENT_MAX_PERSISTENT_STREAMS];
} device_state_t;

struct cubert_client_t {
  device_state_t *state;
  bool pinned;
  uint64_t stream;
};

/* ---- typed device tasks ---- */

/* The head of every task record: what the task reports. */
typedef struct client_task_t {
  cubert_status_t status;
  cubert_error_t *error;
} client_task_t;

/* Run fn(server, task) with the device held and return task->status;
 * DEVICE_LOST (UNAVAILABLE) when the device handle refuses (shut down). */
cubert_status_t client_submit(cubert_client_t *client, cubert_device_task_fn_t fn,
                              client_task_t *task, cubert_error_t *out_error);
/* After an operation ran through its stream's shard (core/device/device_shards.h)
 * with `status` and record `error`: a failure's record goes to out_error; an
 * UNAVAILABLE makes the device lost (the device taken for that). */
void client_sharded_done(device_state_t *state, cubert_status_t status, const cubert_error_t *error,
                         cubert_error_t *out_error);
/* A sharded operation may wait for the device lock's holder before its
 * shard (core/device/device_shards.h: patient): no exclusive section or
 * profile(f) of the device runs, so this thread does not hold it (a
 * relaxed look: another thread's section only makes the caller fall back
 * to the lock, as before). */
static inline bool client_patient(device_state_t *state) {
  return cubert__atomic_load_u32(&state->exclusive_depth) == 0u;
}
/* DEVICE_MISMATCH unless `handle` was issued by this device (index and key;
 * fn names the call in the reason). */
cubert_status_t client_check_owner(const device_state_t *state, const cubert_handle_t *handle,
                                   const char *fn, cubert_error_t *out_error);
/* DEVICE_MISMATCH / INVALID_HANDLE unless `handle` is a live handle of this device. */
cubert_status_t client_check_device(const cubert_client_t *client, const cubert_handle_t *handle,
                                    cubert_error_t *out_error);

/* A reference on the device (client.c) for what outlives the device's clients
 * (a DLPack export): keep while holding a client; the drop of the last
 * reference tears the device down (it blocks then). */
void client_device_keep(device_state_t *state);
void client_device_drop(device_state_t *state);

/* An armed completion (read_async / sync_async returned OK) takes a reference
 * on the device, dropped when the wait finishes (cubert/client.h): waiting
 * after the last client was released finds the device still there. */
void client_completion_keep(cubert_client_t *client, cubert_completion_t *completion);

#define CLIENT_CHECK(cond, what)                                                        \
  do {                                                                                  \
    if (!(cond))                                                                        \
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, what); \
  } while (0)

/* The create path of client_memory.c (owned: NULL or `count` buffers, moved). */
cubert_status_t client_do_create(cubert_client_t *client,
                                 const cubert_layout_descriptor_t *descriptors, size_t count,
                                 const void *const *data, cubert_bytes_t *owned,
                                 cubert_memory_layout_t *out_layouts, cubert_error_t *out_error);

/* client_arguments.c: check a launch's arguments (a failed setter, a slot
 * below the counts never set, the shape's form) and fill *view's slots,
 * counts and shape (only those fields) with the arrays to use. */
cubert_status_t client_arguments_view(const cubert_launch_arguments_t *args,
                                      cubert_launch_arguments_t *view, cubert_error_t *out_error);

/* client_task.c: a launch task (arguments checked) run through the device. */
cubert_status_t client_launch_task(cubert_client_t *client, const cubert_kernel_t *kernel,
                                   const cubert_cube_count_t *count,
                                   const cubert_launch_arguments_t *args,
                                   cubert_execution_mode_t mode, cubert_error_t *out_error);

#if CUBERT_CONFIG_PROFILING
/* client_profile.c: a launch at a kernel-profiling level other than OFF
 * (arguments already validated); the summary written to the sink at sync;
 * teardown of the profiling state (last client). */
cubert_status_t client_profiled_launch(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                       const struct cubert_cube_count_t *count,
                                       const cubert_launch_arguments_t *args,
                                       cubert_execution_mode_t mode, cubert_error_t *out_error);
void client_profile_emit_summary(cubert_client_t *client);
void client_profile_destroy(device_state_t *state);
#else /* compiled out: the level stays OFF, so a profiled launch is never asked for */
#define client_profiled_launch client_launch_task
#define client_profile_emit_summary(client) ((void)(client))
#define client_profile_destroy(state) ((void)(state))
#endif

/* Drop a device reference (a client's, a kept completion's, a recording's):
 * the last one tears the device down (client.c). */
void client_state_release(device_state_t *state);

/* Free a device's state (its server, handle, table, registry entry, lock hook); the last
 * reference of a device, or a failed create (client_driver.c). */
void client_state_free(device_state_t *state);

/* The driver stream of `client`'s stream `stream` (cubert__server_driver_stream):
 * called with the device held, inside cubert_client_exclusive's function. */
cubert_status_t cubert__client_driver_stream(cubert_client_t *client, uint64_t stream,
                                             cubert_driver_stream_t **out_stream,
                                             cubert_error_t *out_error);

#endif
