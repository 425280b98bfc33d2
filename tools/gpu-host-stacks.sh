#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu-host-stacks.sh: a poor man's profiler for the GPU host (no perf
# there; cuda-gdb attaches to any process): runs a command in the background,
# takes SAMPLES snapshots of every thread's stack (INTERVAL seconds apart,
# after DELAY), then prints the innermost frames counted over all samples.
#   bash tools/gpu-host-stacks.sh build/bench/bench_scaling --only threads --threads 8 --ops 40000000
# Environment: SAMPLES (8), INTERVAL (0.3), DELAY (1), DEPTH (frames kept per
# stack in the summary, 3), OUT (logs: stacks.txt).
set -u
SAMPLES=${SAMPLES:-8}
INTERVAL=${INTERVAL:-0.3}
DELAY=${DELAY:-1}
DEPTH=${DEPTH:-3}
OUT=${OUT:-build/gpu-host-stacks}
mkdir -p "$OUT"
GDB=$(command -v cuda-gdb || command -v gdb || true)
if [ -z "$GDB" ]; then echo "gpu-host-stacks: skipped: no cuda-gdb or gdb"; exit 0; fi
"$@" >"$OUT/program.txt" 2>&1 &
pid=$!
sleep "$DELAY"
: >"$OUT/stacks.txt"
for i in $(seq 1 "$SAMPLES"); do
  kill -0 "$pid" 2>/dev/null || break
  timeout 20 "$GDB" -p "$pid" -batch -ex 'thread apply all bt' >>"$OUT/stacks.txt" 2>/dev/null
  echo "=== end of sample $i" >>"$OUT/stacks.txt"
  sleep "$INTERVAL"
done
wait "$pid"
echo "gpu-host-stacks: $(grep -c '^Thread ' "$OUT/stacks.txt") thread stacks in $SAMPLES samples of: $*"
# each thread's innermost DEPTH function names, joined, counted
awk -v depth="$DEPTH" '
  /^Thread / { if (key != "") count[key]++; key = ""; n = 0; next }
  /^#[0-9]/ {
    if (n < depth) {
      fn = $0
      sub(/^#[0-9]+ +(0x[0-9a-f]+ in )?/, "", fn)
      sub(/ \(.*/, "", fn)
      key = key (n ? " < " : "") fn
      n++
    }
    next
  }
  END { if (key != "") count[key]++; for (k in count) printf "%5d  %s\n", count[k], k }
' "$OUT/stacks.txt" | sort -rn | head -40
