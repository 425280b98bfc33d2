/* SPDX-License-Identifier: MIT */
/*
 * The server's release ring (core/server/server_gc.c) as the multi-stream's
 * plans drive it (core/server/server_stream.c), over the edges fake driver
 * (events complete unless `busy`; every fallible primitive can fail):
 * a cross-stream binding stays pinned until the event after its command
 * completed and is released exactly once; the ring's back-pressure waits for
 * the oldest event; no event, or a pin that cannot be taken, makes the server
 * wait for the command instead; steady state allocates nothing.
 */
#include "edges_driver.h"
#include "memory/handle_table.h"
#include "memory/handle_internal.h"

typedef struct rel_t {
  counting_allocator_t c;
  fake_device_t d;
  cubert_client_t *client;
  cubert_handle_table_t *table;
} rel_t;

static void rel_open(rel_t *r, uint32_t index, uint32_t gc_capacity) {
  cubert_server_options_t o;
  cubert_allocator_t a = counting_allocator_initialize(&r->c);
  ed_options(&o, index);
  o.gc_capacity = gc_capacity;
  r->client = ed_client(a, &r->d, &o, &fake_driver);
  r->table = cubert__client_handle_table(r->client);
}

/* A one-buffer launch of g_ed_kernel on `stream`. */
static void rel_launch(rel_t *r, uint64_t stream, cubert_handle_t *h) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  memset(&args, 0, sizeof args);
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 1;
  cubert_client_set_stream(r->client, stream);
  CHECK_OK(cubert_client_launch(r->client, &g_ed_kernel, &one, &args, NULL));
}

static uint32_t rel_refs(rel_t *r, const cubert_handle_t *h) {
  return (uint32_t)cubert__memory_id_descriptor_count(r->table, h->memory);
}

TEST(server_release_pin_held_until_the_commands_event_then_once) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1};
  uint32_t base;
  rel_open(&r, 40, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  base = rel_refs(&r, &h);
  r.d.busy = 1;
  rel_launch(&r, 2, &h); /* cross-stream: pinned */
  CHECK_EQ_U64(rel_refs(&r, &h), base + 1);
  CHECK_OK(cubert_client_flush(r.client, NULL)); /* polls: the event is busy */
  CHECK_EQ_U64(rel_refs(&r, &h), base + 1);
  rel_launch(&r, 1, &h); /* same stream: no pin */
  CHECK_EQ_U64(rel_refs(&r, &h), base + 1);
  r.d.busy = 0;
  CHECK_OK(cubert_client_flush(r.client, NULL)); /* completed: released */
  CHECK_EQ_U64(rel_refs(&r, &h), base);
  CHECK_OK(cubert_client_flush(r.client, NULL)); /* and only once */
  CHECK_EQ_U64(rel_refs(&r, &h), base);
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}

TEST(server_release_full_ring_waits_for_the_oldest) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1};
  uint32_t base;
  int i;
  rel_open(&r, 41, 2);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  base = rel_refs(&r, &h);
  r.d.busy = 1;
  r.d.fail_only = "event_synchronize"; /* count the blocking waits, fail none */
  r.d.calls = 0;
  rel_launch(&r, 2, &h);
  rel_launch(&r, 3, &h);
  CHECK_EQ_U64(rel_refs(&r, &h), base + 2);
  CHECK_EQ_I64(r.d.calls, 0);
  for (i = 0; i < 3; i++) rel_launch(&r, 2, &h); /* full: each waits for the oldest */
  CHECK_EQ_I64(r.d.calls, 3);
  CHECK_EQ_U64(rel_refs(&r, &h), base + 2); /* never more than the ring holds */
  r.d.busy = 0;
  r.d.fail_only = NULL;
  CHECK_OK(cubert_client_flush(r.client, NULL));
  CHECK_EQ_U64(rel_refs(&r, &h), base);
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* The event after the command cannot be recorded: the server waits for the
 * stream (no allocation) and releases at once; the call itself succeeds. */
TEST(server_release_without_an_event_waits_for_the_stream) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1};
  uint32_t base;
  rel_open(&r, 42, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  base = rel_refs(&r, &h);
  r.d.busy = 1;
  r.d.fail_only = "fake: event_record failed";
  r.d.calls = 0;
  r.d.fail_at = 2; /* the wait's event is the first, the release point the second */
  r.d.fail_kind = CUBERT_ERROR_HOST_OUT_OF_MEMORY;
  rel_launch(&r, 2, &h);
  CHECK_EQ_I64(r.d.failed, 1);
  CHECK_EQ_U64(rel_refs(&r, &h), base); /* not pinned: the command completed already */
  r.d.busy = 0;
  r.d.fail_only = NULL;
  r.d.fail_at = 0;
  CHECK_OK(cubert_client_sync(r.client, NULL));
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* A binding whose reference count is saturated cannot be pinned: the server
 * waits for the command's event instead of holding the pin. */
TEST(server_release_saturated_binding_waits_instead_of_pinning) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1};
  rel_open(&r, 43, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  /* at the limit: the pin cannot be taken */
  CHECK_OK(cubert__handle_table_debug_set_counts(r.table, h.memory, 1, CUBERT_HANDLE_MAX_COUNT - 1u));
  r.d.busy = 1;
  r.d.fail_only = "event_synchronize";
  r.d.calls = 0;
  rel_launch(&r, 2, &h);
  CHECK_EQ_I64(r.d.calls, 1); /* waited for the launch */
  CHECK_EQ_U64(rel_refs(&r, &h), CUBERT_HANDLE_MAX_COUNT); /* no pin kept */
  r.d.busy = 0;
  r.d.fail_only = NULL;
  CHECK_OK(cubert_client_flush(r.client, NULL));
  CHECK_OK(cubert__handle_table_debug_set_counts(r.table, h.memory, 1, 0));
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* Persistent allocation failure after warm-up: cross-stream launches keep
 * pinning and releasing without allocating (the ring and its pins are made
 * at creation). */
TEST(server_release_steady_state_does_not_allocate) {
  rel_t r;
  cubert_handle_t h[3];
  uint8_t data[16] = {1};
  int i, k;
  rel_open(&r, 44, 4);
  for (k = 0; k < 3; k++) {
    cubert_client_set_stream(r.client, (uint64_t)k + 1);
    CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h[k], NULL));
  }
  for (k = 0; k < 3; k++) rel_launch(&r, (uint64_t)(k + 1) % 3 + 1, &h[k]); /* warm-up */
  CHECK_OK(cubert_client_sync(r.client, NULL));
  counting_allocator_fail_at(&r.c, 1, 1);
  for (i = 0; i < 60; i++) {
    r.d.busy = i % 5 != 0; /* most events pending: the ring fills and waits */
    for (k = 0; k < 3; k++) rel_launch(&r, (uint64_t)(k + i) % 3 + 1, &h[k]);
  }
  CHECK_EQ_U64(r.c.failures, 0);
  counting_allocator_fail_at(&r.c, 0, 0);
  r.d.busy = 0;
  for (k = 0; k < 3; k++) CHECK_OK(cubert_client_handle_release(r.client, &h[k], NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* A driver's calls of one primitive, counted (none fails). */
static void rel_count(rel_t *r, const char *what) {
  r->d.fail_only = what;
  r->d.fail_at = 0;
  r->d.calls = 0;
}

TEST(server_release_one_wait_per_origin_slot) {
  rel_t r;
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_kernel_t k = {"rel_three", ed_kernel_entry, NULL, NULL, 0, 0, {1, 1, 1}, 3, 0, 0, {0}};
  uint8_t data[16] = {1};
  int i;
  rel_open(&r, 45, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h[1], NULL));
  cubert_client_set_stream(r.client, 3);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h[2], NULL));
  memset(&args, 0, sizeof args);
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 3;
  rel_count(&r, "event_wait");
  cubert_client_set_stream(r.client, 2);
  CHECK_OK(cubert_client_launch(r.client, &k, &one, &args, NULL));
  CHECK_EQ_I64(r.d.calls, 2); /* slots 1 and 3, once each */
  CHECK_OK(cubert_client_launch(r.client, &k, &one, &args, NULL));
  CHECK_EQ_I64(r.d.calls, 2); /* synced already, nothing new on the origins */
  r.d.fail_only = NULL;
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_handle_release(r.client, &h[i], NULL));
  fake_release(r.client, &r.d, &r.c);
}

TEST(server_release_same_stream_command_records_no_event) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1};
  rel_open(&r, 46, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  rel_count(&r, "event_record");
  rel_launch(&r, 1, &h);
  rel_launch(&r, 1, &h);
  CHECK_EQ_I64(r.d.calls, 0); /* nothing to wait on, nothing to pin */
  rel_launch(&r, 2, &h);
  CHECK_EQ_I64(r.d.calls, 2); /* the wait's event and the release point */
  r.d.fail_only = NULL;
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* A wait that fails: the launch returns the error, the command is not
 * enqueued and the multi-stream did not commit (the next launch waits again). */
TEST(server_release_failed_wait_enqueues_nothing) {
  rel_t r;
  cubert_handle_t h;
  cubert_error_t e;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  uint8_t data[16] = {1};
  rel_open(&r, 47, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  rel_count(&r, "fake: event_wait failed");
  r.d.fail_at = 1;
  memset(&args, 0, sizeof args);
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = 1;
  cubert_client_set_stream(r.client, 2);
  CHECK(cubert_client_launch(r.client, &g_ed_kernel, &one, &args, &e) != CUBERT_STATUS_OK ||
        cubert_client_sync(r.client, &e) != CUBERT_STATUS_OK);
  CHECK_EQ_I64(r.d.failed, 1);
  CHECK_EQ_I64(r.d.launches, 0);
  r.d.fail_at = 0;
  r.d.calls = 0;
  (void)cubert_client_sync(r.client, NULL); /* the queued failure, if any */
  rel_launch(&r, 2, &h);
  CHECK_EQ_I64(r.d.calls, 1); /* waited again: the failed plan was never committed */
  CHECK_EQ_I64(r.d.launches, 1);
  r.d.fail_only = NULL;
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* Twelve cross-stream buffers per launch and a small ring: the pin ring
 * wraps (entries skip its tail) and every pin still goes exactly once. */
TEST(server_release_pin_ring_wraps) {
  rel_t r;
  cubert_handle_t h[12];
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_kernel_t k = {"rel_many", ed_kernel_entry, NULL, NULL, 0, 0, {1, 1, 1}, 12, 0, 0, {0}};
  uint8_t data[16] = {1};
  uint32_t base[12];
  int i, n;
  rel_open(&r, 48, 3); /* pin ring: 2 * 17 = 34 entries */
  cubert_client_set_stream(r.client, 1);
  for (i = 0; i < 12; i++) CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h[i], NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  for (i = 0; i < 12; i++) base[i] = rel_refs(&r, &h[i]);
  memset(&args, 0, sizeof args);
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 12;
  r.d.busy = 1;
  for (n = 0; n < 7; n++) {
    cubert_client_set_stream(r.client, (uint64_t)(n % 2) + 2);
    CHECK_OK(cubert_client_launch(r.client, &k, &one, &args, NULL));
    /* at most two launches' pins fit (24 of 34; a third would wrap past the head) */
    CHECK(rel_refs(&r, &h[0]) <= base[0] + 2);
    CHECK(rel_refs(&r, &h[11]) >= base[11] + 1);
  }
  r.d.busy = 0;
  CHECK_OK(cubert_client_flush(r.client, NULL));
  for (i = 0; i < 12; i++) CHECK_EQ_U64(rel_refs(&r, &h[i]), base[i]);
  for (i = 0; i < 12; i++) CHECK_OK(cubert_client_handle_release(r.client, &h[i], NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* Host bytes of an upload and the pins of a launch share the ring, oldest
 * first: neither goes before its event, both go at the next poll after. */
TEST(server_release_bytes_and_pins_share_the_ring) {
  rel_t r;
  cubert_handle_t h, h2;
  cubert_memory_usage_t usage;
  uint8_t data[16] = {1};
  uint32_t base;
  rel_open(&r, 49, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  base = rel_refs(&r, &h);
  r.d.busy = 1;
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h2, NULL)); /* bytes */
  rel_launch(&r, 2, &h);                                                                /* pins */
  CHECK_EQ_U64(rel_refs(&r, &h), base + 1);
  CHECK_EQ_I64(r.d.live_events, 2);
  /* memory_usage drains the ring (exact figures): everything goes */
  CHECK_OK(cubert_client_memory_usage(r.client, &usage, NULL));
  CHECK_EQ_U64(rel_refs(&r, &h), base);
  CHECK_EQ_I64(r.d.live_events, 0);
  r.d.busy = 0;
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(r.client, &h2, NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* A lost device completes nothing: a poll releases the pins anyway (nothing
 * will run any more), and teardown leaves nothing behind. */
TEST(server_release_lost_device_releases_at_the_next_poll) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1};
  uint32_t base;
  rel_open(&r, 50, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  base = rel_refs(&r, &h);
  r.d.busy = 1;
  rel_launch(&r, 2, &h);
  CHECK_EQ_U64(rel_refs(&r, &h), base + 1);
  r.d.lost = 1;
  CHECK_STATUS(cubert_client_flush(r.client, NULL), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(rel_refs(&r, &h), base);
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}

/* Pins still pending when the device goes: teardown waits for their events
 * and releases them (no leak, every event destroyed). */
TEST(server_release_teardown_drains_pending_pins) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1};
  int i;
  rel_open(&r, 51, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  r.d.busy = 1;
  for (i = 0; i < 4; i++) rel_launch(&r, (uint64_t)i % 3 + 2, &h);
  CHECK(r.d.live_events >= 4);
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c); /* checks live events, blocks and host memory */
}

static const cubert_driver_t *rel_synchronous_driver(void) {
  static cubert_driver_t d;
  d = fake_driver;
  d.flags |= CUBERT_DRIVER_SYNCHRONOUS;
  return &d;
}

/* A driver whose events complete when recorded: the pins go at once. */
TEST(server_release_synchronous_driver_releases_at_once) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  uint8_t data[16] = {1};
  uint32_t base;
  ed_options(&o, 52);
  client = ed_client(a, &d, &o, rel_synchronous_driver());
  cubert_client_set_stream(client, 1);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  base = (uint32_t)cubert__memory_id_descriptor_count(cubert__client_handle_table(client), h.memory);
  memset(&args, 0, sizeof args);
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = 1;
  cubert_client_set_stream(client, 2);
  CHECK_OK(cubert_client_launch(client, &g_ed_kernel, &one, &args, NULL));
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(cubert__client_handle_table(client), h.memory), base);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* A write through another stream is a command like a launch: its
 * destination is pinned until the write's event, its bytes held as well. */
TEST(server_release_cross_stream_write_pins_its_destination) {
  rel_t r;
  cubert_handle_t h;
  uint8_t data[16] = {1}, more[16] = {2};
  uint32_t base;
  rel_open(&r, 53, 8);
  cubert_client_set_stream(r.client, 1);
  CHECK_OK(cubert_client_create_from_slice(r.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(r.client, NULL));
  base = rel_refs(&r, &h);
  r.d.busy = 1;
  cubert_client_set_stream(r.client, 2);
  CHECK_OK(cubert_client_write(r.client, &h, more, sizeof more, NULL));
  CHECK_EQ_U64(rel_refs(&r, &h), base + 1);
  CHECK_OK(cubert_client_flush(r.client, NULL));
  CHECK_EQ_U64(rel_refs(&r, &h), base + 1);
  r.d.busy = 0;
  CHECK_OK(cubert_client_flush(r.client, NULL));
  CHECK_EQ_U64(rel_refs(&r, &h), base);
  CHECK_OK(cubert_client_handle_release(r.client, &h, NULL));
  fake_release(r.client, &r.d, &r.c);
}
