/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_sliced.c: the sliced pool (CubeCL's SlicedPool + MemoryPage;
 * docs/cubecl-mapping.md, "Sliced pool"): pages of one size, each an address-ordered list of slices;
 * first fit with a split, coalescing of neighbouring free slices, an
 * optional capacity cap, and the accept rule with its near-page-size case.
 *
 * Structure (O(1)-ish per reservation, independent of the number of live
 * slices):
 *  - every slice is a node of one pool-wide array (index = location.slice,
 *    stable for the node's life; location.page = the page's slot);
 *  - known-free slices sit in size bins (4 per power of two, with a bitmap):
 *    a fit is the first slice of the lowest non-empty bin above the
 *    request's, else a bounded first-fit scan of the request's own bin;
 *  - used slices sit on a list, oldest first. Users release ids in the
 *    handle table without telling the pool, so the pool polls, and only
 *    when no known-free slice fits: first the oldest slices while they are
 *    released (a sliding window of allocations is thus detected in O(1) per
 *    release), then every slice from the oldest on until one fits. Only then
 *    is a new page allocated, as in CubeCL (which coalesces every page
 *    before every search), with one bound: a scan of every slice of a large
 *    pool (over SCAN_ALWAYS slices) is amortized over the reservations (see
 *    SCAN_CREDIT), so a pool whose releases come in random order may add a
 *    page while a few of its released slices are still unpolled.
 * Detected slices are merged with free neighbours at once, so coalescing is
 * incremental. Differences from CubeCL that no test observes: which of
 * several fitting slices is chosen (a good fit rather than the first in
 * page order), slice numbers are not renumbered, and the padding of a freed
 * slice is usable space (CubeCL loses it until the next coalesce).
 */
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

#if CUBERT_CONFIG_PAGED_POOLS /* else not built: the manager's calls vanish (MEMORY_IF_PAGED_POOLS) */

/* ---- bins ------------------------------------------------------------------- */

static uint32_t bin_of(uint64_t x) {
  unsigned msb;
  if (x < 4) return (uint32_t)x;
  msb = 63u - (unsigned)__builtin_clzll((unsigned long long)x);
  return 4u + (msb - 2u) * 4u + (uint32_t)((x >> (msb - 2u)) & 3u);
}

static void bin_insert(cubert_sliced_pool_t *pool, uint32_t n) {
  cubert_sliced_node_t *node = &pool->nodes[n];
  uint32_t b = bin_of(node->size);
  node->bin = (uint8_t)b;
  node->link_prev = CUBERT_MEMORY_NIL;
  node->link_next = pool->bins[b];
  if (pool->bins[b] != CUBERT_MEMORY_NIL) pool->nodes[pool->bins[b]].link_prev = n;
  pool->bins[b] = n;
  pool->bitmap[b >> 6] |= (uint64_t)1 << (b & 63);
}

static void bin_remove(cubert_sliced_pool_t *pool, uint32_t n) {
  cubert_sliced_node_t *node = &pool->nodes[n];
  uint32_t b = node->bin;
  if (node->link_prev != CUBERT_MEMORY_NIL) pool->nodes[node->link_prev].link_next = node->link_next;
  else pool->bins[b] = node->link_next;
  if (node->link_next != CUBERT_MEMORY_NIL) pool->nodes[node->link_next].link_prev = node->link_prev;
  if (pool->bins[b] == CUBERT_MEMORY_NIL) pool->bitmap[b >> 6] &= ~((uint64_t)1 << (b & 63));
  node->link_prev = node->link_next = CUBERT_MEMORY_NIL;
}

/* Lowest non-empty bin >= from, or CUBERT_SLICED_BINS. */
static uint32_t bin_next_nonempty(const cubert_sliced_pool_t *pool, uint32_t from) {
  uint32_t w;
  for (w = from >> 6; w < 4 && from < CUBERT_SLICED_BINS; w++) {
    uint64_t bits = pool->bitmap[w];
    if (w == (from >> 6)) bits &= ~(uint64_t)0 << (from & 63);
    if (bits) return w * 64u + (uint32_t)__builtin_ctzll((unsigned long long)bits);
  }
  return CUBERT_SLICED_BINS;
}

/* A known-free slice of at least `eff` bytes, or NIL. */
static uint32_t find_fit(const cubert_sliced_pool_t *pool, uint64_t eff, uint32_t scan_limit) {
  uint32_t b = bin_of(eff), above, n, seen = 0;
  above = bin_next_nonempty(pool, b + 1);
  if (above < CUBERT_SLICED_BINS) return pool->bins[above];
  for (n = pool->bins[b]; n != CUBERT_MEMORY_NIL && seen < scan_limit;
       n = pool->nodes[n].link_next, seen++)
    if (pool->nodes[n].size >= eff) return n;
  return CUBERT_MEMORY_NIL;
}

/* ---- clock list of used slices (circular, hand = oldest) --------------------- */

static void clock_insert(cubert_sliced_pool_t *pool, uint32_t n) {
  cubert_sliced_node_t *node = &pool->nodes[n];
  if (pool->hand == CUBERT_MEMORY_NIL) {
    node->link_prev = node->link_next = n;
    pool->hand = n;
  } else {
    uint32_t tail = pool->nodes[pool->hand].link_prev;
    node->link_prev = tail;
    node->link_next = pool->hand;
    pool->nodes[tail].link_next = n;
    pool->nodes[pool->hand].link_prev = n;
  }
  pool->used_count++;
}

static void clock_remove(cubert_sliced_pool_t *pool, uint32_t n) {
  cubert_sliced_node_t *node = &pool->nodes[n];
  if (node->link_next == n) {
    pool->hand = CUBERT_MEMORY_NIL;
  } else {
    pool->nodes[node->link_prev].link_next = node->link_next;
    pool->nodes[node->link_next].link_prev = node->link_prev;
    if (pool->hand == n) pool->hand = node->link_next;
  }
  if (pool->scan == n) pool->scan = node->link_next == n ? CUBERT_MEMORY_NIL : node->link_next;
  node->link_prev = node->link_next = CUBERT_MEMORY_NIL;
  pool->used_count--;
}

/* ---- nodes and pages ------------------------------------------------------------ */

static cubert_status_t nodes_ensure(cubert_sliced_pool_t *pool, uint32_t spare) {
  uint32_t free_nodes = 0, n;
  /* count vacant nodes lazily: the free list is short in steady state */
  for (n = pool->node_free; n != CUBERT_MEMORY_NIL && free_nodes < spare;
       n = pool->nodes[n].link_next)
    free_nodes++;
  if (free_nodes >= spare) return CUBERT_STATUS_OK;
  /* unreachable: in tests (2^32 - 2 slice nodes) */
  if (pool->node_count > CUBERT_MEMORY_NIL - 1 - spare) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  return cubert__memory_array_reserve(pool->env->allocator, (void **)&pool->nodes, &pool->node_cap,
                                      pool->node_count + (spare - free_nodes),
                                      sizeof(cubert_sliced_node_t), 64);
}

static uint32_t node_take(cubert_sliced_pool_t *pool) {
  uint32_t n;
  if (pool->node_free != CUBERT_MEMORY_NIL) {
    n = pool->node_free;
    pool->node_free = pool->nodes[n].link_next;
  } else {
    n = pool->node_count++;
  }
  cubert_memset(&pool->nodes[n], 0, sizeof(cubert_sliced_node_t));
  pool->nodes[n].prev = pool->nodes[n].next = CUBERT_MEMORY_NIL;
  pool->nodes[n].link_prev = pool->nodes[n].link_next = CUBERT_MEMORY_NIL;
  return n;
}

static void node_release(cubert_sliced_pool_t *pool, uint32_t n) {
  pool->nodes[n].state = CUBERT_SLICE_VACANT;
  pool->nodes[n].link_next = pool->node_free;
  pool->node_free = n;
}

/* Remove node x from its page's address list. */
static void page_unlink(cubert_sliced_pool_t *pool, uint32_t x) {
  cubert_sliced_node_t *node = &pool->nodes[x];
  /* unreachable: x first in its page (absorb only unlinks the node after another) */
  if (node->prev != CUBERT_MEMORY_NIL) pool->nodes[node->prev].next = node->next;
  else pool->pages[node->page].first = node->next;
  if (node->next != CUBERT_MEMORY_NIL) pool->nodes[node->next].prev = node->prev;
}

/* Merge the free node `b` (following `a` in its page) into free node `a`;
 * neither is in a bin. */
static void absorb(cubert_sliced_pool_t *pool, uint32_t a, uint32_t b) {
  pool->nodes[a].size += pool->nodes[b].size;
  page_unlink(pool, b);
  node_release(pool, b);
}

/* A used slice whose owner is released becomes free: drop the owner, merge
 * it with free neighbours when `merge`, and put the result in a bin.
 * Returns the resulting free node. */
static uint32_t detect(cubert_sliced_pool_t *pool, uint32_t n, bool merge) {
  cubert_sliced_node_t *node = &pool->nodes[n];
  uint32_t nb;
  clock_remove(pool, n);
  cubert__memory_owner_drop(pool->env, &node->owner);
  pool->number_allocs--;
  pool->bytes_in_use -= node->size;
  pool->bytes_padding -= node->padding;
  node->size += node->padding;
  node->padding = 0;
  node->cursor = 0;
  node->state = CUBERT_SLICE_FREE;
  if (merge) {
    nb = node->next;
    if (nb != CUBERT_MEMORY_NIL && pool->nodes[nb].state == CUBERT_SLICE_FREE) {
      bin_remove(pool, nb);
      absorb(pool, n, nb);
    }
    nb = pool->nodes[n].prev;
    if (nb != CUBERT_MEMORY_NIL && pool->nodes[nb].state == CUBERT_SLICE_FREE) {
      bin_remove(pool, nb);
      absorb(pool, nb, n);
      n = nb;
    }
  }
  bin_insert(pool, n);
  return n;
}

static bool node_released(const cubert_sliced_pool_t *pool, uint32_t n) {
  return cubert__memory_owner_is_free(pool->env, pool->nodes[n].owner);
}

/* Poll the oldest slices: detect while they are released, at most k. */
static void poll_oldest(cubert_sliced_pool_t *pool, uint32_t k) {
  while (k-- > 0 && pool->hand != CUBERT_MEMORY_NIL && node_released(pool, pool->hand))
    (void)detect(pool, pool->hand, pool->merge);
}

/* Poll the newest slices: detect while they are released, at most k (the
 * slices of a thread that releases what it just reserved are found at its
 * next reservation, options.poll_newest). */
static void poll_newest(cubert_sliced_pool_t *pool, uint32_t k) {
  while (k-- > 0 && pool->hand != CUBERT_MEMORY_NIL) {
    uint32_t n = pool->nodes[pool->hand].link_prev; /* the newest: the clock's tail */
    if (!node_released(pool, n)) return;
    (void)detect(pool, n, pool->merge);
  }
}

/* Poll up to `limit` used slices from the scan cursor on (round robin, so
 * successive bounded scans cover the whole list); stop at the first detected
 * free slice of at least `eff` bytes (eff UINT64_MAX: never stop early). The
 * hand stays on the oldest used slice. *out_polled: slices polled. */
static uint32_t poll_until_fit(cubert_sliced_pool_t *pool, uint64_t eff, uint64_t limit,
                               uint64_t *out_polled) {
  uint32_t cur = pool->scan != CUBERT_MEMORY_NIL ? pool->scan : pool->hand, next, r;
  uint64_t polled = 0, steps = CUBERT_MIN(limit, (uint64_t)pool->used_count);
  uint32_t found = CUBERT_MEMORY_NIL;
  /* unreachable: cur NIL with steps left (steps <= used slices, which the list holds) */
  while (polled < steps && cur != CUBERT_MEMORY_NIL) {
    next = pool->nodes[cur].link_next;
    polled++;
    if (node_released(pool, cur)) {
      bool last = next == cur;
      r = detect(pool, cur, pool->merge);
      if (last) {
        cur = CUBERT_MEMORY_NIL;
        break;
      }
      /* unreachable: eff == UINT64_MAX with size >= eff (no slice is 2^64 - 1 bytes) */
      if (pool->nodes[r].size >= eff && eff != UINT64_MAX) {
        found = r;
        cur = next;
        break;
      }
    }
    cur = next;
  }
  pool->scan = cur;
  *out_polled = polled;
  return found;
}

void cubert__sliced_pool_poll_all(cubert_sliced_pool_t *pool) {
  uint64_t polled;
  (void)poll_until_fit(pool, UINT64_MAX, UINT64_MAX, &polled);
}

/* Scans of large pools are amortized: each reservation earns SCAN_CREDIT
 * polls, and a scan of a pool of more than SCAN_ALWAYS used slices may poll
 * only what it has earned (it resumes where the last one stopped); when that
 * finds no fit, a new page is allocated. A pool whose releases come in
 * random order may so hold up to about 1/SCAN_CREDIT of its slices released
 * but not yet polled; a sliding window has none (its oldest slices are
 * polled first). Small pools are always scanned whole, as in CubeCL. */
#define SCAN_CREDIT 16u
#define SCAN_ALWAYS 1024u

static uint32_t poll_for_fit(cubert_sliced_pool_t *pool, uint64_t eff) {
  uint64_t polled = 0, limit = pool->used_count;
  uint32_t n;
  if (pool->used_count > SCAN_ALWAYS) limit = pool->scan_credit;
  n = poll_until_fit(pool, eff, limit, &polled);
  pool->scan_credit = pool->scan_credit > polled ? pool->scan_credit - polled : 0;
  return n;
}

/* Turn free node n into a used slice of `size` (effective `eff`) owned by
 * `owner`, splitting off the rest. Needs one spare node (nodes_ensure). */
static void carve(cubert_sliced_pool_t *pool, uint32_t n, uint64_t size, uint64_t eff,
                  cubert_memory_id_t owner) {
  uint64_t length = pool->nodes[n].size;
  bin_remove(pool, n);
  if (length > eff) {
    uint32_t m = node_take(pool);
    cubert_sliced_node_t *node = &pool->nodes[n], *rest = &pool->nodes[m];
    rest->offset = node->offset + eff;
    rest->size = length - eff;
    rest->state = CUBERT_SLICE_FREE;
    rest->page = node->page;
    rest->prev = n;
    rest->next = node->next;
    if (node->next != CUBERT_MEMORY_NIL) pool->nodes[node->next].prev = m;
    node->next = m;
    bin_insert(pool, m);
  }
  pool->nodes[n].size = size;
  pool->nodes[n].padding = eff - size;
  pool->nodes[n].state = CUBERT_SLICE_USED;
  pool->nodes[n].owner = owner;
  pool->nodes[n].cursor = 0;
  clock_insert(pool, n);
  pool->number_allocs++;
  pool->bytes_in_use += size;
  pool->bytes_padding += eff - size;
  if (size > pool->largest_alloc) pool->largest_alloc = size;
}

static cubert_status_t set_location(cubert_sliced_pool_t *pool, cubert_memory_id_t owner,
                                    uint32_t page, uint32_t slice) {
  cubert_memory_location_t loc;
  loc.pool = pool->position;
  loc.init = 1;
  loc.page = (uint16_t)page;
  loc.slice = slice;
  return cubert__memory_id_set_location_owned(pool->env->table, owner, loc); /* the pool owns it */
}

/* ---- pool operations ------------------------------------------------------------- */

cubert_status_t cubert__sliced_pool_initialize(cubert_sliced_pool_t *pool, cubert_memory_env_t *env,
                                               uint8_t position, const cubert_memory_pool_options_t *opt,
                                               uint64_t alignment, uint32_t poll_per_reserve,
                                               cubert_error_t *out_error) {
  uint32_t i;
  uint64_t page = opt->page_size, cap = opt->max_pool_size, pages;
  if (page == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_CONFIG_ZERO_SIZE, NULL, 0, "page_size");
  if (alignment == 0) alignment = 1;
  cubert_memset(pool, 0, sizeof *pool);
  pool->env = env;
  pool->position = position;
  pool->alignment = alignment;
  pool->max_slice_size = opt->max_slice_size == CUBERT_MEMORY_NONE ? page : opt->max_slice_size;
  pool->max_pages = UINT32_MAX;
  if (cap != CUBERT_MEMORY_NONE) {
    pool->capped = true;
    if (cap < page) page = CUBERT_MAX(alignment, cap / alignment * alignment);
    pages = cap / page;
    pool->max_pages = (uint32_t)CUBERT_MIN(pages, (uint64_t)CUBERT_MEMORY_MAX_PAGES);
  }
  pool->page_size = page;
  pool->max_alloc_size = CUBERT_MIN(pool->max_slice_size, page);
  pool->merge = true;
  pool->poll_per_reserve = poll_per_reserve;
  pool->node_free = pool->page_vacant = pool->hand = pool->scan = CUBERT_MEMORY_NIL;
  for (i = 0; i < CUBERT_SLICED_BINS; i++) pool->bins[i] = CUBERT_MEMORY_NIL;
  return CUBERT_STATUS_OK;
}

void cubert__sliced_pool_deinitialize(cubert_sliced_pool_t *pool) {
  uint32_t i;
  for (i = 0; i < pool->node_count; i++)
    if (pool->nodes[i].state == CUBERT_SLICE_USED)
      cubert__memory_owner_drop(pool->env, &pool->nodes[i].owner);
  for (i = 0; i < pool->page_count; i++)
    if (pool->pages[i].first != CUBERT_MEMORY_NIL)
      cubert__memory_storage_dealloc(pool->env, pool->pages[i].storage.id);
  cubert__memory_array_free(pool->env->allocator, (void **)&pool->nodes, &pool->node_cap,
                            sizeof(cubert_sliced_node_t));
  cubert__memory_array_free(pool->env->allocator, (void **)&pool->pages, &pool->page_cap,
                            sizeof(cubert_sliced_page_t));
  pool->node_count = pool->page_count = pool->pages_live = pool->used_count = 0;
}

bool cubert__sliced_pool_accept(const cubert_sliced_pool_t *pool, uint64_t size) {
  uint64_t waste;
  if (size <= pool->max_alloc_size) return true;
  if (pool->capped || size > pool->page_size) return false;
  waste = pool->page_size - size; /* less than 20 % of the page wasted */
  return waste <= UINT64_MAX / 5 && waste * 5 < pool->page_size;
}

cubert_status_t cubert__sliced_pool_try_reserve(cubert_sliced_pool_t *pool, uint64_t size,
                                                cubert_memory_id_t owner, bool *out_found,
                                                cubert_error_t *out_error) {
  uint64_t eff;
  uint32_t n;
  cubert_status_t status;
  *out_found = false;
  if (cubert__memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK ||
      eff > pool->page_size)
    return CUBERT_STATUS_OK;
  if (nodes_ensure(pool, 1) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "sliced pool bookkeeping");
  if (pool->poll_newest) poll_newest(pool, pool->poll_newest);
  if (pool->poll_per_reserve) poll_oldest(pool, pool->poll_per_reserve);
  if (pool->scan_credit < pool->used_count) pool->scan_credit += SCAN_CREDIT;
  n = find_fit(pool, eff, 8);
  if (n == CUBERT_MEMORY_NIL) { /* detect the released oldest slices, merge, retry */
    poll_oldest(pool, UINT32_MAX);
    n = find_fit(pool, eff, 8);
  }
  if (n == CUBERT_MEMORY_NIL) n = poll_for_fit(pool, eff);
  if (n == CUBERT_MEMORY_NIL) n = find_fit(pool, eff, UINT32_MAX);
  if (n == CUBERT_MEMORY_NIL) return CUBERT_STATUS_OK;
  status = set_location(pool, owner, pool->nodes[n].page, n);
  if (status != CUBERT_STATUS_OK) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
  carve(pool, n, size, eff, owner);
  *out_found = true;
  return CUBERT_STATUS_OK;
}

static cubert_status_t capacity_exceeded(cubert_sliced_pool_t *pool, uint64_t size, uint64_t pages,
                                         cubert_error_t *out_error) {
  uint64_t fields[3];
  fields[0] = size;
  /* unreachable: saturation (max_pages * page <= the cap; 65536 live pages of > 2^48 bytes) */
  fields[1] = pages > UINT64_MAX / pool->page_size ? UINT64_MAX : pages * pool->page_size;
  fields[2] = pool->bytes_in_use;
  return cubert_error_set(out_error, CUBERT_ERROR_IO_POOL_CAPACITY_EXCEEDED, fields, 3, NULL);
}

cubert_status_t cubert__sliced_pool_alloc(cubert_sliced_pool_t *pool, uint64_t size,
                                          cubert_memory_id_t owner, cubert_error_t *out_error) {
  uint64_t eff;
  uint32_t slot, m;
  cubert_storage_handle_t storage;
  cubert_status_t status;
  if (cubert__memory_effective_size(size, pool->alignment, &eff) != CUBERT_STATUS_OK ||
      eff > pool->page_size)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  if (pool->capped && pool->pages_live >= pool->max_pages)
    return capacity_exceeded(pool, size, pool->max_pages, out_error);
  /* unreachable: in tests (65536 live pages) */
  if (pool->pages_live >= CUBERT_MEMORY_PAGE_SLOTS)
    return capacity_exceeded(pool, size, CUBERT_MEMORY_PAGE_SLOTS, out_error);
  if (nodes_ensure(pool, 2) != CUBERT_STATUS_OK ||
      (pool->page_vacant == CUBERT_MEMORY_NIL &&
       cubert__memory_array_reserve(pool->env->allocator, (void **)&pool->pages, &pool->page_cap,
                                   pool->page_count + 1, sizeof(cubert_sliced_page_t),
                                   8) != CUBERT_STATUS_OK))
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "sliced pool bookkeeping");
  status = pool->env->storage.vtable->alloc(pool->env->storage.self, pool->page_size, &storage,
                                            out_error);
  if (status != CUBERT_STATUS_OK) return status;
  slot = pool->page_vacant != CUBERT_MEMORY_NIL ? pool->page_vacant : pool->page_count;
  m = pool->node_free != CUBERT_MEMORY_NIL ? pool->node_free : pool->node_count;
  status = set_location(pool, owner, slot, m);
  if (status != CUBERT_STATUS_OK) {
    cubert__memory_storage_dealloc(pool->env, storage.id);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, NULL);
  }
  if (slot == pool->page_vacant) pool->page_vacant = pool->pages[slot].next_vacant;
  else pool->page_count++;
  storage.offset = 0;
  storage.size = pool->page_size;
  pool->pages[slot].storage = storage;
  pool->pages[slot].next_vacant = CUBERT_MEMORY_NIL;
  m = node_take(pool);
  pool->pages[slot].first = m;
  pool->nodes[m].offset = 0;
  pool->nodes[m].size = pool->page_size;
  pool->nodes[m].state = CUBERT_SLICE_FREE;
  pool->nodes[m].page = slot;
  bin_insert(pool, m);
  carve(pool, m, size, eff, owner);
  pool->pages_live++;
  if (pool->pages_live > pool->pages_peak) pool->pages_peak = pool->pages_live;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__sliced_pool_find(cubert_sliced_pool_t *pool, cubert_memory_location_t loc,
                                         cubert_memory_id_t id, cubert_memory_slice_view_t *out,
                                         cubert_error_t *out_error) {
  cubert_sliced_node_t *node;
  if (loc.page >= pool->page_count || pool->pages[loc.page].first == CUBERT_MEMORY_NIL)
    return cubert__memory_not_found(out_error, "Memory page ", loc.page, " doesn't exist");
  if (loc.slice >= pool->node_count || pool->nodes[loc.slice].state != CUBERT_SLICE_USED ||
      pool->nodes[loc.slice].page != loc.page)
    return cubert__memory_not_found(out_error, "Memory slice ", loc.slice, " doesn't exist");
  node = &pool->nodes[loc.slice];
  if (!cubert__memory_id_equal(node->owner, id))
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location points to a different allocation");
  out->storage.id = pool->pages[loc.page].storage.id;
  out->storage.offset = node->offset;
  out->storage.size = node->size;
  out->cursor = &node->cursor;
  out->owner = &node->owner;
  return CUBERT_STATUS_OK;
}

/* Detect the released slices of a page and merge every run of free slices. */
static void coalesce_page(cubert_sliced_pool_t *pool, uint32_t page) {
  uint32_t n = pool->pages[page].first;
  while (n != CUBERT_MEMORY_NIL) {
    cubert_sliced_node_t *node = &pool->nodes[n];
    if (node->state == CUBERT_SLICE_USED && node_released(pool, n)) {
      n = detect(pool, n, true);
      continue; /* re-examine the merged slice */
    }
    if (node->state == CUBERT_SLICE_FREE && node->next != CUBERT_MEMORY_NIL &&
        pool->nodes[node->next].state == CUBERT_SLICE_FREE) {
      uint32_t b = node->next;
      bin_remove(pool, n);
      bin_remove(pool, b);
      absorb(pool, n, b);
      bin_insert(pool, n);
      continue;
    }
    n = node->next;
  }
}

void cubert__sliced_pool_coalesce(cubert_sliced_pool_t *pool) {
  uint32_t p;
  for (p = 0; p < pool->page_count; p++)
    if (pool->pages[p].first != CUBERT_MEMORY_NIL) coalesce_page(pool, p);
}

void cubert__sliced_pool_cleanup(cubert_sliced_pool_t *pool, bool explicit_) {
  uint32_t p, n;
  if (!explicit_) return; /* sliced pages are released by explicit cleanups only */
  for (p = 0; p < pool->page_count; p++) {
    if (pool->pages[p].first == CUBERT_MEMORY_NIL) continue;
    coalesce_page(pool, p);
    n = pool->pages[p].first;
    if (pool->nodes[n].state == CUBERT_SLICE_FREE && pool->nodes[n].next == CUBERT_MEMORY_NIL) {
      bin_remove(pool, n);
      node_release(pool, n);
      cubert__memory_storage_dealloc(pool->env, pool->pages[p].storage.id);
      pool->pages[p].first = CUBERT_MEMORY_NIL;
      pool->pages[p].next_vacant = pool->page_vacant;
      pool->page_vacant = p;
      pool->pages_live--;
    }
  }
}

void cubert__sliced_pool_report(cubert_sliced_pool_t *pool, cubert_memory_pool_report_t *out) {
  uint32_t b, n;
  cubert__sliced_pool_poll_all(pool);
  cubert_memset(out, 0, sizeof *out);
  out->kind = CUBERT_MEMORY_POOL_KIND_SLICED;
  out->page_size = pool->page_size;
  out->max_slice_size = pool->max_slice_size;
  out->max_pool_size = CUBERT_MEMORY_NONE;
  /* unreachable(2): saturation (max_pages * page_size <= the cap; live pages * page_size is memory held) */
  if (pool->capped)
    out->max_pool_size = (uint64_t)pool->max_pages > UINT64_MAX / pool->page_size
                             ? UINT64_MAX
                             : (uint64_t)pool->max_pages * pool->page_size;
  out->max_alloc_size = pool->max_alloc_size;
  out->reclaim_at = CUBERT_MEMORY_NONE;
  out->usage.number_allocs = pool->number_allocs;
  out->usage.bytes_in_use = pool->bytes_in_use;
  out->usage.bytes_padding = pool->bytes_padding;
  /* unreachable: saturation (live pages * page_size is memory actually held) */
  out->usage.bytes_reserved = (uint64_t)pool->pages_live > UINT64_MAX / pool->page_size
                                  ? UINT64_MAX
                                  : (uint64_t)pool->pages_live * pool->page_size;
  out->pages = pool->pages_live;
  out->pages_peak = pool->pages_peak;
  out->largest_alloc = pool->largest_alloc;
  for (b = CUBERT_SLICED_BINS; b > 0; b--) {
    if (pool->bins[b - 1] == CUBERT_MEMORY_NIL) continue;
    for (n = pool->bins[b - 1]; n != CUBERT_MEMORY_NIL; n = pool->nodes[n].link_next)
      if (pool->nodes[n].size > out->largest_free) out->largest_free = pool->nodes[n].size;
    break;
  }
}

void cubert__sliced_pool_trim(cubert_sliced_pool_t *pool) {
  uint32_t i;
  if (pool->pages_live != 0) return;
  cubert__memory_array_free(pool->env->allocator, (void **)&pool->nodes, &pool->node_cap,
                            sizeof(cubert_sliced_node_t));
  cubert__memory_array_free(pool->env->allocator, (void **)&pool->pages, &pool->page_cap,
                            sizeof(cubert_sliced_page_t));
  pool->node_count = pool->page_count = pool->used_count = 0;
  pool->node_free = pool->page_vacant = pool->hand = pool->scan = CUBERT_MEMORY_NIL;
  for (i = 0; i < CUBERT_SLICED_BINS; i++) pool->bins[i] = CUBERT_MEMORY_NIL;
  for (i = 0; i < 4; i++) pool->bitmap[i] = 0;
}

uint32_t cubert__sliced_pool_page_blocks(cubert_sliced_pool_t *pool, uint32_t page,
                                         cubert_sliced_block_t *out, uint32_t capacity) {
  uint32_t n, count = 0;
  if (page >= pool->page_count || pool->pages[page].first == CUBERT_MEMORY_NIL) return 0;
  for (n = pool->pages[page].first; n != CUBERT_MEMORY_NIL; n = pool->nodes[n].next) {
    if (count < capacity) {
      out[count].offset = pool->nodes[n].offset;
      out[count].size = pool->nodes[n].size + pool->nodes[n].padding;
      out[count].is_free =
          pool->nodes[n].state == CUBERT_SLICE_FREE || node_released(pool, n);
    }
    count++;
  }
  return count;
}

#endif /* CUBERT_CONFIG_PAGED_POOLS */
