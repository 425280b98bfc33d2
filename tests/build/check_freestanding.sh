#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_freestanding.sh: proves core/ is freestanding.
#
# usage: check_freestanding.sh [options] FILE.c ...   (core/**/*.c and other freestanding code)
#   --label NAME        name printed in messages (check-freestanding, check-cortex-m)
#   --cc CC             compiler used to build the objects
#   --nm NM             nm for that compiler's objects
#   --cflags "FLAGS"    flags for compiling each file (word-split)
#   --out DIR           where the objects go
#   --allow-undef RE    extended regex (whole symbol) of undefined symbols that
#                       are allowed: memcpy/memset/memmove and compiler-runtime helpers
#   --allow-desc TEXT   how the allowlist is described in the closing line
#   --allow-state LIST  space-separated file stems (device_registry) allowed to
#                       hold mutable static data; every other core file must not
#   --sources           also scan the sources (the given .c files, the .h files
#                       beside them, and the public headers other than host.h)
#                       for forbidden includes and calls
#
# Fails with file:line for every finding. POSIX sh + awk + nm only.
set -eu

label=check-freestanding
cc=cc
nm=nm
cflags=
out=
allow_undef='memcpy|memset|memmove'
allow_desc=
allow_state=
sources=0
while [ $# -gt 0 ]; do
  case "$1" in
    --label) label=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    --nm) nm=$2; shift 2 ;;
    --cflags) cflags=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --allow-undef) allow_undef=$2; shift 2 ;;
    --allow-desc) allow_desc=$2; shift 2 ;;
    --allow-state) allow_state=$2; shift 2 ;;
    --sources) sources=1; shift ;;
    --) shift; break ;;
    -*) echo "$0: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "$out" ] || { echo "$0: --out is required" >&2; exit 2; }
[ $# -gt 0 ] || { echo "$label: no source files" >&2; exit 2; }
mkdir -p "$out"
fail=0

# ---- 1. source scan -----------------------------------------------------------
if [ "$sources" = 1 ]; then
  scan=
  dirs=$(for f in "$@"; do dirname "$f"; done | sort -u)
  # shellcheck disable=SC2086
  for f in "$@" $(for d in $dirs; do ls "$d"/*.h 2>/dev/null; done) include/cubert/*.h include/cubert/driver/*.h; do
    [ -f "$f" ] || continue
    [ "$f" = include/cubert/os.h ] && continue
    scan="$scan $f"
  done
  # The awk program blanks comments and the contents of string/char literals
  # (keeping line numbers), then reports forbidden includes and calls.
  # shellcheck disable=SC2086
  findings=$(awk '
    BEGIN {
      calls = "malloc|calloc|realloc|free|aligned_alloc|posix_memalign|memalign|valloc|" \
        "printf|fprintf|sprintf|snprintf|vprintf|vfprintf|vsprintf|vsnprintf|puts|fputs|putchar|fputc|perror|" \
        "fopen|fclose|fread|fwrite|fflush|abort|exit|_Exit|quick_exit|atexit|getenv|secure_getenv|setenv|" \
        "assert|strlen|strcpy|strncpy|strcat|strncat|strcmp|strncmp|strdup|strndup|strerror|strtol|strtoul|" \
        "memcpy|memset|memmove|memcmp|memchr|qsort|bsearch|rand|srand|time|clock|clock_gettime|gettimeofday|" \
        "sleep|usleep|nanosleep|setjmp|longjmp|signal|raise|system|dlopen|dlsym|dlclose|" \
        "pthread_[A-Za-z_]+|sem_[a-z_]+|atomic_[a-z_]+|thrd_[a-z_]+|mtx_[a-z_]+"
      callre = "(^|[^A-Za-z0-9_.>])(" calls ")[ \t]*\\("
      incre = "^[ \t]*#[ \t]*include[ \t]*<"
      allowed["stddef.h"] = 1; allowed["stdint.h"] = 1; allowed["stdbool.h"] = 1; allowed["stdarg.h"] = 1
      incomment = 0
    }
    FNR == 1 { incomment = 0 }
    {
      line = $0; outl = ""; i = 1; n = length(line); instr = ""
      while (i <= n) {
        c = substr(line, i, 1); c2 = substr(line, i, 2)
        if (incomment) {
          if (c2 == "*/") { incomment = 0; outl = outl "  "; i += 2 } else { outl = outl " "; i++ }
        } else if (instr != "") {
          if (c == "\\") { outl = outl "  "; i += 2 }
          else if (c == instr) { outl = outl c; instr = ""; i++ }
          else { outl = outl " "; i++ }
        } else if (c2 == "/*") { incomment = 1; outl = outl "  "; i += 2 }
        else if (c2 == "//") { break }
        else if (c == "\"" || c == "\047") {
          # keep the <...> / "..." of an #include visible
          if (outl ~ /^[ \t]*#[ \t]*include[ \t]*$/) { outl = outl substr(line, i); break }
          instr = c; outl = outl c; i++
        } else { outl = outl c; i++ }
      }
      if (outl ~ incre) {
        h = outl; sub(/^[^<]*</, "", h); sub(/>.*$/, "", h)
        if (!(h in allowed))
          printf "%s:%d: includes <%s> (core allows only <stddef.h> <stdint.h> <stdbool.h> <stdarg.h>)\n", FILENAME, FNR, h
      } else if (outl ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
        h = outl; sub(/^[^"]*"/, "", h); sub(/".*$/, "", h)
        if (h == "cubert/os.h" || h ~ /\.\./ || h ~ /^driver-/)
          printf "%s:%d: includes \"%s\" (hosted code is not reachable from core/)\n", FILENAME, FNR, h
      }
      rest = outl
      while (match(rest, callre)) {
        m = substr(rest, RSTART, RLENGTH)
        sub(/^[^A-Za-z_]/, "", m); sub(/[ \t]*\($/, "", m)
        printf "%s:%d: calls %s() (core/ calls no libc or OS function)\n", FILENAME, FNR, m
        rest = substr(rest, RSTART + RLENGTH)
      }
      if (outl ~ /(^|[^A-Za-z0-9_])(errno|_Thread_local|__thread|_Atomic)([^A-Za-z0-9_]|$)/)
        printf "%s:%d: uses errno/_Thread_local/__thread/_Atomic (not allowed in core/)\n", FILENAME, FNR
    }' $scan)
  if [ -n "$findings" ]; then
    printf '%s\n' "$findings" | sed "s/^/$label: /"
    fail=1
  fi
fi

# ---- 2. compile every file and check its symbols --------------------------------
objs=
for f in "$@"; do
  # one object per source path (core/base/x.c -> core_base_x.o): stems may repeat across folders
  o="$out/$(printf '%s' "${f%.c}" | tr '/' '_').o"
  # shellcheck disable=SC2086
  if ! $cc $cflags -c "$f" -o "$o"; then
    echo "$label: $f does not compile freestanding"
    fail=1
    continue
  fi
  objs="$objs $o"
done

if [ -n "$objs" ]; then
  # Symbols defined anywhere in core/ may be referenced across files.
  # shellcheck disable=SC2086
  $nm --defined-only $objs | awk 'NF==3 {print $3}' | sort -u > "$out/defined.txt"
  for o in $objs; do
    src=
    for f in "$@"; do
      [ "$out/$(printf '%s' "${f%.c}" | tr '/' '_').o" = "$o" ] && src=$f
    done
    for sym in $($nm -u "$o" | awk 'NF==2 {print $2}' | sort -u); do
      if grep -qxF "$sym" "$out/defined.txt"; then continue; fi
      if printf '%s\n' "$sym" | grep -qxE "$allow_undef"; then continue; fi
      where=$(grep -nE -- "(^|[^A-Za-z0-9_.>])$sym[[:space:]]*\\(" "$src" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
      [ -n "$where" ] || where=$(grep -nw -- "$sym" "$src" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
      if [ -n "$where" ]; then
        echo "$label: $src:$where: references $sym, outside the allowlist"
      else
        echo "$label: $src: references $sym (emitted by the compiler), outside the allowlist"
      fi
      fail=1
    done
    # Mutable static data: .data/.bss/common symbols (b B d D c C g G s S).
    stem=$(basename "$src" .c)
    case " $allow_state " in *" $stem "*) continue ;; esac
    for sym in $($nm "$o" | awk 'NF==3 && $2 ~ /^[bBdDcCgGsS]$/ {print $3}' | sort -u); do
      base=${sym%%.*}
      where=$(grep -nw -- "$base" "$src" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
      echo "$label: $src:${where:-?}: mutable static data '$sym' (core/ has no global mutable state except {$allow_state})"
      fail=1
    done
  done
fi

if [ "$fail" != 0 ]; then
  exit 1
fi
n=$#
echo "$label: ok ($n files; undefined symbols within {${allow_desc:-$allow_undef}}; mutable state only in {$allow_state})"
