/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_internal.h: the memory pools behind core/memory/memory.h. Not
 * installed. Every structure here is used by one thread (the manager's).
 *
 * Files: memory_config.c (presets, resolution), memory_sliced.c,
 * memory_exclusive.c, memory_persistent.c, memory_direct.c (one pool kind
 * each; the last three over memory_slots.c, what they share),
 * memory_manager.c (routing, lookups, cleanup, layouts),
 * memory_report.c (usage, reports, formatting).
 */
#ifndef CUBERT_CORE_MEMORY_INTERNAL_H
#define CUBERT_CORE_MEMORY_INTERNAL_H

#include "base/internal.h"
#include "cubert/memory.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

#define CUBERT_MEMORY_NIL UINT32_MAX
/* Memory locations hold a u16 page index: at most 65536 pages per pool. */
#define CUBERT_MEMORY_PAGE_SLOTS 65536u

/* What every pool of one manager shares. */
typedef struct cubert_memory_env_t {
  cubert_allocator_t allocator;
  cubert_storage_t storage;
  cubert_handle_table_t *table;
  bool flush_pending; /* a dealloc happened since the last flush */
} cubert_memory_env_t;

/* A found slice, as the manager needs it. */
typedef struct cubert_memory_slice_view_t {
  cubert_storage_handle_t storage; /* page id, offset in page, requested size */
  uint64_t *cursor;                /* the slice's cursor (writable by bind) */
  cubert_memory_id_t *owner;       /* the slice's owner (writable by bind) */
} cubert_memory_slice_view_t;

/* ---- small shared helpers (memory_report.c) ------------------------------ */

static inline bool cubert__memory_id_equal(cubert_memory_id_t a, cubert_memory_id_t b) {
  return a.index == b.index && a.generation == b.generation;
}
static inline bool cubert__memory_id_is_null(cubert_memory_id_t a) {
  /* unreachable: index 0 with a generation (the null id is the only id of index 0) */
  return a.index == 0 && a.generation == 0;
}
/* padding(size, align) = 0 if size mod align = 0 else align - size mod align
 * (align >= 1). */
uint64_t cubert__memory_padding(uint64_t size, uint64_t align);
/* size + padding; OVERFLOW when it wraps. */
cubert_status_t cubert__memory_effective_size(uint64_t size, uint64_t align, uint64_t *out);
/* Saturating add. */
static inline uint64_t cubert__memory_sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
/* Grow an array of `elem` bytes to hold at least `need` elements (doubling,
 * at least `min_cap`). *cap updated on success; RESOURCE_EXHAUSTED/OVERFLOW
 * leave it untouched. */
cubert_status_t cubert__memory_array_reserve(cubert_allocator_t allocator, void **array,
                                             uint32_t *cap, uint32_t need, size_t elem,
                                             uint32_t min_cap);
/* Free an array allocated by cubert__memory_array_reserve. */
void cubert__memory_array_free(cubert_allocator_t allocator, void **array, uint32_t *cap,
                               size_t elem);
/* The pool drops its reference on an owner id (ignores a failure: the id is
 * then already not owned). */
void cubert__memory_owner_drop(cubert_memory_env_t *env, cubert_memory_id_t *owner);
/* Is the slice owned by `owner` reusable (every user reference gone)? */
static inline bool cubert__memory_owner_is_free(const cubert_memory_env_t *env,
                                                cubert_memory_id_t owner) {
  /* unreachable: the null owner (callers ask for used slices, which always have one) */
  return cubert__memory_id_is_null(owner) || cubert__memory_id_is_free(env->table, owner);
}
/* Deallocate a storage allocation and remember to flush. */
void cubert__memory_storage_dealloc(cubert_memory_env_t *env, uint64_t id);
/* NOT_FOUND with a reason "<prefix><n><suffix>". */
cubert_status_t cubert__memory_not_found(cubert_error_t *out_error, const char *prefix,
                                         uint64_t n, const char *suffix);
/* Decimal digits of v into buf (at least 21 bytes); returns the length. */
size_t cubert__memory_format_u64(uint64_t v, char *buf);

/* ---- compiled-out pools (cubert/config.h) ------------------------------ */

/* MEMORY_IF_PAGED_POOLS(code): code when the sliced and exclusive pools are
 * compiled in (CUBERT_CONFIG_PAGED_POOLS), nothing otherwise: the manager's
 * dispatch to them vanishes where it stands (the configuration refuses their
 * entries first, so no such pool exists). memory_sliced.c and
 * memory_exclusive.c are then not built; nothing stands in for them. */
#if CUBERT_CONFIG_PAGED_POOLS
#define MEMORY_IF_PAGED_POOLS(...) __VA_ARGS__
#else
#define MEMORY_IF_PAGED_POOLS(...)
#endif

/* MEMORY_IF_PERSISTENT(code): code when the persistent pool is compiled in
 * (CUBERT_CONFIG_PERSISTENT_MEMORY); MEMORY_PERSISTENT_OFF(code): code when
 * it is not (a manager made Persistent then refuses to allocate). */
#if CUBERT_CONFIG_PERSISTENT_MEMORY
#define MEMORY_IF_PERSISTENT(...) __VA_ARGS__
#define MEMORY_PERSISTENT_OFF(...)
#else
#define MEMORY_IF_PERSISTENT(...)
#define MEMORY_PERSISTENT_OFF(...) __VA_ARGS__
#endif

/* ---- sliced pool (memory_sliced.c) --------------------------------------- */

#define CUBERT_SLICED_BINS 252u
#define CUBERT_SLICE_VACANT 0u
#define CUBERT_SLICE_FREE 1u
#define CUBERT_SLICE_USED 2u

/* A slice of a page. Used slices sit on the pool's clock list (oldest
 * first), free slices in a size bin; vacant nodes on the node free list. */
typedef struct cubert_sliced_node_t {
  uint64_t offset;  /* in the page */
  uint64_t size;    /* used: requested size; free: usable length */
  uint64_t padding; /* used: alignment padding; free: 0 */
  uint64_t cursor;
  cubert_memory_id_t owner; /* used: the owner; free: null */
  uint32_t page;            /* page slot */
  uint32_t prev, next;      /* address order within the page */
  uint32_t link_prev, link_next; /* clock list / bin list / node free list */
  uint8_t state;
  uint8_t bin;
} cubert_sliced_node_t;

typedef struct cubert_sliced_page_t {
  cubert_storage_handle_t storage; /* whole page */
  uint32_t first;                  /* node at offset 0; NIL: vacant slot */
  uint32_t next_vacant;
} cubert_sliced_page_t;

typedef struct cubert_sliced_pool_t {
  cubert_memory_env_t *env;
  uint8_t position;
  uint64_t alignment;
  uint64_t page_size;
  uint64_t max_slice_size;
  uint64_t max_alloc_size;
  uint32_t max_pages; /* UINT32_MAX when uncapped */
  bool capped;
  bool merge; /* merge neighbouring free slices when detected (tests turn it off) */
  uint32_t poll_per_reserve;
  uint32_t poll_newest; /* the manager's options.poll_newest (set after initialize) */

  cubert_sliced_node_t *nodes;
  uint32_t node_cap, node_count, node_free;
  cubert_sliced_page_t *pages;
  uint32_t page_cap, page_count, page_vacant;
  uint32_t pages_live, pages_peak;

  uint64_t scan_credit; /* polls earned for full scans (see memory_sliced.c) */
  uint32_t hand;       /* oldest used slice; NIL when none */
  uint32_t scan;       /* where the next scan resumes; NIL: at the hand */
  uint32_t used_count; /* slices on the clock list */
  uint32_t bins[CUBERT_SLICED_BINS];
  uint64_t bitmap[4];

  uint64_t number_allocs, bytes_in_use, bytes_padding;
  uint64_t largest_alloc;
} cubert_sliced_pool_t;

/* Validate and set up (no allocation). page_size 0: CONFIG_ZERO_SIZE. */
cubert_status_t cubert__sliced_pool_initialize(cubert_sliced_pool_t *pool, cubert_memory_env_t *env,
                                               uint8_t position, const cubert_memory_pool_options_t *opt,
                                               uint64_t alignment, uint32_t poll_per_reserve,
                                               cubert_error_t *out_error);
/* Release every page (dropping every owner) and the bookkeeping. */
void cubert__sliced_pool_deinitialize(cubert_sliced_pool_t *pool);
bool cubert__sliced_pool_accept(const cubert_sliced_pool_t *pool, uint64_t size);
/* Reuse free space for `owner` (a new id already owned by the pool). OK with
 * *out_found false when nothing fits. RESOURCE_EXHAUSTED, OVERFLOW. */
cubert_status_t cubert__sliced_pool_try_reserve(cubert_sliced_pool_t *pool, uint64_t size,
                                                cubert_memory_id_t owner, bool *out_found,
                                                cubert_error_t *out_error);
/* A new page, carved for `owner`. POOL_CAPACITY_EXCEEDED, storage errors,
 * RESOURCE_EXHAUSTED, OVERFLOW. */
cubert_status_t cubert__sliced_pool_alloc(cubert_sliced_pool_t *pool, uint64_t size,
                                          cubert_memory_id_t owner, cubert_error_t *out_error);
cubert_status_t cubert__sliced_pool_find(cubert_sliced_pool_t *pool, cubert_memory_location_t loc,
                                         cubert_memory_id_t id, cubert_memory_slice_view_t *out,
                                         cubert_error_t *out_error);
/* Explicit: coalesce and release wholly free pages. Periodic: nothing. */
void cubert__sliced_pool_cleanup(cubert_sliced_pool_t *pool, bool explicit_);
/* Detect every released slice (and merge). */
void cubert__sliced_pool_poll_all(cubert_sliced_pool_t *pool);
void cubert__sliced_pool_report(cubert_sliced_pool_t *pool, cubert_memory_pool_report_t *out);
/* Free the bookkeeping when the pool holds no page. */
void cubert__sliced_pool_trim(cubert_sliced_pool_t *pool);
/* Test hooks: merge each page's runs of free
 * slices; list a page's slices in address order. */
void cubert__sliced_pool_coalesce(cubert_sliced_pool_t *pool);
typedef struct cubert_sliced_block_t {
  uint64_t offset;
  uint64_t size; /* effective size (size + padding) */
  bool is_free;
} cubert_sliced_block_t;
uint32_t cubert__sliced_pool_page_blocks(cubert_sliced_pool_t *pool, uint32_t page,
                                         cubert_sliced_block_t *out, uint32_t capacity);

/* ---- whole-allocation slots (memory_slots.c) ------------------------------ */

/* The exclusive, persistent and direct pools hold one storage allocation per
 * slot and one reservation per allocation: the exclusive pool's page, the
 * persistent and direct pools' exact-size slice. */
typedef struct cubert_memory_slot_t {
  cubert_storage_handle_t storage; /* id, 0, bytes allocated */
  uint64_t size, padding, cursor;  /* used: the reservation; free: 0 */
  cubert_memory_id_t owner;        /* used: the owner; free: null */
  uint32_t aux; /* exclusive: free_count; persistent: next slot of the same size */
  uint8_t state; /* CUBERT_SLICE_* */
} cubert_memory_slot_t;

typedef struct cubert_memory_slots_t {
  cubert_memory_env_t *env;
  cubert_memory_slot_t *items;
  uint32_t cap, count;    /* slots, vacant ones included */
  uint32_t max_count;     /* more slots: POOL_CAPACITY_EXCEEDED */
  uint32_t live, peak;    /* allocations held */
  uint64_t bytes_reserved;
  uint64_t largest_alloc;
  uint8_t position; /* the pool's position in locations */
  bool by_page;     /* location: page = slot (exclusive) or slice = slot */
} cubert_memory_slots_t;

void cubert__memory_slots_initialize(cubert_memory_slots_t *slots, cubert_memory_env_t *env,
                                     uint8_t position, bool by_page, uint32_t max_count);
/* Release every allocation (dropping every owner) and the slot array. */
void cubert__memory_slots_deinitialize(cubert_memory_slots_t *slots);
/* A used slot whose owner is released becomes free. */
void cubert__memory_slot_set_free(cubert_memory_env_t *env, cubert_memory_slot_t *x);
/* Is the slot free? (Inline: the pools' scans call it for every slot.) */
static inline bool cubert__memory_slot_is_free(cubert_memory_env_t *env, cubert_memory_slot_t *x) {
  if (x->state == CUBERT_SLICE_FREE) return true;
  if (x->state != CUBERT_SLICE_USED || !cubert__memory_owner_is_free(env, x->owner)) return false;
  cubert__memory_slot_set_free(env, x);
  return true;
}
/* Reuse the free slot s for `owner` (size, padding). INVALID_HANDLE. */
cubert_status_t cubert__memory_slots_occupy(cubert_memory_slots_t *slots, uint32_t s, uint64_t size,
                                            uint64_t padding, cubert_memory_id_t owner,
                                            cubert_error_t *out_error);
/* The first vacant slot; count when there is none. */
uint32_t cubert__memory_slots_vacant(const cubert_memory_slots_t *slots);
/* Room for one slot past count. POOL_CAPACITY_EXCEEDED (max_count),
 * RESOURCE_EXHAUSTED, OVERFLOW; nothing changes on failure. */
cubert_status_t cubert__memory_slots_room(cubert_memory_slots_t *slots);
/* A new storage allocation of `bytes` in slot s (vacant, or count with room
 * made), used by `owner`. Storage errors, INVALID_HANDLE; nothing changes on
 * failure. */
cubert_status_t cubert__memory_slots_allocate(cubert_memory_slots_t *slots, uint32_t s,
                                              uint64_t bytes, uint64_t size, uint64_t padding,
                                              cubert_memory_id_t owner, cubert_error_t *out_error);
/* The slice view of a location (NOT_FOUND with CubeCL's texts). */
cubert_status_t cubert__memory_slots_find(cubert_memory_slots_t *slots,
                                          cubert_memory_location_t loc, cubert_memory_id_t id,
                                          cubert_memory_slice_view_t *out,
                                          cubert_error_t *out_error);
/* Deallocate slot s's storage; the slot becomes vacant. */
void cubert__memory_slots_release(cubert_memory_slots_t *slots, uint32_t s);
/* Forget the vacant slots at the end. */
void cubert__memory_slots_trim_tail(cubert_memory_slots_t *slots);
/* Release every free slot, then trim the tail; returns how many. */
uint32_t cubert__memory_slots_release_free(cubert_memory_slots_t *slots);
/* Usage, pages, peak, largest free/alloc; max_pool_size and reclaim_at NONE. */
void cubert__memory_slots_report(cubert_memory_slots_t *slots, cubert_memory_pool_kind_t kind,
                                 cubert_memory_pool_report_t *out);
/* Free the slot array when no allocation is held. */
void cubert__memory_slots_trim(cubert_memory_slots_t *slots);

/* ---- exclusive pool (memory_exclusive.c) --------------------------------- */

typedef struct cubert_exclusive_pool_t {
  cubert_memory_slots_t pages; /* one reservation per page; aux: free_count */
  uint64_t alignment;
  uint64_t max_alloc_size;
  uint64_t dealloc_period; /* CUBERT_MEMORY_NONE: never periodic */
  uint64_t avg_int;        /* running average, integer part */
  uint32_t avg_frac;       /* fraction, units of 2^-32 */
  uint64_t last_check;
} cubert_exclusive_pool_t;

cubert_status_t cubert__exclusive_pool_initialize(cubert_exclusive_pool_t *pool,
                                                  cubert_memory_env_t *env, uint8_t position,
                                                  const cubert_memory_pool_options_t *opt,
                                                  uint64_t alignment, cubert_error_t *out_error);
void cubert__exclusive_pool_deinitialize(cubert_exclusive_pool_t *pool);
bool cubert__exclusive_pool_accept(const cubert_exclusive_pool_t *pool, uint64_t size);
cubert_status_t cubert__exclusive_pool_try_reserve(cubert_exclusive_pool_t *pool, uint64_t size,
                                                   cubert_memory_id_t owner, bool *out_found,
                                                   cubert_error_t *out_error);
cubert_status_t cubert__exclusive_pool_alloc(cubert_exclusive_pool_t *pool, uint64_t size,
                                             cubert_memory_id_t owner, cubert_error_t *out_error);
cubert_status_t cubert__exclusive_pool_find(cubert_exclusive_pool_t *pool,
                                            cubert_memory_location_t loc, cubert_memory_id_t id,
                                            cubert_memory_slice_view_t *out,
                                            cubert_error_t *out_error);
void cubert__exclusive_pool_cleanup(cubert_exclusive_pool_t *pool, uint64_t alloc_nr,
                                    bool explicit_);
void cubert__exclusive_pool_report(cubert_exclusive_pool_t *pool, cubert_memory_pool_report_t *out);
void cubert__exclusive_pool_trim(cubert_exclusive_pool_t *pool);
/* The running average's integer part (tests). */
uint64_t cubert__exclusive_pool_average(const cubert_exclusive_pool_t *pool);

/* ---- exact-size slices: persistent and direct pools ---------------------- */

typedef struct cubert_persistent_bucket_t {
  uint64_t key; /* effective size; 0 with head NIL = empty cell */
  uint32_t head, tail;
} cubert_persistent_bucket_t;

/* memory_persistent.c */
typedef struct cubert_persistent_pool_t {
  cubert_memory_slots_t slices; /* aux: next slice of the same size */
  uint64_t alignment;
  uint64_t max_alloc_size; /* device max_page_size (reported only) */
  cubert_persistent_bucket_t *buckets; /* open addressing, power-of-two size */
  uint32_t bucket_cap, bucket_used;
} cubert_persistent_pool_t;

void cubert__persistent_pool_initialize(cubert_persistent_pool_t *pool, cubert_memory_env_t *env,
                                        uint64_t alignment, uint64_t max_alloc_size);
void cubert__persistent_pool_deinitialize(cubert_persistent_pool_t *pool);
cubert_status_t cubert__persistent_pool_try_reserve(cubert_persistent_pool_t *pool, uint64_t size,
                                                    cubert_memory_id_t owner, bool *out_found,
                                                    cubert_error_t *out_error);
cubert_status_t cubert__persistent_pool_alloc(cubert_persistent_pool_t *pool, uint64_t size,
                                              cubert_memory_id_t owner, cubert_error_t *out_error);
bool cubert__persistent_pool_has_size(const cubert_persistent_pool_t *pool, uint64_t size);
cubert_status_t cubert__persistent_pool_find(cubert_persistent_pool_t *pool,
                                             cubert_memory_location_t loc, cubert_memory_id_t id,
                                             cubert_memory_slice_view_t *out,
                                             cubert_error_t *out_error);
void cubert__persistent_pool_cleanup(cubert_persistent_pool_t *pool, bool explicit_);
void cubert__persistent_pool_report(cubert_persistent_pool_t *pool,
                                    cubert_memory_pool_report_t *out);
void cubert__persistent_pool_trim(cubert_persistent_pool_t *pool);

/* memory_direct.c */
typedef struct cubert_direct_pool_t {
  cubert_memory_slots_t slices;
  uint64_t alignment;
  uint64_t reclaim_at; /* CUBERT_MEMORY_NONE: no ceiling */
} cubert_direct_pool_t;

void cubert__direct_pool_initialize(cubert_direct_pool_t *pool, cubert_memory_env_t *env,
                                    uint8_t position, const cubert_memory_pool_options_t *opt,
                                    uint64_t alignment);
void cubert__direct_pool_deinitialize(cubert_direct_pool_t *pool);
cubert_status_t cubert__direct_pool_try_reserve(cubert_direct_pool_t *pool, uint64_t size,
                                                cubert_memory_id_t owner, bool *out_found,
                                                cubert_error_t *out_error);
cubert_status_t cubert__direct_pool_alloc(cubert_direct_pool_t *pool, uint64_t size,
                                          cubert_memory_id_t owner, cubert_error_t *out_error);
cubert_status_t cubert__direct_pool_find(cubert_direct_pool_t *pool, cubert_memory_location_t loc,
                                         cubert_memory_id_t id, cubert_memory_slice_view_t *out,
                                         cubert_error_t *out_error);
void cubert__direct_pool_cleanup(cubert_direct_pool_t *pool, bool explicit_);
void cubert__direct_pool_report(cubert_direct_pool_t *pool, cubert_memory_pool_report_t *out);
void cubert__direct_pool_trim(cubert_direct_pool_t *pool);

/* ---- configuration helpers (memory_config.c) ----------------------------- */

/* Validate and normalize one explicit-layout entry. */
cubert_status_t cubert__memory_pool_entry_resolve(const cubert_memory_pool_options_t *entry,
                                                  uint64_t alignment, bool exclusive_memory_only,
                                                  cubert_memory_pool_options_t *out,
                                                  cubert_error_t *out_error);
/* 5000 * round_half_away(1 + size / 2^30), with size first rounded to a
 * double as CubeCL's `size as f64` (sizes >= 2^53: 53 significant bits). */
uint64_t cubert__memory_dealloc_period(uint64_t size);

/* ---- manager internals exposed to tests ---------------------------------- */

/* Kinds of the dynamic pools, for tests that reach into one pool. */
typedef struct cubert_memory_pool_t {
  cubert_memory_pool_type_t type;
  bool capacity_exceeded;
  union {
    cubert_sliced_pool_t sliced;
    cubert_exclusive_pool_t exclusive;
    cubert_direct_pool_t direct;
  } u;
} cubert_memory_pool_t;

/* The dynamic pool at `position` (NULL when out of range). */
cubert_memory_pool_t *cubert__memory_manager_pool(cubert_memory_manager_t *manager,
                                                  uint32_t position);
cubert_persistent_pool_t *cubert__memory_manager_persistent(cubert_memory_manager_t *manager);

#endif /* CUBERT_CORE_MEMORY_INTERNAL_H */
