#!/bin/sh
# format_callgrind.sh - instructions per sp_writer_append, and per event
# read back, counted by valgrind's callgrind: figures that do not move
# with machine load, unlike the nanoseconds format_bench reports.
#
# Usage: bench/format_callgrind.sh [FORMAT_BENCH] [EVENTS]
#   FORMAT_BENCH  the built bench (default: build/bench/format_bench), or
#                 $FORMAT_BENCH from meson
#   EVENTS        appends to run (default 200000)
# Prints:
#   instructions/append: N          (inclusive: encoder, TLS check,
#                                    publish, the amortized slot hand-over)
#   instructions/event read: N      (open, decompression, decoding)
#   instructions/event read, gpu+nccl+marker only: N  (per event in the
#                                    file, delivered or skipped)
set -eu
bench=${1:-${FORMAT_BENCH:-build/bench/format_bench}}
events=${2:-200000}
command -v valgrind >/dev/null || { echo "format_callgrind: valgrind not installed" >&2; exit 77; }
out=$(mktemp "${TMPDIR:-/tmp}/sprof-callgrind-XXXXXX")
trap 'rm -f "$out"' EXIT

# per_event FUNCTION LABEL: callgrind's count inside FUNCTION, per event.
per_event() {
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    --toggle-collect="$1" "$bench" "$events" --callgrind > /dev/null 2>&1
  total=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")
  [ -n "$total" ] || { echo "format_callgrind: no summary in callgrind output" >&2; exit 1; }
  awk -v t="$total" -v n="$events" -v l="$2" 'BEGIN { printf "%s: %.1f\n", l, t / n }'
}
per_event sp_writer_append "instructions/append"
per_event read_all_types "instructions/event read"
per_event read_typical_types "instructions/event read, gpu+nccl+marker only"
