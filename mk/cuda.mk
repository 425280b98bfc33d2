# SPDX-License-Identifier: MIT
# mk/cuda.mk (included by the Makefile): the CUDA driver's build pieces (make CUDA=1).
# docs/cuda.md. backend-cuda/ includes cuda.h for its types only and never links -lcuda:
# libcuda.so.1 is opened at run time. Kernel images: nvcc compiles each single-source
# kernel file (-x cu) to PTX for NVCC_PTX_ARCH (every later GPU JIT-compiles it) and,
# when nvcc knows it, a cubin for NVCC_CUBIN_ARCH; tools/cubert-kernel-image.sh embeds both
# as a C file whose image registers itself (docs/kernels.md).
NVCC_FLAGS ?= -std=c++14 -O3
NVCC_PTX_ARCH ?= compute_75
NVCC_CUBIN_ARCH ?= sm_90
CUDA_TEST_CFLAGS = -Itests/support -Ibackend-cuda/fake -Itests/cts -Icore -Ibackend-cuda -I. -Ibackend-cpu -isystem $(CUDA_INCLUDE) \
  $(KERNELS_INC) -DCUBERT_TEST_BUILD_DIR='"$(abspath $(BUILD))"' -DCUBERT_TEST_HAVE_IMAGES=$(if $(HAVE_NVCC),1,0)

.PHONY: cuda-headers cuda-smoke kernel-image
cuda-headers:
	@test -f $(CUDA_INCLUDE)/cuda.h || { echo "CUDA=1 needs the CUDA headers: $(CUDA_INCLUDE)/cuda.h not found (set CUDA_PATH or CUDA_INCLUDE; no GPU needed)"; exit 1; }

$(BUILD)/kernels/%.c: %.h include/cubert/kernel.h tools/cubert-kernel-image.sh
	@mkdir -p $(@D)
	NVCC='$(NVCC)' NVCC_FLAGS='$(NVCC_FLAGS)' PTX_ARCH='$(NVCC_PTX_ARCH)' CUBIN_ARCH='$(NVCC_CUBIN_ARCH)' \
	  sh tools/cubert-kernel-image.sh -I include -o $@ $<
$(BUILD)/kernels/%.o: $(BUILD)/kernels/%.c include/cubert/cuda.h include/cubert/error.h
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@
.PRECIOUS: $(BUILD)/kernels/%.c

$(BUILD)/obj/tests/cuda/%.o: tests/cuda/%.c | cuda-headers
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) $(CUDA_TEST_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) -c $< -o $@

# The fake driver the CUDA tests load instead of libcuda.so.1 (backend-cuda/fake/fake_libcuda.c),
# and a variant without cuGetProcAddress_v2 (a driver library missing a symbol).
FAKE_LIBCUDA_SRC := backend-cuda/fake/fake_libcuda.c backend-cuda/fake/fake_libcuda_exec.c backend-cuda/fake/fake_libcuda_gates.c \
  backend-cuda/fake/fake_libcuda_async.c backend-cuda/fake/fake_libcuda_graph.c
FAKE_LIBCUDA_DEPS := $(FAKE_LIBCUDA_SRC) backend-cuda/fake/fake_libcuda.h backend-cuda/fake/fake_libcuda_internal.h
$(BUILD)/cuda-fake/libcuda.so.1: $(FAKE_LIBCUDA_DEPS) | cuda-headers
	@mkdir -p $(@D)
	$(CC) $(CUBERT_WARN) $(HOST_DEFS) -Ibackend-cuda/fake -isystem $(CUDA_INCLUDE) $(CFLAGS) -fPIC -shared \
	  -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_LIBCUDA_SRC) -lpthread
$(BUILD)/cuda-fake-nogpa/libcuda.so.1: $(FAKE_LIBCUDA_DEPS) | cuda-headers
	@mkdir -p $(@D)
	$(CC) $(CUBERT_WARN) $(HOST_DEFS) -DFAKE_CUDA_NO_GET_PROC_ADDRESS -Ibackend-cuda/fake -isystem $(CUDA_INCLUDE) \
	  $(CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_LIBCUDA_SRC) -lpthread

# The fake libcuda users install (docs/cuda.md, "The CUDA driver without a GPU"): the same
# fake, a launch of a kernel with no CPU body fails (CUBERT_FAKE_CUDA_UNKNOWN_KERNELS).
FAKE_CUDA_LIB := $(BUILD)/libcubert-fakecuda.so
$(FAKE_CUDA_LIB): $(FAKE_LIBCUDA_DEPS) backend-cuda/fake/fakecuda.map | cuda-headers
	$(QUIET_LINK)$(CC) $(CUBERT_WARN) $(CUBERT_WERROR) $(HOST_DEFS) -DFAKE_CUDA_INSTALLED -Ibackend-cuda/fake \
	  -isystem $(CUDA_INCLUDE) $(CFLAGS) $(LDFLAGS) -fPIC -shared -Wl,-soname,libcubert-fakecuda.so \
	  -Wl,--version-script,backend-cuda/fake/fakecuda.map \
	  -o $@ $(FAKE_LIBCUDA_SRC) -lpthread

# The installed fake under a user program (docs/cuda.md, "The CUDA driver without a GPU"):
# `make install` into a staging tree, then examples/cuda_fake against the staged
# libcubert-fakecuda.so, with linear and with seeded cube order and in the asynchronous
# mode: its kernels' results
# must match the CPU server's bit for bit. Part of `make CUDA=1 test`.
FAKECUDA_STAGE = $(abspath $(BUILD))/fakecuda-stage
.PHONY: check-fakecuda
ifeq ($(CUDA),1)
# (everything `install` needs is a prerequisite: the nested make only copies files, even
# when this runs beside the rest of `make -j test`)
check-fakecuda: all $(BUILD)/examples/cuda_fake $(FAKE_CUDA_LIB) $(BUILD)/tools/cubert-info
ifeq ($(HAVE_NVCC),)
	@echo "check-fakecuda: skipped: nvcc not found (examples/cuda_fake has no kernel images)"
else
	@rm -rf '$(FAKECUDA_STAGE)'
	@$(MAKE) --no-print-directory install DESTDIR='$(FAKECUDA_STAGE)' PREFIX=/usr >/dev/null
	@test -f '$(FAKECUDA_STAGE)/usr/lib/libcubert-fakecuda.so' || \
	  { echo "check-fakecuda: make install did not install libcubert-fakecuda.so"; exit 1; }
	@bad=$$($(NM) -D --defined-only '$(FAKECUDA_STAGE)/usr/lib/libcubert-fakecuda.so' | \
	  awk 'NF >= 3 && $$3 !~ /^(cu[A-Z]|cubert_fake_cuda_)/ {print $$3}'); \
	  test -z "$$bad" || { echo "check-fakecuda: libcubert-fakecuda.so exports:" $$bad; exit 1; }
	CUBERT_LIBCUDA='$(FAKECUDA_STAGE)/usr/lib/libcubert-fakecuda.so' $(BUILD)/examples/cuda_fake
	CUBERT_LIBCUDA='$(FAKECUDA_STAGE)/usr/lib/libcubert-fakecuda.so' CUBERT_FAKE_CUDA_SEED=20261128 \
	  $(BUILD)/examples/cuda_fake >/dev/null
	CUBERT_LIBCUDA='$(FAKECUDA_STAGE)/usr/lib/libcubert-fakecuda.so' CUBERT_FAKE_CUDA_ASYNC=1 \
	  $(BUILD)/examples/cuda_fake >/dev/null
	@rm -rf '$(FAKECUDA_STAGE)'
endif
else
check-fakecuda:
	@echo "check-fakecuda: needs CUDA=1 (make CUDA=1 check-fakecuda)"; exit 1
endif

# The fake NCCL (tests/cuda/fake_libnccl.c) the collective tests load instead of
# libnccl.so.2, and variants: too old (2.6.4, no ncclCommInitRankConfig), no ncclSend.
FAKE_LIBNCCL_SRC := tests/cuda/fake_libnccl.c tests/cuda/fake_libnccl_shm.c
FAKE_LIBNCCL_DEPS := $(FAKE_LIBNCCL_SRC) tests/cuda/fake_libnccl.h tests/cuda/fake_libnccl_internal.h \
  backend-cuda/comm/cuda_nccl_abi.h
fake_nccl_flags = $(if $(filter %-old,$(1)),-DFAKE_NCCL_OLD,$(if $(filter %-nosend,$(1)),-DFAKE_NCCL_NO_SEND))
$(FAKE_LIBNCCL_VARIANTS:%=$(BUILD)/%/libnccl.so.2): $(FAKE_LIBNCCL_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CUBERT_WARN) $(HOST_DEFS) $(call fake_nccl_flags,$(notdir $(@D))) -Itests/cuda -Ibackend-cuda \
	  $(CFLAGS) -fPIC -shared -Wl,-soname,libnccl.so.2 -o $@ $(FAKE_LIBNCCL_SRC) -ldl -lpthread

# The Mean kernels' embedded PTX (backend-cuda/comm/cuda_comm_mean_ptx.h) from
# backend-cuda/comm/cuda_comm_kernels.h: regenerate it after editing the kernels (needs nvcc).
.PHONY: comm-mean-ptx
comm-mean-ptx:
	NVCC='$(NVCC)' sh tools/cubert-comm-ptx.sh backend-cuda/comm/cuda_comm_mean_ptx.h

# The GPU smoke program (tests/cuda/cuda_smoke.c): run it on a machine with a GPU.
# (it calls the device layer's internal functions: it links the internal archive)
$(BUILD)/cuda-smoke: tests/cuda/cuda_smoke.c $(CUDA_LINK_OBJ) $(INTERNAL_LIB) | cuda-headers
	$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Ibackend-cuda $(KERNELS_INC) \
	  -isystem $(CUDA_INCLUDE) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
ifeq ($(CUDA),1)
cuda-smoke: $(BUILD)/cuda-smoke
	$(BUILD)/cuda-smoke $(SMOKE_ARGS)
else
cuda-smoke:
	@echo "cuda-smoke: needs CUDA=1 (make CUDA=1 cuda-smoke)"; exit 1
endif

# bench/bench_cuda.c: the GPU benchmarks (raw Driver API peers through the loader's table),
# with the kernel images linked in.
ifeq ($(CUDA),1)
$(BUILD)/bench/bench_cuda: bench/bench_cuda.c $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench cuda-headers
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -I. -Ibackend-cpu -Ibackend-cuda -isystem $(CUDA_INCLUDE) -Itests/support $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
# bench/bench_cuda_record.c: recorded sequences (CUDA graphs) next to a raw launch loop and a raw graph.
$(BUILD)/bench/bench_cuda_record: bench/bench_cuda_record.c $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench cuda-headers
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -I. -Ibackend-cpu -Ibackend-cuda -isystem $(CUDA_INCLUDE) -Itests/support $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
# bench/bench_transformer.c: the transformer's layers on the GPU (and the CPU rows), with the
# kernel images linked in, OpenMP as in bench.mk.
$(BUILD)/bench/bench_transformer: bench/bench_transformer.c $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench cuda-headers
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -I. -Ibackend-cpu -Itests/support $(KERNELS_INC) $(BENCH_EXTRA_CFLAGS) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(BENCH_OPT) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
# bench/bench_nccl.c: all_reduce through the client next to raw NCCL (the loaders' tables).
$(BUILD)/bench/bench_nccl: bench/bench_nccl.c $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) | $(BUILD)/bench cuda-headers
	$(QUIET_LINK)$(CC) $(CUBERT_CFLAGS) $(HOST_DEFS) -Icore -I. -Ibackend-cpu -Ibackend-cuda -isystem $(CUDA_INCLUDE) -Itests/support $(KERNELS_INC) $(DEPFLAGS) $(CPPFLAGS) $(CFLAGS) $(CUBERT_REQUIRED) $(LDFLAGS) -o $@ $< $(CUDA_LINK_OBJ) $(BENCH_SUPPORT_OBJ) $(INTERNAL_LIB) $(HOST_LIBS)
endif

# A user's own kernels: make kernel-image KERNELS=path/my_kernels.h [OUT=my_kernels_image.c]
# writes the C file to compile into the program (docs/kernels.md).
kernel-image:
	@test -n "$(KERNELS)" || { echo "usage: make kernel-image KERNELS=path/my_kernels.h [OUT=file.c]"; exit 2; }
	NVCC='$(NVCC)' NVCC_FLAGS='$(NVCC_FLAGS)' PTX_ARCH='$(NVCC_PTX_ARCH)' CUBIN_ARCH='$(NVCC_CUBIN_ARCH)' \
	  sh tools/cubert-kernel-image.sh -I include -o $(or $(OUT),$(basename $(KERNELS))_image.c) $(KERNELS)

