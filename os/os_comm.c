/* SPDX-License-Identifier: MIT */
/* os/os_comm.c: in-process communicators (see host_comm.h). */
#include "os/os_comm.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "cubert/cpu.h"

enum { PHASE_COLLECTING = 0, PHASE_DEPARTING = 1 };

typedef struct os_comm_t {
  int used;
  uint64_t id;
  uint32_t size;
  uint32_t devices[CUBERT_COMMUNICATION_MAX_DEVICES]; /* sorted index ids */
  uint32_t refs;
  unsigned char joined[CUBERT_COMMUNICATION_MAX_DEVICES];
  unsigned char present[CUBERT_COMMUNICATION_MAX_DEVICES];
  unsigned char left[CUBERT_COMMUNICATION_MAX_DEVICES]; /* joined once, released since */
  uint64_t cancel_at[CUBERT_COMMUNICATION_MAX_DEVICES]; /* 0: not cancelled; else monotonic ns */
  os_comm_contrib_t contrib[CUBERT_COMMUNICATION_MAX_DEVICES];
  int phase;
  uint32_t arrived, departed;
  int aborted;
  cubert_error_t abort_error;
  cubert_status_t round_status;
  cubert_error_t round_error;
} os_comm_t;

/* The process-wide registry: static storage, one lock, one condition. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static os_comm_t g_comms[OS_COMM_MAX];

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait on g_cond until the monotonic deadline (UINT64_MAX: none). Returns 1
 * when the deadline has passed. The condition uses CLOCK_REALTIME: the
 * remaining time is converted at each wait. */
static int wait_until(uint64_t deadline) {
  struct timespec ts;
  uint64_t now = mono_ns(), left;
  if (deadline == UINT64_MAX) {
    pthread_cond_wait(&g_cond, &g_lock);
    return 0;
  }
  if (now >= deadline) return 1;
  left = deadline - now;
  if (left > 1000000000ull) left = 1000000000ull; /* re-check at least every second */
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)(left / 1000000000ull);
  ts.tv_nsec += (long)(left % 1000000000ull);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  (void)pthread_cond_timedwait(&g_cond, &g_lock, &ts);
  return mono_ns() >= deadline;
}

static void comm_abort(os_comm_t *c, cubert_error_kind_t kind, const char *reason) {
  if (c->aborted) return;
  c->aborted = 1;
  (void)cubert_error_set(&c->abort_error, kind, &c->id, 1, reason);
  pthread_cond_broadcast(&g_cond);
}

cubert_status_t os_comm_describe(const uint32_t *devices, size_t count, uint32_t self,
                                 uint32_t *out_sorted, uint64_t *out_id, uint32_t *out_rank,
                                 cubert_error_t *out_error) {
  cubert_device_id_t ids[CUBERT_COMMUNICATION_MAX_DEVICES];
  size_t i, j;
  uint32_t rank = UINT32_MAX;
  if (!devices || count == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "a communicator needs at least one device");
  if (count > CUBERT_COMMUNICATION_MAX_DEVICES) {
    uint64_t f[2];
    f[0] = count;
    f[1] = CUBERT_COMMUNICATION_MAX_DEVICES;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "too many devices in one communicator");
  }
  for (i = 0; i < count; i++) {
    uint32_t d = devices[i];
    j = i;
    while (j > 0 && out_sorted[j - 1] > d) {
      out_sorted[j] = out_sorted[j - 1];
      j--;
    }
    out_sorted[j] = d;
  }
  for (i = 0; i < count; i++) {
    if (i > 0 && out_sorted[i] == out_sorted[i - 1]) {
      uint64_t f = out_sorted[i];
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                              "a device appears twice in the communicator's device list");
    }
    if (out_sorted[i] == self) rank = (uint32_t)i;
    ids[i].type_id = CUBERT_CPU_DEVICE_TYPE;
    ids[i].index_id = out_sorted[i];
  }
  if (rank == UINT32_MAX) {
    uint64_t f = self;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, &f, 1,
                            "this device is not in the communicator's device list");
  }
  (void)cubert_communication_id(ids, count, out_id, NULL);
  *out_rank = rank;
  return CUBERT_STATUS_OK;
}

cubert_status_t os_comm_join(const uint32_t *devices, size_t count, uint32_t self,
                             os_comm_ref_t *out_ref, cubert_error_t *out_error) {
  uint32_t sorted[CUBERT_COMMUNICATION_MAX_DEVICES];
  uint64_t id = 0;
  uint32_t rank = 0, i, free_slot = UINT32_MAX, found = UINT32_MAX;
  cubert_status_t status = CUBERT_STATUS_OK;
  os_comm_t *c;
  CUBERT_RETURN_IF_ERROR(os_comm_describe(devices, count, self, sorted, &id, &rank, out_error));
  pthread_mutex_lock(&g_lock);
  for (i = 0; i < OS_COMM_MAX; i++) {
    if (g_comms[i].used && g_comms[i].id == id && g_comms[i].size == count &&
        memcmp(g_comms[i].devices, sorted, count * sizeof(uint32_t)) == 0) {
      found = i;
      break;
    }
    if (!g_comms[i].used && free_slot == UINT32_MAX) free_slot = i;
  }
  if (found == UINT32_MAX) {
    if (free_slot == UINT32_MAX) {
      uint64_t f = OS_COMM_MAX;
      pthread_mutex_unlock(&g_lock);
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &f, 1,
                              "too many communicators in the process");
    }
    c = &g_comms[free_slot];
    memset(c, 0, sizeof(*c));
    c->used = 1;
    c->id = id;
    c->size = (uint32_t)count;
    memcpy(c->devices, sorted, count * sizeof(uint32_t));
    found = free_slot;
  }
  c = &g_comms[found];
  out_ref->slot = found;
  out_ref->rank = rank;
  out_ref->size = (uint32_t)count;
  out_ref->id = id;
  if (c->aborted) {
    status = cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, &id, 1,
                              "the communicator was aborted; it is reset once every member left");
  } else if (c->joined[rank]) {
    status = CUBERT_STATUS_ALREADY_EXISTS;
  } else {
    c->joined[rank] = 1;
    c->left[rank] = 0;
    c->cancel_at[rank] = 0;
    c->refs++;
  }
  pthread_mutex_unlock(&g_lock);
  return status;
}

/* ---- the data movement of a complete round (registry lock held) ---- */

#define REDUCE_LOOP(T, IS_FLOAT)                                                   \
  do {                                                                             \
    for (e = 0; e < count; e++) {                                                  \
      T acc = 0, v;                                                                \
      for (r = 0; r < n; r++) {                                                    \
        memcpy(&v, c->contrib[r].src + e * sizeof(T), sizeof(T));                  \
        acc = (T)(acc + v);                                                        \
      }                                                                            \
      if (mean) acc = (T)(acc / (T)n);                                             \
      for (r = 0; r < n; r++) memcpy(c->contrib[r].dst + e * sizeof(T), &acc, sizeof(T)); \
    }                                                                              \
  } while (0)

/* Signed integers add in unsigned (wrapping) arithmetic, then divide signed. */
#define REDUCE_LOOP_SIGNED(T, U)                                                   \
  do {                                                                             \
    for (e = 0; e < count; e++) {                                                  \
      U acc = 0;                                                                   \
      T v, out;                                                                    \
      for (r = 0; r < n; r++) {                                                    \
        memcpy(&v, c->contrib[r].src + e * sizeof(T), sizeof(T));                  \
        acc = (U)(acc + (U)v);                                                     \
      }                                                                            \
      memcpy(&out, &acc, sizeof(T));                                               \
      if (mean) out = (T)(out / (T)n);                                             \
      for (r = 0; r < n; r++) memcpy(c->contrib[r].dst + e * sizeof(T), &out, sizeof(T)); \
    }                                                                              \
  } while (0)

static void reduce(os_comm_t *c, uint32_t dtype, int mean, uint64_t bytes) {
  uint32_t n = c->size, r;
  uint64_t e, count = bytes / cubert_comm_dtype_size(dtype);
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F32:
      REDUCE_LOOP(float, 1);
      break;
    case CUBERT_COMM_DTYPE_F64:
      REDUCE_LOOP(double, 1);
      break;
    case CUBERT_COMM_DTYPE_U8:
      REDUCE_LOOP(uint8_t, 0);
      break;
    case CUBERT_COMM_DTYPE_U32:
      REDUCE_LOOP(uint32_t, 0);
      break;
    case CUBERT_COMM_DTYPE_U64:
      REDUCE_LOOP(uint64_t, 0);
      break;
    case CUBERT_COMM_DTYPE_I8:
      REDUCE_LOOP_SIGNED(int8_t, uint8_t);
      break;
    case CUBERT_COMM_DTYPE_I32:
      REDUCE_LOOP_SIGNED(int32_t, uint32_t);
      break;
    case CUBERT_COMM_DTYPE_I64:
      REDUCE_LOOP_SIGNED(int64_t, uint64_t);
      break;
    default:
      break; /* validated before: cannot happen */
  }
}

static cubert_status_t complete_round(os_comm_t *c, cubert_error_t *error) {
  uint32_t n = c->size, r, sends = 0, recvs = 0, reduces = 0;
  const os_comm_contrib_t *first = &c->contrib[0];
  cubert_error_clear(error);
  for (r = 0; r < n; r++) {
    const os_comm_contrib_t *m = &c->contrib[r];
    if (m->kind == OS_COMM_ALL_REDUCE) reduces++;
    else if (m->kind == OS_COMM_SEND) sends++;
    else recvs++;
  }
  if (reduces == n) {
    for (r = 1; r < n; r++) {
      const os_comm_contrib_t *m = &c->contrib[r];
      if (m->dtype != first->dtype || m->op != first->op || m->bytes != first->bytes) {
        uint64_t f[4];
        f[0] = first->device;
        f[1] = m->device;
        f[2] = first->bytes;
        f[3] = m->bytes;
        return cubert_error_set(error, CUBERT_ERROR_SERVER_VALIDATION, f, 4,
                                "all_reduce participants disagree on dtype, operation or size");
      }
    }
    reduce(c, first->dtype, first->op == CUBERT_REDUCE_OPERATION_MEAN, first->bytes);
    return CUBERT_STATUS_OK;
  }
  if (n == 2 && sends == 1 && recvs == 1) {
    const os_comm_contrib_t *s = c->contrib[0].kind == OS_COMM_SEND ? &c->contrib[0] : &c->contrib[1];
    const os_comm_contrib_t *d = s == &c->contrib[0] ? &c->contrib[1] : &c->contrib[0];
    if (s->dtype != d->dtype || s->bytes != d->bytes || s->peer != d->device ||
        d->peer != s->device) {
      uint64_t f[4];
      f[0] = s->bytes;
      f[1] = d->bytes;
      f[2] = s->dtype;
      f[3] = d->dtype;
      return cubert_error_set(error, CUBERT_ERROR_SERVER_VALIDATION, f, 4,
                              "send and recv disagree on dtype or size");
    }
    if (s->bytes) memcpy(d->dst, s->src, (size_t)s->bytes);
    return CUBERT_STATUS_OK;
  }
  {
    uint64_t f[3];
    f[0] = reduces;
    f[1] = sends;
    f[2] = recvs;
    return cubert_error_set(error, CUBERT_ERROR_SERVER_VALIDATION, f, 3,
                            "collective mismatch: the members issued different operations "
                            "(all_reduce, send, recv counts)");
  }
}

static uint64_t effective_deadline(const os_comm_t *c, uint32_t rank, uint64_t deadline) {
  uint64_t cancel = c->cancel_at[rank];
  return cancel && cancel < deadline ? cancel : deadline;
}

/* A wait ran out: abort the communicator and report why. */
static cubert_status_t timed_out(os_comm_t *c, uint32_t rank, uint64_t deadline,
                                 cubert_error_t *out_error) {
  if (c->cancel_at[rank] && c->cancel_at[rank] <= deadline) {
    comm_abort(c, CUBERT_ERROR_DEVICE_LOST,
               "communicator aborted: a member was released while a collective waited");
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_LOST, &c->id, 1,
                            "collective cancelled: the device was released before its peers "
                            "arrived");
  }
  comm_abort(c, CUBERT_ERROR_DEVICE_LOST,
             "communicator aborted: a member timed out waiting for its peers");
  return cubert_error_set(out_error, CUBERT_ERROR_DEADLINE_EXCEEDED, &c->id, 1,
                          "collective timed out waiting for its peers");
}

/* A released member will never arrive: abort instead of waiting for it. */
static void abort_if_member_left(os_comm_t *c) {
  uint32_t r;
  for (r = 0; r < c->size; r++)
    if (c->left[r]) {
      comm_abort(c, CUBERT_ERROR_DEVICE_LOST,
                 "communicator aborted: a member device was released while its peers "
                 "waited for it");
      return;
    }
}

static cubert_status_t aborted(os_comm_t *c, cubert_error_t *out_error) {
  if (out_error) *out_error = c->abort_error;
  return c->abort_error.status;
}

cubert_status_t os_comm_run(const os_comm_ref_t *ref, const os_comm_contrib_t *mine,
                            uint64_t timeout_ns, cubert_error_t *out_error) {
  os_comm_t *c = &g_comms[ref->slot];
  uint32_t rank = ref->rank;
  uint64_t now = mono_ns();
  uint64_t deadline = timeout_ns >= UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
  cubert_status_t status;
  pthread_mutex_lock(&g_lock);
  /* arrive: wait until the previous round has fully departed */
  for (;;) {
    uint64_t d;
    abort_if_member_left(c);
    if (c->aborted) {
      status = aborted(c, out_error);
      goto out;
    }
    if (c->phase == PHASE_COLLECTING && !c->present[rank]) break;
    d = effective_deadline(c, rank, deadline);
    if (wait_until(d)) {
      status = timed_out(c, rank, d, out_error);
      goto out;
    }
  }
  c->contrib[rank] = *mine;
  c->present[rank] = 1;
  c->arrived++;
  if (c->arrived == c->size) {
    c->round_status = complete_round(c, &c->round_error);
    c->phase = PHASE_DEPARTING;
    c->departed = 0;
    pthread_cond_broadcast(&g_cond);
  } else {
    for (;;) {
      uint64_t d;
      if (c->phase == PHASE_DEPARTING) break; /* our round completed (we are present) */
      abort_if_member_left(c);
      if (c->aborted) {
        status = aborted(c, out_error);
        goto out;
      }
      d = effective_deadline(c, rank, deadline);
      if (wait_until(d)) {
        if (c->phase == PHASE_DEPARTING) break;
        status = timed_out(c, rank, d, out_error);
        goto out;
      }
    }
  }
  status = c->round_status;
  if (status != CUBERT_STATUS_OK && out_error) *out_error = c->round_error;
  c->present[rank] = 0;
  c->departed++;
  if (c->departed == c->size) {
    c->phase = PHASE_COLLECTING;
    c->arrived = 0;
    c->departed = 0;
    pthread_cond_broadcast(&g_cond);
  }
out:
  pthread_mutex_unlock(&g_lock);
  return status;
}

cubert_status_t os_comm_check(const os_comm_ref_t *ref, cubert_error_t *out_error) {
  os_comm_t *c = &g_comms[ref->slot];
  cubert_status_t status = CUBERT_STATUS_OK;
  pthread_mutex_lock(&g_lock);
  if (c->aborted)
    status = cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, &c->id, 1,
                              "the communicator was aborted; it is reset once every member left");
  pthread_mutex_unlock(&g_lock);
  return status;
}

void os_comm_cancel(const os_comm_ref_t *ref) {
  os_comm_t *c = &g_comms[ref->slot];
  pthread_mutex_lock(&g_lock);
  if (!c->cancel_at[ref->rank]) c->cancel_at[ref->rank] = mono_ns() + OS_COMM_CANCEL_GRACE_NS;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_lock);
}

void os_comm_leave(const os_comm_ref_t *ref) {
  os_comm_t *c = &g_comms[ref->slot];
  pthread_mutex_lock(&g_lock);
  if (c->used && c->joined[ref->rank]) {
    c->joined[ref->rank] = 0;
    c->left[ref->rank] = 1; /* peers waiting for it (now or later) abort */
    c->cancel_at[ref->rank] = 0;
    pthread_cond_broadcast(&g_cond);
    if (--c->refs == 0) memset(c, 0, sizeof(*c));
  }
  pthread_mutex_unlock(&g_lock);
}

uint32_t os_comm_live(void) {
  uint32_t i, n = 0;
  pthread_mutex_lock(&g_lock);
  for (i = 0; i < OS_COMM_MAX; i++) n += g_comms[i].used ? 1u : 0u;
  pthread_mutex_unlock(&g_lock);
  return n;
}
