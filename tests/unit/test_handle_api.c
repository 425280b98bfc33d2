/* SPDX-License-Identifier: MIT */
/* Handles and bindings over the table's ids (core/memory/handle_binding.c,
 * cubert/handle.h). */
#include "test_handle_fixture.h"
#include "memory/handle_table.h"

/* ---- handle / binding API ------------------------------------------------------------- */

TEST(handle_api_create_clone_offset_binding) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, cl, sub, sub2, full;
  cubert_binding_t b, b2;
  CHECK_OK(cubert__handle_create(t, 2, 77, 9, 100, &h));
  CHECK(cubert__memory_id_is_alive(t, h.memory));
  CHECK_EQ_U64(h.device, 2);
  CHECK_EQ_U64(h.stream, 77);
  CHECK_EQ_U64(h.cursor, 9);
  CHECK_EQ_U64(h.size, 100);
  CHECK_EQ_U64(h.offset_start, 0);
  CHECK_EQ_U64(h.offset_end, 0);
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 100);
  CHECK(cubert__handle_can_mut(t, &h));
  CHECK_OK(cubert__handle_clone(t, &h, &cl));
  CHECK(memcmp(&h, &cl, sizeof h) == 0);
  CHECK(!cubert__handle_can_mut(t, &h));
  /* offset_start(n) adds to the start, offset_end(n) to the trimmed end */
  CHECK_OK(cubert__handle_offset(t, &h, 10, 20, &sub));
  CHECK_EQ_U64(sub.offset_start, 10);
  CHECK_EQ_U64(sub.offset_end, 20);
  CHECK_EQ_U64(sub.size, 100);
  CHECK_EQ_U64(cubert_handle_size_in_used(&sub), 70);
  CHECK_OK(cubert__handle_offset(t, &sub, 5, 5, &sub2));
  CHECK_EQ_U64(sub2.offset_start, 15);
  CHECK_EQ_U64(sub2.offset_end, 25);
  CHECK_EQ_U64(cubert_handle_size_in_used(&sub2), 60);
  CHECK_EQ_U64(sub2.stream, 77);
  CHECK_OK(cubert__handle_offset(t, &sub2, 60, 0, &full)); /* empty range is fine */
  CHECK_EQ_U64(cubert_handle_size_in_used(&full), 0);
  check_counts(t, h.memory, 5, 5);
  CHECK_OK(cubert__handle_binding(t, &sub, &b));
  CHECK(memcmp(&b, &sub, sizeof b) == 0);
  CHECK_OK(cubert__binding_clone(t, &b, &b2));
  check_counts(t, h.memory, 5, 7);
  CHECK_OK(cubert__handle_clone(t, &cl, &cl)); /* out may alias in */
  check_counts(t, h.memory, 6, 8);
  CHECK_OK(cubert__handle_release(t, &cl));
  CHECK_OK(cubert__handle_release(t, &cl));
  CHECK_OK(cubert__handle_release(t, &h));
  CHECK_OK(cubert__handle_release(t, &sub));
  CHECK_OK(cubert__handle_release(t, &sub2));
  CHECK_OK(cubert__handle_release(t, &full));
  check_counts(t, h.memory, 0, 2);
  CHECK_OK(cubert__binding_release(t, &b));
  CHECK_OK(cubert__binding_release(t, &b2));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Row 25: a subrange beyond the parent is OUT_OF_RANGE, an overflowing sum
 * OVERFLOW; nothing retained, out untouched. */
TEST(handle_api_offset_errors) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, sub, out, before;
  CHECK_OK(cubert__handle_create(t, 0, 0, 0, 100, &h));
  CHECK_OK(cubert__handle_offset(t, &h, 10, 0, &sub));
  memset(&out, 0x5C, sizeof out);
  before = out;
  CHECK_STATUS(cubert__handle_offset(t, &h, 101, 0, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert__handle_offset(t, &h, 0, 101, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert__handle_offset(t, &h, 50, 51, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert__handle_offset(t, &sub, 91, 0, &out), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_STATUS(cubert__handle_offset(t, &sub, UINT64_MAX, 0, &out), CUBERT_STATUS_OVERFLOW);
  CHECK_STATUS(cubert__handle_offset(t, &h, UINT64_MAX / 2u + 1u, UINT64_MAX / 2u + 1u, &out),
               CUBERT_STATUS_OVERFLOW);
  sub.offset_end = 5;
  CHECK_STATUS(cubert__handle_offset(t, &sub, 0, UINT64_MAX, &out), CUBERT_STATUS_OVERFLOW);
  sub.offset_end = 0;
  CHECK(memcmp(&out, &before, sizeof out) == 0);
  check_counts(t, h.memory, 2, 2);
  CHECK_OK(cubert__handle_release(t, &h));
  CHECK_OK(cubert__handle_release(t, &sub));
  /* a dead handle: INVALID_HANDLE, not OUT_OF_RANGE */
  CHECK_STATUS(cubert__handle_offset(t, &h, 1, 1, &out), CUBERT_STATUS_INVALID_HANDLE);
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
  CHECK_OK(cubert__handle_create(t, 0, 0, 0, 8, &h));
  id = h.memory;
  CHECK_STATUS(cubert__handle_create(NULL, 0, 0, 0, 8, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_create(t, 0, 0, 0, 8, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_clone(NULL, &h, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_clone(t, NULL, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_clone(t, &h, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_offset(NULL, &h, 0, 0, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_offset(t, NULL, 0, 0, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_offset(t, &h, 0, 0, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_binding(NULL, &h, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_binding(t, NULL, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_binding(t, &h, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__binding_clone(NULL, &h, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__binding_clone(t, NULL, &out), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__binding_clone(t, &h, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_release(NULL, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__handle_release(t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__binding_release(NULL, &h), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__binding_release(t, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert__handle_can_mut(NULL, &h));
  CHECK(!cubert__handle_can_mut(t, NULL));
  CHECK_STATUS(cubert__memory_id_retain_handle(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_release_handle(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_retain_binding(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__memory_id_release_binding(NULL, id), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(!cubert__memory_id_is_alive(NULL, id));
  CHECK(!cubert__memory_id_is_free(NULL, id));
  CHECK(!cubert__memory_id_can_mut(NULL, id));
  CHECK_EQ_U64(cubert__memory_id_handle_count(NULL, id), 0);
  CHECK_EQ_U64(cubert__memory_id_descriptor_count(NULL, id), 0);
  check_counts(t, id, 1, 1); /* nothing changed */
  CHECK_OK(cubert__handle_release(t, &h));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* Rows 5, 6: handle-level double release and use after release. */
TEST(handle_api_use_after_release) {
  counting_allocator_t c;
  cubert_handle_table_t *t = table_new(&c, 16, 0);
  cubert_handle_t h, out;
  cubert_binding_t b;
  CHECK_OK(cubert__handle_create(t, 0, 0, 0, 8, &h));
  CHECK_OK(cubert__handle_binding(t, &h, &b));
  CHECK_OK(cubert__binding_release(t, &b));
  CHECK_STATUS(cubert__binding_release(t, &b), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_OK(cubert__handle_release(t, &h));
  CHECK_STATUS(cubert__handle_release(t, &h), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__handle_clone(t, &h, &out), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__handle_binding(t, &h, &b), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert__binding_clone(t, &b, &out), CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!cubert__handle_can_mut(t, &h));
  check_consistent(t, 0, 0);
  table_done(t, &c);
}

/* A table smaller than a chunk (256 slots) allocates only its own slots: a
 * 16-slot table fits in about 16 slots' worth of memory (small embedded
 * devices, docs/embedding.md); a 300-slot table's second chunk holds 44;
 * every slot works, and the table is full after exactly max_slots. */
TEST(handle_table_small_capacity_allocates_its_slots_only) {
  static const uint32_t sizes[3] = {16, 300, 256};
  cubert_memory_id_t ids[300], extra;
  uint32_t k, i;
  for (k = 0; k < 3; k++) {
    counting_allocator_t c;
    cubert_handle_table_t *t = table_new(&c, sizes[k], 0);
    int64_t empty = c.live_bytes;
    for (i = 0; i < sizes[k]; i++) ids[i] = acquire_ok(t);
    CHECK_STATUS(cubert__memory_id_acquire(t, &extra), CUBERT_STATUS_OUT_OF_RANGE);
    check_consistent(t, sizes[k], 0);
    /* the slots' bytes: at most 64 bytes a slot plus a 64-byte bitmap per chunk */
    CHECK_MSG(c.live_bytes - empty <= (int64_t)(sizes[k] * 64u + 2u * 64u),
              "%u slots took %lld bytes", (unsigned)sizes[k], (long long)(c.live_bytes - empty));
    if (sizes[k] == 16) CHECK_MSG(c.live_bytes < 1200, "%lld bytes", (long long)c.live_bytes);
    for (i = 0; i < sizes[k]; i++) CHECK_OK(cubert__memory_id_release_handle(t, ids[i]));
    check_consistent(t, 0, 0);
    table_done(t, &c);
  }
}
