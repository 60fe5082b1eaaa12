#!/bin/sh
# fuzz.sh - fuzz the trace reader with libFuzzer for N minutes (not in CI).
#
# Usage: bench/fuzz.sh [MINUTES] [WORKDIR]     (default 5 minutes, ./fuzz-work)
# Needs clang with -fsanitize=fuzzer and the zstd development files.  Builds
# fuzz/fuzz_reader.c with the format library under ASan+UBSan, seeds the
# corpus with small real traces (closed, and abandoned as by a crash), then
# runs.  A crash leaves crash-* files in WORKDIR; rerun one with
#   WORKDIR/fuzz_reader WORKDIR/crash-...
set -eu
minutes=${1:-5}
work=${2:-fuzz-work}
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "fuzz.sh: clang not found" >&2; exit 77; }
mkdir -p "$work/corpus"
flags="-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
# shellcheck disable=SC2086
"$cc" $flags -I"$root/format" "$root"/format/schema.c "$root"/format/crc32c.c \
  "$root"/format/reader.c "$root"/format/columns.c "$root"/fuzz/fuzz_reader.c -lzstd -o "$work/fuzz_reader"
# Seeds: small traces from the test helper, built without sanitizers.
cflags="-O1 -std=c11 -D_GNU_SOURCE"
# shellcheck disable=SC2086
"$cc" $cflags -I"$root/format" -I"$root/tests/format" "$root"/format/*.c \
  "$root"/tests/format/make_trace.c -lzstd -lpthread -o "$work/make_trace"
rm -f "$work/corpus/seed-closed.sprof" "$work/corpus/seed-killed.sprof"
"$work/make_trace" "$work/corpus/seed-closed.sprof" small
"$work/make_trace" "$work/corpus/seed-killed.sprof" crash small
echo "fuzz.sh: fuzzing the reader for $minutes minute(s) in $work"
exec "$work/fuzz_reader" -max_total_time=$((minutes * 60)) -timeout=10 -rss_limit_mb=2048 \
  -max_len=262144 "$work/corpus"
