#!/bin/sh
# analyzer_bench.sh - how fast `scaleprof report` reads, and that its memory
# follows ranks and steps in view rather than trace length.
#
# Generates a 64-rank trace set (default >= 50M events: 64 ranks x STEPS
# steps x ~2 x KERNELS events) into a temporary directory, reports it, and
# prints events/s per core and peak RSS; then the same steps with half the
# events per step (memory must not move: it follows ranks and steps, not
# trace size), then half the steps (memory follows the steps kept).
# usage: analyzer_bench.sh SCALEPROF [STEPS] [KERNELS]   (gen_trace is found in
# the same build directory, tests/analyzer/gen_trace)
set -eu
sp=$1 steps=${2:-1000} kernels=${3:-400}
gen=$(dirname "$sp")/../tests/analyzer/gen_trace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # STEPS KERNELS
    dir=$tmp/s$1
    "$gen" "$dir" --ranks 64 --hosts 8 --steps "$1" --kernels "$2" --colls 4 --input-ms 2
    /usr/bin/time -f '%e %U %M' -o "$tmp/time" "$sp" report "$dir" --json > "$tmp/out.json"
    events=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events']['read'])" "$tmp/out.json")
    read -r wall user rss < "$tmp/time"
    python3 -c "
import sys
ev, wall, user, rss, steps, k = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
cpu = max(user, 1e-3)
print(f'steps {steps}, kernels/step {k}: {ev/1e6:.1f}M events, {wall:.2f} s wall, {cpu:.2f} s cpu, '
      f'{ev/cpu/1e6:.1f}M events/s per core (two passes), peak RSS {rss/1024:.1f} MiB')
" "$events" "$wall" "$user" "$rss" "$1" "$2"
    rm -rf "$dir"
}
run "$steps" "$kernels"
run "$steps" $((kernels / 2))
run $((steps / 2)) "$kernels"
