#!/usr/bin/env bash
# preload_bench.sh - the recorder's added cost per cudaLaunchKernel and per
# ncclAllReduce, and on one loop step, on the stand-in CUDA libraries.
#
#   meson test -C BUILD --benchmark preload_gpu --verbose
#   (or: PRELOAD_BENCH=... SCALEPROF_LIB=... SIM_LIBDIR=... bench/preload_bench.sh)
#
# Runs preload_bench ROUNDS times each way, alternating bare / recorded so
# that machine load hits both alike, and prints the medians and their
# difference.  "recorded" is the default configuration (CUPTI on through the
# sim's libcupti); "host-only" turns CUPTI off (SCALEPROF_CUPTI=0) to show
# the interposers' own cost.  Targets: < 100 ns per call, < 1% per step.
set -eu
: "${PRELOAD_BENCH:?}" "${SCALEPROF_LIB:?}" "${SIM_LIBDIR:?}"
ROUNDS=${ROUNDS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-preload-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$SIM_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SCALEPROF_CPU_HZ=0 SCALEPROF_QUIET=1

run() { # mode round
    case $1 in
    bare) "$PRELOAD_BENCH" ;;
    recorded) SCALEPROF_DIR="$work/t$2" LD_PRELOAD="$SCALEPROF_LIB" "$PRELOAD_BENCH" ;;
    host-only) SCALEPROF_CUPTI=0 SCALEPROF_DIR="$work/h$2" LD_PRELOAD="$SCALEPROF_LIB" "$PRELOAD_BENCH" ;;
    esac >"$work/$1.$2"
}

for r in $(seq 1 "$ROUNDS"); do
    for mode in bare recorded host-only; do run "$mode" "$r"; done
done

median() { # mode key
    cat "$work/$1".* | awk -v k="$2" '$1 == k { print $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

printf '%-14s %12s %12s %12s %14s %14s\n' metric bare recorded host-only "added(rec)" "added(host)"
for key in launch_ns allreduce_ns step_us; do
    b=$(median bare "$key") r=$(median recorded "$key") h=$(median host-only "$key")
    if [ "$key" = step_us ]; then
        printf '%-14s %12s %12s %12s %13.2f%% %13.2f%%\n' "$key" "$b" "$r" "$h" \
            "$(awk -v r="$r" -v b="$b" "BEGIN{print (r-b)*100/b}")" "$(awk -v r="$h" -v b="$b" "BEGIN{print (r-b)*100/b}")"
    else
        printf '%-14s %12s %12s %12s %11.1f ns %11.1f ns\n' "$key" "$b" "$r" "$h" \
            "$(awk -v r="$r" -v b="$b" "BEGIN{print r-b}")" "$(awk -v r="$h" -v b="$b" "BEGIN{print r-b}")"
    fi
done
echo "(medians of $ROUNDS alternating runs; each run's figure is itself a median of batches)"
