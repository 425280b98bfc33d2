/* SPDX-License-Identifier: MIT */
/*
 * Lookups and their errors: every NotFound reason, the identity
 * check (a stale binding never resolves to a later owner), bind's errors,
 * get_resource offsets, bad arguments, and storage flushing.
 */
#include "test_memory_fixture.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

static cubert_memory_id_t id_at(mm_fixture_t *f, uint8_t pool, uint16_t page, uint32_t slice) {
  cubert_memory_id_t id = mmf_new_id(f);
  cubert_memory_location_t loc;
  loc.pool = pool;
  loc.init = 1;
  loc.page = page;
  loc.slice = slice;
  CHECK_OK(cubert__memory_id_set_location(f->table, id, loc));
  return id;
}

static void expect_not_found(mm_fixture_t *f, cubert_memory_id_t id, const char *reason) {
  cubert_error_t err;
  cubert_storage_handle_t h;
  CHECK_STATUS(cubert__memory_manager_get_storage(f->mm, id, &h, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_IO_NOT_FOUND);
  CHECK_EQ_STR(err.reason, reason);
  mmf_drop(f, id);
}

TEST(memory_errors_not_found_reasons) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY | CUBERT_FEATURE_ERROR_REASONS);
  mm_fixture_t f;
  cubert_memory_id_t live, zero, pers, excl;
  cubert_memory_location_t loc;
  mmf_init(&f, 128 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  live = mmf_reserve(&f, 1000);
  zero = mmf_reserve(&f, 0);
  excl = mmf_reserve(&f, 100 * MIB);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  pers = mmf_reserve(&f, 64);
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_AUTO);
  CHECK_OK(cubert__memory_id_location(f.table, live, &loc));
  CHECK_EQ_U64(loc.pool, 1);
  expect_not_found(&f, mmf_new_id(&f), "Memory location was never initialized");
  expect_not_found(&f, id_at(&f, 7, 0, 0), "Pool 7 doesn't exist");
  expect_not_found(&f, id_at(&f, 1, 9, 0), "Memory page 9 doesn't exist");
  expect_not_found(&f, id_at(&f, 1, loc.page, 12345), "Memory slice 12345 doesn't exist");
  expect_not_found(&f, id_at(&f, 1, loc.page, loc.slice + 1), "Memory slice 1 doesn't exist");
  expect_not_found(&f, id_at(&f, 1, loc.page, loc.slice),
                   "Memory location points to a different allocation");
  expect_not_found(&f, id_at(&f, 0, 5, 0), "Memory page 5 doesn't exist");
  expect_not_found(&f, id_at(&f, 0, 0, 1), "Memory slice 1 doesn't exist");
  expect_not_found(&f, id_at(&f, 0, 0, 0), "Memory location points to a different allocation");
  expect_not_found(&f, id_at(&f, 255, 1, 0), "Memory page 1 doesn't exist");
  expect_not_found(&f, id_at(&f, 255, 0, 3), "Memory slice 3 doesn't exist");
  expect_not_found(&f, id_at(&f, 255, 0, 0), "Memory location points to a different allocation");
  mmf_drop(&f, live);
  mmf_drop(&f, zero);
  mmf_drop(&f, excl);
  mmf_drop(&f, pers);
  mmf_done(&f);
}

TEST(memory_errors_direct_pool_not_found_reasons) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_ERROR_REASONS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t a;
  pools[0] = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  a = mmf_reserve(&f, 100);
  expect_not_found(&f, id_at(&f, 0, 2, 0), "Memory page 2 doesn't exist");
  expect_not_found(&f, id_at(&f, 0, 0, 4), "Memory slice 4 doesn't exist");
  expect_not_found(&f, id_at(&f, 0, 0, 0), "Memory location points to a different allocation");
  mmf_drop(&f, a);
  mmf_done(&f);
}

TEST(memory_errors_stale_binding_never_resolves_to_a_new_owner) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t old, fresh;
  cubert_storage_handle_t h_old, h_new;
  cubert_error_t err;
  pools[0] = cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, 4096);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  old = mmf_reserve(&f, 4096);
  h_old = mmf_storage(&f, old);
  mmf_drop(&f, old); /* the user's id is dead now */
  fresh = mmf_reserve(&f, 4096); /* the same slice, a new owner */
  h_new = mmf_storage(&f, fresh);
  CHECK_EQ_U64(h_new.id, h_old.id);
  CHECK_EQ_U64(h_new.offset, h_old.offset);
  CHECK_STATUS(cubert__memory_manager_get_storage(f.mm, old, &h_old, &err), CUBERT_STATUS_INVALID_HANDLE);
  mmf_drop(&f, fresh);
  mmf_done(&f);
}

TEST(memory_errors_bind) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_ERROR_REASONS);
  static cubert_memory_pool_options_t pools[1];
  mm_fixture_t f;
  cubert_memory_id_t r, fresh, bound, other, dead;
  cubert_error_t err;
  uint64_t cursor = 0;
  pools[0] = cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 1));
  r = mmf_reserve(&f, 100);
  fresh = mmf_new_id(&f);
  other = mmf_new_id(&f);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, other, fresh, 1, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_STR(err.reason, "Reserved memory isn't initialized");
  mmf_drop(&f, other);
  other = id_at(&f, 9, 0, 0);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, other, fresh, 1, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_STR(err.reason, "Memory pool 9 doesn't exist");
  mmf_drop(&f, other);
  other = id_at(&f, 0, 0, 77);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, other, fresh, 1, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_STR(err.reason, "Memory slice 77 doesn't exist");
  mmf_drop(&f, other);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, r, r, 1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  bound = mmf_reserve(&f, 200);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, r, bound, 1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  dead = mmf_new_id(&f);
  mmf_drop(&f, dead);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, r, dead, 1, &err), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, dead, fresh, 1, &err), CUBERT_STATUS_INVALID_HANDLE);
  /* none of the failures changed anything */
  CHECK_OK(cubert__memory_manager_get_cursor(f.mm, r, &cursor, NULL));
  CHECK_EQ_U64(cursor, 0);
  CHECK_OK(cubert__memory_manager_bind(f.mm, r, fresh, 42, &err));
  CHECK_OK(cubert__memory_manager_get_cursor(f.mm, fresh, &cursor, NULL));
  CHECK_EQ_U64(cursor, 42);
  /* bind again from the now-stale reservation */
  other = mmf_new_id(&f);
  CHECK_STATUS(cubert__memory_manager_bind(f.mm, r, other, 1, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_EQ_STR(err.reason, "Memory location points to a different allocation");
  CHECK_STATUS(cubert__memory_manager_bind(NULL, r, other, 1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  mmf_drop(&f, other);
  mmf_drop(&f, r);
  mmf_drop(&f, fresh);
  mmf_drop(&f, bound);
  mmf_done(&f);
}

TEST(memory_errors_persistent_bind) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY);
  mm_fixture_t f;
  cubert_memory_id_t r, fresh;
  mmf_init(&f, 128 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  cubert__memory_manager_set_mode(f.mm, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  r = mmf_reserve(&f, 100);
  fresh = mmf_new_id(&f);
  CHECK_OK(cubert__memory_manager_bind(f.mm, r, fresh, 5, NULL));
  mmf_drop(&f, r);
  CHECK_EQ_U64(mmf_storage(&f, fresh).size, 100);
  CHECK_EQ_U64(mmf_persistent_report(&f).usage.number_allocs, 1);
  mmf_drop(&f, fresh);
  CHECK_EQ_U64(mmf_persistent_report(&f).usage.number_allocs, 0);
  mmf_done(&f);
}

TEST(memory_errors_get_resource_offsets) {
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  cubert_storage_resource_t ra, rb, sub;
  cubert_error_t err;
  unsigned char *p;
  uint32_t i;
  TEST_SKIP_IF_EMBEDDED("reads the bytes of a page larger than the embedded host storage backs");
  mmf_init(&f, 128 * MIB, 32, mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES));
  a = mmf_reserve(&f, 64);
  b = mmf_reserve(&f, 64);
  CHECK_OK(cubert__memory_manager_get_resource(f.mm, a, 0, 0, &ra, &err));
  CHECK_OK(cubert__memory_manager_get_resource(f.mm, b, 0, 0, &rb, &err));
  CHECK(ra.ptr != NULL && rb.ptr != NULL);
  CHECK_EQ_U64(ra.size, 64);
  p = (unsigned char *)ra.ptr;
  for (i = 0; i < 64; i++) CHECK_EQ_U64(p[i], 0); /* zero-filled */
  for (i = 0; i < 64; i++) p[i] = (unsigned char)i;
  /* a sub-range (bytes_cpu test_slices: offset 24, size 8) */
  CHECK_OK(cubert__memory_manager_get_resource(f.mm, a, 24, 32, &sub, &err));
  CHECK_EQ_U64(sub.size, 8);
  for (i = 0; i < 8; i++) CHECK_EQ_U64(((unsigned char *)sub.ptr)[i], 24 + i);
  CHECK_EQ_U64(sub.address, ra.address + 24);
  /* the other allocation does not overlap */
  CHECK(rb.address >= ra.address + 64 || rb.address + 64 <= ra.address);
  CHECK_STATUS(cubert__memory_manager_get_resource(f.mm, a, 65, 0, &sub, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert__memory_manager_get_resource(f.mm, a, 32, 33, &sub, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert__memory_manager_get_resource(f.mm, a, UINT64_MAX, UINT64_MAX, &sub, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_OK(cubert__memory_manager_get_resource(f.mm, a, 32, 32, &sub, &err)); /* empty range */
  CHECK_EQ_U64(sub.size, 0);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  mmf_done(&f);
}

static uint64_t bad_alignment(void *self) {
  (void)self;
  return 0;
}

TEST(memory_errors_bad_arguments) {
  mm_fixture_t f;
  cubert_memory_manager_t *mm = NULL;
  cubert_memory_configuration_t c = mmf_kind(CUBERT_MEMORY_CONFIGURATION_SUB_SLICES);
  cubert_memory_manager_options_t o;
  cubert_storage_vtable_t vt;
  cubert_storage_t st;
  cubert_memory_id_t id;
  cubert_storage_handle_t h;
  uint64_t cursor;
  mmf_base(&f, 128 * MIB, 32);
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, NULL, f.props, &c, NULL,
                                             &mm, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props, NULL,
                                             NULL, &mm, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  vt = *f.storage.storage.vtable;
  vt.flush = NULL;
  st.self = &f.storage;
  st.vtable = &vt;
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, st, f.table, f.props, &c, NULL, &mm, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cubert__memory_manager_options_initialize(&o);
  o.persistent_memory = (cubert_persistent_memory_t)9;
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props, &c, &o,
                                             &mm, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  counting_allocator_fail_at(&f.counting, 1, 0);
  CHECK_STATUS(cubert__memory_manager_create(f.allocator, f.storage.storage, f.table, f.props, &c,
                                             NULL, &mm, NULL),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(mm == NULL);
  /* alignment 0 in the properties: the storage's (0 there too: 1) */
  vt = *f.storage.storage.vtable;
  vt.alignment = bad_alignment;
  CHECK_OK(cubert__memory_manager_create(f.allocator, st, f.table, mmf_props(128 * MIB, 0), &c, NULL,
                                         &f.mm, NULL));
  id = mmf_reserve(&f, 3);
  CHECK_EQ_U64(mmf_usage(&f).bytes_padding, 0);
  mmf_drop(&f, id);
  CHECK_STATUS(cubert__memory_manager_reserve(f.mm, 1, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_reserve(NULL, 1, &id, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_storage(f.mm, id, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_cursor(f.mm, id, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_manager_get_storage(f.mm, id, &h, NULL), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_manager_get_cursor(f.mm, id, &cursor, NULL), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_manager_report(f.mm, NULL, 3, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(cubert__memory_manager_pool_count(NULL), 0);
  CHECK_EQ_U64(mmf_usage(&f).number_allocs, 0);
  cubert__memory_manager_cleanup(NULL, true);
  cubert__memory_manager_set_mode(NULL, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT);
  cubert__memory_manager_destroy(NULL);
  cubert__memory_manager_options_initialize(NULL);
  mmf_done(&f);
}

TEST(memory_errors_flush_after_cleanup) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  /* a storage that defers frees (like CUDA's): memory comes back at flush */
  static cubert_memory_pool_options_t pools[2];
  mm_fixture_t f;
  cubert_memory_id_t a, b;
  uint64_t flushes;
  pools[0] = cubert_memory_pool_sliced(MIB, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  pools[1] = cubert_memory_pool_exclusive(4 * MIB, 10); /* check every 2 reservations */
  mmf_init(&f, 128 * MIB, 32, mmf_custom(pools, 2));
  f.storage.deferred = true;
  a = mmf_reserve(&f, 1000);
  b = mmf_reserve(&f, 2 * MIB);
  flushes = f.storage.flush_calls;
  CHECK_EQ_U64(flushes, 0); /* nothing released: no flush */
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  a = mmf_reserve(&f, 1000); /* reservation 3: no check */
  CHECK_EQ_U64(f.storage.flush_calls, 0);
  b = mmf_reserve(&f, 1000); /* 4: the check releases the exclusive page, then a flush */
  CHECK_EQ_U64(f.storage.flush_calls, 1);
  CHECK_EQ_U64(f.storage.live_allocs, 1);
  mmf_drop(&f, a);
  mmf_drop(&f, b);
  cubert__memory_manager_cleanup(f.mm, true);
  CHECK_EQ_U64(f.storage.flush_calls, 2);
  CHECK_EQ_U64(f.storage.live_allocs, 0);
  cubert__memory_manager_cleanup(f.mm, true); /* explicit: always flushes */
  CHECK_EQ_U64(f.storage.flush_calls, 3);
  mmf_done(&f);
}
