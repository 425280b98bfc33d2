/* backend-cpu/cpu/cpu_events.c: the event backend (cubert/stream.h) over the
 * simulated streams: an event is a point (stream, sequence). Events come from
 * a free list, so steady-state flushes do not allocate. */
#include "cpu/cpu_server.h"

#include <string.h>

typedef struct cpu_event_t {
  struct cpu_event_t *next;
  cpu_stream_t *stream;
  uint64_t seq;
  cubert_race_event_t race; /* the race checker's token for the same point ({0,0}: off) */
} cpu_event_t;

cubert_race_event_t cpu_event_race_take(void *event) {
  cpu_event_t *ev = (cpu_event_t *)event;
  cubert_race_event_t token = ev->race;
  ev->race.index = 0;
  ev->race.generation = 0;
  return token;
}

bool cpu_event_completed(void *event) {
  cpu_event_t *ev = (cpu_event_t *)event;
  return cpu_stream_point_completed(ev->stream, ev->seq) != 0;
}

static cubert_status_t ev_create_stream(void *self, uint32_t slot, void **out_stream,
                                        cubert_error_t *out_error) {
  cpu_server_t *s = (cpu_server_t *)self;
  cpu_slot_t *sl = &s->slots[slot];
  cubert_status_t status;
  if (slot > s->max_streams)
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "no such stream slot");
  if (!sl->initialized) {
    if (slot < s->max_streams && !sl->memory) {
      status = cpu_memory_create(s, slot, &sl->memory, out_error);
      if (status != CUBERT_STATUS_OK) return status;
    }
    status = cpu_stream_initialize(&sl->stream, s->allocator, slot, s, s->deterministic);
    if (status != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                             ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                             : CUBERT_ERROR_SERVER_GENERIC,
                              NULL, 0, "cannot start the stream worker");
    /* the deterministic step loop scans `initialized` under its lock */
    if (s->deterministic) pthread_mutex_lock(&s->sim_mutex);
    sl->initialized = 1;
    if (s->deterministic) pthread_mutex_unlock(&s->sim_mutex);
  }
  *out_stream = &sl->stream;
  return CUBERT_STATUS_OK;
}

static void ev_destroy_stream(void *self, void *stream) {
  cpu_server_t *s = (cpu_server_t *)self;
  cpu_stream_t *cs = (cpu_stream_t *)stream;
  cpu_slot_t *sl = &s->slots[cs->slot];
  if (!sl->initialized) return;
  cpu_stream_deinitialize(cs);
  if (s->deterministic) pthread_mutex_lock(&s->sim_mutex);
  sl->initialized = 0;
  if (s->deterministic) pthread_mutex_unlock(&s->sim_mutex);
}

static cubert_status_t ev_flush(void *self, void *stream, void **out_event,
                                cubert_error_t *out_error) {
  cpu_server_t *s = (cpu_server_t *)self;
  cpu_stream_t *cs = (cpu_stream_t *)stream;
  cpu_event_t *ev;
  pthread_mutex_lock(&s->events_mutex);
  ev = s->free_events;
  if (ev) s->free_events = ev->next;
  pthread_mutex_unlock(&s->events_mutex);
  if (!ev && cubert_allocator_malloc(s->allocator, sizeof(*ev), 0, (void **)&ev) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "event");
  ev->next = NULL;
  ev->stream = cs;
  pthread_mutex_lock(&cs->mutex);
  ev->seq = cs->tail; /* the last committed op (server thread: the producer) */
  pthread_mutex_unlock(&cs->mutex);
  ev->race = cpu_race_record(s, cs->slot);
  *out_event = ev;
  return CUBERT_STATUS_OK;
}

static cubert_status_t ev_wait_event(void *self, void *stream, void *event,
                                     cubert_error_t *out_error) {
  cpu_server_t *s = (cpu_server_t *)self;
  cpu_stream_t *cs = (cpu_stream_t *)stream;
  cpu_event_t *ev = (cpu_event_t *)event;
  cpu_op_t *op;
  (void)out_error;
  /* test-only fault: drop the Nth cross-stream wait of a regular stream */
  if (s->fault_drop_wait && cs->slot < s->max_streams && ev->stream != cs &&
      ++s->waits_seen == s->fault_drop_wait)
    return CUBERT_STATUS_OK;
  if (s->fault_drop_gc_wait && cs->slot == s->max_streams &&
      ++s->gc_waits_seen == s->fault_drop_gc_wait)
    return CUBERT_STATUS_OK;
  /* what the program expresses, even when the point already completed */
  cpu_race_stream_wait(s, cs->slot, ev->race);
  if (ev->stream == cs || cpu_stream_point_completed(ev->stream, ev->seq)) return CUBERT_STATUS_OK;
  op = cpu_stream_reserve(cs);
  op->wait_stream = ev->stream;
  op->wait_seq = ev->seq;
  (void)cpu_stream_commit(cs);
  return CUBERT_STATUS_OK;
}

static cubert_status_t ev_wait_event_sync(void *self, void *event, cubert_error_t *out_error) {
  cpu_event_t *ev = (cpu_event_t *)event;
  (void)self;
  (void)out_error;
  return cpu_stream_wait_point(ev->stream, ev->seq, UINT64_MAX);
}

static bool ev_event_completed(void *self, void *event) {
  cpu_event_t *ev = (cpu_event_t *)event;
  (void)self;
  return cpu_stream_point_completed(ev->stream, ev->seq) != 0;
}

static void ev_release_event(void *self, void *event) {
  cpu_server_t *s = (cpu_server_t *)self;
  cpu_event_t *ev = (cpu_event_t *)event;
  cpu_race_release(s, ev->race);
  ev->race.index = 0;
  ev->race.generation = 0;
  pthread_mutex_lock(&s->events_mutex);
  ev->next = s->free_events;
  s->free_events = ev;
  pthread_mutex_unlock(&s->events_mutex);
}

/* The cursor of the last command that may have written the binding on its
 * origin slot. The CPU server does not track writes per buffer, so it answers
 * with the origin's current cursor: a stream that already synced with the
 * origin waits again whenever the origin enqueued anything since. CubeCL uses
 * the cursor at which the memory was bound, which misses a later kernel that
 * writes the buffer on its origin stream (cts_cross_stream_launch_binding). */
static uint64_t ev_handle_cursor(void *self, void *origin_stream, const cubert_binding_t *binding) {
  cpu_server_t *s = (cpu_server_t *)self;
  (void)binding;
  return cubert_multi_stream_cursor(s->multi, ((cpu_stream_t *)origin_stream)->slot);
}

void cpu_events_free_all(cpu_server_t *s) {
  while (s->free_events) {
    cpu_event_t *ev = s->free_events;
    s->free_events = ev->next;
    cubert_allocator_free(s->allocator, ev, sizeof(*ev), 0);
  }
}

const cubert_event_backend_vtable_t cpu_event_backend_vtable = {
    ev_create_stream, ev_destroy_stream, ev_flush,          ev_wait_event,
    ev_wait_event_sync, ev_event_completed, ev_release_event, ev_handle_cursor,
};
