/* SPDX-License-Identifier: MIT */
// examples/embedded/cxx_host.cpp: cubert from a C++11 host (`make check-cxx-host` builds it
// with g++ and clang++, -std=c++11 -pedantic -Wall -Wextra -Werror, and runs it).
//
// The host hands cubert its memory through the allocator interface (a C++ class that
// tracks live and peak bytes over libc), defines a kernel in the portable dialect in C++,
// and runs a two-kernel pipeline (scale, then add) on the inline driver (cubert/inline.h:
// every call finishes on the calling thread; no lock, no worker, no OS). The result is
// checked against plain C++; at exit the allocator must hold no live byte. The C
// interface needs no wrapper: RAII classes below are the host's own.
#include <cstdio>
#include <cstring>
#include <vector>

#include "cubert/cubert.h"
#include "cubert/critical_section.h"  // declarations only: this host does not use the hook
#include "cubert/os.h"              // cubert_allocator_libc
#include "cubert/inline.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"

namespace {

const uint32_t kBlock = 64;

// out[i] = in[i] * factor
CUBERT_KERNEL(cxx_scale_f32) {
  CUBERT_BUFFER(const float, in, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_SCALAR_F32(factor, 0);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, CUBERT_LOAD(in, i) * factor);
  }
}

// out[i] = a[i] + b[i]
CUBERT_KERNEL(cxx_add_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, out, 2);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, CUBERT_LOAD(a, i) + CUBERT_LOAD(b, i));
  }
}

CUBERT_KERNEL_DESCRIPTOR_RO(scale_kernel, cxx_scale_f32, 2, 1, 0, kBlock, 1, 1, 1u);
CUBERT_KERNEL_DESCRIPTOR_RO(add_kernel, cxx_add_f32, 3, 0, 0, kBlock, 1, 1, 3u);

// The host's allocator: forwards to libc through cubert's own libc allocator and keeps
// live and peak byte counts. cubert calls it from the threads that use its objects; this
// host has one thread, so no lock.
class TrackingAllocator {
 public:
  TrackingAllocator() : inner_(cubert_allocator_libc()), live_(0), peak_(0) {}
  cubert_allocator_t allocator() {
    cubert_allocator_t a;
    a.self = this;
    a.fn = &TrackingAllocator::call;
    return a;
  }
  size_t live() const { return live_; }
  size_t peak() const { return peak_; }

 private:
  TrackingAllocator(const TrackingAllocator &) = delete;
  TrackingAllocator &operator=(const TrackingAllocator &) = delete;

  static void *call(void *self, void *ptr, size_t old_size, size_t new_size, size_t align) {
    TrackingAllocator *t = static_cast<TrackingAllocator *>(self);
    void *out = t->inner_.fn(t->inner_.self, ptr, old_size, new_size, align);
    if (new_size == 0) {  // free
      if (ptr) t->live_ -= old_size;
    } else if (out) {  // allocate or resize
      t->live_ += new_size - (ptr ? old_size : 0);
      if (t->live_ > t->peak_) t->peak_ = t->live_;
    }
    return out;
  }

  cubert_allocator_t inner_;
  size_t live_;
  size_t peak_;
};

// A client owned by the host, released on scope exit.
class Client {
 public:
  explicit Client(cubert_client_t *c) : c_(c) {}
  ~Client() {
    if (c_) cubert_client_release(c_);
  }
  cubert_client_t *get() const { return c_; }

 private:
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;
  cubert_client_t *c_;
};

// A device buffer handle owned by the host.
class Buffer {
 public:
  explicit Buffer(cubert_client_t *c) : c_(c) { std::memset(&h_, 0, sizeof h_); }
  ~Buffer() {
    if (valid_) cubert_client_handle_release(c_, &h_, NULL);
  }
  cubert_handle_t *out() {
    valid_ = true;
    return &h_;
  }
  const cubert_handle_t &handle() const { return h_; }

 private:
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  cubert_client_t *c_;
  cubert_handle_t h_;
  bool valid_ = false;
};

bool ok(cubert_status_t status, const cubert_error_t &err, const char *what) {
  if (status == CUBERT_STATUS_OK) return true;
  char msg[256];
  cubert_error_format(&err, msg, sizeof msg);
  std::printf("cxx_host: %s failed: %s (%s)\n", what, cubert_status_name(status), msg);
  return false;
}

int run(TrackingAllocator &memory) {
  const uint32_t n = 1000;
  const float factor = 2.5f;
  // One stream, a small handle table, and one direct pool: each buffer is one
  // allocation of its own size from the host's allocator (docs/embedding.md).
  const cubert_memory_pool_options_t direct = cubert_memory_pool_direct(0);
  cubert_inline_options_t options;
  cubert_inline_options_initialize(&options);
  options.device.max_streams = 1;
  options.device.memory_size = 1u << 20;
  options.device.max_handles = 16;
  options.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  options.memory_config.pools = &direct;
  options.memory_config.pool_count = 1;
  cubert_client_t *raw = NULL;
  cubert_error_t err;
  std::memset(&err, 0, sizeof err);
  if (!ok(cubert_inline_client_create(memory.allocator(), &options, &raw, &err), err,
          "cubert_inline_client_create"))
    return 1;
  Client client(raw);

  std::vector<float> x(n), y(n), result(n);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = static_cast<float>(i) * 0.5f;
    y[i] = 3.0f - static_cast<float>(i % 11);
  }
  Buffer hx(client.get()), hy(client.get()), scaled(client.get()), sum(client.get());
  const uint64_t bytes = n * sizeof(float);
  if (!ok(cubert_client_create_from_slice(client.get(), x.data(), bytes, hx.out(), &err), err, "create x") ||
      !ok(cubert_client_create_from_slice(client.get(), y.data(), bytes, hy.out(), &err), err, "create y") ||
      !ok(cubert_client_empty(client.get(), bytes, scaled.out(), &err), err, "empty") ||
      !ok(cubert_client_empty(client.get(), bytes, sum.out(), &err), err, "empty"))
    return 1;

  cubert_cube_count_t count = cubert_cube_count_new_1d((n + kBlock - 1) / kBlock);
  cubert_binding_t scale_buffers[2] = {hx.handle(), scaled.handle()};
  uint64_t scalars[1] = {cubert_kernel_f32_bits(factor)};
  cubert_launch_arguments_t scale_args;
  cubert_launch_arguments_initialize(&scale_args);
  scale_args.buffers = scale_buffers;
  scale_args.buffer_count = 2;
  scale_args.scalars = scalars;
  scale_args.scalar_count = 1;
  cubert_binding_t add_buffers[3] = {scaled.handle(), hy.handle(), sum.handle()};
  cubert_launch_arguments_t add_args;
  cubert_launch_arguments_initialize(&add_args);
  add_args.buffers = add_buffers;
  add_args.buffer_count = 3;
  add_args.scalars = NULL;
  add_args.scalar_count = 0;
  if (!ok(cubert_client_launch(client.get(), &scale_kernel, &count, &scale_args, &err), err,
          "launch scale") ||
      !ok(cubert_client_launch(client.get(), &add_kernel, &count, &add_args, &err), err,
          "launch add") ||
      !ok(cubert_client_read_one(client.get(), &sum.handle(), result.data(), bytes, &err), err,
          "read"))
    return 1;

  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; i++)
    if (result[i] != x[i] * factor + y[i]) bad++;
  std::printf("cxx_host: scale then add over %u floats: %u mismatches; allocator peak %zu bytes\n",
              n, bad, memory.peak());
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main() {
  TrackingAllocator memory;
  int rc = run(memory);  // every cubert object is released when run returns
  if (memory.live() != 0) {
    std::printf("cxx_host: %zu bytes still allocated after release\n", memory.live());
    rc = 1;
  }
  std::printf("%s\n", rc == 0 ? "cxx_host ok" : "cxx_host FAILED");
  return rc;
}
