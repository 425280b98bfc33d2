/* core/client/client_internal.h: the client's shared state, for the client's own
 * files (client.c, client_comm.c, ...). Not installed. */
#ifndef CUBERT_CORE_CLIENT_INTERNAL_H
#define CUBERT_CORE_CLIENT_INTERNAL_H

#include "base/internal.h"
#include "base/atomic.h"
#include "cubert/client.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"
#include "cubert/profile.h"

/* Shared per-device state: one per registered device. */
typedef struct device_state_t {
  cubert_allocator_t allocator;
  cubert_client_config_t config;
  cubert_server_t *server;
  cubert_device_handle_t handle;
  cubert_handle_table_t *table;
  cubert_device_properties_t properties;
  cubert_atomic_u32_t refs; /* client objects alive */
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

/* ---- device calls: a server call run as a blocking device task ---- */

typedef struct client_call_t {
  int op;
  cubert_status_t status;
  cubert_error_t *error;
  uint64_t stream;
  const void *a;
  const void *b;
  const void *c;
  void *d;
  void *e;
  uint64_t u0, u1;
  size_t count;
  int ran; /* set by the task: the server took ownership of call->d bytes */
} client_call_t;

enum {
  OP_CREATE,
  OP_WRITE,
  OP_READ,
  OP_SYNC,
  OP_FLUSH,
  OP_LAUNCH,
  OP_RESOURCE,
  OP_USAGE,
  OP_CLEANUP,
  OP_MODE
};

/* Reset `call` for operation `op` (OP_*) reporting into out_error. */
void client_call_init(client_call_t *call, int op, cubert_error_t *out_error);
/* Run the call on the device (blocking) with the client's current stream. */
cubert_status_t client_device_call(cubert_client_t *client, client_call_t *call);
/* DEVICE_MISMATCH / INVALID_HANDLE unless `handle` is a live handle of this device. */
cubert_status_t client_check_device(const cubert_client_t *client, const cubert_handle_t *handle,
                                    cubert_error_t *out_error);

/* The create path of client.c (owned: NULL or `count` buffers, moved). */
cubert_status_t client_do_create(cubert_client_t *client,
                                 const cubert_layout_descriptor_t *descriptors, size_t count,
                                 const void *const *data, cubert_bytes_t *owned,
                                 cubert_memory_layout_t *out_layouts, cubert_error_t *out_error);

/* client_profile.c: a launch at a kernel-profiling level other than OFF
 * (arguments already validated); the summary written to the sink at sync;
 * teardown of the profiling state (last client). */
cubert_status_t client_profiled_launch(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                       const struct cubert_cube_count_t *count,
                                       const cubert_launch_arguments_t *args,
                                       cubert_execution_mode_t mode, cubert_error_t *out_error);
void client_profile_emit_summary(cubert_client_t *client);
void client_profile_destroy(device_state_t *state);

#endif
