/* SPDX-License-Identifier: MIT */
/* tests/support/fake_event_backend.c: see fake_event_backend.h. */
#include "fake_event_backend.h"

#include <stdlib.h>
#include <string.h>

static int countdown(uint32_t *at) {
  if (*at == 0) return 0;
  return --*at == 0;
}

static cubert_status_t injected(const fake_event_backend_t *fb, cubert_error_t *out_error,
                                const char *what) {
  if (fb->fail_without_record) return CUBERT_STATUS_UNAVAILABLE;
  return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_LOST, NULL, 0, what);
}

static void push_op(fake_stream_t *s, fake_op_t op) {
  if (s->len == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    fake_op_t *ops = (fake_op_t *)realloc(s->ops, cap * sizeof(fake_op_t));
    if (!ops) abort();
    s->ops = ops;
    s->cap = cap;
  }
  s->ops[s->len++] = op;
}

static cubert_status_t fake_create_stream(void *self, uint32_t slot, void **out_stream,
                                          cubert_error_t *out_error) {
  fake_event_backend_t *fb = (fake_event_backend_t *)self;
  fake_stream_t *s;
  if (countdown(&fb->fail_create_at)) return injected(fb, out_error, "fake: create_stream failed");
  if (slot >= FAKE_EVENT_MAX_SLOTS || fb->nall == FAKE_EVENT_MAX_STREAMS || fb->by_slot[slot])
    abort(); /* test bug: the multi-stream made two live streams for one slot */
  s = (fake_stream_t *)calloc(1, sizeof(*s));
  if (!s) abort();
  s->slot = slot;
  fb->by_slot[slot] = s;
  fb->all[fb->nall++] = s;
  fb->creates++;
  fb->live_streams++;
  *out_stream = s;
  return CUBERT_STATUS_OK;
}

static void fake_destroy_stream(void *self, void *stream) {
  fake_event_backend_t *fb = (fake_event_backend_t *)self;
  fake_stream_t *s = (fake_stream_t *)stream;
  if (s->destroyed || fb->by_slot[s->slot] != s) abort();
  s->destroyed = 1;
  fb->by_slot[s->slot] = NULL;
  fb->destroys++;
  fb->live_streams--;
}

static cubert_status_t fake_flush(void *self, void *stream, void **out_event,
                                  cubert_error_t *out_error) {
  fake_event_backend_t *fb = (fake_event_backend_t *)self;
  fake_stream_t *s = (fake_stream_t *)stream;
  fake_event_t *e;
  fake_op_t op;
  if (countdown(&fb->fail_flush_at)) return injected(fb, out_error, "fake: flush failed");
  if (s->destroyed) abort();
  memset(&op, 0, sizeof op);
  op.kind = FAKE_OP_RECORD;
  push_op(s, op);
  e = (fake_event_t *)calloc(1, sizeof(*e));
  if (!e) abort();
  e->stream = s;
  e->position = s->len;
  fb->flushes++;
  fb->live_events++;
  *out_event = e;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fake_wait_event(void *self, void *stream, void *event,
                                       cubert_error_t *out_error) {
  fake_event_backend_t *fb = (fake_event_backend_t *)self;
  fake_stream_t *s = (fake_stream_t *)stream;
  fake_event_t *e = (fake_event_t *)event;
  fake_op_t op;
  if (countdown(&fb->fail_wait_at)) return injected(fb, out_error, "fake: wait_event failed");
  if (s->destroyed) abort();
  memset(&op, 0, sizeof op);
  op.kind = FAKE_OP_WAIT;
  op.wait_stream = e->stream;
  op.wait_position = e->position;
  push_op(s, op);
  if (fb->nwait_log < FAKE_EVENT_WAIT_LOG) {
    fake_wait_t *w = &fb->wait_log[fb->nwait_log++];
    w->waiter_slot = s->slot;
    w->origin_slot = e->stream->slot;
    w->position = e->position;
  }
  fb->waits++;
  return CUBERT_STATUS_OK;
}

int fake_event_backend_event_completed(const void *event) {
  const fake_event_t *e = (const fake_event_t *)event;
  return e->stream->done >= e->position;
}

static cubert_status_t fake_wait_event_sync(void *self, void *event, cubert_error_t *out_error) {
  fake_event_backend_t *fb = (fake_event_backend_t *)self;
  fb->syncs++;
  if (countdown(&fb->fail_sync_at)) return injected(fb, out_error, "fake: wait_event_sync failed");
  fake_event_backend_run_all(fb);
  if (!fake_event_backend_event_completed(event))
    return cubert_error_set(out_error, CUBERT_ERROR_DEADLINE_EXCEEDED, NULL, 0,
                            "fake: event can never complete");
  return CUBERT_STATUS_OK;
}

static bool fake_event_completed(void *self, void *event) {
  ((fake_event_backend_t *)self)->completed_queries++;
  return fake_event_backend_event_completed(event) != 0;
}

static void fake_release_event(void *self, void *event) {
  fake_event_backend_t *fb = (fake_event_backend_t *)self;
  fb->live_events--;
  free(event);
}

static uint64_t fake_handle_cursor(void *self, void *origin_stream,
                                   const cubert_binding_t *binding) {
  fake_event_backend_t *fb = (fake_event_backend_t *)self;
  (void)origin_stream;
  fb->cursor_queries++;
  return fb->cursor_override ? fb->cursor_value : binding->cursor;
}

static const cubert_event_backend_vtable_t k_fake_vtable = {
    .create_stream = fake_create_stream,
    .destroy_stream = fake_destroy_stream,
    .flush = fake_flush,
    .wait_event = fake_wait_event,
    .wait_event_sync = fake_wait_event_sync,
    .event_completed = fake_event_completed,
    .release_event = fake_release_event,
    .handle_cursor = NULL,
};

static const cubert_event_backend_vtable_t k_fake_vtable_cursor = {
    .create_stream = fake_create_stream,
    .destroy_stream = fake_destroy_stream,
    .flush = fake_flush,
    .wait_event = fake_wait_event,
    .wait_event_sync = fake_wait_event_sync,
    .event_completed = fake_event_completed,
    .release_event = fake_release_event,
    .handle_cursor = fake_handle_cursor,
};

cubert_event_backend_t fake_event_backend_initialize(fake_event_backend_t *fb, int with_handle_cursor) {
  cubert_event_backend_t b;
  memset(fb, 0, sizeof(*fb));
  b.vtable = with_handle_cursor ? &k_fake_vtable_cursor : &k_fake_vtable;
  b.self = fb;
  return b;
}

void fake_event_backend_destroy(fake_event_backend_t *fb) {
  size_t i;
  for (i = 0; i < fb->nall; i++) {
    free(fb->all[i]->ops);
    free(fb->all[i]);
  }
  fb->nall = 0;
  memset(fb->by_slot, 0, sizeof(fb->by_slot));
}

fake_stream_t *fake_event_backend_stream(fake_event_backend_t *fb, uint32_t slot) {
  return slot < FAKE_EVENT_MAX_SLOTS ? fb->by_slot[slot] : NULL;
}

void fake_event_backend_enqueue(fake_event_backend_t *fb, void *stream, uint64_t tag) {
  fake_op_t op;
  (void)fb;
  memset(&op, 0, sizeof op);
  op.kind = FAKE_OP_USER;
  op.tag = tag;
  push_op((fake_stream_t *)stream, op);
}

static size_t run_stream(fake_stream_t *s, size_t max_ops) {
  size_t n = 0;
  while (n < max_ops && s->done < s->len) {
    const fake_op_t *op = &s->ops[s->done];
    if (op->kind == FAKE_OP_WAIT && op->wait_stream->done < op->wait_position) break;
    s->done++;
    n++;
  }
  return n;
}

size_t fake_event_backend_run(fake_event_backend_t *fb, uint32_t slot, size_t max_ops) {
  fake_stream_t *s = fake_event_backend_stream(fb, slot);
  return s ? run_stream(s, max_ops) : 0;
}

size_t fake_event_backend_run_all(fake_event_backend_t *fb) {
  size_t total = 0, progress, i;
  do {
    progress = 0;
    for (i = 0; i < fb->nall; i++) progress += run_stream(fb->all[i], (size_t)-1);
    total += progress;
  } while (progress);
  return total;
}

size_t fake_event_backend_count_ops(fake_event_backend_t *fb, uint32_t slot, fake_op_kind_t kind) {
  fake_stream_t *s = fake_event_backend_stream(fb, slot);
  size_t i, n = 0;
  if (!s) return 0;
  for (i = 0; i < s->len; i++)
    if (s->ops[i].kind == kind) n++;
  return n;
}

size_t fake_event_backend_count_waits(const fake_event_backend_t *fb, uint32_t waiter,
                                      uint32_t origin) {
  size_t i, n = 0;
  for (i = 0; i < fb->nwait_log; i++)
    if (fb->wait_log[i].waiter_slot == waiter && fb->wait_log[i].origin_slot == origin) n++;
  return n;
}
