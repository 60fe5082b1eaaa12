#!/bin/sh
# analyzer_scale.sh - how `scaleprof report` grows with ranks, and how fast
# it reads traces of different mixes.
#
#   analyzer_scale.sh SCALEPROF scale [RANKS...]   (default 1024 4096 10000)
#   analyzer_scale.sh SCALEPROF mix [kernel|collective|input ...]
#
# scale: RANKS ranks on hosts of 8, 100 steps, 20 kernels and 4 collectives
# per step, 2 ms of input wait (the shape where the replay, not the
# reading, costs most); one line per size: events, wall and CPU seconds,
# M events/s per core, peak RSS and RSS per rank-step (memory must stay
# linear: flat per rank-step).
# mix: kernel-heavy (64 ranks, 200 kernels and 4 collectives per step),
# collective-heavy (1024 ranks, 20 kernels and 16 collectives per step,
# plus one per host), input-heavy (64 ranks, 4 DataLoader workers per rank
# reading every 100 us, 20 kernels, 4 collectives); the same line.
# CPU is user + system time of the whole report (its reading threads
# included), so events/s per core is events / CPU seconds.  gen_trace is
# found in the same build directory (tests/analyzer/gen_trace).  Traces go
# to a temporary directory (TMPDIR), about 20 MB per 1000 ranks.
set -eu
sp=$1 what=${2:-scale}
shift 2 || shift $#
gen=$(dirname "$sp")/../tests/analyzer/gen_trace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() { # LABEL RANKS STEPS GEN-ARGS...
    label=$1 ranks=$2 steps=$3
    shift 3
    dir=$tmp/t
    rm -rf "$dir"
    "$gen" "$dir" --ranks "$ranks" --steps "$steps" "$@"
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$sp" report "$dir" --json > "$tmp/out.json" 2> "$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    events=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events']['read'])" "$tmp/out.json")
    read -r wall user sys rss < "$tmp/time"
    python3 -c "
import sys
label, ev, wall, user, sys_, rss, ranks, steps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
cpu = max(user + sys_, 1e-3)
print(f'{label}: {ranks} ranks x {steps} steps, {ev/1e6:.1f}M events, {wall:.2f} s wall, {cpu:.2f} s cpu, '
      f'{ev/cpu/1e6:.1f}M events/s per core, peak RSS {rss/1024:.1f} MiB ({rss*1024/ranks/steps:.0f} B per rank-step)')
" "$label" "$events" "$wall" "$user" "$sys" "$rss" "$ranks" "$steps"
    rm -rf "$dir"
}

case $what in
scale)
    [ $# -gt 0 ] || set -- 1024 4096 10000
    for n in "$@"; do
        measure scale "$n" 100 --hosts $(((n + 7) / 8)) --kernels 20 --colls 4 --input-ms 2
    done
    ;;
mix)
    [ $# -gt 0 ] || set -- kernel collective input
    for m in "$@"; do
        case $m in
        kernel) measure kernel-heavy 64 200 --hosts 8 --kernels 200 --colls 4 --input-ms 2 ;;
        collective) measure collective-heavy 1024 100 --hosts 128 --kernels 20 --colls 16 --intra-coll --input-ms 2 ;;
        input) measure input-heavy 64 200 --hosts 8 --kernels 20 --colls 4 --input-ms 2 --helpers 4 --helper-read-us 100 ;;
        *) echo "analyzer_scale.sh: unknown mix $m (kernel, collective, input)" >&2; exit 2 ;;
        esac
    done
    ;;
*) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
