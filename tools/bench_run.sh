#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/bench_run.sh: runs each benchmark program in turn (make bench), its rows appended to
# CSV, then prints the combined table and writes the plot (tools/bench_report.py).
#
#   bench_run.sh CSV 'EXTRA_CSV' SVG 'ARGS' PROGRAM...
# EXTRA_CSV: more result files with the same columns to join the table and the plot (GPU rows,
# a run on another machine); ARGS are passed to each program.
set -eu
CSV=$1 EXTRA=$2 SVG=$3 ARGS=$4
shift 4
rm -f "$CSV"
for b in "$@"; do
  echo "== $b $ARGS"
  # shellcheck disable=SC2086
  CUBERT_BENCH_CSV=$CSV "$b" $ARGS
  echo
done
if command -v python3 >/dev/null; then
  # shellcheck disable=SC2086
  python3 tools/bench_report.py "$CSV" $EXTRA --svg "$SVG"
else
  echo "skipped: combined table and plot (python3 not found; Debian: python3)"
fi
