#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/coverage.sh: per-file line and branch coverage of core/ from gcov data.
#
# usage: coverage.sh --obj DIR --out DIR [--gcov GCOV] FILE.c ...
#   --obj DIR    where the objects of FILE.c are (DIR/FILE.o, with its .gcno and .gcda:
#                the suite built with --coverage and run once)
#   --out DIR    where the report goes: summary.txt (what is printed) and missing.txt
#                (every line never run and every branch never taken, file:line)
#   --gcov GCOV  gcov of the compiler that built the objects (gcov)
#
# Prints, for every source file with code (the .c files given, and the headers whose
# inline functions they compile), lines run / lines and branches taken / branches,
# then the same per folder and for the whole. Code from a header counts once however
# many files include it: a line is run, or a branch taken, if it is in any of them.
# A branch never taken in a statement marked by an "unreachable: <reason>" comment (on
# its first line or on the line right above it; the mark runs to the first line that
# ends in ; { or }; "unreachable(N):" runs over N statements) is counted apart
# ("marked"): the reason says why no test takes it.
# POSIX sh + awk + gcov (gcc 10 or newer: -t).
set -eu

gcov=gcov
obj=
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --gcov) gcov=$2; shift 2 ;;
    --obj) obj=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "$0: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "$obj" ] && [ -n "$out" ] || { echo "$0: --obj and --out are required" >&2; exit 2; }
[ $# -gt 0 ] || { echo "coverage: no source files" >&2; exit 2; }
command -v "$gcov" >/dev/null 2>&1 || { echo "coverage: $gcov not found (it comes with gcc)"; exit 1; }
mkdir -p "$out"

# Every file's annotated text (-t: to stdout), with branch counts (-b -c).
: >"$out/gcov.txt"
for f in "$@"; do
  o=$obj/${f%.c}.o
  [ -f "${o%.o}.gcno" ] || { echo "coverage: ${o%.o}.gcno missing (build with --coverage)"; exit 1; }
  if [ ! -f "${o%.o}.gcda" ]; then
    # A file compiled out by a configuration switch (race_off.c, say) holds no
    # function, so nothing ever writes its counts: skipped, said so.
    if ! nm --defined-only "$o" 2>/dev/null | grep -q ' [TtWw] '; then
      echo "coverage: $f: no code in this build (compiled out), not counted"
      continue
    fi
    echo "coverage: ${o%.o}.gcda missing: $f never ran (or the suite did not run)"
    exit 1
  fi
  "$gcov" -b -c -t -o "$(dirname "$o")" "$f" >>"$out/gcov.txt" 2>"$out/gcov.err" ||
    { cat "$out/gcov.err"; echo "coverage: $gcov failed on $f"; exit 1; }
done

awk -v missing="$out/missing.txt" '
  function folder(f) { sub(/\/[^\/]*$/, "", f); return f }
  # "   count:  line:text": the count is -, #####, =====, or a number (maybe with *).
  # (a count updated by racing threads without -fprofile-update=atomic can read negative)
  /^ *(-|#####|=====|-?[0-9]+\*?): *[0-9]+:/ {
    split($0, p, ":")
    cnt = p[1]; gsub(/ /, "", cnt)
    ln = p[2] + 0
    text = $0; sub(/^[^:]*:[^:]*:/, "", text)
    if (ln == 0) {
      if (text ~ /^Source:/) {
        file = substr(text, 8)
        ok = (file ~ /^core\//)
        open_marker = 0
        if (ok && !(file in seen)) { seen[file] = 1; files[++nfiles] = file }
      }
      next
    }
    if (!ok) next
    # A marker covers its own line through the end of the statement it sits on or
    # precedes: the first line whose code (comments left out) ends in ; { or }.
    # "unreachable(N):" covers the next N statements.
    if (text ~ /unreachable(\([0-9]+\))?:/) {
      open_marker = 1
      if (match(text, /unreachable\([0-9]+\):/)) open_marker = substr(text, RSTART + 12, RLENGTH - 14) + 0
    }
    if (open_marker > 0) {
      marker[file, ln] = 1
      code = text; gsub(/\/\*.*\*\//, "", code); sub(/\/\/.*/, "", code); sub(/[ \t]+$/, "", code)
      if (code ~ /[;{}]$/) open_marker--
    }
    line = ln
    if (cnt == "-") next
    key = file SUBSEP ln
    if (!(key in lexec)) { lexec[key] = 0; lcount[file]++ }
    if (cnt ~ /^-?[0-9]/ && cnt + 0 != 0 && !lexec[key]) { lexec[key] = 1; lrun[file]++ }
    next
  }
  /^branch +[0-9]+ / {
    if (!ok) next
    key = file SUBSEP line SUBSEP $2 # gcov numbers branches and calls of a line together
    if (!(key in btaken)) { btaken[key] = 0; bcount[file]++ }
    if ($3 == "taken" && $4 + 0 != 0 && !btaken[key]) { btaken[key] = 1; brun[file]++ }
    next
  }
  END {
    printf "" > missing
    for (k in lexec) if (!lexec[k]) { split(k, q, SUBSEP); printf "%s:%d: line never run\n", q[1], q[2] >> missing }
    for (k in btaken) if (!btaken[k]) {
      split(k, q, SUBSEP)
      m = ((q[1], q[2]) in marker)
      if (m) bmarked[q[1]]++
      printf "%s:%d: branch %d never taken%s\n", q[1], q[2], q[3], m ? " (marked unreachable)" : "" >> missing
    }
    # files in name order (a small insertion sort: awk has no sort)
    for (i = 2; i <= nfiles; i++) {
      v = files[i]
      for (j = i - 1; j >= 1 && files[j] > v; j--) files[j + 1] = files[j]
      files[j + 1] = v
    }
    printf "%-36s %17s %19s %7s\n", "file", "lines run", "branches taken", "marked"
    for (i = 1; i <= nfiles; i++) {
      f = files[i]
      if (lcount[f] + 0 == 0) continue
      d = folder(f)
      if (!(d in dl)) dirs[++ndirs] = d
      dl[d] += lcount[f]; dlr[d] += lrun[f]; db[d] += bcount[f]; dbr[d] += brun[f]; dbm[d] += bmarked[f]
      row(f, lrun[f], lcount[f], brun[f], bcount[f], bmarked[f])
    }
    print ""
    for (i = 1; i <= ndirs; i++) {
      d = dirs[i]
      row(d "/", dlr[d], dl[d], dbr[d], db[d], dbm[d])
      tl += dl[d]; tlr += dlr[d]; tb += db[d]; tbr += dbr[d]; tbm += dbm[d]
    }
    print ""
    row("total (core/)", tlr, tl, tbr, tb, tbm)
    if (tbm > 0)
      printf "branches taken or marked unreachable: %d/%d = %.1f%%\n", tbr + tbm, tb, pct(tbr + tbm, tb)
  }
  function pct(a, b) { return b ? 100.0 * a / b : 100.0 }
  function row(name, lr, l, br, b, bm) {
    printf "%-36s %5d/%-5d %5.1f%% %5d/%-5d %5.1f%% %7d\n", name, lr, l, pct(lr, l), br, b, pct(br, b), bm + 0
  }
' "$out/gcov.txt" >"$out/summary.txt"
sort -t: -k1,1 -k2,2n -o "$out/missing.txt" "$out/missing.txt"
cat "$out/summary.txt"
echo "coverage: never-run lines and never-taken branches listed in $out/missing.txt"
