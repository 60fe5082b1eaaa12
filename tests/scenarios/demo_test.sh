#!/bin/sh
# The README's first command ends in examples/demo.sh: it must run the
# simulated 4-GPU job under the profiler and print a diagnosis that blames
# the input pipeline first: an input_pipeline finding of moderate or high
# severity, or a straggler whose excess is waiting for input and whose
# first try is more loader workers.  With one slow loader per rank, the
# ranks whose loaders started last keep the others waiting at every
# all-reduce; when fixing those ranks saves about what fixing the input
# everywhere does, the straggler's finding holds the input time (one
# finding per cause: docs/analysis.md) and no input_pipeline finding is
# listed beside it.  Which of the two it is depends on that start-up lag.
set -u
WORK=${SCENARIO_WORKDIR:-.}/demo
rm -rf "$WORK"
mkdir -p "$(dirname "$WORK")"
DEMO_DIR=$WORK "$DEMO" "$BUILD_ROOT" >"$WORK.log" 2>&1
rc=$?
cat "$WORK.log"
[ $rc -eq 0 ] || { echo "FAIL: demo.sh exited $rc"; exit 1; }
first=$(grep -A2 '^1\. ' "$WORK.log")
case "$first" in
"1. input_pipeline [moderate]"* | "1. input_pipeline [high]"*) ;;
"1. straggler "*"excess is waiting for input"*"first try: speed up this rank's input: more loader workers"*) ;;
*) echo "FAIL: the first finding does not blame the input: $first"; exit 1 ;;
esac
echo "PASS: the demo blames the input pipeline first"
