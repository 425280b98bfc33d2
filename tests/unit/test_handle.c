/* Handle table, memory ids, handles and bindings (core/memory/handle.c).
 * Memory semantics: spec cubecl-runtime.md 4.1, 2.1 and the 11.6 / 11.8
 * handle vectors; bad inputs: reliability.md 7, rows 1-9. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/handle.h"
#include "memory/handle_internal.h"

static cubert_handle_table_t *table_new(counting_allocator_t *c, uint32_t max_slots, uint8_t tag) {
  cubert_handle_table_t *t = NULL;
  CHECK_OK(cubert_handle_table_create(counting_allocator_init(c), max_slots, tag, &t));
  CHECK(t != NULL);
  return t;
}

static void table_done(cubert_handle_table_t *t, counting_allocator_t *c) {
  cubert_handle_table_destroy(t);
  CHECK_EQ_I64(c->live_blocks, 0);
  CHECK_EQ_U64(c->bad_frees, 0);
  counting_allocator_destroy(c);
}

static cubert_memory_id_t acquire_ok(cubert_handle_table_t *t) {
  cubert_memory_id_t id = {0, 0};
  CHECK_OK(cubert_memory_id_acquire(t, &id));
  return id;
}

static void check_consistent(const cubert_handle_table_t *t, uint32_t alive, uint32_t dead_owned) {
  uint32_t a = 0xFFFFFFFFu, d = 0xFFFFFFFFu;
  CHECK_OK(cubert_handle_table_debug_check(t, &a, &d));
  CHECK_EQ_U64(a, alive);
  CHECK_EQ_U64(d, dead_owned);
  CHECK_EQ_U64(cubert_handle_table_live(t), alive + dead_owned);
}

static void check_counts(const cubert_handle_table_t *t, cubert_memory_id_t id, uint32_t handles,
                         uint32_t descriptors) {
  CHECK_EQ_U64(cubert_memory_id_handle_count(t, id), handles);
  CHECK_EQ_U64(cubert_memory_id_descriptor_count(t, id), descriptors);
}

/* Every id-level call on a dead/forged id: INVALID_HANDLE, queries say dead. */
static void check_rejected(cubert_handle_table_t *t, cubert_memory_id_t id) {
  cubert_memory_location_t loc = {9, 9, 9, 9};
  cubert_memory_location_t set = {1, 1, 1, 1};
  CHECK_STATUS(cubert_memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_retain_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_location(t, id, &loc), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(loc.pool, 9); /* out untouched */
  CHECK_STATUS(cubert_memory_id_set_location(t, id, set), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_set_location_owned(t, id, set), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!cubert_memory_id_is_alive(t, id));
  CHECK(cubert_memory_id_is_free(t, id));
  CHECK(!cubert_memory_id_can_mut(t, id));
  check_counts(t, id, 0, 0);
}

static bool id_eq(cubert_memory_id_t a, cubert_memory_id_t b) {
  return a.index == b.index && a.generation == b.generation;
}

/* ---- table ------------------------------------------------------------------ */

TEST(handle_table_create_rejects_bad_arguments) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_init(&c);
  cubert_allocator_t no_fn = {NULL, NULL};
  cubert_handle_table_t *t = (cubert_handle_table_t *)&c; /* sentinel */
  CHECK_STATUS(cubert_handle_table_create(a, 16, 0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_create(a, 0, 0, &t), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_create(a, CUBERT_HANDLE_TABLE_MAX_SLOTS + 1u, 0, &t),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_create(a, 0xFFFFFFFFu, 0, &t), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_create(no_fn, 16, 0, &t), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(t == (cubert_handle_table_t *)&c);
  CHECK_EQ_I64(c.live_blocks, 0);
  cubert_handle_table_destroy(NULL); /* no-op */
  CHECK_EQ_U64(cubert_handle_table_live(NULL), 0);
  CHECK_STATUS(cubert_handle_table_debug_check(NULL, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  counting_allocator_destroy(&c);
}

TEST(handle_table_largest_size_works) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, CUBERT_HANDLE_TABLE_MAX_SLOTS, 255);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK_EQ_U64(id.index >> 24, 255);
  CHECK(cubert_memory_id_is_alive(t, id));
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_acquire_fresh_id) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 64, 0x5A);
  cubert_memory_id_t id = acquire_ok(t);
  cubert_memory_location_t loc = {7, 7, 7, 7};
  CHECK_EQ_U64(id.index >> 24, 0x5A);
  CHECK((id.index & 0xFFFFFFu) != 0);
  CHECK_EQ_U64(id.generation & 1u, 1);
  check_counts(t, id, 1, 1);
  CHECK(cubert_memory_id_is_alive(t, id));
  CHECK(!cubert_memory_id_is_free(t, id));
  CHECK(cubert_memory_id_can_mut(t, id));
  CHECK_OK(cubert_memory_id_location(t, id, &loc));
  CHECK_EQ_U64(loc.pool, 0);
  CHECK_EQ_U64(loc.init, 0);
  CHECK_EQ_U64(loc.page, 0);
  CHECK_EQ_U64(loc.slice, 0);
  /* not owned: dropping ownership is refused */
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 1, 0);
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_acquire_rejects_null) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 4, 0);
  cubert_memory_id_t id = {123, 456};
  CHECK_STATUS(cubert_memory_id_acquire(NULL, &id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_acquire(t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(id.index, 123);
  CHECK_EQ_U64(cubert_handle_table_live(t), 0);
  table_done(t, &c);
}

/* ---- memory semantics (spec 4.1) ---------------------------------------------- */

/* Spec 4.1: cloning a handle increments both counts; a binding only the
 * descriptor count. */
TEST(handle_clone_and_binding_counts_spec_4_1) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 1);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK_OK(cubert_memory_id_retain_handle(t, id));
  check_counts(t, id, 2, 2);
  CHECK_OK(cubert_memory_id_retain_binding(t, id));
  check_counts(t, id, 2, 3);
  CHECK_OK(cubert_memory_id_retain_binding(t, id));
  check_counts(t, id, 2, 4);
  check_consistent(t, 1, 0);
  CHECK_OK(cubert_memory_id_release_binding(t, id));
  check_counts(t, id, 2, 3);
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_counts(t, id, 1, 2);
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_counts(t, id, 0, 1);
  CHECK(cubert_memory_id_is_alive(t, id)); /* the binding keeps it alive */
  CHECK_OK(cubert_memory_id_release_binding(t, id));
  CHECK(!cubert_memory_id_is_alive(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Spec 11.8 test_handle_mutability: with one extra clone !can_mut; after
 * dropping it can_mut. Spec 4.1: bindings are ignored by can_mut; is_free iff
 * no user handle or binding is left (11.6 test_memory_page: not free while
 * the handle is held, free once the last reference is gone). */
TEST(handle_is_free_and_can_mut_spec_4_1) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 1);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK(cubert_memory_id_can_mut(t, id));
  CHECK(!cubert_memory_id_is_free(t, id));
  CHECK_OK(cubert_memory_id_retain_handle(t, id));
  CHECK(!cubert_memory_id_can_mut(t, id));
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK(cubert_memory_id_can_mut(t, id));
  /* bindings are ignored by can_mut */
  CHECK_OK(cubert_memory_id_retain_binding(t, id));
  CHECK_OK(cubert_memory_id_retain_binding(t, id));
  CHECK(cubert_memory_id_can_mut(t, id));
  CHECK(!cubert_memory_id_is_free(t, id));
  /* the handle goes; the bindings keep the memory from being free */
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK(!cubert_memory_id_is_free(t, id));
  CHECK(cubert_memory_id_can_mut(t, id)); /* 0 user handles */
  CHECK_OK(cubert_memory_id_release_binding(t, id));
  CHECK(!cubert_memory_id_is_free(t, id));
  CHECK_OK(cubert_memory_id_release_binding(t, id));
  CHECK(cubert_memory_id_is_free(t, id));
  CHECK(!cubert_memory_id_can_mut(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Spec 4.1: multi-tensor allocations share one base; each tensor is a clone
 * with offsets, so the base is freed only after all sub-handles and bindings
 * are dropped. */
TEST(handle_sub_handle_keeps_base_alive_spec_4_1) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 2);
  cubert_handle_t base, a, b;
  cubert_binding_t bind;
  CHECK_OK(cubert_handle_create(t, 3, 11, 5, 1024, &base));
  CHECK_OK(cubert_handle_offset(t, &base, 0, 512, &a));
  CHECK_OK(cubert_handle_offset(t, &base, 512, 0, &b));
  CHECK_EQ_U64(cubert_handle_size_in_used(&a), 512);
  CHECK_EQ_U64(cubert_handle_size_in_used(&b), 512);
  check_counts(t, base.memory, 3, 3);
  CHECK_OK(cubert_handle_release(t, &base));
  CHECK(cubert_memory_id_is_alive(t, base.memory));
  CHECK(!cubert_handle_can_mut(t, &a)); /* a and b share the memory */
  CHECK_OK(cubert_handle_release(t, &a));
  CHECK(cubert_handle_can_mut(t, &b));
  CHECK_OK(cubert_handle_binding(t, &b, &bind));
  CHECK_OK(cubert_handle_release(t, &b));
  CHECK(!cubert_memory_id_is_free(t, bind.memory)); /* the binding pins it */
  check_consistent(t, 1, 0);
  CHECK_OK(cubert_binding_release(t, &bind));
  CHECK(cubert_memory_id_is_free(t, base.memory));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Spec 4.1 (and 11.8 find_stale_descriptor_returns_not_found): the pool's
 * slice owns the reserved id R; reserve hands a reference of R to a user;
 * bind(reserved, assigned) moves the slice to the user's assigned id A and
 * copies R's location into A. R is then an orphan: it stays alive until its
 * user releases it, and its slot is then recycled; A keeps the slice. */
TEST(handle_orphan_reserved_assigned_spec_4_1) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 3);
  cubert_memory_id_t r, a, later;
  cubert_memory_location_t loc = {4, 1, 2, 7}, got;
  r = acquire_ok(t); /* the user's reserved handle reference */
  CHECK_OK(cubert_memory_id_set_owned(t, r, true));
  CHECK_OK(cubert_memory_id_set_location(t, r, loc));
  a = acquire_ok(t);
  /* bind: the slice takes A, copies the location, drops R */
  CHECK_OK(cubert_memory_id_location(t, r, &got));
  CHECK_OK(cubert_memory_id_set_location(t, a, got));
  CHECK_OK(cubert_memory_id_set_owned(t, a, true));
  CHECK_OK(cubert_memory_id_set_owned(t, r, false));
  /* R is an orphan but alive while its user holds it */
  CHECK(cubert_memory_id_is_alive(t, r));
  check_counts(t, r, 1, 1);
  CHECK_STATUS(cubert_memory_id_set_owned(t, r, false), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 2, 0);
  CHECK_OK(cubert_memory_id_release_handle(t, r));
  check_rejected(t, r);
  check_consistent(t, 1, 0); /* R's slot is back in the free set */
  /* A still owns the slice and its location */
  CHECK_OK(cubert_memory_id_location(t, a, &got));
  CHECK_EQ_U64(got.slice, 7);
  CHECK_EQ_U64(got.pool, 4);
  /* A's user releases: A dies but the slice (owned) keeps the slot */
  CHECK_OK(cubert_memory_id_release_handle(t, a));
  CHECK(!cubert_memory_id_is_alive(t, a));
  CHECK(cubert_memory_id_is_free(t, a));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert_memory_id_location(t, a, &got)); /* the pool still reads it */
  CHECK_EQ_U64(got.slice, 7);
  CHECK_STATUS(cubert_memory_id_retain_handle(t, a), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert_memory_id_set_owned(t, a, false));
  check_consistent(t, 0, 0);
  check_rejected(t, a);
  later = acquire_ok(t);
  CHECK(!id_eq(later, a));
  CHECK(!id_eq(later, r));
  CHECK_OK(cubert_memory_id_release_handle(t, later));
  table_done(t, &c);
}

/* Spec 11.6 handle::test_location_visible_through_shared_arc and
 * test_memory_id_mutability: a location set through one reference is seen
 * through every other (one id, shared); updating the slice is visible; copying
 * a location to another id's descriptor copies slice 4. */
TEST(handle_location_shared_spec_11_6) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 4);
  cubert_handle_t h, clone;
  cubert_memory_id_t other;
  cubert_memory_location_t loc = {1, 1, 2, 3}, got;
  CHECK_OK(cubert_handle_create(t, 0, 0, 0, 64, &h));
  CHECK_OK(cubert_handle_clone(t, &h, &clone));
  CHECK_OK(cubert_memory_id_set_location(t, h.memory, loc));
  CHECK_OK(cubert_memory_id_location(t, clone.memory, &got));
  CHECK_EQ_U64(got.pool, 1);
  CHECK_EQ_U64(got.page, 2);
  CHECK_EQ_U64(got.slice, 3);
  CHECK_EQ_U64(got.init, 1);
  got.slice = 42; /* update_slice(42) */
  CHECK_OK(cubert_memory_id_set_location(t, clone.memory, got));
  CHECK_OK(cubert_memory_id_location(t, h.memory, &got));
  CHECK_EQ_U64(got.slice, 42);
  got.slice = 4;
  CHECK_OK(cubert_memory_id_set_location(t, h.memory, got));
  other = acquire_ok(t);
  CHECK_OK(cubert_memory_id_location(t, h.memory, &got));
  CHECK_OK(cubert_memory_id_set_location(t, other, got));
  CHECK_OK(cubert_memory_id_location(t, other, &got));
  CHECK_EQ_U64(got.slice, 4);
  CHECK_STATUS(cubert_memory_id_location(t, other, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_location(NULL, other, &got), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_set_location(NULL, other, got), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_handle_release(t, &h));
  CHECK_OK(cubert_handle_release(t, &clone));
  CHECK_OK(cubert_memory_id_release_handle(t, other));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_set_owned_rules) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 5);
  cubert_memory_id_t id = acquire_ok(t), dead;
  CHECK_STATUS(cubert_memory_id_set_owned(NULL, id, true), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_memory_id_set_owned(t, id, true));
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 1, 1); /* ownership is not a count */
  CHECK(cubert_memory_id_can_mut(t, id));
  CHECK_OK(cubert_memory_id_set_owned(t, id, false));
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 1, 0);
  /* ownership survives the id's death; dropping it then frees the slot */
  CHECK_OK(cubert_memory_id_set_owned(t, id, true));
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_consistent(t, 0, 1);
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert_memory_id_set_owned(t, id, false));
  check_consistent(t, 0, 0);
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  /* dead and never owned */
  dead = acquire_ok(t);
  CHECK_OK(cubert_memory_id_release_handle(t, dead));
  CHECK_STATUS(cubert_memory_id_set_owned(t, dead, true), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_set_owned(t, dead, false), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* A dead id whose slot is still owned keeps a readable location (the pool
 * reads its slice); once disowned the location is gone. */
TEST(handle_location_of_dead_owned_id) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 6);
  cubert_memory_id_t id = acquire_ok(t);
  cubert_memory_location_t loc = {2, 1, 3, 9}, got;
  CHECK_OK(cubert_memory_id_set_owned(t, id, true));
  CHECK_OK(cubert_memory_id_set_location(t, id, loc));
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK_OK(cubert_memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.slice, 9);
  got.slice = 10;
  CHECK_OK(cubert_memory_id_set_location(t, id, got));
  CHECK_OK(cubert_memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.slice, 10);
  CHECK_OK(cubert_memory_id_set_owned(t, id, false));
  CHECK_STATUS(cubert_memory_id_location(t, id, &got), CUBERT_STATUS_INVALID_HANDLE);
  table_done(t, &c);
}

/* ---- owner fast paths: acquire_owned, disown, set_location_owned ------------------ */

/* acquire_owned = acquire + set_owned(true) + set_location: counts 1/1, owned,
 * the location given, and the same life cycle as the three calls. */
TEST(handle_acquire_owned_fresh_id) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 64, 0x3C);
  cubert_memory_location_t loc = {2, 1, 7, 99}, got = {0, 0, 0, 0};
  cubert_memory_id_t id = {0, 0}, plain = acquire_ok(t);
  CHECK_OK(cubert_memory_id_acquire_owned(t, loc, &id));
  CHECK_EQ_U64(id.index >> 24, 0x3C);
  CHECK_EQ_U64(id.generation & 1u, 1);
  CHECK(!id_eq(id, plain));
  check_counts(t, id, 1, 1);
  CHECK(cubert_memory_id_is_alive(t, id));
  CHECK(cubert_memory_id_can_mut(t, id));
  CHECK_OK(cubert_memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.pool, 2);
  CHECK_EQ_U64(got.init, 1);
  CHECK_EQ_U64(got.page, 7);
  CHECK_EQ_U64(got.slice, 99);
  CHECK_STATUS(cubert_memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE); /* owned */
  check_consistent(t, 2, 0);
  /* dead but owned: the slot stays (location readable) until disowned */
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_consistent(t, 1, 1);
  CHECK_OK(cubert_memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.slice, 99);
  CHECK_OK(cubert_memory_id_set_owned(t, id, false)); /* the general call works on it too */
  check_consistent(t, 1, 0);
  check_rejected(t, id);
  /* the plain acquire's id is unaffected and not owned */
  CHECK_STATUS(cubert_memory_id_disown(t, plain), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert_memory_id_location(t, plain, &got));
  CHECK_EQ_U64(got.init, 0);
  CHECK_OK(cubert_memory_id_release_handle(t, plain));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_acquire_owned_rejects_null_and_full_table) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 2, 0);
  cubert_memory_location_t loc = {1, 1, 1, 1};
  cubert_memory_id_t a, b, extra = {123, 456};
  CHECK_STATUS(cubert_memory_id_acquire_owned(NULL, loc, &extra), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_acquire_owned(t, loc, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(extra.index, 123);
  CHECK_EQ_U64(cubert_handle_table_live(t), 0);
  CHECK_OK(cubert_memory_id_acquire_owned(t, loc, &a));
  CHECK_OK(cubert_memory_id_acquire_owned(t, loc, &b));
  CHECK_STATUS(cubert_memory_id_acquire_owned(t, loc, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(extra.index, 123);
  CHECK_EQ_U64(extra.generation, 456);
  /* a dead-but-owned slot is not free either */
  CHECK_OK(cubert_memory_id_release_handle(t, a));
  CHECK_STATUS(cubert_memory_id_acquire_owned(t, loc, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  check_consistent(t, 1, 1);
  CHECK_OK(cubert_memory_id_disown(t, a));
  CHECK_OK(cubert_memory_id_acquire_owned(t, loc, &extra));
  CHECK_EQ_U64(extra.index, a.index);
  CHECK(extra.generation != a.generation);
  check_rejected(t, a);
  CHECK_OK(cubert_memory_id_disown(t, extra));
  CHECK_OK(cubert_memory_id_release_handle(t, extra));
  CHECK_OK(cubert_memory_id_disown(t, b));
  CHECK_OK(cubert_memory_id_release_handle(t, b));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* disown follows set_owned(false)'s rules: refused when not owned (twice,
 * never owned, dead and freed); on an alive id it keeps the id alive; on a
 * dead id it frees the slot; it never touches a stale id's new occupant. */
TEST(handle_disown_rules) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1, 4); /* one slot: reuse is certain */
  cubert_memory_location_t loc = {3, 1, 4, 5}, got;
  cubert_memory_id_t id = acquire_ok(t), next;
  CHECK_STATUS(cubert_memory_id_disown(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE); /* never owned */
  CHECK_OK(cubert_memory_id_set_owned(t, id, true));
  CHECK_OK(cubert_memory_id_retain_binding(t, id));
  CHECK_OK(cubert_memory_id_disown(t, id));
  CHECK_STATUS(cubert_memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE); /* twice */
  check_counts(t, id, 1, 2); /* ownership is not a count */
  check_consistent(t, 1, 0);
  CHECK_OK(cubert_memory_id_set_owned(t, id, true)); /* owned again, then dies owned */
  CHECK_OK(cubert_memory_id_release_binding(t, id));
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert_memory_id_disown(t, id)); /* frees the slot */
  check_consistent(t, 0, 0);
  check_rejected(t, id);
  /* the slot's next occupant, owned: the stale id touches nothing */
  CHECK_OK(cubert_memory_id_acquire_owned(t, loc, &next));
  CHECK_EQ_U64(next.index, id.index);
  CHECK_STATUS(cubert_memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_set_location_owned(t, id, loc), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_set_owned(t, next, true), CUBERT_STATUS_INVALID_HANDLE); /* still owned */
  CHECK_OK(cubert_memory_id_release_handle(t, next));
  check_consistent(t, 0, 1);
  CHECK_STATUS(cubert_memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert_memory_id_location(t, next, &got));
  CHECK_EQ_U64(got.slice, 5);
  CHECK_OK(cubert_memory_id_disown(t, next));
  check_consistent(t, 0, 0);
  CHECK_STATUS(cubert_memory_id_disown(t, next), CUBERT_STATUS_INVALID_HANDLE);
  table_done(t, &c);
}

/* set_location_owned writes an owned id's location (alive, or dead but still
 * owned) and answers as set_location for any other id. */
TEST(handle_set_location_owned_rules) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 8);
  cubert_memory_location_t zero = {0, 0, 0, 0}, loc = {1, 1, 2, 3}, got;
  cubert_memory_id_t owned, plain = acquire_ok(t);
  CHECK_OK(cubert_memory_id_acquire_owned(t, zero, &owned));
  CHECK_STATUS(cubert_memory_id_set_location_owned(NULL, owned, loc),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_memory_id_set_location_owned(t, owned, loc));
  CHECK_OK(cubert_memory_id_location(t, owned, &got));
  CHECK_EQ_U64(got.init, 1);
  CHECK_EQ_U64(got.page, 2);
  CHECK_EQ_U64(got.slice, 3);
  /* not owned: the pinned path, same answer as set_location */
  loc.slice = 11;
  CHECK_OK(cubert_memory_id_set_location_owned(t, plain, loc));
  CHECK_OK(cubert_memory_id_location(t, plain, &got));
  CHECK_EQ_U64(got.slice, 11);
  /* dead but owned: still writable; dead and not owned: refused */
  CHECK_OK(cubert_memory_id_release_handle(t, owned));
  loc.slice = 12;
  CHECK_OK(cubert_memory_id_set_location_owned(t, owned, loc));
  CHECK_OK(cubert_memory_id_location(t, owned, &got));
  CHECK_EQ_U64(got.slice, 12);
  CHECK_OK(cubert_memory_id_disown(t, owned));
  CHECK_STATUS(cubert_memory_id_set_location_owned(t, owned, loc), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert_memory_id_release_handle(t, plain));
  CHECK_STATUS(cubert_memory_id_set_location_owned(t, plain, loc), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* The fused DYING + unpin CAS: the release, set_owned(false) or disown that
 * takes a slot's state to 0 frees it at once (no pin left behind), in both
 * orders (disown then release, release then disown). */
TEST(handle_last_reference_frees_slot_in_every_order) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 4, 2);
  cubert_memory_location_t zero = {0, 0, 0, 0};
  cubert_memory_id_t id;
  int order;
  for (order = 0; order < 6; order++) {
    CHECK_OK(cubert_memory_id_acquire_owned(t, zero, &id));
    CHECK_OK(cubert_memory_id_retain_binding(t, id));
    switch (order) {
      case 0: /* disown, then the references */
        CHECK_OK(cubert_memory_id_disown(t, id));
        CHECK_OK(cubert_memory_id_release_handle(t, id));
        check_consistent(t, 1, 0);
        CHECK_OK(cubert_memory_id_release_binding(t, id));
        break;
      case 1: /* the references, then disown */
        CHECK_OK(cubert_memory_id_release_binding(t, id));
        CHECK_OK(cubert_memory_id_release_handle(t, id));
        check_consistent(t, 0, 1);
        CHECK_OK(cubert_memory_id_disown(t, id));
        break;
      case 2: /* set_owned(false) last */
        CHECK_OK(cubert_memory_id_release_handle(t, id));
        CHECK_OK(cubert_memory_id_release_binding(t, id));
        CHECK_OK(cubert_memory_id_set_owned(t, id, false));
        break;
      case 3: /* set_owned(false) first, binding last */
        CHECK_OK(cubert_memory_id_set_owned(t, id, false));
        CHECK_OK(cubert_memory_id_release_handle(t, id));
        CHECK_OK(cubert_memory_id_release_binding(t, id));
        break;
      case 4: /* between the references */
        CHECK_OK(cubert_memory_id_release_binding(t, id));
        CHECK_OK(cubert_memory_id_disown(t, id));
        CHECK_OK(cubert_memory_id_release_handle(t, id));
        break;
      default: /* handle last after a re-own */
        CHECK_OK(cubert_memory_id_disown(t, id));
        CHECK_OK(cubert_memory_id_set_owned(t, id, true));
        CHECK_OK(cubert_memory_id_release_binding(t, id));
        CHECK_OK(cubert_memory_id_disown(t, id));
        CHECK_OK(cubert_memory_id_release_handle(t, id));
        break;
    }
    check_consistent(t, 0, 0); /* no pin, no count, slot back in the free set */
    check_rejected(t, id);
  }
  table_done(t, &c);
}

/* Allocation failure while acquire_owned grows the table: OK or
 * RESOURCE_EXHAUSTED, a failed call changes nothing, nothing leaks. */
TEST(handle_acquire_owned_allocation_failure) {
  enum { MAX_SLOTS = 1000, WANT = 700 };
  static cubert_memory_id_t ids[WANT];
  cubert_memory_location_t loc = {1, 1, 0, 0};
  uint64_t k;
  int done = 0;
  for (k = 1; !done; k++) {
    counting_allocator_t c;
    cubert_handle_table_t *t = NULL;
    int n = 0, i;
    CHECK(k < 100);
    CHECK_OK(cubert_handle_table_create(counting_allocator_init(&c), MAX_SLOTS, 6, &t));
    counting_allocator_fail_at(&c, k, 1); /* the k-th chunk growth on, for good */
    for (i = 0; i < WANT; i++) {
      cubert_memory_id_t id = {0xDEAD, 0xBEEF};
      uint32_t live_before = cubert_handle_table_live(t);
      cubert_status_t st;
      loc.slice = (uint32_t)i;
      st = cubert_memory_id_acquire_owned(t, loc, &id);
      if (st == CUBERT_STATUS_OK) {
        ids[n++] = id;
        continue;
      }
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK_EQ_U64(id.index, 0xDEAD);
      CHECK_EQ_U64(cubert_handle_table_live(t), live_before);
      check_consistent(t, (uint32_t)n, 0);
    }
    for (i = 0; i < n; i++) {
      cubert_memory_location_t got;
      CHECK_OK(cubert_memory_id_location(t, ids[i], &got));
      CHECK_EQ_U64(got.slice, (uint32_t)i);
      CHECK_OK(cubert_memory_id_release_handle(t, ids[i]));
      CHECK_OK(cubert_memory_id_disown(t, ids[i]));
    }
    check_consistent(t, 0, 0);
    cubert_handle_table_destroy(t);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK_EQ_U64(c.bad_frees, 0);
    if (c.failures == 0) done = 1;
    counting_allocator_destroy(&c);
  }
  CHECK(k > 2);
}

/* ---- bad inputs (reliability.md 7) ------------------------------------------------ */

/* Row 1: the null id. */
TEST(handle_null_id_rejected) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t null_id = {0, 0}, odd = {0, 1}, live = acquire_ok(t);
  check_rejected(t, null_id);
  check_rejected(t, odd);
  check_counts(t, live, 1, 1);
  CHECK_OK(cubert_memory_id_release_handle(t, live));
  table_done(t, &c);
}

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

/* Row 3: forged ids (random bits, an index beyond max_slots, an index in a
 * chunk never grown, wrong generations) never touch the table. */
TEST(handle_forged_ids_rejected) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1000, 9);
  cubert_memory_id_t live[3], f;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  int i, k;
  for (i = 0; i < 3; i++) live[i] = acquire_ok(t);
  for (i = 0; i < 20000; i++) {
    uint64_t r = rng_next(&seed);
    f.index = (uint32_t)r;
    f.generation = (uint32_t)(r >> 32);
    if (i & 1) f.index = (f.index & 0xFFFFFFu) | (9u << 24); /* right tag */
    if (i % 4 == 1) f.generation &= 7u;                     /* small generations */
    for (k = 0; k < 3; k++)
      if (id_eq(f, live[k])) break;
    if (k < 3) continue;
    check_rejected(t, f);
  }
  f.index = (9u << 24) | 1001u; /* beyond max_slots */
  f.generation = 1;
  check_rejected(t, f);
  f.index = (9u << 24) | 0xFFFFFFu;
  check_rejected(t, f);
  f.index = (9u << 24) | 700u; /* chunk 2, never grown */
  check_rejected(t, f);
  for (k = 0; k < 3; k++) {
    f = live[k];
    f.generation += 1u; /* even */
    check_rejected(t, f);
    f.generation += 1u; /* a future generation */
    check_rejected(t, f);
    f.generation = live[k].generation - 1u; /* 0 */
    check_rejected(t, f);
    check_counts(t, live[k], 1, 1);
    CHECK_OK(cubert_memory_id_release_handle(t, live[k]));
  }
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 9: an id of another table (another tag) is rejected. */
TEST(handle_foreign_table_id_rejected) {
  counting_allocator_t c1, c2;
  cubert_handle_table_t *t1 = table_new(&c1, 16, 1), *t2 = table_new(&c2, 16, 2);
  cubert_memory_id_t a = acquire_ok(t1), b = acquire_ok(t2);
  CHECK_EQ_U64(a.index & 0xFFFFFFu, b.index & 0xFFFFFFu); /* same slot, other tag */
  CHECK_EQ_U64(a.generation, b.generation);
  check_rejected(t2, a);
  check_rejected(t1, b);
  check_counts(t1, a, 1, 1);
  check_counts(t2, b, 1, 1);
  CHECK_OK(cubert_memory_id_release_handle(t1, a));
  CHECK_OK(cubert_memory_id_release_handle(t2, b));
  table_done(t1, &c1);
  table_done(t2, &c2);
}

/* Row 4: a stale id whose slot was recycled by a new occupant is rejected and
 * never touches the new occupant (counts, ownership, location). */
TEST(handle_stale_id_never_touches_new_occupant) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 1, 7); /* one slot: reuse is certain */
  cubert_memory_id_t x = acquire_ok(t), y;
  cubert_memory_location_t loc = {5, 1, 6, 8}, got;
  CHECK_OK(cubert_memory_id_retain_binding(t, x));
  CHECK_OK(cubert_memory_id_release_binding(t, x));
  CHECK_OK(cubert_memory_id_release_handle(t, x));
  y = acquire_ok(t);
  CHECK_EQ_U64(y.index, x.index);
  CHECK(y.generation != x.generation);
  CHECK_OK(cubert_memory_id_set_location(t, y, loc));
  CHECK_OK(cubert_memory_id_retain_binding(t, y));
  check_rejected(t, x);
  check_counts(t, y, 1, 2);
  CHECK_OK(cubert_memory_id_location(t, y, &got));
  CHECK_EQ_U64(got.slice, 8);
  CHECK_EQ_U64(got.page, 6);
  /* the new occupant owned: a stale drop must not clear it */
  CHECK_OK(cubert_memory_id_set_owned(t, y, true));
  CHECK_STATUS(cubert_memory_id_set_owned(t, x, false), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_set_owned(t, y, true), CUBERT_STATUS_INVALID_HANDLE); /* still owned */
  CHECK_OK(cubert_memory_id_release_handle(t, y));
  CHECK_OK(cubert_memory_id_release_binding(t, y));
  check_consistent(t, 0, 1);
  check_rejected(t, x);
  CHECK_OK(cubert_memory_id_set_owned(t, y, false));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 5: a double release is INVALID_HANDLE, counts never go negative and
 * the slot is freed once. */
TEST(handle_double_release) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t id = acquire_ok(t), other;
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK_STATUS(cubert_memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  /* a handle released twice while a binding keeps the id alive */
  id = acquire_ok(t);
  CHECK_OK(cubert_memory_id_retain_binding(t, id));
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK_STATUS(cubert_memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 0, 1);
  CHECK(cubert_memory_id_is_alive(t, id));
  CHECK_OK(cubert_memory_id_release_binding(t, id));
  CHECK_STATUS(cubert_memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  /* a binding release without a binding cannot eat a handle's reference */
  id = acquire_ok(t);
  CHECK_OK(cubert_memory_id_retain_handle(t, id));
  CHECK_STATUS(cubert_memory_id_release_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 2, 2);
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK_STATUS(cubert_memory_id_release_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  /* the slot was returned exactly once: the table can still fill up exactly */
  check_consistent(t, 0, 0);
  {
    cubert_memory_id_t all[16];
    int i;
    for (i = 0; i < 16; i++) all[i] = acquire_ok(t);
    CHECK_STATUS(cubert_memory_id_acquire(t, &other), CUBERT_STATUS_OUT_OF_RANGE);
    for (i = 0; i < 16; i++) CHECK_OK(cubert_memory_id_release_handle(t, all[i]));
  }
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 7: retain on an id whose count hit 0 is refused (no resurrection). */
TEST(handle_retain_dead_id_no_resurrection) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK_OK(cubert_memory_id_set_owned(t, id, true)); /* keep the slot occupied */
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  CHECK_STATUS(cubert_memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_memory_id_retain_binding(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!cubert_memory_id_is_alive(t, id));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert_memory_id_set_owned(t, id, false));
  CHECK_STATUS(cubert_memory_id_retain_handle(t, id), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 8: counts saturate at CUBERT_HANDLE_MAX_COUNT: OVERFLOW, unchanged. */
TEST(handle_count_saturation) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, out, before;
  cubert_binding_t b;
  const uint32_t max = CUBERT_HANDLE_MAX_COUNT;
  CHECK_OK(cubert_handle_create(t, 0, 0, 0, 100, &h));
  CHECK_OK(cubert_memory_id_set_owned(t, h.memory, true));
  CHECK_OK(cubert_handle_table_debug_set_counts(t, h.memory, max - 1u, 0));
  CHECK_OK(cubert_memory_id_retain_handle(t, h.memory));
  check_counts(t, h.memory, max, max);
  CHECK_STATUS(cubert_memory_id_retain_handle(t, h.memory), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_memory_id_retain_binding(t, h.memory), CUBERT_STATUS_OVERFLOW);
  memset(&out, 0xAB, sizeof out);
  before = out;
  CHECK_STATUS(cubert_handle_clone(t, &h, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_handle_offset(t, &h, 1, 1, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_handle_binding(t, &h, &out), CUBERT_STATUS_OVERFLOW);
  CHECK(memcmp(&out, &before, sizeof out) == 0);
  check_counts(t, h.memory, max, max);
  CHECK_OK(cubert_memory_id_release_handle(t, h.memory));
  check_counts(t, h.memory, max - 1u, max - 1u);
  /* saturation through bindings: the descriptor count is the bound */
  CHECK_OK(cubert_handle_table_debug_set_counts(t, h.memory, 1, max - 1u));
  CHECK_STATUS(cubert_handle_binding(t, &h, &b), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_handle_clone(t, &h, &out), CUBERT_STATUS_OVERFLOW);
  check_counts(t, h.memory, 1, max);
  CHECK_OK(cubert_memory_id_release_binding(t, h.memory));
  CHECK_OK(cubert_handle_binding(t, &h, &b));
  check_consistent(t, 1, 0); /* owned flag kept by the hook */
  CHECK_OK(cubert_handle_table_debug_set_counts(t, h.memory, 1, 0));
  CHECK_OK(cubert_handle_release(t, &h));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert_memory_id_set_owned(t, h.memory, false));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_debug_hook_rejects_bad_input) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_memory_id_t id = acquire_ok(t), dead = acquire_ok(t);
  CHECK_OK(cubert_memory_id_release_handle(t, dead));
  CHECK_STATUS(cubert_handle_table_debug_set_counts(NULL, id, 1, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_debug_set_counts(t, id, 0, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_debug_set_counts(t, id, CUBERT_HANDLE_MAX_COUNT, 1),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_debug_set_counts(t, id, 0xFFFFFFFFu, 0),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_table_debug_set_counts(t, dead, 1, 0), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 1, 1);
  CHECK_OK(cubert_memory_id_release_handle(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Table full: OUT_OF_RANGE, out untouched; a dead but owned slot still
 * counts as in use; a freed slot is usable again. */
TEST(handle_table_full_out_of_range) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 3, 0);
  cubert_memory_id_t ids[3], extra = {77, 77};
  int i;
  for (i = 0; i < 3; i++) ids[i] = acquire_ok(t);
  CHECK_STATUS(cubert_memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(extra.index, 77);
  CHECK_OK(cubert_memory_id_set_owned(t, ids[1], true));
  CHECK_OK(cubert_memory_id_release_handle(t, ids[1]));
  CHECK_STATUS(cubert_memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  check_consistent(t, 2, 1);
  CHECK_OK(cubert_memory_id_set_owned(t, ids[1], false));
  extra = acquire_ok(t);
  CHECK_EQ_U64(extra.index, ids[1].index);
  CHECK_OK(cubert_memory_id_release_handle(t, extra));
  CHECK_OK(cubert_memory_id_release_handle(t, ids[0]));
  CHECK_OK(cubert_memory_id_release_handle(t, ids[2]));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* A table whose size is not a multiple of the chunk: exactly max_slots ids,
 * all distinct. */
TEST(handle_table_fills_exactly_and_ids_distinct) {
  counting_allocator_t c;
  const uint32_t max = 1300;
  cubert_handle_table_t *t = table_new(&c, max, 0x11);
  cubert_memory_id_t *ids = (cubert_memory_id_t *)calloc(max, sizeof *ids), extra;
  unsigned char *seen = (unsigned char *)calloc(max + 1u, 1);
  uint32_t i;
  CHECK(ids && seen);
  for (i = 0; i < max; i++) {
    uint32_t low;
    ids[i] = acquire_ok(t);
    low = ids[i].index & 0xFFFFFFu;
    CHECK(low >= 1 && low <= max);
    CHECK(!seen[low]);
    seen[low] = 1;
  }
  CHECK_STATUS(cubert_memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  check_consistent(t, max, 0);
  for (i = 0; i < max; i += 2) CHECK_OK(cubert_memory_id_release_handle(t, ids[i]));
  check_consistent(t, max / 2u, 0);
  for (i = 0; i < max; i += 2) {
    ids[i] = acquire_ok(t);
    CHECK(cubert_memory_id_is_alive(t, ids[i]));
  }
  CHECK_STATUS(cubert_memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  for (i = 0; i < max; i++) CHECK_OK(cubert_memory_id_release_handle(t, ids[i]));
  check_consistent(t, 0, 0);
  free(ids);
  free(seen);
  table_done(t, &c);
}

/* Released slots are reused late (next-fit), so a stale id meets a reused
 * slot as rarely as possible: 200 acquire/release rounds in a 256-slot table
 * give 200 distinct slots. */
TEST(handle_released_slots_reused_late) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 256, 0);
  unsigned char seen[257];
  int i;
  memset(seen, 0, sizeof seen);
  for (i = 0; i < 200; i++) {
    cubert_memory_id_t id = acquire_ok(t);
    CHECK(!seen[id.index & 0xFFFFFFu]);
    seen[id.index & 0xFFFFFFu] = 1;
    CHECK_OK(cubert_memory_id_release_handle(t, id));
  }
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Growth without a live counter: a sliding window of 1000 ids in a table of
 * up to 8192 slots. The table grows when full and, once per sweep of the
 * cursor, until less than 7/8 of it is live; it must neither run out nor
 * keep growing, live() must stay exact, and a released slot is not reused
 * by the next acquires (next-fit). */
TEST(handle_table_growth_bounded_under_sliding_window) {
  enum { WINDOW = 1000, OPS = 40000 };
  static cubert_memory_id_t ring[WINDOW];
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 8192, 0x21);
  int64_t chunks;
  int i, head = 0;
  for (i = 0; i < WINDOW; i++) ring[i] = acquire_ok(t);
  CHECK_EQ_U64(cubert_handle_table_live(t), WINDOW);
  for (i = 0; i < OPS; i++) {
    cubert_memory_id_t old = ring[head];
    CHECK_OK(cubert_memory_id_release_handle(t, old));
    ring[head] = acquire_ok(t);
    CHECK(ring[head].index != old.index); /* reused late, not at once */
    head = (head + 1) % WINDOW;
    if (i % 5000 == 0) check_consistent(t, WINDOW, 0);
  }
  check_consistent(t, WINDOW, 0);
  chunks = c.live_blocks - 2; /* the table header and its chunk pointer array */
  CHECK(chunks * 256 >= WINDOW + WINDOW / 7); /* grew past 7/8 live */
  CHECK(chunks <= 6);                          /* and stopped there */
  for (i = 0; i < WINDOW; i++) CHECK_OK(cubert_memory_id_release_handle(t, ring[i]));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 39-style OOM loop: fail the allocator's 1st, 2nd, ... call (once, then
 * persistently) while creating a table and acquiring ids across several
 * chunk growths. Every call is OK or RESOURCE_EXHAUSTED; a failed call
 * changes nothing; nothing leaks. */
TEST(handle_allocation_failure_loop) {
  enum { MAX_SLOTS = 2000, WANT = 1500 };
  static cubert_memory_id_t ids[WANT];
  int persist;
  for (persist = 0; persist <= 1; persist++) {
    uint64_t k;
    int done = 0;
    for (k = 1; !done; k++) {
      counting_allocator_t c;
      cubert_allocator_t a = counting_allocator_init(&c);
      cubert_handle_table_t *t = NULL;
      cubert_status_t st;
      int n = 0, i, failures = 0;
      CHECK(k < 1000);
      counting_allocator_fail_at(&c, k, persist);
      st = cubert_handle_table_create(a, MAX_SLOTS, 3, &t);
      if (st != CUBERT_STATUS_OK) {
        CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
        CHECK(t == NULL);
        CHECK_EQ_I64(c.live_blocks, 0);
        counting_allocator_destroy(&c);
        continue;
      }
      for (i = 0; i < WANT; i++) {
        uint32_t live_before = cubert_handle_table_live(t);
        cubert_memory_id_t id = {0xDEAD, 0xBEEF};
        st = cubert_memory_id_acquire(t, &id);
        if (st == CUBERT_STATUS_OK) {
          ids[n++] = id;
          continue;
        }
        CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
        failures++;
        CHECK_EQ_U64(id.index, 0xDEAD);
        CHECK_EQ_U64(id.generation, 0xBEEF);
        CHECK_EQ_U64(cubert_handle_table_live(t), live_before);
        check_consistent(t, (uint32_t)n, 0);
        if (!persist) {
          /* the next valid call succeeds */
          CHECK_OK(cubert_memory_id_acquire(t, &ids[n]));
          n++;
        }
      }
      CHECK(persist || n == WANT);
      check_consistent(t, (uint32_t)n, 0);
      for (i = 0; i < n; i++) {
        check_counts(t, ids[i], 1, 1);
        CHECK_OK(cubert_memory_id_release_handle(t, ids[i]));
      }
      check_consistent(t, 0, 0);
      cubert_handle_table_destroy(t);
      CHECK_EQ_I64(c.live_blocks, 0);
      CHECK_EQ_U64(c.bad_frees, 0);
      if (c.failures == 0) done = 1;
      if (persist && failures > 0) CHECK(n < WANT); /* growth stopped for good */
      counting_allocator_destroy(&c);
    }
    CHECK(k > 5); /* create (2 blocks) and several chunk growths were failed */
  }
}

/* ---- handle / binding API (spec 2.1) -------------------------------------------------- */

TEST(handle_api_create_clone_offset_binding) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, cl, sub, sub2, full;
  cubert_binding_t b, b2;
  CHECK_OK(cubert_handle_create(t, 2, 77, 9, 100, &h));
  CHECK(cubert_memory_id_is_alive(t, h.memory));
  CHECK_EQ_U64(h.device, 2);
  CHECK_EQ_U64(h.stream, 77);
  CHECK_EQ_U64(h.cursor, 9);
  CHECK_EQ_U64(h.size, 100);
  CHECK_EQ_U64(h.offset_start, 0);
  CHECK_EQ_U64(h.offset_end, 0);
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 100);
  CHECK(cubert_handle_can_mut(t, &h));
  CHECK_OK(cubert_handle_clone(t, &h, &cl));
  CHECK(memcmp(&h, &cl, sizeof h) == 0);
  CHECK(!cubert_handle_can_mut(t, &h));
  /* offset_start(n) adds to the start, offset_end(n) to the trimmed end */
  CHECK_OK(cubert_handle_offset(t, &h, 10, 20, &sub));
  CHECK_EQ_U64(sub.offset_start, 10);
  CHECK_EQ_U64(sub.offset_end, 20);
  CHECK_EQ_U64(sub.size, 100);
  CHECK_EQ_U64(cubert_handle_size_in_used(&sub), 70);
  CHECK_OK(cubert_handle_offset(t, &sub, 5, 5, &sub2));
  CHECK_EQ_U64(sub2.offset_start, 15);
  CHECK_EQ_U64(sub2.offset_end, 25);
  CHECK_EQ_U64(cubert_handle_size_in_used(&sub2), 60);
  CHECK_EQ_U64(sub2.stream, 77);
  CHECK_OK(cubert_handle_offset(t, &sub2, 60, 0, &full)); /* empty range is fine */
  CHECK_EQ_U64(cubert_handle_size_in_used(&full), 0);
  check_counts(t, h.memory, 5, 5);
  CHECK_OK(cubert_handle_binding(t, &sub, &b));
  CHECK(memcmp(&b, &sub, sizeof b) == 0);
  CHECK_OK(cubert_binding_clone(t, &b, &b2));
  check_counts(t, h.memory, 5, 7);
  CHECK_OK(cubert_handle_clone(t, &cl, &cl)); /* out may alias in */
  check_counts(t, h.memory, 6, 8);
  CHECK_OK(cubert_handle_release(t, &cl));
  CHECK_OK(cubert_handle_release(t, &cl));
  CHECK_OK(cubert_handle_release(t, &h));
  CHECK_OK(cubert_handle_release(t, &sub));
  CHECK_OK(cubert_handle_release(t, &sub2));
  CHECK_OK(cubert_handle_release(t, &full));
  check_counts(t, h.memory, 0, 2);
  CHECK_OK(cubert_binding_release(t, &b));
  CHECK_OK(cubert_binding_release(t, &b2));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 25: a subrange beyond the parent is OUT_OF_RANGE, an overflowing sum
 * OVERFLOW; nothing retained, out untouched. */
TEST(handle_api_offset_errors) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, sub, out, before;
  CHECK_OK(cubert_handle_create(t, 0, 0, 0, 100, &h));
  CHECK_OK(cubert_handle_offset(t, &h, 10, 0, &sub));
  memset(&out, 0x5C, sizeof out);
  before = out;
  CHECK_STATUS(cubert_handle_offset(t, &h, 101, 0, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert_handle_offset(t, &h, 0, 101, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert_handle_offset(t, &h, 50, 51, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert_handle_offset(t, &sub, 91, 0, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert_handle_offset(t, &sub, UINT64_MAX, 0, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert_handle_offset(t, &h, UINT64_MAX / 2u + 1u, UINT64_MAX / 2u + 1u, &out),
               CUBERT_STATUS_OVERFLOW);
  sub.offset_end = 5;
  CHECK_STATUS(cubert_handle_offset(t, &sub, 0, UINT64_MAX, &out), CUBERT_STATUS_OVERFLOW);
  sub.offset_end = 0;
  CHECK(memcmp(&out, &before, sizeof out) == 0);
  check_counts(t, h.memory, 2, 2);
  CHECK_OK(cubert_handle_release(t, &h));
  CHECK_OK(cubert_handle_release(t, &sub));
  /* a dead handle: INVALID_HANDLE, not OUT_OF_RANGE */
  CHECK_STATUS(cubert_handle_offset(t, &h, 1, 1, &out), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(memcmp(&out, &before, sizeof out) == 0);
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_api_size_in_used) {
  cubert_handle_t h;
  memset(&h, 0, sizeof h);
  CHECK_EQ_U64(cubert_handle_size_in_used(NULL), 0);
  h.size = 64;
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 64);
  h.offset_start = 24;
  h.offset_end = 32;
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 8); /* 11.5 test_slices: offset 24, size 8 */
  h.offset_start = 65; /* a hand-made struct beyond its size */
  h.offset_end = 0;
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 0);
  h.offset_start = 40;
  h.offset_end = 40;
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 0);
  h.offset_start = 1;
  h.offset_end = UINT64_MAX;
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 0);
}

/* Rows 1, 42: NULL arguments. */
TEST(handle_api_null_arguments) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, out;
  cubert_memory_id_t id;
  CHECK_OK(cubert_handle_create(t, 0, 0, 0, 8, &h));
  id = h.memory;
  CHECK_STATUS(cubert_handle_create(NULL, 0, 0, 0, 8, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_create(t, 0, 0, 0, 8, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_clone(NULL, &h, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_clone(t, NULL, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_clone(t, &h, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_offset(NULL, &h, 0, 0, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_offset(t, NULL, 0, 0, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_offset(t, &h, 0, 0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_binding(NULL, &h, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_binding(t, NULL, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_binding(t, &h, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_binding_clone(NULL, &h, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_binding_clone(t, NULL, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_binding_clone(t, &h, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_release(NULL, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_handle_release(t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_binding_release(NULL, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_binding_release(t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert_handle_can_mut(NULL, &h));
  CHECK(!cubert_handle_can_mut(t, NULL));
  CHECK_STATUS(cubert_memory_id_retain_handle(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_release_handle(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_retain_binding(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_memory_id_release_binding(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert_memory_id_is_alive(NULL, id));
  CHECK(!cubert_memory_id_is_free(NULL, id));
  CHECK(!cubert_memory_id_can_mut(NULL, id));
  CHECK_EQ_U64(cubert_memory_id_handle_count(NULL, id), 0);
  CHECK_EQ_U64(cubert_memory_id_descriptor_count(NULL, id), 0);
  check_counts(t, id, 1, 1); /* nothing changed */
  CHECK_OK(cubert_handle_release(t, &h));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Rows 5, 6: handle-level double release and use after release. */
TEST(handle_api_use_after_release) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, out;
  cubert_binding_t b;
  CHECK_OK(cubert_handle_create(t, 0, 0, 0, 8, &h));
  CHECK_OK(cubert_handle_binding(t, &h, &b));
  CHECK_OK(cubert_binding_release(t, &b));
  CHECK_STATUS(cubert_binding_release(t, &b), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert_handle_release(t, &h));
  CHECK_STATUS(cubert_handle_release(t, &h), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_handle_clone(t, &h, &out), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_handle_binding(t, &h, &b), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_binding_clone(t, &b, &out), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!cubert_handle_can_mut(t, &h));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}
