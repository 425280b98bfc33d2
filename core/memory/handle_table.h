/* SPDX-License-Identifier: MIT */
/*
 * core/memory/handle_table.h: the handle table behind handles and bindings:
 * memory ids, their reference counts and locations (CubeCL's managed memory
 * descriptor). For servers and memory pools; users hold cubert_handle_t values
 * (cubert/handle.h) and go through the client.
 *
 * A handle table (one per device) holds one slot per managed memory id. A
 * memory id is {index, generation}: using an id whose generation no longer
 * matches its slot (stale, forged, double-released) returns
 * CUBERT_STATUS_INVALID_HANDLE deterministically and never touches the slot's
 * new occupant.
 *
 * Two counts per slot, as in CubeCL:
 *  - the descriptor count: user handles + user bindings. It decides "free":
 *    a slot is free (its pool slice may be reused) when this count is 0.
 *  - the handle count: user handles only. It decides "can mutate in place":
 *    can_mut when it is <= 1 (bindings are ignored).
 *  (CubeCL counts the pool's own reference too and tests `<= 1` / `<= 2`; here
 *  the pool's reference is the separate `owned` flag, so a user's double
 *  release can never eat the pool's reference.)
 * When the descriptor count drops to 0 the id's generation advances: every
 * user id of that slot is dead from then on. The slot itself returns to the
 * free set (and may be reused by a new id) once it is also not owned by a
 * pool.
 *
 * Counts are atomic (32-bit, see core/base/atomic.h): handles and bindings may be
 * retained/released from any thread. retain refuses 0 -> 1 (no resurrection)
 * and saturates: at CUBERT_HANDLE_MAX_COUNT it returns CUBERT_STATUS_OVERFLOW
 * with the count unchanged. A release never takes a count below 0: releasing
 * a handle when the id has no handle left (or a binding when it has no
 * binding left) returns CUBERT_STATUS_INVALID_HANDLE and changes nothing.
 * The location (which pool, page, slice) is written only by the owning
 * server thread.
 *
 * Concurrency: an id that is dead when a call starts is always rejected. A
 * call racing with the death of its id either acts on that id or returns
 * INVALID_HANDLE; it never acts on a later occupant of the slot (a call in
 * flight pins the slot, and a pinned slot is not reused). Every function is
 * lock-free and never blocks. A slot's generation repeats only after 2^31
 * reuses of that slot; a stale id kept that long could be taken for alive.
 *
 * NULL table: functions returning a status return INVALID_ARGUMENT; the
 * boolean queries return false and the count queries 0.
 *
 * Hot-path primitives: every call returns a status only, no error record (the
 * rule of include/cubert/cubert.h); the client calls above them
 * (cubert_client_handle_*) write the records.
 */
#ifndef CUBERT_CORE_MEMORY_HANDLE_TABLE_H
#define CUBERT_CORE_MEMORY_HANDLE_TABLE_H

#include "cubert/allocator.h"
#include "cubert/error.h"
#include "cubert/handle.h"

CUBERT_EXTERN_C_BEGIN

#define CUBERT_HANDLE_MAX_COUNT 0x3FFFFFFFu
/* Largest max_slots of a table (the id index keeps 24 bits for the slot). */
#define CUBERT_HANDLE_TABLE_MAX_SLOTS 0x00FFFFFFu

/* Acquire lanes (a power of two): an acquire names a lane, taken modulo this;
 * threads that acquire on distinct lanes take their ids from distinct chunks
 * of 256 slots where the table can give them (handle.c, "Lanes"), so they
 * write no shared cache line. The memory manager of stream slot i acquires
 * on lane i; the plain acquires use lane 0. A hint for speed only: ids,
 * counts, reuse and every answer are the same on any lane. */
#define CUBERT_HANDLE_TABLE_LANES 32u

/* Where a pool put the memory of an id (CubeCL's MemoryLocation).
 * init == 0: not bound to any pool yet. */
typedef struct cubert_memory_location_t {
  uint8_t pool;   /* 0..253 dynamic pools, 255 = persistent pool */
  uint8_t init;
  uint16_t page;
  uint32_t slice;
} cubert_memory_location_t;

typedef struct cubert_handle_table_t cubert_handle_table_t;

/* Create a table of at most max_slots slots (grown in chunks of 256 as
 * needed, never moved, so lookups are lock-free). `tag` (0..255) is stamped
 * into every id so an id of another table is rejected. The table keeps the
 * allocator (it allocates at create and when it grows). Returns
 * INVALID_ARGUMENT (NULL out, NULL allocator function, max_slots 0 or above
 * CUBERT_HANDLE_TABLE_MAX_SLOTS = 2^24-1), RESOURCE_EXHAUSTED (*out_table
 * untouched, nothing leaked). Not thread-safe (setup). */
cubert_status_t cubert__handle_table_create(cubert_allocator_t allocator,
                                                      uint32_t max_slots, uint8_t tag,
                                                      cubert_handle_table_t **out_table);

/* Destroy the table and every slot, live or not. NULL is a no-op. The caller
 * guarantees no other thread uses the table. */
void cubert__handle_table_destroy(cubert_handle_table_t *table);

/* Number of slots currently in use: alive ids plus dead ids still owned by a
 * pool (a slot counts until it is back in the free set). 0 for NULL. A
 * lock-free read that counts the free bitmaps of the grown chunks (one cache
 * line per 256 slots): for tests, leak checks and reports, not hot paths. */
uint32_t cubert__handle_table_live(const cubert_handle_table_t *table);

/* A new id with handle count 1 and descriptor count 1, not owned, location
 * all 0 (init 0). The caller owns that one handle reference. INVALID_ARGUMENT
 * (NULL table or out_id), RESOURCE_EXHAUSTED when the injected allocator fails
 * growing the table and no slot is free, OUT_OF_RANGE when max_slots are all
 * in use. *out_id untouched on failure. Thread-safe, lock-free. */
cubert_status_t cubert__memory_id_acquire(cubert_handle_table_t *table,
                                                    cubert_memory_id_t *out_id);
/* cubert__memory_id_acquire on lane `lane` (any value, taken modulo
 * CUBERT_HANDLE_TABLE_LANES; cubert__memory_id_acquire is lane 0). Same codes.
 * A lane takes slots from a chunk no other lane holds while the table has
 * one or can grow one (up to CUBERT_HANDLE_TABLE_LANES + 1 chunks are added
 * for lanes, besides the growth of a crowded table); else it shares a chunk.
 * Thread-safe, lock-free. */
cubert_status_t cubert__memory_id_acquire_lane(cubert_handle_table_t *table, uint32_t lane,
                                               cubert_memory_id_t *out_id);
/* acquire + set_owned(true) + set_location in one step: a new id with
 * handle count 1 and descriptor count 1, already owned by the caller (a
 * pool, on behalf of the memory manager), with `location`. The slot is
 * activated owned before it leaves the free set, so the id is never seen
 * unowned. Same codes as cubert__memory_id_acquire. Thread-safe, lock-free.
 * The caller is the id's owner from now on (see cubert__memory_id_disown). */
cubert_status_t cubert__memory_id_acquire_owned(cubert_handle_table_t *table,
                                                          cubert_memory_location_t location,
                                                          cubert_memory_id_t *out_id);
/* cubert__memory_id_acquire_owned on lane `lane` (see
 * cubert__memory_id_acquire_lane; cubert__memory_id_acquire_owned is lane 0). */
cubert_status_t cubert__memory_id_acquire_owned_lane(cubert_handle_table_t *table, uint32_t lane,
                                                     cubert_memory_location_t location,
                                                     cubert_memory_id_t *out_id);

/* +1 handle count and +1 descriptor count. INVALID_HANDLE (null, dead,
 * forged or other table's id), OVERFLOW (descriptor count already at
 * CUBERT_HANDLE_MAX_COUNT; nothing changes). Thread-safe. */
cubert_status_t cubert__memory_id_retain_handle(cubert_handle_table_t *table,
                                                          cubert_memory_id_t id);
/* -1 both counts. INVALID_HANDLE for a dead id or an id with no handle left
 * (e.g. a double release); nothing changes then. The release that takes the
 * descriptor count to 0 kills the id (and frees the slot when not owned).
 * Thread-safe. */
cubert_status_t cubert__memory_id_release_handle(cubert_handle_table_t *table,
                                                           cubert_memory_id_t id);
/* +1 / -1 descriptor count only (a binding). Same codes; releasing a binding
 * of an id with no binding left is INVALID_HANDLE. Thread-safe. */
cubert_status_t cubert__memory_id_retain_binding(cubert_handle_table_t *table,
                                                           cubert_memory_id_t id);
cubert_status_t cubert__memory_id_release_binding(cubert_handle_table_t *table,
                                                            cubert_memory_id_t id);

/* Pool ownership: a pool slice takes (owned = true) or drops (false) its
 * reference on the slot. Ownership does not keep the id alive (the id dies
 * when its descriptor count reaches 0); it keeps the slot (and its location)
 * from being reused. Taking needs an alive id that is not owned yet. Dropping
 * works on an alive id or on a dead id whose slot is still owned; when the id
 * is dead it returns the slot to the free set. INVALID_HANDLE for a dead or
 * already owned id (take), or an id whose slot is not owned or was reused
 * (drop). Thread-safe. */
cubert_status_t cubert__memory_id_set_owned(cubert_handle_table_t *table,
                                                      cubert_memory_id_t id, bool owned);

/* Owner-only fast paths (no pin, fewer atomic read-modify-writes).
 *
 * Precondition: the caller is the id's owner: it took the ownership
 * (set_owned(true) or acquire_owned returned OK for this id), has not given
 * it up since, and no other thread calls set_owned(false) / disown /
 * set_location_owned on this id concurrently (the memory manager's server
 * thread and its pools). Ownership keeps the slot from being recycled, which
 * is what the pin of the general calls guards against; so these calls
 * validate the id without pinning it. Stale, forged and foreign ids and ids
 * that are not owned are still refused (INVALID_HANDLE), as by the general
 * calls, also while other threads free and reuse the slot. What the
 * precondition rules out is a caller that is not the owner acting on an id
 * another party owns: racing with that owner's disown and the slot's reuse,
 * it could act on the slot's next occupant.
 *
 * disown: set_owned(id, false); INVALID_HANDLE when the slot is not owned or
 * was reused; when the id is dead the slot goes back to the free set.
 * set_location_owned: set_location. An id that is not owned (or fails the
 * unpinned checks) goes through cubert__memory_id_set_location (pinned) and
 * gets its answer. */
cubert_status_t cubert__memory_id_disown(cubert_handle_table_t *table,
                                                   cubert_memory_id_t id);

/* True when the id is alive in this table (descriptor count >= 1). */
bool cubert__memory_id_is_alive(const cubert_handle_table_t *table,
                                          cubert_memory_id_t id);
/* is_free: descriptor count is 0 (a dead, forged or foreign id is free; a
 * NULL table gives false). can_mut: alive and handle count <= 1 (false for a
 * dead id). Lock-free reads; the answer may be stale by the time it is used
 * unless the caller knows no other thread holds references. */
bool cubert__memory_id_is_free(const cubert_handle_table_t *table,
                                         cubert_memory_id_t id);
bool cubert__memory_id_can_mut(const cubert_handle_table_t *table,
                                         cubert_memory_id_t id);
/* Current counts (0 for a dead id), for tests and reports. */
uint32_t cubert__memory_id_handle_count(const cubert_handle_table_t *table,
                                                  cubert_memory_id_t id);
uint32_t cubert__memory_id_descriptor_count(const cubert_handle_table_t *table,
                                                      cubert_memory_id_t id);

/* Location of the slot (server thread only). The id may be dead but still
 * owned (the pool keeps reading its slice's location). INVALID_HANDLE when
 * the id is dead and not owned, or the slot was reused since;
 * INVALID_ARGUMENT for NULL table or out_location. */
cubert_status_t cubert__memory_id_location(const cubert_handle_table_t *table,
                                                     cubert_memory_id_t id,
                                                     cubert_memory_location_t *out_location);
cubert_status_t cubert__memory_id_set_location(cubert_handle_table_t *table,
                                                         cubert_memory_id_t id,
                                                         cubert_memory_location_t location);
/* Owner-only set_location without a pin: see cubert__memory_id_disown. */
cubert_status_t cubert__memory_id_set_location_owned(cubert_handle_table_t *table,
                                                               cubert_memory_id_t id,
                                                               cubert_memory_location_t location);

/* ---- handles and bindings over a table --------------------------------------
 * The calls behind cubert_client_handle_* (cubert/client.h), for servers. */

/* A new handle (new memory id, handle count 1) of `size` bytes for
 * device/stream/cursor, offsets 0, not yet backed by memory. INVALID_ARGUMENT
 * for NULL pointers; codes of cubert__memory_id_acquire. *out_handle untouched
 * on failure. Thread-safe. */
cubert_status_t cubert__handle_create(cubert_handle_table_t *table, uint32_t device,
                                                uint64_t stream, uint64_t cursor, uint64_t size,
                                                cubert_handle_t *out_handle);
/* Retain another handle reference (+1 handle and descriptor count):
 * *out = *handle. INVALID_ARGUMENT (NULL), codes of
 * cubert__memory_id_retain_handle; *out_handle untouched on failure. out_handle
 * may equal handle. Thread-safe. */
cubert_status_t cubert__handle_clone(cubert_handle_table_t *table,
                                               const cubert_handle_t *handle,
                                               cubert_handle_t *out_handle);
/* A sub-handle: a new handle reference trimmed by a further offset_start /
 * offset_end (added to the existing offsets); it keeps the base allocation
 * alive. OUT_OF_RANGE when offset_start + offset_end (totals) would exceed
 * size (equal is allowed: an empty range), OVERFLOW when a sum overflows 64
 * bits, INVALID_ARGUMENT (NULL), codes of cubert__memory_id_retain_handle;
 * nothing retained and *out_handle untouched then. Thread-safe. */
cubert_status_t cubert__handle_offset(cubert_handle_table_t *table,
                                                const cubert_handle_t *handle,
                                                uint64_t offset_start, uint64_t offset_end,
                                                cubert_handle_t *out_handle);
/* A binding (descriptor reference, +1 descriptor count only) of the handle's
 * range; the handle stays valid and must still be released. binding_clone
 * retains another binding reference. INVALID_ARGUMENT (NULL), codes of
 * cubert__memory_id_retain_binding; *out_binding untouched on failure.
 * Thread-safe. */
cubert_status_t cubert__handle_binding(cubert_handle_table_t *table,
                                                 const cubert_handle_t *handle,
                                                 cubert_binding_t *out_binding);
cubert_status_t cubert__binding_clone(cubert_handle_table_t *table,
                                                const cubert_binding_t *binding,
                                                cubert_binding_t *out_binding);
/* Release a handle / binding reference. NULL pointer: INVALID_ARGUMENT; a dead
 * id or a double release: INVALID_HANDLE (nothing changes). Thread-safe. */
cubert_status_t cubert__handle_release(cubert_handle_table_t *table,
                                                 const cubert_handle_t *handle);
cubert_status_t cubert__binding_release(cubert_handle_table_t *table,
                                                  const cubert_binding_t *binding);
/* can_mut of the handle's memory (see above); false for NULL. */
bool cubert__handle_can_mut(const cubert_handle_table_t *table,
                                      const cubert_handle_t *handle);


struct cubert_client_t;
/* The handle table of a client's device (borrowed; it lives as long as the
 * device). NULL for NULL. Thread-safe, non-blocking. */
cubert_handle_table_t *cubert__client_handle_table(const struct cubert_client_t *client);

CUBERT_EXTERN_C_END

#endif /* CUBERT_CORE_MEMORY_HANDLE_TABLE_H */
