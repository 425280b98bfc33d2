#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu-run-nccl.sh: the collectives through NCCL on a machine with GPUs,
# in one go, within one 600 s command (docs/collectives.md). From the
# repository root:
#
#   bash tools/gpu-run-nccl.sh       # logs to $OUT (or build/gpu-run-nccl when unset)
#
# Separate from tools/gpu-run.sh (its own budget and files); after it on a
# warm machine the build step is incremental. Steps, each under a time limit
# cut to what is left of GPU_RUN_BUDGET (default 540 s; a step with less
# than 15 s left is skipped and said so), none able to hang the run:
#   1. environment: nvidia-smi, the GPUs' topology, where libnccl.so.2 is (its
#      version is in bench_nccl's first line)
#   2. build (make CUDA=1): test binary, fake drivers, cuda_multiprocess,
#      bench_nccl
#   3. the NCCL tests: cuda_nccl_* (loader, ABI against nccl.h), cuda_comm_*
#      (over the fakes), cuda_gpu_comm_* (the GPUs and libnccl.so.2; the
#      two-GPU ones print "skipped: needs 2 GPUs" on one)
#   4. the conformance suite's collective tests on the GPU (CUBERT_CTS_DRIVER=
#      cuda): single-member ones on one GPU, the multi-member ones where there
#      are as many GPUs as devices (else "skipped: ... need N GPUs")
#   5. examples/cuda_multiprocess with 1 process, then 2 (prints "skipped:
#      2 processes need 2 GPUs" on one GPU)
#   6. bench_nccl: all_reduce 4 KiB .. 1 GiB, client vs raw NCCL, on every GPU
#   7. on a machine of more than 2 GPUs: bench_nccl --gpus 2 --max-mib 1 (the
#      small sizes on two GPUs too: the 4 KiB latency over raw NCCL of both)
#   8. the driver calls per round over the fakes (cuda_comm_round_costs_*,
#      printed: what the host pays per round beside NCCL's group call)
# Files under $OUT (10, no subfolder): summary.txt (printed last), build.log,
# tests.log, cts.log, example.txt, bench.txt, bench.csv, bench2.txt,
# bench2.csv, costs.txt.
# Exit status: 0 when every step passed, else 1.
set -u

cd "$(dirname "$0")/.." || exit 2
# NVLink multicast stays off on every machine (NCCL's NVLS can take a shared
# host's GPUs out of service): for NCCL in this script and every child.
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-build/gpu-run-nccl}
if [ -z "${CUDA_PATH:-}" ]; then
  if [ -f /usr/local/cuda/include/cuda.h ]; then
    CUDA_PATH=/usr/local/cuda
  elif command -v nvcc >/dev/null 2>&1; then
    CUDA_PATH=$(dirname "$(dirname "$(command -v nvcc)")")
  else
    CUDA_PATH=/usr/local/cuda
  fi
fi
export CUDA_PATH
mkdir -p "$OUT"
JOBS=$(nproc 2>/dev/null || echo 4)
SUMMARY=$OUT/summary.txt
for f in summary.txt build.log tests.log cts.log example.txt bench.txt bench2.txt costs.txt; do
  : > "$OUT/$f"
done
rm -f "$OUT/bench.csv" "$OUT/bench2.csv"
failed=0
start=$(date +%s)
deadline=$((start + ${GPU_RUN_BUDGET:-540}))

note() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }

# A test log in the summary: every FAIL with its lines, the skips counted by
# reason, the closing count.
results() {
  grep -A3 '^FAIL' "$1" | tee -a "$SUMMARY"
  grep '^skip ' "$1" | sed 's/^skip [^:]*: skipped: //; s/ (tests\/[^)]*)$//' | sort | uniq -c |
    sed 's/^ */  skipped x/' | tee -a "$SUMMARY"
  grep -E 'passed, ' "$1" | tail -n 1 | tee -a "$SUMMARY"
}

# step NAME LIMIT_S LOG COMMAND...: run with a time limit, append all output
# to LOG, record the status. 124/137: the limit was hit.
step() {
  local name=$1 limit=$2 log=$3 rc left t0
  shift 3
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 15 ]; then
    echo "== $name: not run: out of time" >> "$log"
    note "step $name: SKIPPED (out of time: ${left}s left of the budget)"
    failed=1
    return 1
  fi
  [ "$limit" -le "$left" ] || limit=$left
  t0=$(date +%s)
  printf '\n==== [%ss] %s (limit %ss)\n' "$((t0 - start))" "$name" "$limit"
  echo "== $name: $*" >> "$log"
  timeout -k 10 "$limit" "$@" >> "$log" 2>&1
  rc=$?
  tail -n 12 "$log"
  if [ "$rc" -eq 0 ]; then
    note "step $name: ok ($(($(date +%s) - t0)) s)"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    note "step $name: TIMED OUT after ${limit}s"
    failed=1
  else
    note "step $name: FAILED (exit $rc, $(($(date +%s) - t0)) s)"
    failed=1
  fi
  return "$rc"
}

{
  echo "== environment ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: $(uname -srm), $JOBS CPUs"
  echo "CUDA_PATH: $CUDA_PATH"
  echo "nvidia-smi:"
  timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id \
    --format=csv 2>&1 | sed 's/^/  /'
  echo "GPU topology (NVLink / PCIe paths, peer access):"
  timeout 30 nvidia-smi topo -m 2>&1 | sed 's/^/  /' | head -n 12
  echo "libnccl: $( (ldconfig -p 2>/dev/null | grep -m1 'libnccl.so.2 ') || echo 'not in the ldconfig cache')"
} | tee -a "$SUMMARY"

B=build/cuda
step build 240 "$OUT/build.log" \
  make -j"$JOBS" CUDA=1 "$B/cubert-test" "$B/examples/cuda_multiprocess" "$B/bench/bench_nccl"

# NCCL's own view: version, and what it detects (only warnings unless asked).
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}

step nccl-tests 150 "$OUT/tests.log" "$B/cubert-test" -j 4 cuda_nccl cuda_comm cuda_gpu_comm
results "$OUT/tests.log"
grep -E '^ok   cuda_gpu_comm' "$OUT/tests.log" | sed 's/ ([0-9]* ms)//' | tr '\n' ' ' | fold -w 160 | tee -a "$SUMMARY"
echo | tee -a "$SUMMARY"

step cts-collectives 150 "$OUT/cts.log" env CUBERT_CTS_DRIVER=cuda "$B/cubert-test" -j 4 \
  cts_all_reduce cts_send_recv cts_to_client cts_kit_comm cts_ensure_init cts_collective \
  cts_release cts_released cts_recv_refused cts_multi_device_teardown cts_sync_collective \
  cts_config_collectives
results "$OUT/cts.log"

step example-1 60 "$OUT/example.txt" "$B/examples/cuda_multiprocess" 1
step example-2 90 "$OUT/example.txt" "$B/examples/cuda_multiprocess" 2
grep -E '^(ok|skipped|FAILED|rank)' "$OUT/example.txt" | tee -a "$SUMMARY"

step bench 150 "$OUT/bench.txt" env CUBERT_BENCH_CSV="$OUT/bench.csv" "$B/bench/bench_nccl"
grep -E '^(\||bench_nccl)' "$OUT/bench.txt" | tee -a "$SUMMARY"

ngpus=$(timeout 30 nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${ngpus:-0}" -gt 2 ]; then
  step bench-2-gpus 60 "$OUT/bench2.txt" env CUBERT_BENCH_CSV="$OUT/bench2.csv" \
    "$B/bench/bench_nccl" --gpus 2 --max-mib 1
  grep -E '^(\||bench_nccl)' "$OUT/bench2.txt" | tee -a "$SUMMARY"
fi

# the counts behind the 4 KiB figure (over the fakes: no GPU used)
step costs 60 "$OUT/costs.txt" "$B/cubert-test" --no-fork cuda_comm_round_costs
grep -E 'per round' "$OUT/costs.txt" | tee -a "$SUMMARY"

printf '\n==== summary (%ss; logs in %s)\n' "$(($(date +%s) - start))" "$OUT"
cat "$SUMMARY"
exit "$failed"
