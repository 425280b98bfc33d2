/* backend-cpu/cpu/cpu_race.c: the CPU server's hooks into the race checker
 * (cubert/race.h, docs/race-checker.md "How the server must call it").
 *
 * Every hook is one branch when the checker is off (s->race == NULL). When
 * on, calls are serialized by race_mutex: the server thread reports ops and
 * waits at enqueue time, completion waits report host syncs, the GC reports
 * reclamations. A checker call that fails (only allocation can) is counted in
 * race_errors and otherwise ignored: checking never changes what runs. */
#include "cpu/cpu_server.h"

cubert_status_t cpu_race_create(cpu_server_t *s, const cubert_cpu_options_t *o,
                                cubert_error_t *out_error) {
  cubert_race_options_t ro;
  pthread_mutex_init(&s->race_mutex, NULL);
  if (!o->race_check) return CUBERT_STATUS_OK;
  cubert_race_options_initialize(&ro);
  ro.max_streams = s->max_streams + 1; /* the GC stream has a timeline too */
  ro.sink = o->race_sink;
  if (cubert_race_checker_create(s->allocator, &ro, &s->race, out_error) != CUBERT_STATUS_OK) {
    s->race = NULL;
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "race checker");
  }
  if (s->deterministic && s->sim && s->sim->source == CUBERT_SIM_SOURCE_SEED)
    cubert_race_set_seed(s->race, s->sim->seed);
  return CUBERT_STATUS_OK;
}

void cpu_race_destroy(cpu_server_t *s) {
  cubert_race_checker_destroy(s->race);
  s->race = NULL;
  pthread_mutex_destroy(&s->race_mutex);
}

static void race_note(cpu_server_t *s, cubert_status_t status) {
  if (status != CUBERT_STATUS_OK) s->race_errors++;
}

void cpu_race_op(cpu_server_t *s, uint32_t slot, const char *name, const cubert_binding_t *b,
                 const uint8_t *modes, uint32_t count) {
  uint64_t op = 0;
  uint32_t i;
  if (!s->race) return;
  pthread_mutex_lock(&s->race_mutex);
  if (cubert_race_op_begin(s->race, slot, name, &op) == CUBERT_STATUS_OK) {
    for (i = 0; i < count; i++)
      race_note(s, cubert_race_access(s->race, cubert_race_buffer_id(b[i].memory), slot, op,
                                      (cubert_race_access_t)modes[i], b[i].offset_start,
                                      b[i].size - b[i].offset_end));
  } else {
    s->race_errors++;
  }
  pthread_mutex_unlock(&s->race_mutex);
}

void cpu_race_host_op(cpu_server_t *s, const char *name, const cubert_binding_t *b) {
  uint64_t op = 0;
  if (!s->race) return;
  pthread_mutex_lock(&s->race_mutex);
  if (cubert_race_op_begin(s->race, CUBERT_RACE_HOST, name, &op) == CUBERT_STATUS_OK)
    race_note(s, cubert_race_access(s->race, cubert_race_buffer_id(b->memory), CUBERT_RACE_HOST,
                                    op, CUBERT_RACE_WRITE, b->offset_start,
                                    b->size - b->offset_end));
  else
    s->race_errors++;
  pthread_mutex_unlock(&s->race_mutex);
}

cubert_race_event_t cpu_race_record(cpu_server_t *s, uint32_t slot) {
  cubert_race_event_t token = {0, 0};
  if (!s->race) return token;
  pthread_mutex_lock(&s->race_mutex);
  race_note(s, cubert_race_event_record(s->race, slot, &token));
  pthread_mutex_unlock(&s->race_mutex);
  return token;
}

void cpu_race_stream_wait(cpu_server_t *s, uint32_t slot, cubert_race_event_t event) {
  if (!s->race || event.index == 0) return;
  pthread_mutex_lock(&s->race_mutex);
  race_note(s, cubert_race_stream_wait_event(s->race, slot, event));
  pthread_mutex_unlock(&s->race_mutex);
}

void cpu_race_release(cpu_server_t *s, cubert_race_event_t event) {
  if (!s->race || event.index == 0) return;
  pthread_mutex_lock(&s->race_mutex);
  race_note(s, cubert_race_event_release(s->race, event));
  pthread_mutex_unlock(&s->race_mutex);
}

void cpu_race_host_sync(cpu_server_t *s, uint32_t slot) {
  if (!s->race) return;
  pthread_mutex_lock(&s->race_mutex);
  race_note(s, cubert_race_host_sync_stream(s->race, slot));
  pthread_mutex_unlock(&s->race_mutex);
}
