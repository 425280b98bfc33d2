/*
 * cubert/host.h: the hosted layer (backend-cpu): what needs an OS.
 * Not part of the freestanding core; link libcubert (which includes it) on a
 * hosted platform.
 */
#ifndef CUBERT_HOST_H
#define CUBERT_HOST_H

#include "cubert/allocator.h"

CUBERT_EXTERN_C_BEGIN

/* The libc allocator (aligned allocation through posix_memalign; resizing
 * copies). Thread-safe, may block briefly inside libc. */
CUBERT_API cubert_allocator_t cubert_allocator_libc(void);

CUBERT_EXTERN_C_END

#endif /* CUBERT_HOST_H */
