/* SPDX-License-Identifier: MIT */
/* core/profile/profile.c: the timestamp profiler, the per-kernel profiling summary
 * and the profiling text helpers (cubert/profile.h, core/profile/profiler.h; docs/cubecl-mapping.md,
 * "Profiling").
 * Freestanding: memory only at create, time from the injected clock. */
#include "base/internal.h"
#include "base/fmt.h"
#include "cubert/profile.h"
#include "profile/profiler.h"
#include "cubert/driver/arith.h"

#if CUBERT_CONFIG_PROFILING /* else profile_omitted.c (cubert/config.h) */

/* ---- shared helpers ----------------------------------------------------------- */

static cubert_status_t invalid_argument(cubert_error_t *out_error, const char *reason) {
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
}

static cubert_status_t host_out_of_memory(cubert_error_t *out_error, size_t size) {
  uint64_t field = (uint64_t)size;
  return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &field, 1, NULL);
}

static uint64_t u64_add_saturating(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- timestamp profiler ------------------------------------------------------- */

/* One active token: Start(instant) or Error(e) (CubeCL's State). */
typedef struct profiler_slot_t {
  uint64_t id;
  uint64_t start_ns;
  bool failed;
  cubert_error_t error; /* valid when failed */
} profiler_slot_t;

/* Active tokens are kept dense in slots[0 .. active). */
struct cubert_profiler_t {
  cubert_allocator_t allocator;
  size_t alloc_size;
  cubert_profile_clock_t clock;
  uint64_t counter; /* next token id */
  uint32_t capacity;
  uint32_t active;
  profiler_slot_t *slots;
};

cubert_status_t cubert__profiler_create(cubert_allocator_t allocator, cubert_profile_clock_t clock,
                                        uint32_t capacity, cubert_profiler_t **out_profiler,
                                        cubert_error_t *out_error) {
  size_t header, total;
  void *block = NULL;
  cubert_profiler_t *p;
  cubert_status_t st;
  if (!out_profiler) return invalid_argument(out_error, "out_profiler is NULL");
  if (!allocator.fn) return invalid_argument(out_error, "allocator function is NULL");
  if (!clock.now_ns) return invalid_argument(out_error, "clock.now_ns is NULL");
  if (capacity == 0 || capacity > CUBERT_PROFILER_MAX_CAPACITY)
    return invalid_argument(out_error, "profiler capacity out of range");
  st = cubert_size_align_up(sizeof(cubert_profiler_t), 16, &header);
  /* unreachable: st != OK (aligning a struct size cannot overflow) */
  if (st == CUBERT_STATUS_OK)
    st = cubert_size_mul_add((size_t)capacity, sizeof(profiler_slot_t), header, &total);
  /* unreachable: overflow (capacity <= CUBERT_PROFILER_MAX_CAPACITY) */
  if (st != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "profiler size");
  if (cubert_allocator_malloc(allocator, total, 16, &block, NULL) != CUBERT_STATUS_OK)
    return host_out_of_memory(out_error, total);
  p = (cubert_profiler_t *)block;
  p->allocator = allocator;
  p->alloc_size = total;
  p->clock = clock;
  p->counter = 0;
  p->capacity = capacity;
  p->active = 0;
  p->slots = (profiler_slot_t *)(void *)((char *)block + header);
  *out_profiler = p;
  return CUBERT_STATUS_OK;
}

void cubert__profiler_destroy(cubert_profiler_t *profiler) {
  if (!profiler) return;
  cubert_allocator_free(profiler->allocator, profiler, profiler->alloc_size, 16);
}

uint32_t cubert__profiler_active_count(const cubert_profiler_t *profiler) {
  return profiler ? profiler->active : 0;
}

uint32_t cubert__profiler_capacity(const cubert_profiler_t *profiler) {
  return profiler ? profiler->capacity : 0;
}

cubert_status_t cubert__profiler_start(cubert_profiler_t *profiler,
                                       cubert_profiling_token_t *out_token,
                                       cubert_error_t *out_error) {
  profiler_slot_t *slot;
  if (!profiler || !out_token) return invalid_argument(out_error, "profiler or out_token is NULL");
  if (profiler->active >= profiler->capacity) {
    char reason[96];
    cubert_fmt_t f;
    cubert__fmt_initialize(&f, reason, sizeof(reason));
    cubert__fmt_append_str(&f, "too many active profiles: capacity ");
    cubert__fmt_append_u64(&f, profiler->capacity);
    cubert__fmt_append_str(&f, " reached");
    return cubert_error_set(out_error, CUBERT_ERROR_PROFILE_UNKNOWN, NULL, 0, reason);
  }
  slot = &profiler->slots[profiler->active];
  slot->id = profiler->counter;
  slot->start_ns = profiler->clock.now_ns(profiler->clock.self);
  slot->failed = false;
  profiler->counter++;
  profiler->active++;
  out_token->id = slot->id;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__profiler_stop(cubert_profiler_t *profiler, cubert_profiling_token_t token,
                                      cubert_profile_duration_t *out_duration,
                                      cubert_error_t *out_error) {
  uint32_t i;
  profiler_slot_t *slot;
  if (!profiler || !out_duration)
    return invalid_argument(out_error, "profiler or out_duration is NULL");
  for (i = 0; i < profiler->active; i++)
    if (profiler->slots[i].id == token.id) break;
  if (i == profiler->active)
    return cubert_error_set(out_error, CUBERT_ERROR_PROFILE_NOT_REGISTERED, NULL, 0, NULL);
  slot = &profiler->slots[i];
  if (slot->failed) {
    cubert_status_t status = slot->error.status;
    if (out_error) *out_error = slot->error;
    if (status == CUBERT_STATUS_OK) status = CUBERT_STATUS_PROFILE_FAILED; /* never "ok" */
    if (out_error) out_error->status = status;
    /* forget the token (CubeCL removes it before matching its state) */
    profiler->active--;
    if (i != profiler->active) *slot = profiler->slots[profiler->active];
    return status;
  }
  {
    uint64_t start = slot->start_ns;
    uint64_t end = profiler->clock.now_ns(profiler->clock.self);
    if (end < start) end = start;
    out_duration->start_ns = start;
    out_duration->end_ns = end;
  }
  profiler->active--;
  if (i != profiler->active) *slot = profiler->slots[profiler->active];
  return CUBERT_STATUS_OK;
}

static bool kind_is_profile_error(unsigned kind) {
  return kind == CUBERT_ERROR_PROFILE_UNKNOWN || kind == CUBERT_ERROR_PROFILE_NOT_REGISTERED ||
         kind == CUBERT_ERROR_PROFILE_LAUNCH || kind == CUBERT_ERROR_PROFILE_SERVER;
}

static bool kind_is_launch_error(unsigned kind) {
  return kind == CUBERT_ERROR_LAUNCH_COMPILATION || kind == CUBERT_ERROR_LAUNCH_OUT_OF_MEMORY ||
         kind == CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES || kind == CUBERT_ERROR_LAUNCH_UNKNOWN ||
         kind == CUBERT_ERROR_LAUNCH_IO;
}

cubert_status_t cubert__profiler_error(cubert_profiler_t *profiler, const cubert_error_t *error) {
  cubert_error_t stored;
  uint32_t i;
  if (!profiler || !error || error->depth == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
  stored = *error;
  if (!kind_is_profile_error(stored.chain[0])) {
    cubert_error_wrap(&stored, kind_is_launch_error(stored.chain[0]) ? CUBERT_ERROR_PROFILE_LAUNCH
                                                                     : CUBERT_ERROR_PROFILE_SERVER);
  }
  for (i = 0; i < profiler->active; i++) {
    profiler->slots[i].failed = true;
    profiler->slots[i].error = stored;
  }
  return CUBERT_STATUS_OK;
}

/* ---- profiling level ------------------------------------------------------------ */

bool cubert_profile_level_is_valid(cubert_profile_level_t level) {
  return (unsigned)level <= (unsigned)CUBERT_PROFILE_LEVEL_FULL;
}

bool cubert_profile_level_is_timed(cubert_profile_level_t level) {
  return level == CUBERT_PROFILE_LEVEL_BASIC || level == CUBERT_PROFILE_LEVEL_MEDIUM ||
         level == CUBERT_PROFILE_LEVEL_FULL;
}

const char *cubert_profile_level_name(cubert_profile_level_t level) {
  switch (level) {
    case CUBERT_PROFILE_LEVEL_OFF: return "off";
    case CUBERT_PROFILE_LEVEL_EXECUTION_ONLY: return "execution-only";
    case CUBERT_PROFILE_LEVEL_BASIC: return "basic";
    case CUBERT_PROFILE_LEVEL_MEDIUM: return "medium";
    case CUBERT_PROFILE_LEVEL_FULL: return "full";
    default: return "unknown";
  }
}

/* ---- text helpers ----------------------------------------------------------------- */

/* Number of characters in s[0..n): bytes that are not UTF-8 continuation bytes. */
static size_t text_width(const char *s, size_t n) {
  size_t i, w = 0;
  for (i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xC0u) != 0x80u) w++;
  return w;
}

static void put_spaces(cubert_fmt_t *f, size_t n) {
  while (n-- > 0) cubert__fmt_append_char(f, ' ');
}

/* Rust's fmt_decimal without precision: integer, then '.' and the fraction's
 * digits down to the last non-zero one, then the unit. */
static void put_decimal(cubert_fmt_t *f, uint64_t integer, uint64_t fraction, uint64_t divisor,
                        const char *unit) {
  cubert__fmt_append_u64(f, integer);
  if (fraction > 0) {
    cubert__fmt_append_char(f, '.');
    /* unreachable: divisor 0 with fraction > 0 (the last digit's divisor is 1, leaving 0) */
    while (fraction > 0 && divisor > 0) {
      cubert__fmt_append_char(f, (char)('0' + (int)(fraction / divisor)));
      fraction %= divisor;
      divisor /= 10;
    }
  }
  cubert__fmt_append_str(f, unit);
}

/* Rust's `{:?}` of Duration::from_nanos(ns). */
static void put_duration(cubert_fmt_t *f, uint64_t ns) {
  const uint64_t nanos_per_sec = 1000000000u;
  uint64_t secs = ns / nanos_per_sec, sub = ns % nanos_per_sec;
  if (secs > 0)
    put_decimal(f, secs, sub, 100000000u, "s");
  else if (sub >= 1000000u)
    put_decimal(f, sub / 1000000u, sub % 1000000u, 100000u, "ms");
  else if (sub >= 1000u)
    put_decimal(f, sub / 1000u, sub % 1000u, 100u, "\xC2\xB5s"); /* U+00B5 MICRO SIGN */
  else
    put_decimal(f, sub, 0, 1, "ns");
}

size_t cubert_profile_format_duration(uint64_t ns, char *buf, size_t size) {
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, buf, size);
  put_duration(&f, ns);
  return cubert__fmt_length(&f);
}

static bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Balanced formatting of the part of a name before its first '<', s[0..n):
 * the last "::" segment (matches found left to right, as str::split finds
 * them), trimmed, without any '>'. */
static void put_type_head(cubert_fmt_t *f, const char *s, size_t n) {
  size_t i = 0, start = 0, end = n;
  while (i + 1 < n) {
    if (s[i] == ':' && s[i + 1] == ':') {
      i += 2;
      start = i;
    } else {
      i++;
    }
  }
  while (start < end && is_ascii_space(s[start])) start++;
  while (end > start && is_ascii_space(s[end - 1])) end--;
  for (i = start; i < end; i++)
    if (s[i] != '>') cubert__fmt_append_char(f, s[i]);
}

/* Index of the first c in s[from..to), or `to`. */
static size_t find_char(const char *s, size_t from, size_t to, char c) {
  while (from < to && s[from] != c) from++;
  return from;
}

/* Index of the first ", " in s[from..to), or `to`. */
static size_t find_separator(const char *s, size_t from, size_t to) {
  while (from + 1 < to && !(s[from] == ',' && s[from + 1] == ' ')) from++;
  return from + 1 < to ? from : to;
}

/* CubeCL formats recursively: format(s) = head(s) + for each piece of
 * rest(s).split(", "): " | " + format(piece). A piece holds no ", ", so
 * its own rest splits into one piece and format(piece) = head(piece)
 * [+ " | " + format(rest(piece))]: a loop. Only the top level splits. */
static void put_type_name(cubert_fmt_t *f, const char *name) {
  size_t n = cubert__strlen(name);
  size_t lt = find_char(name, 0, n, '<');
  size_t p;
  put_type_head(f, name, lt);
  if (lt == n) return;
  p = lt + 1;
  for (;;) {
    size_t q = find_separator(name, p, n);
    size_t c = p;
    cubert__fmt_append_str(f, " | ");
    for (;;) {
      size_t l = find_char(name, c, q, '<');
      put_type_head(f, name + c, l - c);
      if (l == q) break;
      cubert__fmt_append_str(f, " | ");
      c = l + 1;
    }
    if (q == n) break;
    p = q + 2;
  }
}

size_t cubert_profile_format_type_name(const char *name, char *buf, size_t size) {
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, buf, size);
  if (name) put_type_name(&f, name);
  return cubert__fmt_length(&f);
}

size_t cubert_profile_format_launch(cubert_profile_level_t level, const char *name,
                                    uint64_t duration_ns, char *buf, size_t size) {
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, buf, size);
  if (level == CUBERT_PROFILE_LEVEL_MEDIUM || level == CUBERT_PROFILE_LEVEL_FULL) {
    char text[32];
    size_t len = cubert_profile_format_duration(duration_ns, text, sizeof(text));
    size_t width = text_width(text, len);
    cubert__fmt_append_str(&f, "| ");
    cubert__fmt_append_str(&f, text);
    if (width < 10) put_spaces(&f, 10 - width);
    cubert__fmt_append_str(&f, " | ");
    cubert__fmt_append_str(&f, name);
  } else if (level == CUBERT_PROFILE_LEVEL_EXECUTION_ONLY) {
    cubert__fmt_append_str(&f, "Executing ");
    cubert__fmt_append_str(&f, name);
  }
  return cubert__fmt_length(&f);
}

/* ---- per-kernel summary ------------------------------------------------------------- */

typedef struct summary_row_t {
  uint64_t duration_ns;
  uint64_t count;
  size_t name_offset; /* into names */
  size_t name_len;
  uint32_t hash;
} summary_row_t;

struct cubert_profile_summary_t {
  cubert_allocator_t allocator;
  size_t alloc_size;
  cubert_profile_level_t level;
  uint32_t max_names;
  uint32_t row_count; /* rows in registration order */
  size_t name_bytes;
  size_t name_used;
  uint64_t other_duration_ns;
  uint64_t other_count;
  summary_row_t *rows;
  char *names;
};

cubert_status_t cubert_profile_summary_create(cubert_allocator_t allocator,
                                              cubert_profile_level_t level, uint32_t max_names,
                                              size_t name_bytes,
                                              cubert_profile_summary_t **out_summary,
                                              cubert_error_t *out_error) {
  size_t header, rows_end, total;
  void *block = NULL;
  cubert_profile_summary_t *s;
  cubert_status_t st;
  if (!out_summary) return invalid_argument(out_error, "out_summary is NULL");
  if (!allocator.fn) return invalid_argument(out_error, "allocator function is NULL");
  if (!cubert_profile_level_is_valid(level))
    return invalid_argument(out_error, "invalid profile level");
  if (max_names == 0 || max_names > CUBERT_PROFILE_SUMMARY_MAX_NAMES)
    return invalid_argument(out_error, "max_names out of range");
  if (name_bytes == 0 || name_bytes > CUBERT_PROFILE_SUMMARY_MAX_NAME_BYTES)
    return invalid_argument(out_error, "name_bytes out of range");
  st = cubert_size_align_up(sizeof(cubert_profile_summary_t), 16, &header);
  /* unreachable: st != OK (aligning a struct size cannot overflow) */
  if (st == CUBERT_STATUS_OK)
    st = cubert_size_mul_add((size_t)max_names, sizeof(summary_row_t), header, &rows_end);
  /* unreachable: st != OK (max_names <= CUBERT_PROFILE_SUMMARY_MAX_NAMES) */
  if (st == CUBERT_STATUS_OK) st = cubert_size_add(rows_end, name_bytes, &total);
  /* unreachable: overflow (max_names and name_bytes are bounded: at most ~17 MiB) */
  if (st != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "summary size");
  if (cubert_allocator_malloc(allocator, total, 16, &block, NULL) != CUBERT_STATUS_OK)
    return host_out_of_memory(out_error, total);
  s = (cubert_profile_summary_t *)block;
  s->allocator = allocator;
  s->alloc_size = total;
  s->level = level;
  s->max_names = max_names;
  s->row_count = 0;
  s->name_bytes = name_bytes;
  s->name_used = 0;
  s->other_duration_ns = 0;
  s->other_count = 0;
  s->rows = (summary_row_t *)(void *)((char *)block + header);
  s->names = (char *)block + rows_end;
  *out_summary = s;
  return CUBERT_STATUS_OK;
}

void cubert_profile_summary_destroy(cubert_profile_summary_t *summary) {
  if (!summary) return;
  cubert_allocator_free(summary->allocator, summary, summary->alloc_size, 16);
}

cubert_profile_level_t cubert_profile_summary_level(const cubert_profile_summary_t *summary) {
  return summary ? summary->level : CUBERT_PROFILE_LEVEL_OFF;
}

uint32_t cubert_profile_summary_name_count(const cubert_profile_summary_t *summary) {
  return summary ? summary->row_count : 0;
}

bool cubert_profile_summary_is_empty(const cubert_profile_summary_t *summary) {
  return !summary || (summary->row_count == 0 && summary->other_count == 0);
}

void cubert_profile_summary_reset(cubert_profile_summary_t *summary) {
  if (!summary) return;
  summary->row_count = 0;
  summary->name_used = 0;
  summary->other_duration_ns = 0;
  summary->other_count = 0;
}

void cubert_profile_summary_other(const cubert_profile_summary_t *summary,
                                  uint64_t *out_duration_ns, uint64_t *out_count) {
  if (out_duration_ns) *out_duration_ns = summary ? summary->other_duration_ns : 0;
  if (out_count) *out_count = summary ? summary->other_count : 0;
}

/* Length of the first line of name (the bytes before the first '\n'). */
static size_t first_line_length(const char *name) {
  size_t n = 0;
  while (name[n] != '\0' && name[n] != '\n') n++;
  return n;
}

/* FNV-1a 32 of s[0..n): a quick filter before comparing bytes. */
static uint32_t name_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  size_t i;
  for (i = 0; i < n; i++) {
    h ^= (uint32_t)(unsigned char)s[i];
    h *= 16777619u;
  }
  return h;
}

static bool bytes_equal(const char *a, const char *b, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* Row index of the first line name[0..n), or row_count when absent. */
static uint32_t summary_find(const cubert_profile_summary_t *s, const char *name, size_t n,
                             uint32_t hash) {
  uint32_t i;
  for (i = 0; i < s->row_count; i++) {
    const summary_row_t *r = &s->rows[i];
    if (r->hash == hash && r->name_len == n && bytes_equal(s->names + r->name_offset, name, n))
      return i;
  }
  return s->row_count;
}

static void add_launch(uint64_t *duration, uint64_t *count, uint64_t duration_ns, bool timed) {
  /* unreachable: in tests (2^64 - 1 launches of one name) */
  if (*count != UINT64_MAX) (*count)++;
  if (timed) *duration = u64_add_saturating(*duration, duration_ns);
}

cubert_status_t cubert_profile_summary_record(cubert_profile_summary_t *summary, const char *name,
                                              uint64_t duration_ns, cubert_error_t *out_error) {
  size_t n;
  uint32_t hash, i;
  bool timed;
  if (!summary) return invalid_argument(out_error, "cubert_profile_summary_record: summary is NULL");
  if (!name) return invalid_argument(out_error, "cubert_profile_summary_record: name is NULL");
  if (summary->level == CUBERT_PROFILE_LEVEL_OFF) return CUBERT_STATUS_OK;
  timed = cubert_profile_level_is_timed(summary->level);
  n = first_line_length(name);
  hash = name_hash(name, n);
  i = summary_find(summary, name, n, hash);
  if (i == summary->row_count) {
    summary_row_t *r;
    if (summary->row_count == summary->max_names ||
        n > summary->name_bytes - summary->name_used) {
      add_launch(&summary->other_duration_ns, &summary->other_count, duration_ns, timed);
      return CUBERT_STATUS_OK;
    }
    r = &summary->rows[summary->row_count++];
    r->duration_ns = 0;
    r->count = 0;
    r->name_offset = summary->name_used;
    r->name_len = n;
    r->hash = hash;
    if (n) cubert_memcpy(summary->names + summary->name_used, name, n);
    summary->name_used += n;
  }
  add_launch(&summary->rows[i].duration_ns, &summary->rows[i].count, duration_ns, timed);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_profile_summary_lookup(const cubert_profile_summary_t *summary,
                                              const char *name, uint64_t *out_duration_ns,
                                              uint64_t *out_count, cubert_error_t *out_error) {
  size_t n;
  uint32_t i;
  if (!summary) return invalid_argument(out_error, "cubert_profile_summary_lookup: summary is NULL");
  if (!name) return invalid_argument(out_error, "cubert_profile_summary_lookup: name is NULL");
  n = first_line_length(name);
  i = summary_find(summary, name, n, name_hash(name, n));
  if (i == summary->row_count)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "cubert_profile_summary_lookup: no launch of this name recorded");
  if (out_duration_ns) *out_duration_ns = summary->rows[i].duration_ns;
  if (out_count) *out_count = summary->rows[i].count;
  return CUBERT_STATUS_OK;
}

/* 100 * part / total rounded down (part <= total), 0 when total is 0;
 * exact unless 100 * part overflows, then within 1 of it. At most 100. */
static uint64_t ratio_percent(uint64_t part, uint64_t total) {
  uint64_t r;
  if (total == 0) return 0;
  /* unreachable: false (parts are counts or microseconds: far below UINT64_MAX / 100) */
  if (part <= UINT64_MAX / 100)
    r = part * 100 / total;
  else
    r = part / (total / 100); /* total >= part > UINT64_MAX / 100, so total / 100 >= 1 */
  return r > 100 ? 100 : r;
}

/* One table row as text: name, duration, count, ratio. */
typedef struct table_cells_t {
  const char *name;
  size_t name_len;
  char duration[32];
  size_t duration_len;
  char count[24];
  size_t count_len;
  char ratio[24];
  size_t ratio_len;
} table_cells_t;

typedef struct table_widths_t {
  size_t name, duration, count, ratio;
} table_widths_t;

typedef struct table_t {
  const cubert_profile_summary_t *s;
  bool timed;
  uint64_t total_duration_ns;
  uint64_t total_count;
} table_t;

static void cells_fill(const table_t *t, table_cells_t *c, const char *name, size_t name_len,
                       uint64_t duration_ns, uint64_t count) {
  cubert_fmt_t f;
  uint64_t ratio;
  c->name = name;
  c->name_len = name_len;
  c->duration_len = cubert_profile_format_duration(duration_ns, c->duration, sizeof(c->duration));
  cubert__fmt_initialize(&f, c->count, sizeof(c->count));
  cubert__fmt_append_u64(&f, count);
  c->count_len = cubert__fmt_length(&f);
  if (t->timed)
    ratio = ratio_percent(duration_ns / 1000u, t->total_duration_ns / 1000u);
  else
    ratio = ratio_percent(count, t->total_count);
  cubert__fmt_initialize(&f, c->ratio, sizeof(c->ratio));
  cubert__fmt_append_u64(&f, ratio);
  cubert__fmt_append_str(&f, " %");
  c->ratio_len = cubert__fmt_length(&f);
}

static void widths_include(table_widths_t *w, const table_cells_t *c) {
  w->name = CUBERT_MAX(w->name, text_width(c->name, c->name_len));
  w->duration = CUBERT_MAX(w->duration, text_width(c->duration, c->duration_len));
  /* unreachable: a count wider than its header (13 digits: 10^12 launches) */
  w->count = CUBERT_MAX(w->count, text_width(c->count, c->count_len));
  w->ratio = CUBERT_MAX(w->ratio, text_width(c->ratio, c->ratio_len));
}

static void put_cell(cubert_fmt_t *f, const char *prefix, const char *text, size_t len,
                     size_t width) {
  size_t w = text_width(text, len);
  cubert__fmt_append_str(f, prefix);
  cubert__fmt_append_strn(f, text, len);
  if (w < width) put_spaces(f, width - w);
}

static void put_row(cubert_fmt_t *f, const table_t *t, const table_widths_t *w,
                    const table_cells_t *c) {
  put_cell(f, "| ", c->name, c->name_len, w->name);
  if (t->timed) put_cell(f, " | ", c->duration, c->duration_len, w->duration);
  put_cell(f, " | ", c->count, c->count_len, w->count);
  put_cell(f, " | ", c->ratio, c->ratio_len, w->ratio);
  cubert__fmt_append_str(f, " |\n");
}

static void put_rule(cubert_fmt_t *f, const char *glyph, size_t length) {
  size_t i;
  cubert__fmt_append_char(f, '|');
  for (i = 0; i < length; i++) cubert__fmt_append_str(f, glyph);
  cubert__fmt_append_str(f, "| \n");
}

static uint64_t row_key(const table_t *t, uint32_t i) {
  return t->timed ? t->s->rows[i].duration_ns : t->s->rows[i].count;
}

/* Whether row a prints before row b: larger key first, then registration order. */
static bool row_before(const table_t *t, uint32_t a, uint32_t b) {
  uint64_t ka = row_key(t, a), kb = row_key(t, b);
  return ka > kb || (ka == kb && a < b);
}

/* The row printed right after `prev` (UINT32_MAX: the first), or UINT32_MAX
 * when none is left. Selection without scratch memory: O(rows). */
static uint32_t row_next(const table_t *t, uint32_t prev) {
  uint32_t i, best = UINT32_MAX;
  for (i = 0; i < t->s->row_count; i++) {
    if (prev != UINT32_MAX && !row_before(t, prev, i)) continue;
    if (best == UINT32_MAX || row_before(t, i, best)) best = i;
  }
  return best;
}

static const char k_rule_top[] = "\xE2\x8E\xBA";    /* U+23BA ⎺ */
static const char k_rule_middle[] = "\xE2\x8E\xBC"; /* U+23BC ⎼ */
static const char k_rule_bottom[] = "\xE2\x8E\xAF"; /* U+23AF ⎯ */

static void put_table(cubert_fmt_t *f, const cubert_profile_summary_t *s) {
  static const char other_name[] = CUBERT_PROFILE_SUMMARY_OTHER_NAME;
  table_t t;
  table_widths_t w;
  table_cells_t c;
  uint32_t i;
  size_t rule;
  t.s = s;
  t.timed = cubert_profile_level_is_timed(s->level);
  t.total_duration_ns = s->other_duration_ns;
  t.total_count = s->other_count;
  for (i = 0; i < s->row_count; i++) {
    t.total_duration_ns = u64_add_saturating(t.total_duration_ns, s->rows[i].duration_ns);
    t.total_count = u64_add_saturating(t.total_count, s->rows[i].count);
  }
  /* Column widths: headers, every row, the other row and the Total row. */
  w.name = 4;      /* "Name" */
  w.duration = 8;  /* "Duration" */
  w.count = 12;    /* "Num Computed" */
  w.ratio = 5;     /* "Ratio" */
  for (i = 0; i < s->row_count; i++) {
    const summary_row_t *r = &s->rows[i];
    cells_fill(&t, &c, s->names + r->name_offset, r->name_len, r->duration_ns, r->count);
    widths_include(&w, &c);
  }
  if (s->other_count > 0) {
    cells_fill(&t, &c, other_name, sizeof(other_name) - 1, s->other_duration_ns, s->other_count);
    widths_include(&w, &c);
  }
  cells_fill(&t, &c, "Total", 5, t.total_duration_ns, t.total_count);
  cubert__strlcpy(c.ratio, "100 %", sizeof(c.ratio));
  c.ratio_len = 5;
  widths_include(&w, &c);
  rule = t.timed ? w.name + w.duration + w.count + w.ratio + 11 : w.name + w.count + w.ratio + 8;

  put_rule(f, k_rule_top, rule);
  c.name = "Name";
  c.name_len = 4;
  cubert__strlcpy(c.duration, "Duration", sizeof(c.duration));
  c.duration_len = 8;
  cubert__strlcpy(c.count, "Num Computed", sizeof(c.count));
  c.count_len = 12;
  cubert__strlcpy(c.ratio, "Ratio", sizeof(c.ratio));
  c.ratio_len = 5;
  put_row(f, &t, &w, &c);
  put_rule(f, k_rule_middle, rule);
  for (i = row_next(&t, UINT32_MAX); i != UINT32_MAX; i = row_next(&t, i)) {
    const summary_row_t *r = &s->rows[i];
    cells_fill(&t, &c, s->names + r->name_offset, r->name_len, r->duration_ns, r->count);
    put_row(f, &t, &w, &c);
  }
  if (s->other_count > 0) {
    cells_fill(&t, &c, other_name, sizeof(other_name) - 1, s->other_duration_ns, s->other_count);
    put_row(f, &t, &w, &c);
  }
  put_rule(f, k_rule_middle, rule);
  cells_fill(&t, &c, "Total", 5, t.total_duration_ns, t.total_count);
  cubert__strlcpy(c.ratio, "100 %", sizeof(c.ratio));
  c.ratio_len = 5;
  put_row(f, &t, &w, &c);
  put_rule(f, k_rule_bottom, rule);
}

size_t cubert_profile_summary_format(const cubert_profile_summary_t *summary, char *buf,
                                     size_t size) {
  cubert_fmt_t f;
  cubert__fmt_initialize(&f, buf, size);
  if (summary && summary->level != CUBERT_PROFILE_LEVEL_OFF &&
      !cubert_profile_summary_is_empty(summary))
    put_table(&f, summary);
  return cubert__fmt_length(&f);
}

size_t cubert_profile_summary_flush(cubert_profile_summary_t *summary, char *buf, size_t size) {
  size_t n = cubert_profile_summary_format(summary, buf, size);
  cubert_profile_summary_reset(summary);
  return n;
}

#endif /* CUBERT_CONFIG_PROFILING */
