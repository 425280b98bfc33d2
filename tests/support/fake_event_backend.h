/* SPDX-License-Identifier: MIT */
/*
 * tests/support/fake_event_backend.h: a deterministic event driver for the
 * multi-stream tests (core/stream/stream.h). A stream is a queue of recorded ops
 * (user work, event records, waits); an event is a point (stream, position);
 * nothing runs until a test runs it: fake_event_backend_run completes ops of
 * one stream in order and stops at a wait whose event has not completed.
 * wait_event_sync runs every stream as far as it can (like a host blocking
 * until the device caught up) and fails if the event still cannot complete.
 * Calls can be made to fail (countdowns). Single-threaded; hosted (libc).
 */
#ifndef CUBERT_TESTS_FAKE_EVENT_BACKEND_H
#define CUBERT_TESTS_FAKE_EVENT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "stream/stream.h"

#define FAKE_EVENT_MAX_SLOTS 260
#define FAKE_EVENT_MAX_STREAMS 1024
#define FAKE_EVENT_WAIT_LOG 1024

typedef enum fake_op_kind_e { FAKE_OP_USER = 1, FAKE_OP_RECORD = 2, FAKE_OP_WAIT = 3 } fake_op_kind_t;

typedef struct fake_stream_t fake_stream_t;

typedef struct fake_op_t {
  fake_op_kind_t kind;
  uint64_t tag;                /* user op tag */
  fake_stream_t *wait_stream;  /* wait op: the event's stream ... */
  uint64_t wait_position;      /* ... and position */
} fake_op_t;

struct fake_stream_t {
  uint32_t slot;
  int destroyed;
  fake_op_t *ops;
  size_t len, cap;
  size_t done; /* ops completed, in order */
};

typedef struct fake_event_t {
  fake_stream_t *stream;
  uint64_t position; /* completed when stream->done >= position */
} fake_event_t;

typedef struct fake_wait_t {
  uint32_t waiter_slot; /* the stream that waits */
  uint32_t origin_slot; /* the stream whose event it waits on */
  uint64_t position;
} fake_wait_t;

typedef struct fake_event_backend_t {
  fake_stream_t *by_slot[FAKE_EVENT_MAX_SLOTS]; /* live stream of each slot */
  fake_stream_t *all[FAKE_EVENT_MAX_STREAMS];   /* every stream ever made (freed at destroy) */
  size_t nall;
  /* counters */
  uint64_t creates, destroys, flushes, waits, syncs, completed_queries, cursor_queries;
  int64_t live_streams, live_events;
  fake_wait_t wait_log[FAKE_EVENT_WAIT_LOG];
  size_t nwait_log;
  /* countdowns: n > 0 makes the nth next call fail (1 = the next one) */
  uint32_t fail_create_at, fail_flush_at, fail_wait_at, fail_sync_at;
  int fail_without_record; /* injected failures leave out_error untouched */
  /* handle_cursor (only with the _with_cursor vtable): returns this value
   * when cursor_override is set, else binding->cursor */
  int cursor_override;
  uint64_t cursor_value;
} fake_event_backend_t;

/* Zero the fake and return a driver over it; with_handle_cursor selects a
 * vtable that implements handle_cursor. */
cubert_event_backend_t fake_event_backend_initialize(fake_event_backend_t *fb, int with_handle_cursor);
/* Free every stream and the op queues (events the caller still holds leak:
 * check live_events == 0 before). */
void fake_event_backend_destroy(fake_event_backend_t *fb);

/* The live stream of a slot (NULL when none). */
fake_stream_t *fake_event_backend_stream(fake_event_backend_t *fb, uint32_t slot);
/* Enqueue user work on a stream (as a server's kernel). */
void fake_event_backend_enqueue(fake_event_backend_t *fb, void *stream, uint64_t tag);
/* Complete up to max_ops ops of the slot's stream; returns how many. */
size_t fake_event_backend_run(fake_event_backend_t *fb, uint32_t slot, size_t max_ops);
/* Run every stream until nothing can progress; returns ops completed. */
size_t fake_event_backend_run_all(fake_event_backend_t *fb);
/* Number of ops of a kind queued (done or not) on the slot's stream. */
size_t fake_event_backend_count_ops(fake_event_backend_t *fb, uint32_t slot, fake_op_kind_t kind);
/* Number of logged waits of waiter on origin. */
size_t fake_event_backend_count_waits(const fake_event_backend_t *fb, uint32_t waiter,
                                      uint32_t origin);
/* Whether an event completed (same as the vtable's event_completed). */
int fake_event_backend_event_completed(const void *event);

#endif
