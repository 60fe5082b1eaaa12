#!/bin/sh
# The README's first command ends in examples/demo.sh: it must run the
# simulated 4-GPU job under the profiler and print a diagnosis whose first
# finding is the slow input pipeline.
set -u
WORK=${SCENARIO_WORKDIR:-.}/demo
rm -rf "$WORK"
mkdir -p "$(dirname "$WORK")"
DEMO_DIR=$WORK "$DEMO" "$BUILD_ROOT" >"$WORK.log" 2>&1
rc=$?
cat "$WORK.log"
[ $rc -eq 0 ] || { echo "FAIL: demo.sh exited $rc"; exit 1; }
grep -q '^1\. input_pipeline \[\(moderate\|high\)\]' "$WORK.log" ||
    { echo "FAIL: the first finding is not input_pipeline"; exit 1; }
echo "PASS: the demo names the input pipeline first"
