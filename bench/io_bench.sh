#!/bin/sh
# io_bench.sh - what the preload adds to one 4 KiB read from the page cache.
#
# Runs io_bench with and without LD_PRELOAD=libscaleprof.so, alternating,
# RUNS times each, and prints the medians and their difference in ns per
# call (wall clock, and the calling thread's CPU time, which a loaded
# machine disturbs less); then counts instructions under callgrind (when
# valgrind is installed) and prints the instructions added per read: in the
# calling thread (the cost the job pays inline; deterministic), and in all
# threads (compression included, the CPU sampler off; under valgrind's
# slowdown the compressor, which looks at slots every 20 ms, does a little
# more work than at native speed).
#
# Each figure is given for two jobs.  A single-threaded one: the recorder's
# service thread is its second thread, and glibc's read does its
# cancellation bookkeeping from then on (about 45 instructions a read),
# which the recorder causes and this job pays.  And one that already has a
# thread (io_bench's idle thread, in both runs), as every training process
# has: there the bookkeeping is paid without the recorder too, and the
# difference is what the recorder itself adds.
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
: >"$tmp/plain.t"
: >"$tmp/traced.t"
i=0
while [ "$i" -lt "$runs" ]; do
    "$bench" "$tmp/data" "$count" >>"$tmp/plain"
    LD_PRELOAD="$lib" SCALEPROF_DIR="$tmp/traces.$i" SCALEPROF_QUIET=1 "$bench" "$tmp/data" "$count" >>"$tmp/traced"
    "$bench" "$tmp/data" "$count" 1 >>"$tmp/plain.t"
    LD_PRELOAD="$lib" SCALEPROF_DIR="$tmp/traces.t$i" SCALEPROF_QUIET=1 "$bench" "$tmp/data" "$count" 1 >>"$tmp/traced.t"
    i=$((i + 1))
done
echo "read 4 KiB, page cache, $count calls x $runs runs (medians, ns/call):"
printf '  %-48s %10s %10s %10s\n' "" "without" "with" "added"
for job in "" .t; do
    [ -z "$job" ] && who="single-threaded job" || who="job with a thread already"
    for col in 1 2; do
        [ "$col" = 1 ] && what="wall clock" || what="calling thread's CPU"
        awk -v w="$what, $who" -v a="$(median $col <"$tmp/plain$job")" -v b="$(median $col <"$tmp/traced$job")" \
            'BEGIN {printf "  %-48s %10.1f %10.1f %10.1f\n", w, a, b, b - a}'
    done
done
echo "  (target: under 30 ns added per call)"

if command -v valgrind >/dev/null 2>&1; then
    # Instructions of a run, per thread (--separate-threads): the calling
    # thread is file -01; the rest are the sampler and the compressor.
    cg() { # name count idle_threads [env...]
        name=$1 n=$2 idle=$3
        shift 3
        env "$@" valgrind --tool=callgrind --separate-threads=yes \
            --callgrind-out-file="$tmp/cg.$name" "$bench" "$tmp/data" "$n" "$idle" >/dev/null 2>&1
    }
    ir_main() { grep -E '^(summary|totals):' "$tmp/cg.$1-01" | head -1 | awk '{print $2}'; }
    # one line per file: callgrind writes both summary: and totals:
    ir_all() { for f in "$tmp"/cg."$1"-*; do grep -m1 -E '^(summary|totals):' "$f"; done | awk '{s += $2} END {print s}'; }
    # The CPU sampler off: its /proc reads follow the run's time, not its
    # calls, and valgrind's slowdown multiplies them into a per-read cost.
    traced_env="LD_PRELOAD=$lib SCALEPROF_QUIET=1 SCALEPROF_CPU_HZ=0"
    echo "callgrind, instructions per read (user space; from $cg_count extra reads):"
    printf '  %-34s %8s %8s %8s\n' "" "without" "with" "added"
    # The first two lines are the single-threaded job's (bench/run reads
    # the "calling thread" one); the next two the threaded job's.
    for idle in 0 1; do
        cg plain1.$idle "$cg_count" "$idle"
        cg plain2.$idle $((cg_count * 2)) "$idle"
        cg traced1.$idle "$cg_count" "$idle" $traced_env SCALEPROF_DIR="$tmp/traces.cg1.$idle"
        cg traced2.$idle $((cg_count * 2)) "$idle" $traced_env SCALEPROF_DIR="$tmp/traces.cg2.$idle"
        # The difference between runs of N and 2N reads is the cost of N
        # reads, start-up and exit excluded.
        awk -v n="$cg_count" -v idle="$idle" \
            -v pm=$(( $(ir_main plain2.$idle) - $(ir_main plain1.$idle) )) \
            -v pa=$(( $(ir_all plain2.$idle) - $(ir_all plain1.$idle) )) \
            -v tm=$(( $(ir_main traced2.$idle) - $(ir_main traced1.$idle) )) \
            -v ta=$(( $(ir_all traced2.$idle) - $(ir_all traced1.$idle) )) 'BEGIN {
            if (idle == 0) {
                main = "calling thread"; all = "all threads (with compression)"
            } else {
                main = "calling thread, job with a thread"; all = "all threads, job with a thread"
            }
            printf "  %-34s %8.0f %8.0f %8.0f\n", main, pm / n, tm / n, (tm - pm) / n
            printf "  %-34s %8.0f %8.0f %8.0f\n", all, pa / n, ta / n, (ta - pa) / n }'
    done
else
    echo "callgrind: valgrind not installed, skipped"
fi
