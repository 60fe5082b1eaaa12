#!/bin/sh
# The README's first command ends in examples/demo.sh: it must run the
# simulated 4-GPU job under the profiler and print a diagnosis that blames
# the input pipeline: an input_pipeline finding, and first either that or a
# straggler whose excess is its input (with one slow loader per rank, the
# rank whose loader started last keeps the others waiting at every
# all-reduce, and which of the two costs more depends on that start-up lag).
set -u
WORK=${SCENARIO_WORKDIR:-.}/demo
rm -rf "$WORK"
mkdir -p "$(dirname "$WORK")"
DEMO_DIR=$WORK "$DEMO" "$BUILD_ROOT" >"$WORK.log" 2>&1
rc=$?
cat "$WORK.log"
[ $rc -eq 0 ] || { echo "FAIL: demo.sh exited $rc"; exit 1; }
grep -q '^[0-9]*\. input_pipeline \[\(moderate\|high\)\]' "$WORK.log" ||
    { echo "FAIL: no input_pipeline finding of moderate or high severity"; exit 1; }
first=$(grep -A1 '^1\. ' "$WORK.log")
case "$first" in
"1. input_pipeline "*) ;;
"1. straggler "*"explained by input"*) ;;
*) echo "FAIL: the first finding does not blame the input: $first"; exit 1 ;;
esac
echo "PASS: the demo blames the input pipeline first"
