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
  ed_device_t d;
  cubert_client_t *client;
  cubert_handle_table_t *table;
} rel_t;

static void rel_open(rel_t *r, uint32_t index, uint32_t gc_capacity) {
  cubert_server_options_t o;
  cubert_allocator_t a = counting_allocator_initialize(&r->c);
  ed_options(&o, index);
  o.gc_capacity = gc_capacity;
  r->client = ed_client(a, &r->d, &o, &g_ed_driver);
  r->table = cubert__client_handle_table(r->client);
}

/* A one-buffer launch of g_ed_kernel on `stream`. */
static void rel_launch(rel_t *r, uint64_t stream, cubert_handle_t *h) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  memset(&args, 0, sizeof args);
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
  ed_release(r.client, &r.d, &r.c);
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
  ed_release(r.client, &r.d, &r.c);
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
  r.d.fail_only = "edges: event_record failed";
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
  ed_release(r.client, &r.d, &r.c);
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
  ed_release(r.client, &r.d, &r.c);
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
  ed_release(r.client, &r.d, &r.c);
}
