#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/test_install.sh: `make install` / `make uninstall` into a
# temporary DESTDIR, checked end to end. Run by `make check-install` (which
# builds the library first); uses the same BUILD, CC and MAKE.
#
#  1. install with PREFIX=/usr; every public header, libcubert.a, the
#     libcubert.so -> libcubert.so.MAJOR -> libcubert.so.VERSION chain,
#     the soname (readelf) and cubert.pc (prefix, version) are checked, and in
#     a CUDA=1 build libcubert-fakecuda.so and its exports;
#  2. the installed headers are exactly include/cubert/ and include/cubert/driver/ (none
#     includes a header that is not installed); the shared library exports only cubert_*
#     symbols, each declared in an installed header, none internal (cubert__);
#  3. a consumer program is built against the installed tree through
#     pkg-config, once linked statically with libcubert.a and once with
#     libcubert.so, and both are run;
#  3b. two out-of-tree projects build and run a kernel (tests/build/consumer/
#     kernel_consumer.c: ck_add_f32 of <cubert/cubert_kernels.h> over 1,000,003
#     floats) against the installed tree: tests/build/consumer-pkgconfig (make +
#     pkg-config) and tests/build/consumer-cmake (find_package(cubert CONFIG),
#     cubert::cubert and cubert::cubert_static), each shared and static;
#  4. install runs a second time over the first (idempotent);
#  5. uninstall leaves no cubert file behind.
set -eu

CC=${CC:-cc}
MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
NM=${NM:-nm}
READELF=${READELF:-readelf}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}

fail() {
  echo "check-install: FAIL: $*" >&2
  exit 1
}

command -v "$PKG_CONFIG" >/dev/null 2>&1 ||
  fail "$PKG_CONFIG not found (Debian: apt-get install pkg-config)"
CMAKE=${CMAKE:-cmake}
command -v "$CMAKE" >/dev/null 2>&1 || fail "$CMAKE not found (Debian: apt-get install cmake)"

ver() { sed -n "s/^#define CUBERT_VERSION_$1 \\([0-9]*\\).*/\\1/p" include/cubert/base.h; }
MAJOR=$(ver MAJOR)
VERSION=$MAJOR.$(ver MINOR).$(ver PATCH)
[ -n "$MAJOR" ] || fail "cannot read the version from include/cubert/base.h"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cubert-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
dest=$tmp/root
lib=$dest/usr/lib
inc=$dest/usr/include

# ---- 1. install --------------------------------------------------------------
$MAKE --no-print-directory -s BUILD="$BUILD" CC="$CC" install DESTDIR="$dest" PREFIX=/usr \
  >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "make install"; }

for h in include/cubert/*.h include/cubert/driver/*.h; do
  cmp -s "$h" "$inc/${h#include/}" || fail "header $h not installed (or differs)"
done
# The installed headers are the API and nothing else: exactly include/cubert/ (the user API),
# include/cubert/driver/ (the driver interface) and the kernel library header; none of them includes a header that is
# not installed (the core's internal headers, the OS layer's, a driver's).
find "$inc/cubert" -type f | sed "s|^$inc/||" | sort >"$tmp/installed-headers.txt"
{ (cd include && ls cubert/*.h cubert/driver/*.h); echo cubert/cubert_kernels.h; } | sort >"$tmp/api-headers.txt"
cmp -s "$tmp/installed-headers.txt" "$tmp/api-headers.txt" ||
  fail "installed headers differ from include/cubert/{,driver/}: $(comm -3 "$tmp/installed-headers.txt" "$tmp/api-headers.txt" | tr -d '\t' | tr '\n' ' ')"
leak=$(grep -rhoE '#[[:space:]]*include[[:space:]]*"[^"]+"' "$inc/cubert" | sed 's/.*"\(.*\)"/\1/' | sort -u |
  while read -r h; do [ -f "$inc/$h" ] || echo "$h"; done)
[ -z "$leak" ] || fail "installed headers include headers that are not installed: $(echo $leak)"
[ -f "$lib/libcubert.a" ] || fail "libcubert.a not installed"
[ -f "$lib/libcubert.so.$VERSION" ] && [ ! -L "$lib/libcubert.so.$VERSION" ] ||
  fail "libcubert.so.$VERSION is not a regular file"
[ "$(readlink "$lib/libcubert.so.$MAJOR")" = "libcubert.so.$VERSION" ] ||
  fail "libcubert.so.$MAJOR does not point to libcubert.so.$VERSION"
[ "$(readlink "$lib/libcubert.so")" = "libcubert.so.$MAJOR" ] ||
  fail "libcubert.so does not point to libcubert.so.$MAJOR"
soname=$($READELF -d "$lib/libcubert.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = "libcubert.so.$MAJOR" ] || fail "soname is '$soname', want libcubert.so.$MAJOR"
pc=$lib/pkgconfig/cubert.pc
[ -f "$pc" ] || fail "cubert.pc not installed"
grep -qx 'prefix=/usr' "$pc" || fail "cubert.pc: prefix is not /usr: $(grep '^prefix=' "$pc")"
grep -qx "Version: $VERSION" "$pc" || fail "cubert.pc: version is not $VERSION"
if grep -n '@[A-Z_]*@' "$pc"; then fail "cubert.pc has unsubstituted @VARS@"; fi
grep -qxE 'Libs.private: -lpthread( -ldl)?' "$pc" || fail "cubert.pc: Libs.private is not -lpthread (-ldl in a CUDA=1 build): $(grep '^Libs.private' "$pc")"
cmp -s examples/kernels/cubert_kernels.h "$inc/cubert/cubert_kernels.h" || fail "cubert_kernels.h not installed"
[ -x "$dest/usr/bin/cubert-info" ] || fail "cubert-info not installed in bindir"
"$dest/usr/bin/cubert-info" | grep -q '^Device ' || fail "the installed cubert-info lists no device"
for f in cubertConfig.cmake cubertConfigVersion.cmake; do
  [ -f "$lib/cmake/cubert/$f" ] || fail "$f not installed in $lib/cmake/cubert"
  if grep -n '@[A-Z_]*@' "$lib/cmake/cubert/$f"; then fail "$f has unsubstituted @VARS@"; fi
done

# A CUDA=1 build installs the fake libcuda too (docs/cuda.md): exporting the driver's entry
# points and cubert_fake_cuda_* only.
if [ -f "$BUILD/libcubert-fakecuda.so" ]; then
  [ -f "$lib/libcubert-fakecuda.so" ] || fail "libcubert-fakecuda.so not installed (a CUDA=1 build)"
  bad=$($NM -D --defined-only "$lib/libcubert-fakecuda.so" |
    awk 'NF >= 3 && $3 !~ /^(cu[A-Z]|cubert_fake_cuda_)/ {print $3}')
  [ -z "$bad" ] || fail "libcubert-fakecuda.so exports: $(echo $bad)"
fi

# ---- 2. exported symbols ----------------------------------------------------------
$NM -D --defined-only "$lib/libcubert.so.$VERSION" >"$tmp/exports.txt"
bad=$(awk 'NF >= 3 && $3 !~ /^cubert_/ {print $3}' "$tmp/exports.txt")
[ -z "$bad" ] || fail "libcubert.so exports non-cubert_ symbols: $(echo $bad)"
# ... and each is declared (CUBERT_API) in an installed header; none is internal (cubert__).
internal=$(awk 'NF >= 3 && $3 ~ /^cubert__/ {print $3}' "$tmp/exports.txt")
[ -z "$internal" ] || fail "libcubert.so exports internal (cubert__) symbols: $(echo $internal)"
undeclared=$(awk 'NF >= 3 {print $3}' "$tmp/exports.txt" | while read -r sym; do
  grep -rqwE -- "$sym" "$inc/cubert" || echo "$sym"; done)
[ -z "$undeclared" ] || fail "libcubert.so exports symbols no installed header declares: $(echo $undeclared)"
nexports=$(awk 'NF >= 3' "$tmp/exports.txt" | wc -l)
[ "$nexports" -gt 0 ] || fail "libcubert.so exports nothing"

# ---- 3. a consumer through pkg-config -----------------------------------------------
cat >"$tmp/consumer.c" <<'EOF'
/* A program outside the tree: only the installed headers and library. */
#include <stdio.h>
#include <string.h>
#include <cubert/cubert.h>
#include <cubert/os.h>
#include <cubert/driver/arith.h>

int main(void) {
  size_t n = 0;
  void *p = NULL;
  cubert_allocator_t a = cubert_allocator_libc();
  cubert_error_t e;
  if (cubert_size_mul(6, 7, &n) != CUBERT_STATUS_OK || n != 42) return 1;
  if (cubert_size_mul(SIZE_MAX, 2, &n) != CUBERT_STATUS_OVERFLOW) return 2;
  if (cubert_allocator_malloc(a, 64, 0, &p, &e) != CUBERT_STATUS_OK || !p) return 3;
  cubert_allocator_free(a, p, 64, 0);
  if (strcmp(cubert_status_name(CUBERT_STATUS_OK), "") == 0) return 4;
  if (strcmp(cubert_version(), CUBERT_VERSION_STRING) != 0) return 5;
  if (cubert_version_number() != CUBERT_VERSION_NUMBER) return 6;
  printf("consumer: cubert %s ok (%s)\n", cubert_version(),
         cubert_status_name(CUBERT_STATUS_OVERFLOW));
  return 0;
}
EOF
# Point pkg-config at the staged tree only; keep /usr/include and /usr/lib in
# its output (they are under the sysroot here, not the system's).
PKG_CONFIG_LIBDIR=$lib/pkgconfig
PKG_CONFIG_PATH=
PKG_CONFIG_SYSROOT_DIR=$dest
PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1
PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_ALLOW_SYSTEM_CFLAGS \
  PKG_CONFIG_ALLOW_SYSTEM_LIBS
[ "$($PKG_CONFIG --modversion cubert)" = "$VERSION" ] || fail "pkg-config --modversion cubert"
cflags=$($PKG_CONFIG --cflags cubert)
libs=$($PKG_CONFIG --libs cubert)
case " $cflags " in *" -I$inc "*) ;; *) fail "pkg-config --cflags gives '$cflags', want -I$inc" ;; esac
case " $libs " in *" -L$lib "*) ;; *) fail "pkg-config --libs gives '$libs', want -L$lib" ;; esac

# Shared: resolved at run time through LD_LIBRARY_PATH to the staged soname.
# shellcheck disable=SC2086
$CC -std=c99 -Wall -Werror $cflags "$tmp/consumer.c" -o "$tmp/consumer_shared" $libs ||
  fail "consumer does not build against libcubert.so"
$READELF -d "$tmp/consumer_shared" | grep -q "NEEDED.*\[libcubert.so.$MAJOR\]" ||
  fail "consumer_shared does not need libcubert.so.$MAJOR"
LD_LIBRARY_PATH=$lib "$tmp/consumer_shared" || fail "consumer_shared does not run"

# Static: libcubert.a plus the private libraries from `pkg-config --static`.
static_libs=$($PKG_CONFIG --static --libs cubert | sed 's/-lcubert/-Wl,-Bstatic -lcubert -Wl,-Bdynamic/')
# shellcheck disable=SC2086
$CC -std=c99 -Wall -Werror $cflags "$tmp/consumer.c" -o "$tmp/consumer_static" $static_libs ||
  fail "consumer does not build against libcubert.a"
if $READELF -d "$tmp/consumer_static" | grep -q 'NEEDED.*libcubert'; then
  fail "consumer_static still needs libcubert.so"
fi
env -u LD_LIBRARY_PATH "$tmp/consumer_static" || fail "consumer_static does not run"

# ---- 3b. out-of-tree projects: pkg-config and CMake, shared and static ---------------------
needs_no_so() { if $READELF -d "$1" | grep -q 'NEEDED.*libcubert'; then fail "$1 still needs libcubert.so"; fi; }
mkdir -p "$tmp/pc" "$tmp/cmake"
$MAKE --no-print-directory -C tests/build/consumer-pkgconfig CC="$CC" OUT="$tmp/pc" >"$tmp/pc.log" 2>&1 ||
  { cat "$tmp/pc.log"; fail "the pkg-config project (tests/build/consumer-pkgconfig) does not build"; }
LD_LIBRARY_PATH=$lib "$tmp/pc/consumer_shared" >"$tmp/run.log" || fail "pkg-config consumer_shared failed"
needs_no_so "$tmp/pc/consumer_static"
env -u LD_LIBRARY_PATH "$tmp/pc/consumer_static" >>"$tmp/run.log" || fail "pkg-config consumer_static failed"
"$CMAKE" -S tests/build/consumer-cmake -B "$tmp/cmake" -DCMAKE_C_COMPILER="$CC" \
  -DCMAKE_PREFIX_PATH="$dest/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$tmp/cmake.log" 2>&1 &&
  "$CMAKE" --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "the CMake project (tests/build/consumer-cmake) does not build"; }
grep -q "cubert $VERSION: $lib/cmake/cubert" "$tmp/cmake.log" || { cat "$tmp/cmake.log"; fail "CMake found another cubert"; }
"$tmp/cmake/consumer_shared" >>"$tmp/run.log" || fail "CMake consumer_shared (cubert::cubert) failed"
$READELF -d "$tmp/cmake/consumer_shared" | grep -q "NEEDED.*\[libcubert.so.$MAJOR\]" ||
  fail "CMake consumer_shared does not need libcubert.so.$MAJOR"
needs_no_so "$tmp/cmake/consumer_static"
env -u LD_LIBRARY_PATH "$tmp/cmake/consumer_static" >>"$tmp/run.log" || fail "CMake consumer_static failed"
[ "$(grep -c '^kernel consumer: ok' "$tmp/run.log")" = 4 ] || { cat "$tmp/run.log"; fail "a consumer did not print ok"; }

# ---- 4. install again over the first ----------------------------------------------------
$MAKE --no-print-directory -s BUILD="$BUILD" CC="$CC" install DESTDIR="$dest" PREFIX=/usr \
  >"$tmp/install2.log" 2>&1 || { cat "$tmp/install2.log"; fail "second make install"; }

# ---- 5. uninstall -------------------------------------------------------------------------
$MAKE --no-print-directory -s BUILD="$BUILD" CC="$CC" uninstall DESTDIR="$dest" PREFIX=/usr \
  >"$tmp/uninstall.log" 2>&1 || { cat "$tmp/uninstall.log"; fail "make uninstall"; }
left=$(find "$dest" \( -type f -o -type l \) | grep -i cubert || true)
[ -z "$left" ] || fail "uninstall left: $left"
[ ! -e "$inc/cubert" ] || fail "uninstall left $inc/cubert"

echo "check-install: ok (PREFIX=/usr: $(ls include/cubert/*.h include/cubert/driver/*.h | wc -l) headers, libcubert.a," \
  "libcubert.so.$VERSION soname libcubert.so.$MAJOR, $nexports cubert_ exports, cubert.pc;" \
  "pkg-config consumer static+shared ran; out-of-tree kernel projects, pkg-config and CMake" \
  "(cubert::cubert, cubert::cubert_static), shared and static, ran; uninstall clean)"
