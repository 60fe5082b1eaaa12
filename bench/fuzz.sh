#!/bin/sh
# fuzz.sh - fuzz the trace reader, the Kineto importer or the writer and
# reader together (roundtrip) with libFuzzer for N minutes (CI runs each
# for 25 s: the suite 'fuzz').
#
# Usage: bench/fuzz.sh [reader|kineto|roundtrip] [MINUTES] [WORKDIR]
#        (default: reader, 5 minutes, ./fuzz-work/<target>)
# Needs clang with -fsanitize=fuzzer.  Builds the targets (fuzz/*.c, under
# ASan + UBSan) in ./build-fuzz (CC=clang, -Dfuzz=enabled, -Dcuda=disabled)
# and runs one through fuzz/run_fuzz.sh, seeded with small real traces
# (reader) or the hand-written Kineto traces, plain and gzip (kineto), or
# from nothing (roundtrip: its input is a program of events), plus
# the regression inputs in fuzz/corpus/<target>.  A crash leaves crash-*
# files in WORKDIR; rerun one with  build-fuzz/fuzz/fuzz_<target> WORKDIR/crash-...
set -eu
target=reader
case "${1:-}" in reader|kineto|roundtrip) target=$1; shift ;; esac
minutes=${1:-5}
[ "$minutes" -gt 0 ] 2>/dev/null || { echo "fuzz.sh: MINUTES must be a whole number above 0" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=${2:-fuzz-work/$target}
build=${FUZZ_BUILD:-$root/build-fuzz}
command -v "${CLANG:-clang}" >/dev/null || { echo "fuzz.sh: clang not found" >&2; exit 77; }
[ -f "$build/build.ninja" ] ||
    CC=${CLANG:-clang} meson setup "$build" "$root" -Dfuzz=enabled -Dcuda=disabled >/dev/null
ninja -C "$build" "fuzz/fuzz_$target" tests/format/make_trace >/dev/null
mkdir -p "$work"
FUZZ_SECONDS=$((minutes * 60)) MAKE_TRACE="$build/tests/format/make_trace" \
    SEEDS="$root/tests/import/data" CORPUS="$root/fuzz/corpus" \
    exec "$root/fuzz/run_fuzz.sh" "$target" "$build/fuzz/fuzz_$target" "$work"
