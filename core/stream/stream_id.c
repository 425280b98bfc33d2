/* SPDX-License-Identifier: MIT */
/*
 * core/stream/stream_id.c: stream id values and slots. The per-thread
 * resolution lives in the OS layer (os/os_stream_id.c).
 */
#include "base/internal.h"
#include "cubert/stream_id.h"

cubert_stream_id_t cubert_stream_id_default(void) { return cubert_stream_id_from_value(0); }

cubert_stream_id_t cubert_stream_id_from_value(uint64_t value) {
  cubert_stream_id_t id;
  id.value = value;
  return id;
}

bool cubert_stream_id_equal(cubert_stream_id_t a, cubert_stream_id_t b) {
  return a.value == b.value;
}

/* v mod m (m != 0) by binary long division: a 64-bit `%` would call a
 * libgcc helper on 32-bit targets, which the freestanding core must not. */
static uint32_t stream_id_u64_mod_u32(uint64_t v, uint32_t m) {
  uint64_t r = 0; /* < m <= 2^32 - 1, so 2r + 1 fits 64 bits */
  int bit;
  if ((v >> 32) == 0) return (uint32_t)v % m;
  for (bit = 63; bit >= 0; bit--) {
    r = (r << 1) | ((v >> bit) & 1u);
    if (r >= m) r -= m;
  }
  return (uint32_t)r;
}

uint32_t cubert_stream_id_slot(cubert_stream_id_t id, uint32_t max_streams) {
  if (max_streams == 0) return 0;
  return stream_id_u64_mod_u32(id.value, max_streams);
}

bool cubert_stream_policy_is_valid(cubert_stream_policy_t policy) {
  return policy == CUBERT_STREAM_POLICY_PER_THREAD || policy == CUBERT_STREAM_POLICY_PER_TASK ||
         policy == CUBERT_STREAM_POLICY_SINGLE;
}
