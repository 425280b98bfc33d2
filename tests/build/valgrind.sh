#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/valgrind.sh: memcheck over test suites (make valgrind).
#
#   valgrind.sh VALGRIND 'FLAGS' OUTDIR JOBS 'SUITES' [TESTS...]
#
# Runs OUTDIR/cubert-SUITE-test for each suite under valgrind, every test in its own forked
# process as usual (valgrind follows forks; test timeouts scaled by 30); each process logs to
# OUTDIR/SUITE.PID.log, and a process with a memcheck error or a block definitely lost exits
# 99 (a FAIL line of the runner). Prints the totals; any error or lost byte fails.
set -u
VALGRIND=$1 FLAGS=$2 OUT=$3 JOBS=$4 SUITES=$5
shift 5
command -v "$VALGRIND" >/dev/null || { echo "valgrind: $VALGRIND not found (Debian: apt-get install valgrind)"; exit 1; }
rm -f "$OUT"/*.log
status=0
for s in $SUITES; do
  echo "== valgrind memcheck: tests/$s"
  # shellcheck disable=SC2086
  CUBERT_TEST_TIMEOUT_SCALE=30 "$VALGRIND" $FLAGS --log-file="$OUT/$s.%p.log" \
    "$OUT/cubert-$s-test" -j "$JOBS" "$@" > "$OUT/$s.out" 2>&1 || status=1
  grep -E '^(FAIL|skip)' "$OUT/$s.out" || true
  tail -n 1 "$OUT/$s.out"
done
logs=$(ls "$OUT"/*.log | wc -l)
errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$OUT"/*.log | tr -d , | awk '{s += $1} END {print s + 0}')
lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$OUT"/*.log | tr -d , | awk '{s += $1} END {print s + 0}')
echo "valgrind: $errors errors, $lost bytes definitely lost ($logs processes: suites $SUITES)"
if [ "$status" != 0 ] || [ "$errors" != 0 ] || [ "$lost" != 0 ]; then
  grep -l -E 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]' "$OUT"/*.log | head -n 5 | xargs -r cat
  echo "valgrind: FAILED (logs in $OUT/)"
  exit 1
fi
