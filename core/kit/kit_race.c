/* SPDX-License-Identifier: MIT */
/*
 * core/kit/kit_race.c: the kit's hooks into the race checker (cubert/backend/race.h,
 * docs/race-checker.md "How the server must call it"), for every driver.
 *
 * Every hook is one branch when the checker is off (kit->race == NULL). The
 * hooks run with the device held (enqueues, completion drains, GC releases
 * all do), so the checker needs no lock of its own. A checker call that
 * fails (only allocation can) is counted in race_errors and otherwise
 * ignored: checking never changes what runs.
 */
#include "kit/kit_internal.h"
#include "cubert/backend/handle_table.h"
#include "cubert/backend/race.h"

#if CUBERT_CONFIG_RACE_CHECKER

cubert_status_t kit_race_create(cubert_kit_t *kit, const cubert_kit_options_t *o,
                                cubert_error_t *out_error) {
  cubert_race_options_t ro;
  if (!o->race_check) return CUBERT_STATUS_OK;
  cubert_race_options_initialize(&ro);
  ro.max_streams = kit->max_streams + 1; /* the GC stream has a timeline too */
  ro.sink = o->race_sink;
  if (cubert_race_checker_create(kit->allocator, &ro, &kit->race, out_error) != CUBERT_STATUS_OK) {
    kit->race = NULL;
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "race checker");
  }
  if (o->race_seed) cubert_race_set_seed(kit->race, o->race_seed);
  return CUBERT_STATUS_OK;
}

void kit_race_destroy(cubert_kit_t *kit) {
  cubert_race_checker_destroy(kit->race);
  kit->race = NULL;
}

static void race_note(cubert_kit_t *kit, cubert_status_t status) {
  if (status != CUBERT_STATUS_OK) kit->race_errors++;
}

void kit_race_op(cubert_kit_t *kit, uint32_t slot, const char *name, const cubert_binding_t *b,
                 const uint8_t *modes, uint32_t count) {
  uint64_t op = 0;
  uint32_t i;
  if (!kit->race) return;
  if (cubert_race_op_begin(kit->race, slot, name, &op) != CUBERT_STATUS_OK) {
    kit->race_errors++;
    return;
  }
  for (i = 0; i < count; i++)
    race_note(kit, cubert_race_access(kit->race, cubert_race_buffer_id(b[i].memory), slot, op,
                                      (cubert_race_access_t)modes[i], b[i].offset_start,
                                      b[i].size - b[i].offset_end));
}

void kit_race_host_op(cubert_kit_t *kit, const char *name, const cubert_binding_t *b) {
  uint64_t op = 0;
  if (!kit->race) return;
  if (cubert_race_op_begin(kit->race, CUBERT_RACE_HOST, name, &op) != CUBERT_STATUS_OK) {
    kit->race_errors++;
    return;
  }
  race_note(kit, cubert_race_access(kit->race, cubert_race_buffer_id(b->memory), CUBERT_RACE_HOST,
                                    op, CUBERT_RACE_WRITE, b->offset_start,
                                    b->size - b->offset_end));
}

cubert_race_event_t kit_race_record(cubert_kit_t *kit, uint32_t slot) {
  cubert_race_event_t token = {0, 0};
  if (!kit->race) return token;
  race_note(kit, cubert_race_event_record(kit->race, slot, &token));
  return token;
}

void kit_race_stream_wait(cubert_kit_t *kit, uint32_t slot, cubert_race_event_t event) {
  if (!kit->race || event.index == 0) return;
  race_note(kit, cubert_race_stream_wait_event(kit->race, slot, event));
}

void kit_race_release(cubert_kit_t *kit, cubert_race_event_t event) {
  if (!kit->race || event.index == 0) return;
  race_note(kit, cubert_race_event_release(kit->race, event));
}

void kit_race_host_sync(cubert_kit_t *kit, uint32_t slot) {
  if (!kit->race) return;
  race_note(kit, cubert_race_host_sync_stream(kit->race, slot));
}

/* A pinned buffer that dies with this release may be reused from now on:
 * every access must happen before the task's event (or before the reuse
 * point on the buffer's own slot). Pins are checked in batches of 8 so the
 * frame stays small. */
#define RACE_PIN_BATCH 8u

void kit_race_release_task(cubert_kit_t *kit, cubert_stream_gc_task_t *task) {
  cubert_memory_id_t ids[RACE_PIN_BATCH];
  uint32_t slots[RACE_PIN_BATCH];
  uint32_t first, i, n;
  cubert_race_event_t token;
  if (!kit->race || !task->event_) {
    cubert_stream_gc_task_release(task);
    return;
  }
  token = kit_event_race_take(task->event_);
  if (task->pin_count_ <= RACE_PIN_BATCH) {
    for (i = 0; i < task->pin_count_; i++) {
      ids[i] = task->pins_[i].memory;
      slots[i] = (uint32_t)(task->pins_[i].stream % kit->max_streams);
    }
    n = task->pin_count_;
    cubert_stream_gc_task_release(task);
    for (i = 0; i < n; i++)
      if (!cubert_memory_id_is_alive(kit->table, ids[i]))
        race_note(kit, cubert_race_reclaim_at_event(kit->race, cubert_race_buffer_id(ids[i]),
                                                    slots[i], token));
  } else {
    /* more pins than a batch: release them one by one, checking each */
    for (first = 0; first < task->pin_count_; first++) {
      cubert_binding_t *b = &task->pins_[first];
      cubert_memory_id_t id = b->memory;
      uint32_t slot = (uint32_t)(b->stream % kit->max_streams);
      (void)cubert_binding_release(kit->table, b);
      if (!cubert_memory_id_is_alive(kit->table, id))
        race_note(kit, cubert_race_reclaim_at_event(kit->race, cubert_race_buffer_id(id), slot,
                                                    token));
    }
    task->pin_count_ = 0;
    cubert_stream_gc_task_release(task);
  }
  race_note(kit, cubert_race_event_release(kit->race, token));
}

/* ---- the checker's state, for the client's accessors ---- */

void cubert_kit_race_state(const cubert_kit_t *kit, cubert_race_counters_t *out_counters,
                           cubert_race_report_t *out_last, bool *out_has_last) {
  if (out_counters) cubert_race_counters(kit->race, out_counters); /* zeros for NULL */
  if (out_last) *out_has_last = cubert_race_last_report(kit->race, out_last);
}

void cubert_kit_set_race_seed(cubert_kit_t *kit, uint64_t seed) {
  if (!kit->race) return;
  if (seed)
    cubert_race_set_seed(kit->race, seed);
  else
    cubert_race_clear_seed(kit->race);
}

#else /* !CUBERT_CONFIG_RACE_CHECKER: the hooks do nothing (kit->race stays NULL) */

cubert_status_t kit_race_create(cubert_kit_t *kit, const cubert_kit_options_t *o,
                                cubert_error_t *out_error) {
  (void)kit;
  if (!o->race_check) return CUBERT_STATUS_OK;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0,
                          "the race checker (CUBERT_CONFIG_RACE_CHECKER=0)");
}

void kit_race_destroy(cubert_kit_t *kit) { (void)kit; }

void kit_race_op(cubert_kit_t *kit, uint32_t slot, const char *name, const cubert_binding_t *b,
                 const uint8_t *modes, uint32_t count) {
  (void)kit;
  (void)slot;
  (void)name;
  (void)b;
  (void)modes;
  (void)count;
}

void kit_race_host_op(cubert_kit_t *kit, const char *name, const cubert_binding_t *b) {
  (void)kit;
  (void)name;
  (void)b;
}

cubert_race_event_t kit_race_record(cubert_kit_t *kit, uint32_t slot) {
  cubert_race_event_t none;
  (void)kit;
  (void)slot;
  none.index = 0;
  none.generation = 0;
  return none;
}

void kit_race_stream_wait(cubert_kit_t *kit, uint32_t slot, cubert_race_event_t event) {
  (void)kit;
  (void)slot;
  (void)event;
}

void kit_race_release(cubert_kit_t *kit, cubert_race_event_t event) {
  (void)kit;
  (void)event;
}

void kit_race_host_sync(cubert_kit_t *kit, uint32_t slot) {
  (void)kit;
  (void)slot;
}

void kit_race_release_task(cubert_kit_t *kit, cubert_stream_gc_task_t *task) {
  (void)kit;
  cubert_stream_gc_task_release(task);
}

void cubert_kit_race_state(const cubert_kit_t *kit, cubert_race_counters_t *out_counters,
                           cubert_race_report_t *out_last, bool *out_has_last) {
  (void)kit;
  if (out_counters) cubert_race_counters(NULL, out_counters); /* zeros */
  if (out_last) *out_has_last = false;
}

void cubert_kit_set_race_seed(cubert_kit_t *kit, uint64_t seed) {
  (void)kit;
  (void)seed;
}

#endif /* CUBERT_CONFIG_RACE_CHECKER */
