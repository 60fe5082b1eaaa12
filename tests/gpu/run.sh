#!/usr/bin/env bash
# tests/gpu/run.sh - validate scaleprof on a real GPU: CUPTI, NCCL, PyTorch,
# overhead.  Everything else is proven on the simulated GPUs; this script is
# the one place where the real driver, CUPTI, NCCL and PyTorch meet the
# preload.
#
#   tests/gpu/run.sh [--sim] [BUILD]
#
# BUILD (default ./build) is built beforehand, on this machine or on another
# one and carried here: the script builds nothing.  Logs and traces go under
# $OUT (default: a fresh temporary directory); a table of results is printed
# last, and the exit status is 0 only when every check passed.
#
# --sim rehearses the same checks on the simulated GPUs (BUILD/sim) with
# PyTorch on the CPU: it proves the script's plumbing, not the GPU, and is
# part of the test suite so that the script is ready when a GPU is.
#
# Checks:
#   libs       the preload and the command load here (ldd finds every library)
#   ddp_cupti  examples/ddp_train, 1 rank, under the preload: CUPTI kernel
#              records with real names, every all-reduce matched
#   ddp_time   the report's collective time against the example's own CUDA
#              event measurement of its all-reduces
#   torch      PyTorch DDP (world size 1) with DataLoader workers: a trace from
#              the main process and each worker; the report's steps = steps run
#   overhead   step time with the preload against without, medians of runs
#              alternated in one go (target: under 1%)
#   profiler   the same run with torch.profiler active: the job is unharmed, and
#              the preload either shares CUPTI or says it is taken and falls back
set -uo pipefail

SIM=0
BUILD=build
for a in "$@"; do
    case "$a" in
    --sim) SIM=1 ;;
    -h | --help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) BUILD=$a ;;
    esac
done
BUILD=$(readlink -f "$BUILD")
HERE=$(dirname "$(readlink -f "$0")")
TOP=$(readlink -f "$HERE/../..")
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
# A rerun into the same $OUT starts from empty traces, not on top of the last.
rm -rf "$OUT"/ddp "$OUT"/torch-[0-9]* "$OUT"/profiler "$OUT"/*.log "$OUT"/*.json "$OUT"/*.jsonl
SCALEPROF=$BUILD/analyzer/scaleprof
PRELOAD=$BUILD/preload/libscaleprof.so
DDP=$BUILD/examples/ddp_train
TRAIN=$TOP/examples/pytorch/train_ddp.py
RUNS=${GPU_TEST_RUNS:-3}        # alternated runs per side for the overhead
TORCH_STEPS=${GPU_TEST_STEPS:-60}
read -r -a TORCH_MODEL <<<"${GPU_TEST_MODEL:-}"   # e.g. "--width 128 --layers 2" for a quick rehearsal
if [ "$SIM" = 1 ]; then
    PY=${PYTHON:-/usr/bin/python3}
    SIMFLAG=(--sim)
    TORCHFLAG=(--cpu)
else
    PY=${PYTHON:-python3}
    SIMFLAG=()
    TORCHFLAG=()
fi

declare -a ROWS=()
FAILED=0
record() { # check result detail
    ROWS+=("$(printf '%-10s %-5s %s' "$1" "$2" "$3")")
    [ "$2" = ok ] || [ "$2" = info ] || FAILED=1
    echo "== $1: $2 $3"
}

# --- environment ---------------------------------------------------------
{
    date -u
    if [ "$SIM" = 1 ]; then
        echo "GPU: simulated ($BUILD/sim)"
    else
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
        nvidia-smi 2>&1 | sed -n '1,4p'
    fi
    "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
        "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")' 2>&1
    command -v nvcc >/dev/null && nvcc --version | tail -2
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# --- libs: the carried build loads here -----------------------------------
ldd "$PRELOAD" "$SCALEPROF" >"$OUT/ldd.txt" 2>&1
if grep -q "not found" "$OUT/ldd.txt"; then
    record libs FAIL "$(grep 'not found' "$OUT/ldd.txt" | sort -u | awk '{print $1}' | tr '\n' ' ')"
else
    record libs ok "libscaleprof.so and scaleprof resolve every library"
fi

# Runs the command under the profiler into $OUT/<name>; the job's output in
# $OUT/<name>.log.
profiled() { # name -- cmd... (a shell function of this script is fine)
    local name=$1
    shift 2
    if [ "$(type -t "$1")" = function ]; then
        export -f "$1"
        export PY OUT WORKERS
        export TORCHFLAG_S="${TORCHFLAG[*]}" TORCH_MODEL_S="${TORCH_MODEL[*]}"
        set -- bash -c 'TORCHFLAG=($TORCHFLAG_S); TORCH_MODEL=($TORCH_MODEL_S); "$@"' bash "$@"
    fi
    "$SCALEPROF" run -o "$OUT/$name" "${SIMFLAG[@]}" -- "$@" >"$OUT/$name.log" 2>&1
}

json_of() { "$SCALEPROF" report "$@" --json 2>>"$OUT/report-errors.log"; }

# --- ddp_train: CUPTI records, names, collectives --------------------------
DDP_STEPS=20
DDP_BUCKETS=4
if profiled ddp -- "$DDP" --data "$OUT/ddp-data" --steps $DDP_STEPS --batch 32 --workers 2 \
    --grad-mb 64 --buckets $DDP_BUCKETS; then
    main=$(grep -l . "$OUT"/ddp/*/*.sprof | head -1)
    for f in "$OUT"/ddp/*/*.sprof; do
        "$SCALEPROF" dump --json "$f"
    done >"$OUT/ddp-dump.jsonl" 2>"$OUT/ddp-dump.err"
    "$PY" - "$OUT/ddp-dump.jsonl" >"$OUT/ddp-kernels.txt" <<'EOF'
import json, sys
kernels, nccl_kernels, names, nccl_calls = 0, 0, set(), 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("type") == "gpu" and e.get("kind_name", "") in ("kernel", "nccl_kernel"):
        kernels += 1
        names.add(e.get("name", ""))
        nccl_kernels += e.get("name", "").startswith(("ncclDevKernel", "ncclKernel"))
    if e.get("type") == "nccl" and e.get("op_name") == "allreduce":
        nccl_calls += 1
print(kernels, nccl_kernels, nccl_calls, len(names))
print("\n".join(sorted(names)[:20]))
EOF
    read -r kernels nccl_kernels nccl_calls nnames <"$OUT/ddp-kernels.txt"
    json_of "$OUT/ddp" --skip 3 >"$OUT/ddp-report.json"
    "$PY" - "$OUT/ddp-report.json" "$OUT/ddp.log" $DDP_STEPS $DDP_BUCKETS >"$OUT/ddp-check.txt" <<'EOF'
import json, re, sys
rep = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
steps, buckets = int(sys.argv[3]), int(sys.argv[4])
calls = sum(c["calls"] for c in rep["collectives"] if c["op"] == "allreduce")
incomplete = sum(c.get("incomplete", 0) for c in rep["collectives"])
per_step_ms = sum(c["calls"] * (c["transfer_ms"] + c["wait_ms"]) for c in rep["collectives"]) / max(1, rep["steps"]["analyzed"])
m = re.search(r"allreduce \(CUDA events\): [\d.]+ ms total, ([\d.]+) ms/step", log)
own = float(m.group(1)) if m else -1.0
print(rep["steps"]["count"], calls, incomplete, "%.3f" % per_step_ms, "%.3f" % own)
EOF
    read -r rsteps rcalls rincomplete rms ownms <"$OUT/ddp-check.txt"
    want_calls=$(( (DDP_STEPS - 3) * DDP_BUCKETS ))
    if [ "${kernels:-0}" -gt 0 ] && [ "${nccl_kernels:-0}" -gt 0 ] && [ "$rsteps" = $DDP_STEPS ] &&
        [ "$rcalls" = "$want_calls" ] && [ "$rincomplete" = 0 ]; then
        record ddp_cupti ok "$kernels kernels ($nnames names, $nccl_kernels NCCL), $nccl_calls allreduce calls, report: $rsteps steps, $rcalls matched collectives"
    else
        record ddp_cupti FAIL "kernels=$kernels nccl_kernels=$nccl_kernels steps=$rsteps/$DDP_STEPS collectives=$rcalls/$want_calls incomplete=$rincomplete"
    fi
    # The example times its own all-reduces with CUDA events; the report's
    # per-step collective time must be of the same size (GPU clocks and host
    # clocks agree to well under the tolerance).
    if "$PY" -c "import sys; a, b = $rms, $ownms; sys.exit(0 if b > 0 and abs(a - b) <= 0.25 * b + 0.05 else 1)"; then
        record ddp_time ok "collective time ${rms} ms/step, example's CUDA events ${ownms} ms/step"
    else
        record ddp_time FAIL "collective time ${rms} ms/step, example's CUDA events ${ownms} ms/step"
    fi
else
    record ddp_cupti FAIL "ddp_train failed under the preload: see $OUT/ddp.log"
    record ddp_time FAIL "no run"
fi

# --- PyTorch DDP with DataLoader workers ------------------------------------
# World size 1 through the environment, as torchrun would set it; the same
# launch with and without the preload.
WORKERS=2
torch_env() {
    env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
        MASTER_PORT=$((29500 + RANDOM % 1000)) "$PY" "$@" --workers $WORKERS --batch 64 \
        --files 32 --data "$OUT/torch-data" "${TORCHFLAG[@]}" "${TORCH_MODEL[@]}"
}
step_ms() { sed -n 's/.*: \([0-9.]*\) ms\/step.*/\1/p' "$1" | tail -1; }

with=()
without=()
torch_ok=1
for i in $(seq 1 "$RUNS"); do
    if torch_env "$TRAIN" --steps "$TORCH_STEPS" >"$OUT/torch-plain-$i.log" 2>&1; then
        without+=("$(step_ms "$OUT/torch-plain-$i.log")")
    else
        torch_ok=0
    fi
    rm -rf "$OUT/torch-$i"
    if profiled "torch-$i" -- torch_env "$TRAIN" --steps "$TORCH_STEPS"; then
        with+=("$(step_ms "$OUT/torch-$i.log")")
    else
        torch_ok=0
    fi
done

if [ "$torch_ok" = 1 ]; then
    files=$(find "$OUT/torch-1" -name '*.sprof' | wc -l)
    json_of "$OUT/torch-1" >"$OUT/torch-report.json"
    "$PY" - "$OUT/torch-report.json" "$OUT/torch-1" "$SCALEPROF" >"$OUT/torch-check.txt" <<'EOF'
import json, subprocess, sys, glob
# On the CPU (--sim) a job with no GPU activity gets the host-side view
# ("kind": "host"), which has iterations, not steps.
text = open(sys.argv[1]).read()
rep = json.loads(text) if text.strip() else {"steps": {"count": 0, "detected_by": "no-GPU-refused"}}
if rep.get("kind") == "host":
    r = rep["per_rank"][0] if rep["per_rank"] else {"iterations": 0, "iterations_from": None}
    rep = {"steps": {"count": r["iterations"], "detected_by": "host:" + str(r["iterations_from"]).replace(" ", "_")}}
# Processes that recorded file reads of the dataset are the loader workers.
readers = 0
for f in glob.glob(sys.argv[2] + "/*/*.sprof"):
    out = subprocess.run([sys.argv[3], "dump", "--json", f], capture_output=True, text=True).stdout
    if any('"type":"io"' in l.replace(" ", "") and "shard-" in l for l in out.splitlines()):
        readers += 1
print(rep["steps"]["count"], rep["steps"]["detected_by"], readers)
EOF
    read -r tsteps tby treaders <"$OUT/torch-check.txt"
    if [ "$SIM" = 1 ]; then
        # On the CPU there is no NVTX and no NCCL: steps cannot be found.
        steps_ok=1
    else
        steps_ok=$([ "$tsteps" = "$TORCH_STEPS" ] && echo 1 || echo 0)
    fi
    if [ "$treaders" -ge $WORKERS ] && [ "$steps_ok" = 1 ]; then
        record torch ok "$files trace files, $treaders processes read the dataset (workers: $WORKERS), report: $tsteps steps by $tby"
    else
        record torch FAIL "$files trace files, $treaders dataset readers (want >= $WORKERS), steps $tsteps/$TORCH_STEPS by $tby"
    fi
    overhead=$("$PY" -c "
import statistics as s
a = [float(x) for x in '${with[*]}'.split()]
b = [float(x) for x in '${without[*]}'.split()]
print('%.2f' % (100.0 * (s.median(a) / s.median(b) - 1.0)))")
    detail="median step ${with[*]} ms with, ${without[*]} ms without: ${overhead}%"
    if [ "$SIM" = 1 ]; then
        record overhead info "$detail (CPU run on a shared machine: not judged)"
    elif "$PY" -c "import sys; sys.exit(0 if $overhead < 1.0 else 1)"; then
        record overhead ok "$detail"
    else
        record overhead FAIL "$detail"
    fi
else
    record torch FAIL "PyTorch run failed: see $OUT/torch-*.log"
    record overhead FAIL "no run"
fi

# --- torch.profiler active at the same time --------------------------------
PROFILE_RUN="$OUT/profiler-run.py"
cat >"$PROFILE_RUN" <<EOF
import runpy, sys, torch
acts = [torch.profiler.ProfilerActivity.CPU]
if torch.cuda.is_available():
    acts.append(torch.profiler.ProfilerActivity.CUDA)
sys.argv = ["$TRAIN"] + sys.argv[1:]
with torch.profiler.profile(activities=acts) as prof:
    runpy.run_path("$TRAIN", run_name="__main__")
n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
print("torch.profiler: %d events, %d on the GPU" % (len(prof.events()), n))
EOF
if profiled profiler -- torch_env "$PROFILE_RUN" --steps 20; then
    said=$(grep -i "cupti" "$OUT/profiler.log" | head -1)
    prof=$(grep "torch.profiler:" "$OUT/profiler.log" | tail -1)
    record profiler ok "job exit 0; ${prof:-no profiler summary}; preload: ${said:-said nothing about CUPTI}"
else
    record profiler FAIL "job failed with torch.profiler active: see $OUT/profiler.log"
fi

echo
echo "scaleprof GPU validation ($([ "$SIM" = 1 ] && echo simulated || echo real) GPU), logs in $OUT"
printf '%s\n' "${ROWS[@]}" | tee "$OUT/summary.txt"
exit $FAILED
