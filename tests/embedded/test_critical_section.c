/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/test_critical_section.c: the core built with
 * CUBERT_ATOMIC_CRITICAL_SECTION=1 runs every atomic operation inside the host's
 * cubert_critical_enter/exit (critical_section_host.c), balanced and never nested, and
 * stays correct when threads contend. Linked only into the unit-test binary of
 * `make check-cortex-m0` (BUILD/critical-section).
 */
#include "test.h"

#include <pthread.h>

#include "counting_allocator.h"
#include "critical_section_host.h"
#include "cubert/handle.h"
#include "memory/handle_table.h"

#if !defined(CUBERT_ATOMIC_CRITICAL_SECTION) || !CUBERT_ATOMIC_CRITICAL_SECTION
#error "tests/embedded/test_critical_section.c is built with CUBERT_ATOMIC_CRITICAL_SECTION=1 only"
#endif

TEST(critical_section_guards_every_atomic_of_a_handle_life) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_handle_table_t *t = NULL;
  cubert_memory_id_t id;
  uint64_t before, after_acquire, after_release;
  CHECK_OK(cubert__handle_table_create(a, 1024, 3, &t));
  before = critical_section_host_enters();
  CHECK_OK(cubert__memory_id_acquire(t, &id));
  after_acquire = critical_section_host_enters();
  CHECK_OK(cubert__memory_id_retain_handle(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  after_release = critical_section_host_enters();
  CHECK_STATUS(cubert__memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_MSG(after_acquire > before, "acquire entered no critical section");
  CHECK_MSG(after_release > after_acquire, "retain/release entered no critical section");
  CHECK_EQ_U64(critical_section_host_enters(), critical_section_host_exits());
  CHECK(!critical_section_host_open());
  CHECK_EQ_U64(cubert__handle_table_live(t), 0);
  cubert__handle_table_destroy(t);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

#define CS_THREADS 4
#define CS_ROUNDS 20000

typedef struct cs_worker_t {
  cubert_handle_table_t *table;
  cubert_memory_id_t shared;
  int failures;
} cs_worker_t;

/* Each thread retains and releases the shared id and acquires/releases ids of its own:
 * lost updates in the reference counts or the free set would show as a wrong final
 * count, a failed call or a leaked slot. */
static void *cs_worker(void *arg) {
  cs_worker_t *w = (cs_worker_t *)arg;
  int i;
  for (i = 0; i < CS_ROUNDS; i++) {
    cubert_memory_id_t own;
    if (cubert__memory_id_retain_handle(w->table, w->shared) != CUBERT_STATUS_OK) w->failures++;
    if (cubert__memory_id_acquire(w->table, &own) != CUBERT_STATUS_OK) {
      w->failures++;
    } else if (cubert__memory_id_release_handle(w->table, own) != CUBERT_STATUS_OK) {
      w->failures++;
    }
    if (cubert__memory_id_release_handle(w->table, w->shared) != CUBERT_STATUS_OK) w->failures++;
  }
  return NULL;
}

TEST(critical_section_contended_counts_stay_exact) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_handle_table_t *t = NULL;
  pthread_t th[CS_THREADS];
  cs_worker_t w[CS_THREADS];
  cubert_memory_id_t shared;
  int i;
  CHECK_OK(cubert__handle_table_create(a, 4096, 5, &t));
  CHECK_OK(cubert__memory_id_acquire(t, &shared));
  for (i = 0; i < CS_THREADS; i++) {
    w[i].table = t;
    w[i].shared = shared;
    w[i].failures = 0;
    CHECK(pthread_create(&th[i], NULL, cs_worker, &w[i]) == 0);
  }
  for (i = 0; i < CS_THREADS; i++) {
    CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ_I64(w[i].failures, 0);
  }
  /* only the shared id is left, with exactly the one handle it started with */
  CHECK_EQ_U64(cubert__handle_table_live(t), 1);
  CHECK_OK(cubert__memory_id_release_handle(t, shared));
  CHECK_STATUS(cubert__memory_id_release_handle(t, shared), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(cubert__handle_table_live(t), 0);
  CHECK_EQ_U64(critical_section_host_enters(), critical_section_host_exits());
  cubert__handle_table_destroy(t);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}
