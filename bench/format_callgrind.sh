#!/bin/sh
# format_callgrind.sh - instructions per sp_writer_append, counted by
# valgrind's callgrind: a figure that does not move with machine load,
# unlike the nanoseconds format_bench reports.
#
# Usage: bench/format_callgrind.sh [FORMAT_BENCH] [EVENTS]
#   FORMAT_BENCH  the built bench (default: build/bench/format_bench), or
#                 $FORMAT_BENCH from meson
#   EVENTS        appends to run (default 200000)
# Prints: `instructions/append: N` (inclusive: encoder, TLS check, publish,
# and the amortized slot hand-over).
set -eu
bench=${1:-${FORMAT_BENCH:-build/bench/format_bench}}
events=${2:-200000}
command -v valgrind >/dev/null || { echo "format_callgrind: valgrind not installed" >&2; exit 77; }
out=$(mktemp "${TMPDIR:-/tmp}/sprof-callgrind-XXXXXX")
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" \
  --toggle-collect=sp_writer_append "$bench" "$events" --callgrind > /dev/null 2>&1
total=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")
[ -n "$total" ] || { echo "format_callgrind: no summary in callgrind output" >&2; exit 1; }
awk -v t="$total" -v n="$events" 'BEGIN { printf "instructions/append: %.1f\n", t / n }'
