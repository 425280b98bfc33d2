/* SPDX-License-Identifier: MIT */
/*
 * core/memory/handle.c: the handle table: managed memory ids, their two reference
 * counts and pool ownership (CubeCL's ManagedMemoryHandle / Handle / Binding;
 * docs/cubecl-mapping.md, "Handles and bindings"), lock-free, with 32-bit atomics only. The handle and
 * binding descriptors over these ids are in handle_binding.c.
 *
 * Layout. Slots live in chunks of 256, allocated on demand and never moved
 * or freed before the table is destroyed; the chunk pointer array (one entry
 * per possible chunk) is allocated at create. A lookup is: check the tag and
 * the index, load one chunk pointer, index into the chunk. No lock anywhere.
 *
 * Per slot (all 32-bit atomics except the location):
 *   state       bits 0..29 descriptor count (handles + bindings), bit 30 owned
 *   handles     user handles          (guard + can_mut)
 *   bindings    user bindings         (guard: a surplus binding release is
 *                                      refused instead of eating a handle's
 *                                      reference)
 *   generation  odd while the id is alive; +1 when the descriptor count
 *               reaches 0 (the id dies), +1 when the slot is reused
 *   pins        bits 0..29 calls in flight on the slot, bit 30 DYING (state
 *               reached exactly 0: count 0 and not owned), bit 31 FREE (the
 *               slot is in the free set)
 * Invariant: descriptor count >= handles + bindings at every instant (a
 * retain raises the descriptor count first, a release lowers the sub-count
 * first), so with both sub-counts guarded no count ever goes below zero.
 *
 * Why pins. A retain or release reads the generation and then CASes the
 * count. Without more, the id could die, its slot be recycled and re-acquired
 * between those two steps, and the CAS would hit the new occupant (a release
 * could even kill it). So every call that touches a slot first pins it
 * (refused while the slot is FREE), validates the generation, works, and
 * unpins. A slot whose state reached 0 is marked DYING; it goes back to the
 * free set only when its pin count is 0, by exactly one thread: the one whose
 * CAS turns pins from DYING|1 (its own pin) into FREE. A pinned slot therefore
 * cannot be recycled, and a call that pinned a later occupant sees that
 * occupant's generation (acquire writes the generation before it clears FREE
 * with a release store). The lock-free queries (is_alive, counts) do not pin;
 * they read the generation before and after the counts instead.
 *
 * Free set. Each chunk keeps a 256-bit free bitmap (a set bit: the slot is
 * free). A release sets the slot's bit (one fetch_or); acquire claims one
 * set bit with the CAS that clears it; there is no other shared counter on
 * these paths (cubert__handle_table_live counts the bitmaps). This is ABA-free
 * by construction: a bit is claimed by the one CAS that clears it and there
 * is no "next" link that could go stale (a Treiber stack with a 32-bit head
 * would have only 8 tag bits left next to a 24-bit index, which wraps after
 * 256 pushes). Acquire searches next-fit from a cursor, skipping full chunks
 * by their bitmap (one cache line), so a released slot is reused late (stale
 * ids stay detectable longer). Growth: when the table is full, and once
 * per sweep of the cursor over the table (when the search wraps around),
 * the live slots are counted from the bitmaps and chunks are added until
 * less than 7/8 of the capacity is live, which keeps searches short.
 *
 * Lanes (issue 27: threads that do not meet). An acquire names a lane (a
 * hint: the memory manager of a stream slot passes the slot's index; the
 * plain acquires use lane 0); each lane (CUBERT_HANDLE_TABLE_LANES, fewer in
 * a table of fewer chunks) has its own cursor on its own cache line, and a
 * lane takes its ids from a chunk no other lane is in when it can. A chunk
 * records the lane whose cursor is in it (`lane`, next to its bitmap: a
 * hint, written only when a lane moves to another chunk); the search skips
 * chunks held by another lane (not the lane's own home, even when it had to
 * share it), and when those are the only ones with room and the table has
 * at most as many chunks as lanes it grows one for the lane (so at most
 * lanes + 1 chunks are added for lanes, on top of the 7/8 rule); otherwise
 * (a larger table, a failed growth) the lane shares a chunk, as before
 * lanes. A lane whose sweep reaches the end of its chunk while every other
 * chunk is held comes back to its own: its reuse distance is then its
 * chunk's free slots (about 250 with few ids live), as a single cursor's
 * was in a one-chunk table. So threads on distinct lanes write distinct
 * bitmap and slot cache lines and no shared cursor: with one chunk and one
 * cursor for all, two threads made a reserve + release up to 8x dearer
 * (each claim and release a contended CAS on the same bitmap line). One
 * lane alone behaves as before (the same searches, growth and reuse).
 *
 * Growth: any thread may allocate chunk n; it publishes it with a CAS on the
 * NULL pointer, and the loser frees its chunk. The published chunk count is
 * advanced (CAS) by whoever sees the chunk, so chunks are contiguous.
 */
#include "base/internal.h"
#include "base/atomic.h"
#include "memory/handle_internal.h"
#include "memory/handle_table.h"

#define CHUNK_SHIFT 8u
#define CHUNK_SLOTS 256u
#define CHUNK_WORDS (CHUNK_SLOTS / 32u)
#define ID_INDEX_MASK 0x00FFFFFFu
#define ID_TAG_SHIFT 24u

#define STATE_COUNT CUBERT_HANDLE_MAX_COUNT
#define STATE_OWNED 0x40000000u

#define PIN_COUNT 0x3FFFFFFFu
#define PIN_DYING 0x40000000u
#define PIN_FREE 0x80000000u

typedef struct slot_t {
  cubert_atomic_u32_t state;
  cubert_atomic_u32_t handles;
  cubert_atomic_u32_t bindings;
  cubert_atomic_u32_t generation;
  cubert_atomic_u32_t pins;
  cubert_memory_location_t location; /* server thread only */
} slot_t;

typedef struct chunk_t {
  cubert_atomic_u32_t free_bits[CHUNK_WORDS];
  cubert_atomic_u32_t lane; /* 1 + the lane whose cursor is here; 0: none (a hint) */
  slot_t slots[CHUNK_SLOTS];
} chunk_t;

/* What lanes and chunks keep apart: CUBERT_FALSE_SHARING_BYTES (128, a
 * pair of 64-byte lines, core/base/internal.h). With 64, lanes 2k and 2k+1
 * (the stream slots of two threads) shared a prefetched line pair, and each
 * writes its cursor at every acquire. "Line" below means this span. */
#define CACHE_LINE CUBERT_FALSE_SHARING_BYTES
#define LANES CUBERT_HANDLE_TABLE_LANES

/* A lane's cursor. Lane i is lanes[i * LANE_SPREAD]: alone on its line. */
typedef struct lane_t {
  cubert_atomic_u32_t cursor; /* next-fit hint: slot index to try first */
  cubert_atomic_u32_t home;   /* 1 + the chunk the lane marked as its own; 0: none */
} lane_t;

#define LANE_SPREAD (CACHE_LINE / sizeof(lane_t))
typedef char lanes_lines_apart_[LANE_SPREAD * sizeof(lane_t) == CACHE_LINE ? 1 : -1];

/* The header is read by every call and changes only when the table grows
 * (chunk_count). Its lanes follow it in the same block, from the next cache
 * line on (the block is allocated on a line boundary), one line each, so no
 * cursor shares a line with the header or with another lane. A table of
 * fewer than LANES chunks has fewer lanes (the next power of two of its
 * chunk count); a table of one chunk (an embedded device's 16 slots) has
 * one lane, right after the header, and nothing padded or aligned. */
struct cubert_handle_table_t {
  cubert_allocator_t allocator;
  uint32_t max_slots;
  uint32_t max_chunks;
  uint32_t tag;
  uint32_t lane_mask;              /* lanes - 1 (a power of two) */
  cubert_atomic_u32_t chunk_count; /* chunks [0, chunk_count) are published */
  void *volatile *chunks;          /* max_chunks pointers to chunk_t (NULL until grown) */
  lane_t *lanes;                   /* lane_mask + 1 lanes, LANE_SPREAD apart, in this block */
};

#define HEADER_LINES \
  ((sizeof(struct cubert_handle_table_t) + (CACHE_LINE - 1u)) / CACHE_LINE * CACHE_LINE)

/* Where the lanes start in the table's block, the block's size and alignment. */
static size_t table_lanes_offset(uint32_t lanes) {
  return lanes > 1u ? HEADER_LINES : sizeof(struct cubert_handle_table_t);
}
static size_t table_bytes(uint32_t lanes) {
  return table_lanes_offset(lanes) + (lanes > 1u ? (size_t)lanes * CACHE_LINE : sizeof(lane_t));
}
static size_t table_align(uint32_t lanes) { return lanes > 1u ? CACHE_LINE : 0; }

static lane_t *lane_at(const cubert_handle_table_t *t, uint32_t lane) {
  return &t->lanes[lane * LANE_SPREAD];
}

/* Lanes of a table of max_chunks chunks: LANES, or the next power of two of
 * a smaller chunk count (more lanes than chunks would only share them). */
static uint32_t table_lanes(uint32_t max_chunks) {
  uint32_t lanes = 1;
  while (lanes < LANES && lanes < max_chunks) lanes <<= 1;
  return lanes;
}

typedef struct slot_ref_t {
  chunk_t *chunk;
  slot_t *slot;
  uint32_t local; /* index in the chunk */
} slot_ref_t;

#define CHUNK_ALIGN CACHE_LINE

/* ---- small helpers ------------------------------------------------------- */

static uint32_t lowest_bit_index(uint32_t bits) {
  static const uint8_t k_debruijn[32] = {0,  1,  28, 2,  29, 14, 24, 3,  30, 22, 20,
                                         15, 25, 17, 4,  8,  31, 27, 13, 23, 21, 19,
                                         16, 7,  26, 12, 18, 6,  11, 5,  10, 9};
  uint32_t low = bits & (0u - bits);
  return k_debruijn[(uint32_t)(low * 0x077CB531u) >> 27];
}

static chunk_t *chunk_at(const cubert_handle_table_t *t, uint32_t c) {
  return (chunk_t *)cubert__atomic_load_ptr(&t->chunks[c]);
}

/* Slots of chunk n that exist: 256, or fewer in the last chunk of a table
 * whose capacity is not a multiple of 256. Only those are allocated (a
 * 16-entry table takes 16 slots, not 256): no index reaches past them
 * (lookups stop at max_slots, the bitmap holds only them). */
static uint32_t chunk_valid(const cubert_handle_table_t *t, uint32_t n) {
  uint32_t valid = t->max_slots - (n << CHUNK_SHIFT);
  return valid > CHUNK_SLOTS ? CHUNK_SLOTS : valid;
}

/* With lanes, rounded up to whole cache lines: the allocator puts nothing
 * else on the line of a chunk's last slots (another thread's data there
 * would meet the lane that writes them). */
static size_t chunk_bytes(const cubert_handle_table_t *t, uint32_t n) {
  size_t bytes = offsetof(chunk_t, slots) + (size_t)chunk_valid(t, n) * sizeof(slot_t);
  return t->lane_mask ? (bytes + (CHUNK_ALIGN - 1u)) / CHUNK_ALIGN * CHUNK_ALIGN : bytes;
}

/* Decode an id to its slot. False for the null id, a foreign tag, an index
 * beyond max_slots, an even generation (never alive) or a chunk never grown.
 * Touches nothing but the table header and one chunk pointer. */
static bool slot_lookup(const cubert_handle_table_t *t, cubert_memory_id_t id, slot_ref_t *out) {
  uint32_t low = id.index & ID_INDEX_MASK, s;
  chunk_t *chunk;
  if ((id.index >> ID_TAG_SHIFT) != t->tag) return false;
  if (low == 0 || low > t->max_slots) return false;
  if ((id.generation & 1u) == 0) return false;
  s = low - 1u;
  chunk = chunk_at(t, s >> CHUNK_SHIFT);
  if (!chunk) return false;
  out->chunk = chunk;
  out->local = s & (CHUNK_SLOTS - 1u);
  out->slot = &chunk->slots[out->local];
  return true;
}

/* Pin: refused while the slot is in the free set. */
static bool slot_pin(slot_t *s) {
  uint32_t old = cubert__atomic_load_u32(&s->pins);
  for (;;) {
    if (old & PIN_FREE) return false;
    if (cubert__atomic_cas_u32(&s->pins, &old, old + 1u)) return true;
  }
}

/* Back to the free set (the caller won the DYING|1 -> FREE transition): one
 * fetch_or on the chunk's bitmap, nothing else (the table keeps no live
 * counter: cubert__handle_table_live counts the bitmaps). */
static void slot_recycle(const slot_ref_t *r) {
  (void)cubert__atomic_fetch_or_u32(&r->chunk->free_bits[r->local >> 5], 1u << (r->local & 31u));
}

/* Unpin; the last pin of a DYING slot frees it. */
static void slot_unpin(const slot_ref_t *r) {
  uint32_t old = cubert__atomic_load_u32(&r->slot->pins), desired;
  for (;;) {
    desired = old == (PIN_DYING | 1u) ? PIN_FREE : old - 1u;
    if (cubert__atomic_cas_u32(&r->slot->pins, &old, desired)) break;
  }
  if (desired == PIN_FREE) slot_recycle(r);
}

/* +1 descriptor count; refuses 0 -> 1 (no resurrection) and saturates. */
static cubert_status_t state_retain(slot_t *s) {
  uint32_t v = cubert__atomic_load_u32(&s->state);
  do {
    uint32_t n = v & STATE_COUNT;
    if (n == 0) return CUBERT_STATUS_INVALID_HANDLE;
    if (n >= CUBERT_HANDLE_MAX_COUNT) return CUBERT_STATUS_OVERFLOW;
  } while (!cubert__atomic_cas_u32(&s->state, &v, v + 1u));
  return CUBERT_STATUS_OK;
}

/* -1 on a sub-count; refuses 0 (a double release). */
static bool counter_take_one(cubert_atomic_u32_t *c) {
  uint32_t v = cubert__atomic_load_u32(c);
  do {
    if (v == 0) return false;
  } while (!cubert__atomic_cas_u32(c, &v, v - 1u));
  return true;
}

/* The caller lowered the state word from `old` by one descriptor reference.
 * Count 0: the id dies (its generation advances). True when the state is now
 * exactly 0: the slot is dying and the caller (who holds a pin) must unpin
 * with slot_unpin_dying. */
static bool state_lowered(slot_t *s, uint32_t old, uint32_t id_generation) {
  uint32_t now = old - 1u;
  if ((now & STATE_COUNT) == 0) cubert__atomic_store_u32(&s->generation, id_generation + 1u);
  return now == 0;
}

/* Unpin a slot whose state the caller just took to exactly 0: marking it
 * DYING and dropping our pin are one CAS. When our pin was the only one the
 * slot goes straight to FREE (pins 1 -> FREE) and we recycle it; otherwise
 * the last of the other pinners does (slot_unpin). */
static void slot_unpin_dying(const slot_ref_t *r) {
  uint32_t old = cubert__atomic_load_u32(&r->slot->pins), desired;
  for (;;) {
    desired = (old & PIN_COUNT) == 1u ? PIN_FREE : ((old - 1u) | PIN_DYING);
    if (cubert__atomic_cas_u32(&r->slot->pins, &old, desired)) break;
  }
  if (desired == PIN_FREE) slot_recycle(r);
}

/* The owner (who holds no pin) took the state of a slot it owned to exactly
 * 0. No pin was needed to get here: an owned slot cannot die or be recycled
 * by anyone else. Now it is dying: with no pin in flight it goes to FREE at
 * once (0 -> FREE, and we recycle it); otherwise it is marked DYING and the
 * last unpinner frees it. Exactly one thread takes a slot's state to 0 per
 * occupancy (no resurrection), so DYING is set at most once. */
static void slot_free_unpinned(const slot_ref_t *r) {
  uint32_t old = cubert__atomic_load_u32(&r->slot->pins), desired;
  for (;;) {
    desired = (old & PIN_COUNT) == 0 ? PIN_FREE : (old | PIN_DYING);
    if (cubert__atomic_cas_u32(&r->slot->pins, &old, desired)) break;
  }
  if (desired == PIN_FREE) slot_recycle(r);
}

/* ---- table ---------------------------------------------------------------- */

cubert_status_t cubert__handle_table_create(cubert_allocator_t allocator, uint32_t max_slots,
                                            uint8_t tag, cubert_handle_table_t **out_table) {
  cubert_handle_table_t *t = NULL;
  void *mem = NULL;
  uint32_t max_chunks, lanes, i;
  cubert_status_t st;
  if (!out_table || !allocator.fn || max_slots == 0 || max_slots > CUBERT_HANDLE_TABLE_MAX_SLOTS)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  max_chunks = (max_slots + (CHUNK_SLOTS - 1u)) >> CHUNK_SHIFT;
  lanes = table_lanes(max_chunks);
  st = cubert_allocator_malloc(allocator, table_bytes(lanes), table_align(lanes), &mem, NULL);
  if (st != CUBERT_STATUS_OK) return st;
  t = (cubert_handle_table_t *)mem;
  st = cubert_allocator_malloc_array(allocator, max_chunks, sizeof(void *), 0, &mem, NULL);
  if (st != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, t, table_bytes(lanes), table_align(lanes));
    return st;
  }
  t->allocator = allocator;
  t->max_slots = max_slots;
  t->max_chunks = max_chunks;
  t->tag = tag;
  t->chunks = (void *volatile *)mem; /* zero-filled: every chunk NULL */
  cubert__atomic_store_u32(&t->chunk_count, 0);
  t->lane_mask = lanes - 1u;
  t->lanes = (lane_t *)(void *)((unsigned char *)t + table_lanes_offset(lanes));
  for (i = 0; i < lanes; i++) {
    cubert__atomic_store_u32(&lane_at(t, i)->cursor, 0);
    cubert__atomic_store_u32(&lane_at(t, i)->home, 0);
  }
  *out_table = t;
  return CUBERT_STATUS_OK;
}

void cubert__handle_table_destroy(cubert_handle_table_t *table) {
  uint32_t c;
  if (!table) return;
  for (c = 0; c < table->max_chunks; c++) {
    chunk_t *chunk = chunk_at(table, c);
    if (chunk) cubert_allocator_free(table->allocator, chunk, chunk_bytes(table, c), CHUNK_ALIGN);
  }
  cubert_allocator_free(table->allocator, (void *)table->chunks,
                        (size_t)table->max_chunks * sizeof(void *), 0);
  cubert_allocator_free(table->allocator, table, table_bytes(table->lane_mask + 1u),
                        table_align(table->lane_mask + 1u));
}

static uint32_t popcount32(uint32_t v) {
  v = v - ((v >> 1) & 0x55555555u);
  v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
  v = (v + (v >> 4)) & 0x0F0F0F0Fu;
  return (v + (v >> 8) + (v >> 16) + (v >> 24)) & 0x3Fu;
}

/* Slots of chunks [0, n) not in the free set: their valid slots minus the
 * set bits of their bitmaps (one cache line per chunk). Exact when no call
 * is in flight, a snapshot otherwise. Chunks are contiguous, so a NULL
 * chunk ends the walk. */
static uint32_t table_count_live(const cubert_handle_table_t *t, uint32_t n) {
  uint32_t c, slots, free_slots = 0;
  for (c = 0; c < n; c++) {
    chunk_t *chunk = chunk_at(t, c);
    uint32_t w;
    if (!chunk) break;
    for (w = 0; w < CHUNK_WORDS; w++) free_slots += popcount32(cubert__atomic_load_u32(&chunk->free_bits[w]));
  }
  slots = c >= t->max_chunks ? t->max_slots : c << CHUNK_SHIFT;
  return slots - free_slots;
}

uint32_t cubert__handle_table_live(const cubert_handle_table_t *table) {
  return table ? table_count_live(table, table->max_chunks) : 0;
}

/* ---- acquire: free set, growth -------------------------------------------- */

static void chunk_init(chunk_t *chunk, uint32_t valid) {
  uint32_t i;
  for (i = 0; i < valid; i++) cubert__atomic_store_u32(&chunk->slots[i].pins, PIN_FREE);
  cubert__atomic_store_u32(&chunk->lane, 0);
  for (i = 0; i < CHUNK_WORDS; i++) {
    uint32_t lo = i * 32u, bits;
    if (valid >= lo + 32u) bits = 0xFFFFFFFFu;
    else if (valid <= lo) bits = 0;
    else bits = (1u << (valid - lo)) - 1u;
    cubert__atomic_store_u32(&chunk->free_bits[i], bits);
  }
}

/* Make chunk n exist (allocate it, or find that another thread did). */
static cubert_status_t table_grow(cubert_handle_table_t *t, uint32_t n) {
  void *mem = NULL, *expected = NULL;
  uint32_t expected_n = n;
  cubert_status_t st;
  /* unreachable: in single-threaded tests (chunk n made by another thread) */
  if (!chunk_at(t, n)) {
    st = cubert_allocator_malloc(t->allocator, chunk_bytes(t, n), CHUNK_ALIGN, &mem, NULL);
    if (st != CUBERT_STATUS_OK) return st;
    chunk_init((chunk_t *)mem, chunk_valid(t, n));
    /* unreachable: in single-threaded tests (another thread published chunk n first) */
    if (!cubert__atomic_cas_ptr(&t->chunks[n], &expected, mem))
      cubert_allocator_free(t->allocator, mem, chunk_bytes(t, n), CHUNK_ALIGN);
  }
  (void)cubert__atomic_cas_u32(&t->chunk_count, &expected_n, n + 1u);
  return CUBERT_STATUS_OK;
}

/* Claim one free slot of the chunk (clear its bit with a CAS), preferring
 * slots at or after `start` (next-fit). False when no bit was found set. A
 * bit is claimed by the one CAS that clears it; a failed CAS only makes us
 * look at the word's new value. */
static bool chunk_take(chunk_t *chunk, uint32_t start, uint32_t *out_local) {
  uint32_t w0 = start >> 5, k;
  for (k = 0; k < CHUNK_WORDS; k++) {
    uint32_t w = (w0 + k) & (CHUNK_WORDS - 1u);
    cubert_atomic_u32_t *word = &chunk->free_bits[w];
    uint32_t bits = cubert__atomic_load_u32(word);
    while (bits) {
      uint32_t pick = bits, b;
      if (k == 0 && (start & 31u)) {
        uint32_t above = bits & (0xFFFFFFFFu << (start & 31u));
        if (above) pick = above;
      }
      b = lowest_bit_index(pick);
      if (cubert__atomic_cas_u32(word, &bits, bits & ~(1u << b))) {
        *out_local = w * 32u + b;
        return true;
      }
    }
  }
  return false;
}

/* A claimed free slot becomes a live id: counts 1/1, state `state` (1, or
 * 1|OWNED for acquire_owned), location `loc` (NULL: all 0). The generation,
 * counts and location are written before FREE is cleared (release), so a
 * call that pins the slot from now on sees the new occupant. */
static void slot_activate(cubert_handle_table_t *t, chunk_t *chunk, uint32_t local,
                          uint32_t slot_index, uint32_t state,
                          const cubert_memory_location_t *loc, cubert_memory_id_t *out_id) {
  slot_t *s = &chunk->slots[local];
  uint32_t g = cubert__atomic_load_u32(&s->generation) + 1u; /* even -> odd */
  cubert__atomic_store_u32(&s->generation, g);
  cubert__atomic_store_u32(&s->handles, 1u);
  cubert__atomic_store_u32(&s->bindings, 0);
  cubert__atomic_store_u32(&s->state, state);
  if (loc) s->location = *loc;
  else cubert_memset(&s->location, 0, sizeof s->location);
  cubert__atomic_store_u32(&s->pins, 0);
  out_id->index = (t->tag << ID_TAG_SHIFT) | (slot_index + 1u);
  out_id->generation = g;
}

/* The lane's cursor moved to chunk c (it took a slot there): mark c as the
 * lane's (unless another lane holds it) and unmark the chunk it leaves. A
 * hint only: two threads moving one lane at once may leave a mark behind,
 * which at worst makes another lane skip that chunk until this lane passes
 * through it again. */
static void lane_move(cubert_handle_table_t *t, uint32_t lane, uint32_t c) {
  lane_t *l = lane_at(t, lane);
  uint32_t home = cubert__atomic_load_u32(&l->home), mark = 0;
  chunk_t *chunk;
  if (home == c + 1u) return;
  /* unreachable: in single-threaded tests (another thread moved the lane first) */
  if (!cubert__atomic_cas_u32(&l->home, &home, c + 1u)) return;
  chunk = chunk_at(t, c);
  (void)cubert__atomic_cas_u32(&chunk->lane, &mark, lane + 1u);
  if (home != 0) {
    mark = lane + 1u;
    (void)cubert__atomic_cas_u32(&chunk_at(t, home - 1u)->lane, &mark, 0);
  }
}

/* Chunk c is held by a lane other than `lane`. */
static bool chunk_held_by_other(const chunk_t *chunk, uint32_t lane) {
  uint32_t mark = cubert__atomic_load_u32(&chunk->lane);
  return mark != 0 && mark != lane + 1u;
}

typedef enum take_e { TAKE_FULL, TAKE_SKIPPED, TAKE_OK } take_e;

/* Next-fit search of `lane` over the n published chunks (capacity cap), from
 * the lane's cursor. Unless `share`, chunks held by another lane are skipped
 * (TAKE_SKIPPED: no slot found elsewhere), but for the lane's own home (a
 * lane that had to share a chunk keeps it until its cursor moves on).
 * *out_wrapped: the search went past the last chunk back to the first (the
 * cursor's sweep over the table ended). */
static take_e table_take(cubert_handle_table_t *t, uint32_t lane, uint32_t n, uint32_t cap,
                         bool share, uint32_t state, const cubert_memory_location_t *loc,
                         cubert_memory_id_t *out_id, bool *out_wrapped) {
  cubert_atomic_u32_t *cursor = &lane_at(t, lane)->cursor;
  uint32_t start = cubert__atomic_load_u32(cursor), c0, i;
  uint32_t home = cubert__atomic_load_u32(&lane_at(t, lane)->home);
  bool skipped = false;
  if (start >= cap) {
    start = 0;
    *out_wrapped = true;
  }
  c0 = start >> CHUNK_SHIFT;
  for (i = 0; i < n; i++) {
    uint32_t c = c0 + i, local;
    chunk_t *chunk;
    if (c >= n) {
      c -= n;
      *out_wrapped = true;
    }
    chunk = chunk_at(t, c);
    /* unreachable: chunk NULL (chunks below chunk_count are published before it moves) */
    if (!chunk) continue;
    if (!share && c + 1u != home && chunk_held_by_other(chunk, lane)) {
      skipped = true;
      continue;
    }
    if (chunk_take(chunk, i == 0 ? (start & (CHUNK_SLOTS - 1u)) : 0, &local)) {
      uint32_t slot_index = (c << CHUNK_SHIFT) + local;
      slot_activate(t, chunk, local, slot_index, state, loc, out_id);
      cubert__atomic_store_u32(cursor, slot_index + 1u);
      lane_move(t, lane, c);
      return TAKE_OK;
    }
  }
  return skipped ? TAKE_SKIPPED : TAKE_FULL;
}

/* The common case, first: the lane's cursor is in the lane's own chunk and
 * that chunk has a free slot (what table_take would find at its first step,
 * with nothing else to read or write). */
static bool lane_take_home(cubert_handle_table_t *t, lane_t *l, uint32_t state,
                           const cubert_memory_location_t *loc, cubert_memory_id_t *out_id) {
  uint32_t home = cubert__atomic_load_u32(&l->home), start = cubert__atomic_load_u32(&l->cursor);
  uint32_t local, c;
  chunk_t *chunk;
  if (home == 0 || (start >> CHUNK_SHIFT) != home - 1u) return false;
  c = home - 1u;
  chunk = chunk_at(t, c);
  if (!chunk_take(chunk, start & (CHUNK_SLOTS - 1u), &local)) return false;
  slot_activate(t, chunk, local, (c << CHUNK_SHIFT) + local, state, loc, out_id);
  cubert__atomic_store_u32(&l->cursor, (c << CHUNK_SHIFT) + local + 1u);
  return true;
}

/* Add chunks n, n+1, ... while 7/8 or more of the capacity is live (the
 * live count is taken once, by counting the bitmaps of chunks [0, n)).
 * Best effort: stops at max_chunks or at the first failed allocation. */
static void table_grow_while_crowded(cubert_handle_table_t *t, uint32_t n) {
  uint32_t live = table_count_live(t, n);
  while (n < t->max_chunks) {
    uint32_t cap = n << CHUNK_SHIFT;
    if (live < cap - cap / 8u || table_grow(t, n) != CUBERT_STATUS_OK) return;
    n++;
  }
}

static cubert_status_t table_acquire(cubert_handle_table_t *table, uint32_t lane,
                                     uint32_t state, const cubert_memory_location_t *loc,
                                     cubert_memory_id_t *out_id) {
  bool grow_failed = false, share = false;
  cubert_status_t grow_status = CUBERT_STATUS_OK;
  lane &= table->lane_mask;
  if (lane_take_home(table, lane_at(table, lane), state, loc, out_id)) return CUBERT_STATUS_OK;
  for (;;) {
    uint32_t n = cubert__atomic_load_u32(&table->chunk_count), cap;
    bool wrapped = false;
    take_e took = TAKE_FULL;
    /* unreachable: in single-threaded tests (a chunk published, its count not yet advanced) */
    if (n < table->max_chunks && chunk_at(table, n)) {
      /* Someone published chunk n but has not advanced the count yet. */
      (void)cubert__atomic_cas_u32(&table->chunk_count, &n, n + 1u);
      continue;
    }
    cap = n >= table->max_chunks ? table->max_slots : n << CHUNK_SHIFT;
    if (n > 0) took = table_take(table, lane, n, cap, share, state, loc, out_id, &wrapped);
    if (took == TAKE_OK) {
      /* Growth is checked once per sweep of the cursor over the table (and
       * when it is full, below), not per call: the table keeps no live
       * counter, which would cost two atomic RMWs per acquire + release.
       * From 7/8 of the capacity live on, chunks are added, which keeps
       * searches short and reuse late. Best effort: the id is ours already;
       * a failed growth is retried at the next sweep or when full. */
      if (wrapped && n < table->max_chunks) table_grow_while_crowded(table, n);
      return CUBERT_STATUS_OK;
    }
    if (took == TAKE_SKIPPED) {
      /* Room only in chunks other lanes hold: a chunk of its own for this
       * lane while the table is small (at most lanes + 1 chunks this way),
       * else (or when that growth fails) share one. */
      if (!grow_failed && n < table->max_chunks && n <= table->lane_mask + 1u) {
        grow_status = table_grow(table, n);
        if (grow_status == CUBERT_STATUS_OK) continue;
        grow_failed = true;
      }
      share = true;
      continue;
    }
    /* grow_failed here: a lane's growth failed, and then the table was full */
    if (!grow_failed && n < table->max_chunks) {
      grow_status = table_grow(table, n);
      if (grow_status == CUBERT_STATUS_OK) {
        table_grow_while_crowded(table, n + 1u);
        continue;
      }
      grow_failed = true;
    }
    return grow_failed ? grow_status : CUBERT_STATUS_OUT_OF_RANGE;
  }
}

cubert_status_t cubert__memory_id_acquire(cubert_handle_table_t *table,
                                          cubert_memory_id_t *out_id) {
  return cubert__memory_id_acquire_lane(table, 0, out_id);
}

cubert_status_t cubert__memory_id_acquire_lane(cubert_handle_table_t *table, uint32_t lane,
                                               cubert_memory_id_t *out_id) {
  if (!table || !out_id) return CUBERT_STATUS_INVALID_ARGUMENT;
  return table_acquire(table, lane, 1u, NULL, out_id);
}

/* acquire + set_owned(true) + set_location fused: the slot is activated
 * already owned, with its location, before it leaves the free set, so no
 * other thread ever sees it unowned and no pin is needed. */
cubert_status_t cubert__memory_id_acquire_owned(cubert_handle_table_t *table,
                                                cubert_memory_location_t location,
                                                cubert_memory_id_t *out_id) {
  return cubert__memory_id_acquire_owned_lane(table, 0, location, out_id);
}

cubert_status_t cubert__memory_id_acquire_owned_lane(cubert_handle_table_t *table, uint32_t lane,
                                                     cubert_memory_location_t location,
                                                     cubert_memory_id_t *out_id) {
  if (!table || !out_id) return CUBERT_STATUS_INVALID_ARGUMENT;
  return table_acquire(table, lane, 1u | STATE_OWNED, &location, out_id);
}

/* ---- counts ---------------------------------------------------------------- */

typedef enum count_op_e {
  COUNT_RETAIN_HANDLE,
  COUNT_RELEASE_HANDLE,
  COUNT_RETAIN_BINDING,
  COUNT_RELEASE_BINDING
} count_op_e;

static cubert_status_t id_count_op(cubert_handle_table_t *t, cubert_memory_id_t id,
                                   count_op_e op) {
  slot_ref_t r;
  slot_t *s;
  bool dying = false;
  cubert_status_t st = CUBERT_STATUS_OK;
  if (!t) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (!slot_lookup(t, id, &r) || !slot_pin(r.slot)) return CUBERT_STATUS_INVALID_HANDLE;
  s = r.slot;
  if (cubert__atomic_load_u32(&s->generation) != id.generation) {
    st = CUBERT_STATUS_INVALID_HANDLE;
  } else {
    /* unreachable: another op (the four callers pass their own) */
    switch (op) {
      case COUNT_RETAIN_HANDLE:
        st = state_retain(s);
        if (st == CUBERT_STATUS_OK) (void)cubert__atomic_fetch_add_u32(&s->handles, 1u);
        break;
      case COUNT_RETAIN_BINDING:
        st = state_retain(s);
        if (st == CUBERT_STATUS_OK) (void)cubert__atomic_fetch_add_u32(&s->bindings, 1u);
        break;
      case COUNT_RELEASE_HANDLE:
      case COUNT_RELEASE_BINDING:
        if (!counter_take_one(op == COUNT_RELEASE_HANDLE ? &s->handles : &s->bindings)) {
          st = CUBERT_STATUS_INVALID_HANDLE;
        } else {
          /* The descriptor count includes the reference just taken off the
           * sub-count, so it is >= 1 here. */
          dying = state_lowered(s, cubert__atomic_fetch_sub_u32(&s->state, 1u), id.generation);
        }
        break;
    }
  }
  if (dying) slot_unpin_dying(&r);
  else slot_unpin(&r);
  return st;
}

cubert_status_t cubert__memory_id_retain_handle(cubert_handle_table_t *table,
                                                cubert_memory_id_t id) {
  return id_count_op(table, id, COUNT_RETAIN_HANDLE);
}

cubert_status_t cubert__memory_id_release_handle(cubert_handle_table_t *table,
                                                 cubert_memory_id_t id) {
  return id_count_op(table, id, COUNT_RELEASE_HANDLE);
}

cubert_status_t cubert__memory_id_retain_binding(cubert_handle_table_t *table,
                                                 cubert_memory_id_t id) {
  return id_count_op(table, id, COUNT_RETAIN_BINDING);
}

cubert_status_t cubert__memory_id_release_binding(cubert_handle_table_t *table,
                                                  cubert_memory_id_t id) {
  return id_count_op(table, id, COUNT_RELEASE_BINDING);
}

/* True when the pinned slot still holds the id's occupancy: alive, or dead
 * but not yet back in the free set (generation + 1). */
static bool slot_same_occupant(slot_t *s, cubert_memory_id_t id) {
  uint32_t g = cubert__atomic_load_u32(&s->generation);
  return g == id.generation || g == id.generation + 1u;
}

cubert_status_t cubert__memory_id_set_owned(cubert_handle_table_t *table, cubert_memory_id_t id,
                                            bool owned) {
  slot_ref_t r;
  slot_t *s;
  uint32_t v;
  bool dying = false;
  cubert_status_t st = CUBERT_STATUS_OK;
  if (!table) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (!slot_lookup(table, id, &r) || !slot_pin(r.slot)) return CUBERT_STATUS_INVALID_HANDLE;
  s = r.slot;
  v = cubert__atomic_load_u32(&s->state);
  if (owned) {
    if (cubert__atomic_load_u32(&s->generation) != id.generation) {
      st = CUBERT_STATUS_INVALID_HANDLE;
    } else {
      do {
        /* unreachable: in single-threaded tests (a dead id keeps its generation only while dying) */
        if ((v & STATE_COUNT) == 0 || (v & STATE_OWNED)) {
          st = CUBERT_STATUS_INVALID_HANDLE; /* dead, or already owned */
          break;
        }
      /* unreachable: in single-threaded tests (the state changed under the CAS) */
      } while (!cubert__atomic_cas_u32(&s->state, &v, v | STATE_OWNED));
    }
  } else {
    if (!slot_same_occupant(s, id)) {
      st = CUBERT_STATUS_INVALID_HANDLE;
    } else {
      do {
        if (!(v & STATE_OWNED)) {
          st = CUBERT_STATUS_INVALID_HANDLE;
          break;
        }
      /* unreachable: in single-threaded tests (the state changed under the CAS) */
      } while (!cubert__atomic_cas_u32(&s->state, &v, v & ~STATE_OWNED));
      dying = st == CUBERT_STATUS_OK && (v & ~STATE_OWNED) == 0;
    }
  }
  if (dying) slot_unpin_dying(&r);
  else slot_unpin(&r);
  return st;
}

/* Owner-only disown: no pin (see handle.h for the precondition). The
 * generation check and the CAS that clears OWNED are safe unpinned because
 * the slot, owned by the caller, cannot be recycled under it. Every state
 * value the CAS is based on is bracketed by two generation reads of the
 * id's occupancy (a reuse writes the generation before the state), so a
 * stale id whose slot was freed and reused meanwhile is refused: its own
 * occupancy's state is not owned (its owner gave it up), and a state of the
 * next occupant is followed by a generation it does not match. */
cubert_status_t cubert__memory_id_disown(cubert_handle_table_t *table, cubert_memory_id_t id) {
  slot_ref_t r;
  uint32_t v;
  if (!table) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (!slot_lookup(table, id, &r) || !slot_same_occupant(r.slot, id))
    return CUBERT_STATUS_INVALID_HANDLE;
  v = cubert__atomic_load_u32(&r.slot->state);
  for (;;) {
    /* unreachable: in single-threaded tests (the slot reused since the check above) */
    if (!(v & STATE_OWNED) || !slot_same_occupant(r.slot, id)) return CUBERT_STATUS_INVALID_HANDLE;
    if (cubert__atomic_cas_u32(&r.slot->state, &v, v & ~STATE_OWNED)) break;
  }
  if ((v & ~STATE_OWNED) == 0) slot_free_unpinned(&r);
  return CUBERT_STATUS_OK;
}

/* ---- lock-free queries -------------------------------------------------------- */

/* Counts of an alive id, read between two generation checks so they belong
 * to the id's occupancy (a reuse changes the generation first). */
static bool slot_snapshot(const cubert_handle_table_t *t, cubert_memory_id_t id,
                          uint32_t *out_state, uint32_t *out_handles) {
  slot_ref_t r;
  uint32_t state, handles;
  if (!t || !slot_lookup(t, id, &r)) return false;
  if (cubert__atomic_load_u32(&r.slot->generation) != id.generation) return false;
  state = cubert__atomic_load_u32(&r.slot->state);
  handles = cubert__atomic_load_u32(&r.slot->handles);
  if (cubert__atomic_load_u32(&r.slot->generation) != id.generation) return false;
  if ((state & STATE_COUNT) == 0) return false; /* dying: generation not advanced yet */
  *out_state = state;
  *out_handles = handles;
  return true;
}

bool cubert__memory_id_is_alive(const cubert_handle_table_t *table, cubert_memory_id_t id) {
  uint32_t state, handles;
  return slot_snapshot(table, id, &state, &handles);
}

bool cubert__memory_id_is_free(const cubert_handle_table_t *table, cubert_memory_id_t id) {
  uint32_t state, handles;
  if (!table) return false;
  return !slot_snapshot(table, id, &state, &handles);
}

bool cubert__memory_id_can_mut(const cubert_handle_table_t *table, cubert_memory_id_t id) {
  uint32_t state, handles;
  return slot_snapshot(table, id, &state, &handles) && handles <= 1u;
}

uint32_t cubert__memory_id_handle_count(const cubert_handle_table_t *table,
                                        cubert_memory_id_t id) {
  uint32_t state, handles;
  return slot_snapshot(table, id, &state, &handles) ? handles : 0;
}

uint32_t cubert__memory_id_descriptor_count(const cubert_handle_table_t *table,
                                            cubert_memory_id_t id) {
  uint32_t state, handles;
  return slot_snapshot(table, id, &state, &handles) ? (state & STATE_COUNT) : 0;
}

/* ---- location ----------------------------------------------------------------- */

/* Pin the slot if the id still occupies it and is alive or still owned. */
static bool slot_pin_for_location(const cubert_handle_table_t *t, cubert_memory_id_t id,
                                  slot_ref_t *r) {
  uint32_t state;
  if (!slot_lookup(t, id, r) || !slot_pin(r->slot)) return false;
  state = cubert__atomic_load_u32(&r->slot->state);
  /* unreachable: in single-threaded tests (pinned, then the id died or the slot was reused) */
  if (slot_same_occupant(r->slot, id) && ((state & STATE_COUNT) || (state & STATE_OWNED)))
    return true;
  slot_unpin(r);
  return false;
}

cubert_status_t cubert__memory_id_location(const cubert_handle_table_t *table,
                                           cubert_memory_id_t id,
                                           cubert_memory_location_t *out_location) {
  slot_ref_t r;
  if (!table || !out_location) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (!slot_pin_for_location(table, id, &r)) return CUBERT_STATUS_INVALID_HANDLE;
  *out_location = r.slot->location;
  slot_unpin(&r);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_id_set_location(cubert_handle_table_t *table,
                                               cubert_memory_id_t id,
                                               cubert_memory_location_t location) {
  slot_ref_t r;
  if (!table) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (!slot_pin_for_location(table, id, &r)) return CUBERT_STATUS_INVALID_HANDLE;
  r.slot->location = location;
  slot_unpin(&r);
  return CUBERT_STATUS_OK;
}

/* Owner-only location write: no pin (see handle.h for the precondition).
 * An id that does not pass the unpinned checks (not owned, stale, forged)
 * takes the pinned path, which gives set_location's answer. */
cubert_status_t cubert__memory_id_set_location_owned(cubert_handle_table_t *table,
                                                     cubert_memory_id_t id,
                                                     cubert_memory_location_t location) {
  slot_ref_t r;
  if (!table) return CUBERT_STATUS_INVALID_ARGUMENT;
  /* unreachable: in single-threaded tests (the slot reused between the two occupant checks) */
  if (slot_lookup(table, id, &r) && slot_same_occupant(r.slot, id) &&
      (cubert__atomic_load_u32(&r.slot->state) & STATE_OWNED) &&
      slot_same_occupant(r.slot, id)) { /* the owned state was this occupancy's */
    r.slot->location = location;
    return CUBERT_STATUS_OK;
  }
  return cubert__memory_id_set_location(table, id, location);
}

/* ---- test hooks (core/memory/handle_internal.h) -------------------------------------------- */

cubert_status_t cubert__handle_table_debug_set_counts(cubert_handle_table_t *table,
                                                      cubert_memory_id_t id, uint32_t handles,
                                                      uint32_t bindings) {
  slot_ref_t r;
  uint32_t state, old_handles;
  if (!table || handles > CUBERT_HANDLE_MAX_COUNT ||
      bindings > CUBERT_HANDLE_MAX_COUNT - handles || handles + bindings == 0)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (!slot_snapshot(table, id, &state, &old_handles)) return CUBERT_STATUS_INVALID_HANDLE;
  /* unreachable: slot_snapshot found the slot by this lookup, and chunks are never freed */
  if (!slot_lookup(table, id, &r)) return CUBERT_STATUS_INVALID_HANDLE;
  cubert__atomic_store_u32(&r.slot->state, (state & STATE_OWNED) | (handles + bindings));
  cubert__atomic_store_u32(&r.slot->handles, handles);
  cubert__atomic_store_u32(&r.slot->bindings, bindings);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__handle_table_debug_check(const cubert_handle_table_t *table,
                                                 uint32_t *out_alive, uint32_t *out_dead_owned) {
  uint32_t c, alive = 0, dead_owned = 0;
  if (!table) return CUBERT_STATUS_INVALID_ARGUMENT;
  for (c = 0; c < table->max_chunks; c++) {
    chunk_t *chunk = chunk_at(table, c);
    uint32_t i;
    if (!chunk) {
      /* unreachable: a broken invariant (this debug check exists to catch one) */
      if (c < cubert__atomic_load_u32(&table->chunk_count)) return CUBERT_STATUS_INTERNAL;
      continue;
    }
    /* the slots past the table's capacity are not allocated: no free bit for them */
    for (i = chunk_valid(table, c); i < CHUNK_SLOTS; i++)
      /* unreachable: a broken invariant (this debug check exists to catch one) */
      if ((cubert__atomic_load_u32(&chunk->free_bits[i >> 5]) >> (i & 31u)) & 1u)
        return CUBERT_STATUS_INTERNAL;
    for (i = 0; i < chunk_valid(table, c); i++) {
      slot_t *s = &chunk->slots[i];
      uint32_t pins = cubert__atomic_load_u32(&s->pins);
      uint32_t state = cubert__atomic_load_u32(&s->state);
      uint32_t handles = cubert__atomic_load_u32(&s->handles);
      uint32_t bindings = cubert__atomic_load_u32(&s->bindings);
      uint32_t gen = cubert__atomic_load_u32(&s->generation);
      bool bit = (cubert__atomic_load_u32(&chunk->free_bits[i >> 5]) >> (i & 31u)) & 1u;
      /* unreachable(11): a broken invariant (this debug check exists to catch one) */
      if (pins == PIN_FREE) {
        if (!bit || state != 0 || (gen & 1u)) return CUBERT_STATUS_INTERNAL;
        continue;
      }
      if (bit || pins != 0) return CUBERT_STATUS_INTERNAL;
      if (gen & 1u) {
        uint32_t n = state & STATE_COUNT;
        if (n == 0 || (state & ~(STATE_COUNT | STATE_OWNED)) || handles > n ||
            bindings != n - handles)
          return CUBERT_STATUS_INTERNAL;
        alive++;
      } else {
        if (state != STATE_OWNED || handles != 0 || bindings != 0) return CUBERT_STATUS_INTERNAL;
        dead_owned++;
      }
    }
  }
  /* unreachable: a broken invariant (this debug check exists to catch one) */
  if (alive + dead_owned != cubert__handle_table_live(table)) return CUBERT_STATUS_INTERNAL;
  if (out_alive) *out_alive = alive;
  if (out_dead_owned) *out_dead_owned = dead_owned;
  return CUBERT_STATUS_OK;
}
