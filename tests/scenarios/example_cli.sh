#!/bin/sh
# A user runs examples/ddp_train by hand: help, a mistyped flag, a rank
# started without a rendezvous directory, and a one-GPU run on the sim.
# Each must say what happened and exit with the status that says it.
set -u
WORK=${SCENARIO_WORKDIR:-.}/example_cli
rm -rf "$WORK"
mkdir -p "$WORK"
fail() { echo "FAIL: $*"; exit 1; }

"$DDP_TRAIN" --help >"$WORK/help.txt" 2>&1 || fail "--help exited non-zero"
grep -q -- '--worker-cost-ms' "$WORK/help.txt" || fail "--help does not list --worker-cost-ms"
echo "ok: --help lists the knobs"

"$DDP_TRAIN" --no-such-flag >"$WORK/bad.txt" 2>&1
[ $? -eq 2 ] || fail "a mistyped flag did not exit 2"
echo "ok: a mistyped flag exits 2"

env -u SIM_RENDEZVOUS -u SCALEPROF_RENDEZVOUS LD_LIBRARY_PATH="$SIM_LIBDIR" RANK=1 WORLD_SIZE=2 \
    "$DDP_TRAIN" --steps 1 --data "$WORK/data" >"$WORK/norv.txt" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "rank 1 with no rendezvous exited $rc, not 1"
grep -q 'rendezvous' "$WORK/norv.txt" || fail "no message naming the rendezvous: $(cat "$WORK/norv.txt")"
echo "ok: a rank with no rendezvous directory says so: $(cat "$WORK/norv.txt")"

LD_LIBRARY_PATH="$SIM_LIBDIR" "$DDP_TRAIN" --steps 3 --batch 4 --workers 1 \
    --data "$WORK/data" >"$WORK/one.txt" 2>&1 || fail "one rank on the sim failed: $(cat "$WORK/one.txt")"
grep -q '^median step: [0-9.]* ms' "$WORK/one.txt" || fail "no summary: $(cat "$WORK/one.txt")"
[ "$(ls "$WORK/data" | grep -c '^shard-.*\.bin$')" -eq 16 ] || fail "the dataset was not created"
echo "ok: one rank trains on the sim: $(grep '^median' "$WORK/one.txt")"
echo "PASS"
