#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/core_size.sh: code size of the freestanding core, full and
# minimal (every switch of cubert/config.h off). Run by `make size`.
#
# usage: core_size.sh --out DIR --cc CC --size SIZE --cflags "FLAGS"
#                     --arm-cc CC --arm-size SIZE --arm-nm NM --arm-cflags "FLAGS"
#                     --minimal "DEFINES" FILE.c ...
#
# Each file is compiled alone (no link, no garbage collection of sections), so
# the figure is what a static library of the core holds: the sum of .text
# (code and read-only data, Berkeley format), .data and .bss over all objects.
# Rows: x86-64 at -O2 and -Os with CC, Cortex-M4 Thumb-2 at -Os with ARM_CC
# (skipped with a note when ARM_CC is missing). Then the largest symbols of
# the minimal Cortex-M4 core (what dominates).
set -eu

out= cc=cc size=size cflags= arm_cc=arm-none-eabi-gcc arm_size=arm-none-eabi-size
arm_nm=arm-none-eabi-nm arm_cflags= minimal=
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --cflags) cflags=$2; shift 2 ;;
    --arm-cc) arm_cc=$2; shift 2 ;;
    --arm-size) arm_size=$2; shift 2 ;;
    --arm-nm) arm_nm=$2; shift 2 ;;
    --arm-cflags) arm_cflags=$2; shift 2 ;;
    --minimal) minimal=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "$0: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "$out" ] && [ $# -gt 0 ] || { echo "usage: $0 --out DIR ... FILE.c ..." >&2; exit 2; }

# build DIR COMPILER "FLAGS" FILE...: one object per file under DIR.
build() {
  dir=$1 c=$2 f=$3
  shift 3
  rm -rf "$dir"
  mkdir -p "$dir"
  for src in "$@"; do
    # shellcheck disable=SC2086
    $c $f -c "$src" -o "$dir/$(echo "$src" | tr / _ | sed 's/\.c$//').o" ||
      { echo "size: $src does not compile with $c $f"; exit 1; }
  done
}

# total SIZE DIR: "text data bss" summed over DIR's objects.
total() {
  $1 -t "$2"/*.o | awk 'END { printf "%8d %6d %6d", $1, $2, $3 }'
}

row() { # label compiler size-tool "flags"
  label=$1 c=$2 s=$3 f=$4
  shift 4
  build "$out/full" "$c" "$f" "$@"
  build "$out/minimal" "$c" "$f $minimal" "$@"
  printf '%-34s %s   %s\n' "$label" "$(total "$s" "$out/full")" "$(total "$s" "$out/minimal")"
}

echo "core size in bytes, $# files compiled alone (text = code + read-only data)"
printf '%-34s %8s %6s %6s   %8s %6s %6s\n' "" "full" "" "" "minimal" "" ""
printf '%-34s %8s %6s %6s   %8s %6s %6s\n' "" "text" "data" "bss" "text" "data" "bss"
row "x86-64 $cc -O2" "$cc" "$size" "$cflags -O2" "$@"
row "x86-64 $cc -Os" "$cc" "$size" "$cflags -Os" "$@"
if command -v "$arm_cc" >/dev/null 2>&1; then
  row "Cortex-M4 $arm_cc -Os" "$arm_cc" "$arm_size" "$arm_cflags" "$@"
  echo "minimal: $minimal"
  echo "largest symbols of the minimal Cortex-M4 core (bytes, $arm_nm --size-sort):"
  $arm_nm --size-sort -S -t d "$out"/minimal/*.o 2>/dev/null | awk 'NF == 4 { print $2 + 0, $4 }' |
    sort -n | tail -n 12 | sort -rn | awk '{ printf "  %6d  %s\n", $1, $2 }'
  echo "by file (minimal Cortex-M4 text):"
  $arm_size "$out"/minimal/*.o | awk 'NR > 1 && $1 > 0 { n = $6; sub(".*/", "", n); printf "  %6d  %s\n", $1, n }' |
    sort -rn | head -n 12
else
  echo "Cortex-M4: $arm_cc not found (Debian: apt-get install gcc-arm-none-eabi)"
fi
