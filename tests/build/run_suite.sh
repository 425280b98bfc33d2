#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/run_suite.sh: what `make test` runs.
#
#   run_suite.sh WRAPPER TEST_BIN [PREFIX ...]
#
# With no PREFIX: the whole suite (its conformance tests on the threaded CPU
# driver), then the conformance suite again on the CPU driver in
# deterministic mode and on the inline driver (`make cts DRIVER=...`), and,
# when CUBERT_FAKE_LIBCUDA names the fake CUDA driver (a CUDA=1 build), on
# the CUDA driver over it (with the fake NCCL of CUBERT_FAKE_LIBNCCL: once
# on one fake GPU, once more for the collective tests on 8), and over the
# installed fake CUBERT_FAKECUDA_LIB names, asynchronous, with a cube-order seed; and a closing
# line that adds the runs up:
# "N passed, N failed[, N skipped]".
# With prefixes: only those tests, as the runner prints them. Exit status 1
# when anything failed.
set -u
wrapper=$1
bin=$2
shift 2
if [ $# -gt 0 ]; then
  exec $wrapper "$bin" "$@"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
run() { # name, env assignment, args...
  name=$1
  shift
  echo "== $name"
  env "$@" >"$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  [ $rc -eq 0 ] || status=1
  tail -n 1 "$tmp/out" >>"$tmp/summaries"
}
run "the suite (conformance on the threaded CPU driver)" CUBERT_CTS_DRIVER=cpu $wrapper "$bin"
run "conformance suite: CPU driver, deterministic mode" CUBERT_CTS_DRIVER=deterministic $wrapper "$bin" cts_
run "conformance suite: inline driver" CUBERT_CTS_DRIVER=inline $wrapper "$bin" cts_
if [ -n "${CUBERT_FAKE_LIBCUDA:-}" ]; then
  run "conformance suite: CUDA driver over the fake libcuda (host kernels) and the fake libnccl, one GPU" \
    CUBERT_CTS_DRIVER=cuda CUBERT_LIBCUDA="$CUBERT_FAKE_LIBCUDA" CUBERT_FAKE_CUDA_MEMORY=1073741824 \
    CUBERT_LIBNCCL="${CUBERT_FAKE_LIBNCCL:-}" $wrapper "$bin" cts_
  # the installed fake (libcubert-fakecuda.so: a kernel without a CPU body fails its launch)
  # as a user runs it (docs/cuda.md): asynchronous (work runs when asked for: a missing
  # wait reads old bytes), its cubes in a seeded order
  if [ -n "${CUBERT_FAKECUDA_LIB:-}" ]; then
    run "conformance suite: CUDA driver over the installed fake libcuda, asynchronous, seeded cube order" \
      CUBERT_CTS_DRIVER=cuda CUBERT_LIBCUDA="$CUBERT_FAKECUDA_LIB" CUBERT_FAKE_CUDA_SEED=29 \
      CUBERT_FAKE_CUDA_ASYNC=1 \
      CUBERT_FAKE_CUDA_MEMORY=1073741824 CUBERT_LIBNCCL="${CUBERT_FAKE_LIBNCCL:-}" $wrapper "$bin" cts_
  fi
  # the collective tests again with one fake GPU per device (NCCL takes one rank per GPU), and
  # the DLPack tests (a tensor of GPU 0 offered to a device of GPU 1 is refused: DEVICE_MISMATCH)
  run "conformance suite, collectives and DLPack: CUDA driver over the fake libcuda with 8 GPUs and the fake libnccl" \
    CUBERT_CTS_DRIVER=cuda CUBERT_LIBCUDA="$CUBERT_FAKE_LIBCUDA" CUBERT_FAKE_CUDA_MEMORY=1073741824 \
    CUBERT_FAKE_CUDA_DEVICES=8 CUBERT_LIBNCCL="${CUBERT_FAKE_LIBNCCL:-}" \
    $wrapper "$bin" cts_all_reduce cts_send_recv cts_to_client cts_kit_comm cts_ensure_init \
    cts_collective cts_release cts_released cts_recv_refused cts_multi_device_teardown \
    cts_sync_collective cts_config_collectives cts_dlpack
fi
awk '
  { for (i = 1; i < NF; i++) {
      if ($(i + 1) ~ /^passed/) p += $i
      if ($(i + 1) ~ /^failed/) f += $i
      if ($(i + 1) ~ /^skipped/) s += $i } }
  END { printf "== total of the runs\n"
        if (s) printf "%d passed, %d failed, %d skipped\n", p, f, s
        else printf "%d passed, %d failed\n", p, f }' "$tmp/summaries"
exit $status
