/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_checked_math.c: the overflow-checked helpers (cubert_size_*,
 * cubert_u64_*) against the compiler's __builtin_*_overflow, and the arena
 * allocator against a model (bounds, alignment, no overlap, contents kept
 * across resize, zero fill, no side effect on failure).
 *
 * Input: a sequence of operations; each starts with an opcode byte followed by
 * its operands (little-endian; missing bytes read as zero). The first bytes
 * choose the arena's capacity and the misalignment of its buffer.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cubert/allocator.h"
#include "cubert/driver/arith.h"
#include "fuzz.h"

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "fuzz_checked_math: %s:%d: check failed: %s\n", __FILE__,     \
              __LINE__, #cond);                                                     \
      abort();                                                                      \
    }                                                                               \
  } while (0)

#define ARENA_BYTES 4096
#define ARENA_SLACK 64
#define MAX_BLOCKS 32
#define SIZE_BITS ((unsigned)(sizeof(size_t) * 8))

typedef struct block_t {
  unsigned char *ptr;
  size_t size;
  size_t align;
  unsigned id;
} block_t;

typedef struct model_t {
  cubert_arena_t arena;
  cubert_allocator_t alloc;
  unsigned char *base;
  size_t capacity;
  block_t blocks[MAX_BLOCKS];
  unsigned nblocks;
  unsigned next_id;
} model_t;

/* 8-byte aligned backing store; each input offsets into it. */
static uint64_t g_buffer[(ARENA_BYTES + ARENA_SLACK) / 8];

static int is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

static unsigned char pattern(unsigned id, size_t k) {
  return (unsigned char)(id * 131u + (unsigned)k * 7u + 1u);
}

/* ---- checked arithmetic ------------------------------------------------------ */

static void check_size_mul(size_t a, size_t b) {
  size_t want, got = 0x5a5a;
  int overflow = __builtin_mul_overflow(a, b, &want);
  cubert_status_t st = cubert_size_mul(a, b, &got);
  if (overflow) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
    FUZZ_CHECK(got == 0x5a5a);
  } else {
    FUZZ_CHECK(st == CUBERT_STATUS_OK);
    FUZZ_CHECK(got == want);
  }
  FUZZ_CHECK(cubert_size_mul(a, b, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
}

static void check_size_add(size_t a, size_t b) {
  size_t want, got = 0x5a5a;
  int overflow = __builtin_add_overflow(a, b, &want);
  cubert_status_t st = cubert_size_add(a, b, &got);
  if (overflow) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
    FUZZ_CHECK(got == 0x5a5a);
  } else {
    FUZZ_CHECK(st == CUBERT_STATUS_OK);
    FUZZ_CHECK(got == want);
  }
  FUZZ_CHECK(cubert_size_add(a, b, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
}

static void check_size_mul_add(size_t a, size_t b, size_t c) {
  size_t m, want, got = 0x5a5a;
  int overflow = __builtin_mul_overflow(a, b, &m);
  cubert_status_t st;
  if (!overflow) overflow = __builtin_add_overflow(m, c, &want);
  st = cubert_size_mul_add(a, b, c, &got);
  if (overflow) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
    FUZZ_CHECK(got == 0x5a5a);
  } else {
    FUZZ_CHECK(st == CUBERT_STATUS_OK);
    FUZZ_CHECK(got == want);
  }
  FUZZ_CHECK(cubert_size_mul_add(a, b, c, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
}

static void check_size_align_up(size_t value, size_t align) {
  size_t sum, got = 0x5a5a;
  cubert_status_t st = cubert_size_align_up(value, align, &got);
  if (!is_pow2(align)) {
    FUZZ_CHECK(st == CUBERT_STATUS_INVALID_ARGUMENT);
    FUZZ_CHECK(got == 0x5a5a);
    return;
  }
  if (__builtin_add_overflow(value, align - 1, &sum)) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
    FUZZ_CHECK(got == 0x5a5a);
    return;
  }
  FUZZ_CHECK(st == CUBERT_STATUS_OK);
  FUZZ_CHECK(got % align == 0);
  FUZZ_CHECK(got >= value);
  FUZZ_CHECK(got - value < align);
}

static void check_u64_mul(uint64_t a, uint64_t b) {
  uint64_t want, got = 0x5a5a;
  int overflow = __builtin_mul_overflow(a, b, &want);
  cubert_status_t st = cubert_u64_mul(a, b, &got);
  if (overflow) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
    FUZZ_CHECK(got == 0x5a5a);
  } else {
    FUZZ_CHECK(st == CUBERT_STATUS_OK);
    FUZZ_CHECK(got == want);
  }
  FUZZ_CHECK(cubert_u64_mul(a, b, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
}

static void check_u64_add(uint64_t a, uint64_t b) {
  uint64_t want, got = 0x5a5a;
  int overflow = __builtin_add_overflow(a, b, &want);
  cubert_status_t st = cubert_u64_add(a, b, &got);
  if (overflow) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
    FUZZ_CHECK(got == 0x5a5a);
  } else {
    FUZZ_CHECK(st == CUBERT_STATUS_OK);
    FUZZ_CHECK(got == want);
  }
  FUZZ_CHECK(cubert_u64_add(a, b, NULL) == CUBERT_STATUS_INVALID_ARGUMENT);
}

static void check_u64_round_up(uint64_t value, uint64_t multiple) {
  uint64_t want, got = 0x5a5a;
  cubert_status_t st = cubert_u64_round_up(value, multiple, &got);
  int overflow;
  if (multiple == 0) {
    FUZZ_CHECK(st == CUBERT_STATUS_INVALID_ARGUMENT);
    FUZZ_CHECK(got == 0x5a5a);
    return;
  }
  /* The smallest multiple of `multiple` that is >= value, computed as
   * ceil(value / multiple) * multiple with overflow detection. */
  overflow = __builtin_mul_overflow(value / multiple + (value % multiple != 0), multiple, &want);
  if (overflow) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
    FUZZ_CHECK(got == 0x5a5a);
    return;
  }
  FUZZ_CHECK(st == CUBERT_STATUS_OK);
  FUZZ_CHECK(got == want);
  FUZZ_CHECK(got % multiple == 0 && got >= value && got - value < multiple);
}

/* Sizes: small values most of the time (the interesting boundaries are near
 * 0 and near SIZE_MAX), otherwise the raw bits. */
static size_t pick_size(fuzz_reader_t *r) {
  uint8_t mode = fuzz_u8(r);
  switch (mode & 3u) {
  case 0: return (size_t)fuzz_u8(r);
  case 1: return SIZE_MAX - (size_t)fuzz_u8(r);
  case 2: return (size_t)1 << (fuzz_u8(r) % SIZE_BITS);
  default: return fuzz_size(r);
  }
}

static uint64_t pick_u64(fuzz_reader_t *r) {
  uint8_t mode = fuzz_u8(r);
  switch (mode & 3u) {
  case 0: return fuzz_u8(r);
  case 1: return UINT64_MAX - fuzz_u8(r);
  case 2: return (uint64_t)1 << (fuzz_u8(r) % 64u);
  default: return fuzz_u64(r);
  }
}

/* Alignments: usually a power of two (0 = default 16), sometimes anything. */
static size_t pick_align(fuzz_reader_t *r) {
  uint8_t b = fuzz_u8(r);
  if (b & 0x80u) return (size_t)(b & 0x7fu);
  if (b & 0x40u) return 0;
  return (size_t)1 << ((b & 0x3fu) % 8u); /* 1..128: fits the arena */
}

/* ---- arena model -------------------------------------------------------------- */

static void model_verify(const model_t *m) {
  unsigned i, j;
  size_t k;
  FUZZ_CHECK(m->arena.used <= m->arena.capacity);
  FUZZ_CHECK(m->arena.high_water >= m->arena.used);
  FUZZ_CHECK(m->arena.high_water <= m->arena.capacity);
  for (i = 0; i < m->nblocks; i++) {
    const block_t *b = &m->blocks[i];
    FUZZ_CHECK(b->ptr >= m->base && b->size <= m->capacity &&
               (size_t)(b->ptr - m->base) <= m->capacity - b->size);
    FUZZ_CHECK(((uintptr_t)b->ptr & (b->align - 1)) == 0);
    for (k = 0; k < b->size; k++) FUZZ_CHECK(b->ptr[k] == pattern(b->id, k));
    for (j = i + 1; j < m->nblocks; j++) {
      const block_t *c = &m->blocks[j];
      FUZZ_CHECK(b->ptr + b->size <= c->ptr || c->ptr + c->size <= b->ptr);
    }
  }
}

static void block_fill(block_t *b) {
  size_t k;
  for (k = 0; k < b->size; k++) b->ptr[k] = pattern(b->id, k);
}

static void block_remove(model_t *m, unsigned i) {
  m->blocks[i] = m->blocks[m->nblocks - 1];
  m->nblocks--;
}

/* Where a fresh block of `size` bytes aligned to `align` lands in an arena in
 * state `before` (taken before the call), per the arena's contract; 0 when it
 * does not fit. */
static int expect_fresh(const model_t *m, const cubert_arena_t *before, size_t size,
                        size_t align, size_t *out_offset) {
  uintptr_t cur = (uintptr_t)m->base + before->used, aligned;
  if (__builtin_add_overflow(cur, (uintptr_t)(align - 1), &aligned)) return 0;
  aligned &= ~(uintptr_t)(align - 1);
  *out_offset = (size_t)(aligned - (uintptr_t)m->base);
  return *out_offset <= m->capacity && size <= m->capacity - *out_offset;
}

static void expect_unchanged(const model_t *m, const cubert_arena_t *before) {
  FUZZ_CHECK(m->arena.used == before->used);
  FUZZ_CHECK(m->arena.high_water == before->high_water);
  FUZZ_CHECK(m->arena.last == before->last);
  FUZZ_CHECK(m->arena.last_size == before->last_size);
}

static void expect_allocated(model_t *m, const cubert_arena_t *before, void *p, size_t offset,
                             size_t size) {
  FUZZ_CHECK((unsigned char *)p == m->base + offset);
  FUZZ_CHECK(m->arena.used == offset + size);
  FUZZ_CHECK(m->arena.last == p && m->arena.last_size == size);
  FUZZ_CHECK(m->arena.high_water ==
             (before->high_water > m->arena.used ? before->high_water : m->arena.used));
}

static void arena_allocate(model_t *m, size_t size, size_t align, int as_array, size_t count) {
  void *p = (void *)&p; /* sentinel: must stay untouched on failure */
  void *const sentinel = p;
  cubert_arena_t before = m->arena;
  size_t eff = align == 0 ? 16 : align, total = size, offset = 0, k;
  int overflow = 0, ok;
  cubert_status_t st;
  if (as_array) {
    overflow = __builtin_mul_overflow(count, size, &total);
    st = cubert_allocator_malloc_array(m->alloc, count, size, align, &p, NULL);
  } else {
    st = cubert_allocator_malloc(m->alloc, size, align, &p, NULL);
  }
  if (overflow) {
    FUZZ_CHECK(st == CUBERT_STATUS_OVERFLOW);
  } else if (total == 0 || !is_pow2(eff)) {
    FUZZ_CHECK(st == CUBERT_STATUS_INVALID_ARGUMENT);
  } else {
    ok = expect_fresh(m, &before, total, eff, &offset);
    FUZZ_CHECK(st == (ok ? CUBERT_STATUS_OK : CUBERT_STATUS_RESOURCE_EXHAUSTED));
  }
  if (st != CUBERT_STATUS_OK) {
    FUZZ_CHECK(p == sentinel);
    expect_unchanged(m, &before);
    return;
  }
  expect_allocated(m, &before, p, offset, total);
  for (k = 0; k < total; k++) FUZZ_CHECK(((unsigned char *)p)[k] == 0);
  if (m->nblocks < MAX_BLOCKS) {
    block_t *b = &m->blocks[m->nblocks++];
    b->ptr = (unsigned char *)p;
    b->size = total;
    b->align = eff;
    b->id = m->next_id++;
    block_fill(b);
  }
  /* else: the block is leaked into the arena, which is fine for an arena. */
}

static void arena_resize(model_t *m, unsigned index, size_t new_size) {
  block_t *b = &m->blocks[index];
  void *p = (void *)&p;
  void *const sentinel = p;
  cubert_arena_t before = m->arena;
  size_t offset = 0, keep, k;
  int ok;
  cubert_status_t st = cubert_allocator_realloc(m->alloc, b->ptr, b->size, new_size, b->align, &p,
                                                NULL);
  if (new_size == 0) {
    FUZZ_CHECK(st == CUBERT_STATUS_INVALID_ARGUMENT);
    FUZZ_CHECK(p == sentinel);
    expect_unchanged(m, &before);
    return;
  }
  if ((void *)b->ptr == before.last) {
    offset = (size_t)(b->ptr - m->base);
    ok = new_size <= m->capacity - offset; /* in place or not at all */
  } else {
    ok = expect_fresh(m, &before, new_size, b->align, &offset);
  }
  FUZZ_CHECK(st == (ok ? CUBERT_STATUS_OK : CUBERT_STATUS_RESOURCE_EXHAUSTED));
  if (!ok) {
    FUZZ_CHECK(p == sentinel);
    expect_unchanged(m, &before);
    return; /* the old block is untouched; model_verify checks its bytes */
  }
  expect_allocated(m, &before, p, offset, new_size);
  keep = b->size < new_size ? b->size : new_size;
  for (k = 0; k < keep; k++) FUZZ_CHECK(((unsigned char *)p)[k] == pattern(b->id, k));
  for (k = keep; k < new_size; k++) FUZZ_CHECK(((unsigned char *)p)[k] == 0);
  b->ptr = (unsigned char *)p;
  b->size = new_size;
  block_fill(b);
}

static void arena_free(model_t *m, unsigned index) {
  block_t *b = &m->blocks[index];
  cubert_arena_t before = m->arena;
  cubert_allocator_free(m->alloc, b->ptr, b->size, b->align);
  if ((void *)b->ptr == before.last) {
    FUZZ_CHECK(m->arena.used == (size_t)(b->ptr - m->base));
    FUZZ_CHECK(m->arena.last == NULL && m->arena.last_size == 0);
    FUZZ_CHECK(m->arena.high_water == before.high_water);
  } else {
    expect_unchanged(m, &before);
  }
  block_remove(m, index);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = fuzz_reader_init(data, size);
  model_t m;
  size_t misalign, a, b, c;
  uint64_t x, y;
  unsigned steps = 0;

  misalign = fuzz_u8(&r) % ARENA_SLACK;
  m.capacity = (size_t)fuzz_uint(&r, 2) % (ARENA_BYTES + 1);
  m.base = (unsigned char *)g_buffer + misalign;
  m.nblocks = 0;
  m.next_id = 1;
  FUZZ_CHECK(cubert_arena_initialize(&m.arena, NULL, 1, &m.alloc, NULL) ==
             CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(cubert_arena_initialize(NULL, m.base, m.capacity, &m.alloc, NULL) ==
             CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(cubert_arena_initialize(&m.arena, m.base, m.capacity, NULL, NULL) ==
             CUBERT_STATUS_INVALID_ARGUMENT);
  FUZZ_CHECK(cubert_arena_initialize(&m.arena, m.base, m.capacity, &m.alloc, NULL) ==
             CUBERT_STATUS_OK);
  FUZZ_CHECK(m.arena.used == 0 && m.arena.high_water == 0 && m.arena.last == NULL);

  while (!fuzz_reader_done(&r) && steps++ < 4096) {
    uint8_t op = fuzz_u8(&r);
    switch (op % 12u) {
    case 0:
      a = pick_size(&r);
      b = pick_size(&r);
      check_size_mul(a, b);
      break;
    case 1:
      a = pick_size(&r);
      b = pick_size(&r);
      check_size_add(a, b);
      break;
    case 2:
      a = pick_size(&r);
      b = pick_size(&r);
      c = pick_size(&r);
      check_size_mul_add(a, b, c);
      break;
    case 3:
      a = pick_size(&r);
      b = pick_size(&r);
      check_size_align_up(a, b);
      break;
    case 4:
      x = pick_u64(&r);
      y = pick_u64(&r);
      check_u64_mul(x, y);
      check_u64_add(x, y);
      break;
    case 5:
      x = pick_u64(&r);
      y = pick_u64(&r);
      check_u64_round_up(x, y);
      break;
    case 6:
    case 7:
      a = fuzz_uint(&r, 2) % (ARENA_BYTES + 256); /* sometimes more than fits */
      arena_allocate(&m, a, pick_align(&r), 0, 0);
      break;
    case 8:
      a = pick_size(&r);
      b = pick_size(&r);
      arena_allocate(&m, b, pick_align(&r), 1, a);
      break;
    case 9:
      if (m.nblocks) {
        unsigned i = fuzz_u8(&r) % m.nblocks;
        arena_resize(&m, i, fuzz_uint(&r, 2) % (ARENA_BYTES + 256));
      }
      break;
    case 10:
      if (m.nblocks) arena_free(&m, fuzz_u8(&r) % m.nblocks);
      break;
    default:
      if ((op >> 4) == 0xf) {
        size_t hw = m.arena.high_water;
        cubert_arena_reset(&m.arena);
        FUZZ_CHECK(m.arena.used == 0 && m.arena.last == NULL && m.arena.high_water == hw);
        m.nblocks = 0;
      }
      break;
    }
    model_verify(&m);
  }
  return 0;
}
