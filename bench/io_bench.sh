#!/bin/sh
# io_bench.sh - what the preload adds to one 4 KiB read from the page cache.
#
# Runs io_bench with and without LD_PRELOAD=libscaleprof.so, alternating,
# RUNS times each, and prints the medians and their difference in ns per
# call; then counts instructions of a fixed number of reads under callgrind
# (when valgrind is installed) and prints the instructions added per read.
# The target is under 30 ns per call.
#
# Usage: io_bench.sh [BUILD_DIR]   (or IO_BENCH=... SCALEPROF_LIB=... from meson)
set -eu
build=${1:-build}
bench=${IO_BENCH:-$build/bench/io_bench}
lib=${SCALEPROF_LIB:-$build/preload/libscaleprof.so}
runs=${RUNS:-5}
count=${COUNT:-2000000}
cg_count=${CG_COUNT:-20000}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -c 1048576 /dev/zero >"$tmp/data"
cat "$tmp/data" >/dev/null

# median of column $1 of stdin
median() { awk -v c="$1" '{print $c}' | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

: >"$tmp/plain"
: >"$tmp/traced"
i=0
while [ "$i" -lt "$runs" ]; do
    "$bench" "$tmp/data" "$count" >>"$tmp/plain"
    LD_PRELOAD="$lib" SCALEPROF_DIR="$tmp/traces.$i" SCALEPROF_QUIET=1 "$bench" "$tmp/data" "$count" >>"$tmp/traced"
    i=$((i + 1))
done
echo "read 4 KiB, page cache, $count calls x $runs runs (medians, ns/call):"
printf '  %-22s %10s %10s %10s\n' "" "without" "with" "added"
for col in 1 2; do
    [ "$col" = 1 ] && what="wall clock" || what="calling thread's CPU"
    awk -v w="$what" -v a="$(median $col <"$tmp/plain")" -v b="$(median $col <"$tmp/traced")" \
        'BEGIN {printf "  %-22s %10.1f %10.1f %10.1f\n", w, a, b, b - a}'
done
echo "  (target: under 30 ns added per call)"

if command -v valgrind >/dev/null 2>&1; then
    ir() { # total instructions of a run, from callgrind's summary line
        grep -E '^(summary|totals):' "$1" | head -1 | awk '{print $2}'
    }
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.plain" "$bench" "$tmp/data" "$cg_count" >/dev/null 2>&1
    LD_PRELOAD="$lib" SCALEPROF_DIR="$tmp/traces.cg" SCALEPROF_QUIET=1 \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.traced" "$bench" "$tmp/data" "$cg_count" >/dev/null 2>&1
    # A second, longer run of each separates per-read cost from start-up.
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.plain2" "$bench" "$tmp/data" $((cg_count * 2)) >/dev/null 2>&1
    LD_PRELOAD="$lib" SCALEPROF_DIR="$tmp/traces.cg2" SCALEPROF_QUIET=1 \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.traced2" "$bench" "$tmp/data" $((cg_count * 2)) >/dev/null 2>&1
    awk -v p1="$(ir "$tmp/cg.plain")" -v p2="$(ir "$tmp/cg.plain2")" \
        -v t1="$(ir "$tmp/cg.traced")" -v t2="$(ir "$tmp/cg.traced2")" -v n="$cg_count" 'BEGIN {
        printf "callgrind, instructions per read (from %d extra reads):\n", n
        printf "  without preload: %.0f\n  with preload:    %.0f\n  added:           %.0f per read\n",
               (p2 - p1) / n, (t2 - t1) / n, ((t2 - t1) - (p2 - p1)) / n }'
else
    echo "callgrind: valgrind not installed, skipped"
fi
