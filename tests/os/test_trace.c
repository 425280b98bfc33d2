/* SPDX-License-Identifier: MIT */
/* The timeline trace (cubert/trace.h): the file parses as JSON (a small
 * parser here), every "B" has its "E" on its track, timestamps never go
 * back on a track, every flow start has its end, a known program (two
 * streams, launches, copies, a cross-stream wait, a sync) gives the
 * expected events, a full ring drops and counts, CUBERT_TRACE writes the
 * file at exit, and no trace writes nothing. Each test runs in its own
 * process: the process-wide recorder starts fresh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counting_allocator.h"
#include "test.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert/trace.h"
#include "cubert_kernels.h"

/* ---- a small JSON parser: values into a tree ---------------------------------------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;

typedef struct jval_t {
  jtype_t type;
  double num;
  char *str;              /* J_STR */
  struct jval_t **items;  /* J_ARR values, J_OBJ values */
  char **keys;            /* J_OBJ */
  size_t count, capacity;
} jval_t;

typedef struct jparser_t {
  const char *p;
  const char *error;
} jparser_t;

static void jfree(jval_t *v) {
  size_t i;
  if (!v) return;
  for (i = 0; i < v->count; i++) {
    jfree(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  free(v);
}

static void jskip(jparser_t *j) {
  while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t') j->p++;
}

static jval_t *jnew(jtype_t t) {
  jval_t *v = (jval_t *)calloc(1, sizeof(jval_t));
  if (v) v->type = t;
  return v;
}

static int jpush(jval_t *v, char *key, jval_t *item) {
  if (v->count == v->capacity) {
    size_t cap = v->capacity ? v->capacity * 2 : 8;
    jval_t **items = (jval_t **)realloc(v->items, cap * sizeof(*items));
    if (!items) return 0;
    v->items = items;
    if (v->type == J_OBJ) {
      char **keys = (char **)realloc(v->keys, cap * sizeof(*keys));
      if (!keys) return 0;
      v->keys = keys;
    }
    v->capacity = cap;
  }
  if (v->type == J_OBJ) v->keys[v->count] = key;
  v->items[v->count++] = item;
  return 1;
}

static char *jstring(jparser_t *j) {
  size_t cap = 32, n = 0;
  char *s;
  if (*j->p != '"') return j->error = "expected a string", NULL;
  j->p++;
  s = (char *)malloc(cap);
  while (s && *j->p != '"') {
    char c = *j->p;
    if (c == '\0' || (unsigned char)c < 0x20) {
      free(s);
      return j->error = "unterminated string or control character", NULL;
    }
    if (c == '\\') {
      j->p++;
      switch (*j->p) {
        case '"': case '\\': case '/': c = *j->p; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
          int k;
          for (k = 1; k <= 4; k++)
            if (!strchr("0123456789abcdefABCDEF", j->p[k]) || !j->p[k]) {
              free(s);
              return j->error = "bad \\u escape", NULL;
            }
          c = '?';
          j->p += 4;
          break;
        }
        default: free(s); return j->error = "bad escape", NULL;
      }
    }
    if (n + 2 > cap) {
      char *t = (char *)realloc(s, cap *= 2);
      if (!t) break;
      s = t;
    }
    s[n++] = c;
    j->p++;
  }
  if (!s) return j->error = "out of memory", NULL;
  s[n] = '\0';
  j->p++;
  return s;
}

static jval_t *jvalue(jparser_t *j, int depth);

static jval_t *jcontainer(jparser_t *j, int depth, int object) {
  jval_t *v = jnew(object ? J_OBJ : J_ARR);
  char close = object ? '}' : ']';
  j->p++;
  jskip(j);
  if (*j->p == close) {
    j->p++;
    return v;
  }
  for (;;) {
    char *key = NULL;
    jval_t *item;
    jskip(j);
    if (object) {
      key = jstring(j);
      if (!key) break;
      jskip(j);
      if (*j->p != ':') {
        free(key);
        j->error = "expected ':'";
        break;
      }
      j->p++;
    }
    item = jvalue(j, depth + 1);
    if (!item || !jpush(v, key, item)) {
      free(key);
      jfree(item);
      break;
    }
    jskip(j);
    if (*j->p == ',') {
      j->p++;
      continue;
    }
    if (*j->p == close) {
      j->p++;
      return v;
    }
    j->error = object ? "expected ',' or '}'" : "expected ',' or ']'";
    break;
  }
  if (!j->error) j->error = "bad container";
  jfree(v);
  return NULL;
}

static jval_t *jvalue(jparser_t *j, int depth) {
  jval_t *v;
  jskip(j);
  if (depth > 64) return j->error = "too deep", NULL;
  if (*j->p == '{' || *j->p == '[') return jcontainer(j, depth, *j->p == '{');
  if (*j->p == '"') {
    char *s = jstring(j);
    if (!s) return NULL;
    v = jnew(J_STR);
    v->str = s;
    return v;
  }
  if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "false", 5) == 0) {
    v = jnew(J_BOOL);
    v->num = *j->p == 't';
    j->p += *j->p == 't' ? 4 : 5;
    return v;
  }
  if (strncmp(j->p, "null", 4) == 0) {
    j->p += 4;
    return jnew(J_NULL);
  }
  if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) {
    /* JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *s = j->p;
    char *end;
    if (*j->p == '-') j->p++;
    if (*j->p == '0')
      j->p++;
    else if (*j->p >= '1' && *j->p <= '9')
      while (*j->p >= '0' && *j->p <= '9') j->p++;
    else
      return j->error = "bad number", NULL;
    if (*j->p == '.') {
      j->p++;
      if (!(*j->p >= '0' && *j->p <= '9')) return j->error = "bad fraction", NULL;
      while (*j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (*j->p == 'e' || *j->p == 'E') {
      j->p++;
      if (*j->p == '+' || *j->p == '-') j->p++;
      if (!(*j->p >= '0' && *j->p <= '9')) return j->error = "bad exponent", NULL;
      while (*j->p >= '0' && *j->p <= '9') j->p++;
    }
    v = jnew(J_NUM);
    v->num = strtod(s, &end);
    return v;
  }
  return j->error = "unexpected character", NULL;
}

/* Parse a whole document (nothing but whitespace after the value). */
static jval_t *jparse(const char *text, const char **out_error) {
  jparser_t j;
  jval_t *v;
  j.p = text;
  j.error = NULL;
  v = jvalue(&j, 0);
  if (v) {
    jskip(&j);
    if (*j.p) {
      jfree(v);
      v = NULL;
      j.error = "trailing characters";
    }
  }
  *out_error = j.error;
  return v;
}

static jval_t *jget(const jval_t *o, const char *key) {
  size_t i;
  if (!o || o->type != J_OBJ) return NULL;
  for (i = 0; i < o->count; i++)
    if (strcmp(o->keys[i], key) == 0) return o->items[i];
  return NULL;
}

static const char *jstr(const jval_t *o, const char *key) {
  jval_t *v = jget(o, key);
  return v && v->type == J_STR ? v->str : "";
}

static double jnum(const jval_t *o, const char *key) {
  jval_t *v = jget(o, key);
  return v && v->type == J_NUM ? v->num : -1.0;
}

TEST(trace_json_parser_self_check) {
  static const char *const good[] = {"{}", "[]", "{\"a\":[1,-2.5e3,true,false,null,\"x\\\"\\u00e9\"]}",
                                     " [ 0 , 0.5 ] "};
  static const char *const bad[] = {"", "{", "[1,]", "{\"a\" 1}", "[01]", "[1.]", "\"\\x\"",
                                    "[1] x", "{\"a\":}", "[\"\n\"]", "nul"};
  const char *error;
  size_t i;
  for (i = 0; i < sizeof good / sizeof good[0]; i++) {
    jval_t *v = jparse(good[i], &error);
    CHECK_MSG(v != NULL, "%s: %s", good[i], error);
    jfree(v);
  }
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    jval_t *v = jparse(bad[i], &error);
    CHECK_MSG(v == NULL, "accepted: %s", bad[i]);
  }
}

/* ---- the trace file's checks ------------------------------------------------------------- */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *text;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = (char *)calloc(1, (size_t)n + 1);
  if (n > 0 && fread(text, 1, (size_t)n, f) != (size_t)n) text[0] = '\0';
  fclose(f);
  return text;
}

typedef struct track_t {
  double pid, tid, last_ts;
  const char *stack[64];
  int depth;
} track_t;

/* Parse `path` and check the invariants (flows: every flow start has its
 * end, not so once a full ring dropped one side); returns the document
 * (jfree it). */
static jval_t *load_and_check(const char *path, int flows) {
  char *text = slurp(path);
  const char *error = NULL;
  jval_t *doc, *events;
  track_t tracks[64];
  size_t ntracks = 0, i, k;
  CHECK_MSG(text != NULL, "no file %s", path);
  doc = jparse(text, &error);
  CHECK_MSG(doc != NULL, "%s does not parse: %s", path, error);
  free(text);
  CHECK(doc->type == J_OBJ);
  events = jget(doc, "traceEvents");
  CHECK(events && events->type == J_ARR);
  CHECK(jget(jget(doc, "otherData"), "dropped_events") != NULL);
  for (i = 0; i < events->count; i++) {
    const jval_t *e = events->items[i];
    const char *ph = jstr(e, "ph");
    track_t *t = NULL;
    double ts;
    CHECK(e->type == J_OBJ && strlen(ph) == 1);
    if (ph[0] == 'M') continue;
    ts = jnum(e, "ts");
    CHECK_MSG(ts >= 0.0, "event %u without ts", (unsigned)i);
    for (k = 0; k < ntracks; k++)
      if (tracks[k].pid == jnum(e, "pid") && tracks[k].tid == jnum(e, "tid")) t = &tracks[k];
    if (!t) {
      CHECK(ntracks < 64);
      t = &tracks[ntracks++];
      memset(t, 0, sizeof(*t));
      t->pid = jnum(e, "pid");
      t->tid = jnum(e, "tid");
    }
    CHECK_MSG(ts >= t->last_ts, "track %g/%g goes back: %f after %f", t->pid, t->tid, ts,
              t->last_ts);
    t->last_ts = ts;
    if (ph[0] == 'B') {
      CHECK(t->depth < 64);
      t->stack[t->depth++] = jstr(e, "name");
    } else if (ph[0] == 'E') {
      CHECK_MSG(t->depth > 0, "an E without its B on track %g/%g", t->pid, t->tid);
      t->depth--;
      CHECK_MSG(strcmp(t->stack[t->depth], jstr(e, "name")) == 0, "E %s closes B %s",
                jstr(e, "name"), t->stack[t->depth]);
    } else {
      CHECK_MSG(strchr("isf", ph[0]) != NULL, "unexpected ph %s", ph);
    }
  }
  for (k = 0; k < ntracks; k++)
    CHECK_MSG(tracks[k].depth == 0, "a B without its E on track %g/%g", tracks[k].pid,
              tracks[k].tid);
  /* every flow start has one end and the other way round */
  for (i = 0; flows && i < events->count; i++) {
    const char *ph = jstr(events->items[i], "ph");
    if (ph[0] == 's' || ph[0] == 'f') {
      int found = 0;
      for (k = 0; k < events->count; k++) {
        const char *ph2 = jstr(events->items[k], "ph");
        if (ph2[0] == (ph[0] == 's' ? 'f' : 's') &&
            strcmp(jstr(events->items[k], "id"), jstr(events->items[i], "id")) == 0)
          found++;
      }
      CHECK_MSG(found == 1, "flow %s %s has %d ends", ph, jstr(events->items[i], "id"), found);
    }
  }
  return doc;
}

/* Events of phase ph (any when NULL), category cat and a name containing
 * `name` (any when NULL) on track tid (any when < 0). */
static int count_events(const jval_t *doc, const char *ph, const char *cat, const char *name,
                        double tid) {
  const jval_t *events = jget(doc, "traceEvents");
  size_t i;
  int n = 0;
  for (i = 0; i < events->count; i++) {
    const jval_t *e = events->items[i];
    if (ph && strcmp(jstr(e, "ph"), ph) != 0) continue;
    if (cat && strcmp(jstr(e, "cat"), cat) != 0) continue;
    if (name && !strstr(jstr(e, "name"), name)) continue;
    if (tid >= 0 && jnum(e, "tid") != tid) continue;
    n++;
  }
  return n;
}

/* The flow id of the first event matching (ph "s"/"f" right after it). */
static const char *flow_after(const jval_t *doc, const char *cat, const char *name, double tid) {
  const jval_t *events = jget(doc, "traceEvents");
  size_t i;
  for (i = 0; i + 1 < events->count; i++) {
    const jval_t *e = events->items[i];
    if (strcmp(jstr(e, "ph"), "B") == 0 && strcmp(jstr(e, "cat"), cat) == 0 &&
        strcmp(jstr(e, "name"), name) == 0 && jnum(e, "tid") == tid) {
      const char *ph = jstr(events->items[i + 1], "ph");
      if (ph[0] == 's' || ph[0] == 'f') return jstr(events->items[i + 1], "id");
    }
  }
  return "";
}

/* ---- the known program ---------------------------------------------------------------------- */

#define N (4u * CK_BLOCK)

/* Stream 1: upload a, b; sum = a + b (launches times). Stream 2: out = 2 *
 * sum + b (it reads what stream 1 wrote: a cross-stream wait), read out
 * back; sync. Returns 1 when the results are right. */
static int run_program(cubert_allocator_t a, uint32_t mode, uint32_t device_index, int launches) {
  cubert_cpu_options_t o;
  cubert_client_t *s1 = NULL, *s2 = NULL;
  cubert_handle_t ha, hb, hsum, hout;
  cubert_binding_t bufs[3];
  uint64_t scalars[1];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_BLOCK);
  cubert_error_t err;
  float host[N], out[N];
  uint32_t i;
  int ok = 1;
  for (i = 0; i < N; i++) host[i] = (float)i;
  cubert_cpu_options_initialize(&o);
  o.device.index = device_index;
  o.workers = 2;
  o.mode = mode;
  o.seed = 1;
  CHECK_OK(cubert_cpu_client_create(a, &o, &s1, &err));
  CHECK_OK(cubert_client_clone(s1, &s2, &err));
  cubert_client_set_stream(s1, 1);
  cubert_client_set_stream(s2, 2);
  CHECK_OK(cubert_client_create_from_slice(s1, host, sizeof host, &ha, &err));
  CHECK_OK(cubert_client_create_from_slice(s1, host, sizeof host, &hb, &err));
  CHECK_OK(cubert_client_empty(s1, sizeof host, &hsum, &err));
  CHECK_OK(cubert_client_empty(s2, sizeof host, &hout, &err));
  bufs[0] = ha;
  bufs[1] = hb;
  bufs[2] = hsum;
  cubert_launch_arguments_initialize(&args);
  args.buffers = bufs;
  args.buffer_count = 3;
  for (i = 0; i < (uint32_t)launches; i++)
    CHECK_OK(cubert_client_launch(s1, &ck_add_f32_kernel, &count, &args, &err));
  bufs[0] = hsum;
  bufs[1] = hb;
  bufs[2] = hout;
  scalars[0] = cubert_kernel_f32_bits(2.0f);
  args.scalars = scalars;
  args.scalar_count = 1;
  CHECK_OK(cubert_client_launch(s2, &ck_axpy_f32_kernel, &count, &args, &err));
  CHECK_OK(cubert_client_read_one(s2, &hout, out, sizeof out, &err));
  CHECK_OK(cubert_client_sync(s1, &err));
  for (i = 0; i < N; i++)
    if (out[i] != 2.0f * (host[i] + host[i]) + host[i]) ok = 0;
  CHECK_OK(cubert_client_handle_release(s1, &ha, NULL));
  CHECK_OK(cubert_client_handle_release(s1, &hb, NULL));
  CHECK_OK(cubert_client_handle_release(s1, &hsum, NULL));
  CHECK_OK(cubert_client_handle_release(s2, &hout, NULL));
  cubert_client_release(s2);
  cubert_client_release(s1);
  return ok;
}

static void temp_path(char *buf, size_t size, const char *what) {
  snprintf(buf, size, "/tmp/cubert-test-%s-%ld.json", what, (long)getpid());
  (void)remove(buf);
}

/* The known program in deterministic mode (nothing runs before the host
 * waits, so stream 2's launch must wait for stream 1's): its events. */
TEST(trace_known_program_events) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_trace_options_t to;
  cubert_trace_stats_t stats;
  cubert_error_t err;
  char path[128];
  jval_t *doc;
  const char *id;
  temp_path(path, sizeof path, "trace-known");
  cubert_trace_options_initialize(&to);
  to.path = path;
  to.allocator = a;
  CHECK_OK(cubert_trace_start(&to, &err));
  cubert_trace_stats(&stats);
  CHECK_EQ_U64(stats.active, 1);
  CHECK_EQ_U64(stats.capacity, CUBERT_TRACE_DEFAULT_CAPACITY);
  CHECK(run_program(a, CUBERT_CPU_MODE_DETERMINISTIC, 50, 1));
  CHECK_OK(cubert_trace_stop(&stats, &err));
  CHECK_EQ_U64(stats.active, 0);
  CHECK_EQ_U64(stats.dropped, 0);
  CHECK(stats.recorded > 10);
  CHECK_EQ_I64(c.live_blocks, 0);
  doc = load_and_check(path, 1);
  CHECK_EQ_U64((uint64_t)jnum(jget(doc, "otherData"), "dropped_events"), 0);
  CHECK_EQ_U64((uint64_t)jnum(jget(doc, "otherData"), "recorded_events"), stats.recorded);
  /* tracks: host thread 1, streams 1 and 2; the device's process */
  CHECK_EQ_I64(count_events(doc, "M", NULL, NULL, -1) >= 4, 1);
  /* the launch on the host thread, its execution on stream 1, one flow */
  CHECK_EQ_I64(count_events(doc, "B", "launch", "ck_add_f32", 1), 1);
  CHECK_EQ_I64(count_events(doc, "B", "kernel", "ck_add_f32", 1001), 1);
  id = flow_after(doc, "launch", "ck_add_f32", 1);
  CHECK_MSG(id[0] && strcmp(id, flow_after(doc, "kernel", "ck_add_f32", 1001)) == 0,
            "flow %s", id);
  CHECK_EQ_I64(count_events(doc, "B", "launch", "ck_axpy_f32", 1), 1);
  CHECK_EQ_I64(count_events(doc, "B", "kernel", "ck_axpy_f32", 1002), 1);
  /* copies: two uploads on stream 1, the read on stream 2, each with its flow */
  CHECK_EQ_I64(count_events(doc, "B", "copy", "copy host to device", 1), 2);
  CHECK_EQ_I64(count_events(doc, "B", "copy", "copy host to device", 1001), 2);
  CHECK_EQ_I64(count_events(doc, "B", "copy", "copy device to host", 1002), 1);
  CHECK_EQ_I64(count_events(doc, "s", NULL, NULL, 1), 5);
  CHECK_EQ_I64(count_events(doc, "f", NULL, NULL, -1), 5);
  /* stream 2 waits for stream 1 (the sum); events recorded; the host waited */
  CHECK_EQ_I64(count_events(doc, "i", "event", "stream 2 waits for stream 1", 1), 1);
  CHECK(count_events(doc, "i", "event", "event record stream", 1) >= 2);
  CHECK(count_events(doc, "B", "sync", NULL, 1) >= 2);
  /* device memory; the GC released what the copies held */
  CHECK(count_events(doc, "i", "memory", "alloc", 1) >= 1);
  CHECK(count_events(doc, "i", "gc", "gc release", 1) >= 1);
  jfree(doc);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* The threaded program: a valid file, the kernel workers' tracks. */
TEST(trace_threaded_program_is_well_formed) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_trace_options_t to;
  cubert_error_t err;
  char path[128];
  jval_t *doc;
  temp_path(path, sizeof path, "trace-threaded");
  cubert_trace_options_initialize(&to);
  to.path = path;
  CHECK_OK(cubert_trace_start(&to, &err));
  CHECK(run_program(a, CUBERT_CPU_MODE_THREADED, 51, 20));
  CHECK_OK(cubert_trace_stop(NULL, &err));
  CHECK_EQ_I64(c.live_blocks, 0);
  doc = load_and_check(path, 1);
  CHECK_EQ_I64(count_events(doc, "B", "kernel", "ck_add_f32", 1001), 20);
  CHECK_EQ_I64(count_events(doc, "B", "launch", "ck_add_f32", 1), 20);
  /* worker tracks hold kernel spans only (2 workers: tids 2000, 2001) */
  CHECK_EQ_I64(count_events(doc, "B", NULL, NULL, 2000) + count_events(doc, "B", NULL, NULL, 2001),
               count_events(doc, "B", "kernel", NULL, 2000) +
               count_events(doc, "B", "kernel", NULL, 2001));
  jfree(doc);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* A ring of 16 events: the oldest are overwritten and counted (stats and
 * the file); the file still parses and every span is whole. */
TEST(trace_ring_drops_and_counts_when_full) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_trace_options_t to;
  cubert_trace_stats_t stats, after;
  cubert_error_t err;
  char path[128];
  jval_t *doc;
  temp_path(path, sizeof path, "trace-ring");
  cubert_trace_options_initialize(&to);
  to.path = path;
  to.capacity = CUBERT_TRACE_MIN_CAPACITY;
  to.allocator = a;
  CHECK_OK(cubert_trace_start(&to, &err));
  CHECK(run_program(a, CUBERT_CPU_MODE_DETERMINISTIC, 52, 30));
  cubert_trace_stats(&stats);
  CHECK(stats.recorded > 60);
  CHECK_EQ_U64(stats.dropped, stats.recorded - CUBERT_TRACE_MIN_CAPACITY);
  CHECK_OK(cubert_trace_stop(&after, &err));
  CHECK_EQ_U64(after.capacity, CUBERT_TRACE_MIN_CAPACITY);
  CHECK_EQ_U64(after.dropped, after.recorded - CUBERT_TRACE_MIN_CAPACITY);
  cubert_trace_stats(&stats); /* the last trace's, once stopped */
  CHECK_EQ_U64(stats.dropped, after.dropped);
  CHECK_EQ_U64(stats.active, 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  doc = load_and_check(path, 0);
  CHECK_EQ_U64((uint64_t)jnum(jget(doc, "otherData"), "dropped_events"), after.dropped);
  CHECK_EQ_I64(count_events(doc, "B", NULL, NULL, -1) + count_events(doc, "i", NULL, NULL, -1),
               CUBERT_TRACE_MIN_CAPACITY);
  /* the kept ones are the newest: the last read and the sync */
  CHECK_EQ_I64(count_events(doc, "B", "copy", "copy device to host", 1002), 1);
  jfree(doc);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* No trace: nothing is recorded or written; stop has nothing to stop. */
TEST(trace_off_writes_nothing) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_trace_stats_t stats;
  cubert_error_t err;
  char path[128];
  temp_path(path, sizeof path, "trace-off");
  CHECK(unsetenv("CUBERT_TRACE") == 0);
  CHECK(run_program(a, CUBERT_CPU_MODE_THREADED, 53, 3));
  cubert_trace_stats(&stats);
  CHECK_EQ_U64(stats.recorded, 0);
  CHECK_EQ_U64(stats.active, 0);
  CHECK_STATUS(cubert_trace_stop(&stats, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK(strstr(err.reason, "no trace") != NULL);
  CHECK_MSG(access(path, F_OK) != 0, "%s exists", path);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* Argument and state errors; an allocation failure at start; a file that
 * cannot be written (the trace is stopped and freed all the same). */
TEST(trace_api_errors) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_SIMULATION);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_trace_options_t to;
  cubert_trace_stats_t stats;
  cubert_error_t err;
  char path[128];
  temp_path(path, sizeof path, "trace-errors");
  CHECK_STATUS(cubert_trace_start(NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  cubert_trace_options_initialize(&to);
  CHECK_STATUS(cubert_trace_start(&to, &err), CUBERT_STATUS_INVALID_ARGUMENT); /* no path */
  to.path = path;
  to.allocator = a;
  to.capacity = CUBERT_TRACE_MIN_CAPACITY - 1;
  CHECK_STATUS(cubert_trace_start(&to, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  to.capacity = CUBERT_TRACE_MAX_CAPACITY + 1;
  CHECK_STATUS(cubert_trace_start(&to, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  to.capacity = 0;
  CHECK(setenv("CUBERT_TRACE_BUFFER", "lots", 1) == 0);
  CHECK_STATUS(cubert_trace_start(&to, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(err.reason, "CUBERT_TRACE_BUFFER") != NULL);
  CHECK(setenv("CUBERT_TRACE_BUFFER", "32", 1) == 0);
  counting_allocator_fail_at(&c, 1, 0); /* the ring */
  CHECK_STATUS(cubert_trace_start(&to, &err), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&c, 2, 0); /* the path */
  CHECK_STATUS(cubert_trace_start(&to, &err), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_OK(cubert_trace_start(&to, &err));
  CHECK_STATUS(cubert_trace_start(&to, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  cubert_trace_stats(&stats);
  CHECK_EQ_U64(stats.capacity, 32); /* from CUBERT_TRACE_BUFFER */
  CHECK_OK(cubert_trace_stop(&stats, &err));
  CHECK_EQ_I64(c.live_blocks, 0);
  /* sorting needs memory at stop: its failure stops and frees all the same */
  CHECK_OK(cubert_trace_start(&to, &err));
  CHECK(run_program(cubert_allocator_libc(), CUBERT_CPU_MODE_DETERMINISTIC, 54, 1));
  counting_allocator_fail_at(&c, 1, 0);
  CHECK_STATUS(cubert_trace_stop(&stats, &err), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_I64(c.live_blocks, 0);
  /* an unwritable path */
  to.path = "/nonexistent-cubert-dir/trace.json";
  CHECK_OK(cubert_trace_start(&to, &err));
  CHECK_STATUS(cubert_trace_stop(&stats, &err), CUBERT_STATUS_IO_FAILED);
  CHECK(strstr(err.reason, "/nonexistent-cubert-dir/trace.json") != NULL);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_STATUS(cubert_trace_stop(&stats, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  (void)remove(path);
  counting_allocator_destroy(&c);
}

/* CUBERT_TRACE: a child process records from its first CPU create and
 * writes the file at exit. */
TEST(trace_env_writes_at_exit) {
  char path[128];
  pid_t pid;
  int status = 0;
  jval_t *doc;
  temp_path(path, sizeof path, "trace-env");
  pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    setenv("CUBERT_TRACE", path, 1);
    setenv("CUBERT_TRACE_BUFFER", "1024", 1);
    if (run_program(a, CUBERT_CPU_MODE_THREADED, 55, 2)) exit(0); /* atexit writes the trace */
    _exit(1);
  }
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  doc = load_and_check(path, 1);
  CHECK_EQ_I64(count_events(doc, "B", "kernel", "ck_add_f32", 1001), 2);
  CHECK_EQ_U64((uint64_t)jnum(jget(doc, "otherData"), "capacity"), 1024);
  jfree(doc);
  (void)remove(path);
}
