/* SPDX-License-Identifier: MIT */
/* The handle table and memory ids (core/memory/handle.c): creation, the
 * memory semantics of CubeCL's managed handles (two counts, ownership,
 * locations; docs/cubecl-mapping.md) and the owner fast paths. Bad inputs:
 * test_handle_bad_input.c; handles and bindings: test_handle_api.c. */
#include "test_handle_fixture.h"
#include "memory/handle_table.h"

/* ---- table ------------------------------------------------------------------ */

TEST(handle_table_create_rejects_bad_arguments) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_allocator_t no_fn = {NULL, NULL};
  cubert_handle_table_t *t = (cubert_handle_table_t *)&c; /* sentinel */
  CHECK_STATUS(cubert__handle_table_create(a, 16, 0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_create(a, 0, 0, &t), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_create(a, CUBERT_HANDLE_TABLE_MAX_SLOTS + 1u, 0, &t),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_create(a, 0xFFFFFFFFu, 0, &t), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_table_create(no_fn, 16, 0, &t), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(t == (cubert_handle_table_t *)&c);
  CHECK_EQ_I64(c.live_blocks, 0);
  cubert__handle_table_destroy(NULL); /* no-op */
  CHECK_EQ_U64(cubert__handle_table_live(NULL), 0);
  CHECK_STATUS(cubert__handle_table_debug_check(NULL, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  counting_allocator_destroy(&c);
}

TEST(handle_table_largest_size_works) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, CUBERT_HANDLE_TABLE_MAX_SLOTS, 255);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK_EQ_U64(id.index >> 24, 255);
  CHECK(cubert__memory_id_is_alive(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
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
  CHECK(cubert__memory_id_is_alive(t, id));
  CHECK(!cubert__memory_id_is_free(t, id));
  CHECK(cubert__memory_id_can_mut(t, id));
  CHECK_OK(cubert__memory_id_location(t, id, &loc));
  CHECK_EQ_U64(loc.pool, 0);
  CHECK_EQ_U64(loc.init, 0);
  CHECK_EQ_U64(loc.page, 0);
  CHECK_EQ_U64(loc.slice, 0);
  /* not owned: dropping ownership is refused */
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 1, 0);
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_acquire_rejects_null) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 4, 0);
  cubert_memory_id_t id = {123, 456};
  CHECK_STATUS(cubert__memory_id_acquire(NULL, &id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_acquire(t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(id.index, 123);
  CHECK_EQ_U64(cubert__handle_table_live(t), 0);
  table_done(t, &c);
}

/* ---- memory semantics --------------------------------------------------------- */

/* As in CubeCL, cloning a handle increments both counts; a binding only the
 * descriptor count. */
TEST(handle_clone_and_binding_counts) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 1);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK_OK(cubert__memory_id_retain_handle(t, id));
  check_counts(t, id, 2, 2);
  CHECK_OK(cubert__memory_id_retain_binding(t, id));
  check_counts(t, id, 2, 3);
  CHECK_OK(cubert__memory_id_retain_binding(t, id));
  check_counts(t, id, 2, 4);
  check_consistent(t, 1, 0);
  CHECK_OK(cubert__memory_id_release_binding(t, id));
  check_counts(t, id, 2, 3);
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  check_counts(t, id, 1, 2);
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  check_counts(t, id, 0, 1);
  CHECK(cubert__memory_id_is_alive(t, id)); /* the binding keeps it alive */
  CHECK_OK(cubert__memory_id_release_binding(t, id));
  CHECK(!cubert__memory_id_is_alive(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* CubeCL's test_handle_mutability: with one extra clone !can_mut; after
 * dropping it can_mut. Bindings are ignored by can_mut; is_free iff no user
 * handle or binding is left (CubeCL's test_memory_page: not free while the
 * handle is held, free once the last reference is gone). */
TEST(handle_is_free_and_can_mut) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 1);
  cubert_memory_id_t id = acquire_ok(t);
  CHECK(cubert__memory_id_can_mut(t, id));
  CHECK(!cubert__memory_id_is_free(t, id));
  CHECK_OK(cubert__memory_id_retain_handle(t, id));
  CHECK(!cubert__memory_id_can_mut(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK(cubert__memory_id_can_mut(t, id));
  /* bindings are ignored by can_mut */
  CHECK_OK(cubert__memory_id_retain_binding(t, id));
  CHECK_OK(cubert__memory_id_retain_binding(t, id));
  CHECK(cubert__memory_id_can_mut(t, id));
  CHECK(!cubert__memory_id_is_free(t, id));
  /* the handle goes; the bindings keep the memory from being free */
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK(!cubert__memory_id_is_free(t, id));
  CHECK(cubert__memory_id_can_mut(t, id)); /* 0 user handles */
  CHECK_OK(cubert__memory_id_release_binding(t, id));
  CHECK(!cubert__memory_id_is_free(t, id));
  CHECK_OK(cubert__memory_id_release_binding(t, id));
  CHECK(cubert__memory_id_is_free(t, id));
  CHECK(!cubert__memory_id_can_mut(t, id));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Multi-tensor allocations share one base; each tensor is a clone
 * with offsets, so the base is freed only after all sub-handles and bindings
 * are dropped. */
TEST(handle_sub_handle_keeps_base_alive) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 2);
  cubert_handle_t base, a, b;
  cubert_binding_t bind;
  CHECK_OK(cubert__handle_create(t, 3, 11, 5, 1024, &base));
  CHECK_OK(cubert__handle_offset(t, &base, 0, 512, &a));
  CHECK_OK(cubert__handle_offset(t, &base, 512, 0, &b));
  CHECK_EQ_U64(cubert_handle_size_in_used(&a), 512);
  CHECK_EQ_U64(cubert_handle_size_in_used(&b), 512);
  check_counts(t, base.memory, 3, 3);
  CHECK_OK(cubert__handle_release(t, &base));
  CHECK(cubert__memory_id_is_alive(t, base.memory));
  CHECK(!cubert__handle_can_mut(t, &a)); /* a and b share the memory */
  CHECK_OK(cubert__handle_release(t, &a));
  CHECK(cubert__handle_can_mut(t, &b));
  CHECK_OK(cubert__handle_binding(t, &b, &bind));
  CHECK_OK(cubert__handle_release(t, &b));
  CHECK(!cubert__memory_id_is_free(t, bind.memory)); /* the binding pins it */
  check_consistent(t, 1, 0);
  CHECK_OK(cubert__binding_release(t, &bind));
  CHECK(cubert__memory_id_is_free(t, base.memory));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* As in CubeCL (and its find_stale_descriptor_returns_not_found): the pool's
 * slice owns the reserved id R; reserve hands a reference of R to a user;
 * bind(reserved, assigned) moves the slice to the user's assigned id A and
 * copies R's location into A. R is then an orphan: it stays alive until its
 * user releases it, and its slot is then recycled; A keeps the slice. */
TEST(handle_orphan_reserved_assigned) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 3);
  cubert_memory_id_t r, a, later;
  cubert_memory_location_t loc = {4, 1, 2, 7}, got;
  r = acquire_ok(t); /* the user's reserved handle reference */
  CHECK_OK(cubert__memory_id_set_owned(t, r, true));
  CHECK_OK(cubert__memory_id_set_location(t, r, loc));
  a = acquire_ok(t);
  /* bind: the slice takes A, copies the location, drops R */
  CHECK_OK(cubert__memory_id_location(t, r, &got));
  CHECK_OK(cubert__memory_id_set_location(t, a, got));
  CHECK_OK(cubert__memory_id_set_owned(t, a, true));
  CHECK_OK(cubert__memory_id_set_owned(t, r, false));
  /* R is an orphan but alive while its user holds it */
  CHECK(cubert__memory_id_is_alive(t, r));
  check_counts(t, r, 1, 1);
  CHECK_STATUS(cubert__memory_id_set_owned(t, r, false), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 2, 0);
  CHECK_OK(cubert__memory_id_release_handle(t, r));
  check_rejected(t, r);
  check_consistent(t, 1, 0); /* R's slot is back in the free set */
  /* A still owns the slice and its location */
  CHECK_OK(cubert__memory_id_location(t, a, &got));
  CHECK_EQ_U64(got.slice, 7);
  CHECK_EQ_U64(got.pool, 4);
  /* A's user releases: A dies but the slice (owned) keeps the slot */
  CHECK_OK(cubert__memory_id_release_handle(t, a));
  CHECK(!cubert__memory_id_is_alive(t, a));
  CHECK(cubert__memory_id_is_free(t, a));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert__memory_id_location(t, a, &got)); /* the pool still reads it */
  CHECK_EQ_U64(got.slice, 7);
  CHECK_STATUS(cubert__memory_id_retain_handle(t, a), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert__memory_id_set_owned(t, a, false));
  check_consistent(t, 0, 0);
  check_rejected(t, a);
  later = acquire_ok(t);
  CHECK(!id_eq(later, a));
  CHECK(!id_eq(later, r));
  CHECK_OK(cubert__memory_id_release_handle(t, later));
  table_done(t, &c);
}

/* CubeCL's handle::test_location_visible_through_shared_arc and
 * test_memory_id_mutability: a location set through one reference is seen
 * through every other (one id, shared); updating the slice is visible; copying
 * a location to another id's descriptor copies slice 4. */
TEST(handle_location_shared) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 4);
  cubert_handle_t h, clone;
  cubert_memory_id_t other;
  cubert_memory_location_t loc = {1, 1, 2, 3}, got;
  CHECK_OK(cubert__handle_create(t, 0, 0, 0, 64, &h));
  CHECK_OK(cubert__handle_clone(t, &h, &clone));
  CHECK_OK(cubert__memory_id_set_location(t, h.memory, loc));
  CHECK_OK(cubert__memory_id_location(t, clone.memory, &got));
  CHECK_EQ_U64(got.pool, 1);
  CHECK_EQ_U64(got.page, 2);
  CHECK_EQ_U64(got.slice, 3);
  CHECK_EQ_U64(got.init, 1);
  got.slice = 42; /* update_slice(42) */
  CHECK_OK(cubert__memory_id_set_location(t, clone.memory, got));
  CHECK_OK(cubert__memory_id_location(t, h.memory, &got));
  CHECK_EQ_U64(got.slice, 42);
  got.slice = 4;
  CHECK_OK(cubert__memory_id_set_location(t, h.memory, got));
  other = acquire_ok(t);
  CHECK_OK(cubert__memory_id_location(t, h.memory, &got));
  CHECK_OK(cubert__memory_id_set_location(t, other, got));
  CHECK_OK(cubert__memory_id_location(t, other, &got));
  CHECK_EQ_U64(got.slice, 4);
  CHECK_STATUS(cubert__memory_id_location(t, other, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_location(NULL, other, &got), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_set_location(NULL, other, got), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__handle_release(t, &h));
  CHECK_OK(cubert__handle_release(t, &clone));
  CHECK_OK(cubert__memory_id_release_handle(t, other));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_set_owned_rules) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 5);
  cubert_memory_id_t id = acquire_ok(t), dead;
  CHECK_STATUS(cubert__memory_id_set_owned(NULL, id, true), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__memory_id_set_owned(t, id, true));
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE);
  check_counts(t, id, 1, 1); /* ownership is not a count */
  CHECK(cubert__memory_id_can_mut(t, id));
  CHECK_OK(cubert__memory_id_set_owned(t, id, false));
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  check_consistent(t, 1, 0);
  /* ownership survives the id's death; dropping it then frees the slot */
  CHECK_OK(cubert__memory_id_set_owned(t, id, true));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  check_consistent(t, 0, 1);
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert__memory_id_set_owned(t, id, false));
  check_consistent(t, 0, 0);
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, false), CUBERT_STATUS_INVALID_HANDLE);
  /* dead and never owned */
  dead = acquire_ok(t);
  CHECK_OK(cubert__memory_id_release_handle(t, dead));
  CHECK_STATUS(cubert__memory_id_set_owned(t, dead, true), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_set_owned(t, dead, false), CUBERT_STATUS_INVALID_HANDLE);
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
  CHECK_OK(cubert__memory_id_set_owned(t, id, true));
  CHECK_OK(cubert__memory_id_set_location(t, id, loc));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  CHECK_OK(cubert__memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.slice, 9);
  got.slice = 10;
  CHECK_OK(cubert__memory_id_set_location(t, id, got));
  CHECK_OK(cubert__memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.slice, 10);
  CHECK_OK(cubert__memory_id_set_owned(t, id, false));
  CHECK_STATUS(cubert__memory_id_location(t, id, &got), CUBERT_STATUS_INVALID_HANDLE);
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
  CHECK_OK(cubert__memory_id_acquire_owned(t, loc, &id));
  CHECK_EQ_U64(id.index >> 24, 0x3C);
  CHECK_EQ_U64(id.generation & 1u, 1);
  CHECK(!id_eq(id, plain));
  check_counts(t, id, 1, 1);
  CHECK(cubert__memory_id_is_alive(t, id));
  CHECK(cubert__memory_id_can_mut(t, id));
  CHECK_OK(cubert__memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.pool, 2);
  CHECK_EQ_U64(got.init, 1);
  CHECK_EQ_U64(got.page, 7);
  CHECK_EQ_U64(got.slice, 99);
  CHECK_STATUS(cubert__memory_id_set_owned(t, id, true), CUBERT_STATUS_INVALID_HANDLE); /* owned */
  check_consistent(t, 2, 0);
  /* dead but owned: the slot stays (location readable) until disowned */
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  check_consistent(t, 1, 1);
  CHECK_OK(cubert__memory_id_location(t, id, &got));
  CHECK_EQ_U64(got.slice, 99);
  CHECK_OK(cubert__memory_id_set_owned(t, id, false)); /* the general call works on it too */
  check_consistent(t, 1, 0);
  check_rejected(t, id);
  /* the plain acquire's id is unaffected and not owned */
  CHECK_STATUS(cubert__memory_id_disown(t, plain), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert__memory_id_location(t, plain, &got));
  CHECK_EQ_U64(got.init, 0);
  CHECK_OK(cubert__memory_id_release_handle(t, plain));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

TEST(handle_acquire_owned_rejects_null_and_full_table) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 2, 0);
  cubert_memory_location_t loc = {1, 1, 1, 1};
  cubert_memory_id_t a, b, extra = {123, 456};
  CHECK_STATUS(cubert__memory_id_acquire_owned(NULL, loc, &extra), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_acquire_owned(t, loc, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(extra.index, 123);
  CHECK_EQ_U64(cubert__handle_table_live(t), 0);
  CHECK_OK(cubert__memory_id_acquire_owned(t, loc, &a));
  CHECK_OK(cubert__memory_id_acquire_owned(t, loc, &b));
  CHECK_STATUS(cubert__memory_id_acquire_owned(t, loc, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(extra.index, 123);
  CHECK_EQ_U64(extra.generation, 456);
  /* a dead-but-owned slot is not free either */
  CHECK_OK(cubert__memory_id_release_handle(t, a));
  CHECK_STATUS(cubert__memory_id_acquire_owned(t, loc, &extra), CUBERT_STATUS_OUT_OF_RANGE);
  check_consistent(t, 1, 1);
  CHECK_OK(cubert__memory_id_disown(t, a));
  CHECK_OK(cubert__memory_id_acquire_owned(t, loc, &extra));
  CHECK_EQ_U64(extra.index, a.index);
  CHECK(extra.generation != a.generation);
  check_rejected(t, a);
  CHECK_OK(cubert__memory_id_disown(t, extra));
  CHECK_OK(cubert__memory_id_release_handle(t, extra));
  CHECK_OK(cubert__memory_id_disown(t, b));
  CHECK_OK(cubert__memory_id_release_handle(t, b));
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
  CHECK_STATUS(cubert__memory_id_disown(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE); /* never owned */
  CHECK_OK(cubert__memory_id_set_owned(t, id, true));
  CHECK_OK(cubert__memory_id_retain_binding(t, id));
  CHECK_OK(cubert__memory_id_disown(t, id));
  CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE); /* twice */
  check_counts(t, id, 1, 2); /* ownership is not a count */
  check_consistent(t, 1, 0);
  CHECK_OK(cubert__memory_id_set_owned(t, id, true)); /* owned again, then dies owned */
  CHECK_OK(cubert__memory_id_release_binding(t, id));
  CHECK_OK(cubert__memory_id_release_handle(t, id));
  check_consistent(t, 0, 1);
  CHECK_OK(cubert__memory_id_disown(t, id)); /* frees the slot */
  check_consistent(t, 0, 0);
  check_rejected(t, id);
  /* the slot's next occupant, owned: the stale id touches nothing */
  CHECK_OK(cubert__memory_id_acquire_owned(t, loc, &next));
  CHECK_EQ_U64(next.index, id.index);
  CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_set_location_owned(t, id, loc), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__memory_id_set_owned(t, next, true), CUBERT_STATUS_INVALID_HANDLE); /* still owned */
  CHECK_OK(cubert__memory_id_release_handle(t, next));
  check_consistent(t, 0, 1);
  CHECK_STATUS(cubert__memory_id_disown(t, id), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert__memory_id_location(t, next, &got));
  CHECK_EQ_U64(got.slice, 5);
  CHECK_OK(cubert__memory_id_disown(t, next));
  check_consistent(t, 0, 0);
  CHECK_STATUS(cubert__memory_id_disown(t, next), CUBERT_STATUS_INVALID_HANDLE);
  table_done(t, &c);
}

/* set_location_owned writes an owned id's location (alive, or dead but still
 * owned) and answers as set_location for any other id. */
TEST(handle_set_location_owned_rules) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 8);
  cubert_memory_location_t zero = {0, 0, 0, 0}, loc = {1, 1, 2, 3}, got;
  cubert_memory_id_t owned, plain = acquire_ok(t);
  CHECK_OK(cubert__memory_id_acquire_owned(t, zero, &owned));
  CHECK_STATUS(cubert__memory_id_set_location_owned(NULL, owned, loc),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__memory_id_set_location_owned(t, owned, loc));
  CHECK_OK(cubert__memory_id_location(t, owned, &got));
  CHECK_EQ_U64(got.init, 1);
  CHECK_EQ_U64(got.page, 2);
  CHECK_EQ_U64(got.slice, 3);
  /* not owned: the pinned path, same answer as set_location */
  loc.slice = 11;
  CHECK_OK(cubert__memory_id_set_location_owned(t, plain, loc));
  CHECK_OK(cubert__memory_id_location(t, plain, &got));
  CHECK_EQ_U64(got.slice, 11);
  /* dead but owned: still writable; dead and not owned: refused */
  CHECK_OK(cubert__memory_id_release_handle(t, owned));
  loc.slice = 12;
  CHECK_OK(cubert__memory_id_set_location_owned(t, owned, loc));
  CHECK_OK(cubert__memory_id_location(t, owned, &got));
  CHECK_EQ_U64(got.slice, 12);
  CHECK_OK(cubert__memory_id_disown(t, owned));
  CHECK_STATUS(cubert__memory_id_set_location_owned(t, owned, loc), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert__memory_id_release_handle(t, plain));
  CHECK_STATUS(cubert__memory_id_set_location_owned(t, plain, loc), CUBERT_STATUS_INVALID_HANDLE);
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
    CHECK_OK(cubert__memory_id_acquire_owned(t, zero, &id));
    CHECK_OK(cubert__memory_id_retain_binding(t, id));
    switch (order) {
      case 0: /* disown, then the references */
        CHECK_OK(cubert__memory_id_disown(t, id));
        CHECK_OK(cubert__memory_id_release_handle(t, id));
        check_consistent(t, 1, 0);
        CHECK_OK(cubert__memory_id_release_binding(t, id));
        break;
      case 1: /* the references, then disown */
        CHECK_OK(cubert__memory_id_release_binding(t, id));
        CHECK_OK(cubert__memory_id_release_handle(t, id));
        check_consistent(t, 0, 1);
        CHECK_OK(cubert__memory_id_disown(t, id));
        break;
      case 2: /* set_owned(false) last */
        CHECK_OK(cubert__memory_id_release_handle(t, id));
        CHECK_OK(cubert__memory_id_release_binding(t, id));
        CHECK_OK(cubert__memory_id_set_owned(t, id, false));
        break;
      case 3: /* set_owned(false) first, binding last */
        CHECK_OK(cubert__memory_id_set_owned(t, id, false));
        CHECK_OK(cubert__memory_id_release_handle(t, id));
        CHECK_OK(cubert__memory_id_release_binding(t, id));
        break;
      case 4: /* between the references */
        CHECK_OK(cubert__memory_id_release_binding(t, id));
        CHECK_OK(cubert__memory_id_disown(t, id));
        CHECK_OK(cubert__memory_id_release_handle(t, id));
        break;
      default: /* handle last after a re-own */
        CHECK_OK(cubert__memory_id_disown(t, id));
        CHECK_OK(cubert__memory_id_set_owned(t, id, true));
        CHECK_OK(cubert__memory_id_release_binding(t, id));
        CHECK_OK(cubert__memory_id_disown(t, id));
        CHECK_OK(cubert__memory_id_release_handle(t, id));
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
    CHECK_OK(cubert__handle_table_create(counting_allocator_initialize(&c), MAX_SLOTS, 6, &t));
    counting_allocator_fail_at(&c, k, 1); /* the k-th chunk growth on, for good */
    for (i = 0; i < WANT; i++) {
      cubert_memory_id_t id = {0xDEAD, 0xBEEF};
      uint32_t live_before = cubert__handle_table_live(t);
      cubert_status_t st;
      loc.slice = (uint32_t)i;
      st = cubert__memory_id_acquire_owned(t, loc, &id);
      if (st == CUBERT_STATUS_OK) {
        ids[n++] = id;
        continue;
      }
      CHECK_STATUS(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK_EQ_U64(id.index, 0xDEAD);
      CHECK_EQ_U64(cubert__handle_table_live(t), live_before);
      check_consistent(t, (uint32_t)n, 0);
    }
    for (i = 0; i < n; i++) {
      cubert_memory_location_t got;
      CHECK_OK(cubert__memory_id_location(t, ids[i], &got));
      CHECK_EQ_U64(got.slice, (uint32_t)i);
      CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
      CHECK_OK(cubert__memory_id_disown(t, ids[i]));
    }
    check_consistent(t, 0, 0);
    cubert__handle_table_destroy(t);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK_EQ_U64(c.bad_frees, 0);
    if (c.failures == 0) done = 1;
    counting_allocator_destroy(&c);
  }
  CHECK(k > 2);
}
