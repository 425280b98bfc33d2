#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu-run.sh: everything the CUDA backend can show on a machine with a
# GPU, in one go (docs/cuda.md). Run it from the repository root:
#
#   bash tools/gpu-run.sh            # logs to $OUT (or build/gpu-run when unset)
#
# Steps, each under a time limit (nothing can hang the run), each continuing
# after a failure of the one before:
#   1. environment: nvidia-smi, nvcc, gcc, CPU count
#   2. make CUDA=1: library, tools, examples, test binary, fake drivers, smoke
#   3. cubert-info (CPU devices, then the CUDA devices or "CUDA: unavailable")
#   4. cuda-smoke: device listing, checks over the embedded kernel images,
#      benchmarks against raw Driver API calls
#   5. cuda-smoke --lost: an illegal-address kernel loses the device (own process)
#   6. make CUDA=1 test: the whole suite, GPU tests included
#   7. compute-sanitizer memcheck over cuda-smoke --quick (when installed; the
#      smoke program makes failing API calls on purpose: API errors are not reported)
# The whole run stays within GPU_RUN_BUDGET seconds (default 540, under a
# 600 s command limit): each step's limit is cut to what is left, and a step
# with less than 15 s left is skipped (and said so).
# Files under $OUT (7): summary.txt, build.log, cubert-info.txt, smoke.txt,
# smoke-lost.txt, test.log, sanitizer.txt. The summary is printed last.
# Exit status: 0 when every step passed, else 1.
set -u

cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-build/gpu-run}
# The CUDA toolkit: CUDA_PATH, else /usr/local/cuda, else where nvcc is found.
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
: > "$SUMMARY"
failed=0
start=$(date +%s)
deadline=$((start + ${GPU_RUN_BUDGET:-540}))

note() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }

# step NAME LIMIT_S LOG COMMAND...: run with a time limit, log all output,
# record the status. 124/137: the limit was hit.
step() {
  local name=$1 limit=$2 log=$3 rc left
  shift 3
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 15 ]; then
    echo "not run: out of time" > "$log"
    note "step $name: SKIPPED (out of time: ${left}s left of the budget)"
    failed=1
    return 1
  fi
  [ "$limit" -le "$left" ] || limit=$left
  printf '\n==== [%ss] %s (limit %ss)\n' "$(($(date +%s) - start))" "$name" "$limit"
  timeout -k 10 "$limit" "$@" > "$log" 2>&1
  rc=$?
  tail -n 25 "$log"
  if [ "$rc" -eq 0 ]; then
    note "step $name: ok"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    note "step $name: TIMED OUT after ${limit}s"
    failed=1
  else
    note "step $name: FAILED (exit $rc)"
    failed=1
  fi
  return "$rc"
}

{
  echo "== environment ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: $(uname -srm), $JOBS CPUs"
  echo "gcc: $(cc --version 2>/dev/null | head -n 1)"
  echo "CUDA_PATH: $CUDA_PATH"
  echo "nvcc: $( (timeout 30 "$CUDA_PATH/bin/nvcc" --version || timeout 30 nvcc --version) 2>/dev/null | tail -n 2 | tr '\n' ' ')"
  echo "nvidia-smi:"
  timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,pci.bus_id \
    --format=csv 2>&1 | sed 's/^/  /'
} | tee -a "$SUMMARY"

BUILD_DIR=build/cuda
step build 300 "$OUT/build.log" \
  make -j"$JOBS" CUDA=1 all tools examples "$BUILD_DIR/cubert-test" "$BUILD_DIR/cuda-smoke"
images=$(find "$BUILD_DIR/kernels" -name '*.o' 2>/dev/null | wc -l)
if [ "$images" -ge 1 ]; then
  note "kernel images: $images embedded"
else
  note "kernel images: NOT embedded (nvcc not found? see build.log)"
fi

step cubert-info 60 "$OUT/cubert-info.txt" "$BUILD_DIR/tools/cubert-info"
grep -E '^(CUDA|Device)' "$OUT/cubert-info.txt" | tee -a "$SUMMARY"

step smoke 180 "$OUT/smoke.txt" "$BUILD_DIR/cuda-smoke"
grep -E '^(bench|check|cuda-smoke|  FAIL)' "$OUT/smoke.txt" | tee -a "$SUMMARY"

step smoke-lost 60 "$OUT/smoke-lost.txt" "$BUILD_DIR/cuda-smoke" --lost
grep -E '^(lost|cuda-smoke|  FAIL)' "$OUT/smoke-lost.txt" | tee -a "$SUMMARY"

step test 240 "$OUT/test.log" make -j"$JOBS" CUDA=1 test
grep -E '^(FAIL|skip) |passed, ' "$OUT/test.log" | tee -a "$SUMMARY"
grep -E '^ok   cuda_gpu' "$OUT/test.log" | tee -a "$SUMMARY"

SANITIZER=$(command -v compute-sanitizer 2>/dev/null || echo "$CUDA_PATH/bin/compute-sanitizer")
if [ -x "$SANITIZER" ]; then
  step memcheck 300 "$OUT/sanitizer.txt" \
    "$SANITIZER" --tool memcheck --report-api-errors no --error-exitcode 3 \
    "$BUILD_DIR/cuda-smoke" --quick
  grep -E 'ERROR SUMMARY|cuda-smoke:' "$OUT/sanitizer.txt" | tee -a "$SUMMARY"
else
  echo "compute-sanitizer not installed" > "$OUT/sanitizer.txt"
  note "step memcheck: skipped (compute-sanitizer not installed)"
fi

printf '\n==== summary (%ss; logs in %s)\n' "$(($(date +%s) - start))" "$OUT"
cat "$SUMMARY"
exit "$failed"
