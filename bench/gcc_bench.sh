#!/bin/sh
# gcc_bench.sh - what the preload costs a short-lived tool run with it
# inherited: a C compiler driver and its children (cc1, as), the shape
# of a `make` build under a recorded shell.
#
#   bench/gcc_bench.sh [BUILD_DIR] [N]        (or meson test --benchmark gcc)
#
# Compiles one small C file N times (default 20) bare and under the
# preload, alternating, and prints the medians of the wall clock, their
# ratio, and the trace files one compile leaves (one per process that
# recorded: the driver, cc1, as).  Wall clock on a shared machine is
# noisy: read the load average it prints, and run it twice.
set -eu
BUILD=${1:-build}
N=${2:-20}
LIB=${SCALEPROF_LIB:-$BUILD/preload/libscaleprof.so}
CC=${CC:-gcc}
command -v "$CC" >/dev/null 2>&1 || { echo "gcc_bench: $CC not found, skipped"; exit 0; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/small.c" <<'EOF'
#include <stdio.h>
#include <string.h>
static int twice(int x) { return 2 * x; }
int main(int argc, char **argv)
{
    char b[64];
    snprintf(b, sizeof b, "%d", twice(argc));
    puts(strlen(b) ? b : argv[0]);
    return 0;
}
EOF

now_us() { echo $(( $(date +%s%N) / 1000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
: >"$TMP/bare"; : >"$TMP/pre"; : >"$TMP/files"
i=0
while [ "$i" -lt "$N" ]; do
    s=$(now_us); "$CC" -O2 -c "$TMP/small.c" -o "$TMP/a.o"; echo $(( $(now_us) - s )) >>"$TMP/bare"
    rm -rf "$TMP/t"
    s=$(now_us)
    LD_PRELOAD="$LIB" SCALEPROF_DIR="$TMP/t" SCALEPROF_QUIET=1 "$CC" -O2 -c "$TMP/small.c" -o "$TMP/a.o"
    echo $(( $(now_us) - s )) >>"$TMP/pre"
    find "$TMP/t" -name '*.sprof' | wc -l >>"$TMP/files"
    i=$((i + 1))
done
b=$(median <"$TMP/bare"); p=$(median <"$TMP/pre"); f=$(median <"$TMP/files")
echo "gcc -O2 -c small.c, $N x each, alternating (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
awk -v b="$b" -v p="$p" -v f="$f" 'BEGIN {
    printf "  bare %.1f ms, preloaded %.1f ms (medians): %.2fx, +%.1f ms per compile, %d trace files\n",
        b / 1000, p / 1000, p / b, (p - b) / 1000, f }'
