/* SPDX-License-Identifier: MIT */
/* core/client/client_persistent.c: memory_persistent_allocation(f) with nested
 * windows. Each window edge runs in an exclusive section, so the
 * per-stream depth table and the allocation-mode switches are ordered with
 * every other device call. */
#include "client/client_internal.h"

#if CUBERT_CONFIG_PERSISTENT_MEMORY

typedef struct window_edge_t {
  device_state_t *state;
  uint64_t stream;
  int open; /* 1: open a window, 0: close one */
  cubert_error_t *error;
} window_edge_t;

static cubert_status_t set_mode(device_state_t *s, uint64_t stream,
                                cubert_memory_allocation_mode_t mode, cubert_error_t *error) {
  return cubert__server_allocation_mode(s->server, stream, mode, error);
}

static cubert_status_t run_window_edge(void *user) {
  window_edge_t *w = (window_edge_t *)user;
  device_state_t *s = w->state;
  uint32_t i, found = CUBERT_CLIENT_MAX_PERSISTENT_STREAMS, free_slot = found;
  for (i = 0; i < CUBERT_CLIENT_MAX_PERSISTENT_STREAMS; i++) {
    if (s->persistent[i].depth > 0 && s->persistent[i].stream == w->stream) found = i;
    if (s->persistent[i].depth == 0 && free_slot == CUBERT_CLIENT_MAX_PERSISTENT_STREAMS)
      free_slot = i;
  }
  if (w->open) {
    if (found == CUBERT_CLIENT_MAX_PERSISTENT_STREAMS) {
      uint64_t f = CUBERT_CLIENT_MAX_PERSISTENT_STREAMS;
      if (free_slot == CUBERT_CLIENT_MAX_PERSISTENT_STREAMS)
        return cubert_error_set(w->error, CUBERT_ERROR_OUT_OF_RANGE, &f, 1,
                                "too many streams with a persistent window open");
      CUBERT_RETURN_IF_ERROR(set_mode(s, w->stream, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT,
                                      w->error));
      s->persistent[free_slot].stream = w->stream;
      s->persistent[free_slot].depth = 1;
      return CUBERT_STATUS_OK;
    }
    if (s->persistent[found].depth == UINT32_MAX)
      return cubert_error_set(w->error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0,
                              "persistent windows nested too deep");
    s->persistent[found].depth++;
    return CUBERT_STATUS_OK;
  }
  /* unreachable: not found (a close follows this stream's own successful open, and the
   * windows nested inside it are balanced) */
  if (found == CUBERT_CLIENT_MAX_PERSISTENT_STREAMS) return CUBERT_STATUS_OK;
  if (--s->persistent[found].depth > 0) return CUBERT_STATUS_OK;
  return set_mode(s, w->stream, CUBERT_MEMORY_ALLOCATION_MODE_AUTO, w->error);
}

static cubert_status_t window_edge(cubert_client_t *client, uint64_t stream, int open,
                                   cubert_error_t *error) {
  window_edge_t w;
  cubert_status_t status;
  w.state = client->state;
  w.stream = stream;
  w.open = open;
  w.error = error;
  status = client->state->handle.vtable->exclusive(client->state->handle.self, run_window_edge, &w);
  if (status != CUBERT_STATUS_OK && error->status == CUBERT_STATUS_OK)
    cubert_error_set(error, CUBERT_ERROR_DEVICE_LOST, NULL, 0, "the device refused the call");
  return status;
}

cubert_status_t cubert_client_memory_persistent_allocation(cubert_client_t *client,
                                                           cubert_client_fn_t fn, void *user,
                                                           cubert_error_t *out_error) {
  /* fn and the window write a local record; the caller's only on failure */
  cubert_error_t local, closing;
  cubert_error_t *error = &local;
  uint64_t stream;
  cubert_status_t status, closed;
  if (!client || !fn)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "memory_persistent_allocation: NULL argument");
  cubert_error_clear(error);
  /* the window belongs to the stream it was opened on, even if fn re-pins */
  stream = cubert_client_stream(client);
  status = window_edge(client, stream, 1, error);
  if (status != CUBERT_STATUS_OK) {
    if (out_error) *out_error = local;
    return status;
  }
  status = fn(user, error);
  cubert_error_clear(&closing);
  closed = window_edge(client, stream, 0, &closing);
  if (status != CUBERT_STATUS_OK) {
    if (out_error) *out_error = local;
    return status;
  }
  if (closed != CUBERT_STATUS_OK && out_error) *out_error = closing;
  return closed;
}

#else /* !CUBERT_CONFIG_PERSISTENT_MEMORY: fn is not run; the stream stays Auto */

cubert_status_t cubert_client_memory_persistent_allocation(cubert_client_t *client,
                                                           cubert_client_fn_t fn, void *user,
                                                           cubert_error_t *out_error) {
  (void)user;
  if (!client || !fn)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "memory_persistent_allocation: NULL argument");
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "persistent memory (CUBERT_CONFIG_PERSISTENT_MEMORY=0)");
}

#endif /* CUBERT_CONFIG_PERSISTENT_MEMORY */
