/* SPDX-License-Identifier: MIT */
/*
 * Out of memory (docs/cubecl-mapping.md, "Issues CubeCL users report"): the
 * allocation-failure loop
 * over the pool operations (the injected allocator and the storage fail
 * their 1st, 2nd, ... call, once or from then on: every outcome is success
 * or an out-of-memory error, nothing leaks, a failed call changes nothing),
 * the OOM error's pool report, reclaim-and-retry, and the release of a dead
 * stream slot's pools.
 */
#include "test_memory_fixture.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

#define MAX_LIVE 32

typedef struct scenario_t {
  mm_fixture_t f;
  cubert_memory_id_t live[MAX_LIVE];
  uint32_t n;
  uint64_t failures; /* calls that failed with an injected error */
} scenario_t;

typedef struct snapshot_t {
  cubert_memory_usage_t usage;
  uint32_t table_live;
  uint32_t pool_count;
  cubert_storage_handle_t storage[MAX_LIVE];
} snapshot_t;

static void snap(scenario_t *s, snapshot_t *out) {
  uint32_t i;
  out->usage = mmf_usage(&s->f);
  out->table_live = cubert__handle_table_live(s->f.table);
  out->pool_count = cubert__memory_manager_pool_count(s->f.mm);
  for (i = 0; i < s->n; i++) out->storage[i] = mmf_storage(&s->f, s->live[i]);
}

/* A failed call: an out-of-memory outcome, and no side effect (memory freed
 * by a reclaim is the only change allowed: reserved may go down). */
static void check_failure(scenario_t *s, cubert_status_t st, const snapshot_t *before) {
  snapshot_t after;
  uint32_t i;
  CHECK_MSG(st == CUBERT_STATUS_RESOURCE_EXHAUSTED || st == CUBERT_STATUS_OUT_OF_MEMORY,
            "unexpected outcome %s", test_status_name((int)st));
  s->failures++;
  snap(s, &after);
  CHECK_EQ_U64(after.usage.number_allocs, before->usage.number_allocs);
  CHECK_EQ_U64(after.usage.bytes_in_use, before->usage.bytes_in_use);
  CHECK_EQ_U64(after.usage.bytes_padding, before->usage.bytes_padding);
  CHECK(after.usage.bytes_reserved <= before->usage.bytes_reserved);
  CHECK_EQ_U64(after.table_live, before->table_live);
  CHECK_EQ_U64(after.pool_count, before->pool_count);
  for (i = 0; i < s->n; i++) {
    CHECK_EQ_U64(after.storage[i].id, before->storage[i].id);
    CHECK_EQ_U64(after.storage[i].offset, before->storage[i].offset);
    CHECK_EQ_U64(after.storage[i].size, before->storage[i].size);
  }
}

static void op_reserve(scenario_t *s, uint64_t size) {
  snapshot_t before;
  cubert_memory_id_t id;
  cubert_status_t st;
  snap(s, &before);
  st = cubert__memory_manager_reserve(s->f.mm, size, &id, NULL);
  if (st != CUBERT_STATUS_OK) {
    check_failure(s, st, &before);
    return;
  }
  CHECK(s->n < MAX_LIVE);
  CHECK_EQ_U64(mmf_storage(&s->f, id).size, size);
  s->live[s->n++] = id;
}

static void op_release(scenario_t *s, uint32_t i) {
  if (i >= s->n) return;
  mmf_drop(&s->f, s->live[i]);
  s->live[i] = s->live[--s->n];
}

static void op_bind(scenario_t *s, uint32_t i) {
  snapshot_t before;
  cubert_memory_id_t fresh;
  cubert_status_t st;
  if (i >= s->n) return;
  if (cubert__memory_id_acquire(s->f.table, &fresh) != CUBERT_STATUS_OK) {
    s->failures++; /* the table itself is out of memory: nothing to bind */
    return;
  }
  snap(s, &before);
  st = cubert__memory_manager_bind(s->f.mm, s->live[i], fresh, 7, NULL);
  CHECK_OK(st); /* bind never allocates */
  mmf_drop(&s->f, s->live[i]);
  s->live[i] = fresh;
}

static void op_install(scenario_t *s, cubert_memory_configuration_kind_t kind) {
  snapshot_t before;
  cubert_memory_configuration_t c = mmf_kind(kind);
  cubert_status_t st;
  snap(s, &before);
  st = cubert__memory_manager_install_pools(s->f.mm, &c, s->f.props, NULL);
  if (st == CUBERT_STATUS_FAILED_PRECONDITION) return; /* pools in use */
  if (st != CUBERT_STATUS_OK) check_failure(s, st, &before);
}

static const cubert_memory_pool_options_t *scenario_pools(void) {
  static cubert_memory_pool_options_t pools[5];
  pools[0] = cubert_memory_pool_exclusive(0, CUBERT_MEMORY_NONE);
  pools[1] = cubert_memory_pool_sliced(64 * KIB, 16 * KIB, CUBERT_MEMORY_NONE);
  pools[2] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, 2 * MIB);
  pools[3] = cubert_memory_pool_exclusive(4 * MIB, 10);
  pools[4] = cubert_memory_pool_direct(8 * MIB);
  return pools;
}

/* The operations under test: every pool kind, windows, bind, cleanup,
 * install, release. */
static void scenario_ops(scenario_t *s) {
  static const uint64_t sizes[] = {1024, 5000, 17 * 1024, 300 * 1024, 3 * MIB, 5 * MIB, 0, 8192,
                                   900 * KIB, 60 * KIB};
  uint32_t i;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) op_reserve(s, sizes[i]);
  op_release(s, 1);
  op_release(s, 3);
  op_reserve(s, 4000);
  op_reserve(s, 200 * KIB);
  cubert__memory_manager_set_mode(s->f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  op_reserve(s, 2048);
  op_reserve(s, 3000);
  cubert__memory_manager_set_mode(s->f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  op_bind(s, 0);
  op_release(s, 2);
  cubert__memory_manager_cleanup(s->f.mm, true);
  op_reserve(s, 5 * MIB);
  op_reserve(s, 2 * MIB);
  for (i = 0; i < 12; i++) op_reserve(s, 1000 + 100 * i); /* ticks the exclusive period */
  while (s->n > 0) op_release(s, 0);
  op_install(s, CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES);
  op_reserve(s, 40000);
  op_reserve(s, 3 * MIB);
  CHECK_OK(cubert__memory_manager_release_pools(s->f.mm, NULL));
  op_reserve(s, 100);
}

/* One run with the nth call failing. Returns the injected failures seen. */
static uint64_t scenario_run(int target_storage, uint64_t nth, int persist) {
  scenario_t s;
  cubert_memory_configuration_t c = mmf_custom(scenario_pools(), 5);
  cubert_status_t st;
  uint64_t injected;
  memset(&s, 0, sizeof s);
  mmf_base(&s.f, 16 * MIB, 32);
  if (target_storage) host_storage_fail_at(&s.f.storage, nth, persist);
  else counting_allocator_fail_at(&s.f.counting, nth, persist);
  st = cubert__memory_manager_create(s.f.allocator, s.f.storage.storage, s.f.table, s.f.props, &c,
                                     NULL, &s.f.mm, NULL);
  if (st != CUBERT_STATUS_OK) {
    CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(s.f.mm == NULL);
    s.f.mm = NULL;
  } else {
    scenario_ops(&s);
    while (s.n > 0) op_release(&s, 0);
  }
  injected = target_storage ? s.f.storage.failures : s.f.counting.failures;
  CHECK(injected > 0 || s.failures == 0);
  mmf_done(&s.f); /* 0 leaked blocks, 0 bad frees, 0 storage leaks */
  return injected;
}

static void failure_loop(int target_storage, int persist) {
  uint64_t nth, runs = 0, failed_runs = 0;
  for (nth = 1; nth < 5000; nth++) {
    runs++;
    if (scenario_run(target_storage, nth, persist) == 0) break; /* past the last call */
    failed_runs++;
  }
  CHECK(nth < 5000);
  CHECK(failed_runs >= 3);
  printf("  %s %s: %llu runs, every failure clean\n", target_storage ? "storage" : "allocator",
         persist ? "persistent" : "transient", (unsigned long long)runs);
}

#define OOM_LOOP_NEEDS (CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY)
TEST_EX(memory_oom_loop_allocator_transient, 120) {
  TEST_REQUIRE_FEATURE(OOM_LOOP_NEEDS);
  failure_loop(0, 0);
}
TEST_EX(memory_oom_loop_allocator_persistent, 120) {
  TEST_REQUIRE_FEATURE(OOM_LOOP_NEEDS);
  failure_loop(0, 1);
}
TEST_EX(memory_oom_loop_storage_transient, 120) {
  TEST_REQUIRE_FEATURE(OOM_LOOP_NEEDS);
  failure_loop(1, 0);
}
TEST_EX(memory_oom_loop_storage_persistent, 120) {
  TEST_REQUIRE_FEATURE(OOM_LOOP_NEEDS);
  failure_loop(1, 1);
}

/* ---- the OOM error carries the pool report --------------------------------------------- */

TEST(memory_oom_report_tells_a_full_device) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_ERROR_REASONS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t ids[3], x;
  cubert_error_t err;
  uint32_t i;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  f.storage.capacity = 3 * MIB;
  for (i = 0; i < 3; i++) ids[i] = mmf_reserve(&f, MIB);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, MIB, &x, &err), CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_IO_OUT_OF_MEMORY);
  CHECK_EQ_U64(err.field[0], MIB);     /* size */
  CHECK_EQ_U64(err.field[1], 3 * MIB); /* reserved */
  CHECK_EQ_U64(err.field[2], 3 * MIB); /* in use: a leak or a real working set */
  CHECK_EQ_U64(err.field[3], 0);       /* largest free block */
  CHECK_EQ_U64(err.field2[0], 0);      /* padding */
  CHECK_EQ_U64(err.field2[1], 3);      /* allocations */
  CHECK_EQ_STR(err.reason, "reserved 3.15 MB, in use 3.15 MB, padding 0 B, largest free block 0 B");
  CHECK_EQ_U64(cubert__handle_table_live(f.table), 3); /* the failed id was returned */
  for (i = 0; i < 3; i++) mmf_drop(&f, ids[i]);
  mmf_done(&f);
}

TEST(memory_oom_report_tells_fragmentation) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_ERROR_REASONS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t ids[8], x;
  cubert_error_t err;
  uint32_t i;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  f.storage.capacity = 2 * MIB;
  for (i = 0; i < 8; i++) ids[i] = mmf_reserve(&f, 256 * KIB);
  for (i = 0; i < 8; i += 2) mmf_drop(&f, ids[i]);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 512 * KIB, &x, &err), CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(err.field[1], 2 * MIB);
  CHECK_EQ_U64(err.field[2], MIB);
  CHECK_EQ_U64(err.field[3], 256 * KIB); /* half the memory free, but in pieces */
  CHECK_EQ_U64(err.field2[1], 4);
  CHECK(strstr(err.reason, "largest free block 262.14 KB") != NULL);
  for (i = 1; i < 8; i += 2) mmf_drop(&f, ids[i]);
  mmf_done(&f);
}

/* ---- reclaim and retry (CubeCL #1468, done here for every driver) ------------------------ */

static void reclaim_setup(mm_fixture_t *f, bool reclaim) {
  static cubert_memory_pool_options_t pools[2];
  cubert_memory_manager_options_t o;
  cubert_memory_id_t a, b;
  cubert__memory_manager_options_initialize(&o);
  o.reclaim_and_retry = reclaim;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  pools[1] = cubert_memory_pool_exclusive(4 * MIB, CUBERT_MEMORY_NONE);
  mmf_init_opts(f, 128 * MIB, 32, mmf_custom(pools, 2), &o);
  f->storage.capacity = 2 * MIB;
  a = mmf_reserve(f, MIB);
  b = mmf_reserve(f, MIB);
  mmf_drop(f, a);
  mmf_drop(f, b); /* two free sliced pages hold the whole device */
}

TEST(memory_oom_reclaim_and_retry) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t big;
  reclaim_setup(&f, true);
  big = mmf_reserve(&f, 2 * MIB); /* fails, explicit cleanup frees the pages, retry works */
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 0);
  CHECK_EQ_U64(mmf_pool_report(&f, 1).pages, 1);
  CHECK_EQ_U64(f.storage.alloc_calls, 4);
  mmf_drop(&f, big);
  mmf_done(&f);
}

TEST(memory_oom_no_reclaim_when_disabled) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  mm_fixture_t f;
  cubert_memory_id_t big;
  cubert_error_t err;
  reclaim_setup(&f, false);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 2 * MIB, &big, &err), CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(err.field[1], 2 * MIB);
  CHECK_EQ_U64(err.field[2], 0);
  CHECK_EQ_U64(err.field[3], MIB);
  CHECK_EQ_U64(mmf_pool_report(&f, 0).pages, 2);
  CHECK_EQ_U64(f.storage.alloc_calls, 3);
  mmf_done(&f);
}

TEST(memory_oom_buffer_too_big_is_not_retried) {
  /* BufferTooBig means "can never fit": no reclaim (CubeCL #1474) */
  mm_fixture_t f;
  cubert_memory_id_t x;
  cubert_error_t err;
  mmf_init(&f, 128 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  f.storage.fail_status = CUBERT_STATUS_BUFFER_TOO_BIG;
  host_storage_fail_at(&f.storage, 1, 1);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 1000, &x, &err), CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_IO_BUFFER_TOO_BIG);
  CHECK_EQ_U64(f.storage.alloc_calls, 1);
  CHECK_EQ_U64(f.storage.flush_calls, 0); /* no explicit cleanup ran */
  /* OUT_OF_MEMORY is retried once */
  f.storage.fail_status = CUBERT_STATUS_OUT_OF_MEMORY;
  host_storage_fail_at(&f.storage, 1, 1);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 1000, &x, &err), CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(f.storage.alloc_calls, 3);
  host_storage_fail_at(&f.storage, 1, 0); /* transient: the retry succeeds */
  x = mmf_reserve(&f, 1000);
  mmf_drop(&f, x);
  mmf_done(&f);
}

TEST(memory_oom_no_pool_accepts) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t x;
  cubert_error_t err;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 2 * MIB, &x, &err), CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_EQ_U64(err.field[0], 2 * MIB);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, UINT64_MAX, &x, &err), CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_EQ_U64(cubert__handle_table_live(f.table), 0);
  mmf_done(&f);
}

/* ---- a stream slot whose thread is gone (burn#4792) --------------------------------------- */

TEST(memory_oom_release_pools_of_a_dead_stream_slot) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_id_t ids[6], keep;
  cubert_memory_usage_t left;
  cubert_storage_handle_t before;
  int64_t blocks_busy;
  uint32_t i;
  mmf_init(&f, 128 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  ids[0] = mmf_reserve(&f, 1000);        /* sliced 8 MiB pages */
  ids[1] = mmf_reserve(&f, 3 * MIB);     /* sliced 32 MiB pages */
  ids[2] = mmf_reserve(&f, 100 * MIB);   /* exclusive tail */
  ids[3] = mmf_reserve(&f, 0);           /* exclusive 0 */
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  ids[4] = mmf_reserve(&f, 4096);        /* persistent */
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  ids[5] = mmf_reserve(&f, 2000);
  blocks_busy = f.counting.live_blocks;
  keep = ids[5]; /* a tensor that outlived its thread */
  before = mmf_storage(&f, keep);
  for (i = 0; i < 5; i++) mmf_drop(&f, ids[i]);
  CHECK_OK(cubert__memory_manager_release_pools(f.mm, &left));
  CHECK_EQ_U64(left.number_allocs, 1);
  CHECK_EQ_U64(left.bytes_in_use, 2000);
  CHECK_EQ_U64(left.bytes_reserved, 8 * MIB);
  CHECK_EQ_U64(f.storage.live_allocs, 1);
  CHECK(f.counting.live_blocks < blocks_busy); /* bookkeeping of empty pools returned */
  CHECK_EQ_U64(mmf_storage(&f, keep).id, before.id);
  CHECK_EQ_U64(mmf_storage(&f, keep).offset, before.offset);
  mmf_drop(&f, keep);
  CHECK_OK(cubert__memory_manager_release_pools(f.mm, &left));
  CHECK_EQ_U64(left.number_allocs, 0);
  CHECK_EQ_U64(left.bytes_reserved, 0);
  CHECK_EQ_U64(f.storage.live_allocs, 0);
  /* still usable afterwards */
  keep = mmf_reserve(&f, 1000);
  mmf_drop(&f, keep);
  CHECK_STATUS(cubert__memory_manager_release_pools(NULL, &left), CUBERT_STATUS_INVALID_ARGUMENT);
  mmf_done(&f);
}

TEST(memory_oom_destroy_with_live_handles) {
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  mmf_init(&f, 128 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  a = mmf_reserve(&f, 1000);
  b = mmf_reserve(&f, 50 * MIB);
  cubert__memory_manager_destroy(f.mm);
  f.mm = NULL;
  CHECK_EQ_U64(f.storage.live_allocs, 0);
  CHECK(cubert__memory_id_is_alive(f.table, a)); /* users still hold them */
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  CHECK_EQ_U64(cubert__handle_table_live(f.table), 0);
  mmf_done(&f);
}
