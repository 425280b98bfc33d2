/* SPDX-License-Identifier: MIT */
/*
 * os/os_trace.c: the timeline trace recorder (cubert/trace.h,
 * host/os_obs.h) and the observer word the server reads.
 *
 * Recording: a span (or an instant) is one event written when it ends, into
 * slot `index % capacity` of a ring: index from a fetch-add, the slot's
 * `seq` cleared, the fields written, `seq` = index + 1 published. A writer
 * counts itself in `writers` before it looks at the on-word, so the stop
 * (on-word cleared, then wait for writers to reach 0: Dekker, both
 * seq_cst) reads a quiet ring. A full ring overwrites its oldest events;
 * the stop counts them as dropped.
 *
 * Writing (at stop): the kept events are expanded into trace-event JSON
 * records (a span: "B" and "E"; an instant: "i"; a flow end: "s" or "f"
 * at the span's start) and sorted by track (pid, tid) and time, so the
 * timestamps of a track never go back and each "B" has its "E" after it
 * (ties: an "E" before a "B" of another span; a span's own "B" first).
 * One "M" record names each process and track.
 */
#include "os/os_obs.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/os_thread.h"

#define TRACE_NAME_BYTES 48

typedef struct trace_event_t {
  uint64_t seq; /* index + 1 once written */
  uint64_t t0, t1, flow, arg;
  const char *arg_name;
  uint32_t pid, tid;
  uint8_t cat, instant, flow_dir, pad_;
  char name[TRACE_NAME_BYTES];
} trace_event_t;

uint32_t cubert_os_trace_on_;
uint32_t cubert_os_obs_on_;

static pthread_mutex_t trace_mutex = PTHREAD_MUTEX_INITIALIZER; /* start / stop */
static trace_event_t *trace_ring;
static uint32_t trace_capacity;
static uint64_t trace_head;    /* atomic: events recorded since start */
static uint32_t trace_writers; /* atomic: recordings in flight */
static uint64_t trace_epoch;
static char *trace_path;
static size_t trace_path_size;
static cubert_allocator_t trace_allocator;
static int trace_from_env;     /* the running trace came from CUBERT_TRACE */
static int trace_env_tried;    /* CUBERT_TRACE was looked at (once per process) */
static cubert_trace_stats_t trace_last; /* of the last stopped trace */
static uint32_t os_tid_next; /* atomic */
static __thread uint32_t t_host_tid;

static const char *const cat_names[OS_TRACE_CAT_COUNT_] = {
    "launch", "kernel", "copy", "sync", "event", "wait", "memory", "gc", "collective"};

void cubert__os_obs_update(void) {
  uint32_t on = __atomic_load_n(&cubert_os_trace_on_, __ATOMIC_SEQ_CST) != 0 ||
                OS_LOG_ON(CUBERT_LOG_LEVEL_DEBUG);
  __atomic_store_n(&cubert_os_obs_on_, on, __ATOMIC_SEQ_CST);
}

uint64_t cubert__os_trace_now(void) { return cubert__os_clock_ns(); }

uint32_t cubert__os_trace_thread_tid(void) {
  if (!t_host_tid) t_host_tid = __atomic_add_fetch(&os_tid_next, 1u, __ATOMIC_RELAXED);
  return t_host_tid;
}

uint64_t cubert__os_trace_flow_id(uint32_t device_index, uint32_t slot, uint64_t seq) {
  return ((uint64_t)(device_index & 0xFFFFu) << 48) | ((uint64_t)(slot & 0xFFu) << 40) |
         (seq & 0xFFFFFFFFFFull);
}

void cubert__os_trace_record(uint32_t device_index, uint32_t tid, os_trace_cat_t cat,
                             const char *name, uint64_t t0, uint64_t t1, int instant,
                             uint32_t flow_dir, uint64_t flow_id, const char *arg_name,
                             uint64_t arg) {
  uint64_t index;
  trace_event_t *e;
  size_t n = 0;
  (void)__atomic_add_fetch(&trace_writers, 1u, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&cubert_os_trace_on_, __ATOMIC_SEQ_CST)) {
    (void)__atomic_sub_fetch(&trace_writers, 1u, __ATOMIC_SEQ_CST);
    return;
  }
  index = __atomic_fetch_add(&trace_head, 1u, __ATOMIC_RELAXED);
  e = &trace_ring[index % trace_capacity];
  __atomic_store_n(&e->seq, 0u, __ATOMIC_RELAXED);
  e->t0 = t0;
  e->t1 = t1 < t0 ? t0 : t1;
  e->flow = flow_id;
  e->arg = arg;
  e->arg_name = arg_name;
  e->pid = device_index + 1u;
  e->tid = tid;
  e->cat = (uint8_t)cat;
  e->instant = instant != 0;
  e->flow_dir = (uint8_t)flow_dir;
  if (name)
    while (n < TRACE_NAME_BYTES - 1 && name[n]) {
      e->name[n] = name[n];
      n++;
    }
  e->name[n] = '\0';
  __atomic_store_n(&e->seq, index + 1u, __ATOMIC_RELEASE);
  (void)__atomic_sub_fetch(&trace_writers, 1u, __ATOMIC_SEQ_CST);
}

/* ---- start / stop ------------------------------------------------------------------ */

void cubert_trace_options_initialize(cubert_trace_options_t *options) {
  if (options) memset(options, 0, sizeof(*options));
}

void cubert_trace_stats(cubert_trace_stats_t *out) {
  if (!out) return;
  pthread_mutex_lock(&trace_mutex);
  if (trace_ring) {
    uint64_t head = __atomic_load_n(&trace_head, __ATOMIC_RELAXED);
    out->recorded = head;
    out->dropped = head > trace_capacity ? head - trace_capacity : 0;
    out->capacity = trace_capacity;
    out->active = 1;
  } else {
    *out = trace_last;
  }
  pthread_mutex_unlock(&trace_mutex);
}

static cubert_status_t trace_start_locked(const char *path, uint32_t capacity,
                                          cubert_allocator_t allocator, int from_env,
                                          cubert_error_t *out_error) {
  trace_event_t *ring = NULL;
  char *copy = NULL;
  size_t len = strlen(path) + 1;
  if (trace_ring)
    return cubert_error_set(out_error, CUBERT_ERROR_FAILED_PRECONDITION, NULL, 0,
                            "cubert_trace_start: a trace already records");
  if (cubert_allocator_malloc_array(allocator, capacity, sizeof(trace_event_t), 64,
                                    (void **)&ring, out_error) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  if (cubert_allocator_malloc(allocator, len, 0, (void **)&copy, out_error) != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, ring, (size_t)capacity * sizeof(trace_event_t), 64);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  memcpy(copy, path, len);
  trace_ring = ring;
  trace_capacity = capacity;
  trace_path = copy;
  trace_path_size = len;
  trace_allocator = allocator;
  trace_from_env = from_env;
  trace_epoch = cubert__os_clock_ns();
  __atomic_store_n(&trace_head, 0u, __ATOMIC_RELAXED);
  __atomic_store_n(&cubert_os_trace_on_, 1u, __ATOMIC_SEQ_CST);
  cubert__os_obs_update();
  OS_LOG(CUBERT_LOG_LEVEL_DEBUG, "trace: recording to %s (%u events)%s", path,
         (unsigned)capacity, from_env ? " from CUBERT_TRACE, written at exit" : "");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_trace_start(const cubert_trace_options_t *options,
                                   cubert_error_t *out_error) {
  uint32_t capacity;
  cubert_allocator_t allocator;
  cubert_status_t status;
  if (!options || !options->path || !*options->path)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_trace_start: options or path is NULL or empty");
  capacity = options->capacity;
  if (capacity == 0) {
    cubert_os_config_t c;
    CUBERT_RETURN_IF_ERROR(cubert__os_config_read(&c, out_error));
    capacity = (c.set & OS_CONFIG_TRACE_BUFFER) ? c.trace_buffer : CUBERT_TRACE_DEFAULT_CAPACITY;
  }
  if (capacity < CUBERT_TRACE_MIN_CAPACITY || capacity > CUBERT_TRACE_MAX_CAPACITY) {
    uint64_t f[3];
    f[0] = capacity;
    f[1] = CUBERT_TRACE_MIN_CAPACITY;
    f[2] = CUBERT_TRACE_MAX_CAPACITY;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 3,
                            "cubert_trace_start: capacity out of range");
  }
  allocator = options->allocator.fn ? options->allocator : cubert_allocator_libc();
  pthread_mutex_lock(&trace_mutex);
  status = trace_start_locked(options->path, capacity, allocator, 0, out_error);
  pthread_mutex_unlock(&trace_mutex);
  return status;
}

/* ---- writing ------------------------------------------------------------------------- */

/* One trace-event record of the output. */
typedef struct trace_out_t {
  uint64_t ts;
  uint32_t pid, tid;
  uint32_t event; /* index into the kept events (their order) */
  char ph;        /* 'B', 'E', 'i', 's', 'f' */
} trace_out_t;

static int ph_rank(char ph) { return ph == 'B' ? 0 : ph == 'E' ? 2 : 1; }

static int out_compare(const void *pa, const void *pb) {
  const trace_out_t *a = (const trace_out_t *)pa, *b = (const trace_out_t *)pb;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  if (a->event == b->event) return ph_rank(a->ph) - ph_rank(b->ph);
  if ((a->ph == 'E') != (b->ph == 'E')) return a->ph == 'E' ? -1 : 1;
  return a->event < b->event ? -1 : 1;
}

static void write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void write_ts(FILE *f, uint64_t ns) {
  fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000u), (unsigned long long)(ns % 1000u));
}

static void write_track_names(FILE *f, uint32_t pid, uint32_t tid, int new_pid, int *first) {
  char name[64];
  if (new_pid) {
    fprintf(f, "%s\n{\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":"
            "\"cubert cpu device %u\"}}",
            *first ? "" : ",", (unsigned)pid, (unsigned)(pid - 1u));
    *first = 0;
  }
  if (tid >= OS_TRACE_TID_WORKER)
    (void)snprintf(name, sizeof name, "kernel worker %u", (unsigned)(tid - OS_TRACE_TID_WORKER));
  else if (tid >= OS_TRACE_TID_STREAM)
    (void)snprintf(name, sizeof name, "stream %u", (unsigned)(tid - OS_TRACE_TID_STREAM));
  else
    (void)snprintf(name, sizeof name, "host thread %u", (unsigned)tid);
  fprintf(f, "%s\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"%s\"}}",
          *first ? "" : ",", (unsigned)pid, (unsigned)tid, name);
  fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_sort_index\",\"args\":{"
          "\"sort_index\":%u}}",
          (unsigned)pid, (unsigned)tid, (unsigned)tid);
  *first = 0;
}

static void write_record(FILE *f, const trace_out_t *o, const trace_event_t *e, uint64_t epoch) {
  fprintf(f, ",\n{\"ph\":\"%c\",\"pid\":%u,\"tid\":%u,\"ts\":", o->ph, (unsigned)o->pid,
          (unsigned)o->tid);
  write_ts(f, o->ts - epoch);
  if (o->ph == 's' || o->ph == 'f') {
    fprintf(f, ",\"cat\":\"flow\",\"name\":\"%s\",\"id\":\"0x%llx\"%s}",
            e->cat == OS_TRACE_CAT_COPY ? "copy" : "launch", (unsigned long long)e->flow,
            o->ph == 'f' ? ",\"bp\":\"e\"" : "");
    return;
  }
  fprintf(f, ",\"cat\":\"%s\",\"name\":", cat_names[e->cat < OS_TRACE_CAT_COUNT_ ? e->cat : 0]);
  write_string(f, e->name);
  if (o->ph == 'i') fputs(",\"s\":\"t\"", f);
  if (o->ph != 'E' && e->arg_name)
    fprintf(f, ",\"args\":{\"%s\":%llu}", e->arg_name, (unsigned long long)e->arg);
  fputc('}', f);
}

/* Write the kept events; OK, IO_FAILED or RESOURCE_EXHAUSTED. */
static cubert_status_t trace_write(const trace_event_t *events, uint32_t count, uint64_t epoch,
                                   const cubert_trace_stats_t *stats, const char *path,
                                   cubert_allocator_t allocator, cubert_error_t *out_error) {
  trace_out_t *out = NULL;
  size_t n = 0, i, bytes = (size_t)count * 3u * sizeof(trace_out_t);
  FILE *f;
  int first = 1, failed;
  char reason[CUBERT_ERROR_REASON_SIZE];
  if (count && cubert_allocator_malloc(allocator, bytes, 0, (void **)&out, out_error) !=
                   CUBERT_STATUS_OK)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  for (i = 0; i < count; i++) {
    const trace_event_t *e = &events[i];
    trace_out_t o;
    uint64_t t0 = e->t0 < epoch ? epoch : e->t0;
    o.pid = e->pid;
    o.tid = e->tid;
    o.event = (uint32_t)i;
    o.ts = t0;
    o.ph = e->instant ? 'i' : 'B';
    out[n++] = o;
    if (!e->instant) {
      o.ts = e->t1 < t0 ? t0 : e->t1;
      o.ph = 'E';
      out[n++] = o;
    }
    if (e->flow_dir != OS_TRACE_FLOW_NONE && !e->instant) {
      o.ts = t0;
      o.ph = e->flow_dir == OS_TRACE_FLOW_OUT ? 's' : 'f';
      out[n++] = o;
    }
  }
  if (n) qsort(out, n, sizeof(*out), out_compare);
  f = fopen(path, "w");
  if (!f) {
    if (out) cubert_allocator_free(allocator, out, bytes, 0);
    (void)snprintf(reason, sizeof reason, "cubert_trace_stop: cannot write %.150s", path);
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, NULL, 0, reason);
  }
  fputs("{\"traceEvents\":[", f);
  for (i = 0; i < n; i++) {
    int new_pid = i == 0 || out[i].pid != out[i - 1].pid;
    if (new_pid || out[i].tid != out[i - 1].tid)
      write_track_names(f, out[i].pid, out[i].tid, new_pid, &first);
    write_record(f, &out[i], &events[out[i].event], epoch);
  }
  fprintf(f,
          "%s\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"producer\":\"cubert\","
          "\"capacity\":%u,\"recorded_events\":%llu,\"dropped_events\":%llu}}\n",
          first ? "{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":"
                  "\"cubert (no events)\"}}"
                : "",
          (unsigned)stats->capacity, (unsigned long long)stats->recorded,
          (unsigned long long)stats->dropped);
  failed = ferror(f) != 0;
  failed |= fclose(f) != 0;
  if (out) cubert_allocator_free(allocator, out, bytes, 0);
  if (failed) {
    (void)snprintf(reason, sizeof reason, "cubert_trace_stop: cannot write %.150s", path);
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, NULL, 0, reason);
  }
  return CUBERT_STATUS_OK;
}

/* Stop the running trace (trace_mutex held): quiesce, compact the kept
 * events in order into the ring's front, write, free. */
static cubert_status_t trace_stop_locked(cubert_trace_stats_t *out_stats,
                                         cubert_error_t *out_error) {
  cubert_trace_stats_t stats;
  uint64_t head, first, i;
  uint32_t kept = 0;
  cubert_status_t status;
  trace_event_t *ring = trace_ring;
  if (!ring)
    return cubert_error_set(out_error, CUBERT_ERROR_FAILED_PRECONDITION, NULL, 0,
                            "cubert_trace_stop: no trace records");
  __atomic_store_n(&cubert_os_trace_on_, 0u, __ATOMIC_SEQ_CST);
  cubert__os_obs_update();
  while (__atomic_load_n(&trace_writers, __ATOMIC_SEQ_CST)) sched_yield();
  head = __atomic_load_n(&trace_head, __ATOMIC_SEQ_CST);
  first = head > trace_capacity ? head - trace_capacity : 0;
  /* the kept events in recording order: rotate the ring to its front (a
   * temporary copy would need as much memory again, so rotate in place by
   * reversals) */
  if (head > trace_capacity) {
    uint64_t k = first % trace_capacity, a, b;
    trace_event_t t;
#define TRACE_REVERSE(lo, hi)                                   \
  for (a = (lo), b = (hi); a < b; a++, b--) {                   \
    t = ring[a];                                                \
    ring[a] = ring[b];                                          \
    ring[b] = t;                                                \
  }
    if (k) {
      TRACE_REVERSE(0, k - 1)
      TRACE_REVERSE(k, (uint64_t)trace_capacity - 1)
      TRACE_REVERSE(0, (uint64_t)trace_capacity - 1)
    }
#undef TRACE_REVERSE
  }
  for (i = 0; i < head - first; i++) /* keep the complete ones (all, once quiet) */
    if (ring[i].seq == first + i + 1u) ring[kept++] = ring[i];
  stats.recorded = head;
  stats.dropped = head - kept;
  stats.capacity = trace_capacity;
  stats.active = 0;
  status = trace_write(ring, kept, trace_epoch, &stats, trace_path, trace_allocator, out_error);
  OS_LOG(status == CUBERT_STATUS_OK ? CUBERT_LOG_LEVEL_DEBUG : CUBERT_LOG_LEVEL_WARN,
         "trace: %s %s: %u events, %llu dropped", status == CUBERT_STATUS_OK ? "wrote" : "could not write",
         trace_path, (unsigned)kept, (unsigned long long)stats.dropped);
  cubert_allocator_free(trace_allocator, ring, (size_t)trace_capacity * sizeof(trace_event_t), 64);
  cubert_allocator_free(trace_allocator, trace_path, trace_path_size, 0);
  trace_ring = NULL;
  trace_path = NULL;
  trace_last = stats;
  if (out_stats) *out_stats = stats;
  return status;
}

cubert_status_t cubert_trace_stop(cubert_trace_stats_t *out_stats, cubert_error_t *out_error) {
  cubert_status_t status;
  pthread_mutex_lock(&trace_mutex);
  status = trace_stop_locked(out_stats, out_error);
  pthread_mutex_unlock(&trace_mutex);
  return status;
}

/* ---- CUBERT_TRACE ---------------------------------------------------------------------- */

static void trace_at_exit(void) {
  pthread_mutex_lock(&trace_mutex);
  if (trace_ring && trace_from_env) (void)trace_stop_locked(NULL, NULL);
  pthread_mutex_unlock(&trace_mutex);
}

void cubert__os_trace_from_env(const cubert_os_config_t *config) {
  cubert_error_t e;
  cubert_status_t status;
  if (!config->trace_path) return;
  pthread_mutex_lock(&trace_mutex);
  if (trace_env_tried || trace_ring) {
    pthread_mutex_unlock(&trace_mutex);
    return;
  }
  trace_env_tried = 1;
  cubert_error_clear(&e);
  status = trace_start_locked(config->trace_path,
                              (config->set & OS_CONFIG_TRACE_BUFFER)
                              ? config->trace_buffer
                              : CUBERT_TRACE_DEFAULT_CAPACITY,
                              cubert_allocator_libc(), 1, &e);
  pthread_mutex_unlock(&trace_mutex);
  if (status != CUBERT_STATUS_OK)
    cubert__os_log_error(CUBERT_LOG_LEVEL_WARN, "CUBERT_TRACE: the trace cannot start", &e);
  else
    (void)atexit(trace_at_exit);
}
