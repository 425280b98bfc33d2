#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/core_size.sh: code size of the freestanding core, full and
# minimal (every switch of cubert/config.h off). Run by `make size`.
#
# usage: core_size.sh --out DIR --cc CC --size SIZE --cflags "FLAGS"
#                     --arm-cc CC --arm-size SIZE --arm-nm NM --arm-cflags "FLAGS"
#                     --minimal "DEFINES" [--driver "FILE.c ..."]
#                     [--demo FILE.c --demo-cflags "FLAGS" --startup FILE.c --ld FILE.ld]
#                     FILE.c ...
#
# 1. Objects summed: each file compiled alone (no link, no garbage collection
#    of sections), so the figure is what a static library holds: the sum of
#    text (code and read-only data, Berkeley format: flash), data and bss
#    (static RAM) over all objects. Rows: x86-64 at -O2 and -Os with CC,
#    Cortex-M4 Thumb-2 at -Os with ARM_CC; the core alone, then the core with
#    the --driver files (the inline driver and the CPU kernel runner).
# 2. Linked (Cortex-M4, --demo given): the demo firmware linked with
#    --gc-sections against the core and driver objects, full and minimal; from
#    the link map, the flash (.text + .rodata) and RAM (.data + .bss) that the
#    core and the driver files bring into it: what a firmware using that part
#    of the API pays.
# 3. What dominates the minimal Cortex-M4 core: its largest symbols and files.
# Rows for Cortex-M4 are skipped with a note when ARM_CC is missing.
set -eu

out= cc=cc size=size cflags= arm_cc=arm-none-eabi-gcc arm_size=arm-none-eabi-size
arm_nm=arm-none-eabi-nm arm_cflags= minimal= driver= demo= demo_cflags= startup= ld=
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
    --driver) driver=$2; shift 2 ;;
    --demo) demo=$2; shift 2 ;;
    --demo-cflags) demo_cflags=$2; shift 2 ;;
    --startup) startup=$2; shift 2 ;;
    --ld) ld=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "$0: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "$out" ] && [ $# -gt 0 ] || { echo "usage: $0 --out DIR ... FILE.c ..." >&2; exit 2; }

# objname FILE.c: the object's name (the path with / as _).
objname() { echo "$1" | tr / _ | sed 's/\.c$/.o/'; }

# build DIR COMPILER "FLAGS" FILE...: one object per file under DIR.
build() {
  dir=$1 c=$2 f=$3
  shift 3
  rm -rf "$dir"
  mkdir -p "$dir"
  for src in "$@"; do
    # shellcheck disable=SC2086
    $c $f -c "$src" -o "$dir/$(objname "$src")" ||
      { echo "size: $src does not compile with $c $f"; exit 1; }
  done
}

# total SIZE DIR [FILE.c ...]: "text data bss" summed over DIR's objects (or those of the files).
total() {
  s=$1 d=$2
  shift 2
  if [ $# -eq 0 ]; then
    $s -t "$d"/*.o | awk 'END { printf "%8d %6d %6d", $1, $2, $3 }'
  else
    objs=
    for src in "$@"; do objs="$objs $d/$(objname "$src")"; done
    # shellcheck disable=SC2086
    $s -t $objs | awk 'END { printf "%8d %6d %6d", $1, $2, $3 }'
  fi
}

row() { # label compiler size-tool "flags" FILE...
  label=$1 c=$2 s=$3 f=$4
  shift 4
  # shellcheck disable=SC2086
  build "$out/full" "$c" "$f" "$@" $driver
  # shellcheck disable=SC2086
  build "$out/minimal" "$c" "$f $minimal" "$@" $driver
  printf '%-34s %s   %s\n' "$label" "$(total "$s" "$out/full" "$@")" "$(total "$s" "$out/minimal" "$@")"
  if [ -n "$driver" ]; then
    printf '%-34s %s   %s\n' "  + inline driver, kernel runner" "$(total "$s" "$out/full")" \
      "$(total "$s" "$out/minimal")"
  fi
}

# mapsum MAP: "core_flash core_ram driver_flash driver_ram total_flash" from a link map: the
# input sections each object of the archive libcubert.a brought in (driver: the --driver files).
mapsum() {
  drv_re=$(for f in $driver; do printf '%s|' "$(objname "$f")"; done | sed 's/|$//')
  awk -v drv="${drv_re:-none}" '
    function hex(v,   i, n) {
      v = tolower(substr(v, 3)); n = 0
      for (i = 1; i <= length(v); i++) n = n * 16 + index("0123456789abcdef", substr(v, i, 1)) - 1
      return n
    }
    function take(sec, size, file,   ram) {
      if (file !~ /libcubert\.a\(/) return
      ram = (sec ~ /^\.(data|bss)/)
      if (file ~ "\\((" drv ")\\)") { if (ram) dr += size; else df += size }
      else { if (ram) cr += size; else cf += size }
    }
    /^Linker script and memory map/ { on = 1; next }
    !on { next }
    /^ \.(text|rodata|data|bss)/ {
      if (NF == 1) { sec = $1; pending = 1; next }
      if (NF >= 4 && $3 ~ /^0x/) take($1, hex($3), $4)
      pending = 0; next
    }
    pending && NF >= 3 && $1 ~ /^0x/ { take(sec, hex($2), $3); pending = 0; next }
    { pending = 0 }
    END { printf "%d %d %d %d", cf, cr, df, dr }' "$1"
}

# link_demo DIR "DEFINES": the demo linked against DIR's objects; prints the mapsum.
link_demo() {
  dir=$1 defs=$2
  rm -f "$dir/libcubert.a"
  "${arm_cc%-gcc}-ar" rcs "$dir/libcubert.a" "$dir"/*.o
  # shellcheck disable=SC2086
  $arm_cc $demo_cflags $defs -DCUBERT_DEMO_BARE_METAL=1 -c "$demo" -o "$dir/../demo.o"
  # shellcheck disable=SC2086
  $arm_cc $demo_cflags -DEMBEDDED_NEWLIB=0 -c "$startup" -o "$dir/../startup.o"
  # shellcheck disable=SC2086
  $arm_cc $demo_cflags -nostartfiles -T "$ld" -Wl,--gc-sections -Wl,-Map,"$dir/../demo.map" \
    -o "$dir/../demo.elf" "$dir/../demo.o" "$dir/../startup.o" "$dir/libcubert.a" -lc -lgcc
  mapsum "$dir/../demo.map"
}

echo "core size in bytes, $# core files and $(echo $driver | wc -w) driver files compiled alone"
echo "(text = code + read-only data: flash; data + bss: static RAM)"
printf '%-34s %8s %6s %6s   %8s %6s %6s\n' "" "full" "" "" "minimal" "" ""
printf '%-34s %8s %6s %6s   %8s %6s %6s\n' "" "text" "data" "bss" "text" "data" "bss"
row "x86-64 $cc -O2" "$cc" "$size" "$cflags -O2" "$@"
row "x86-64 $cc -Os" "$cc" "$size" "$cflags -Os" "$@"
if command -v "$arm_cc" >/dev/null 2>&1; then
  row "Cortex-M4 $arm_cc -Os" "$arm_cc" "$arm_size" "$arm_cflags" "$@"
  echo "minimal: $minimal"
  if [ -n "$demo" ]; then
    mkdir -p "$out/demo-full" "$out/demo-minimal"
    rm -rf "$out/demo-full/obj" "$out/demo-minimal/obj"
    cp -r "$out/full" "$out/demo-full/obj"
    cp -r "$out/minimal" "$out/demo-minimal/obj"
    # shellcheck disable=SC2046
    set -- $(link_demo "$out/demo-full/obj" "") $(link_demo "$out/demo-minimal/obj" "$minimal")
    echo "linked into $demo for Cortex-M4 (--gc-sections), from the link map:"
    printf '  %-32s %9s %9s   %9s %9s\n' "" "full" "" "minimal" ""
    printf '  %-32s %9s %9s   %9s %9s\n' "" "flash" "RAM" "flash" "RAM"
    printf '  %-32s %9d %9d   %9d %9d\n' "core" "$1" "$2" "$5" "$6"
    printf '  %-32s %9d %9d   %9d %9d\n' "inline driver, kernel runner" "$3" "$4" "$7" "$8"
    printf '  %-32s %9d %9d   %9d %9d\n' "together" "$(($1 + $3))" "$(($2 + $4))" "$(($5 + $7))" \
      "$(($6 + $8))"
    echo "  whole demo firmware (text data bss, the arena and the harness's stack and heap regions in bss):"
    "$arm_size" "$out/demo-full/demo.elf" "$out/demo-minimal/demo.elf" | sed 's/^/    /'
  fi
  echo "largest symbols of the minimal Cortex-M4 core (bytes, $arm_nm --size-sort):"
  $arm_nm --size-sort -S -t d "$out"/minimal/core_*.o 2>/dev/null | awk 'NF == 4 { print $2 + 0, $4 }' |
    sort -n | tail -n 12 | sort -rn | awk '{ printf "  %6d  %s\n", $1, $2 }'
  echo "by file (minimal Cortex-M4 text):"
  $arm_size "$out"/minimal/core_*.o | awk 'NR > 1 && $1 > 0 { n = $6; sub(".*/", "", n); printf "  %6d  %s\n", $1, n }' |
    sort -rn | head -n 12
else
  echo "Cortex-M4: $arm_cc not found (Debian: apt-get install gcc-arm-none-eabi)"
fi
