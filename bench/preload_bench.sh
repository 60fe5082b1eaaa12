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
# With valgrind installed it then counts, under callgrind, the instructions
# each call costs the calling thread (bare, recorded, host-only), from runs
# of CG_COUNT and 2 x CG_COUNT calls: deterministic where timings are noisy.
set -eu
: "${PRELOAD_BENCH:?}" "${SCALEPROF_LIB:?}" "${SIM_LIBDIR:?}"
PRELOAD_BENCH=$(readlink -f "$PRELOAD_BENCH") SCALEPROF_LIB=$(readlink -f "$SCALEPROF_LIB")
SIM_LIBDIR=$(readlink -f "$SIM_LIBDIR")
ROUNDS=${ROUNDS:-5}
CG_COUNT=${CG_COUNT:-4000}
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

if ! command -v valgrind >/dev/null 2>&1; then
    echo "callgrind: valgrind not installed, skipped"
    exit 0
fi
# Inclusive instructions of the function NAME in object OBJ in the calling
# thread's profile (file -01): the interposer includes the real call, so
# interposer minus real is what the recorder adds, whatever the sim's own
# timing-dependent work (its queues, its CUPTI records) costs.  Annotated
# from /: from the build directory, callgrind_annotate shows the parts of
# an interposer inlined from other files (the encoder) under paths relative
# to it, apart from the interposer, whose inclusive cost then misses them.
incl() { # profile name obj
    (cd / && callgrind_annotate --inclusive=yes --threshold=100 "$1-01" 2>/dev/null) |
        awk -v f=":$2 [" -v o="$3" 'index($0, f) && index($0, o) { gsub(",", "", $1); print $1; exit }'
}
cg() { # mode call n: the added instructions of n calls (interposer minus real)
    local out="$work/cg.$1.$2.$3" name=cudaLaunchKernel
    [ "$2" = allreduce ] && name=ncclAllReduce
    local pre=(env SCALEPROF_DIR="$work/cg-t" LD_PRELOAD="$SCALEPROF_LIB")
    [ "$1" = host-only ] && pre+=(SCALEPROF_CUPTI=0)
    "${pre[@]}" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
        "$PRELOAD_BENCH" "$2" "$3" >/dev/null 2>&1
    echo $(( $(incl "$out" "$name" libscaleprof.so) - $(incl "$out" "$name" "$SIM_LIBDIR") ))
}
echo "callgrind, instructions the interposer adds per call in the calling thread"
echo "(interposer minus real function, inclusive, from $CG_COUNT extra calls):"
printf '  %-12s %10s %10s\n' call recorded host-only
for call in launch allreduce; do
    line=$(printf '  %-12s' "$call")
    for mode in recorded host-only; do
        a=$(cg "$mode" "$call" "$CG_COUNT") b=$(cg "$mode" "$call" $((CG_COUNT * 2)))
        line+=$(printf ' %10s' $(( (b - a) / CG_COUNT )))
    done
    echo "$line"
done
