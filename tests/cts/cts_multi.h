/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/cts_multi.h: several devices in one test process, for the
 * multi-device and collective conformance tests.
 */
#ifndef CUBERT_CTS_MULTI_H
#define CUBERT_CTS_MULTI_H

#include "cts.h"

#define MDEV_MAX 8

typedef struct mdev_t {
  uint32_t n;
  cts_env_t env[MDEV_MAX]; /* env[i]: device index first_index + i, own counting allocator */
  cubert_device_id_t ids[MDEV_MAX];
} mdev_t;

/* Create one device `index` of the driver under test in env with a counting
 * allocator, 8 streams, 2 workers and the given collective timeout (0: the
 * default). */
void mdev_create(cts_env_t *env, uint32_t index, uint32_t collective_timeout_ms);
/* Does env's device have collectives (cts_has_collectives)? */
int mdev_collectives(const cts_env_t *env);
/* n devices with indices first_index .. first_index + n - 1. */
void mdev_setup(mdev_t *m, uint32_t n, uint32_t first_index, uint32_t collective_timeout_ms);
/* The same for a test that needs collectives: it is skipped (before any
 * device is made) when the device under test has none (the inline driver;
 * its UNSUPPORTED answer is checked by cts_all_reduce_single_member_communicator). */
void mdev_setup_comm(mdev_t *m, uint32_t n, uint32_t first_index, uint32_t collective_timeout_ms);
/* Release every device still alive (env[i].client != NULL), check each
 * allocator came back to zero, and that no communicator is left. */
void mdev_teardown(mdev_t *m);
/* Communicators alive in the process (os/os_comm.c). */
uint32_t mdev_live_communicators(void);
/* Monotonic milliseconds. */
uint64_t mdev_now_ms(void);
/* The innermost error kind of `err` (through an aggregate). */
int mdev_inner_kind(const cubert_error_t *err);

/* Collective test helpers: an f32 buffer on c; read n f32 back; every
 * device's sync_collective + sync; after sync_collective, c's next sync
 * reports a queued error whose innermost kind is `kind` (then the stream is
 * healthy again). */
cubert_handle_t mdev_make_f32(cubert_client_t *c, const float *v, size_t n);
void mdev_read_f32(cubert_client_t *c, const cubert_handle_t *h, float *out, size_t n);
void mdev_sync_all(mdev_t *m);
void mdev_expect_queued(cubert_client_t *c, cubert_error_kind_t kind);

#endif
