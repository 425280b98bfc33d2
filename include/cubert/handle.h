/*
 * cubert/handle.h: managed memory handles, bindings and their reference counts
 * (CubeCL's Handle / Binding / managed memory descriptor; spec 4.1).
 *
 * A handle table (one per device) holds one slot per managed memory id. A
 * memory id is {index, generation}: using an id whose generation no longer
 * matches its slot (stale, forged, double-released) returns
 * CUBERT_STATUS_INVALID_HANDLE deterministically and never touches the slot's
 * new occupant.
 *
 * Two counts per slot, as in CubeCL (spec 4.1):
 *  - the descriptor count: user handles + user bindings. It decides "free":
 *    a slot is free (its pool slice may be reused) when this count is 0.
 *  - the handle count: user handles only. It decides "can mutate in place":
 *    can_mut when it is <= 1 (bindings are ignored).
 *  (CubeCL counts the pool's own reference too and tests `<= 1` / `<= 2`; here
 *  the pool's reference is the separate `owned` flag, so a user's double
 *  release can never eat the pool's reference.)
 * When the descriptor count drops to 0 the id's generation advances: every
 * user id of that slot is dead from then on. The slot itself returns to the
 * free list once it is also not owned by a pool.
 *
 * Counts are atomic (32-bit, see core/atomic.h): handles and bindings may be
 * retained/released from any thread. retain refuses 0 -> 1 (no resurrection)
 * and saturates: at CUBERT_HANDLE_MAX_COUNT it returns CUBERT_STATUS_OVERFLOW
 * with the count unchanged. The location (which pool, page, slice) is written
 * only by the owning server thread.
 */
#ifndef CUBERT_HANDLE_H
#define CUBERT_HANDLE_H

#include "cubert/allocator.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

#define CUBERT_HANDLE_MAX_COUNT 0x3FFFFFFFu

/* Identifies a managed memory slot. {0, 0} is the null id (never issued). */
typedef struct cubert_memory_id_t {
  uint32_t index;      /* slot index + 1 (0 = null) with a table tag in the top 8 bits */
  uint32_t generation; /* odd while the id is alive */
} cubert_memory_id_t;

/* Where a pool put the memory of an id (spec 4.1 MemoryLocation).
 * init == 0: not bound to any pool yet. */
typedef struct cubert_memory_location_t {
  uint8_t pool;   /* 0..253 dynamic pools, 255 = persistent pool */
  uint8_t init;
  uint16_t page;
  uint32_t slice;
} cubert_memory_location_t;

typedef struct cubert_handle_table_t cubert_handle_table_t;

/* Create a table of at most max_slots slots (grown in chunks as needed, never
 * moved, so lookups are lock-free). `tag` (0..255) is stamped into every id so
 * an id of another table is rejected. Returns INVALID_ARGUMENT (NULL out,
 * max_slots 0 or above 2^24-1), RESOURCE_EXHAUSTED. Not thread-safe (setup). */
CUBERT_API cubert_status_t cubert_handle_table_create(cubert_allocator_t allocator,
                                                      uint32_t max_slots, uint8_t tag,
                                                      cubert_handle_table_t **out_table);

/* Destroy the table and every slot, live or not. NULL is a no-op. The caller
 * guarantees no other thread uses the table. */
CUBERT_API void cubert_handle_table_destroy(cubert_handle_table_t *table);

/* Number of slots currently in use (allocated and not yet returned). */
CUBERT_API uint32_t cubert_handle_table_live(const cubert_handle_table_t *table);

/* A new id with handle count 1 and descriptor count 1, not owned, location
 * init 0. RESOURCE_EXHAUSTED when the injected allocator fails growing the
 * table, OUT_OF_RANGE when max_slots are all live. Thread-safe, lock-free. */
CUBERT_API cubert_status_t cubert_memory_id_acquire(cubert_handle_table_t *table,
                                                    cubert_memory_id_t *out_id);

/* +1 handle count and +1 descriptor count. INVALID_HANDLE (dead/forged/other
 * table), OVERFLOW (saturated). Thread-safe. */
CUBERT_API cubert_status_t cubert_memory_id_retain_handle(cubert_handle_table_t *table,
                                                          cubert_memory_id_t id);
/* -1 both counts. INVALID_HANDLE for a dead id (e.g. a double release). */
CUBERT_API cubert_status_t cubert_memory_id_release_handle(cubert_handle_table_t *table,
                                                           cubert_memory_id_t id);
/* +1 / -1 descriptor count only (a binding). Same codes. */
CUBERT_API cubert_status_t cubert_memory_id_retain_binding(cubert_handle_table_t *table,
                                                           cubert_memory_id_t id);
CUBERT_API cubert_status_t cubert_memory_id_release_binding(cubert_handle_table_t *table,
                                                            cubert_memory_id_t id);

/* Pool ownership: a pool slice takes (owned = true) or drops (false) its
 * reference on the slot. Taking ownership needs a live id. Dropping it may
 * return the slot to the free list. INVALID_HANDLE for a dead id (take) or an
 * id whose slot is not owned (drop). Thread-safe. */
CUBERT_API cubert_status_t cubert_memory_id_set_owned(cubert_handle_table_t *table,
                                                      cubert_memory_id_t id, bool owned);

/* True when the id is alive in this table. */
CUBERT_API bool cubert_memory_id_is_alive(const cubert_handle_table_t *table,
                                          cubert_memory_id_t id);
/* is_free: descriptor count is 0 (a dead id is free). can_mut: handle count
 * <= 1 (false for a dead id). Lock-free reads; the answer may be stale by the
 * time it is used unless the caller knows no other thread holds references. */
CUBERT_API bool cubert_memory_id_is_free(const cubert_handle_table_t *table,
                                         cubert_memory_id_t id);
CUBERT_API bool cubert_memory_id_can_mut(const cubert_handle_table_t *table,
                                         cubert_memory_id_t id);
/* Current counts (0 for a dead id), for tests and reports. */
CUBERT_API uint32_t cubert_memory_id_handle_count(const cubert_handle_table_t *table,
                                                  cubert_memory_id_t id);
CUBERT_API uint32_t cubert_memory_id_descriptor_count(const cubert_handle_table_t *table,
                                                      cubert_memory_id_t id);

/* Location of the slot (server thread only). The id may be dead but still
 * owned (the pool keeps reading its slice's location). INVALID_HANDLE when the
 * slot was recycled since. */
CUBERT_API cubert_status_t cubert_memory_id_location(const cubert_handle_table_t *table,
                                                     cubert_memory_id_t id,
                                                     cubert_memory_location_t *out_location);
CUBERT_API cubert_status_t cubert_memory_id_set_location(cubert_handle_table_t *table,
                                                         cubert_memory_id_t id,
                                                         cubert_memory_location_t location);

/* ---- user-facing handles and bindings (spec 4.1, 5.3) ---------------------
 *
 * A handle is a value: a reference to (part of) one base allocation, plus the
 * device and stream it was created on and the stream cursor at creation.
 * Copying the struct does not retain; use cubert_handle_clone. Every handle
 * obtained from a create/clone/offset call must be released exactly once.
 * A binding has the same shape but holds only a descriptor reference.
 */
typedef struct cubert_handle_t {
  cubert_memory_id_t memory;
  uint32_t device;       /* device id index */
  uint32_t reserved_;
  uint64_t stream;       /* stream id value */
  uint64_t cursor;       /* position on that stream when created */
  uint64_t offset_start; /* bytes skipped at the start of the base allocation */
  uint64_t offset_end;   /* bytes skipped at the end */
  uint64_t size;         /* size of the base allocation in bytes */
} cubert_handle_t;

typedef cubert_handle_t cubert_binding_t;

/* Bytes this (sub-)handle covers: size - offset_start - offset_end. */
CUBERT_API uint64_t cubert_handle_size_in_used(const cubert_handle_t *handle);

/* A new handle (new memory id) of `size` bytes for device/stream/cursor, not
 * yet backed by memory. INVALID_ARGUMENT for NULL pointers; codes of
 * cubert_memory_id_acquire. Thread-safe. */
CUBERT_API cubert_status_t cubert_handle_create(cubert_handle_table_t *table, uint32_t device,
                                                uint64_t stream, uint64_t cursor, uint64_t size,
                                                cubert_handle_t *out_handle);
/* Retain another handle reference: *out = *handle. */
CUBERT_API cubert_status_t cubert_handle_clone(cubert_handle_table_t *table,
                                               const cubert_handle_t *handle,
                                               cubert_handle_t *out_handle);
/* A sub-handle: a new handle reference trimmed by a further offset_start /
 * offset_end (added to the existing offsets). OUT_OF_RANGE when the trimmed
 * range would be negative, OVERFLOW when sums overflow; nothing retained then. */
CUBERT_API cubert_status_t cubert_handle_offset(cubert_handle_table_t *table,
                                                const cubert_handle_t *handle,
                                                uint64_t offset_start, uint64_t offset_end,
                                                cubert_handle_t *out_handle);
/* A binding (descriptor reference) of the handle's range. */
CUBERT_API cubert_status_t cubert_handle_binding(cubert_handle_table_t *table,
                                                 const cubert_handle_t *handle,
                                                 cubert_binding_t *out_binding);
CUBERT_API cubert_status_t cubert_binding_clone(cubert_handle_table_t *table,
                                                const cubert_binding_t *binding,
                                                cubert_binding_t *out_binding);
/* Release a handle / binding reference. NULL pointer: INVALID_ARGUMENT; a dead
 * id: INVALID_HANDLE (nothing changes). */
CUBERT_API cubert_status_t cubert_handle_release(cubert_handle_table_t *table,
                                                 const cubert_handle_t *handle);
CUBERT_API cubert_status_t cubert_binding_release(cubert_handle_table_t *table,
                                                  const cubert_binding_t *binding);
/* can_mut of the handle's memory (see above). */
CUBERT_API bool cubert_handle_can_mut(const cubert_handle_table_t *table,
                                      const cubert_handle_t *handle);

CUBERT_EXTERN_C_END

#endif /* CUBERT_HANDLE_H */
