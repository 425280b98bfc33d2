#!/bin/bash
set -u
make -j16 CUDA=1 build/cuda/bench/bench_cuda > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
for i in 1 2; do build/cuda/bench/bench_cuda --only-threads --runs 11 2>&1 | grep -E "8 threads" | cut -c1-200; done
OUT=$OUT/stacks SAMPLES=8 INTERVAL=0.4 DELAY=2 DEPTH=5 bash tools/gpu-host-stacks.sh build/cuda/bench/bench_cuda --only-threads --runs 40 2>&1 | head -60
