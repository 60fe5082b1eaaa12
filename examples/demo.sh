#!/usr/bin/env bash
# demo.sh BUILD [--gpu] - profile a 4-GPU data-parallel job whose input
# pipeline is too slow, and print scaleprof's diagnosis.
#
# By default the job runs on simulated GPUs (BUILD/sim), so the demo works on
# any machine; --gpu runs the same example on this machine's real GPUs, one
# rank per GPU listed by nvidia-smi.  The example is examples/ddp_train with
# one loader worker per rank spending 30 ms on each batch, while the GPU
# needs about 12 ms per step: the report should name the input pipeline
# and suggest more loader workers.
#
# The work directory (dataset, traces) is $DEMO_DIR, or a fresh temporary
# one that is kept so its traces can be explored afterwards.
set -euo pipefail

usage() {
    echo "usage: $0 BUILD_DIR [--gpu]" >&2
    exit 2
}

[ $# -ge 1 ] || usage
BUILD=$(readlink -f "$1")
shift
GPU=0
for a in "$@"; do
    case "$a" in
    --gpu) GPU=1 ;;
    *) usage ;;
    esac
done

SCALEPROF=$BUILD/analyzer/scaleprof
PRELOAD=$BUILD/preload/libscaleprof.so
DDP_TRAIN=$BUILD/examples/ddp_train
SIM=$BUILD/sim

NPROC=4
# The slow input pipeline: one worker per rank, 30 ms of preparation per
# batch, against about 12 ms of GPU work per step (batch 16).
JOB_FLAGS=(--steps 12 --batch 16 --workers 1 --worker-cost-ms 30 --read-kb 256
           --grad-mb 16 --buckets 4 --overlap)

# Names every missing piece at once, so that a half-built tree says what
# to build rather than failing somewhere inside the job.
check_built() {
    local missing=()
    [ -x "$SCALEPROF" ] || missing+=("the scaleprof command ($SCALEPROF)")
    [ -f "$PRELOAD" ] || missing+=("the recorder ($PRELOAD)")
    [ -x "$DDP_TRAIN" ] || missing+=("the example ($DDP_TRAIN: needs nvcc and NCCL)")
    if [ "$GPU" = 0 ]; then
        [ -f "$SIM/libcudart.so.13" ] && [ -f "$SIM/libnccl.so.2" ] ||
            missing+=("the simulated GPUs ($SIM/libcudart.so.13, libnccl.so.2)")
    fi
    if [ -x "$SCALEPROF" ]; then
        local verb out
        for verb in run report; do
            out=$("$SCALEPROF" "$verb" --help 2>&1 || true)
            if grep -q "not built yet" <<<"$out"; then
                missing+=("the 'scaleprof $verb' verb")
            fi
        done
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        echo "demo: cannot run yet; missing:" >&2
        printf '  - %s\n' "${missing[@]}" >&2
        exit 1
    fi
}

gpu_count() {
    command -v nvidia-smi >/dev/null || {
        echo "demo: --gpu needs nvidia-smi (no NVIDIA driver here?)" >&2
        exit 1
    }
    local n
    n=$(nvidia-smi -L | grep -c '^GPU ' || true)
    [ "$n" -ge 1 ] || { echo "demo: nvidia-smi lists no GPU" >&2; exit 1; }
    echo "$n"
}

check_built
WORK=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/scaleprof-demo.XXXXXX")}
mkdir -p "$WORK"
TRACE=$WORK/trace
rm -rf "$TRACE"

RUN=("$SCALEPROF" run -o "$TRACE")
if [ "$GPU" = 1 ]; then
    NPROC=$(gpu_count)
    echo "demo: profiling ddp_train on $NPROC real GPUs"
else
    RUN+=(--sim)
    export LD_LIBRARY_PATH=$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "demo: profiling ddp_train on $NPROC simulated GPUs (slow input pipeline: 1 loader worker per rank)"
fi
RUN+=(--nproc "$NPROC" -- "$DDP_TRAIN" --data "$WORK/data" "${JOB_FLAGS[@]}")

echo "\$ ${RUN[*]}"
"${RUN[@]}"
echo
echo "\$ scaleprof report $TRACE"
"$SCALEPROF" report "$TRACE"
echo
echo "demo: traces kept in $TRACE (try: scaleprof report $TRACE --json)"
