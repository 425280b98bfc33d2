/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/fake_libnccl_shm.c: the fake NCCL's communicators across
 * processes: a POSIX shared-memory segment (its name is the unique id)
 * holding a process-shared mutex and condition, each rank's progress and
 * one 16 MiB slot per rank. A collective is one round: every rank writes
 * its contribution into its slot, waits until every rank arrived, reads
 * what it needs (the sum of the slots, or its peer's slot), then waits
 * until every rank finished reading (so the slots can be written again).
 * A rank that does not come within CUBERT_FAKE_NCCL_TIMEOUT_MS marks the
 * segment broken: every rank fails from then on (ncclRemoteError).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake_libnccl_internal.h"

#define SHM_MAGIC 0x5348u
#define ID_PREFIX "cubert-fake-nccl:"

typedef struct shm_header_t {
  uint32_t ready; /* SHM_MAGIC once the creator set it up */
  int32_t nranks;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int32_t joined;
  int32_t broken;
  uint32_t arrived[FAKE_NCCL_MAX_RANKS];
  uint32_t finished[FAKE_NCCL_MAX_RANKS];
  char name[64];
} shm_header_t;

struct fake_shm_t {
  shm_header_t *h;
  size_t size;
  unsigned char *slots;
};

static size_t header_bytes(void) { return (sizeof(shm_header_t) + 4095u) & ~(size_t)4095u; }

void fake_shm_unique_id(cubert_nccl_unique_id_t *id) {
  static unsigned counter;
  unsigned n;
  struct timespec ts;
  pthread_mutex_lock(&fake_nccl_mutex);
  n = ++counter;
  pthread_mutex_unlock(&fake_nccl_mutex);
  clock_gettime(CLOCK_MONOTONIC, &ts);
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, ID_PREFIX "/cubert-fake-nccl-%ld-%u-%ld",
           (long)getpid(), n, (long)ts.tv_nsec);
}

const char *fake_shm_id_name(const cubert_nccl_unique_id_t *id) {
  if (strncmp(id->internal, ID_PREFIX, strlen(ID_PREFIX)) != 0) return NULL;
  if (!memchr(id->internal, 0, sizeof id->internal)) return NULL;
  return id->internal + strlen(ID_PREFIX);
}

static void setup(shm_header_t *h, int nranks, const char *name) {
  pthread_mutexattr_t ma;
  pthread_condattr_t ca;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(&h->mutex, &ma);
  pthread_mutexattr_destroy(&ma);
  pthread_condattr_init(&ca);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->cond, &ca);
  pthread_condattr_destroy(&ca);
  h->nranks = nranks;
  snprintf(h->name, sizeof h->name, "%s", name);
  __atomic_store_n(&h->ready, SHM_MAGIC, __ATOMIC_RELEASE);
}

int fake_shm_join(const char *name, int nranks, int rank, fake_shm_t **out) {
  size_t size = header_bytes() + (size_t)nranks * FAKE_NCCL_SLOT_BYTES;
  int fd, created = 1, tries;
  fake_shm_t *sh;
  void *p;
  (void)rank;
  fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    created = 0;
    fd = shm_open(name, O_RDWR, 0600);
  }
  if (fd < 0) return CUBERT_NCCL_SYSTEM_ERROR;
  if (created && ftruncate(fd, (off_t)size) != 0) {
    close(fd);
    shm_unlink(name);
    return CUBERT_NCCL_SYSTEM_ERROR;
  }
  for (tries = 0; !created && tries < 5000; tries++) { /* the creator sizes it */
    off_t end = lseek(fd, 0, SEEK_END);
    if (end >= (off_t)size) break;
    {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return CUBERT_NCCL_SYSTEM_ERROR;
  sh = (fake_shm_t *)calloc(1, sizeof *sh);
  if (!sh) {
    munmap(p, size);
    return CUBERT_NCCL_SYSTEM_ERROR;
  }
  sh->h = (shm_header_t *)p;
  sh->size = size;
  sh->slots = (unsigned char *)p + header_bytes();
  if (created) setup(sh->h, nranks, name);
  for (tries = 0; __atomic_load_n(&sh->h->ready, __ATOMIC_ACQUIRE) != SHM_MAGIC && tries < 5000;
       tries++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (sh->h->ready != SHM_MAGIC || sh->h->nranks != nranks) {
    munmap(p, size);
    free(sh);
    return CUBERT_NCCL_INVALID_USAGE;
  }
  pthread_mutex_lock(&sh->h->mutex);
  sh->h->joined++;
  if (sh->h->joined == nranks) shm_unlink(sh->h->name); /* everyone has it mapped */
  pthread_cond_broadcast(&sh->h->cond);
  pthread_mutex_unlock(&sh->h->mutex);
  *out = sh;
  return 0;
}

int fake_shm_ready(fake_shm_t *sh) {
  int r;
  pthread_mutex_lock(&sh->h->mutex);
  r = sh->h->broken ? -1 : sh->h->joined >= sh->h->nranks ? 1 : 0;
  pthread_mutex_unlock(&sh->h->mutex);
  return r;
}

void fake_shm_leave(fake_shm_t *sh) {
  if (!sh) return;
  pthread_mutex_lock(&sh->h->mutex);
  if (sh->h->joined < sh->h->nranks) sh->h->broken = 1; /* a rank left before all came */
  pthread_cond_broadcast(&sh->h->cond);
  pthread_mutex_unlock(&sh->h->mutex);
  munmap(sh->h, sh->size);
  free(sh);
}

/* Wait (mutex held) until every rank's `progress` reached `round`. 0, or
 * ncclRemoteError (timeout, broken, aborted). */
static int wait_all(shm_header_t *h, const uint32_t *progress, uint32_t round,
                    const struct timespec *deadline, const int *abort) {
  for (;;) {
    int i, all = 1;
    struct timespec slice, now;
    if (h->broken || __atomic_load_n(abort, __ATOMIC_ACQUIRE)) return CUBERT_NCCL_REMOTE_ERROR;
    for (i = 0; i < h->nranks; i++)
      if ((int32_t)(progress[i] - round) < 0) all = 0;
    if (all) return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > deadline->tv_sec ||
        (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec)) {
      h->broken = 1;
      pthread_cond_broadcast(&h->cond);
      return CUBERT_NCCL_REMOTE_ERROR;
    }
    slice = now; /* wake often enough to see an abort */
    slice.tv_nsec += 2000000;
    if (slice.tv_nsec >= 1000000000L) {
      slice.tv_sec++;
      slice.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&h->cond, &h->mutex, &slice);
  }
}

int fake_shm_run(fake_shm_t *sh, int rank, uint32_t round, const fake_nccl_op_t *op,
                 const int *abort) {
  shm_header_t *h = sh->h;
  size_t bytes = op->count * fake_nccl_type_size(op->type);
  unsigned char *mine = sh->slots + (size_t)rank * FAKE_NCCL_SLOT_BYTES;
  long long limit_ms = fake_nccl_knob("CUBERT_FAKE_NCCL_TIMEOUT_MS", 20000);
  struct timespec deadline;
  int r;
  if (bytes > FAKE_NCCL_SLOT_BYTES) return CUBERT_NCCL_INVALID_ARGUMENT;
  if (op->kind != 1 && h->nranks != 2) return CUBERT_NCCL_INVALID_USAGE; /* pairs only */
  if (op->kind != 3) memcpy(mine, op->send, bytes);
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += (time_t)(limit_ms / 1000);
  deadline.tv_nsec += (long)(limit_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&h->mutex);
  h->arrived[rank] = round;
  pthread_cond_broadcast(&h->cond);
  r = wait_all(h, h->arrived, round, &deadline, abort);
  pthread_mutex_unlock(&h->mutex);
  if (r) return r;
  if (op->kind == 1) {
    const void *in[FAKE_NCCL_MAX_RANKS];
    int i;
    for (i = 0; i < h->nranks; i++) in[i] = sh->slots + (size_t)i * FAKE_NCCL_SLOT_BYTES;
    if (fake_nccl_sum(op->recv, in, h->nranks, op->count, op->type) != 0)
      r = CUBERT_NCCL_INVALID_ARGUMENT;
  } else if (op->kind == 3) {
    memcpy(op->recv, sh->slots + (size_t)op->peer * FAKE_NCCL_SLOT_BYTES, bytes);
  }
  pthread_mutex_lock(&h->mutex);
  h->finished[rank] = round;
  pthread_cond_broadcast(&h->cond);
  if (!r) r = wait_all(h, h->finished, round, &deadline, abort);
  pthread_mutex_unlock(&h->mutex);
  return r;
}
