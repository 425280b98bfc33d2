#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_trace_tool.sh: the timeline trace end to end (docs/profiling.md):
# BUILD/examples/trace writes a trace, tools/trace-to-svg.py renders it (python3).
#
#   check_trace_tool.sh BUILD
set -u
B=$1
"$B/examples/trace" "$B/trace.json" >/dev/null || { echo "check-trace-tool: examples/trace failed"; exit 1; }
python3 tools/trace-to-svg.py "$B/trace.json" "$B/trace.svg" || { echo "check-trace-tool: trace-to-svg failed"; exit 1; }
grep -q '<svg' "$B/trace.svg" && grep -q 'ck_add_f32' "$B/trace.svg" && grep -q 'marker-end' "$B/trace.svg" ||
  { echo "check-trace-tool: $B/trace.svg lacks the kernels or the flows"; exit 1; }
echo "check-trace-tool: ok ($B/trace.json rendered to $B/trace.svg)"
