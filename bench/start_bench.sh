#!/bin/sh
# start_bench.sh - what the preload costs a process at start and exit, and
# a first recorded call with a second thread alive.
#
#   bench/start_bench.sh [BUILD_DIR] [N]       (or meson test --benchmark start)
#
# 1. A fork-heavy shell loop: `for i in $(seq N); do /bin/true; done` (N=2000),
#    bare and under the preload, alternating, 5 runs each; prints the medians,
#    their ratio and the added cost per process (each iteration is two traced
#    processes: bash's fork child, which execs, and /bin/true).
# 2. start_first: the first recorded call of a process with two threads
#    (median of 21 runs), and the next call.
# Wall clock on a shared machine is noisy: read the medians, run it twice.
set -eu
BUILD=${1:-build}
N=${2:-2000}
LIB=${SCALEPROF_LIB:-$BUILD/preload/libscaleprof.so}
FIRST=${START_FIRST:-$BUILD/bench/start_first}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

loop() {
    start=$(date +%s%N)
    "$@" bash -c "for i in \$(seq $N); do /bin/true; done"
    echo $(( ($(date +%s%N) - start) / 1000000 ))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$TMP/bare"; : >"$TMP/pre"
for r in 1 2 3 4 5; do
    loop env >>"$TMP/bare"
    rm -rf "$TMP/t"
    loop env LD_PRELOAD="$LIB" SCALEPROF_DIR="$TMP/t" SCALEPROF_QUIET=1 >>"$TMP/pre"
done
b=$(median <"$TMP/bare"); p=$(median <"$TMP/pre")
echo "fork loop, $N x /bin/true: bare ${b} ms, preload ${p} ms (median of 5, alternating)"
awk -v b="$b" -v p="$p" -v n="$N" 'BEGIN {printf "  ratio %.2fx, +%.0f us per iteration\n", p / b, (p - b) * 1000 / n}'

: >"$TMP/first"; : >"$TMP/second"
for r in $(seq 21); do
    rm -rf "$TMP/f"
    LD_PRELOAD="$LIB" SCALEPROF_DIR="$TMP/f" SCALEPROF_QUIET=1 "$FIRST" >"$TMP/out"
    awk '$1 == "first_us" {print $2}' "$TMP/out" >>"$TMP/first"
    awk '$1 == "second_us" {print $2}' "$TMP/out" >>"$TMP/second"
done
echo "first recorded call, second thread alive: $(median <"$TMP/first") us (median of 21); next call $(median <"$TMP/second") us"
