/* SPDX-License-Identifier: MIT */
/* os/os_allocator.c: the libc allocator behind cubert_allocator_t. */
#include <stdlib.h>
#include <string.h>

#include "cubert/os.h"

static void *libc_fn(void *self, void *ptr, size_t old_size, size_t new_size, size_t align) {
  void *p = NULL;
  (void)self;
  if (new_size == 0) {
    free(ptr);
    return NULL;
  }
  if (align < sizeof(void *)) align = sizeof(void *);
  if (posix_memalign(&p, align, new_size) != 0) return NULL;
  if (ptr) {
    memcpy(p, ptr, old_size < new_size ? old_size : new_size);
    free(ptr);
  }
  return p;
}

cubert_allocator_t cubert_allocator_libc(void) {
  cubert_allocator_t a;
  a.self = NULL;
  a.fn = libc_fn;
  return a;
}
