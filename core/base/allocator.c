/* SPDX-License-Identifier: MIT */
/* core/base/allocator.c: allocator wrappers, checked size arithmetic, arena. */
#include "base/internal.h"
#include "cubert/driver/arith.h"

/* ---- checked arithmetic ------------------------------------------------- */

cubert_status_t cubert_size_mul(size_t a, size_t b, size_t *out) {
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (a != 0 && b > SIZE_MAX / a) return CUBERT_STATUS_OVERFLOW;
  *out = a * b;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_size_add(size_t a, size_t b, size_t *out) {
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (b > SIZE_MAX - a) return CUBERT_STATUS_OVERFLOW;
  *out = a + b;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_size_mul_add(size_t a, size_t b, size_t c, size_t *out) {
  size_t m;
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert_size_mul(a, b, &m));
  return cubert_size_add(m, c, out);
}

cubert_status_t cubert_size_align_up(size_t value, size_t align, size_t *out) {
  if (!out || !cubert__is_pow2(align)) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (value > SIZE_MAX - (align - 1)) return CUBERT_STATUS_OVERFLOW;
  *out = (value + (align - 1)) & ~(align - 1);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_u64_mul(uint64_t a, uint64_t b, uint64_t *out) {
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (a != 0 && b > UINT64_MAX / a) return CUBERT_STATUS_OVERFLOW;
  *out = a * b;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_u64_add(uint64_t a, uint64_t b, uint64_t *out) {
  if (!out) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (b > UINT64_MAX - a) return CUBERT_STATUS_OVERFLOW;
  *out = a + b;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_u64_round_up(uint64_t value, uint64_t multiple, uint64_t *out) {
  uint64_t rem;
  if (!out || multiple == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
  /* a power of two (alignments, every caller on a hot path): no division */
  rem = (multiple & (multiple - 1u)) == 0 ? value & (multiple - 1u) : value % multiple;
  if (rem == 0) {
    *out = value;
    return CUBERT_STATUS_OK;
  }
  if (multiple - rem > UINT64_MAX - value) return CUBERT_STATUS_OVERFLOW;
  *out = value + (multiple - rem);
  return CUBERT_STATUS_OK;
}

/* ---- allocator wrappers -------------------------------------------------- */

static void *null_alloc_fn(void *self, void *ptr, size_t old_size, size_t new_size,
                           size_t align) {
  (void)self;
  (void)ptr;
  (void)old_size;
  (void)new_size;
  (void)align;
  return NULL;
}

cubert_allocator_t cubert_allocator_null(void) {
  cubert_allocator_t a;
  a.self = NULL;
  a.fn = null_alloc_fn;
  return a;
}

static size_t effective_align(size_t align) { return align == 0 ? 16 : align; }

/* The record of a failed allocation: HOST_OUT_OF_MEMORY with the size. */
static cubert_status_t host_oom(cubert_error_t *out_error, size_t size, const char *reason) {
  uint64_t field = (uint64_t)size;
  return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &field, 1, reason);
}

static cubert_status_t check_allocation(cubert_allocator_t allocator, size_t size, size_t align,
                                        void **out_ptr, cubert_error_t *out_error) {
  if (!out_ptr) return cubert__invalid_argument(out_error, "allocator: out_ptr is NULL");
  if (size == 0) return cubert__invalid_argument(out_error, "allocator: size is 0");
  if (!allocator.fn)
    return cubert__invalid_argument(out_error, "allocator: the allocator has no function");
  if (!cubert__is_pow2(align))
    return cubert__invalid_argument(out_error, "allocator: align is not a power of two");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_allocator_malloc(cubert_allocator_t allocator, size_t size, size_t align,
                                        void **out_ptr, cubert_error_t *out_error) {
  void *p;
  align = effective_align(align);
  CUBERT_RETURN_IF_ERROR(check_allocation(allocator, size, align, out_ptr, out_error));
  p = allocator.fn(allocator.self, NULL, 0, size, align);
  if (!p) return host_oom(out_error, size, "allocator: the allocator failed");
  cubert_memset(p, 0, size);
  *out_ptr = p;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_allocator_malloc_array(cubert_allocator_t allocator, size_t count,
                                              size_t size, size_t align, void **out_ptr,
                                              cubert_error_t *out_error) {
  size_t total;
  if (!out_ptr) return cubert__invalid_argument(out_error, "allocator: out_ptr is NULL");
  if (cubert_size_mul(count, size, &total) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "allocator: count * size overflows");
  return cubert_allocator_malloc(allocator, total, align, out_ptr, out_error);
}

cubert_status_t cubert_allocator_realloc(cubert_allocator_t allocator, void *ptr,
                                         size_t old_size, size_t new_size, size_t align,
                                         void **out_ptr, cubert_error_t *out_error) {
  void *p;
  align = effective_align(align);
  CUBERT_RETURN_IF_ERROR(check_allocation(allocator, new_size, align, out_ptr, out_error));
  if (!ptr) return cubert_allocator_malloc(allocator, new_size, align, out_ptr, out_error);
  p = allocator.fn(allocator.self, ptr, old_size, new_size, align);
  if (!p) return host_oom(out_error, new_size, "allocator: the allocator failed to resize");
  if (new_size > old_size) cubert_memset((unsigned char *)p + old_size, 0, new_size - old_size);
  *out_ptr = p;
  return CUBERT_STATUS_OK;
}

void cubert_allocator_free(cubert_allocator_t allocator, void *ptr, size_t size, size_t align) {
  if (!ptr || !allocator.fn) return;
  (void)allocator.fn(allocator.self, ptr, size, 0, effective_align(align));
}

/* ---- arena ----------------------------------------------------------------- */

static void *arena_fn(void *self, void *ptr, size_t old_size, size_t new_size, size_t align) {
  cubert_arena_t *arena = (cubert_arena_t *)self;
  uintptr_t base, cur, aligned;
  if (new_size == 0) {
    /* Free: only the most recent block gives its bytes back. */
    if (ptr && ptr == arena->last) {
      arena->used = (size_t)((unsigned char *)ptr - arena->base);
      arena->last = NULL;
      arena->last_size = 0;
    }
    return NULL;
  }
  if (!cubert__is_pow2(align)) return NULL;
  if (ptr && ptr == arena->last) {
    /* Resize the most recent block in place when it fits. */
    size_t start = (size_t)((unsigned char *)ptr - arena->base);
    if (new_size <= arena->capacity - start) {
      arena->used = start + new_size;
      arena->last_size = new_size;
      if (arena->used > arena->high_water) arena->high_water = arena->used;
      return ptr;
    }
    return NULL;
  }
  base = (uintptr_t)arena->base;
  cur = base + arena->used;
  if (cur > UINTPTR_MAX - (align - 1)) return NULL;
  aligned = (cur + (align - 1)) & ~((uintptr_t)align - 1);
  if (aligned - base > arena->capacity || new_size > arena->capacity - (aligned - base))
    return NULL;
  arena->used = (size_t)(aligned - base) + new_size;
  if (arena->used > arena->high_water) arena->high_water = arena->used;
  if (ptr) cubert_memcpy((void *)aligned, ptr, old_size < new_size ? old_size : new_size);
  arena->last = (void *)aligned;
  arena->last_size = new_size;
  return (void *)aligned;
}

cubert_status_t cubert_arena_initialize(cubert_arena_t *arena, void *buffer, size_t capacity,
                                        cubert_allocator_t *out_allocator,
                                        cubert_error_t *out_error) {
  if (!arena) return cubert__invalid_argument(out_error, "cubert_arena_initialize: arena is NULL");
  if (!out_allocator)
    return cubert__invalid_argument(out_error, "cubert_arena_initialize: out_allocator is NULL");
  if (!buffer && capacity)
    return cubert__invalid_argument(out_error,
                                    "cubert_arena_initialize: buffer is NULL, capacity is not 0");
  arena->base = (unsigned char *)buffer;
  arena->capacity = capacity;
  arena->used = 0;
  arena->high_water = 0;
  arena->last = NULL;
  arena->last_size = 0;
  out_allocator->self = arena;
  out_allocator->fn = arena_fn;
  return CUBERT_STATUS_OK;
}

void cubert_arena_reset(cubert_arena_t *arena) {
  if (!arena) return;
  arena->used = 0;
  arena->last = NULL;
  arena->last_size = 0;
}
