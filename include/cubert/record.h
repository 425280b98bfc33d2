/* SPDX-License-Identifier: MIT */
/*
 * cubert/record.h: recorded launch sequences (docs/recording.md). Record the
 * launches and writes of a stream once, replay them many times with new
 * scalar values and new buffers of the same sizes (PyTorch's CUDA-graph
 * capture and replay; CubeCL has none).
 *
 *   cubert_client_record_begin(client, &err);      // the client's stream records
 *   cubert_client_launch(client, &k1, &count, &args1, &err);   // recorded, not run
 *   cubert_client_launch(client, &k2, &count, &args2, &err);
 *   cubert_client_record_end(client, &rec, &err);  // the stream runs work again
 *   for (step = 0; step < n; step++) {
 *     cubert_launch_arguments_initialize(&s);
 *     cubert_launch_arguments_set_f32(&s, 0, alpha[step]);
 *     cubert_recording_set_scalars(rec, 1, &s, &err);  // launch 1's scalars
 *     cubert_recording_set_buffer(rec, slot, &next_input, &err); // same size
 *     cubert_client_replay(client, rec, &err);        // enqueues k1, k2
 *   }
 *   cubert_recording_destroy(rec);
 *
 * What is recorded: cubert_client_launch / _launch_unchecked (checked as a
 * launch is: a refused launch is not recorded and the recording goes on) and
 * cubert_client_write of one contiguous item (its bytes are copied into the
 * recording when recorded; every replay writes them again). Allocations and
 * uploads (create_from_slice, empty, ...) run at once, recording or not.
 * Refused on a recording stream, with FAILED_PRECONDITION (kind
 * FAILED_PRECONDITION) and nothing done: sync, sync_async, flush, every
 * read, get_resource, profiling (a profile or a profiled launch) and
 * collectives. A launch whose shape exceeds the device's limits is refused
 * at record time (LIMIT_EXCEEDED, kind LAUNCH_TOO_MANY_RESOURCES) instead of
 * being queued on the stream.
 *
 * Buffer slots: the recording numbers the distinct buffers (bindings:
 * memory, offsets) its launches and writes used, in order of first use,
 * from 0; a dynamic cube count's buffer is a slot too. A slot's buffer may
 * be replaced by another handle of the same device with as many bytes in
 * use (cubert_recording_set_buffer); every launch and write that used the
 * slot then uses the new one. The recording does not retain the handles:
 * the caller keeps them alive; a replay finds a released one and refuses.
 *
 * Ownership: the recording is the caller's (single owner,
 * cubert_recording_destroy); it keeps its device alive (as a client does)
 * until destroyed. Kernel descriptors stay borrowed (as for a launch: keep
 * them alive while the recording lives). Thread-safety: every function may
 * be called from any thread; calls on one recording serialize on its
 * device (they run with the device held), so several threads may replay
 * one recording on their own streams; an update is seen by the replays that
 * start after it returned. Replays of one recording on different streams
 * are not ordered with each other beyond what their buffers' cross-stream
 * rules order (as launches).
 */
#ifndef CUBERT_RECORD_H
#define CUBERT_RECORD_H

#include "cubert/client.h"

CUBERT_EXTERN_C_BEGIN

typedef struct cubert_recording_t cubert_recording_t;

/* The client's current stream starts recording. Non-blocking (a device
 * round trip). INVALID_ARGUMENT: NULL client. FAILED_PRECONDITION: the
 * stream records already. RESOURCE_EXHAUSTED (HOST_OUT_OF_MEMORY).
 * UNAVAILABLE: the device was lost. */
CUBERT_API cubert_status_t cubert_client_record_begin(cubert_client_t *client,
                                                      cubert_error_t *out_error);
/* The client's current stream stops recording; *out_recording (owned by the
 * caller: cubert_recording_destroy) holds what was recorded (possibly
 * nothing). Non-blocking. INVALID_ARGUMENT: NULL argument. FAILED_PRECONDITION:
 * the stream is not recording. RESOURCE_EXHAUSTED: no memory for the
 * recording's handle (the recording is dropped and the stream no longer
 * records). */
CUBERT_API cubert_status_t cubert_client_record_end(cubert_client_t *client,
                                                    cubert_recording_t **out_recording,
                                                    cubert_error_t *out_error);
/* Enqueue the recording's launches and writes, in recorded order, on the
 * client's current stream, as launches and writes would be (cross-stream
 * waits, the race checker, the execution mode each launch was recorded
 * with). Non-blocking. Checked first, with nothing enqueued on failure:
 * INVALID_ARGUMENT (NULL); DEVICE_MISMATCH (a client of another device);
 * FAILED_PRECONDITION (the stream is recording); INVALID_HANDLE (a slot's
 * buffer was released: field 0 = slot); INVALID_ARGUMENT (kind
 * SERVER_VALIDATION: a slot's buffer no longer has the recorded size,
 * fields slot, size, recorded size); UNAVAILABLE. Failures while the work
 * runs go to the stream's errors, as a launch's. A driver refusal in the
 * middle (e.g. a kernel it cannot run) returns that error; the operations
 * before it stay enqueued. */
/* Borrows `recording` for the call (replays already enqueued need nothing of
 * the caller). */
CUBERT_API cubert_status_t cubert_client_replay(cubert_client_t *client,
                                                cubert_recording_t *recording,
                                                cubert_error_t *out_error);
/* Replace buffer slot `slot`'s buffer by `handle` (copied, not retained) for
 * the replays that start after this returns. Non-blocking. INVALID_ARGUMENT:
 * NULL; OUT_OF_RANGE: slot not below the slot count; DEVICE_MISMATCH;
 * INVALID_HANDLE: a released handle; INVALID_ARGUMENT (SERVER_VALIDATION):
 * another size in bytes than the slot's, or an offset that breaks a recorded
 * kernel's buffer_align. The recording is unchanged on failure. */
CUBERT_API cubert_status_t cubert_recording_set_buffer(cubert_recording_t *recording, uint32_t slot,
                                                       const cubert_handle_t *handle,
                                                       cubert_error_t *out_error);
/* Replace the scalars of the recording's launch number `launch` (0: the first
 * launch recorded; writes are not counted) by `args`'s, for the replays that
 * start after this returns. `args` is built as for a launch
 * (cubert_launch_arguments_set_u32 ... ) with scalars only (no buffers); it
 * is read before the call returns. Non-blocking. INVALID_ARGUMENT: NULL, an
 * args not initialized or with a failed setter, or args with buffers;
 * OUT_OF_RANGE: no such launch; INVALID_ARGUMENT (SERVER_VALIDATION):
 * another scalar count than recorded, or a scalar of another type than the
 * recorded one (both set with typed setters). The recording is unchanged on
 * failure. */
CUBERT_API cubert_status_t cubert_recording_set_scalars(cubert_recording_t *recording,
                                                        uint32_t launch,
                                                        const cubert_launch_arguments_t *args,
                                                        cubert_error_t *out_error);
/* The slot of `handle` (the same memory and offsets) in the recording.
 * Pure (reads the recording with the device held). INVALID_ARGUMENT: NULL;
 * NOT_FOUND (kind IO_NOT_FOUND): the recording has no such buffer. */
CUBERT_API cubert_status_t cubert_recording_find_buffer(cubert_recording_t *recording,
                                                        const cubert_handle_t *handle,
                                                        uint32_t *out_slot,
                                                        cubert_error_t *out_error);
/* How many launches, writes and buffer slots the recording holds (any out
 * may be NULL; NULL recording: zeros). Never fails. */
CUBERT_API void cubert_recording_counts(cubert_recording_t *recording, uint32_t *out_launches,
                                        uint32_t *out_writes, uint32_t *out_buffers);
/* Destroy the recording: BLOCKS until the replays that still read it
 * completed (its writes' bytes, or the driver's plan: the streams it was
 * replayed on are synchronized; a recording of launches on a driver without
 * plans does not wait), then frees it and drops its device reference (the
 * last one tears the device down, as the last client's release). NULL:
 * nothing. Any thread, but no other call on the same recording may be
 * running or start (as for any object: cubert/cubert.h). */
CUBERT_API void cubert_recording_destroy(cubert_recording_t *recording);

CUBERT_EXTERN_C_END

#endif /* CUBERT_RECORD_H */
