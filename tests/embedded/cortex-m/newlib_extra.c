/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/cortex-m/newlib_extra.c: POSIX calls the test support code uses that
 * newlib for arm-none-eabi declares but does not implement (harness only).
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

int posix_memalign(void **out, size_t align, size_t size) {
  void *p;
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  p = memalign(align, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
