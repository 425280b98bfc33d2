/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory_report.c: MemoryUsage, byte formatting and the small helpers
 * every pool shares (padding, growing bookkeeping arrays, owner ids).
 */
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "cubert/driver/arith.h"

/* ---- shared helpers --------------------------------------------------------- */

uint64_t cubert__memory_padding(uint64_t size, uint64_t align) {
  uint64_t rem;
  if (align <= 1) return 0;
  rem = cubert__is_pow2(align) ? (size & (align - 1)) : size % align;
  return rem == 0 ? 0 : align - rem;
}

cubert_status_t cubert__memory_effective_size(uint64_t size, uint64_t align, uint64_t *out) {
  uint64_t pad = cubert__memory_padding(size, align);
  if (pad > UINT64_MAX - size) return CUBERT_STATUS_OVERFLOW;
  *out = size + pad;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__memory_array_reserve(cubert_allocator_t allocator, void **array,
                                             uint32_t *cap, uint32_t need, size_t elem,
                                             uint32_t min_cap) {
  uint32_t new_cap;
  size_t old_bytes, new_bytes;
  void *grown = NULL;
  if (need <= *cap) return CUBERT_STATUS_OK;
  new_cap = *cap < min_cap ? min_cap : *cap;
  while (new_cap < need) {
    if (new_cap > UINT32_MAX / 2) {
      new_cap = need;
      break;
    }
    new_cap *= 2;
  }
  if (cubert_size_mul(new_cap, elem, &new_bytes) != CUBERT_STATUS_OK) return CUBERT_STATUS_OVERFLOW;
  old_bytes = (size_t)*cap * elem; /* was allocated, cannot overflow */
  if (*array == NULL) {
    CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(allocator, new_bytes, 0, &grown, NULL));
  } else {
    CUBERT_RETURN_IF_ERROR(
        cubert_allocator_realloc(allocator, *array, old_bytes, new_bytes, 0, &grown, NULL));
  }
  *array = grown;
  *cap = new_cap;
  return CUBERT_STATUS_OK;
}

void cubert__memory_array_free(cubert_allocator_t allocator, void **array, uint32_t *cap,
                               size_t elem) {
  if (*array) cubert_allocator_free(allocator, *array, (size_t)*cap * elem, 0);
  *array = NULL;
  *cap = 0;
}

void cubert__memory_owner_drop(cubert_memory_env_t *env, cubert_memory_id_t *owner) {
  if (!cubert__memory_id_is_null(*owner)) (void)cubert__memory_id_disown(env->table, *owner);
  owner->index = 0;
  owner->generation = 0;
}

void cubert__memory_storage_dealloc(cubert_memory_env_t *env, uint64_t id) {
  env->storage.vtable->dealloc(env->storage.self, id);
  env->flush_pending = true;
}

size_t cubert__memory_format_u64(uint64_t v, char *buf) {
  char tmp[21];
  size_t n = 0, i;
  do {
    tmp[n++] = (char)('0' + (v % 10));
    v /= 10;
  } while (v);
  for (i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  buf[n] = 0;
  return n;
}

cubert_status_t cubert__memory_not_found(cubert_error_t *out_error, const char *prefix, uint64_t n,
                                         const char *suffix) {
  char reason[96], digits[21];
  size_t len = 0;
  len += cubert__strlcpy(reason, prefix, sizeof reason);
  cubert__memory_format_u64(n, digits);
  if (len < sizeof reason) len += cubert__strlcpy(reason + len, digits, sizeof reason - len);
  if (len < sizeof reason) (void)cubert__strlcpy(reason + len, suffix, sizeof reason - len);
  return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0, reason);
}

/* ---- usage -------------------------------------------------------------------- */

cubert_memory_usage_t cubert_memory_usage_combine(cubert_memory_usage_t a, cubert_memory_usage_t b) {
  cubert_memory_usage_t r;
  r.number_allocs = cubert__memory_sat_add(a.number_allocs, b.number_allocs);
  r.bytes_in_use = cubert__memory_sat_add(a.bytes_in_use, b.bytes_in_use);
  r.bytes_padding = cubert__memory_sat_add(a.bytes_padding, b.bytes_padding);
  r.bytes_reserved = cubert__memory_sat_add(a.bytes_reserved, b.bytes_reserved);
  return r;
}

/* A bounded writer: counts everything, stores what fits. */
typedef struct text_t {
  char *buf;
  size_t size;
  size_t len;
} text_t;

static void text_put(text_t *t, const char *s) {
  while (*s) {
    if (t->len + 1 < t->size) t->buf[t->len] = *s;
    t->len++;
    s++;
  }
  if (t->size > 0) t->buf[t->len < t->size ? t->len : t->size - 1] = 0;
}

static void text_u64(text_t *t, uint64_t v) {
  char digits[21];
  cubert__memory_format_u64(v, digits);
  text_put(t, digits);
}

/* whole.frac (two digits), from value = num/den rounded half up to 1/100. */
static void text_fixed2(text_t *t, uint64_t whole, uint64_t hundredths) {
  char d[3];
  text_u64(t, whole);
  d[0] = (char)('0' + hundredths / 10);
  d[1] = (char)('0' + hundredths % 10);
  d[2] = 0;
  text_put(t, ".");
  text_put(t, d);
}

static void text_bytes(text_t *t, uint64_t bytes) {
  static const char prefixes[] = "KMGTPEZY";
  uint64_t unit = 1000, whole, rem, step, hundredths;
  unsigned exp = 1;
  char suffix[4];
  if (bytes < 1000) {
    text_u64(t, bytes);
    text_put(t, " B");
    return;
  }
  /* unreachable: exp reaching 6 with bytes / unit >= 1000 (u64 stays under 10^21) */
  while (bytes / unit >= 1000 && exp < 6) {
    unit *= 1000;
    exp++;
  }
  whole = bytes / unit;
  rem = bytes % unit;
  step = unit / 100;
  hundredths = rem / step;
  if ((rem % step) * 2 >= step) hundredths++;
  if (hundredths == 100) {
    whole++;
    hundredths = 0;
  }
  text_fixed2(t, whole, hundredths);
  suffix[0] = ' ';
  suffix[1] = prefixes[exp - 1];
  suffix[2] = 'B';
  suffix[3] = 0;
  text_put(t, suffix);
}

/* num/den * 100 with two decimals and a '%'; "n/a" when den is 0 (there is
 * nothing to divide: no bytes reserved, or none in use). CubeCL prints
 * Rust's f32 "NaN%" / "inf%" there. */
static void text_percent(text_t *t, uint64_t num, uint64_t den) {
  uint64_t basis;
  if (den == 0) {
    text_put(t, "n/a");
    return;
  }
  while (num > UINT64_MAX / 10000) { /* keep num * 10000 in range */
    num >>= 1;
    den >>= 1;
    if (den == 0) den = 1;
  }
  basis = (num * 10000 + den / 2) / den;
  text_fixed2(t, basis / 100, basis % 100);
  text_put(t, "%");
}

size_t cubert_memory_bytes_format(uint64_t bytes, char *buf, size_t size) {
  text_t t;
  t.buf = buf;
  t.size = buf ? size : 0;
  t.len = 0;
  if (t.size > 0) t.buf[0] = 0;
  text_bytes(&t, bytes);
  return t.len;
}

size_t cubert_memory_usage_format(const cubert_memory_usage_t *usage, char *buf, size_t size) {
  text_t t;
  t.buf = buf;
  t.size = buf ? size : 0;
  t.len = 0;
  if (t.size > 0) t.buf[0] = 0;
  if (!usage) return 0;
  text_put(&t, "Memory Usage Report:\n  Number of allocations: ");
  text_u64(&t, usage->number_allocs);
  text_put(&t, "\n  Bytes in use: ");
  text_bytes(&t, usage->bytes_in_use);
  text_put(&t, "\n  Bytes used for padding: ");
  text_bytes(&t, usage->bytes_padding);
  text_put(&t, "\n  Total bytes reserved: ");
  text_bytes(&t, usage->bytes_reserved);
  text_put(&t, "\n  Usage efficiency: ");
  text_percent(&t, usage->bytes_in_use, usage->bytes_reserved);
  text_put(&t, "\n  Padding overhead: ");
  text_percent(&t, usage->bytes_padding, usage->bytes_in_use);
  text_put(&t, "\n");
  return t.len;
}
