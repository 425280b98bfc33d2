/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_memory_config.c: memory configurations (cubert/memory.h):
 * MemoryConfiguration::resolve of presets and explicit pool lists, and the
 * pool ladders of the SubSlices / ExclusivePages presets and of CUSTOM
 * lists, against references written from the spec's rules (the
 * ExclusivePages buckets with libm's exp/log, allowing the last ulp).
 *
 * Input: a sequence of cases: device properties (max page size, alignment),
 * exclusive_memory_only, a preset or an explicit list of up to 6 entries
 * whose sizes come from edge values, a capacity for the output.
 *
 * Invariants: status, error kind, fields and reason equal the reference's;
 * on failure nothing is written (neither *out_config nor the buffer); the
 * resolved pools equal the reference entries; resolving is idempotent
 * (the pools of a resolved CUSTOM configuration are its own entries); the
 * preset ladders match the formulas; a short output buffer gives
 * OUT_OF_RANGE with the full count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/memory.h"
#include "memory/memory.h"
#include "fuzz.h"

#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "fuzz_memory_config: %s:%d: check failed: %s\n", __FILE__, __LINE__,   \
              #cond);                                                                         \
      abort();                                                                                \
    }                                                                                         \
  } while (0)

#define MAX_CASES 32
#define MAX_ENTRIES 6
#define MAX_OUT 80 /* a ladder has at most 64 sliced pools + 2 */
#define NONE CUBERT_MEMORY_NONE
#define MIB ((uint64_t)1 << 20)

typedef struct ref_error_t {
  cubert_status_t status;
  int kind;       /* cubert_error_kind_t, -1: not checked */
  uint64_t f0, f1;
  int nfields;
  const char *reason; /* NULL: not checked */
} ref_error_t;

static ref_error_t ok_(void) {
  ref_error_t e;
  memset(&e, 0, sizeof e);
  e.status = CUBERT_STATUS_OK;
  e.kind = -1;
  return e;
}

static ref_error_t err_(cubert_status_t st, int kind, int n, uint64_t f0, uint64_t f1,
                        const char *reason) {
  ref_error_t e;
  e.status = st;
  e.kind = kind;
  e.nfields = n;
  e.f0 = f0;
  e.f1 = f1;
  e.reason = reason;
  return e;
}

static void check_error(const ref_error_t *want, cubert_status_t got, const cubert_error_t *err) {
  if (got != want->status) {
    fprintf(stderr, "fuzz_memory_config: got %s, want %s\n", cubert_status_name(got),
            cubert_status_name(want->status));
    abort();
  }
  if (got == CUBERT_STATUS_OK) return;
  FUZZ_CHECK(err->status == got);
  if (want->kind >= 0) FUZZ_CHECK(err->depth >= 1 && err->chain[0] == (uint16_t)want->kind);
  if (want->nfields >= 1) FUZZ_CHECK(err->field[0] == want->f0);
  if (want->nfields >= 2) FUZZ_CHECK(err->field[1] == want->f1);
  if (want->reason) FUZZ_CHECK(strcmp(err->reason, want->reason) == 0);
}

static int round_up(uint64_t v, uint64_t a, uint64_t *out) {
  uint64_t r = v % a;
  if (!r) {
    *out = v;
    return 1;
  }
  return !__builtin_add_overflow(v, a - r, out);
}

static uint64_t period(uint64_t size) {
  uint64_t units = 1 + size / (1ull << 30) + ((size % (1ull << 30)) >= (1ull << 29) ? 1 : 0);
  return units > UINT64_MAX / 5000 ? UINT64_MAX - 1 : 5000 * units;
}

static uint64_t read_size(fuzz_reader_t *r) {
  uint8_t b = fuzz_u8(r);
  switch (b >> 5) {
    case 0: return b & 3;
    case 1: return (uint64_t)1000 * (b & 31);
    case 2: return (uint64_t)1 << (b & 31);
    case 3: return ((uint64_t)1 << (32 + (b & 31))) + (b & 1);
    case 4: return UINT64_MAX - (b & 31); /* NONE and near it */
    case 5: return NONE;
    default: return fuzz_uint(r, 3);
  }
}

static int entries_equal(const cubert_memory_pool_options_t *a, const cubert_memory_pool_options_t *b) {
  return a->type == b->type && a->page_size == b->page_size && a->max_slice_size == b->max_slice_size &&
         a->max_pool_size == b->max_pool_size && a->max_alloc_size == b->max_alloc_size &&
         a->reclaim_at == b->reclaim_at && a->dealloc_period == b->dealloc_period;
}

/* ---- references ---------------------------------------------------------------------- */

static ref_error_t ref_entry(const cubert_memory_pool_options_t *e, uint64_t align, int excl_only,
                             cubert_memory_pool_options_t *out) {
  cubert_memory_pool_options_t r;
  switch (e->type) {
    case CUBERT_MEMORY_POOL_EXCLUSIVE:
      r = cubert_memory_pool_exclusive(0, e->dealloc_period);
      if (!round_up(e->max_alloc_size, align, &r.max_alloc_size))
        return err_(CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW, 0, 0, 0, NULL);
      break;
    case CUBERT_MEMORY_POOL_DIRECT:
      r = cubert_memory_pool_direct(e->reclaim_at);
      break;
    case CUBERT_MEMORY_POOL_SLICED:
      if (excl_only)
        return err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_SLICED_POOLS_UNAVAILABLE, 0, 0, 0, NULL);
      if (e->page_size == 0)
        return err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_ZERO_SIZE, 0, 0, 0, "page_size");
      r = cubert_memory_pool_sliced(0, 0, NONE);
      r.dealloc_period = e->dealloc_period;
      if (!round_up(e->page_size, align, &r.page_size))
        return err_(CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW, 0, 0, 0, NULL);
      if (e->max_slice_size == NONE) r.max_slice_size = r.page_size;
      else if (e->max_slice_size == 0)
        return err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_ZERO_SIZE, 0, 0, 0, "max_slice_size");
      else if (!round_up(e->max_slice_size, align, &r.max_slice_size))
        return err_(CUBERT_STATUS_OVERFLOW, CUBERT_ERROR_OVERFLOW, 0, 0, 0, NULL);
      if (r.max_slice_size > r.page_size)
        return err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_SLICE_LARGER_THAN_PAGE, 2,
                    r.page_size, r.max_slice_size, NULL);
      if (e->max_pool_size != NONE) {
        if (e->max_pool_size == 0)
          return err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_ZERO_SIZE, 0, 0, 0, "max_pool_size");
        if (e->max_pool_size < r.page_size)
          return err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_CAP_SMALLER_THAN_PAGE, 2,
                      r.page_size, e->max_pool_size, NULL);
        if (e->max_pool_size / r.page_size > CUBERT_MEMORY_MAX_PAGES)
          return err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_TOO_MANY_PAGES, 1,
                      e->max_pool_size / r.page_size, 0, NULL);
        r.max_pool_size = e->max_pool_size;
      }
      break;
    default:
      return err_(CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0, 0, NULL);
  }
  *out = r;
  return ok_();
}

/* The SubSlices ladder (at most 64 sliced pools). */
static uint32_t ref_sub_slices(cubert_memory_device_properties_t p, cubert_memory_pool_options_t *out) {
  uint64_t align = p.alignment ? p.alignment : 1, cur = p.max_page_size, pages[64], slices[64], tail;
  uint32_t rec = 0, n = 0, base = 1, i;
  while (cur >= 32 * MIB && rec < 64) {
    FUZZ_CHECK(round_up(cur / 4, align, &cur)); /* cur / 4 + align fits */
    pages[rec] = cur;
    slices[rec] = base < 64 ? cur >> base : 0;
    rec++;
    base++;
  }
  out[n++] = cubert_memory_pool_exclusive(0, NONE);
  for (i = rec; i > 0; i--) out[n++] = cubert_memory_pool_sliced(pages[i - 1], slices[i - 1], NONE);
  tail = p.max_page_size / align * align;
  out[n++] = cubert_memory_pool_exclusive(tail, period(tail));
  return n;
}

/* The ExclusivePages buckets: bucket i (0..23) is the rounding up of
 * floor(exp(ln 32768 + (ln max - ln 32768) i/23)); cubert's own exp/ln may
 * differ from libm's in the last ulp, so each bucket may take the value of
 * either side of an integer the exact value is that close to. The list is
 * the buckets with consecutive duplicates removed: a path through the
 * buckets must explain it (each bucket either repeats the entry of the one
 * before or is the next entry). */
static void check_exclusive_pages(cubert_memory_device_properties_t p,
                                  const cubert_memory_pool_options_t *got, uint32_t n) {
  uint64_t align = p.alignment ? p.alignment : 1, lo[24], hi[24];
  double lmin = log(32768.0), lmax = log((double)p.max_page_size);
  unsigned char reach[24][24]; /* bucket i can be entry j */
  uint32_t i, j;
  FUZZ_CHECK(n >= 1 && n <= 24);
  for (i = 0; i < 24; i++) {
    double v = exp(lmin + (lmax - lmin) * ((double)i / 23.0));
    double lo_d = v * (1.0 - 1e-12), hi_d = v * (1.0 + 1e-12);
    lo[i] = lo_d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)lo_d;
    hi[i] = hi_d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)hi_d;
    if (!round_up(lo[i], align, &lo[i])) lo[i] = UINT64_MAX;
    if (!round_up(hi[i], align, &hi[i])) hi[i] = UINT64_MAX;
  }
  memset(reach, 0, sizeof reach);
  for (i = 0; i < 24; i++)
    for (j = 0; j < n; j++) {
      int fits = got[j].max_alloc_size >= lo[i] && got[j].max_alloc_size <= hi[i];
      if (!fits) continue;
      reach[i][j] = i == 0 ? j == 0 : (reach[i - 1][j] || (j > 0 && reach[i - 1][j - 1]));
    }
  FUZZ_CHECK(reach[23][n - 1]);
  for (j = 0; j < n; j++) {
    FUZZ_CHECK(got[j].type == CUBERT_MEMORY_POOL_EXCLUSIVE &&
               got[j].dealloc_period == period(got[j].max_alloc_size));
    if (j > 0) FUZZ_CHECK(got[j].max_alloc_size != got[j - 1].max_alloc_size);
  }
}

/* ---- cases ------------------------------------------------------------------------------ */

static void read_entry(fuzz_reader_t *r, cubert_memory_pool_options_t *e) {
  uint8_t t = fuzz_u8(r);
  memset(e, 0, sizeof(*e));
  e->type = (cubert_memory_pool_type_t)(t % 3u == 0 && (t & 0x80) ? 3 : t % 3u);
  e->page_size = read_size(r);
  e->max_slice_size = read_size(r);
  e->max_pool_size = read_size(r);
  e->max_alloc_size = read_size(r);
  e->reclaim_at = (t & 0x40) ? NONE : read_size(r);
  e->dealloc_period = (t & 0x20) ? NONE : (uint64_t)(t & 15) * 1000u;
}

static void case_resolve(fuzz_reader_t *r, cubert_memory_device_properties_t props, int excl_only) {
  cubert_memory_pools_config_t pc;
  cubert_memory_pool_options_t entries[MAX_ENTRIES], buf[MAX_ENTRIES + 1], want[MAX_ENTRIES], again[MAX_ENTRIES];
  cubert_memory_configuration_t choice = cubert_memory_configuration_default(!excl_only), out;
  cubert_error_t err;
  ref_error_t w = ok_();
  uint64_t align = props.alignment ? props.alignment : 1;
  uint8_t b = fuzz_u8(r);
  uint32_t i, cap, count = 0;
  cubert_status_t st;
  pc.kind = (cubert_memory_pools_config_kind_t)(b % 4u);
  pc.count = (b >> 2) % (MAX_ENTRIES + 1u);
  if ((b & 0x40) && pc.kind == CUBERT_MEMORY_POOLS_EXPLICIT) pc.count = 255u + (b >> 7); /* too many */
  pc.entries = entries;
  for (i = 0; i < pc.count && i < MAX_ENTRIES; i++) read_entry(r, &entries[i]);
  cap = (b & 0x80) && pc.count > 0 && pc.count <= MAX_ENTRIES ? pc.count - 1 : MAX_ENTRIES + 1;
  switch ((int)pc.kind) {
    case CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES:
      if (excl_only) w = err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_PRESET_UNAVAILABLE, 0, 0, 0, "SubSlices");
      break;
    case CUBERT_MEMORY_POOLS_PRESET_EXCLUSIVE_PAGES: break;
    case CUBERT_MEMORY_POOLS_EXPLICIT:
      if (pc.count == 0) w = err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST, 0, 0, 0, NULL);
      else if (pc.count > CUBERT_MEMORY_MAX_DYNAMIC_POOLS)
        w = err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_TOO_MANY_POOLS, 1, pc.count, 0, NULL);
      else if (cap < pc.count) w = err_(CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0, 0, NULL);
      else
        for (i = 0; i < pc.count && w.status == CUBERT_STATUS_OK; i++)
          w = ref_entry(&entries[i], align, excl_only, &want[i]);
      break;
    default:
      w = err_(CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0, 0, NULL);
      break;
  }
  memset(buf, 0x5A, sizeof buf);
  memset(&out, 0x5A, sizeof out);
  st = cubert_memory_configuration_resolve(&choice, &pc, props, excl_only != 0, buf, cap, &out, &err);
  check_error(&w, st, &err);
  if (st != CUBERT_STATUS_OK) { /* nothing written */
    FUZZ_CHECK(out.pool_count == 0x5A5A5A5Au && buf[0].page_size == 0x5A5A5A5A5A5A5A5Aull);
    return;
  }
  if (pc.kind != CUBERT_MEMORY_POOLS_EXPLICIT) {
    FUZZ_CHECK(out.kind == (pc.kind == CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES
                            ? CUBERT_MEMORY_CONFIGURATION_SUB_SLICES
                            : CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES));
    return;
  }
  FUZZ_CHECK(out.kind == CUBERT_MEMORY_CONFIGURATION_CUSTOM && out.pools == buf && out.pool_count == pc.count);
  for (i = 0; i < pc.count; i++) FUZZ_CHECK(entries_equal(&buf[i], &want[i]));
  /* the pools of the resolved configuration are its entries */
  FUZZ_CHECK(cubert_memory_configuration_pools(&out, props, again, MAX_ENTRIES, &count, &err) ==
             CUBERT_STATUS_OK && count == pc.count);
  for (i = 0; i < count; i++) FUZZ_CHECK(entries_equal(&again[i], &want[i]));
  /* no choice: the runtime's stays */
  FUZZ_CHECK(cubert_memory_configuration_resolve(&choice, NULL, props, excl_only != 0, NULL, 0, &out, &err) ==
             CUBERT_STATUS_OK && out.kind == choice.kind);
}

static void case_pools(fuzz_reader_t *r, cubert_memory_device_properties_t props) {
  cubert_memory_configuration_t c;
  cubert_memory_pool_options_t entries[MAX_ENTRIES], got[MAX_OUT], want[MAX_OUT];
  cubert_error_t err;
  uint64_t align = props.alignment ? props.alignment : 1;
  uint8_t b = fuzz_u8(r);
  uint32_t i, n = 0x5A, wn = 0, cap = (b & 0x80) ? (uint32_t)(fuzz_u8(r) % 4u) : MAX_OUT;
  ref_error_t w = ok_();
  cubert_status_t st;
  c.kind = (cubert_memory_configuration_kind_t)(b % 4u);
  c.pool_count = (b >> 2) % (MAX_ENTRIES + 1u);
  c.pools = entries;
  for (i = 0; i < c.pool_count; i++) read_entry(r, &entries[i]);
  switch ((int)c.kind) {
    case CUBERT_MEMORY_CONFIGURATION_SUB_SLICES: wn = ref_sub_slices(props, want); break;
    case CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES:
      if (props.max_page_size == 0)
        w = err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_ZERO_SIZE, 0, 0, 0, "max_page_size");
      break;
    case CUBERT_MEMORY_CONFIGURATION_CUSTOM:
      for (i = 0; i < c.pool_count && w.status == CUBERT_STATUS_OK; i++) {
        if (entries[i].type == CUBERT_MEMORY_POOL_SLICED && entries[i].page_size == 0)
          w = err_(CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_ZERO_SIZE, 0, 0, 0, "page_size");
        else if ((unsigned)entries[i].type > CUBERT_MEMORY_POOL_DIRECT)
          w = err_(CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0, 0, NULL);
      }
      for (i = 0; i < c.pool_count && w.status == CUBERT_STATUS_OK; i++) {
        want[i] = entries[i];
        if (entries[i].type == CUBERT_MEMORY_POOL_EXCLUSIVE &&
            !round_up(entries[i].max_alloc_size, align, &want[i].max_alloc_size))
          w = err_(CUBERT_STATUS_OVERFLOW, -1, 0, 0, 0, NULL);
      }
      wn = c.pool_count;
      break;
    default:
      w = err_(CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT, 0, 0, 0, NULL);
      break;
  }
  memset(got, 0x5A, sizeof got);
  st = cubert_memory_configuration_pools(&c, props, got, cap, &n, &err);
  if (w.status == CUBERT_STATUS_OK && c.kind == CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES) {
    /* count first, then the buckets; the largest rounds up past 2^64 only
     * when the page size is that close to it */
    if (st == CUBERT_STATUS_OVERFLOW) {
      FUZZ_CHECK(err.status == st && props.max_page_size > UINT64_MAX - align && n == 0x5A);
      return;
    }
    FUZZ_CHECK(st == CUBERT_STATUS_OK || st == CUBERT_STATUS_OUT_OF_RANGE);
    FUZZ_CHECK(cubert_memory_configuration_pools(&c, props, got, MAX_OUT, &n, &err) == CUBERT_STATUS_OK);
    check_exclusive_pages(props, got, n);
    return;
  }
  if (w.status == CUBERT_STATUS_OK && cap < wn)
    w = err_(CUBERT_STATUS_OUT_OF_RANGE, CUBERT_ERROR_OUT_OF_RANGE, 0, 0, 0, NULL);
  check_error(&w, st, &err);
  if (st != CUBERT_STATUS_OK && st != CUBERT_STATUS_OUT_OF_RANGE) {
    FUZZ_CHECK(n == 0x5A);
    return;
  }
  FUZZ_CHECK(n == wn);
  for (i = 0; i < wn && i < cap; i++) FUZZ_CHECK(entries_equal(&got[i], &want[i]));
  if (cap < MAX_OUT) FUZZ_CHECK(got[cap].page_size == 0x5A5A5A5A5A5A5A5Aull); /* not past cap */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader_t r = fuzz_reader_init(data, size);
  uint32_t n;
  for (n = 0; n < MAX_CASES && !fuzz_reader_done(&r); n++) {
    uint8_t b = fuzz_u8(&r);
    cubert_memory_device_properties_t props;
    props.max_page_size = (b & 0x40) ? read_size(&r) : (uint64_t)1 << (12 + fuzz_u8(&r) % 30u);
    props.alignment = (b & 0x20) ? 0 : (uint64_t)1 << (fuzz_u8(&r) % 12u);
    if (b & 1) case_resolve(&r, props, (b >> 1) & 1);
    else case_pools(&r, props);
  }
  return 0;
}
