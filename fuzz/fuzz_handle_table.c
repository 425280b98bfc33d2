/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_handle_table.c: the handle table (cubert/handle.h) driven by
 * sequences of acquire / retain / release / ownership / location calls and
 * the handle-level wrappers, against a shadow model of every id ever issued
 * (alive, handle and binding counts, pool ownership, location).
 *
 * Input: the table's max_slots and tag, an allocation failure point, then
 * operations (an opcode byte and operands). Ids are picked from the model,
 * or forged from one (another generation, an even generation, another
 * table's tag, an index out of range).
 *
 * Invariants: every status is the documented one for the model's state
 * (INVALID_HANDLE for stale, forged, double-released and foreign ids, which
 * then change nothing); a new id never takes the slot of an id in use, has
 * the table's tag and an odd generation; the counts and the boolean queries
 * match the model; cubert__handle_table_live is the number of ids alive or
 * still owned; after the model's references are all given back the table
 * is empty, and destroying it frees everything. An injected allocation
 * failure may only turn an acquire (which grows the table) into
 * RESOURCE_EXHAUSTED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/handle.h"
#include "memory/handle_table.h"
#include "fuzz.h"
#include "fuzz_alloc.h"

#define FUZZ_CHECK(cond)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "fuzz_handle_table: %s:%d: check failed: %s\n", __FILE__, __LINE__,  \
              #cond);                                                                       \
      abort();                                                                              \
    }                                                                                       \
  } while (0)

#define MAX_OPS 256
#define MAX_IDS 320

typedef struct m_id_t {
  cubert_memory_id_t id;
  int alive, owned;
  uint32_t handles, bindings;
  cubert_memory_location_t loc;
} m_id_t;

typedef struct ctx_t {
  fuzz_alloc_t fa;
  cubert_handle_table_t *table, *other;
  uint8_t tag;
  uint32_t max_slots;
  m_id_t ids[MAX_IDS];
  uint32_t nids;
  fuzz_reader_t *r;
} ctx_t;

static int in_use(const m_id_t *m) { return m->alive || m->owned; }

static uint32_t model_live(const ctx_t *x) {
  uint32_t i, n = 0;
  for (i = 0; i < x->nids; i++) n += (uint32_t)in_use(&x->ids[i]);
  return n;
}

/* The model entry of exactly this id value, or NULL (never issued, forged). */
static m_id_t *lookup(ctx_t *x, cubert_memory_id_t id) {
  uint32_t i;
  for (i = 0; i < x->nids; i++)
    if (x->ids[i].id.index == id.index && x->ids[i].id.generation == id.generation)
      return &x->ids[i];
  return NULL;
}

static int loc_eq(cubert_memory_location_t a, cubert_memory_location_t b) {
  return a.pool == b.pool && a.init == b.init && a.page == b.page && a.slice == b.slice;
}

static cubert_memory_location_t read_loc(fuzz_reader_t *r) {
  cubert_memory_location_t l;
  l.pool = fuzz_u8(r);
  l.init = (uint8_t)(fuzz_u8(r) & 1);
  l.page = (uint16_t)fuzz_uint(r, 2);
  l.slice = (uint32_t)fuzz_uint(r, 2);
  return l;
}

/* An id to act on: a model id, or one forged from it. */
static cubert_memory_id_t pick_id(ctx_t *x) {
  uint8_t b = fuzz_u8(x->r), how = fuzz_u8(x->r);
  cubert_memory_id_t id = {0, 0};
  if (x->nids) id = x->ids[b % x->nids].id;
  switch (how & 7) {
    case 1: id.generation += 2u * (1u + (how >> 3)); break; /* may be a later occupant */
    case 2: id.generation ^= 1u; break;                   /* even: never alive */
    case 3: id.index ^= 0x01000000u; break;               /* another tag */
    case 4: id.index = ((uint32_t)x->tag << 24) | (x->max_slots + 1u + (how >> 3)); break;
    case 5: id.index = 0; id.generation = 0; break;       /* the null id */
    default: break;
  }
  return id;
}

/* Model of one reference-count change; returns the expected status. */
static cubert_status_t model_retain(ctx_t *x, cubert_memory_id_t id, int binding) {
  m_id_t *m = lookup(x, id);
  if (!m || !m->alive) return CUBERT_STATUS_INVALID_HANDLE;
  if (binding) m->bindings++;
  else m->handles++;
  return CUBERT_STATUS_OK;
}

static cubert_status_t model_release(ctx_t *x, cubert_memory_id_t id, int binding) {
  m_id_t *m = lookup(x, id);
  if (!m || !m->alive || (binding ? m->bindings : m->handles) == 0)
    return CUBERT_STATUS_INVALID_HANDLE;
  if (binding) m->bindings--;
  else m->handles--;
  if (m->handles + m->bindings == 0) m->alive = 0;
  return CUBERT_STATUS_OK;
}

static void check_new_id(ctx_t *x, cubert_memory_id_t id, int owned, cubert_memory_location_t loc) {
  uint32_t i, slot = id.index & 0x00FFFFFFu;
  m_id_t *m;
  FUZZ_CHECK((id.index >> 24) == x->tag && slot >= 1 && slot <= x->max_slots);
  FUZZ_CHECK(id.generation & 1u);
  for (i = 0; i < x->nids; i++) /* never the slot of an id in use */
    FUZZ_CHECK(!(in_use(&x->ids[i]) && x->ids[i].id.index == id.index));
  FUZZ_CHECK(x->nids < MAX_IDS);
  m = &x->ids[x->nids++];
  memset(m, 0, sizeof(*m));
  m->id = id;
  m->alive = 1;
  m->handles = 1;
  m->owned = owned;
  m->loc = loc;
}

/* acquire / acquire_owned (on lane 0 or another lane) / handle_create */
static void op_acquire(ctx_t *x, int kind) {
  cubert_memory_location_t loc = read_loc(x->r), zero;
  cubert_memory_id_t id;
  cubert_handle_t h;
  uint64_t failures = x->fa.failures, size = fuzz_uint(x->r, 2);
  cubert_status_t st, want;
  memset(&zero, 0, sizeof zero);
  if (x->nids == MAX_IDS) return;
  want = model_live(x) >= x->max_slots ? CUBERT_STATUS_OUT_OF_RANGE : CUBERT_STATUS_OK;
  /* the lane: 0 (the plain calls) or 1..7 (the _lane calls; a table of up to three chunks has
   * up to four lanes, so lanes alias, share chunks and grow the table for a chunk of their own) */
  if (kind == 0 && (loc.page & 7u) == 0) st = cubert__memory_id_acquire(x->table, &id);
  else if (kind == 0) st = cubert__memory_id_acquire_lane(x->table, loc.page & 7u, &id);
  else if (kind == 1 && (loc.page & 7u) == 0) st = cubert__memory_id_acquire_owned(x->table, loc, &id);
  else if (kind == 1) st = cubert__memory_id_acquire_owned_lane(x->table, loc.page & 7u, loc, &id);
  else {
    st = cubert__handle_create(x->table, 7, 9, 11, size, &h);
    id = h.memory;
  }
  if (st == CUBERT_STATUS_RESOURCE_EXHAUSTED) { /* only when growing failed */
    FUZZ_CHECK(x->fa.failures > failures);
    return;
  }
  FUZZ_CHECK(st == want);
  if (st != CUBERT_STATUS_OK) return;
  if (kind == 2)
    FUZZ_CHECK(h.device == 7 && h.stream == 9 && h.cursor == 11 && h.size == size &&
               h.offset_start == 0 && h.offset_end == 0 && cubert_handle_size_in_used(&h) == size);
  check_new_id(x, id, kind == 1, kind == 1 ? loc : zero);
}

/* Sub-handles of a handle over `id` (handle.h wrappers). */
static void op_handle_level(ctx_t *x, uint8_t which) {
  cubert_memory_id_t id = pick_id(x);
  uint64_t size = fuzz_uint(x->r, 2), os = fuzz_uint(x->r, 2), oe = fuzz_uint(x->r, 2);
  uint8_t huge = fuzz_u8(x->r);
  cubert_handle_t h, out;
  cubert_status_t st, want;
  memset(&h, 0, sizeof h);
  h.memory = id;
  h.size = size;
  h.offset_start = (huge & 1) ? UINT64_MAX - os : os;
  h.offset_end = oe;
  FUZZ_CHECK(cubert_handle_size_in_used(&h) ==
             ((huge & 1) || os + oe > size ? 0 : size - os - oe));
  switch (which % 6) {
    case 0: /* clone */
      want = model_retain(x, id, 0);
      st = cubert__handle_clone(x->table, &h, &out);
      FUZZ_CHECK(st == want && (st != CUBERT_STATUS_OK || memcmp(&out, &h, sizeof h) == 0));
      break;
    case 1: { /* offset: the range is checked before the id */
      uint64_t a = fuzz_uint(x->r, 2), b = fuzz_uint(x->r, 2), s1, e1, t1 = 0;
      int overflow = __builtin_add_overflow(h.offset_start, a, &s1);
      int range;
      overflow |= __builtin_add_overflow(h.offset_end, b, &e1);
      overflow = overflow || __builtin_add_overflow(s1, e1, &t1);
      range = !overflow && t1 > h.size;
      want = overflow ? CUBERT_STATUS_OVERFLOW
             : range  ? CUBERT_STATUS_OUT_OF_RANGE
                      : model_retain(x, id, 0);
      st = cubert__handle_offset(x->table, &h, a, b, &out);
      FUZZ_CHECK(st == want);
      if (st == CUBERT_STATUS_OK)
        FUZZ_CHECK(out.offset_start == h.offset_start + a && out.offset_end == h.offset_end + b &&
                   out.size == h.size && out.memory.index == id.index);
      break;
    }
    case 2: /* binding */
      want = model_retain(x, id, 1);
      st = cubert__handle_binding(x->table, &h, &out);
      FUZZ_CHECK(st == want && (st != CUBERT_STATUS_OK || memcmp(&out, &h, sizeof h) == 0));
      break;
    case 3:
      want = model_retain(x, id, 1);
      FUZZ_CHECK(cubert__binding_clone(x->table, &h, &out) == want);
      break;
    case 4:
      want = model_release(x, id, 0);
      FUZZ_CHECK(cubert__handle_release(x->table, &h) == want);
      break;
    default:
      want = model_release(x, id, 1);
      FUZZ_CHECK(cubert__binding_release(x->table, &h) == want);
      break;
  }
}

static void op_ownership(ctx_t *x, uint8_t which) {
  cubert_memory_id_t id = pick_id(x);
  cubert_memory_location_t loc = read_loc(x->r), got;
  m_id_t *m = lookup(x, id);
  int owner_ok = m && m->owned;           /* drop / location of a dead but owned id */
  int loc_ok = m && (m->alive || m->owned);
  switch (which % 5) {
    case 0: /* take */
      FUZZ_CHECK(cubert__memory_id_set_owned(x->table, id, true) ==
                 (m && m->alive && !m->owned ? CUBERT_STATUS_OK : CUBERT_STATUS_INVALID_HANDLE));
      if (m && m->alive) m->owned = 1;
      break;
    case 1: /* drop (general and owner-only forms) */
    case 2:
      FUZZ_CHECK(((which % 5) == 1 ? cubert__memory_id_set_owned(x->table, id, false)
                                   : cubert__memory_id_disown(x->table, id)) ==
                 (owner_ok ? CUBERT_STATUS_OK : CUBERT_STATUS_INVALID_HANDLE));
      if (owner_ok) m->owned = 0;
      break;
    case 3:
      FUZZ_CHECK(((loc.pool & 1) ? cubert__memory_id_set_location_owned(x->table, id, loc)
                                 : cubert__memory_id_set_location(x->table, id, loc)) ==
                 (loc_ok ? CUBERT_STATUS_OK : CUBERT_STATUS_INVALID_HANDLE));
      if (loc_ok) m->loc = loc;
      break;
    default:
      memset(&got, 0x5A, sizeof got);
      FUZZ_CHECK(cubert__memory_id_location(x->table, id, &got) ==
                 (loc_ok ? CUBERT_STATUS_OK : CUBERT_STATUS_INVALID_HANDLE));
      FUZZ_CHECK(loc_ok ? loc_eq(got, m->loc) : got.slice == 0x5A5A5A5Au);
      break;
  }
}

static void op_retain_release(ctx_t *x, uint8_t which) {
  cubert_memory_id_t id = pick_id(x);
  cubert_status_t want;
  switch (which % 4) {
    case 0:
      want = model_retain(x, id, 0);
      FUZZ_CHECK(cubert__memory_id_retain_handle(x->table, id) == want);
      break;
    case 1:
      want = model_release(x, id, 0);
      FUZZ_CHECK(cubert__memory_id_release_handle(x->table, id) == want);
      break;
    case 2:
      want = model_retain(x, id, 1);
      FUZZ_CHECK(cubert__memory_id_retain_binding(x->table, id) == want);
      break;
    default:
      want = model_release(x, id, 1);
      FUZZ_CHECK(cubert__memory_id_release_binding(x->table, id) == want);
      break;
  }
}

/* Queries on one id, the live count, and the other table's refusal. */
static void op_query(ctx_t *x) {
  cubert_memory_id_t id = pick_id(x);
  const m_id_t *m = lookup(x, id);
  int alive = m && m->alive;
  cubert_handle_t h;
  FUZZ_CHECK(cubert__memory_id_is_alive(x->table, id) == (bool)alive);
  FUZZ_CHECK(cubert__memory_id_is_free(x->table, id) == (bool)!alive);
  FUZZ_CHECK(cubert__memory_id_can_mut(x->table, id) == (bool)(alive && m->handles <= 1));
  FUZZ_CHECK(cubert__memory_id_handle_count(x->table, id) == (alive ? m->handles : 0));
  FUZZ_CHECK(cubert__memory_id_descriptor_count(x->table, id) ==
             (alive ? m->handles + m->bindings : 0));
  memset(&h, 0, sizeof h);
  h.memory = id;
  FUZZ_CHECK(cubert__handle_can_mut(x->table, &h) == (bool)(alive && m->handles <= 1));
  FUZZ_CHECK(cubert__handle_table_live(x->table) == model_live(x));
  /* ids of this table mean nothing to the other one (another tag) */
  FUZZ_CHECK(!cubert__memory_id_is_alive(x->other, id));
  FUZZ_CHECK(cubert__memory_id_retain_handle(x->other, id) == CUBERT_STATUS_INVALID_HANDLE);
  FUZZ_CHECK(cubert__memory_id_set_owned(x->other, id, false) == CUBERT_STATUS_INVALID_HANDLE);
}

/* Give every reference and ownership back: the table must be empty. */
static void drain(ctx_t *x) {
  uint32_t i;
  for (i = 0; i < x->nids; i++) {
    m_id_t *m = &x->ids[i];
    while (m->alive && m->bindings)
      FUZZ_CHECK(model_release(x, m->id, 1) == CUBERT_STATUS_OK &&
                 cubert__memory_id_release_binding(x->table, m->id) == CUBERT_STATUS_OK);
    while (m->alive && m->handles)
      FUZZ_CHECK(model_release(x, m->id, 0) == CUBERT_STATUS_OK &&
                 cubert__memory_id_release_handle(x->table, m->id) == CUBERT_STATUS_OK);
    if (m->owned) {
      FUZZ_CHECK(cubert__memory_id_disown(x->table, m->id) == CUBERT_STATUS_OK);
      m->owned = 0;
    }
  }
  FUZZ_CHECK(cubert__handle_table_live(x->table) == 0);
}

static ctx_t g_ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ctx_t *x = &g_ctx;
  fuzz_reader_t r = fuzz_reader_init(data, size);
  cubert_allocator_t al;
  uint32_t n, fail;
  cubert_status_t st;
  memset(x, 0, sizeof(*x));
  x->r = &r;
  x->max_slots = 1u + (uint32_t)(fuzz_uint(&r, 2) % 600u); /* 1..600: up to three chunks */
  x->tag = fuzz_u8(&r);
  fail = fuzz_u8(&r);
  al = fuzz_alloc_init(&x->fa);
  /* argument checks */
  FUZZ_CHECK(cubert__handle_table_create(al, 0, 0, &x->table) == CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(cubert__handle_table_create(al, CUBERT_HANDLE_TABLE_MAX_SLOTS + 1u, 0, &x->table) ==
             CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(x->table == NULL && fuzz_alloc_balanced(&x->fa));
  fuzz_alloc_fail_at(&x->fa, fail & 0x3Fu, (int)(fail >> 7));
  st = cubert__handle_table_create(al, x->max_slots, x->tag, &x->table);
  if (st != CUBERT_STATUS_OK) {
    /* a failed create leaves nothing behind; the next one succeeds */
    FUZZ_CHECK(st == CUBERT_STATUS_RESOURCE_EXHAUSTED && x->table == NULL && x->fa.failures > 0);
    FUZZ_CHECK(fuzz_alloc_balanced(&x->fa));
    fuzz_alloc_fail_at(&x->fa, 0, 0);
    FUZZ_CHECK(cubert__handle_table_create(al, x->max_slots, x->tag, &x->table) ==
               CUBERT_STATUS_OK);
  }
  fuzz_alloc_fail_at(&x->fa, 0, 0);
  FUZZ_CHECK(cubert__handle_table_create(al, 4, (uint8_t)(x->tag ^ 0x5Au), &x->other) ==
             CUBERT_STATUS_OK);
  fuzz_alloc_fail_at(&x->fa, fail & 0x3Fu, (int)(fail >> 7));
  for (n = 0; n < MAX_OPS && !fuzz_reader_done(&r); n++) {
    uint8_t op = fuzz_u8(&r);
    switch (op % 8u) {
      case 0: case 1: op_acquire(x, (op >> 3) % 3); break;
      case 2: case 3: op_retain_release(x, (uint8_t)(op >> 3)); break;
      case 4: op_ownership(x, (uint8_t)(op >> 3)); break;
      case 5: op_handle_level(x, (uint8_t)(op >> 3)); break;
      default: op_query(x); break;
    }
  }
  FUZZ_CHECK(cubert__handle_table_live(x->table) == model_live(x));
  drain(x);
  cubert__handle_table_destroy(x->table);
  cubert__handle_table_destroy(x->other);
  FUZZ_CHECK(fuzz_alloc_balanced(&x->fa));
  return 0;
}
