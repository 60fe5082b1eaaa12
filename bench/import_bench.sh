#!/bin/sh
# import_bench.sh - throughput and memory of `scaleprof import kineto`.
#
# Generates synthetic Kineto traces of 100 MB and 1 GB (a python3 generator
# streaming kernels, runtime calls, copies, steps and DataLoader ranges to a
# file, never holding it), imports each with --stats, prints JSON MB/s and
# peak RSS, and deletes the files.  Peak RSS should be the same for both
# sizes: the importer streams.
#
# Then files in parallel: 1, 2 and 16 files of PARALLEL_MB (default 32)
# each, one call per count (one thread per file up to the CPUs), total
# JSON MB/s and peak RSS, which should grow by under 10 MiB a thread
# (16 files are also run with --jobs 16 where there are fewer CPUs).
# The files are one generated body behind a first line naming a
# different pid each, so their outputs do not collide.
#
#   SCALEPROF=build/analyzer/scaleprof bench/import_bench.sh [SIZES_MB...]
#   PARALLEL_FILES="1 2 16" PARALLEL_MB=32 (PARALLEL_FILES= to skip)
# or `meson test -C build --benchmark import`.
set -eu
SCALEPROF=${SCALEPROF:-scaleprof}
[ $# -gt 0 ] || set -- 100 1000
work=$(mktemp -d "${TMPDIR:-/tmp}/sprof-import-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

generate() { # $1: target MB, $2: output file, $3: "body" for the events alone
    python3 - "$1" "$2" "${3:-}" <<'PY'
import sys
target = int(sys.argv[1]) * 1000 * 1000
STEP_US, KERNELS_PER_STEP = 20000, 400
with open(sys.argv[2], "w") as f:
    if sys.argv[3] != "body":
        f.write('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},\n'
                ' "traceEvents": [\n')
    written, step, corr = 0, 0, 0
    first = True
    while written < target:
        t0 = 1000000 + step * STEP_US
        lines = ['{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 100, "tid": 100, "ts": %d, "dur": %d}' % (step, t0, STEP_US),
                 '{"ph": "X", "cat": "cpu_op", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 100, "tid": 100, "ts": %d, "dur": 3000}' % (t0 + 1)]
        for k in range(KERNELS_PER_STEP):
            corr += 1
            ts = t0 + 3000 + k * 40
            lines.append('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": %d.125, "dur": 12.5, "args": {"External id": %d, "Input Dims": [[64, 64], [64, 64]]}}' % (ts, corr))
            lines.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": %d.250, "dur": 4.75, "args": {"correlation": %d, "cbid": 211}}' % (ts, corr))
            lines.append('{"ph": "X", "cat": "kernel", "name": "void gemm_kernel_%d<float>(float const*, float*, int)", "pid": 0, "tid": 7, "ts": %d.500, "dur": 30.333, "args": {"device": 0, "stream": 7, "correlation": %d, "grid": [80, 1, 1], "block": [256, 1, 1]}}' % (k % 50, ts + 5, corr))
        corr += 1
        lines.append('{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 40, "ts": %d, "dur": 900, "args": {"device": 0, "stream": 40, "correlation": %d, "Collective name": "allreduce", "In msg nelems": 1048576, "Group size": 8, "dtype": "Float", "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}}' % (t0 + 19000, corr))
        chunk = ("" if first else ",\n") + ",\n".join(lines)
        first = False
        f.write(chunk)
        written += len(chunk)
        step += 1
    f.write("\n]}\n")
PY
}

for mb in "$@"; do
    json="$work/trace_${mb}MB.json"
    generate "$mb" "$json"
    size=$(wc -c < "$json")
    echo "== ${mb} MB synthetic trace ($size bytes)"
    "$SCALEPROF" import kineto --stats -q "$json" -o "$work/out_$mb"
    rm -rf "$json" "$work/out_$mb"
done

PARALLEL_FILES=${PARALLEL_FILES-1 2 16}
PARALLEL_MB=${PARALLEL_MB:-32}
[ -n "$PARALLEL_FILES" ] || exit 0
generate "$PARALLEL_MB" "$work/body.json" body
max=0
for n in $PARALLEL_FILES; do [ "$n" -gt "$max" ] && max=$n; done
i=1
while [ "$i" -le "$max" ]; do
    { printf '{"distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d},\n "traceEvents": [\n' \
          $((i - 1)) "$max"
      printf '{"ph": "X", "cat": "cpu_op", "name": "start", "pid": %d, "tid": 1, "ts": 1, "dur": 1},\n' $((1000 + i))
      cat "$work/body.json"; } >"$work/rank$i.json"
    i=$((i + 1))
done
rm -f "$work/body.json"
echo "== files in parallel, ${PARALLEL_MB} MB each, $(getconf _NPROCESSORS_ONLN) CPUs"
for n in $PARALLEL_FILES; do
    files=$(i=1; while [ "$i" -le "$n" ]; do echo "$work/rank$i.json"; i=$((i + 1)); done)
    # shellcheck disable=SC2086
    "$SCALEPROF" import kineto --stats -q $files -o "$work/par_$n" | tail -1 | sed "s/^stats:/$n file(s):/"
    rm -rf "$work/par_$n"
    # More files than CPUs: also one thread per file, for the memory per thread.
    if [ "$n" -gt "$(getconf _NPROCESSORS_ONLN)" ]; then
        # shellcheck disable=SC2086
        "$SCALEPROF" import kineto --stats -q --jobs "$n" $files -o "$work/par_$n" | tail -1 |
            sed "s/^stats:/$n file(s), --jobs $n:/"
        rm -rf "$work/par_$n"
    fi
done
