/* SPDX-License-Identifier: MIT */
/*
 * core/memory/memory.h: device memory management (CubeCL's MemoryManagement,
 * memory pools, MemoryConfiguration, MemoryPoolReport), for servers. The usage
 * figures and the allocation mode users see: cubert/memory.h.
 *
 * A memory manager owns the device memory of one stream slot. It carves user
 * allocations out of pools of storage allocations ("pages") obtained through
 * a storage vtable (the driver: CUDA device memory, host bytes, ...), and
 * keeps its own bookkeeping in memory from the injected host allocator.
 *
 * Pools: sliced pages (first fit in shared pages, coalescing,
 * optional capacity cap), exclusive pages (one allocation per page, periodic
 * release), persistent (exact padded-size reuse, always present, position
 * 255) and direct (one storage allocation per reservation, reclaimed above a
 * watermark). A configuration (SubSlices / ExclusivePages presets or an
 * explicit list) says which dynamic pools exist and in which order a request
 * is routed through them.
 *
 * Ownership of memory ids (core/memory/handle_table.h): reserve() acquires a new memory
 * id from the handle table, makes the pool its owner and returns it holding
 * one user handle reference. A slice is reusable once every user handle and
 * binding of its owner is released (cubert__memory_id_is_free). bind() moves a
 * slice to another id; lookups check that the binding is the slice's current
 * owner, so a stale binding never resolves to a later allocation.
 *
 * Threading: a manager is single-threaded. One thread (the server thread that
 * owns the stream slot) calls every cubert_memory_manager_* function; handles
 * and bindings of its ids may be released concurrently from any thread (the
 * table's counts are atomic, the manager only reads them). Nothing here
 * blocks; the storage vtable's functions must not block indefinitely.
 *
 * Release detection: the handle table does not notify the manager when a
 * user releases an id, so the pools find freed slices by polling. A sliced
 * pool polls when nothing known-free fits: its oldest allocations first,
 * then the rest (full scans of large pools are amortized); memory_usage()
 * and reports poll everything first, so their figures are exact. See
 * docs/memory.md.
 */
#ifndef CUBERT_CORE_MEMORY_MEMORY_H
#define CUBERT_CORE_MEMORY_MEMORY_H

#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/memory.h"
#include "cubert/properties.h"
#include "memory/handle_table.h"

CUBERT_EXTERN_C_BEGIN

/* ---- storage ------------------------------------------------------------ */

/* A storage allocation, or a part of one. `id` is chosen by the storage. */
typedef struct cubert_storage_handle_t {
  uint64_t id;
  uint64_t offset; /* bytes from the start of the allocation */
  uint64_t size;   /* bytes covered */
} cubert_storage_handle_t;

/* What a storage handle resolves to: a host pointer (host storages) and/or a
 * device address (device storages), already offset, and the size. */
typedef struct cubert_storage_resource_t {
  void *ptr;        /* NULL when the memory is not host-addressable */
  uint64_t address; /* device address (host storages: the pointer's value) */
  uint64_t size;
} cubert_storage_resource_t;

/* The driver's storage (CubeCL's ComputeStorage). Called only from the
 * manager's thread. `self` is the storage's state.
 *  alignment: the storage's alignment in bytes (used when the device
 *    properties give alignment 0).
 *  alloc: a new allocation of `size` bytes (size 0 is allowed); fills
 *    *out_handle {id, 0, size}. Fails with OUT_OF_MEMORY (IoError::OutOfMemory,
 *    the manager then reclaims and retries once), BUFFER_TOO_BIG, or any other
 *    code; nothing allocated then.
 *  get: resolve a handle (offset/size within the allocation). NOT_FOUND
 *    (IoError::StorageHandleNotFound) for an unknown id.
 *  dealloc: release an allocation (may be deferred until flush).
 *  flush: perform deferred deallocations. */
typedef struct cubert_storage_vtable_t {
  uint64_t (*alignment)(void *self);
  cubert_status_t (*alloc)(void *self, uint64_t size, cubert_storage_handle_t *out_handle,
                           cubert_error_t *out_error);
  cubert_status_t (*get)(void *self, const cubert_storage_handle_t *handle,
                         cubert_storage_resource_t *out_resource, cubert_error_t *out_error);
  void (*dealloc)(void *self, uint64_t id);
  void (*flush)(void *self);
} cubert_storage_vtable_t;

typedef struct cubert_storage_t {
  void *self;
  const cubert_storage_vtable_t *vtable;
} cubert_storage_t;

/* The pool configuration types (cubert_memory_configuration_t, ...) are user-facing:
 * cubert/memory.h. */

/* ---- memory manager ------------------------------------------------------ */

/* Config memory.persistent_memory. */
typedef enum cubert_persistent_memory_e {
  CUBERT_PERSISTENT_MEMORY_ENABLED = 0,    /* default: windows route to the persistent pool */
  CUBERT_PERSISTENT_MEMORY_SIZE_MATCH = 1, /* also serve Auto requests matching a bucket */
  CUBERT_PERSISTENT_MEMORY_DISABLED = 2,   /* mode changes ignored (always Auto) */
  CUBERT_PERSISTENT_MEMORY_ENFORCED = 3,   /* always Persistent; mode changes ignored */
  CUBERT_PERSISTENT_MEMORY_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_persistent_memory_t;

typedef struct cubert_memory_manager_options_t {
  cubert_persistent_memory_t persistent_memory;
  /* When true, `initial_mode` is the starting mode whatever persistent_memory
   * says (CubeCL: a manager created with an explicit mode). */
  bool has_initial_mode;
  cubert_memory_allocation_mode_t initial_mode;
  /* Reclaim-and-retry (cubert's default, CubeCL does it in the CUDA server):
   * when the storage fails an allocation with OUT_OF_MEMORY, run an explicit
   * cleanup and retry the reservation once. */
  bool reclaim_and_retry;
  /* Oldest slices a sliced pool polls for release at every reservation;
   * 0 (the default, the fastest) polls only when no known-free slice fits. */
  uint32_t poll_per_reserve;
  /* Newest slices a sliced pool polls for release at every reservation,
   * while they are released (0, the default: none). A thread that releases
   * what it just reserved (a temporary, the reserve + release loop) has its
   * slice found free at its next reservation instead of after a page's
   * worth of reservations (the lazy poll above): the pool then holds one
   * such slice and one such id, not hundreds, and the handle table lane of
   * the manager (handle_lane) stays in its one chunk, where no other
   * stream's thread writes (issue 27). The server's stream slots use it. */
  uint32_t poll_newest;
  /* The handle table lane of the manager's new ids (0, the default; any
   * value, modulo CUBERT_HANDLE_TABLE_LANES): managers that reserve from
   * different threads at once (the stream slots of a server) give distinct
   * lanes, so their ids come from distinct chunks of the table
   * (cubert__memory_id_acquire_owned_lane). */
  uint32_t handle_lane;
  /* The manager and its dynamic pools are allocated aligned and padded to
   * CUBERT_FALSE_SHARING_BYTES (core/base/internal.h): false (the default)
   * for a manager alone on its device; true for the stream slots of a server
   * with several streams, whose managers are written at every reservation
   * by different threads and must not share a line (or a prefetched line
   * pair) through an allocator that packs their blocks together. */
  bool padded;
} cubert_memory_manager_options_t;

/* Defaults: ENABLED, no explicit mode, reclaim_and_retry true. NULL no-op. */
void cubert__memory_manager_options_initialize(cubert_memory_manager_options_t *options);

typedef struct cubert_memory_manager_t cubert_memory_manager_t;

/* Create a manager over `storage` (borrowed: it must outlive the manager) and
 * `table` (borrowed), with the dynamic pools of `config` for `props`
 * (alignment = props.alignment, or the storage's when 0) and an empty
 * persistent pool. options NULL = defaults. Allocates only bookkeeping.
 * Errors: INVALID_ARGUMENT (NULL pointers, a vtable without functions),
 * RESOURCE_EXHAUSTED (host allocator), the configuration errors of
 * cubert_memory_configuration_pools. Not thread-safe. */
cubert_status_t cubert__memory_manager_create(
    cubert_allocator_t allocator, cubert_storage_t storage, cubert_handle_table_t *table,
    cubert_memory_device_properties_t props, const cubert_memory_configuration_t *config,
    const cubert_memory_manager_options_t *options, cubert_memory_manager_t **out_manager,
    cubert_error_t *out_error);

/* Free every storage allocation (flushing the storage) and the bookkeeping;
 * the pool drops its ownership of every id (ids users still hold stay valid
 * in the table but no longer resolve to memory). NULL is a no-op. */
void cubert__memory_manager_destroy(cubert_memory_manager_t *manager);

/* reserve(size): periodic cleanup, then the persistent pool (in a
 * persistent window / size-match) or the first accepting dynamic pool (reuse,
 * else a new page; a full capped pool spills to the next accepting pool).
 * *out_id: a new memory id owned by the pool, holding one user handle
 * reference (release it with cubert__memory_id_release_handle).
 * Errors (no side effect: no id, no allocation kept; only freed memory may
 * have been returned to the storage):
 *  BUFFER_TOO_BIG (no pool accepts; fields: size),
 *  POOL_CAPACITY_EXCEEDED (every accepting pool is capped and full; fields:
 *    size, capacity, in_use of the last one),
 *  OUT_OF_MEMORY (the storage failed; after one reclaim-and-retry when
 *    enabled). The record then carries the manager's report: field[0] size,
 *    field[1] bytes_reserved, field[2] bytes_in_use, field[3] largest free
 *    block, field2[0] bytes_padding, field2[1] number_allocs, and the reason
 *    text "reserved X, in use Y, padding Z, largest free block W",
 *  any other status the storage's alloc returned,
 *  RESOURCE_EXHAUSTED / OUT_OF_RANGE (host allocator / handle table full),
 *  INVALID_ARGUMENT (NULL). */
cubert_status_t cubert__memory_manager_reserve(cubert_memory_manager_t *manager,
                                                         uint64_t size,
                                                         cubert_memory_id_t *out_id,
                                                         cubert_error_t *out_error);

/* bind(reserved, assigned, cursor): move the slice of `reserved` to
 * `assigned` (which must be alive and not yet bound), copying the location
 * and recording `cursor`; `reserved` then no longer resolves. Errors:
 * NOT_FOUND ("Reserved memory isn't initialized", "Memory pool N doesn't
 * exist", and the find reasons below for `reserved`), INVALID_HANDLE (a dead
 * id), INVALID_ARGUMENT (assigned already bound, or equal to reserved). */
cubert_status_t cubert__memory_manager_bind(cubert_memory_manager_t *manager,
                                                      cubert_memory_id_t reserved,
                                                      cubert_memory_id_t assigned,
                                                      uint64_t cursor, cubert_error_t *out_error);

/* Lookups of a live binding (any id holding a reference). NOT_FOUND with the
 * CubeCL's reasons: "Memory location was never initialized", "Pool N doesn't
 * exist", "Memory page N doesn't exist", "Memory slice N doesn't exist",
 * "Memory location points to a different allocation" (identity check: the
 * slice belongs to another id); INVALID_HANDLE for a dead id. */
cubert_status_t cubert__memory_manager_get_cursor(cubert_memory_manager_t *manager,
                                                            cubert_memory_id_t binding,
                                                            uint64_t *out_cursor,
                                                            cubert_error_t *out_error);
/* The storage handle of the binding: {page id, offset in the page, requested
 * size} (padding excluded). Errors as get_cursor. */
cubert_status_t cubert__memory_manager_get_storage(cubert_memory_manager_t *manager,
                                                             cubert_memory_id_t binding,
                                                             cubert_storage_handle_t *out_handle,
                                                             cubert_error_t *out_error);
/* get_storage narrowed by offset_start / offset_end (0 = none), resolved by
 * the storage's get. OUT_OF_RANGE when the offsets exceed the size; errors of
 * get_cursor and of the storage's get. */
cubert_status_t cubert__memory_manager_get_resource(
    cubert_memory_manager_t *manager, cubert_memory_id_t binding, uint64_t offset_start,
    uint64_t offset_end, cubert_storage_resource_t *out_resource, cubert_error_t *out_error);

/* cleanup(explicit). Periodic (explicit false): exclusive pools
 * age their free pages and release those seen free at 5 checks, every
 * dealloc_period/5 reservations; nothing else. Explicit: every dynamic pool
 * releases its free pages/slices (sliced pages only when wholly free), the
 * persistent pool its free slices. The storage is flushed after any cleanup
 * that released memory, and always after an explicit one. Never fails. */
void cubert__memory_manager_cleanup(cubert_memory_manager_t *manager, bool explicit_);

/* mode(m): Persistent opens a (nested) persistent window, Auto
 * closes one (saturating). Ignored when persistent_memory is DISABLED or
 * ENFORCED. */
void cubert__memory_manager_set_mode(cubert_memory_manager_t *manager,
                                               cubert_memory_allocation_mode_t mode);
/* The effective mode. */
cubert_memory_allocation_mode_t cubert__memory_manager_mode(
    const cubert_memory_manager_t *manager);

/* install_pools(config, props): explicit cleanup, then replace
 * the dynamic pools (peaks and capacity latches reset). The persistent pool
 * is untouched. Errors (old layout kept): FAILED_PRECONDITION
 * (INSTALL_POOLS_IN_USE {bytes_in_use}), the configuration errors,
 * RESOURCE_EXHAUSTED. */
cubert_status_t cubert__memory_manager_install_pools(
    cubert_memory_manager_t *manager, const cubert_memory_configuration_t *config,
    cubert_memory_device_properties_t props, cubert_error_t *out_error);

/* Release the pools of a stream slot whose thread is gone (cubert's
 * addition; CubeCL never reclaims them, burn#4792): every free page
 * and slice of every pool, persistent included, goes back to the storage,
 * and the bookkeeping of pools left empty goes back to the allocator.
 * Allocations still referenced stay valid. *out_remaining (may be NULL) gets
 * the usage left; when its number_allocs is 0 the manager holds no storage
 * and may be destroyed. Never fails (OK; INVALID_ARGUMENT for NULL). */
cubert_status_t cubert__memory_manager_release_pools(
    cubert_memory_manager_t *manager, cubert_memory_usage_t *out_remaining);

/* memory_usage(): sum over dynamic pools and the persistent pool (polls every
 * allocation for release first, so it is exact). */
cubert_memory_usage_t cubert__memory_manager_memory_usage(
    cubert_memory_manager_t *manager);

/* Number of dynamic pools of the current layout. */
uint32_t cubert__memory_manager_pool_count(const cubert_memory_manager_t *manager);

/* memory_report(): one report per dynamic pool in routing order (at most
 * `capacity` written to out_dynamic; *out_count gets the pool count) and the
 * persistent pool's in *out_persistent (may be NULL). Polls first.
 * OUT_OF_RANGE when capacity < pool count (the first `capacity` written). */
cubert_status_t cubert__memory_manager_report(cubert_memory_manager_t *manager,
                                                        cubert_memory_pool_report_t *out_dynamic,
                                                        uint32_t capacity, uint32_t *out_count,
                                                        cubert_memory_pool_report_t *out_persistent);

/* Reservations made so far (CubeCL's alloc_reserve_count; it paces the
 * periodic cleanups). */
uint64_t cubert__memory_manager_alloc_reserve_count(
    const cubert_memory_manager_t *manager);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CORE_MEMORY_MEMORY_H */
