/* SPDX-License-Identifier: MIT */
/* The CPU driver's one-cube launches on their stream's own kernel context
 * (threaded mode, issue 27: no executor run lock): results as through the
 * executor, the context's blocks growing (dynamic shared memory, a cube's
 * shared arrays), their allocation failing (the launch's error at the next
 * sync, nothing ran), the contexts' own allocation failing at creation. */
#include <string.h>

#include "test.h"
#include "counting_allocator.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert_kernels.h"

/* Eight 8 KiB shared arrays in turn: a cube's block grows to them. */
CUBERT_KERNEL(solo_shared_loop) {
  CUBERT_BUFFER(uint32_t, out, 0);
  uint32_t i;
  for (i = 0; i < 8; i++) {
    CUBERT_SHARED(uint32_t, big, 2048);
    CUBERT_PHASE { CUBERT_STORE(big, UNIT_POS, i); }
    CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, CUBERT_LOAD(out, ABSOLUTE_POS) + CUBERT_LOAD(big, UNIT_POS)); }
  }
}
CUBERT_KERNEL_DESCRIPTOR(k_solo_shared_loop, solo_shared_loop, 1, 0, 0, 16, 1, 1);

static cubert_client_t *solo_client(cubert_allocator_t a, uint32_t index, cubert_error_t *e) {
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_cpu_options_initialize(&o);
  o.device.index = index;
  o.workers = 2;
  o.device.max_streams = 4;
  if (cubert_cpu_client_create(a, &o, &client, e) != CUBERT_STATUS_OK) return NULL;
  return client;
}

static cubert_status_t launch_one(cubert_client_t *client, const cubert_kernel_t *k, cubert_handle_t *h,
                                  uint32_t cubes, uint32_t dynamic_shared, cubert_error_t *e) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(cubes);
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 1;
  if (dynamic_shared) CHECK_OK(cubert_launch_arguments_set_shared_memory_bytes(&args, dynamic_shared));
  return cubert_client_launch(client, k, &count, &args, e);
}

static int error_says(const cubert_error_t *e, const char *what) {
  char text[2048];
  cubert_error_format(e, text, sizeof text);
  return strstr(text, what) != NULL;
}

TEST(cpu_solo_one_cube_launches_and_their_blocks) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_client_t *client;
  cubert_handle_t h;
  cubert_error_t e;
  uint32_t data[64], u;
  client = solo_client(a, 60, &e);
  CHECK(client != NULL);
  memset(data, 0, sizeof data);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  /* a cube's shared arrays: the block cannot grow, the cube does not run */
  counting_allocator_fail_at(&c, 1, 1); /* from the next call on */
  CHECK_OK(launch_one(client, &k_solo_shared_loop, &h, 1, 0, NULL));
  CHECK_STATUS(cubert_client_sync(client, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_MSG(error_says(&e, "shared memory"), "%s", e.reason);
  /* dynamic shared memory the context cannot get */
  CHECK_OK(launch_one(client, &ck_empty_kernel, &h, 1, 4096, NULL));
  CHECK_STATUS(cubert_client_sync(client, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_MSG(error_says(&e, "shared memory"), "%s", e.reason);
  c.fail_at = 0;
  c.fail_persist = 0;
  CHECK_OK(cubert_client_read_one(client, &h, data, sizeof data, NULL));
  for (u = 0; u < 64; u++) CHECK_EQ_U64(data[u], 0); /* nothing ran */
  /* with memory: one cube (its stream's context), then four (the executor), same sums */
  CHECK_OK(launch_one(client, &k_solo_shared_loop, &h, 1, 0, NULL));
  CHECK_OK(launch_one(client, &k_solo_shared_loop, &h, 4, 0, NULL));
  CHECK_OK(launch_one(client, &k_solo_shared_loop, &h, 1, 8192, NULL));
  CHECK_OK(cubert_client_read_one(client, &h, data, sizeof data, NULL));
  for (u = 0; u < 16; u++) CHECK_EQ_U64(data[u], 3u * 28u); /* the first cube: three launches */
  for (u = 16; u < 64; u++) CHECK_EQ_U64(data[u], 28u);     /* the others: the 4-cube one */
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* Every allocation of the creation failing in turn (the stream contexts'
 * included): an error, nothing left. */
TEST(cpu_solo_creation_out_of_memory) {
  uint64_t n;
  int failed = 0;
  for (n = 1; n < 400; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_client_t *client;
    cubert_error_t e;
    counting_allocator_fail_at(&c, n, 0);
    client = solo_client(a, 61, &e);
    if (client) {
      cubert_client_release(client);
      CHECK_EQ_I64(c.live_blocks, 0);
      counting_allocator_destroy(&c);
      break;
    }
    failed++;
    CHECK(e.status != CUBERT_STATUS_OK);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
  CHECK(failed > 3);
  CHECK(n < 400);
}
