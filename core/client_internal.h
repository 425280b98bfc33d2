/* core/client_internal.h: the client's shared state, for the client's own
 * files (client.c, client_comm.c, ...). Not installed. */
#ifndef CUBERT_CORE_CLIENT_INTERNAL_H
#define CUBERT_CORE_CLIENT_INTERNAL_H

#include "internal.h"
#include "atomic.h"
#include "cubert/client.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"

/* Shared per-device state: one per registered device. */
typedef struct device_state_t {
  cubert_allocator_t allocator;
  cubert_client_config_t config;
  cubert_server_t *server;
  cubert_device_handle_t handle;
  cubert_handle_table_t *table;
  cubert_device_properties_t properties;
  cubert_atomic_u32_t refs; /* client objects alive */
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

#endif
