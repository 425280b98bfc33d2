/* SPDX-License-Identifier: MIT */
/*
 * core/device/device_shards.h: per-stream submission without the device lock
 * (issue 27). The device lock (the host's recursive lock behind the direct
 * device handle) becomes the "whole device" side of a sharded reader/writer
 * scheme:
 *
 *  - a shard (one of CUBERT_DEVICE_SHARDS, a stream slot's index modulo that)
 *    is a word alone in a pair of cache lines (CUBERT_FALSE_SHARING_BYTES,
 *    128: the adjacent-line prefetcher moves lines in pairs); a launch that
 *    touches only its own slot's state enters the shard (one
 *    compare-and-swap on that line) instead
 *    of taking the device lock, so launches on different streams from
 *    different threads do not meet;
 *  - every other device call takes the device lock through the wrapped lock
 *    (cubert__device_shards_lock): its outermost acquisition raises the
 *    `whole` word and waits until no shard that was ever entered is held; a
 *    shard entered while `whole` is up is left at once (the caller then takes
 *    the device lock: the ordinary path). So a call holding the device lock
 *    sees no launch in flight, exactly as before.
 *
 * The handshake (enter: take the shard, then read `whole`; device lock: raise
 * `whole`, then read the shards) is sequentially consistent: one of the two
 * sides always sees the other. Builds without seq_cst atomics
 * (CUBERT_SINGLE_THREADED, CUBERT_ATOMIC_CRITICAL_SECTION) never enter a shard.
 * Not installed.
 */
#ifndef CUBERT_CORE_DEVICE_SHARDS_H
#define CUBERT_CORE_DEVICE_SHARDS_H

#include "base/internal.h"
#include "cubert/device.h"

#define CUBERT_DEVICE_SHARDS 32u

typedef struct cubert_device_shards_t cubert_device_shards_t;

/* Shards over the host's recursive `inner` lock (borrowed until destroy);
 * `yield` (NULL: spin) is called by the device lock's owner while it waits
 * for a shard's holder. RESOURCE_EXHAUSTED. */
cubert_status_t cubert__device_shards_create(cubert_allocator_t allocator, cubert_lock_t inner,
                                             void (*yield)(void),
                                             cubert_device_shards_t **out_shards);
/* After the device handle that used the wrapped lock was destroyed. NULL: no-op. */
void cubert__device_shards_destroy(cubert_device_shards_t *shards);
/* The device lock to give the direct device handle: the host's lock plus the
 * handshake above (recursive like it). Borrowed from `shards`. */
cubert_lock_t cubert__device_shards_lock(cubert_device_shards_t *shards);
/* Enter shard `index` (any value: taken modulo CUBERT_DEVICE_SHARDS). false:
 * not entered (the device lock is held or wanted, or another thread holds
 * the shard): take the device lock instead. Never blocks. */
bool cubert__device_shards_enter(cubert_device_shards_t *shards, uint32_t index);
/* Enter shard `index`, waiting a little (CUBERT_DEVICE_SHARDS_WAIT looks)
 * while the device lock is held by another thread or the shard by another
 * stream's launch, instead of giving up at once: a caller that gives up
 * takes the device lock, and while one thread waits for or holds it every
 * other thread's enter fails too, so one call that needed the device lock
 * (a sync) turned every launch and reserve after it into a queue on that
 * lock (bench_scaling's 8 threads; docs/benchmarks.md, "Scaling curves").
 * `patient` (the caller holds no device lock: it is in no exclusive
 * section): when the looks run out, wait for the holder by taking and
 * dropping the device lock (blocks in it, no spinning), then try again, up
 * to CUBERT_DEVICE_SHARDS_ROUNDS times. A holder that keeps the lock longer
 * than the looks (a CUDA driver call under it: several microseconds while
 * other threads launch) would otherwise turn the launches after it into
 * that queue for good (bench_cuda, 8 threads; docs/benchmarks.md). false:
 * not entered (take the device lock). Never blocks unless patient. */
#define CUBERT_DEVICE_SHARDS_WAIT 4096u
#define CUBERT_DEVICE_SHARDS_ROUNDS 8u
bool cubert__device_shards_enter_wait(cubert_device_shards_t *shards, uint32_t index, bool patient);
/* Leave the shard entered by the same thread. */
void cubert__device_shards_leave(cubert_device_shards_t *shards, uint32_t index);

#endif /* CUBERT_CORE_DEVICE_SHARDS_H */
