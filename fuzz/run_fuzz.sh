#!/bin/sh
# run_fuzz.sh - one libFuzzer target for a while from its seeds: the suite
# 'fuzz' (meson) and bench/fuzz.sh both run targets through it.
#
# Usage: run_fuzz.sh reader|kineto|roundtrip TARGET [WORKDIR]
#   FUZZ_SECONDS  how long (default 25)
#   MAKE_TRACE    tests/format's make_trace (reader seeds: small real traces,
#                 closed and abandoned as by a crash)
#   SEEDS         tests/import/data (kineto seeds: the small hand-written
#                 traces, plain and gzip)
#   CORPUS        fuzz/corpus: regression inputs kept in the tree, run first
# (roundtrip has no seeds: its input is a program of events, any bytes)
# A crash leaves crash-* (or timeout-*, oom-*) in WORKDIR; the last line
# says how many runs were made.  Replay one with: TARGET WORKDIR/crash-...
set -eu
kind=$1 target=$2
work=${3:-$(mktemp -d "${TMPDIR:-/tmp}/fuzz-$kind.XXXXXX")}
seconds=${FUZZ_SECONDS:-25}
mkdir -p "$work/corpus" "$work/seeds"
case "$kind" in
reader)
    "$MAKE_TRACE" "$work/seeds/closed.sprof" small
    "$MAKE_TRACE" "$work/seeds/killed.sprof" crash small
    max_len=262144
    ;;
kineto)
    for f in "$SEEDS"/*.json; do
        cp "$f" "$work/seeds/"
        gzip -c "$f" >"$work/seeds/$(basename "$f").gz"
    done
    max_len=65536
    ;;
roundtrip)
    printf '\001\002\001\003' >"$work/seeds/empty"
    max_len=16384
    ;;
*)
    echo "run_fuzz.sh: unknown target kind '$kind' (reader, kineto or roundtrip)" >&2
    exit 2
    ;;
esac
regress=
[ -d "${CORPUS:-}/$kind" ] && regress="$CORPUS/$kind"
echo "run_fuzz.sh: fuzzing the $kind for $seconds s in $work"
# shellcheck disable=SC2086
"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=$max_len \
    -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$work/seeds" $regress 2>"$work/log" ||
    { rc=$?; tail -60 "$work/log"; echo "run_fuzz.sh: $kind: FAILED (exit $rc), inputs in $work"; exit 1; }
runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' "$work/log")
echo "run_fuzz.sh: $kind: $runs, no crash; corpus $(ls "$work/corpus" | wc -l) inputs"
[ -n "${3:-}" ] || rm -rf "$work"
