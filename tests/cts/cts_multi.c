/* SPDX-License-Identifier: MIT */
/* tests/cts/cts_multi.c: several devices of the driver under test in one
 * test process (the deterministic mode's multi-device tests run threaded:
 * collectives need the threads). */
#include "cts_multi.h"

#include <stdio.h>
#include <time.h>

#if !CUBERT_CTS_INLINE_ONLY
#include "os/os_comm.h"
#endif

void mdev_create(cts_env_t *env, uint32_t index, uint32_t collective_timeout_ms) {
  cts_options_t o;
  memset(&o, 0, sizeof o);
  o.device_index = index;
  o.collective_timeout_ms = collective_timeout_ms;
  o.threaded = (cts_driver()->flags & CTS_DRIVER_DETERMINISTIC) != 0;
  cts_setup_with(env, &o);
}

int mdev_collectives(const cts_env_t *env) { return cts_has_collectives(env->client); }

void mdev_setup(mdev_t *m, uint32_t n, uint32_t first_index, uint32_t collective_timeout_ms) {
  uint32_t i;
  CHECK(n <= MDEV_MAX);
  memset(m, 0, sizeof(*m));
  m->n = n;
  for (i = 0; i < n; i++) {
    mdev_create(&m->env[i], first_index + i, collective_timeout_ms);
    m->ids[i] = cubert_client_device(m->env[i].client);
  }
}

void mdev_setup_comm(mdev_t *m, uint32_t n, uint32_t first_index, uint32_t collective_timeout_ms) {
  const cts_driver_t *d = cts_driver();
  if (d->require_collectives) d->require_collectives(n); /* skips when it cannot */
  mdev_setup(m, n, first_index, collective_timeout_ms);
}

void mdev_teardown(mdev_t *m) {
  uint32_t i;
  for (i = 0; i < m->n; i++)
    if (m->env[i].client) cts_teardown(&m->env[i]);
  CHECK_EQ_U64(mdev_live_communicators(), 0);
}

#if CUBERT_CTS_INLINE_ONLY
/* The inline driver alone: the communicators live in the OS layer, which is not
 * linked, and the tests that time collectives skip (mdev_setup_comm). */
uint32_t mdev_live_communicators(void) { return 0; }

uint64_t mdev_now_ms(void) { return (uint64_t)clock() * 1000u / CLOCKS_PER_SEC; }
#else
uint32_t mdev_live_communicators(void) {
  const cts_driver_t *d = cts_driver();
  if (d->live_communicators) return d->live_communicators();
  return os_comm_live();
}

uint64_t mdev_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
#endif

int mdev_inner_kind(const cubert_error_t *err) { return (int)cubert_error_kind(err); }

/* ---- collective helpers ---- */

cubert_handle_t mdev_make_f32(cubert_client_t *c, const float *v, size_t n) {
  cubert_handle_t h;
  CHECK_OK(cubert_client_create_from_slice(c, v, n * sizeof(float), &h, NULL));
  return h;
}

void mdev_read_f32(cubert_client_t *c, const cubert_handle_t *h, float *out, size_t n) {
  CHECK_OK(cubert_client_read_one(c, h, out, n * sizeof(float), NULL));
}

void mdev_sync_all(mdev_t *m) {
  uint32_t i;
  for (i = 0; i < m->n; i++) {
    CHECK_OK(cubert_client_sync_collective(m->env[i].client, NULL));
    CHECK_OK(cubert_client_sync(m->env[i].client, NULL));
  }
}

/* After sync_collective, the device's next sync reports a queued collective
 * error whose innermost kind is `kind`. */
void mdev_expect_queued(cubert_client_t *c, cubert_error_kind_t kind) {
  cubert_error_t err;
  char msg[512];
  CHECK_OK(cubert_client_sync_collective(c, NULL));
  CHECK_STATUS(cubert_client_sync(c, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(cubert_error_has_kind(&err, kind), "expected %s in: %s", cubert_error_kind_name(kind),
            msg);
  /* drained: the stream is healthy again */
  CHECK_OK(cubert_client_sync(c, NULL));
}
