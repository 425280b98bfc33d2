/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_race.c: the server's hooks into the race checker (core/check/race.h,
 * docs/race-checker.md "How the server must call it"), for every driver.
 *
 * Every hook is one branch when the checker is off (server->race == NULL). The
 * hooks run with the device held (enqueues, completion drains, GC releases
 * all do), so the checker needs no lock of its own. A checker call that
 * fails (only allocation can) is counted in race_errors and otherwise
 * ignored: checking never changes what runs.
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"
#include "check/race.h"

#if CUBERT_CONFIG_RACE_CHECKER /* else the hooks vanish at their call sites (server_internal.h) */

cubert_status_t server_race_create(cubert_server_t *server, const cubert_server_options_t *o,
                                   cubert_error_t *out_error) {
  cubert_race_options_t ro;
  if (!o->race_check) return CUBERT_STATUS_OK;
  cubert__race_options_initialize(&ro);
  /* one timeline per stream slot, and one more for the release ring (no driver stream:
   * server_race_released) */
  ro.max_streams = server->max_streams + 1u;
  ro.sink = o->race_sink;
  if (cubert__race_checker_create(server->allocator, &ro, &server->race, out_error) != CUBERT_STATUS_OK) {
    server->race = NULL;
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "race checker");
  }
  if (o->race_seed) cubert__race_set_seed(server->race, o->race_seed);
  return CUBERT_STATUS_OK;
}

void server_race_destroy(cubert_server_t *server) {
  cubert__race_checker_destroy(server->race);
  server->race = NULL;
}

static void race_note(cubert_server_t *server, cubert_status_t status) {
  if (status != CUBERT_STATUS_OK) server->race_errors++;
}

void server_race_op(cubert_server_t *server, uint32_t slot, const char *name, const cubert_binding_t *b,
                    const uint8_t *modes, uint32_t count) {
  uint64_t op = 0;
  uint32_t i;
  if (!server->race) return;
  if (cubert__race_op_begin(server->race, slot, name, &op) != CUBERT_STATUS_OK) {
    server->race_errors++;
    return;
  }
  for (i = 0; i < count; i++)
    race_note(server, cubert__race_access(server->race, cubert__race_buffer_id(b[i].memory), slot, op,
                                          (cubert_race_access_t)modes[i], b[i].offset_start,
                                          b[i].size - b[i].offset_end));
}

void server_race_host_op(cubert_server_t *server, const char *name, const cubert_binding_t *b) {
  uint64_t op = 0;
  if (!server->race) return;
  if (cubert__race_op_begin(server->race, CUBERT_RACE_HOST, name, &op) != CUBERT_STATUS_OK) {
    server->race_errors++;
    return;
  }
  race_note(server, cubert__race_access(server->race, cubert__race_buffer_id(b->memory), CUBERT_RACE_HOST,
                                        op, CUBERT_RACE_WRITE, b->offset_start,
                                        b->size - b->offset_end));
}

cubert_race_event_t server_race_record(cubert_server_t *server, uint32_t slot) {
  cubert_race_event_t token = {0, 0};
  if (!server->race) return token;
  race_note(server, cubert__race_event_record(server->race, slot, &token));
  return token;
}

void server_race_stream_wait_stream(cubert_server_t *server, uint32_t slot, uint32_t origin) {
  if (!server->race) return;
  race_note(server, cubert__race_stream_wait_stream(server->race, slot, origin));
}

void server_race_release(cubert_server_t *server, cubert_race_event_t event) {
  if (!server->race || event.index == 0) return;
  race_note(server, cubert__race_event_release(server->race, event));
}

void server_race_host_sync(cubert_server_t *server, uint32_t slot) {
  if (!server->race) return;
  race_note(server, cubert__race_host_sync_stream(server->race, slot));
}

/* A pinned buffer that died with this release may be reused from now on:
 * every access must happen before the release point (or before the reuse
 * point on the buffer's own slot). */
void server_race_released(cubert_server_t *server, cubert_race_event_t race,
                          const server_pin_t *pins, uint32_t count) {
  const uint32_t ring = server->max_streams; /* the release ring's timeline */
  cubert_race_event_t point = race;
  uint32_t i;
  if (!server->race) return;
  /* The ring releases its entries in order, each once its event completed: its own
   * timeline waits for every released point, so a buffer that two commands pinned is
   * checked, when the last pin goes, against both commands (not only the last one).
   * Neither the host nor any stream is ordered by it: a missing sync stays reported. */
  race_note(server, cubert__race_stream_wait_event(server->race, ring, race));
  if (cubert__race_event_record(server->race, ring, &point) != CUBERT_STATUS_OK) point = race;
  for (i = 0; i < count; i++)
    if (!cubert__memory_id_is_alive(server->table, pins[i].memory))
      race_note(server, cubert__race_reclaim_at_event(server->race, cubert__race_buffer_id(pins[i].memory),
                                                      pins[i].slot, point));
  if (point.index != race.index || point.generation != race.generation)
    race_note(server, cubert__race_event_release(server->race, point));
  race_note(server, cubert__race_event_release(server->race, race));
}

/* ---- the checker's state, for the client's accessors ---- */

void cubert__server_race_state(const cubert_server_t *server, cubert_race_counters_t *out_counters,
                               cubert_race_report_t *out_last, bool *out_has_last) {
  if (out_counters) cubert__race_counters(server->race, out_counters); /* zeros for NULL */
  if (out_last) *out_has_last = cubert__race_last_report(server->race, out_last);
}

void cubert__server_set_race_seed(cubert_server_t *server, uint64_t seed) {
  if (!server->race) return;
  if (seed)
    cubert__race_set_seed(server->race, seed);
  else
    cubert__race_clear_seed(server->race);
}

#endif /* CUBERT_CONFIG_RACE_CHECKER */
