#!/usr/bin/env bash
# percall_bench.sh - what the recorder itself adds to a cudaLaunchKernel and
# an ncclAllReduce: percall_bench in front of stub libraries that return at
# once (bench/percall/stubs.c), bare and recorded, alternating.
#
#   meson test -C BUILD --benchmark percall --verbose
#   (or: PERCALL_BENCH=... SCALEPROF_LIB=... STUB_LIBDIR=... bench/percall_bench.sh)
#
# The recorder runs as under CUPTI (it attaches to the stub libcupti, which
# delivers no records): collectives take the path they take with CUPTI.
# Prints the medians of ROUNDS runs each way (each run's figure is itself a
# median of batches, timed after a warm-up past the clock's calibration),
# wall clock and the calling thread's CPU time, and their differences; then,
# with valgrind, the instructions the recorder adds per call in the calling
# thread and in the whole process (its service thread compresses): each
# count for CG_COUNT and 2 x CG_COUNT calls, recorded minus bare (the
# stubs' own few instructions cancel out).
# preload_bench.sh measures the same calls on the sim.
set -eu
: "${PERCALL_BENCH:?}" "${SCALEPROF_LIB:?}" "${STUB_LIBDIR:?}"
ROUNDS=${ROUNDS:-7}
CG_COUNT=${CG_COUNT:-20000}
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-percall-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$STUB_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SCALEPROF_CPU_HZ=0 SCALEPROF_QUIET=1 SCALEPROF_CUPTI_LIB="$STUB_LIBDIR/libcupti.so.13"

run() { # mode round [args...]
    local mode=$1 r=$2
    shift 2
    case $mode in
    bare) "$PERCALL_BENCH" "$@" ;;
    recorded) SCALEPROF_DIR="$work/t$r" LD_PRELOAD="$SCALEPROF_LIB" "$PERCALL_BENCH" "$@" ;;
    esac
    rm -rf "$work/t$r"
}

for r in $(seq 1 "$ROUNDS"); do
    for mode in bare recorded; do run "$mode" "$r" >"$work/$mode.$r"; done
done

median() { # mode key
    cat "$work/$1".* | awk -v k="$2" '$1 == k { print $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

printf '%-18s %10s %10s %10s\n' metric bare recorded added
for key in launch_ns allreduce_ns launch_cpu_ns allreduce_cpu_ns; do
    b=$(median bare "$key") r=$(median recorded "$key")
    printf '%-18s %10s %10s %7.1f ns\n' "$key" "$b" "$r" "$(awk -v r="$r" -v b="$b" 'BEGIN{print r-b}')"
done
echo "(medians of $ROUNDS alternating runs; each run's figure is itself a median of batches)"

if ! command -v valgrind >/dev/null 2>&1; then
    echo "callgrind: valgrind not installed, skipped"
    exit 0
fi
# The calling thread's total (file -01) and the whole process's (every
# thread's file: the recorder's service thread compresses there): the
# whole run, set-up included, which the difference between N and 2N calls
# takes away.
ir() { # mode call n -> "calling_thread all_threads"
    local out="$work/cg.$1.$2.$3"
    case $1 in
    bare) valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
        "$PERCALL_BENCH" "$2" "$3" >/dev/null 2>&1 ;;
    recorded) SCALEPROF_DIR="$work/cg-t" LD_PRELOAD="$SCALEPROF_LIB" valgrind --tool=callgrind \
        --separate-threads=yes --callgrind-out-file="$out" "$PERCALL_BENCH" "$2" "$3" >/dev/null 2>&1 ;;
    esac
    rm -rf "$work/cg-t"
    echo "$(grep -E '^(summary|totals):' "$out-01" | head -1 | awk '{print $2}')" \
        "$(for f in "$out"-*; do grep -m1 -E '^(summary|totals):' "$f"; done | awk '{s += $2} END {print s}')"
}
echo "callgrind, instructions the recorder adds per call (from $CG_COUNT extra calls,"
echo "recorded minus bare): in the calling thread, and in the whole process"
printf '  %-12s %16s %16s\n' call "calling thread" "whole process"
for call in launch allreduce; do
    n=$CG_COUNT
    set -- $(ir recorded "$call" $((n * 2))) $(ir recorded "$call" "$n") $(ir bare "$call" $((n * 2))) $(ir bare "$call" "$n")
    printf '  %-12s %16s %16s\n' "$call" $(( (($1 - $3) - ($5 - $7)) / n )) $(( (($2 - $4) - ($6 - $8)) / n ))
done
