#!/bin/sh
# A user without GPUs tries the PyTorch example: two ranks on CPU tensors
# (gloo), DataLoader workers reading the dataset from disk, meeting through
# a rendezvous directory.  It must train and print its throughput line.
set -eu
PY=${PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "SKIP: $PY has no torch module (Debian: apt-get install python3-torch)"
    exit 77
fi
WORK=${SCENARIO_WORKDIR:-.}/pytorch_cpu
rm -rf "$WORK"
mkdir -p "$WORK/rv"
pids=""
for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r OMP_NUM_THREADS=1 "$PY" "$TRAIN_DDP" --cpu --steps 6 \
        --width 128 --layers 2 --files 4 --batch 16 --workers 1 --data "$WORK/data" \
        --rendezvous "$WORK/rv" >"$WORK/rank$r.log" 2>&1 &
    pids="$pids $!"
done
rc=0
for p in $pids; do wait "$p" || rc=1; done
cat "$WORK/rank0.log"
[ "$rc" = 0 ] || { echo "FAIL: a rank exited non-zero"; cat "$WORK/rank1.log"; exit 1; }
grep -q '^train_ddp: 2 ranks, batch 16 per rank, 1 workers: [0-9.]* ms/step' "$WORK/rank0.log" ||
    { echo "FAIL: rank 0 printed no throughput line"; exit 1; }
echo "PASS: two CPU ranks trained through DataLoader workers"
