#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/bench_torch_graph.py: the PyTorch peer of bench/bench_cuda_record.c on the
same shape: 10 adds of 1024 float32 (torch.add(a, b, out=c)), launched eagerly and
replayed from a CUDA graph (torch.cuda.CUDAGraph). Figures, median [min..max] over
--runs runs (default 11), each run timing --reps sequences:

  eager, sustained, per kernel      R x 10 adds, then torch.cuda.synchronize()
  graph replay, sustained, per kernel   R x g.replay(), then synchronize
  eager 10 adds + sync              per sequence
  graph replay + sync               per sequence (the issue's 19.7 us anchor)

Compare with bench_cuda_record's rows ("10 adds replayed + sync", "... per kernel")
from the same machine. Without PyTorch or a GPU it prints one "skipped:" line and
exits 0. --csv FILE appends rows in bench/bench_util.h's columns (program
"bench_torch_graph", the torch figure in the cubert_* columns, no peer).

  python3 tools/bench_torch_graph.py [--runs R] [--reps N] [--csv FILE]
"""
import argparse
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description="PyTorch CUDA-graph peer: 10 adds of 1024 floats")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--csv", default=os.environ.get("CUBERT_BENCH_CSV", ""))
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("bench_torch_graph: skipped: PyTorch not importable (%s)" % e)
        return 0
    if not torch.cuda.is_available():
        print("bench_torch_graph: skipped: torch.cuda.is_available() is False")
        return 0
    kernels, n = 10, 1024
    dev = torch.device("cuda")
    a = torch.rand(n, device=dev, dtype=torch.float32)
    b = torch.rand(n, device=dev, dtype=torch.float32)
    c = torch.empty_like(a)

    def seq():
        for _ in range(kernels):
            torch.add(a, b, out=c)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as the docs ask before capture
        for _ in range(3):
            seq()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        seq()
    for _ in range(50):
        seq()
        g.replay()
    torch.cuda.synchronize()
    if not torch.equal(c, a + b):
        print("bench_torch_graph: a result did not check")
        return 1

    rts = max(1, args.reps // 4)
    fig = {"eager": [], "graph": [], "eager_rt": [], "graph_rt": []}
    for _ in range(args.runs):
        t0 = time.perf_counter_ns()
        for _ in range(args.reps):
            seq()
        torch.cuda.synchronize()
        fig["eager"].append((time.perf_counter_ns() - t0) / (args.reps * kernels))
        t0 = time.perf_counter_ns()
        for _ in range(args.reps):
            g.replay()
        torch.cuda.synchronize()
        fig["graph"].append((time.perf_counter_ns() - t0) / (args.reps * kernels))
        t0 = time.perf_counter_ns()
        for _ in range(rts):
            seq()
            torch.cuda.synchronize()
        fig["eager_rt"].append((time.perf_counter_ns() - t0) / rts)
        t0 = time.perf_counter_ns()
        for _ in range(rts):
            g.replay()
            torch.cuda.synchronize()
        fig["graph_rt"].append((time.perf_counter_ns() - t0) / rts)

    names = {
        "eager": "torch eager, sustained, per kernel",
        "graph": "torch CUDA graph replay, sustained, per kernel",
        "eager_rt": "torch eager 10 adds + sync",
        "graph_rt": "torch CUDA graph replay + sync",
    }
    print("bench_torch_graph: torch %s, %s, %d x %d-float adds, %d runs" %
          (torch.__version__, torch.cuda.get_device_name(0), kernels, n, args.runs))
    print("| %-52s | %-30s |" % ("figure", "median [min..max]"))
    print("|%s|%s|" % ("-" * 54, "-" * 32))
    rows = []
    for key, name in names.items():
        v = fig[key]
        med, lo, hi = statistics.median(v), min(v), max(v)
        print("| %-52s | %-30s |" % (name, "%.0f [%.0f..%.0f] ns" % (med, lo, hi)))
        rows.append((name, med, lo, hi))
    if args.csv:
        new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
        with open(args.csv, "a") as f:
            if new:
                f.write("program,section,figure,unit,better,cubert_median,cubert_min,cubert_max,runs,"
                        "peer,peer_median,peer_min,peer_max,ratio,goal,met,skipped,series,x\n")
            for name, med, lo, hi in rows:
                f.write('"bench_torch_graph","gpu record","%s","ns",lower,%.6g,%.6g,%.6g,%d,"",,,,,,,"","",\n'
                        % (name, med, lo, hi, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
