/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_stream.c: ordering a command on its stream. The
 * multi-stream (core/stream) plans: which origin slots the command's slot
 * must wait on, which bindings to pin and after which point they may go. The
 * server acts on the plan with its driver table directly:
 *  - begin: each wait is an event recorded at the origin slot's end and
 *    waited on by the command's slot (the race checker hears the wait even
 *    when the point already completed: it checks what the program expresses,
 *    not what happened to run; docs/race-checker.md); then the plan is
 *    committed;
 *  - end, after the command was enqueued: an event recorded after it on its
 *    slot, with the checker's token of the same point, and the pins go to the
 *    release ring (server_gc.c) until that event completed.
 * The test-only faults (server_faults.h) drop a wait (neither enqueued nor
 * told to the checker), or record the release point before the command.
 */
#include "server/server_internal.h"

/* The command's slot waits for everything enqueued on `origin` so far. */
static cubert_status_t wait_origin(cubert_server_t *server, server_slot_t *slot, uint32_t origin,
                                   cubert_error_t *out_error) {
  server_slot_t *o = server->slots[origin];
  cubert_driver_event_t *event = NULL;
  cubert_status_t status;
  /* test-only fault: drop the Nth wait */
  if (server->fault_drop_wait && ++server->waits_seen == server->fault_drop_wait)
    return CUBERT_STATUS_OK;
  if (!o) return CUBERT_STATUS_OK; /* never created: nothing ever ran there */
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  status = server_note(server, server->driver->event_record(server->self, o->stream, &event, out_error),
                       out_error);
  if (status != CUBERT_STATUS_OK) return status;
  status = server_note(server, server->driver->event_wait(server->self, slot->stream, event, out_error),
                       out_error);
  server->driver->event_destroy(server->self, event);
  if (status == CUBERT_STATUS_OK) server_race_stream_wait_stream(server, slot->index, origin);
  return status;
}

/* The release point of the command's pins: an event after it on its slot
 * and the race checker's token of that point. NULL event: none recorded. */
static cubert_driver_event_t *release_point(cubert_server_t *server, server_slot_t *slot,
                                            cubert_race_event_t *out_race) {
  cubert_driver_event_t *event = NULL;
  cubert_error_t e;
  cubert_error_clear(&e);
  out_race->index = 0;
  out_race->generation = 0;
  if (server_lost(server, NULL) != CUBERT_STATUS_OK ||
      server_note(server, server->driver->event_record(server->self, slot->stream, &event, &e), &e) !=
      CUBERT_STATUS_OK)
    return NULL;
  *out_race = server_race_record(server, slot->index);
  return event;
}

cubert_status_t server_order_begin(cubert_server_t *server, uint64_t stream_id,
                                   const cubert_binding_t *bindings, uint32_t count,
                                   server_order_t *out_order, cubert_error_t *out_error) {
  server_order_t *o = out_order;
  uint32_t k;
  o->early_event = NULL;
  o->early_race.index = 0;
  o->early_race.generation = 0;
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream_id, &o->slot, out_error));
  CUBERT_RETURN_IF_ERROR(
      cubert__multi_stream_plan(server->multi, stream_id, bindings, count, false, &o->plan, out_error));
  for (k = 0; k < o->plan.wait_count; k++)
    CUBERT_RETURN_IF_ERROR(wait_origin(server, o->slot, o->plan.waits[k].origin_slot, out_error));
  /* test-only fault: the Nth release point is recorded before its command */
  if (o->plan.pin_count && server->fault_drop_gc_wait &&
      ++server->fences_seen == server->fault_drop_gc_wait)
    o->early_event = release_point(server, o->slot, &o->early_race);
  (void)cubert__multi_stream_commit(server->multi, &o->plan);
  return CUBERT_STATUS_OK;
}

void server_order_end(cubert_server_t *server, server_order_t *order,
                      const cubert_binding_t *bindings, uint32_t count) {
  cubert_driver_event_t *event = order->early_event;
  cubert_race_event_t race = order->early_race;
  if (order->plan.pin_count == 0) return;
  if (!event) event = release_point(server, order->slot, &race);
  server_gc_retire_command(server, order, event, race, bindings, count);
}

cubert_status_t server_stream_sync(cubert_server_t *server, uint64_t stream_id,
                                   cubert_error_t *out_error) {
  server_slot_t *slot = server_slot_existing(server, stream_id);
  cubert_driver_event_t *event = NULL;
  cubert_status_t status;
  if (!slot) return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(server_note(
      server, server->driver->event_record(server->self, slot->stream, &event, out_error), out_error));
  status = server_note(server,
                       server->driver->event_synchronize(server->self, event, UINT64_MAX, out_error),
                       out_error);
  server->driver->event_destroy(server->self, event);
  return status;
}
