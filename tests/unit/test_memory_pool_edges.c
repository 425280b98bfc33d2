/* tests/unit/test_memory_pool_edges.c: the four pool kinds driven directly (their
 * interface in core/memory/memory_internal.h), on the paths the manager never takes:
 * alignment 0, requests whose padded size wraps, an owner id that died before its
 * location could be written (refused, the storage given back, nothing kept), lookups
 * at locations that hold nothing, and trims while memory is live. */
#include <string.h>

#include "test_memory_fixture.h"

typedef struct pool_fx_t {
  mm_fixture_t f;
  cubert_memory_env_t env;
} pool_fx_t;

static void pfx_init(pool_fx_t *p) {
  mmf_base(&p->f, 128 * MIB, 32);
  p->env.allocator = p->f.allocator;
  p->env.storage = p->f.storage.storage;
  p->env.table = p->f.table;
  p->env.flush_pending = false;
}

static void pfx_done(pool_fx_t *p) {
  CHECK_EQ_U64(cubert_handle_table_live(p->f.table), 0);
  mmf_done(&p->f);
}

/* An id as the manager makes them: owned from the start, one user handle. */
static cubert_memory_id_t owner_new(pool_fx_t *p) {
  cubert_memory_location_t unset;
  cubert_memory_id_t id;
  memset(&unset, 0, sizeof unset);
  CHECK_OK(cubert_memory_id_acquire_owned(p->f.table, unset, &id));
  return id;
}

/* An id that was alive once and is free now: no location can be written for it. */
static cubert_memory_id_t owner_dead(pool_fx_t *p) {
  cubert_memory_id_t id;
  CHECK_OK(cubert_memory_id_acquire(p->f.table, &id));
  CHECK_OK(cubert_memory_id_release_handle(p->f.table, id));
  return id;
}

static cubert_memory_location_t loc_at(uint8_t pool, uint16_t page, uint32_t slice) {
  cubert_memory_location_t l;
  l.pool = pool;
  l.init = 1;
  l.page = page;
  l.slice = slice;
  return l;
}

/* ---- direct ------------------------------------------------------------------------------ */

TEST(memory_pool_direct_edges) {
  pool_fx_t p;
  cubert_direct_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_direct(CUBERT_MEMORY_NONE);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  cubert_direct_pool_initialize(&pool, &p.env, 0, &o, 0);
  CHECK_EQ_U64(pool.alignment, 1); /* alignment 0 counts as 1 */
  cubert_direct_pool_deinitialize(&pool);
  cubert_direct_pool_initialize(&pool, &p.env, 0, &o, 32);
  /* a padded size that wraps: nothing to reuse, too big to allocate */
  CHECK_OK(cubert_direct_pool_try_reserve(&pool, UINT64_MAX - 3, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_STATUS(cubert_direct_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  /* an owner that died: refused, the storage given back */
  CHECK_STATUS(cubert_direct_pool_alloc(&pool, 100, owner_dead(&p), &err), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  CHECK_EQ_U64(pool.live, 0);
  /* a free slice of the right size, offered to a dead owner: refused, the slice stays free */
  a = owner_new(&p);
  CHECK_OK(cubert_direct_pool_alloc(&pool, 100, a, &err));
  cubert_direct_pool_trim(&pool); /* memory is live: nothing trimmed */
  CHECK_EQ_U64(pool.slice_count, 1);
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, a));
  CHECK_STATUS(cubert_direct_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!found);
  CHECK_EQ_U64(pool.live, 1);
  /* lookups where nothing is: past the slots, and at the free slice */
  CHECK_STATUS(cubert_direct_pool_find(&pool, loc_at(0, 0, 5), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_direct_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  cubert_direct_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

/* ---- exclusive ------------------------------------------------------------------------------ */

TEST(memory_pool_exclusive_edges) {
  pool_fx_t p;
  cubert_exclusive_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_exclusive(4096, CUBERT_MEMORY_NONE);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a, b;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  CHECK_OK(cubert_exclusive_pool_initialize(&pool, &p.env, 0, &o, 0, &err));
  CHECK_EQ_U64(pool.alignment, 1);
  cubert_exclusive_pool_deinitialize(&pool);
  o.max_alloc_size = UINT64_MAX; /* every size accepted: the rounding itself overflows */
  CHECK_OK(cubert_exclusive_pool_initialize(&pool, &p.env, 0, &o, 32, &err));
  CHECK_STATUS(cubert_exclusive_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  cubert_exclusive_pool_deinitialize(&pool);
  o.max_alloc_size = 4096;
  CHECK_OK(cubert_exclusive_pool_initialize(&pool, &p.env, 0, &o, 32, &err));
  CHECK_STATUS(cubert_exclusive_pool_alloc(&pool, 5000, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG); /* above the pool's max */
  CHECK_STATUS(cubert_exclusive_pool_alloc(&pool, 100, owner_dead(&p), &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  /* two pages; page 0 freed and aged, page 1 freed: reuse prefers the least aged */
  a = owner_new(&p);
  b = owner_new(&p);
  CHECK_OK(cubert_exclusive_pool_alloc(&pool, 100, a, &err));
  CHECK_OK(cubert_exclusive_pool_alloc(&pool, 100, b, &err));
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, a));
  cubert_exclusive_pool_cleanup(&pool, 1, false); /* no period: a periodic check does nothing */
  CHECK_EQ_U64(pool.pages_live, 2);
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, b));
  pool.pages[0].free_count = 1;
  pool.pages[1].free_count = 3;
  CHECK_STATUS(cubert_exclusive_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE); /* the best page found, the owner dead: refused */
  CHECK(!found);
  a = owner_new(&p);
  CHECK_OK(cubert_exclusive_pool_try_reserve(&pool, 100, a, &found, &err));
  CHECK(found);
  CHECK(cubert_memory_id_equal(pool.pages[0].owner, a)); /* free_count 1 < 3 */
  /* lookups where nothing is: past the pages, a slice other than 0, a free page */
  CHECK_STATUS(cubert_exclusive_pool_find(&pool, loc_at(0, 9, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_exclusive_pool_find(&pool, loc_at(0, 0, 1), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_exclusive_pool_find(&pool, loc_at(0, 1, 0), b, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_OK(cubert_exclusive_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err));
  /* an explicit cleanup frees the free page at once */
  cubert_exclusive_pool_cleanup(&pool, 2, true);
  CHECK_EQ_U64(pool.pages_live, 1);
  CHECK_EQ_U64(pool.page_count, 1); /* the vacant last slot is dropped */
  b = owner_new(&p);
  CHECK_OK(cubert_exclusive_pool_alloc(&pool, 100, b, &err));
  CHECK_EQ_U64(pool.page_count, 2);
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, a));
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, b));
  cubert_exclusive_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

/* ---- persistent ------------------------------------------------------------------------------- */

TEST(memory_pool_persistent_edges) {
  pool_fx_t p;
  cubert_persistent_pool_t pool;
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  cubert_persistent_pool_initialize(&pool, &p.env, 0, 128 * MIB);
  CHECK_EQ_U64(pool.alignment, 1);
  cubert_persistent_pool_deinitialize(&pool);
  cubert_persistent_pool_initialize(&pool, &p.env, 32, 128 * MIB);
  CHECK(!cubert_persistent_pool_has_size(&pool, UINT64_MAX - 3));
  CHECK_OK(cubert_persistent_pool_try_reserve(&pool, UINT64_MAX - 3, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_STATUS(cubert_persistent_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_STATUS(cubert_persistent_pool_alloc(&pool, 100, owner_dead(&p), &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  a = owner_new(&p);
  CHECK_OK(cubert_persistent_pool_alloc(&pool, 100, a, &err));
  cubert_persistent_pool_trim(&pool); /* live memory: kept */
  CHECK_EQ_U64(pool.slice_count, 1);
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, a));
  cubert_persistent_pool_cleanup(&pool, false); /* only an explicit cleanup releases */
  CHECK_EQ_U64(pool.live, 1);
  CHECK_STATUS(cubert_persistent_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!found);
  CHECK_STATUS(cubert_persistent_pool_find(&pool, loc_at(255, 0, 4), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_persistent_pool_find(&pool, loc_at(255, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  /* a vacant slot is reused by the next allocation */
  cubert_persistent_pool_cleanup(&pool, true);
  CHECK_EQ_U64(pool.live, 0);
  a = owner_new(&p);
  CHECK_OK(cubert_persistent_pool_alloc(&pool, 64, a, &err));
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, a));
  cubert_persistent_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}

/* ---- sliced ------------------------------------------------------------------------------------ */

TEST(memory_pool_sliced_edges) {
  pool_fx_t p;
  cubert_sliced_pool_t pool;
  cubert_memory_pool_options_t o = cubert_memory_pool_sliced(4096, CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE);
  cubert_memory_slice_view_t view;
  cubert_memory_id_t a;
  cubert_error_t err;
  bool found = true;
  pfx_init(&p);
  o.page_size = 0;
  CHECK_STATUS(cubert_sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err),
               CUBERT_STATUS_CONFIG_INVALID);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_CONFIG_ZERO_SIZE);
  o.page_size = 4096;
  CHECK_OK(cubert_sliced_pool_initialize(&pool, &p.env, 0, &o, 0, 0, &err));
  CHECK_EQ_U64(pool.alignment, 1);
  cubert_sliced_pool_deinitialize(&pool);
  /* a cap of 2^64 - 1 bytes with a 4 KiB page: the page count is limited to the maximum */
  o.max_pool_size = UINT64_MAX - 1;
  CHECK_OK(cubert_sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err));
  CHECK_EQ_U64(pool.max_pages, CUBERT_MEMORY_MAX_PAGES);
  cubert_sliced_pool_deinitialize(&pool);
  o.max_pool_size = CUBERT_MEMORY_NONE;
  CHECK_OK(cubert_sliced_pool_initialize(&pool, &p.env, 0, &o, 32, 0, &err));
  CHECK_OK(cubert_sliced_pool_try_reserve(&pool, UINT64_MAX - 3, owner_dead(&p), &found, &err));
  CHECK(!found);
  CHECK_STATUS(cubert_sliced_pool_alloc(&pool, UINT64_MAX - 3, owner_dead(&p), &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  CHECK_STATUS(cubert_sliced_pool_alloc(&pool, 100, owner_dead(&p), &err), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  CHECK_EQ_U64(pool.pages_live, 0);
  a = owner_new(&p);
  CHECK_OK(cubert_sliced_pool_alloc(&pool, 100, a, &err));
  /* a free slice that fits, offered to a dead owner: refused */
  CHECK_STATUS(cubert_sliced_pool_try_reserve(&pool, 100, owner_dead(&p), &found, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK(!found);
  /* lookups where nothing is: past the pages, past the nodes, a node of another page */
  CHECK_STATUS(cubert_sliced_pool_find(&pool, loc_at(0, 3, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  CHECK_STATUS(cubert_sliced_pool_find(&pool, loc_at(0, 0, 999), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  pool.nodes[0].page = 1; /* a node claimed by page 1 is not page 0's */
  CHECK_STATUS(cubert_sliced_pool_find(&pool, loc_at(0, 0, 0), a, &view, &err), CUBERT_STATUS_NOT_FOUND);
  pool.nodes[0].page = 0;
  CHECK_OK(cubert_memory_id_release_handle(p.f.table, a));
  cubert_sliced_pool_deinitialize(&pool);
  CHECK_EQ_U64(p.f.storage.live_allocs, 0);
  pfx_done(&p);
}
