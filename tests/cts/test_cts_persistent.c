/* SPDX-License-Identifier: MIT */
/* Conformance: memory_persistent_allocation(f) with nested windows, and
 * exclusive access. */
#include "cts.h"

#include <pthread.h>
#include <time.h>

#include "cubert/cube.h"
#include "cubert_kernels.h"

#define ALLOC 1024 /* a multiple of the CPU alignment: persistent slices are exact */

typedef struct win_t {
  cubert_client_t *client;
  cubert_handle_t h[8];
  int n;
  uint64_t reserved_after_inner;
  cubert_status_t inner_status;
  int fail;
} win_t;

static uint64_t reserved(cubert_client_t *client) {
  cubert_memory_usage_t u;
  CHECK_OK(cubert_client_memory_usage(client, &u, NULL));
  return u.bytes_reserved;
}

static void alloc_one(win_t *w, uint8_t fill) {
  uint8_t data[ALLOC];
  memset(data, fill, sizeof data);
  CHECK_OK(cubert_client_create_from_slice(w->client, data, sizeof data, &w->h[w->n++], NULL));
}

static cubert_status_t inner_window(void *user, cubert_error_t *err) {
  win_t *w = (win_t *)user;
  (void)err;
  alloc_one(w, 2);
  return CUBERT_STATUS_OK;
}

static cubert_status_t outer_window(void *user, cubert_error_t *err) {
  win_t *w = (win_t *)user;
  alloc_one(w, 1);
  w->inner_status = cubert_client_memory_persistent_allocation(w->client, inner_window, w, err);
  w->reserved_after_inner = reserved(w->client);
  alloc_one(w, 3); /* after the inner window closed: still persistent */
  return w->fail ? cubert_error_set(err, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "window boom")
                 : CUBERT_STATUS_OK;
}

/* Persistent slices are exact-fit storage allocations: three ALLOC-byte
 * allocations made inside the (nested) windows reserve exactly 3 * ALLOC;
 * an allocation after the outer window goes to a sliced page. */
TEST(cts_persistent_allocation_nested_windows) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PERSISTENT_MEMORY | CUBERT_FEATURE_PAGED_POOLS);
  cts_env_t env;
  win_t w;
  uint64_t r0, r1, r2;
  uint8_t out[ALLOC];
  int i;
  cts_setup(&env, 0);
  memset(&w, 0, sizeof w);
  w.client = env.client;
  r0 = reserved(env.client);
  CHECK_OK(cubert_client_memory_persistent_allocation(env.client, outer_window, &w, NULL));
  CHECK_OK(w.inner_status);
  r1 = reserved(env.client);
  CHECK_EQ_U64(w.reserved_after_inner - r0, 2 * ALLOC);
  CHECK_EQ_U64(r1 - r0, 3 * ALLOC);
  alloc_one(&w, 4); /* Auto again: a whole page of a sliced pool */
  r2 = reserved(env.client);
  CHECK_MSG(r2 - r1 > ALLOC, "auto allocation reserved %llu bytes",
            (unsigned long long)(r2 - r1));
  for (i = 0; i < w.n; i++) {
    CHECK_OK(cubert_client_read_one(env.client, &w.h[i], out, sizeof out, NULL));
    CHECK(out[0] == (uint8_t)(i + 1) && out[ALLOC - 1] == (uint8_t)(i + 1));
    CHECK_OK(cubert_client_handle_release(env.client, &w.h[i], NULL));
  }
  cts_teardown(&env);
}

/* A failing f: its error is returned and the stream is Auto again. */
TEST(cts_persistent_allocation_failing_fn_restores_auto) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PERSISTENT_MEMORY | CUBERT_FEATURE_PAGED_POOLS);
  cts_env_t env;
  win_t w;
  cubert_error_t err;
  uint64_t r1, r2;
  int i;
  cts_setup(&env, 0);
  memset(&w, 0, sizeof w);
  w.client = env.client;
  alloc_one(&w, 9); /* an Auto page exists from here on */
  w.fail = 1;
  CHECK_STATUS(cubert_client_memory_persistent_allocation(env.client, outer_window, &w, &err),
               CUBERT_STATUS_INTERNAL);
  CHECK(strstr(err.reason, "window boom") != NULL);
  r1 = reserved(env.client);
  alloc_one(&w, 5); /* fits the existing Auto page: nothing new reserved */
  r2 = reserved(env.client);
  CHECK_EQ_U64(r2 - r1, 0);
  CHECK_STATUS(cubert_client_memory_persistent_allocation(env.client, NULL, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_memory_persistent_allocation(NULL, outer_window, &w, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  for (i = 0; i < w.n; i++) CHECK_OK(cubert_client_handle_release(env.client, &w.h[i], NULL));
  cts_teardown(&env);
}

typedef struct many_t {
  cubert_client_t *client;
  uint64_t level;
  cubert_status_t deepest;
  cubert_error_t deepest_error;
  int ran_deepest;
} many_t;

/* Opens a window on stream `level`, then recurses on the next stream. */
static cubert_status_t open_next(void *user, cubert_error_t *err) {
  many_t *m = (many_t *)user;
  (void)err;
  if (m->level == CUBERT_CLIENT_MAX_PERSISTENT_STREAMS) {
    m->ran_deepest = 1;
    return CUBERT_STATUS_OK;
  }
  m->level++;
  cubert_client_set_stream(m->client, m->level);
  if (m->level == CUBERT_CLIENT_MAX_PERSISTENT_STREAMS) {
    m->deepest = cubert_client_memory_persistent_allocation(m->client, open_next, m,
                                                            &m->deepest_error);
    return CUBERT_STATUS_OK;
  }
  return cubert_client_memory_persistent_allocation(m->client, open_next, m, err);
}

/* More streams with an open window than the table holds: OUT_OF_RANGE,
 * f does not run; every window closes afterwards. */
TEST(cts_persistent_allocation_too_many_streams) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PERSISTENT_MEMORY);
  cts_env_t env;
  many_t m;
  cts_setup(&env, 0);
  memset(&m, 0, sizeof m);
  m.client = env.client;
  cubert_client_set_stream(env.client, 0);
  /* streams 0 .. 15 open windows; the 17th stream (16) is refused */
  CHECK_OK(cubert_client_memory_persistent_allocation(env.client, open_next, &m, NULL));
  CHECK_STATUS(m.deepest, CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(cubert_error_kind(&m.deepest_error), CUBERT_ERROR_OUT_OF_RANGE);
  CHECK_EQ_I64(m.ran_deepest, 0);
  /* all closed: a new window on the refused stream works */
  memset(&m, 0, sizeof m);
  m.client = env.client;
  m.level = CUBERT_CLIENT_MAX_PERSISTENT_STREAMS - 1;
  cubert_client_set_stream(env.client, CUBERT_CLIENT_MAX_PERSISTENT_STREAMS);
  CHECK_OK(cubert_client_memory_persistent_allocation(env.client, open_next, &m, NULL));
  CHECK_OK(m.deepest);
  CHECK_EQ_I64(m.ran_deepest, 1);
  cubert_client_unpin(env.client);
  cts_teardown(&env);
}

/* ---- exclusive access ---- */

typedef struct excl_t {
  cubert_client_t *other;
  pthread_t thread;
  int inside;      /* atomically accessed */
  int seen_inside; /* what the other thread saw when its device call returned */
  cubert_status_t other_status;
} excl_t;

static void *other_thread(void *arg) {
  excl_t *x = (excl_t *)arg;
  x->other_status = cubert_client_flush(x->other, NULL);
  x->seen_inside = __atomic_load_n(&x->inside, __ATOMIC_SEQ_CST);
  return NULL;
}

static cubert_status_t hold_device(void *user, cubert_error_t *err) {
  excl_t *x = (excl_t *)user;
  (void)err;
  __atomic_store_n(&x->inside, 1, __ATOMIC_SEQ_CST);
  if (pthread_create(&x->thread, NULL, other_thread, x) != 0) return CUBERT_STATUS_INTERNAL;
  cts_sleep_ms(50);
  __atomic_store_n(&x->inside, 0, __ATOMIC_SEQ_CST);
  return CUBERT_STATUS_OK;
}

/* Another thread's device call waits until the exclusive section ended. */
TEST(cts_exclusive_holds_off_other_threads) {
  cts_env_t env;
  excl_t x;
  CTS_REQUIRE_THREADS();
  cts_setup(&env, 0);
  memset(&x, 0, sizeof x);
  x.seen_inside = -1;
  CHECK_OK(cubert_client_clone(env.client, &x.other, NULL));
  CHECK_OK(cubert_client_exclusive(env.client, hold_device, &x, NULL));
  CHECK(pthread_join(x.thread, NULL) == 0);
  CHECK_OK(x.other_status);
  CHECK_EQ_I64(x.seen_inside, 0);
  cubert_client_release(x.other);
  cts_teardown(&env);
}

typedef struct nested_t {
  cubert_client_t *client;
  cubert_handle_t h;
  uint32_t out[4];
} nested_t;

static cubert_status_t inner_read(void *user, cubert_error_t *err) {
  nested_t *n = (nested_t *)user;
  return cubert_client_read_one(n->client, &n->h, n->out, sizeof n->out, err);
}

static cubert_status_t outer_launch_then_nest(void *user, cubert_error_t *err) {
  nested_t *n = (nested_t *)user;
  uint64_t delta = 5;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&args);
  args.buffers = &n->h;
  args.buffer_count = 1;
  args.scalars = &delta;
  args.scalar_count = 1;
  CUBERT_RETURN_IF_ERROR(cubert_client_launch(n->client, &ck_add_scalar_u32_kernel, &count, &args, err));
  CUBERT_RETURN_IF_ERROR(cubert_client_exclusive(n->client, inner_read, n, err));
  return cubert_error_set(err, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "after nesting");
}

/* exclusive nests (inline), and an error after device work inside it is
 * returned while the work itself stays done and the device usable. */
TEST(cts_exclusive_nested_and_failing_after_work) {
  cts_env_t env;
  nested_t n;
  cubert_error_t err;
  uint32_t data[4] = {1, 2, 3, 4}, out[4];
  cts_setup(&env, 0);
  memset(&n, 0, sizeof n);
  n.client = env.client;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &n.h, NULL));
  CHECK_STATUS(cubert_client_exclusive(env.client, outer_launch_then_nest, &n, &err),
               CUBERT_STATUS_INTERNAL);
  CHECK(strstr(err.reason, "after nesting") != NULL);
  CHECK_EQ_U64(n.out[0], 6); /* the nested read saw the launch */
  CHECK_OK(cubert_client_read_one(env.client, &n.h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[3], 9);
  CHECK_OK(cubert_client_handle_release(env.client, &n.h, NULL));
  cts_teardown(&env);
}
