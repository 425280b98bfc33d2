/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/critical_section_host.c: see critical_section_host.h.
 */
#include "critical_section_host.h"

#include <pthread.h>

#include "cubert/critical_section.h"

static pthread_mutex_t g_lock;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static uint64_t g_enters, g_exits;
static int g_open;

static void init_lock(void) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&g_lock, &attr);
  pthread_mutexattr_destroy(&attr);
}

cubert_critical_state_t cubert_critical_enter(void) {
  pthread_once(&g_once, init_lock);
  if (pthread_mutex_lock(&g_lock) != 0) __builtin_trap(); /* EDEADLK: a nested enter */
  if (g_open) __builtin_trap();
  g_open = 1;
  g_enters++;
  return 0x5EC7u;
}

void cubert_critical_exit(cubert_critical_state_t state) {
  if (state != 0x5EC7u || !g_open) __builtin_trap(); /* not the state enter returned */
  g_open = 0;
  g_exits++;
  if (pthread_mutex_unlock(&g_lock) != 0) __builtin_trap();
}

static uint64_t locked_read(const uint64_t *v) {
  uint64_t r;
  pthread_once(&g_once, init_lock);
  pthread_mutex_lock(&g_lock);
  r = *v;
  pthread_mutex_unlock(&g_lock);
  return r;
}

uint64_t critical_section_host_enters(void) { return locked_read(&g_enters); }
uint64_t critical_section_host_exits(void) { return locked_read(&g_exits); }

int critical_section_host_open(void) {
  int r;
  pthread_once(&g_once, init_lock);
  pthread_mutex_lock(&g_lock);
  r = g_open;
  pthread_mutex_unlock(&g_lock);
  return r;
}
