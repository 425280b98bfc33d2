/* SPDX-License-Identifier: MIT */
/*
 * tests/support/fake_driver.h: the one fake driver of the tests, with fault
 * knobs (core only: the unit tests also run as 32-bit code and on the
 * embedded harness). Work runs at once; device memory comes from the
 * allocator (not host-addressable unless the table says so); events are
 * complete unless `busy`; streams, events and communicators are tokens.
 *
 * Two tables: fake_driver (the required primitives only: no pinned memory, no
 * collectives) and fake_driver_full (every primitive, host-addressable
 * memory, kDLCPU for DLPack, native streams as tokens). A test copies one to change a primitive or a flag.
 *
 * Faults: every fallible primitive (memory_alloc, host_alloc, copy, launch,
 * stream_create, stream_synchronize, event_record, event_wait,
 * event_synchronize, comm_create, comm_query, collective, memory_import,
 * stream_order_native) counts a call in
 * `calls`; the call numbered `fail_at` fails with an error of kind
 * `fail_kind` (DEVICE_LOST: the device is lost from then on: stream_errors
 * and event_query report it). `fail_only` counts only the primitives whose
 * message ("fake: <primitive> failed") holds it; `fail_no_record` leaves the
 * failing call's record empty (a careless driver). `fail_copy`: every copy
 * fails. `lose_at_launch`: the next launch reports the device lost (once).
 * `async_errors`: the next stream_errors calls hand that many asynchronous
 * errors to the server. Plans (fake_driver_full only; plan_create, plan_update
 * and plan_launch are fallible calls too): `plan_refuse` makes plan_create
 * answer UNSUPPORTED (the server then replays launch by launch); a plan
 * launch counts its launches in `launches` and itself in `plan_launches`.
 *
 * Not thread-safe: a device is used by one test thread (its lock does nothing).
 */
#ifndef CUBERT_TESTS_FAKE_DRIVER_H
#define CUBERT_TESTS_FAKE_DRIVER_H

#include "counting_allocator.h"
#include "cubert/driver/driver.h"
#include "cubert/driver/server.h"

typedef struct fake_device_t {
  cubert_allocator_t allocator;
  /* ---- shape (set before the client is made) ---- */
  const char *name;       /* the properties' name; NULL: "fake" */
  uint64_t max_page_size; /* the properties' max_page_size; 0: 1 MiB */
  /* ---- fault knobs ---- */
  int fail_at;            /* 1-based fallible call that fails; 0: none */
  cubert_error_kind_t fail_kind; /* its kind (fake_device_initialize: SERVER_GENERIC) */
  const char *fail_only;  /* non-NULL: only primitives whose message holds it count as calls */
  int fail_no_record;     /* the failing call leaves its record empty */
  int fail_copy;          /* every copy fails (INVALID_ARGUMENT, "fake: copy refused") */
  int lose_at_launch;     /* the next launch reports the device lost (the state is unchanged) */
  int lost;               /* the device is lost */
  int lost_silent;        /* lost, but stream_errors has no record of it */
  int async_errors;       /* stream_errors hands this many errors (one per call) */
  int busy;               /* event_query answers BUSY (only event_synchronize completes) */
  int plan_refuse;        /* plan_create answers UNSUPPORTED */
  /* ---- what happened ---- */
  int calls;              /* fallible calls so far */
  int failed;             /* calls failed so far */
  int launches, copies, collectives, destroyed, queries, syncs, host_allocs, host_frees;
  int imports, native_orders; /* memory_import / stream_order_native (fake_driver_full) */
  uint64_t last_height, last_src_pitch, last_dst_pitch; /* of the last copy */
  uint32_t last_flags;                                  /* of the last copy */
  int live_blocks, live_streams, live_events, live_host, live_comms;
  int live_plans, plans_created, plan_updates, plan_launches;
  unsigned char stream_token, event_token, comm_token;
} fake_device_t;

/* The required primitives only (flags 0). */
extern const cubert_driver_t fake_driver;
/* Every primitive, optional ones included (CUBERT_DRIVER_HOST_ADDRESSABLE). */
extern const cubert_driver_t fake_driver_full;

/* Zero `d`, then allocator `a` and fail_kind SERVER_GENERIC. */
void fake_device_initialize(fake_device_t *d, cubert_allocator_t a);

/* A lock that does nothing (one test thread). */
void fake_no_lock(void *self);

/* Server options of a fake device {type_id, index}: 4 streams, 256 handles, no lock. */
void fake_server_options(cubert_server_options_t *o, uint16_t type_id, uint32_t index);

/* A client over `driver` with `d` initialized first (fake_device_initialize);
 * the creation must succeed (CHECK). */
cubert_client_t *fake_client(cubert_allocator_t a, fake_device_t *d,
                             const cubert_server_options_t *o, const cubert_driver_t *driver);

/* Release the client and check that nothing of the device or the allocator is
 * left (destroyed once, no live block, stream, event, host buffer,
 * communicator); destroys the counting allocator. */
void fake_release(cubert_client_t *client, fake_device_t *d, counting_allocator_t *c);

#endif
