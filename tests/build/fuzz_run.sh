#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/fuzz_run.sh: the fuzz targets (make fuzz, make fuzz-replay; fuzz/README.md).
#
#   fuzz_run.sh replay BUILD 'WRAPPER' NAME...
#       every target BUILD/fuzz/fuzz_NAME fed its committed corpus fuzz/corpus/NAME (or the
#       empty input), under WRAPPER (the sanitizer builds' setarch -R)
#   fuzz_run.sh fuzz BUILD 'WRAPPER' SECONDS 'ARGS' NAME...
#       each libFuzzer target BUILD/libfuzzer/fuzz/fuzz_NAME for SECONDS; new inputs go to
#       BUILD/libfuzzer/corpus/NAME, crashes to BUILD/libfuzzer/artifacts/; fuzz/dict/NAME.dict
#       is used when present; ARGS are more libFuzzer flags
set -eu
mode=$1 BUILD=$2 WRAPPER=$3
shift 3
case $mode in
replay)
  n_targets=$#
  for n in "$@"; do
    # shellcheck disable=SC2086
    if [ -d "fuzz/corpus/$n" ]; then $WRAPPER "$BUILD/fuzz/fuzz_$n" "fuzz/corpus/$n"
    else $WRAPPER "$BUILD/fuzz/fuzz_$n"; fi
  done
  echo "fuzz-replay: ok ($n_targets targets)"
  ;;
fuzz)
  SECONDS_EACH=$1 ARGS=$2
  shift 2
  n_targets=$#
  L=$BUILD/libfuzzer
  for n in "$@"; do
    mkdir -p "$L/corpus/$n" "$L/artifacts"
    seeds=; [ -d "fuzz/corpus/$n" ] && seeds=fuzz/corpus/$n
    dict=; [ -f "fuzz/dict/$n.dict" ] && dict=-dict=fuzz/dict/$n.dict
    echo "== fuzz_$n for $SECONDS_EACH s"
    log=$L/fuzz_$n.log
    # shellcheck disable=SC2086
    if $WRAPPER "$L/fuzz/fuzz_$n" -max_total_time="$SECONDS_EACH" -timeout=25 -print_final_stats=1 \
      -artifact_prefix="$L/artifacts/$n-" $dict $ARGS "$L/corpus/$n" $seeds > "$log" 2>&1; then
      grep -E '^(Done|stat::average_exec_per_sec|stat::new_units_added)' "$log"
    else
      tail -n 80 "$log"
      echo "fuzz: fuzz_$n FAILED (log $log, inputs in $L/artifacts/)"
      exit 1
    fi
  done
  echo "fuzz: ok ($n_targets targets, $SECONDS_EACH s each)"
  ;;
*) echo "usage: fuzz_run.sh replay|fuzz ..."; exit 2 ;;
esac
