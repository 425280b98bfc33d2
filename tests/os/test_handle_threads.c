/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_handle_threads.c: the handle table under concurrency
 * (core/memory/handle.c). 4 threads x 100k random operations on shared ids (held by
 * the main thread, retained/released by all), private ids (acquire, counts,
 * ownership, location, release: slots churn and are reused by other
 * threads), stale ids (must stay INVALID_HANDLE while their slots are
 * recycled) and "weak" ids published to other threads, which retain them
 * racing with their last release (no
 * resurrection, never acting on a new occupant). Afterwards every count is
 * exact and the table holds exactly the shared ids. The *_lanes variants
 * acquire on the threads' own lanes of the table (issue 27: distinct chunks,
 * crossed by the other threads' retains, releases and stale probes). Run
 * under TSan: `make tsan TESTS=handle_threads_`.
 */
#include <pthread.h>

#include "test.h"
#include "counting_allocator.h"
#include "cubert/handle.h"
#include "memory/handle_table.h"
#include "memory/handle_internal.h"

#define NTHREADS 4
#define NOPS 100000
#define NSHARED 8
#define NPRIVATE 16
#define NSTALE 32
#define NWEAK 8
#define NBURST 500
#define TABLE_SLOTS 4096u

typedef struct private_t {
  cubert_memory_id_t id;
  uint32_t handles;
  uint32_t bindings;
  bool used;
  bool owned;
  bool published; /* in a weak cell now */
  bool lingering; /* released by us but still published */
  int cell;       /* the weak cell it was published to, -1 if never */
  uint32_t slice; /* last location written */
} private_t;

typedef struct shared_state_t {
  cubert_handle_table_t *table;
  cubert_handle_t shared[NSHARED];
  uint64_t weak[NWEAK]; /* packed id (index << 32 | generation), 0 = empty */
  pthread_barrier_t start;
  bool lanes; /* each worker acquires on its own lane (else all on lane 0) */
} shared_state_t;

typedef struct worker_t {
  shared_state_t *st;
  int index;
  uint64_t rng;
  uint32_t held_handles[NSHARED];
  uint32_t held_bindings[NSHARED];
  private_t priv[NPRIVATE];
  cubert_memory_id_t stale[NSTALE];
  int nstale;
  uint32_t slice_counter;
  uint64_t weak_ok, weak_refused, stale_checked, acquired;
} worker_t;

static uint32_t rnd(worker_t *w, uint32_t n) {
  uint64_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  w->rng = x;
  return (uint32_t)((x >> 16) % n);
}

/* A worker's acquire: on lane 0, or on its own lane in the *_lanes tests. */
static cubert_status_t worker_acquire(worker_t *w, cubert_memory_id_t *out_id) {
  if (!w->st->lanes) return cubert__memory_id_acquire(w->st->table, out_id);
  return cubert__memory_id_acquire_lane(w->st->table, (uint32_t)w->index, out_id);
}

static uint64_t pack(cubert_memory_id_t id) { return ((uint64_t)id.index << 32) | id.generation; }

static cubert_memory_id_t unpack(uint64_t v) {
  cubert_memory_id_t id;
  id.index = (uint32_t)(v >> 32);
  id.generation = (uint32_t)v;
  return id;
}

static void remember_stale(worker_t *w, cubert_memory_id_t id) {
  w->stale[w->nstale % NSTALE] = id;
  w->nstale++;
}

static void check_private_counts(worker_t *w, private_t *p) {
  cubert_handle_table_t *t = w->st->table;
  if (p->cell >= 0) return; /* published once: others may still hold references */
  if (p->handles + p->bindings == 0) {
    CHECK(!cubert__memory_id_is_alive(t, p->id));
    return;
  }
  CHECK_EQ_U64(cubert__memory_id_handle_count(t, p->id), p->handles);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(t, p->id), p->handles + p->bindings);
  CHECK(cubert__memory_id_can_mut(t, p->id) == (p->handles <= 1));
}

static void unpublish(worker_t *w, private_t *p) {
  uint64_t expected = pack(p->id);
  if (!p->published) return;
  CHECK(__atomic_compare_exchange_n(&w->st->weak[p->cell], &expected, 0, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE));
  p->published = false;
}

/* One reference of the private id goes; the last one kills it. */
static void private_release_one(worker_t *w, private_t *p, bool handle) {
  cubert_handle_table_t *t = w->st->table;
  if (handle) {
    CHECK_OK(cubert__memory_id_release_handle(t, p->id));
    p->handles--;
  } else {
    CHECK_OK(cubert__memory_id_release_binding(t, p->id));
    p->bindings--;
  }
  if (p->handles + p->bindings > 0) return;
  /* A published id lingers in its cell after our last release (until this
   * entry is picked again), so weak readers race with its death and meet
   * its slot reused by other threads' ids. */
  if (p->published) {
    p->lingering = true;
    return;
  }
  if (p->owned) return; /* dead but owned: the slot stays until disowned */
  /* A published-then-unpublished id may still be held by a weak reader; it
   * dies with that reader's release, so it is not provably stale yet. */
  if (p->cell < 0) remember_stale(w, p->id);
  p->used = false;
}

static void private_disown(worker_t *w, private_t *p) {
  cubert_handle_table_t *t = w->st->table;
  cubert_memory_location_t loc;
  CHECK_OK(cubert__memory_id_location(t, p->id, &loc));
  CHECK_EQ_U64(loc.slice, p->slice);
  CHECK_OK(cubert__memory_id_set_owned(t, p->id, false));
  p->owned = false;
  if (p->handles + p->bindings == 0) {
    CHECK_STATUS(cubert__memory_id_location(t, p->id, &loc), CUBERT_STATUS_INVALID_HANDLE);
    remember_stale(w, p->id);
    p->used = false;
  }
}

static void op_private(worker_t *w) {
  cubert_handle_table_t *t = w->st->table;
  private_t *p = &w->priv[rnd(w, NPRIVATE)];
  cubert_memory_location_t loc;
  if (!p->used) {
    memset(p, 0, sizeof *p);
    CHECK_OK(worker_acquire(w, &p->id));
    p->used = true;
    p->handles = 1;
    p->cell = -1;
    w->acquired++;
    CHECK_OK(cubert__memory_id_location(t, p->id, &loc));
    CHECK_EQ_U64(loc.init, 0);
    CHECK_EQ_U64(loc.slice, 0);
    check_private_counts(w, p);
    return;
  }
  if (p->lingering) {
    unpublish(w, p);
    p->used = false;
    return;
  }
  if (p->handles + p->bindings == 0) { /* dead but owned */
    CHECK(p->owned);
    CHECK(!cubert__memory_id_is_alive(t, p->id));
    CHECK_STATUS(cubert__memory_id_retain_handle(t, p->id), CUBERT_STATUS_INVALID_HANDLE);
    private_disown(w, p);
    return;
  }
  switch (rnd(w, 9)) {
    case 0:
      CHECK_OK(cubert__memory_id_retain_handle(t, p->id));
      p->handles++;
      break;
    case 1:
      CHECK_OK(cubert__memory_id_retain_binding(t, p->id));
      p->bindings++;
      break;
    case 2:
    case 3:
      if (p->handles) private_release_one(w, p, true);
      else private_release_one(w, p, false);
      break;
    case 4:
      if (p->bindings) private_release_one(w, p, false);
      else if (p->handles) private_release_one(w, p, true);
      break;
    case 5: /* pool ownership: take, or drop it (the orphan move) */
      if (p->cell >= 0) break; /* weak ids stay unowned */
      if (!p->owned) {
        CHECK_OK(cubert__memory_id_set_owned(t, p->id, true));
        p->owned = true;
      } else {
        private_disown(w, p);
      }
      break;
    case 6: /* location: only this thread writes it; the slot moves between threads */
      loc.pool = (uint8_t)w->index;
      loc.init = 1;
      loc.page = (uint16_t)w->index;
      loc.slice = ++w->slice_counter;
      CHECK_OK(cubert__memory_id_set_location(t, p->id, loc));
      p->slice = loc.slice;
      CHECK_OK(cubert__memory_id_location(t, p->id, &loc));
      CHECK_EQ_U64(loc.slice, p->slice);
      CHECK_EQ_U64(loc.page, (uint16_t)w->index);
      break;
    case 7: /* publish to the weak cells */
      if (!p->published && p->cell < 0 && !p->owned) {
        int cell = (int)rnd(w, NWEAK);
        uint64_t expected = 0;
        if (__atomic_compare_exchange_n(&w->st->weak[cell], &expected, pack(p->id), false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
          p->published = true;
          p->cell = cell;
        }
      }
      break;
    default:
      break;
  }
  if (p->used) check_private_counts(w, p);
}

static void op_shared(worker_t *w) {
  cubert_handle_table_t *t = w->st->table;
  uint32_t s = rnd(w, NSHARED);
  const cubert_handle_t *h = &w->st->shared[s];
  cubert_handle_t tmp;
  switch (rnd(w, 6)) {
    case 0:
      CHECK_OK(cubert__handle_clone(t, h, &tmp));
      w->held_handles[s]++;
      break;
    case 1:
      CHECK_OK(cubert__handle_offset(t, h, 4, 4, &tmp));
      CHECK_EQ_U64(cubert_handle_size_in_used(&tmp), h->size - 8u);
      w->held_handles[s]++;
      break;
    case 2:
      CHECK_OK(cubert__handle_binding(t, h, &tmp));
      w->held_bindings[s]++;
      break;
    case 3:
      if (w->held_handles[s]) {
        CHECK_OK(cubert__handle_release(t, h));
        w->held_handles[s]--;
      }
      break;
    case 4:
      if (w->held_bindings[s]) {
        CHECK_OK(cubert__binding_release(t, h));
        w->held_bindings[s]--;
      }
      break;
    default:
      break;
  }
  /* Single-word reads that hold at every instant: our references plus the
   * main thread's base handle are included in the counts. */
  CHECK(cubert__memory_id_is_alive(t, h->memory));
  CHECK(cubert__memory_id_handle_count(t, h->memory) >= 1u + w->held_handles[s]);
  CHECK(cubert__memory_id_descriptor_count(t, h->memory) >=
        1u + w->held_handles[s] + w->held_bindings[s]);
}

static void op_weak(worker_t *w) {
  cubert_handle_table_t *t = w->st->table;
  uint64_t v = __atomic_load_n(&w->st->weak[rnd(w, NWEAK)], __ATOMIC_ACQUIRE);
  cubert_memory_id_t id;
  cubert_status_t st;
  if (!v) return;
  id = unpack(v);
  st = cubert__memory_id_retain_handle(t, id);
  if (st == CUBERT_STATUS_OK) {
    w->weak_ok++;
    CHECK(cubert__memory_id_is_alive(t, id));
    CHECK(cubert__memory_id_handle_count(t, id) >= 1u);
    CHECK_OK(cubert__memory_id_release_handle(t, id));
  } else {
    CHECK_STATUS(st, CUBERT_STATUS_INVALID_HANDLE);
    w->weak_refused++;
  }
}

static void op_stale(worker_t *w) {
  cubert_handle_table_t *t = w->st->table;
  cubert_memory_id_t id;
  cubert_memory_location_t loc;
  int n = w->nstale < NSTALE ? w->nstale : NSTALE;
  if (n == 0) return;
  id = w->stale[rnd(w, (uint32_t)n)];
  w->stale_checked++;
  switch (rnd(w, 6)) {
    case 0:
      CHECK_STATUS(cubert__memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
      break;
    case 1:
      CHECK_STATUS(cubert__memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
      break;
    case 2:
      CHECK_STATUS(cubert__memory_id_retain_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
      break;
    case 3:
      CHECK_STATUS(cubert__memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
      break;
    case 4:
      CHECK_STATUS(cubert__memory_id_set_owned(t, id, (rnd(w, 2) == 0)),
                   CUBERT_STATUS_INVALID_HANDLE);
      break;
    default:
      CHECK_STATUS(cubert__memory_id_location(t, id, &loc), CUBERT_STATUS_INVALID_HANDLE);
      CHECK(!cubert__memory_id_is_alive(t, id));
      CHECK_EQ_U64(cubert__memory_id_descriptor_count(t, id), 0);
      break;
  }
}

/* Many threads acquiring at once: concurrent chunk growth. */
static void burst(worker_t *w) {
  cubert_memory_id_t ids[NBURST];
  int i;
  for (i = 0; i < NBURST; i++) CHECK_OK(worker_acquire(w, &ids[i]));
  for (i = 0; i < NBURST; i++) {
    CHECK_EQ_U64(cubert__memory_id_handle_count(w->st->table, ids[i]), 1);
    CHECK_OK(cubert__memory_id_release_handle(w->st->table, ids[i]));
    remember_stale(w, ids[i]);
  }
}

static void *worker_main(void *arg) {
  worker_t *w = (worker_t *)arg;
  cubert_handle_table_t *t = w->st->table;
  int i, k;
  pthread_barrier_wait(&w->st->start);
  burst(w);
  for (i = 0; i < NOPS; i++) {
    uint32_t r = rnd(w, 100);
    if (r < 40) op_shared(w);
    else if (r < 80) op_private(w);
    else if (r < 90) op_weak(w);
    else op_stale(w);
  }
  /* give back everything this thread holds */
  for (k = 0; k < NPRIVATE; k++) {
    private_t *p = &w->priv[k];
    if (!p->used) continue;
    while (p->used && !p->lingering && p->handles + p->bindings > 0)
      private_release_one(w, p, p->handles > 0);
    if (p->lingering) unpublish(w, p);
    if (p->used && p->owned) private_disown(w, p);
    p->used = false;
  }
  for (k = 0; k < NSHARED; k++) {
    while (w->held_handles[k]) {
      CHECK_OK(cubert__handle_release(t, &w->st->shared[k]));
      w->held_handles[k]--;
    }
    while (w->held_bindings[k]) {
      CHECK_OK(cubert__binding_release(t, &w->st->shared[k]));
      w->held_bindings[k]--;
    }
  }
  return NULL;
}

static void stress_run(bool lanes) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  static shared_state_t st;
  static worker_t workers[NTHREADS];
  pthread_t threads[NTHREADS];
  uint32_t alive = 0, dead_owned = 0;
  uint64_t weak_ok = 0, weak_refused = 0, stale_checked = 0, acquired = 0;
  int i;
  memset(&st, 0, sizeof st);
  st.lanes = lanes;
  CHECK_OK(cubert__handle_table_create(a, TABLE_SLOTS, 0x42, &st.table));
  for (i = 0; i < NSHARED; i++)
    CHECK_OK(cubert__handle_create(st.table, 0, (uint64_t)i, 0, 4096, &st.shared[i]));
  CHECK(pthread_barrier_init(&st.start, NULL, NTHREADS) == 0);
  for (i = 0; i < NTHREADS; i++) {
    memset(&workers[i], 0, sizeof workers[i]);
    workers[i].st = &st;
    workers[i].index = i;
    workers[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    CHECK(pthread_create(&threads[i], NULL, worker_main, &workers[i]) == 0);
  }
  for (i = 0; i < NTHREADS; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    weak_ok += workers[i].weak_ok;
    weak_refused += workers[i].weak_refused;
    stale_checked += workers[i].stale_checked;
    acquired += workers[i].acquired;
  }
  pthread_barrier_destroy(&st.start);
  for (i = 0; i < NWEAK; i++) CHECK_EQ_U64(st.weak[i], 0);
  /* every count exact; only the shared ids are left */
  CHECK_OK(cubert__handle_table_debug_check(st.table, &alive, &dead_owned));
  CHECK_EQ_U64(alive, NSHARED);
  CHECK_EQ_U64(dead_owned, 0);
  CHECK_EQ_U64(cubert__handle_table_live(st.table), NSHARED);
  for (i = 0; i < NSHARED; i++) {
    CHECK_EQ_U64(cubert__memory_id_handle_count(st.table, st.shared[i].memory), 1);
    CHECK_EQ_U64(cubert__memory_id_descriptor_count(st.table, st.shared[i].memory), 1);
    CHECK_OK(cubert__handle_release(st.table, &st.shared[i]));
    CHECK(cubert__memory_id_is_free(st.table, st.shared[i].memory));
  }
  CHECK_OK(cubert__handle_table_debug_check(st.table, &alive, &dead_owned));
  CHECK_EQ_U64(cubert__handle_table_live(st.table), 0);
  /* the run did what it claims: churn, stale probes, weak races */
  CHECK(acquired > 1000);
  CHECK(stale_checked > 1000);
  CHECK(weak_ok + weak_refused > 100);
  printf("  handle_threads_stress%s: %llu private acquires, %llu stale probes, weak retains %llu ok / "
         "%llu refused\n", lanes ? "_lanes" : "",
         (unsigned long long)acquired, (unsigned long long)stale_checked,
         (unsigned long long)weak_ok, (unsigned long long)weak_refused);
  cubert__handle_table_destroy(st.table);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

TEST_EX(handle_threads_stress, 600) { stress_run(false); }

TEST_EX(handle_threads_stress_lanes, 600) { stress_run(true); }

/* ---- a 4-slot table: every release is immediately followed by a reuse ---- */

#define TINY_SLOTS 4u
#define TINY_ROUNDS 200000
#define TINY_CELLS 4

typedef struct tiny_state_t {
  cubert_handle_table_t *table;
  uint64_t cells[TINY_CELLS];
  pthread_barrier_t start;
} tiny_state_t;

typedef struct tiny_worker_t {
  tiny_state_t *st;
  int index;
  uint64_t rng;
  uint64_t full, reuses_seen, foreign_ok, foreign_refused;
} tiny_worker_t;

static uint32_t tiny_rnd(tiny_worker_t *w, uint32_t n) {
  uint64_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  w->rng = x;
  return (uint32_t)((x >> 16) % n);
}

/* Operate on an id another thread published (it may die or be replaced by a
 * new occupant at any moment): every call is OK or INVALID_HANDLE, and every
 * reference obtained is given back. */
static void tiny_foreign(tiny_worker_t *w) {
  cubert_handle_table_t *t = w->st->table;
  uint64_t v = __atomic_load_n(&w->st->cells[tiny_rnd(w, TINY_CELLS)], __ATOMIC_ACQUIRE);
  cubert_memory_id_t id;
  cubert_status_t st;
  if (!v) return;
  id = unpack(v);
  switch (tiny_rnd(w, 5)) {
    case 0:
    case 1:
      st = cubert__memory_id_retain_handle(t, id);
      if (st == CUBERT_STATUS_OK) {
        w->foreign_ok++;
        CHECK(cubert__memory_id_handle_count(t, id) >= 1u);
        CHECK_OK(cubert__memory_id_release_handle(t, id));
      } else {
        CHECK_STATUS(st, CUBERT_STATUS_INVALID_HANDLE);
        w->foreign_refused++;
      }
      break;
    case 2:
      st = cubert__memory_id_retain_binding(t, id);
      if (st == CUBERT_STATUS_OK) {
        w->foreign_ok++;
        CHECK_OK(cubert__memory_id_release_binding(t, id));
      } else {
        CHECK_STATUS(st, CUBERT_STATUS_INVALID_HANDLE);
        w->foreign_refused++;
      }
      break;
    case 3: /* never owned by anyone: refused, alive or dead */
      CHECK_STATUS(cubert__memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
      break;
    default:
      (void)cubert__memory_id_is_alive(t, id);
      (void)cubert__memory_id_can_mut(t, id);
      (void)cubert__memory_id_descriptor_count(t, id);
      break;
  }
}

static void *tiny_main(void *arg) {
  tiny_worker_t *w = (tiny_worker_t *)arg;
  cubert_handle_table_t *t = w->st->table;
  int round;
  pthread_barrier_wait(&w->st->start);
  for (round = 0; round < TINY_ROUNDS; round++) {
    cubert_memory_id_t id;
    cubert_memory_location_t loc, got;
    cubert_status_t st;
    int cell = w->index, k, extra;
    uint64_t expected;
    tiny_foreign(w);
    st = cubert__memory_id_acquire(t, &id);
    if (st == CUBERT_STATUS_OUT_OF_RANGE) {
      w->full++;
      continue;
    }
    CHECK_OK(st);
    if (id.generation > 1u) w->reuses_seen++;
    /* nobody else knows the id yet: its counts are exact */
    CHECK_EQ_U64(cubert__memory_id_handle_count(t, id), 1);
    CHECK_EQ_U64(cubert__memory_id_descriptor_count(t, id), 1);
    CHECK_STATUS(cubert__memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
    CHECK_OK(cubert__memory_id_location(t, id, &got));
    CHECK_EQ_U64(got.init, 0);
    loc.pool = (uint8_t)w->index;
    loc.init = 1;
    loc.page = (uint16_t)(round & 0xFFFF);
    loc.slice = (uint32_t)round;
    CHECK_OK(cubert__memory_id_set_location(t, id, loc));
    CHECK_OK(cubert__memory_id_set_owned(t, id, true));
    CHECK_OK(cubert__memory_id_set_owned(t, id, false));
    extra = (int)tiny_rnd(w, 3);
    for (k = 0; k < extra; k++) CHECK_OK(cubert__memory_id_retain_binding(t, id));
    CHECK_EQ_U64(cubert__memory_id_descriptor_count(t, id), 1u + (uint32_t)extra);
    /* publish, work while others race on it, release, unpublish */
    __atomic_store_n(&w->st->cells[cell], pack(id), __ATOMIC_RELEASE);
    tiny_foreign(w);
    CHECK(cubert__memory_id_handle_count(t, id) >= 1u);
    CHECK_OK(cubert__memory_id_location(t, id, &got));
    CHECK_EQ_U64(got.slice, (uint32_t)round);
    CHECK_EQ_U64(got.pool, (uint8_t)w->index);
    for (k = 0; k < extra; k++) CHECK_OK(cubert__memory_id_release_binding(t, id));
    CHECK_OK(cubert__memory_id_release_handle(t, id));
    tiny_foreign(w); /* our own dead (or borrowed) id is still published */
    expected = pack(id);
    CHECK(__atomic_compare_exchange_n(&w->st->cells[cell], &expected, 0, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE));
  }
  return NULL;
}

TEST_EX(handle_threads_tiny_table_reuse, 600) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  static tiny_state_t st;
  static tiny_worker_t workers[NTHREADS];
  pthread_t threads[NTHREADS];
  uint64_t full = 0, reuses = 0, ok = 0, refused = 0;
  uint32_t alive = 1, dead_owned = 1;
  int i;
  memset(&st, 0, sizeof st);
  CHECK_OK(cubert__handle_table_create(a, TINY_SLOTS, 0x17, &st.table));
  CHECK(pthread_barrier_init(&st.start, NULL, NTHREADS) == 0);
  for (i = 0; i < NTHREADS; i++) {
    memset(&workers[i], 0, sizeof workers[i]);
    workers[i].st = &st;
    workers[i].index = i;
    workers[i].rng = 0xD1B54A32D192ED03ull * (uint64_t)(i + 7);
    CHECK(pthread_create(&threads[i], NULL, tiny_main, &workers[i]) == 0);
  }
  for (i = 0; i < NTHREADS; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    full += workers[i].full;
    reuses += workers[i].reuses_seen;
    ok += workers[i].foreign_ok;
    refused += workers[i].foreign_refused;
  }
  pthread_barrier_destroy(&st.start);
  CHECK_OK(cubert__handle_table_debug_check(st.table, &alive, &dead_owned));
  CHECK_EQ_U64(alive, 0);
  CHECK_EQ_U64(dead_owned, 0);
  CHECK_EQ_U64(cubert__handle_table_live(st.table), 0);
  CHECK(reuses > 1000);
  printf("  handle_threads_tiny_table_reuse: %llu reuses, %llu table-full, foreign ops %llu ok / "
         "%llu refused\n",
         (unsigned long long)reuses, (unsigned long long)full, (unsigned long long)ok,
         (unsigned long long)refused);
  cubert__handle_table_destroy(st.table);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

/* ---- owner fast paths: the memory manager's pattern under contention -------
 *
 * Each thread plays a pool: acquire_owned (the slot activated owned, with its
 * location), set_location_owned and disown without pins, while the other
 * threads retain and release its published ids (pins racing with the
 * unpinned disown that may free the slot, and releases that take the state
 * to 0 after the disown) and probe its stale ids with disown /
 * set_location_owned (refused while their slots are reused). A 6-slot table,
 * so every freed slot is reused at once. Locations are only read by their
 * owner. */

#define OWNER_SLOTS 6u
#define OWNER_ROUNDS 100000
#define OWNER_CELLS 4
#define OWNER_STALE 8

typedef struct owner_state_t {
  cubert_handle_table_t *table;
  uint64_t cells[OWNER_CELLS];
  uint64_t stale[NTHREADS][OWNER_STALE]; /* each thread's dead ids, readable by all */
  pthread_barrier_t start;
  bool lanes; /* each thread acquires on its own lane (else all on lane 0) */
} owner_state_t;

typedef struct owner_worker_t {
  owner_state_t *st;
  int index;
  uint64_t rng;
  int nstale;
  uint64_t full, reuses_seen, foreign_ok, foreign_refused, disown_frees, stale_probes;
} owner_worker_t;

static uint32_t owner_rnd(owner_worker_t *w, uint32_t n) {
  uint64_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  w->rng = x;
  return (uint32_t)((x >> 16) % n);
}

/* Another thread's published (owned) id: take references and give them back
 * (never ownership or location: those belong to the owner). */
static void owner_foreign(owner_worker_t *w) {
  cubert_handle_table_t *t = w->st->table;
  uint64_t v = __atomic_load_n(&w->st->cells[owner_rnd(w, OWNER_CELLS)], __ATOMIC_ACQUIRE);
  cubert_memory_id_t id;
  cubert_status_t st;
  bool handle = owner_rnd(w, 2) == 0;
  if (!v) return;
  id = unpack(v);
  st = handle ? cubert__memory_id_retain_handle(t, id) : cubert__memory_id_retain_binding(t, id);
  if (st != CUBERT_STATUS_OK) {
    CHECK_STATUS(st, CUBERT_STATUS_INVALID_HANDLE);
    w->foreign_refused++;
    return;
  }
  w->foreign_ok++;
  CHECK(cubert__memory_id_is_alive(t, id));
  CHECK(cubert__memory_id_descriptor_count(t, id) >= 1u);
  /* our reference may be the last: its release then frees the slot (the
   * owner may have disowned meanwhile) */
  if (handle) CHECK_OK(cubert__memory_id_release_handle(t, id));
  else CHECK_OK(cubert__memory_id_release_binding(t, id));
}

/* Any thread's stale id (dead and disowned by its owner, the slot possibly
 * reused and owned by someone else right now): the owner calls refuse it. */
static void owner_stale_probe(owner_worker_t *w) {
  cubert_handle_table_t *t = w->st->table;
  uint64_t v = __atomic_load_n(&w->st->stale[owner_rnd(w, NTHREADS)][owner_rnd(w, OWNER_STALE)],
                               __ATOMIC_ACQUIRE);
  cubert_memory_location_t loc = {9, 1, 9, 9};
  cubert_memory_id_t id;
  if (!v) return;
  id = unpack(v);
  w->stale_probes++;
  if (owner_rnd(w, 2)) CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  else CHECK_STATUS(cubert__memory_id_set_location_owned(t, id, loc), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
}

static void *owner_main(void *arg) {
  owner_worker_t *w = (owner_worker_t *)arg;
  cubert_handle_table_t *t = w->st->table;
  int round;
  pthread_barrier_wait(&w->st->start);
  for (round = 0; round < OWNER_ROUNDS; round++) {
    cubert_memory_id_t id;
    cubert_memory_location_t loc, got;
    cubert_status_t st;
    int cell = w->index % OWNER_CELLS, k, extra;
    uint64_t expected;
    owner_foreign(w);
    owner_stale_probe(w);
    loc.pool = (uint8_t)w->index;
    loc.init = 0;
    loc.page = (uint16_t)w->index;
    loc.slice = (uint32_t)round;
    st = w->st->lanes ? cubert__memory_id_acquire_owned_lane(t, (uint32_t)w->index, loc, &id)
                      : cubert__memory_id_acquire_owned(t, loc, &id);
    if (st == CUBERT_STATUS_OUT_OF_RANGE) {
      w->full++;
      continue;
    }
    CHECK_OK(st);
    if (id.generation > 1u) w->reuses_seen++;
    CHECK_EQ_U64(cubert__memory_id_handle_count(t, id), 1);
    CHECK_EQ_U64(cubert__memory_id_descriptor_count(t, id), 1);
    CHECK_STATUS(cubert__memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE);
    CHECK_OK(cubert__memory_id_location(t, id, &got));
    CHECK_EQ_U64(got.slice, (uint32_t)round);
    CHECK_EQ_U64(got.pool, (uint8_t)w->index);
    extra = (int)owner_rnd(w, 3);
    for (k = 0; k < extra; k++) CHECK_OK(cubert__memory_id_retain_binding(t, id));
    /* publish: others take and drop references from now on */
    expected = 0;
    if (!__atomic_compare_exchange_n(&w->st->cells[cell], &expected, pack(id), false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      cell = -1; /* another thread of the same cell still has its id there */
    owner_foreign(w);
    loc.init = 1;
    loc.page = (uint16_t)(round & 0xFFFF);
    CHECK_OK(cubert__memory_id_set_location_owned(t, id, loc));
    CHECK_OK(cubert__memory_id_location(t, id, &got));
    CHECK_EQ_U64(got.init, 1);
    CHECK_EQ_U64(got.page, (uint16_t)(round & 0xFFFF));
    CHECK_EQ_U64(got.slice, (uint32_t)round);
    for (k = 0; k < extra; k++) CHECK_OK(cubert__memory_id_release_binding(t, id));
    if (owner_rnd(w, 2)) {
      /* the manager's order: the user releases, later the pool disowns the
       * dead id (which frees the slot unless a foreign pin is in flight) */
      CHECK_OK(cubert__memory_id_release_handle(t, id));
      owner_foreign(w);
      CHECK_OK(cubert__memory_id_location(t, id, &got)); /* dead but owned */
      CHECK_EQ_U64(got.slice, (uint32_t)round);
      CHECK_OK(cubert__memory_id_disown(t, id));
      w->disown_frees++;
    } else {
      /* disown while alive (foreign references may outlive ours) */
      CHECK_OK(cubert__memory_id_disown(t, id));
      CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
      owner_foreign(w);
      CHECK_OK(cubert__memory_id_release_handle(t, id));
    }
    if (cell >= 0) {
      expected = pack(id);
      CHECK(__atomic_compare_exchange_n(&w->st->cells[cell], &expected, 0, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
    }
    /* the id is stale only once nobody can hold a reference: unpublished, and
     * every foreign retain that succeeded has been released (a foreign
     * retain may still be in flight, so it counts as stale when dead) */
    if (!cubert__memory_id_is_alive(t, id)) {
      __atomic_store_n(&w->st->stale[w->index][w->nstale % OWNER_STALE], pack(id),
                       __ATOMIC_RELEASE);
      w->nstale++;
    }
  }
  return NULL;
}

/* slots: OWNER_SLOTS (every freed slot reused at once), or, with lanes,
 * 3 chunks for 4 lanes (three lanes get a chunk each, the fourth shares;
 * each lane reuses its chunk's slots after a sweep of it). */
static void owner_run(bool lanes, uint32_t slots) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  static owner_state_t st;
  static owner_worker_t workers[NTHREADS];
  pthread_t threads[NTHREADS];
  uint64_t full = 0, reuses = 0, ok = 0, refused = 0, probes = 0, frees = 0;
  uint32_t alive = 1, dead_owned = 1;
  int i;
  memset(&st, 0, sizeof st);
  st.lanes = lanes;
  CHECK_OK(cubert__handle_table_create(a, slots, 0x2B, &st.table));
  CHECK(pthread_barrier_init(&st.start, NULL, NTHREADS) == 0);
  for (i = 0; i < NTHREADS; i++) {
    memset(&workers[i], 0, sizeof workers[i]);
    workers[i].st = &st;
    workers[i].index = i;
    workers[i].rng = 0xA0761D6478BD642Full * (uint64_t)(i + 3);
    CHECK(pthread_create(&threads[i], NULL, owner_main, &workers[i]) == 0);
  }
  for (i = 0; i < NTHREADS; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    full += workers[i].full;
    reuses += workers[i].reuses_seen;
    ok += workers[i].foreign_ok;
    refused += workers[i].foreign_refused;
    probes += workers[i].stale_probes;
    frees += workers[i].disown_frees;
  }
  pthread_barrier_destroy(&st.start);
  for (i = 0; i < OWNER_CELLS; i++) CHECK_EQ_U64(st.cells[i], 0);
  CHECK_OK(cubert__handle_table_debug_check(st.table, &alive, &dead_owned));
  CHECK_EQ_U64(alive, 0);
  CHECK_EQ_U64(dead_owned, 0);
  CHECK_EQ_U64(cubert__handle_table_live(st.table), 0);
  CHECK(reuses > 1000);
  CHECK(probes > 1000);
  CHECK(frees > 1000);
  if (lanes) CHECK(c.live_blocks - 2 <= (int64_t)(slots + 255u) / 256); /* no growth past capacity */
  printf("  handle_threads_owner_fast_paths%s: %llu reuses, %llu table-full, %llu release-then-disown, "
         "%llu stale probes, foreign ops %llu ok / %llu refused\n", lanes ? "_lanes" : "",
         (unsigned long long)reuses, (unsigned long long)full, (unsigned long long)frees,
         (unsigned long long)probes, (unsigned long long)ok, (unsigned long long)refused);
  cubert__handle_table_destroy(st.table);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

TEST_EX(handle_threads_owner_fast_paths, 600) { owner_run(false, OWNER_SLOTS); }

TEST_EX(handle_threads_owner_fast_paths_lanes, 600) { owner_run(true, 3u * 256u); }

/* ---- lanes stay apart: the memory manager's pattern on 4 lanes ------------
 *
 * Each thread reserves on its own lane (acquire_owned_lane, set_location_owned,
 * the user's release, the pool's disown of the previous id), 200k rounds with
 * two ids live; the other threads probe its ids. Every count is exact, and
 * the table grows no more than a chunk per lane plus one: a lane grows the
 * table only when every chunk with room is held by another lane (the
 * single-threaded tests of test_handle_lanes.c check which chunks a lane
 * takes; here threads may race for an unheld chunk and share it until one
 * of them sweeps on, which the figure printed shows). */

#define APART_ROUNDS 200000

typedef struct apart_state_t {
  cubert_handle_table_t *table;
  uint64_t last[NTHREADS]; /* each thread's latest id (packed), probed by the others */
  pthread_barrier_t start;
} apart_state_t;

typedef struct apart_worker_t {
  apart_state_t *st;
  int index;
  uint32_t chunks_seen; /* chunks this lane took ids from (bit per chunk, first 32) */
  uint64_t probes_ok;
} apart_worker_t;

static void *apart_main(void *arg) {
  apart_worker_t *w = (apart_worker_t *)arg;
  cubert_handle_table_t *t = w->st->table;
  cubert_memory_location_t loc = {1, 1, 0, 0};
  cubert_memory_id_t prev = {0, 0}, id;
  uint32_t lane = 1u + (uint32_t)w->index;
  int round;
  pthread_barrier_wait(&w->st->start);
  for (round = 0; round < APART_ROUNDS; round++) {
    uint64_t v = __atomic_load_n(&w->st->last[(w->index + 1 + round) % NTHREADS], __ATOMIC_ACQUIRE);
    CHECK_OK(cubert__memory_id_acquire_owned_lane(t, lane, loc, &id));
    w->chunks_seen |= 1u << ((((id.index & 0xFFFFFFu) - 1u) >> 8) & 31u);
    loc.slice = (uint32_t)round;
    CHECK_OK(cubert__memory_id_set_location_owned(t, id, loc));
    __atomic_store_n(&w->st->last[w->index], pack(id), __ATOMIC_RELEASE);
    if (prev.index) CHECK_OK(cubert__memory_id_disown(t, prev));
    /* another lane's id: a retain that races with its owner's release */
    if (v && cubert__memory_id_retain_binding(t, unpack(v)) == CUBERT_STATUS_OK) {
      w->probes_ok++;
      CHECK_OK(cubert__memory_id_release_binding(t, unpack(v)));
    }
    CHECK_OK(cubert__memory_id_release_handle(t, id));
    prev = id;
  }
  CHECK_OK(cubert__memory_id_disown(t, prev));
  return NULL;
}

TEST_EX(handle_threads_lanes_stay_apart, 600) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  static apart_state_t st;
  static apart_worker_t workers[NTHREADS];
  pthread_t threads[NTHREADS];
  uint32_t alive = 1, dead_owned = 1;
  uint64_t probes = 0;
  int i, k;
  memset(&st, 0, sizeof st);
  CHECK_OK(cubert__handle_table_create(a, 1u << 20, 0x2C, &st.table));
  CHECK(pthread_barrier_init(&st.start, NULL, NTHREADS) == 0);
  for (i = 0; i < NTHREADS; i++) {
    memset(&workers[i], 0, sizeof workers[i]);
    workers[i].st = &st;
    workers[i].index = i;
    CHECK(pthread_create(&threads[i], NULL, apart_main, &workers[i]) == 0);
  }
  for (i = 0; i < NTHREADS; i++) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    probes += workers[i].probes_ok;
  }
  pthread_barrier_destroy(&st.start);
  CHECK_OK(cubert__handle_table_debug_check(st.table, &alive, &dead_owned));
  CHECK_EQ_U64(alive, 0);
  CHECK_EQ_U64(dead_owned, 0);
  CHECK(c.live_blocks - 2 <= NTHREADS + 1);
  printf("  handle_threads_lanes_stay_apart: %lld chunks for %d lanes, chunks per lane:",
         (long long)(c.live_blocks - 2), NTHREADS);
  for (i = 0; i < NTHREADS; i++) {
    int n = 0;
    for (k = 0; k < 32; k++) n += (workers[i].chunks_seen >> k) & 1u;
    CHECK(n >= 1);
    printf(" %d", n);
  }
  printf(", %llu cross-lane retains\n", (unsigned long long)probes);
  cubert__handle_table_destroy(st.table);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}
