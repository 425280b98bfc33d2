#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_matrix.sh: the builds users try, each from clean in its own folder.
#
# usage: check_matrix.sh          (run by `make check-matrix`, from the repository root)
#
# Cells (each builds the library, the examples and the test program in its own
# BUILD folder under MATRIX_DIR, removed first so that nothing is reused):
#   gcc and clang, each at -O0 -g, -O2, -O3 -march=native and -Os; `make test` runs at
#   -O0 and -O3; -fno-common; -O0 -g --coverage; a fresh `make -j1` and `make -j8`; an out-of-tree BUILD
#   (a folder outside the source tree, make run from elsewhere with -C), which must
#   write nothing into the source tree; CFLAGS/LDFLAGS given on the command line,
#   which must add to the project's flags and never drop the ones it needs.
# Prints one line per cell, then "check-matrix: N cells ok"; a failed cell prints the
# end of its log (the whole log stays in MATRIX_DIR/CELL.log) and the others still run.
#
# Environment: MAKE (make), GCC (gcc), CLANG (clang), NM (nm), JOBS (CPUs), WERROR
# (passed to every cell: CI sets 1), MATRIX_DIR (build/matrix).
set -eu

MAKE=${MAKE:-make}
GCC=${GCC:-gcc}
CLANG=${CLANG:-clang}
NM=${NM:-nm}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
WERROR=${WERROR:-0}
MATRIX_DIR=${MATRIX_DIR:-build/matrix}

# A cell is a fresh `make` as a user types it: nothing from the make that runs this
# script (command-line variables, the jobserver) and none of the Makefile's variables
# from the environment.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES CFLAGS CPPFLAGS LDFLAGS VARIANT_FLAGS BUILD \
  TEST_WRAPPER TESTS CUDA CC CXX || true

src=$(pwd)
case "$MATRIX_DIR" in /*) ;; *) MATRIX_DIR=$src/$MATRIX_DIR ;; esac
mkdir -p "$MATRIX_DIR"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cubert-matrix.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

for c in "$GCC" "$CLANG"; do
  command -v "$c" >/dev/null 2>&1 ||
    { echo "check-matrix: $c not found (Debian: apt-get install gcc clang)"; exit 1; }
done

cells=0
failed=0
now() { date +%s; }

# cell_ok NAME DETAIL / cell_fail NAME LOG WHAT
cell_ok() {
  cells=$((cells + 1))
  printf 'check-matrix: %-28s ok   %s\n' "$1" "$2"
}
cell_fail() {
  cells=$((cells + 1))
  failed=$((failed + 1))
  printf 'check-matrix: %-28s FAILED: %s (log %s)\n' "$1" "$3" "$2"
  tail -n 25 "$2" | sed 's/^/    | /'
}

# build NAME LOG DIR MAKE-ARGS...: a fresh build of the library, examples and tests in DIR.
build() {
  name=$1 log=$2 dir=$3
  shift 3
  rm -rf "$dir"
  "$MAKE" WERROR="$WERROR" BUILD="$dir" "$@" all examples "$dir/cubert-test" >"$log" 2>&1
}

# run_test LOG DIR MAKE-ARGS...: `make test` in an already built DIR; checks the summary.
run_test() {
  log=$1 dir=$2
  shift 2
  "$MAKE" WERROR="$WERROR" BUILD="$dir" "$@" test >>"$log" 2>&1 || return 1
  summary=$(tail -n 1 "$log")
  case "$summary" in
    *" passed, 0 failed" | *" passed, 0 failed, "*" skipped") return 0 ;;
    *) return 1 ;;
  esac
}

# compiler_cell CCNAME CC OPTNAME "CFLAGS" TEST(0|1)
compiler_cell() {
  name="$1 $4"
  dir=$MATRIX_DIR/$1-$3
  log=$dir.log
  t0=$(now)
  if ! build "$name" "$log" "$dir" -j"$JOBS" CC="$2" CFLAGS="$4"; then
    cell_fail "$name" "$log" "build"
    return 0
  fi
  t1=$(now)
  detail="built in $((t1 - t0)) s"
  if [ "$5" = 1 ]; then
    if ! run_test "$log" "$dir" CC="$2" CFLAGS="$4"; then
      cell_fail "$name" "$log" "make test"
      return 0
    fi
    detail="$detail; make test: $(tail -n 1 "$log") in $(($(now) - t1)) s"
  fi
  cell_ok "$name" "$detail"
}

# ---- gcc and clang at four optimization levels ---------------------------------------
for cc in gcc clang; do
  if [ "$cc" = gcc ]; then ccbin=$GCC; else ccbin=$CLANG; fi
  compiler_cell "$cc" "$ccbin" O0 "-O0 -g" 1
  compiler_cell "$cc" "$ccbin" O2 "-O2" 0
  compiler_cell "$cc" "$ccbin" O3-native "-O3 -march=native" 1
  compiler_cell "$cc" "$ccbin" Os "-Os" 0
done

# ---- -fno-common: every object defined once ---------------------------------------------
compiler_cell gcc "$GCC" fno-common "-O2 -fno-common" 0

# ---- a debug build with --coverage in CFLAGS (the shared library links libgcov too) -----
compiler_cell gcc "$GCC" coverage "-O0 -g --coverage" 0

# ---- a fresh make -j1 and make -j8 with the default flags --------------------------------
for j in 1 8; do
  name="make -j$j (defaults)"
  dir=$MATRIX_DIR/j$j
  t0=$(now)
  if build "$name" "$dir.log" "$dir" -j"$j"; then
    cell_ok "$name" "built in $(($(now) - t0)) s"
  else
    cell_fail "$name" "$dir.log" "build"
  fi
done

# ---- out of tree: BUILD outside the source tree, make run from another folder ------------
name="out-of-tree BUILD"
log=$MATRIX_DIR/out-of-tree.log
dir=$tmp/out-of-tree
stamp=$tmp/stamp
: >"$stamp"
sleep 1 # mtimes after the stamp are strictly newer, even on coarse clocks
t0=$(now)
if (cd "$tmp" && "$MAKE" -C "$src" -j"$JOBS" WERROR="$WERROR" BUILD="$dir" \
  all examples "$dir/cubert-test") >"$log" 2>&1; then
  written=$(find "$src" -path "$src/.git" -prune -o -path "$MATRIX_DIR" -prune -o \
    -newer "$stamp" -print | head -n 5)
  if [ -n "$written" ]; then
    echo "files written into the source tree:" >>"$log"
    echo "$written" >>"$log"
    cell_fail "$name" "$log" "wrote into the source tree"
  elif [ ! -f "$dir/libcubert.a" ] || [ ! -x "$dir/cubert-test" ]; then
    cell_fail "$name" "$log" "no libcubert.a or cubert-test in $dir"
  else
    cell_ok "$name" "built in $(($(now) - t0)) s in ${TMPDIR:-/tmp}, nothing written into the tree"
  fi
else
  cell_fail "$name" "$log" "build"
fi
rm -rf "$dir"

# ---- the user's CFLAGS and LDFLAGS add to the project's flags, never drop them ------------
# The CFLAGS try to undo what the code needs (position-independent code for the shared
# library, hidden symbols, the C99 dialect): the project's flags must still win.
name="user CFLAGS/LDFLAGS"
dir=$MATRIX_DIR/user-flags
log=$dir.log
user_cflags="-O1 -fno-PIC -fvisibility=default -std=gnu11"
user_ldflags="-Wl,--as-needed"
t0=$(now)
if build "$name" "$log" "$dir" -j"$JOBS" V=1 CFLAGS="$user_cflags" LDFLAGS="$user_ldflags"; then
  # Every compile: the user's -O1, then the required flags after the user's (the last
  # -std, -f[no-]PIC and -fvisibility win); core/ also freestanding without libc headers.
  why=$(awk -v ld="$user_ldflags" '
    / -o / && / -MMD / {
      n++
      last_std = last_pic = last_vis = ""
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^-std=/) last_std = $i
        if ($i == "-fPIC" || $i == "-fno-PIC") last_pic = $i
        if ($i ~ /^-fvisibility=/) last_vis = $i
      }
      if ($0 !~ / -O1 /) { print "no -O1: " $0; bad = 1; exit }
      if (last_std != "-std=c99" || last_pic != "-fPIC" || last_vis != "-fvisibility=hidden") {
        print "required flag dropped: " $0; bad = 1; exit
      }
      if ($0 ~ / -c core\// && ($0 !~ / -ffreestanding / || $0 !~ / -nostdinc /)) {
        print "core file not freestanding: " $0; bad = 1; exit
      }
    }
    / -o / && !/ -c / && !/ -r / {  # (a relocatable -r link of the static library takes no LDFLAGS)
      links++
      if (index($0, " " ld " ") == 0) { print "link without the user LDFLAGS: " $0; bad = 1; exit }
    }
    END { if (!bad && (n == 0 || links == 0)) print "no compile or link command in the log" }' "$log")
  so=$(ls "$dir"/libcubert.so.*.*.* 2>/dev/null | head -n 1)
  bad=
  if [ -n "$so" ]; then
    bad=$("$NM" -D --defined-only "$so" | awk 'NF >= 3 && $3 !~ /^cubert_/ {print $3}' | head -n 3)
  fi
  if [ -n "$why" ]; then
    echo "$why" >>"$log"
    cell_fail "$name" "$log" "$(echo "$why" | cut -c1-60)..."
  elif [ -z "$so" ]; then
    cell_fail "$name" "$log" "no libcubert.so built"
  elif [ -n "$bad" ]; then
    cell_fail "$name" "$log" "libcubert.so exports non-cubert_ symbols: $(echo $bad)"
  else
    cell_ok "$name" "built in $(($(now) - t0)) s; CFLAGS=\"$user_cflags\" added, required flags kept; LDFLAGS=$user_ldflags on every link"
  fi
else
  cell_fail "$name" "$log" "build"
fi

if [ "$failed" -gt 0 ]; then
  echo "check-matrix: $failed of $cells cells FAILED (logs in $MATRIX_DIR)"
  exit 1
fi
echo "check-matrix: $cells cells ok"
