#!/bin/sh
# reduce_bench.sh - scaleprof reduce against report on the traces, on a
# generated job of RANKS ranks over HOSTS host directories and STEPS steps:
# one reduce process per host directory up to NP (mpirun when installed,
# else --part/--parts), then report on the summaries.  Prints one markdown
# row: trace and summary sizes, bytes per rank-step, wall time and peak RSS
# of the reduce (its slowest process) and of the two reports, and whether
# the two reports' JSON is identical but the directory.
#
# Usage: sh bench/reduce_bench.sh [BUILD] [RANKS] [HOSTS] [STEPS] [NP] [KERNELS]
#   defaults: build 8 4 20 4 4  (KERNELS: compute kernels per chunk)
set -eu
build=${1:-build}
ranks=${2:-8}
hosts=${3:-4}
steps=${4:-20}
np=${5:-4}
kernels=${6:-4}
sp=$build/analyzer/scaleprof
gen=${GEN_TRACE:-$build/tests/analyzer/gen_trace} # up to 16,384 ranks
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rss() { sed -n 's/^peak \([0-9.]*\) s \([0-9]*\) KB$/\1 \2/p' "$1"; }
"$gen" "$tmp/t" --ranks "$ranks" --hosts "$hosts" --steps "$steps" --markers --kernels "$kernels" \
    --slow-rank 1 --slow-compute-ms 2 >/dev/null
if command -v mpirun >/dev/null; then
    how="mpirun -np $np"
    /usr/bin/time -f "peak %e s %M KB" -o "$tmp/reduce.time" \
        mpirun --allow-run-as-root --oversubscribe -np "$np" \
        sh -c "/usr/bin/time -f 'peak %e s %M KB' -o $tmp/r.\$OMPI_COMM_WORLD_RANK.time $sp reduce $tmp/t -o $tmp/s" \
        >/dev/null
else
    how="$np x --part"
    i=0
    while [ $i -lt "$np" ]; do
        /usr/bin/time -f "peak %e s %M KB" -o "$tmp/r.$i.time" \
            "$sp" reduce "$tmp/t" -o "$tmp/s" --part $i --parts "$np" >/dev/null &
        i=$((i + 1))
    done
    wait
fi
red_s=0 red_kb=0
for f in "$tmp"/r.*.time; do
    set -- $(rss "$f")
    red_s=$(awk -v a="$red_s" -v b="$1" 'BEGIN { print (b > a) ? b : a }')
    red_kb=$(( $2 > red_kb ? $2 : red_kb ))
done
/usr/bin/time -f "peak %e s %M KB" -o "$tmp/rt.time" "$sp" report "$tmp/t" --json >"$tmp/a.json"
/usr/bin/time -f "peak %e s %M KB" -o "$tmp/rs.time" "$sp" report "$tmp/s" --json >"$tmp/b.json"
same=$(if [ "$(grep -v '"dir":' "$tmp/a.json" | cksum)" = "$(grep -v '"dir":' "$tmp/b.json" | cksum)" ]; then
    echo identical; else echo DIFFERENT; fi)
tb=$(du -sb "$tmp/t" | cut -f1)
sb=$(du -sb "$tmp/s" | cut -f1)
set -- $(rss "$tmp/rt.time")
rt_s=$1 rt_kb=$2
set -- $(rss "$tmp/rs.time")
rs_s=$1 rs_kb=$2
awk -v r="$ranks" -v h="$hosts" -v s="$steps" -v how="$how" -v tb="$tb" -v sb="$sb" -v red_s="$red_s" \
    -v red_kb="$red_kb" -v rt_s="$rt_s" -v rt_kb="$rt_kb" -v rs_s="$rs_s" -v rs_kb="$rs_kb" -v same="$same" 'BEGIN {
    printf "| %d ranks, %d hosts, %d steps | %s | %.1f MB | %.2f MB (%.0f B/rank-step) | %.2f s, %.1f MiB | %.2f s, %.1f MiB | %.2f s, %.1f MiB | %s |\n",
        r, h, s, how, tb / 1e6, sb / 1e6, sb / (r * s), red_s, red_kb / 1024, rt_s, rt_kb / 1024, rs_s, rs_kb / 1024, same
}'
