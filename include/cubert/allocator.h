/* SPDX-License-Identifier: MIT */
/*
 * cubert/allocator.h: the injected host allocator and an arena over caller
 * memory. (The overflow-checked size helpers the library uses are in
 * cubert/driver/arith.h.)
 *
 * The core never calls malloc. Every object that needs host memory takes a
 * cubert_allocator_t, stores it, and frees itself with it. The libc allocator
 * lives in the OS layer (cubert/os.h: cubert_allocator_libc()).
 */
#ifndef CUBERT_ALLOCATOR_H
#define CUBERT_ALLOCATOR_H

#include "cubert/base.h"
#include "cubert/status.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

/* One size-aware function does everything (Lua's lua_Alloc plus alignment):
 *  - ptr == NULL, new_size > 0: allocate new_size bytes aligned to `align`;
 *  - new_size == 0: free ptr (old_size is the size it was allocated with);
 *    returns NULL; freeing NULL is a no-op;
 *  - otherwise: resize ptr from old_size to new_size, keeping `align`.
 * Returns NULL on failure and then leaves ptr untouched. `align` is a power of
 * two, at least 1. The function must be safe to call from every thread that
 * uses the objects created with it. */
typedef void *(*cubert_alloc_fn_t)(void *self, void *ptr, size_t old_size,
                                   size_t new_size, size_t align);

typedef struct cubert_allocator_t {
  void *self;
  cubert_alloc_fn_t fn;
} cubert_allocator_t;

/* An allocator whose every allocation fails (frees are no-ops). Useful to
 * prove a path does not allocate. Thread-safe. */
CUBERT_API cubert_allocator_t cubert_allocator_null(void);

/* Allocate `size` bytes aligned to `align` (0 means the natural alignment of
 * max_align-like data, 16). Zero-fills the block. Returns
 * CUBERT_STATUS_RESOURCE_EXHAUSTED (kind HOST_OUT_OF_MEMORY, field[0] the
 * size) when the allocator fails, CUBERT_STATUS_INVALID_ARGUMENT (kind
 * INVALID_ARGUMENT, the reason names the argument) for size 0, NULL out_ptr,
 * an allocator without function, or a bad align. On failure *out_ptr is left
 * untouched and *out_error (may be NULL) holds the record. Thread-safe when
 * the allocator is. */
CUBERT_API cubert_status_t cubert_allocator_malloc(cubert_allocator_t allocator, size_t size,
                                                   size_t align, void **out_ptr,
                                                   cubert_error_t *out_error);

/* Allocate count*size bytes (zero-filled); CUBERT_STATUS_OVERFLOW (kind
 * OVERFLOW) when the product overflows, before calling the allocator; the
 * codes of cubert_allocator_malloc otherwise. */
CUBERT_API cubert_status_t cubert_allocator_malloc_array(cubert_allocator_t allocator,
                                                         size_t count, size_t size,
                                                         size_t align, void **out_ptr,
                                                         cubert_error_t *out_error);

/* Resize a block (ptr NULL: allocate). On failure the old block is untouched
 * and still owned by the caller; new bytes past old_size are zero-filled.
 * The codes and records of cubert_allocator_malloc (new_size 0 is
 * INVALID_ARGUMENT). */
CUBERT_API cubert_status_t cubert_allocator_realloc(cubert_allocator_t allocator, void *ptr,
                                                    size_t old_size, size_t new_size,
                                                    size_t align, void **out_ptr,
                                                    cubert_error_t *out_error);

/* Free a block allocated with `size` bytes. NULL is a no-op. */
CUBERT_API void cubert_allocator_free(cubert_allocator_t allocator, void *ptr, size_t size,
                                      size_t align);

/* ---- arena: a bump allocator over a caller buffer ------------------------- */

/* Caller-owned state; the buffer is borrowed for the arena's lifetime.
 * Frees are accepted; only the most recent block is actually returned to the
 * arena (stack discipline), resizing the most recent block is in place.
 * Not thread-safe: one thread at a time (wrap it if shared). */
typedef struct cubert_arena_t {
  unsigned char *base;
  size_t capacity;
  size_t used;
  size_t high_water;
  void *last;       /* most recent block, for in-place resize/free */
  size_t last_size;
} cubert_arena_t;

/* Initialize `arena` over buffer[0..capacity) and return an allocator that
 * draws from it (through *out_allocator). CUBERT_STATUS_INVALID_ARGUMENT
 * (kind INVALID_ARGUMENT, the reason names the argument) for NULL
 * arena/out_allocator or a NULL buffer with a non-zero capacity; nothing is
 * written then. Not thread-safe (the arena is the caller's). */
CUBERT_API cubert_status_t cubert_arena_initialize(cubert_arena_t *arena, void *buffer,
                                                   size_t capacity,
                                                   cubert_allocator_t *out_allocator,
                                                   cubert_error_t *out_error);

/* Forget every block; the buffer may be reused. */
CUBERT_API void cubert_arena_reset(cubert_arena_t *arena);

CUBERT_EXTERN_C_END

#endif /* CUBERT_ALLOCATOR_H */
