#!/bin/sh
# test_dump.sh - a user inspects traces with `scaleprof dump`:
#   - --json prints one JSON object per line: the header first, then each
#     event with its type, time, fields by name, strings resolved (a path
#     with quotes, a tab and a non-ASCII letter survives the round trip) and
#     enum names beside their numbers;
#   - a trace left by a killed process dumps the same events;
#   - a trace of the previous version (3) dumps the events this one writes;
#   - a file that is not a trace gets one clear line naming it, exit 1;
#   - --help explains the verb.
# Needs SCALEPROF_BIN, MAKE_TRACE and FORMAT_DATA (tests/format/data) from meson.
set -eu
: "${SCALEPROF_BIN:?}" "${MAKE_TRACE:?}" "${FORMAT_DATA:?}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/sprof-dump-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

"$MAKE_TRACE" "$dir/closed.sprof"
"$MAKE_TRACE" "$dir/killed.sprof" crash

for f in closed killed; do
  "$SCALEPROF_BIN" dump --json "$dir/$f.sprof" > "$dir/$f.jsonl" 2> "$dir/$f.err"
  /usr/bin/env python3 - "$dir/$f.jsonl" "$f" <<'PY' || fail "JSON of $f trace"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
objs = [json.loads(l) for l in lines]
hdr, events = objs[0], objs[1:]
assert hdr["type"] == "header", hdr
assert hdr["host"] == "gpu-node-3" and hdr["rank"] == 1 and hdr["world_size"] == 8, hdr
assert hdr["closed"] == (sys.argv[2] == "closed"), hdr
assert [e["type"] for e in events] == ["io", "gpu", "nccl", "marker"], events
io, gpu, nccl, marker = events
assert io["path"] == '/data/img "001"\\\t\u00e9.jpg', io["path"]
assert io["op"] == 3 and io["op_name"] == "read" and io["fd_kind_name"] == "file", io
assert io["t"] == 1000000 and io["dur"] == 2500 and io["ret"] == 4096 and io["tid"] > 0, io
assert gpu["name"] == "_Z6matmulPfS_S_i" and gpu["kind_name"] == "kernel", gpu
assert gpu["correlation"] == 42, gpu
assert nccl["op_name"] == "allreduce" and nccl["peer"] == -1 and nccl["comm"] == 0xabcdef, nccl
assert marker["name"] == "step 3" and marker["kind_name"] == "push", marker
print("ok: %s trace: %d JSON lines parse, fields and strings as recorded" % (sys.argv[2], len(objs)))
PY
  [ ! -s "$dir/$f.err" ] || fail "no damage expected in $f: $(cat "$dir/$f.err")"
done

# Traces of version 3 (IO events without repeats), kept as make_trace
# wrote them at that version, closed and killed: they dump the events this
# build's make_trace writes (the same program), line for line but the
# process and thread ids.
"$MAKE_TRACE" "$dir/small-closed.sprof" small
"$MAKE_TRACE" "$dir/small-killed.sprof" crash small
events() { "$SCALEPROF_BIN" dump "$1" | grep -v '^#' | awk '{$2 = ""; print}'; }
for f in closed killed; do
  "$SCALEPROF_BIN" dump --header-only "$FORMAT_DATA/v3-$f.sprof" | grep -q '^#   version 3 ' ||
    fail "v3-$f.sprof is a version 3 trace"
  events "$FORMAT_DATA/v3-$f.sprof" > "$dir/v3-$f.out"
  events "$dir/small-$f.sprof" > "$dir/small-$f.out"
  [ "$(grep -c ' io ' "$dir/v3-$f.out")" -gt 100 ] || fail "v3-$f.sprof holds reads: $(head -3 "$dir/v3-$f.out")"
  cmp -s "$dir/v3-$f.out" "$dir/small-$f.out" || fail "version 3 and this version differ ($f): $(diff "$dir/v3-$f.out" "$dir/small-$f.out" | head -5)"
done
echo "ok: version 3 traces, closed and killed, read as this version's"

"$SCALEPROF_BIN" dump "$dir/closed.sprof" > "$dir/text.out"
grep -q '^# .*closed.sprof' "$dir/text.out" || fail "text header names the file"
grep -q ' io .*op=read .*path="/data/img' "$dir/text.out" || fail "text event line: $(cat "$dir/text.out")"
[ "$("$SCALEPROF_BIN" dump --header-only "$dir/closed.sprof" | grep -vc '^#')" = 0 ] || fail "--header-only"
grep -q '^# 4 events from 1 frames and 0 chunks left in slots; 0 damaged' "$dir/text.out" || fail "summary line"
"$SCALEPROF_BIN" dump "$dir/killed.sprof" | grep -q '^# 4 events from 0 frames and 1 chunks left in slots' || fail "killed summary"
echo "ok: text output, summary line and --header-only"

printf 'epoch 1 loss 2.3\n' > "$dir/train.log"
: > "$dir/empty.sprof"
for f in train.log empty.sprof; do
  if "$SCALEPROF_BIN" dump "$dir/$f" > "$dir/out" 2> "$dir/err"; then
    fail "dump of $f must fail"
  fi
  [ "$(wc -l < "$dir/err")" = 1 ] || fail "one line for $f: $(cat "$dir/err")"
  grep -q "$f: not a scaleprof trace" "$dir/err" || fail "message for $f: $(cat "$dir/err")"
done
echo "ok: foreign files: exit 1, '$(cat "$dir/err")'"

"$SCALEPROF_BIN" dump --help | grep -q -- '--json' || fail "--help"
echo "ok: --help"
