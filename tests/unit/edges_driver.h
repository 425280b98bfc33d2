/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/edges_driver.h: the edge tests of the client and the server
 * (test_client_edges.c, test_server_edges.c) over the fake driver of
 * tests/support/fake_driver.h (its fault knobs: fail_at, fail_kind, fail_only,
 * async_errors, busy, lost), and the kernels they launch.
 */
#ifndef CUBERT_TESTS_EDGES_DRIVER_H
#define CUBERT_TESTS_EDGES_DRIVER_H

#include "test.h"
#include "counting_allocator.h"
#include "fake_driver.h"
#include "cubert/driver/driver.h"
#include "cubert/driver/server.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"

#define ED_UNUSED __attribute__((unused))

/* Server options of an edges device (type 91): fake_server_options. */
static void ED_UNUSED ed_options(cubert_server_options_t *o, uint32_t index) {
  fake_server_options(o, 91, index);
}

/* A client over `driver` (fake_driver, fake_driver_full or a copy); the device
 * initialized first (fake_device_initialize): "edges", 64 KiB pages. */
static cubert_client_t * ED_UNUSED ed_client(cubert_allocator_t a, fake_device_t *d,
                                             const cubert_server_options_t *o,
                                             const cubert_driver_t *driver) {
  cubert_client_t *client = NULL;
  fake_device_initialize(d, a);
  d->name = "edges";
  d->max_page_size = 1 << 16;
  CHECK_OK(cubert_server_client_create(a, o, driver, d, &client, NULL));
  return client;
}

static void ed_kernel_entry(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}

/* A kernel of one buffer (written) and no scalars. */
static const cubert_kernel_t g_ed_kernel ED_UNUSED = {"ed_kernel", ed_kernel_entry, NULL, NULL, 0, 0,
                                                      {1, 1, 1}, 1, 0, 0, {0}};

/* A kernel of no buffer. */
static const cubert_kernel_t g_ed_kernel_none ED_UNUSED = {"ed_kernel_none", ed_kernel_entry, NULL, NULL,
                                                           0, 0, {1, 1, 1}, 0, 0, 0, {0}};

#endif
