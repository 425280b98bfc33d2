/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_handoff.h: the floor of a cross-thread round trip, for
 * bench/bench_peers.c. Two threads pass a token back and forth:
 *  - condvar: a pthread mutex + condition variable, each side sleeping in
 *    pthread_cond_wait until its turn (what a blocking queue costs at least);
 *  - spin: an atomic word, each side spinning (x86 `pause`) until its turn
 *    (what a spinning hand-off costs at least: two cache-line transfers).
 * A cubert launch + sync is such a round trip between the calling thread and
 * the stream's worker, plus the launch's own work.
 */
#ifndef CUBERT_BENCH_PEER_HANDOFF_H
#define CUBERT_BENCH_PEER_HANDOFF_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

#if defined(__x86_64__) || defined(__i386__)
#define PEER_SPIN_PAUSE() __asm__ __volatile__("pause" ::: "memory")
#elif defined(__aarch64__)
#define PEER_SPIN_PAUSE() __asm__ __volatile__("yield" ::: "memory")
#else
#define PEER_SPIN_PAUSE() __asm__ __volatile__("" ::: "memory")
#endif

typedef struct peer_handoff_t {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int turn;       /* 1: the partner's turn, 0: the caller's (condvar) */
  int spin_turn;  /* the same for the spin variant (atomic builtins) */
  long rounds;    /* the partner answers this many times, then exits */
  int use_spin;
} peer_handoff_t;

static void *peer_handoff_partner(void *arg) {
  peer_handoff_t *h = (peer_handoff_t *)arg;
  long i;
  for (i = 0; i < h->rounds; i++) {
    if (h->use_spin) {
      while (__atomic_load_n(&h->spin_turn, __ATOMIC_ACQUIRE) != 1) PEER_SPIN_PAUSE();
      __atomic_store_n(&h->spin_turn, 0, __ATOMIC_RELEASE);
    } else {
      pthread_mutex_lock(&h->lock);
      while (h->turn != 1) pthread_cond_wait(&h->cond, &h->lock);
      h->turn = 0;
      pthread_cond_signal(&h->cond);
      pthread_mutex_unlock(&h->lock);
    }
  }
  return NULL;
}

/* `runs` runs of `n` round trips each (plus one warm-up run) with a partner
 * thread; the median ns per round trip. use_spin: spin, else condvar. */
static bench_stat_t peer_handoff_measure(int use_spin, int runs, long n) {
  double t[BENCH_MAX_RUNS];
  peer_handoff_t h;
  pthread_t partner;
  long i;
  int r;
  h.turn = 0;
  h.spin_turn = 0;
  h.rounds = (long)(runs + 1) * n;
  h.use_spin = use_spin;
  pthread_mutex_init(&h.lock, NULL);
  pthread_cond_init(&h.cond, NULL);
  if (pthread_create(&partner, NULL, peer_handoff_partner, &h) != 0) {
    fprintf(stderr, "bench: pthread_create failed\n");
    exit(1);
  }
  for (r = -1; r < runs; r++) {
    double t0 = bench_now_ns();
    for (i = 0; i < n; i++) {
      if (use_spin) {
        __atomic_store_n(&h.spin_turn, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&h.spin_turn, __ATOMIC_ACQUIRE) != 0) PEER_SPIN_PAUSE();
      } else {
        pthread_mutex_lock(&h.lock);
        h.turn = 1;
        pthread_cond_signal(&h.cond);
        while (h.turn != 0) pthread_cond_wait(&h.cond, &h.lock);
        pthread_mutex_unlock(&h.lock);
      }
    }
    if (r >= 0) t[r] = (bench_now_ns() - t0) / (double)n;
  }
  pthread_join(partner, NULL);
  pthread_mutex_destroy(&h.lock);
  pthread_cond_destroy(&h.cond);
  return bench_stat_of(t, runs);
}

#endif /* CUBERT_BENCH_PEER_HANDOFF_H */
