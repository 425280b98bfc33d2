#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu-run.sh: everything the CUDA driver can show on a machine with a
# GPU, in one go, within one 600 s command (docs/cuda.md). From the
# repository root:
#
#   bash tools/gpu-run.sh            # logs to $OUT (or build/gpu-run when unset)
#   bash tools/gpu-run.sh transformer  # only the build and the transformer steps (10-12)
#   bash tools/gpu-run.sh scaling      # only the build, bench_scaling (threads, streams:
#                                      # the CPU server on this host's cores) and bench_cuda
#   bash tools/gpu-run.sh cpu          # only the CPU server on this host's CPUs (issue 27 part 2:
#                                      # the round trip with 4 spinning threads on 2 cores, the
#                                      # quiet round trip and async launches, recorded sequences,
#                                      # the stress with busy threads; cpu-host.txt)
#
# Steps, each under a time limit cut to what is left of GPU_RUN_BUDGET
# (default 540 s; a step with less than 15 s left is skipped and said so),
# each running whatever happened before (nothing can hang the run):
#   1. environment: nvidia-smi, nvcc, gcc, CPUs
#   2. build (make CUDA=1): library, tools, examples, test binary, fake
#      drivers, smoke program, bench_cuda
#   3. cubert-info: CPU devices, then the CUDA devices
#   4. make cts DRIVER=cuda: the conformance suite on the GPU
#   5. the CUDA tests (cuda_: the device layer and the client, on the fake
#      driver and on the GPU; cuda_gpu_external_*: stream order with CUDA code
#      outside cubert, cubert/cuda.h)
#   5b. DLPack with PyTorch on the GPU (tools/gpu-dlpack-torch.py over
#      build/cuda/examples/python/libcubert_dlpack.so; docs/interop.md)
#   6. cuda-smoke (device layer checks and raw figures), cuda-smoke --lost
#   7. bench_cuda: the client against the raw Driver API (its waits, the
#      allocation path, uploads by copy threads, the context's scheduling);
#      bench_cuda_record: 10 adds replayed from a recording (a CUDA graph) vs a
#      raw cuLaunchKernel loop and a raw CUDA graph; tools/bench_torch_graph.py:
#      PyTorch eager and CUDA-graph replay on the same shape (when importable)
#   8. examples/cuda_fake on the GPU and over libcubert-fakecuda.so; make run
#      CUDA=1: the demo on the GPU
#   9. compute-sanitizer memcheck over cuda-smoke --quick and over a few
#      client tests (when installed)
#  10. examples/transformer: the GPT-2 block's layers on the GPU, each checked
#      against the C reference and timed
#  11. tools/transformer_torch.py: the same ops in PyTorch eager (the GPU
#      machine's python3; float32, TF32 off), medians to torch.txt
#  12. bench_transformer --gpu --torch torch.txt: the layers vs those figures
#      (rows in bench.txt / bench.csv too)
# Files under $OUT (15, no subfolder): summary.txt (printed last), build.log,
# cts.log, cuda-tests.log, dlpack-torch.log, smoke.txt (cubert-info, both smoke runs, the
# demo), bench.txt, bench-record.txt, bench.csv (join it to `make bench`: BENCH_EXTRA_CSV),
# torch.csv (the PyTorch graph rows), sanitizer.txt, transformer.txt (steps 10-12), torch.txt;
# the scaling mode writes scaling.txt (bench_scaling) and bench.txt, the cpu mode cpu-host.txt.
# Exit status: 0 when every step passed, else 1.
set -u

cd "$(dirname "$0")/.." || exit 2
# NVLink multicast stays off on every machine (NCCL's NVLS can take a shared
# host's GPUs out of service): for NCCL in this script and every child.
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-build/gpu-run}
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
ONLY=${1:-}
for f in summary.txt build.log cts.log cuda-tests.log dlpack-torch.log smoke.txt bench.txt bench-record.txt sanitizer.txt transformer.txt cpu-host.txt; do
  : > "$OUT/$f"
done
rm -f "$OUT/bench.csv" "$OUT/torch.csv"
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
  echo "host: $(uname -srm), $JOBS CPUs ($(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'))"
  echo "gcc: $(cc --version 2>/dev/null | head -n 1)"
  echo "CUDA_PATH: $CUDA_PATH"
  echo "nvcc: $( (timeout 30 "$CUDA_PATH/bin/nvcc" --version || timeout 30 nvcc --version) 2>/dev/null | tail -n 2 | tr '\n' ' ')"
  echo "nvidia-smi:"
  timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,pci.bus_id \
    --format=csv 2>&1 | sed 's/^/  /'
} | tee -a "$SUMMARY"

# The CPU server on this host's CPUs (docs/benchmarks.md, "Oversubscribed"): the plain
# build (no CUDA), then each figure twice; the oversubscribed ones pinned to two CPUs.
if [ "$ONLY" = "cpu" ]; then
  C=$OUT/cpu-host.txt
  step cpu-build 240 "$OUT/build.log" make -j"$JOBS" build/bench/bench_oversubscribed \
    build/bench/bench_client build/bench/bench_record build/bench/bench_peers build/cubert-stress
  for i in 1 2; do
    step oversubscribed 60 "$C" taskset -c 0,1 build/bench/bench_oversubscribed --runs 21
    step client-rt 30 "$C" build/bench/bench_client --only rt
    step client-async 30 "$C" build/bench/bench_client --only async
    step record 60 "$C" build/bench/bench_record --runs 15
  done
  step peers-launch 60 "$C" build/bench/bench_peers --only launch
  step stress-2cpu 120 "$C" taskset -c 0,1 env STRESS_OPS=100000 STRESS_BUSY=0 build/cubert-stress
  step stress-2cpu-busy 120 "$C" taskset -c 0,1 env STRESS_OPS=100000 STRESS_BUSY=4 build/cubert-stress
  grep -E '^(\| |busy /|rt:|async:|stress: [0-9]+ ops|stress: .* s, host|load average)' "$C" | tee -a "$SUMMARY"
  printf '\n==== summary (%ss; logs in %s)\n' "$(($(date +%s) - start))" "$OUT"
  cat "$SUMMARY"
  exit "$failed"
fi

B=build/cuda
if [ "$ONLY" = "scaling" ]; then
  step build 240 "$OUT/build.log" make -j"$JOBS" CUDA=1 "$B/bench/bench_cuda" "$B/bench/bench_scaling"
else
  step build 240 "$OUT/build.log" \
    make -j"$JOBS" CUDA=1 all tools examples dlpack-python "$B/cubert-test" "$B/cuda-smoke" "$B/bench/bench_cuda" \
    "$B/bench/bench_cuda_record" "$B/bench/bench_transformer"
fi
images=$(find "$B/kernels" -name '*.o' 2>/dev/null | wc -l)
if [ "$images" -ge 1 ]; then
  note "kernel images: $images embedded"
else
  note "kernel images: NOT embedded (nvcc not found? see build.log)"
fi

# The transformer's layers (examples/transformer): checked and timed on the GPU, then
# against PyTorch eager on the same GPU (steps 10-12: last in a full run; `bash
# tools/gpu-run.sh transformer` runs only these after the build).
transformer_steps() {
  step transformer 60 "$OUT/transformer.txt" "$B/examples/transformer"
  grep -E '^(GPT-2|  [a-z]|not on|every|some)' "$OUT/transformer.txt" | tee -a "$SUMMARY"
  rm -f "$OUT/torch.txt"
  step transformer-torch 150 "$OUT/transformer.txt" python3 tools/transformer_torch.py --out "$OUT/torch.txt"
  grep -E '^(PyTorch|  [a-z_]+ +[0-9]|transformer_torch)' "$OUT/transformer.txt" | tee -a "$SUMMARY"
  step transformer-bench 120 "$OUT/transformer.txt" env CUBERT_BENCH_CSV="$OUT/bench.csv" \
    "$B/bench/bench_transformer" --gpu --torch "$OUT/torch.txt"
  grep -E '^(\| gpu|bench_transformer)' "$OUT/transformer.txt" | tee -a "$SUMMARY"
}
# Issue 27's figures: launches and pool reserves from 1..8 client threads on their own
# streams and over 1..64 streams from one thread (the CPU server: it wants 16+ cores),
# then bench_cuda (its row "8 threads on 8 streams" against raw cuLaunchKernel).
if [ "$ONLY" = "scaling" ]; then
  : > "$OUT/scaling.txt"
  step scaling-threads 90 "$OUT/scaling.txt" env CUBERT_BENCH_CSV="$OUT/bench.csv" \
    "$B/bench/bench_scaling" --only threads
  step scaling-streams 90 "$OUT/scaling.txt" env CUBERT_BENCH_CSV="$OUT/bench.csv" \
    "$B/bench/bench_scaling" --only streams
  grep -E '^(\||bench_scaling)' "$OUT/scaling.txt" | tee -a "$SUMMARY"
  step bench 180 "$OUT/bench.txt" env CUBERT_BENCH_CSV="$OUT/bench.csv" "$B/bench/bench_cuda"
  grep -E '^(\||bench_cuda)' "$OUT/bench.txt" | tee -a "$SUMMARY"
  printf '\n==== summary (%ss; logs in %s)\n' "$(($(date +%s) - start))" "$OUT"
  cat "$SUMMARY"
  exit "$failed"
fi
if [ "$ONLY" = "transformer" ]; then
  transformer_steps
  printf '\n==== summary (%ss; logs in %s)\n' "$(($(date +%s) - start))" "$OUT"
  cat "$SUMMARY"
  exit "$failed"
fi

step cubert-info 30 "$OUT/smoke.txt" "$B/tools/cubert-info"
grep -E '^(CUDA|Device)' "$OUT/smoke.txt" | tee -a "$SUMMARY"

# The conformance suite on the GPU (each test its own process: a context each).
step cts-cuda 150 "$OUT/cts.log" env CUBERT_CTS_DRIVER=cuda "$B/cubert-test" -j 8 cts_
results "$OUT/cts.log"

# The CUDA tests: the device layer and the client, on the fake driver and on the GPU.
step cuda-tests 90 "$OUT/cuda-tests.log" "$B/cubert-test" -j 8 cuda_
results "$OUT/cuda-tests.log"
grep -E '^ok   cuda_gpu' "$OUT/cuda-tests.log" | sed 's/ ([0-9]* ms)//' | tr '\n' ' ' | fold -w 160 | tee -a "$SUMMARY"
echo | tee -a "$SUMMARY"

# DLPack with PyTorch: the same device addresses, ordering by streams only, every dtype.
step dlpack-torch 90 "$OUT/dlpack-torch.log" python3 tools/gpu-dlpack-torch.py \
  "$B/examples/python/libcubert_dlpack.so"
grep -E '^(FAIL|skipped|note|dlpack-torch)' "$OUT/dlpack-torch.log" | tee -a "$SUMMARY"

step smoke 90 "$OUT/smoke.txt" "$B/cuda-smoke"
grep -E '^(bench|cuda-smoke|  FAIL)' "$OUT/smoke.txt" | tee -a "$SUMMARY"
step smoke-lost 30 "$OUT/smoke.txt" "$B/cuda-smoke" --lost
grep -E '^(lost|  FAIL)' "$OUT/smoke.txt" | tee -a "$SUMMARY"

# under gdb when the machine has it: a crash then prints its backtrace into bench.txt
BENCH_WRAP=
if command -v gdb >/dev/null 2>&1; then
  BENCH_WRAP="gdb -q -batch -return-child-result -ex run -ex bt --args"
fi
# shellcheck disable=SC2086
step bench 180 "$OUT/bench.txt" env CUBERT_BENCH_CSV="$OUT/bench.csv" $BENCH_WRAP "$B/bench/bench_cuda"
grep -E '^(\||bench_cuda|#[0-9])' "$OUT/bench.txt" | tee -a "$SUMMARY"

# examples/cuda_fake: a user program on the GPU (integer kernels must match the CPU
# server's bytes; float ones may differ in the last bits), then over the installed-form
# fake libcuda (every byte must match)
step cuda-fake-example-gpu 60 "$OUT/smoke.txt" "$B/examples/cuda_fake"
step cuda-fake-example-fake 60 "$OUT/smoke.txt" env CUBERT_LIBCUDA="$B/libcubert-fakecuda.so" \
  "$B/examples/cuda_fake"
grep -E '^(CUDA device 0|CPU server vs|  ck_|cuda_fake)' "$OUT/smoke.txt" | tee -a "$SUMMARY"

# Recorded sequences (docs/recording.md): the client's replays (a CUDA graph) vs raw
# loops and a raw graph, then PyTorch's CUDA graphs on the same 10 adds of 1024 floats.
step bench-record 60 "$OUT/bench-record.txt" \
  env CUBERT_BENCH_CSV="$OUT/bench.csv" "$B/bench/bench_cuda_record"
grep -E '^(\||bench_cuda_record)' "$OUT/bench-record.txt" | tee -a "$SUMMARY"
step bench-torch 90 "$OUT/bench-record.txt" python3 tools/bench_torch_graph.py --csv "$OUT/torch.csv"
grep -E '^(\| torch|bench_torch_graph)' "$OUT/bench-record.txt" | tee -a "$SUMMARY"

step demo 60 "$OUT/smoke.txt" make CUDA=1 run
grep -E '^(cubert .* demo|not on the GPU|demo |  .*FAIL)' "$OUT/smoke.txt" | tee -a "$SUMMARY"

SANITIZER=$(command -v compute-sanitizer 2>/dev/null || echo "$CUDA_PATH/bin/compute-sanitizer")
if [ -x "$SANITIZER" ]; then
  step memcheck-smoke 90 "$OUT/sanitizer.txt" \
    "$SANITIZER" --tool memcheck --report-api-errors no --error-exitcode 3 "$B/cuda-smoke" --quick
  step memcheck-client 90 "$OUT/sanitizer.txt" \
    "$SANITIZER" --tool memcheck --report-api-errors no --error-exitcode 3 \
    "$B/cubert-test" --no-fork cuda_gpu_client_transfers cuda_gpu_client_pitched cuda_gpu_client_dynamic \
    cuda_gpu_client_validate cuda_gpu_paths cuda_gpu_waits cuda_gpu_record
  grep -E 'ERROR SUMMARY|cuda-smoke:|passed' "$OUT/sanitizer.txt" | tee -a "$SUMMARY"
else
  echo "compute-sanitizer not installed" > "$OUT/sanitizer.txt"
  note "step memcheck: skipped (compute-sanitizer not installed)"
fi

transformer_steps

printf '\n==== summary (%ss; logs in %s)\n' "$(($(date +%s) - start))" "$OUT"
cat "$SUMMARY"
exit "$failed"
