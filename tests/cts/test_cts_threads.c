/* SPDX-License-Identifier: MIT */
/* Conformance: client threads launching at once, each on its own stream
 * (issue 27: on a driver with concurrent launches they do not take the
 * device lock), with cross-stream reads of another thread's buffer (plans,
 * waits, pins, the release ring), pool reserves and releases, flushes and
 * syncs in between: every result exact. Run under TSan by `make tsan`
 * (docs/robustness.md). */
#include "cts.h"

#include <pthread.h>
#if defined(CUBERT_TEST_EMBEDDED)
#define shard_yield() ((void)0) /* no threads there: pthread_create fails */
#else
#include <sched.h>
#define shard_yield() ((void)sched_yield())
#endif

#include "cubert/cube.h"
#include "cubert_kernels.h"

#define SHARD_THREADS 8
#define SHARD_ELEMS 512u
#define SHARD_ITERS 240

typedef struct shard_worker_t {
  cubert_client_t *client; /* pinned to its own stream */
  int id;
  int ok;
  const char *failed; /* the first failing step */
  cubert_handle_t input, mine, scratch;
  struct shard_shared_t *shared;
} shard_worker_t;

typedef struct shard_shared_t {
  shard_worker_t workers[SHARD_THREADS];
  uint32_t arrived[2]; /* the two barriers (atomic) */
} shard_shared_t;

static void shard_barrier(uint32_t *count) {
  __atomic_add_fetch(count, 1, __ATOMIC_ACQ_REL);
  while (__atomic_load_n(count, __ATOMIC_ACQUIRE) < SHARD_THREADS) shard_yield();
}

#define SHARD_STEP(w, what, expr)                       \
  do {                                                  \
    if ((expr) != CUBERT_STATUS_OK && (w)->ok) {        \
      (w)->ok = 0;                                      \
      (w)->failed = (what);                             \
    }                                                   \
  } while (0)

static cubert_launch_arguments_t shard_args(const cubert_binding_t *b, uint32_t nb, const uint64_t *s,
                                            uint32_t ns) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = s;
  a.scalar_count = ns;
  return a;
}

static void *shard_program(void *arg) {
  shard_worker_t *w = (shard_worker_t *)arg;
  shard_shared_t *sh = w->shared;
  uint32_t data[SHARD_ELEMS], out[SHARD_ELEMS];
  const uint64_t one = 1;
  cubert_cube_count_t count = cubert_cube_count_new_1d(SHARD_ELEMS / CK_SMALL_BLOCK);
  cubert_launch_arguments_t args;
  cubert_handle_t pair[2], tmp;
  const shard_worker_t *next = &sh->workers[(w->id + 1) % SHARD_THREADS];
  uint32_t k;
  int it;
  w->ok = 1;
  w->failed = NULL;
  for (k = 0; k < SHARD_ELEMS; k++) data[k] = (uint32_t)w->id * 1000u + k;
  SHARD_STEP(w, "create input", cubert_client_create_from_slice(w->client, data, sizeof data, &w->input, NULL));
  for (k = 0; k < SHARD_ELEMS; k++) data[k] = k;
  SHARD_STEP(w, "create mine", cubert_client_create_from_slice(w->client, data, sizeof data, &w->mine, NULL));
  SHARD_STEP(w, "create scratch", cubert_client_empty(w->client, sizeof data, &w->scratch, NULL));
  shard_barrier(&sh->arrived[0]); /* every input exists */
  for (it = 0; it < SHARD_ITERS && w->ok; it++) {
    args = shard_args(&w->mine, 1, &one, 1); /* own stream only: the sharded path */
    SHARD_STEP(w, "launch own", cubert_client_launch(w->client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
    if (it % 8 == 3) { /* read the next thread's input: a wait on its stream, a pin */
      pair[0] = next->input;
      pair[1] = w->scratch;
      args = shard_args(pair, 2, NULL, 0);
      SHARD_STEP(w, "launch cross", cubert_client_launch(w->client, &ck_double_u32_kernel, &count, &args, NULL));
    }
    if (it % 32 == 5) { /* a pool reserve and release between launches */
      SHARD_STEP(w, "empty", cubert_client_empty(w->client, 256u << (it % 5), &tmp, NULL));
      SHARD_STEP(w, "release", cubert_client_handle_release(w->client, &tmp, NULL));
    }
    if (it % 64 == 17) SHARD_STEP(w, "flush", cubert_client_flush(w->client, NULL));
    if (it % 64 == 49) SHARD_STEP(w, "sync", cubert_client_sync(w->client, NULL));
  }
  SHARD_STEP(w, "read mine", cubert_client_read_one(w->client, &w->mine, out, sizeof out, NULL));
  for (k = 0; k < SHARD_ELEMS && w->ok; k++)
    if (out[k] != k + SHARD_ITERS) {
      w->ok = 0;
      w->failed = "own buffer's value";
    }
  SHARD_STEP(w, "read scratch", cubert_client_read_one(w->client, &w->scratch, out, sizeof out, NULL));
  for (k = 0; k < SHARD_ELEMS && w->ok; k++)
    if (out[k] != 2u * ((uint32_t)next->id * 1000u + k)) {
      w->ok = 0;
      w->failed = "cross-stream read's value";
    }
  shard_barrier(&sh->arrived[1]); /* nobody reads an input any more */
  SHARD_STEP(w, "release input", cubert_client_handle_release(w->client, &w->input, NULL));
  SHARD_STEP(w, "release mine", cubert_client_handle_release(w->client, &w->mine, NULL));
  SHARD_STEP(w, "release scratch", cubert_client_handle_release(w->client, &w->scratch, NULL));
  return NULL;
}

static void shard_run(int race_off) {
  cts_env_t env;
  cts_options_t o;
  pthread_t t[SHARD_THREADS];
  static shard_shared_t sh;
  int i;
  memset(&o, 0, sizeof o);
  o.max_streams = 32;
  o.race_off = race_off;
  cts_setup_with(&env, &o);
  memset(&sh, 0, sizeof sh);
  for (i = 0; i < SHARD_THREADS; i++) {
    sh.workers[i].id = i;
    sh.workers[i].shared = &sh;
    CHECK_OK(cubert_client_clone(env.client, &sh.workers[i].client, NULL));
    cubert_client_set_stream(sh.workers[i].client, 1u + (uint64_t)i); /* slots 1..8 */
  }
  for (i = 0; i < SHARD_THREADS; i++) CHECK(pthread_create(&t[i], NULL, shard_program, &sh.workers[i]) == 0);
  for (i = 0; i < SHARD_THREADS; i++) pthread_join(t[i], NULL);
  for (i = 0; i < SHARD_THREADS; i++) {
    CHECK_MSG(sh.workers[i].ok, "thread %d failed at: %s", i,
              sh.workers[i].failed ? sh.workers[i].failed : "?");
    cubert_client_release(sh.workers[i].client);
  }
  CHECK_OK(cubert_client_sync(env.client, NULL));
  cts_teardown(&env);
}

/* Without the race checker: the launches on their own stream take the
 * sharded path (on the threaded CPU driver). */
TEST(cts_threads_launch_own_streams_cross_reads) {
  CTS_REQUIRE_THREADS();
  shard_run(1);
}

/* With the race checker (unless CUBERT_CTS_RACE=0): every launch takes the
 * device lock, and the checker, hearing every thread, reports nothing. */
TEST(cts_threads_launch_own_streams_race_checked) {
  CTS_REQUIRE_THREADS();
  shard_run(0);
}
