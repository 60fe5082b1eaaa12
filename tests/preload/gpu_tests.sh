#!/usr/bin/env bash
# gpu_tests.sh STORY - one user story of the recorder's GPU side, on the
# stand-in CUDA libraries.  Meson passes the built programs:
#   SCALEPROF_BIN  the scaleprof command (its `run` verb attaches the recorder)
#   GPU_LOOP       the data-parallel job (tests/preload/gpu_loop.c)
#   CHECK_TRACE    the trace checker (tests/preload/check_trace.c)
#   SIM_LIBDIR     the stand-in libraries, for runs without the recorder
# Exit 0 when the story holds, 1 when it does not.
set -u

story=${1:?story}
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-preload-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
export SCALEPROF_CPU_HZ=0

fail() { echo "FAIL: $*"; exit 1; }

# [NODES=M] run_job OUT NPROC ARGS... : the job under `scaleprof run --sim`
# (over M simulated nodes when NODES is set), with the
# sim's ground truth in OUT/truth; stdout in OUT/stdout, stderr in OUT/stderr.
run_job() {
    local out=$1 nproc=$2
    shift 2
    mkdir -p "$out/truth"
    SIM_TRUTH="$out/truth" "$SCALEPROF_BIN" run --sim --nproc "$nproc" --nnodes "${NODES:-1}" \
        -o "$out/trace" -- "$GPU_LOOP" "$@" >"$out/stdout" 2>"$out/stderr"
}

show() { echo "--- $1"; cat "$1"; }

case $story in
gpu_collectives_match_truth)
    run_job "$work/a" 4 --steps 6 || { show "$work/a/stderr"; fail "the job failed under the recorder"; }
    "$CHECK_TRACE" collectives "$work/a/trace" 4 || fail "collectives do not match across ranks"
    "$CHECK_TRACE" cupti "$work/a/trace" "$work/a/truth" 1 || fail "GPU times differ from the truth"
    ;;

gpu_both_clocks)
    # The same job on each clock: both traces read by the same reader, GPU
    # times against the truth, and dump says which clock each used.
    for clk in tsc monotonic; do
        SCALEPROF_CLOCK=$clk run_job "$work/$clk" 2 --steps 6 ||
            { show "$work/$clk/stderr"; fail "the job failed on the $clk clock"; }
        "$CHECK_TRACE" collectives "$work/$clk/trace" 2 || fail "$clk: collectives do not match"
        "$CHECK_TRACE" cupti "$work/$clk/trace" "$work/$clk/truth" 1 || fail "$clk: GPU times differ from the truth"
        f=$(find "$work/$clk/trace" -name '*.sprof' | head -1)
        "$SCALEPROF_BIN" dump "$f" | grep -q "^#   clock $clk (SCALEPROF_CLOCK=$clk)" ||
            { "$SCALEPROF_BIN" dump "$f" | head -12; fail "dump does not name the $clk clock"; }
    done
    ;;

gpu_split_communicators)
    run_job "$work/a" 4 --steps 3 --split || { show "$work/a/stderr"; fail "the job failed"; }
    "$CHECK_TRACE" collectives "$work/a/trace" 4 | tee "$work/check" || fail "split collectives do not match"
    grep -q "over 3 communicators" "$work/check" || fail "expected the world and two halves: 3 communicators"
    ;;

gpu_no_cupti_event_timing)
    SCALEPROF_CUPTI_LIB=/nonexistent/libcupti.so.13 run_job "$work/a" 4 --steps 6 ||
        { show "$work/a/stderr"; fail "the job failed without CUPTI"; }
    grep -q "CUPTI not available" "$work/a/stderr" || { show "$work/a/stderr"; fail "no word that CUPTI is missing"; }
    "$CHECK_TRACE" collectives "$work/a/trace" 4 || fail "collectives do not match across ranks"
    "$CHECK_TRACE" events "$work/a/trace" "$work/a/truth" 5 || fail "event-timed collectives off"
    ;;

gpu_cupti_taken)
    run_job "$work/a" 2 --steps 6 --subscribe-cupti ||
        { show "$work/a/stderr"; fail "the job failed when CUPTI was taken"; }
    n=$(grep -c "CUPTI is in use by another tool" "$work/a/stderr")
    [ "$n" = 2 ] || { show "$work/a/stderr"; fail "expected the CUPTI message once per rank (2), saw $n"; }
    "$CHECK_TRACE" events "$work/a/trace" "$work/a/truth" 5 || fail "fallback timing off"
    ;;

gpu_job_unchanged)
    # the same job, once bare on the stand-in libraries, once recorded
    LD_LIBRARY_PATH="$SIM_LIBDIR" "$GPU_LOOP" --steps 4 --check-errno >"$work/bare.out" 2>"$work/bare.err"
    bare_rc=$?
    "$SCALEPROF_BIN" run --sim -o "$work/trace" -- "$GPU_LOOP" --steps 4 --check-errno \
        >"$work/rec.out" 2>"$work/rec.err"
    rec_rc=$?
    [ "$bare_rc" = 0 ] || { show "$work/bare.err"; fail "the bare job failed ($bare_rc)"; }
    [ "$rec_rc" = "$bare_rc" ] || { show "$work/rec.err"; fail "exit status $rec_rc recorded, $bare_rc bare"; }
    diff "$work/bare.out" "$work/rec.out" || fail "the job's output changed under the recorder"
    grep -q "errno changed by 0 calls" "$work/rec.out" || { cat "$work/rec.out"; fail "errno not preserved"; }
    # a failing job fails the same way
    LD_LIBRARY_PATH="$SIM_LIBDIR" "$GPU_LOOP" --no-such-option >/dev/null 2>&1
    bare_rc=$?
    "$SCALEPROF_BIN" run --sim -o "$work/trace2" -- "$GPU_LOOP" --no-such-option >/dev/null 2>&1
    rec_rc=$?
    [ "$bare_rc" != 0 ] && [ "$rec_rc" = "$bare_rc" ] || fail "failing job: status $rec_rc recorded, $bare_rc bare"
    echo "output identical ($(wc -l <"$work/rec.out") lines), exit status identical, errno preserved"
    ;;

gpu_p2p_pipeline)
    # 4 stages, 3 steps x 4 micro-batches: even ones grouped with two
    # messages each way, odd ones ungrouped with one: 3 x (2+1+2+1) = 18
    # sends per rank but the last
    run_job "$work/a" 4 --steps 3 --pipeline 4 || { show "$work/a/stderr"; fail "the pipeline job failed"; }
    "$CHECK_TRACE" p2p "$work/a/trace" 4 18 || fail "sends and recvs do not pair by peer_seq"
    f=$(ls "$work"/a/trace/*/*.sprof | head -1)
    "$SCALEPROF_BIN" dump "$f" | grep -m1 -E 'peer_seq' ||
        { "$SCALEPROF_BIN" dump "$f" | grep -m3 nccl; fail "scaleprof dump does not show peer_seq"; }
    ;;

gpu_nvtx_steps)
    run_job "$work/all" 2 --steps 10 || { show "$work/all/stderr"; fail "the job failed"; }
    "$CHECK_TRACE" markers "$work/all/trace" 0 0 || fail "NVTX ranges missing"
    SCALEPROF_STEPS=5:7 run_job "$work/win" 2 --steps 10 || { show "$work/win/stderr"; fail "the job failed"; }
    "$CHECK_TRACE" markers "$work/win/trace" 5 7 || fail "SCALEPROF_STEPS=5:7 did not keep steps 5 to 7"
    ;;

gpu_plain_preload)
    # No launcher: the way README and torchrun users attach.  Header-only
    # NVTX finds the recorder only through NVTX_INJECTION64_PATH, which the
    # library must point at itself when it loads.
    mkdir -p "$work/p/rdv"
    env -u NVTX_INJECTION64_PATH -u CUDA_INJECTION64_PATH \
        RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 SIM_RENDEZVOUS="$work/p/rdv" \
        SCALEPROF_DIR="$work/p/trace" LD_LIBRARY_PATH="$SIM_LIBDIR" \
        LD_PRELOAD="$(dirname "$SCALEPROF_BIN")/../preload/libscaleprof.so" \
        "$GPU_LOOP" --steps 6 >"$work/p/stdout" 2>"$work/p/stderr" ||
        { show "$work/p/stderr"; fail "the job failed under a plain LD_PRELOAD"; }
    "$CHECK_TRACE" markers "$work/p/trace" 0 0 | tee "$work/p/check" || fail "NVTX ranges missing"
    grep -q "6 step ranges" "$work/p/check" || fail "expected the 6 step ranges of the job"
    ;;

gpu_run_two_nodes)
    if [ "$(id -u)" != 0 ]; then
        # the launcher must refuse with a clear reason, not half-start a job
        "$SCALEPROF_BIN" run --sim --nproc 4 --nnodes 2 -o "$work/t" -- "$GPU_LOOP" 2>"$work/err"
        rc=$?
        [ "$rc" = 2 ] && grep -q "needs root" "$work/err" || { show "$work/err"; fail "no clear refusal without root"; }
        echo "SKIP: not root, so no simulated nodes here (the refusal was checked)"
        exit 77
    fi
    if ! unshare --uts true 2>/dev/null; then
        echo "SKIP: unshare --uts is not permitted in this container"
        exit 77
    fi
    NODES=2 run_job "$work/a" 4 --steps 4 ||
        { show "$work/a/stderr"; fail "the two-node job failed"; }
    # directories only: beside them, the launcher's exit-status.<host>
    hosts=$(find "$work/a/trace" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | tr '\n' ' ')
    [ "$hosts" = "node0 node1 " ] || fail "expected traces under node0 and node1 only, got: $hosts"
    [ "$(ls "$work/a/trace"/node0 | wc -l)" = 2 ] && [ "$(ls "$work/a/trace"/node1 | wc -l)" = 2 ] ||
        fail "expected two ranks per node"
    "$CHECK_TRACE" collectives "$work/a/trace" 4 || fail "collectives do not match across nodes"
    grep -qh '"cross_node":true' "$work/a/truth"/* || fail "the sim did not see two nodes"
    ;;

run_launcher)
    # ranks get torchrun's variables; the worst exit status wins (each rank
    # reads a file: a rank recording nothing for under 20 ms leaves no trace)
    "$SCALEPROF_BIN" run --keep-going --nproc 3 -o "$work/t" -- sh -c \
        'read x </etc/hostname; echo "$RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE $MASTER_ADDR:$MASTER_PORT"; [ -d "$SCALEPROF_RENDEZVOUS" ] || exit 9; exit $((RANK + 3))' \
        >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" = 5 ] || { show "$work/err"; fail "exit status $rc, expected the worst rank's 5"; }
    [ "$(sort "$work/out" | tr '\n' ' ')" = "0/3/0/3 127.0.0.1:29500 1/3/1/3 127.0.0.1:29500 2/3/2/3 127.0.0.1:29500 " ] ||
        { show "$work/out"; fail "rank variables not as torchrun sets them"; }
    # the shell ranks used no GPU: the next steps named are report's host-side
    # view and the host timeline, never html or compare (they refuse), and the report works
    grep -q "next: scaleprof report $work/t (host side.*scaleprof export $work/t" "$work/err" &&
        ! grep "next:" "$work/err" | grep -q "scaleprof html\|scaleprof compare" &&
        "$SCALEPROF_BIN" report "$work/t" 2>/dev/null | grep -q "^Host-side report" ||
        { show "$work/err"; fail "no pointer to the next steps that work"; }
    # a failed rank stops the others (which would wait for it for ever), what
    # they started included; its status is the launcher's
    start=$(date +%s)
    "$SCALEPROF_BIN" run --nproc 3 -o "$work/tf" -- sh -c \
        'read x </etc/hostname; [ "$RANK" = 1 ] && { sleep 0.5; exit 7; }; sleep 30; echo late' >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" = 7 ] || { show "$work/err"; fail "status $rc after rank 1 failed, expected its 7"; }
    [ $(($(date +%s) - start)) -lt 10 ] || fail "the other ranks outlived the failed one by 10 s"
    grep -q "rank 1 exited with status 7: stopping the 2 other ranks" "$work/err" ||
        { show "$work/err"; fail "the stop is not said"; }
    ! grep -q late "$work/out" || fail "a stopped rank ran on"
    [ "$(ls "$work"/tf/*/*.sprof | wc -l)" -ge 3 ] || fail "a stopped rank's trace is missing"
    # SIGTERM to the launcher reaches the job, and the status says so
    "$SCALEPROF_BIN" run --nproc 2 -o "$work/t2" -- sleep 30 2>/dev/null &
    launcher=$!
    sleep 1
    kill -TERM "$launcher"
    start=$(date +%s)
    wait "$launcher"
    rc=$?
    [ $(($(date +%s) - start)) -lt 10 ] || fail "the job outlived SIGTERM"
    [ "$rc" = 143 ] || fail "status $rc after SIGTERM, expected 143"
    "$SCALEPROF_BIN" run -o "$work/t3" 2>/dev/null
    [ $? = 2 ] || fail "no command should be a usage error"
    echo "worst status returned, torchrun variables set, a failed rank stops the others, SIGTERM forwarded"
    ;;

gpu_nvcc_versioned_launches)
    if [ -z "${LAUNCH_LOOP:-}" ]; then
        echo "SKIP: nvcc or libnccl not found at configure time: no nvcc-built job to run"
        exit 77
    fi
    "$SCALEPROF_BIN" run --sim -o "$work/trace" -- "$LAUNCH_LOOP" >"$work/out" 2>"$work/err" ||
        { show "$work/err"; fail "the nvcc-built job failed under the recorder"; }
    # 5 steps x 4 kernels: every launch recorded from the host, every kernel by CUPTI
    "$CHECK_TRACE" launches "$work/trace" 1 | tee "$work/check" || fail "launches missing"
    grep -q "rank 0: 20 launches, 5 stream syncs (5 with call site), 20 GPU kernels, 5 all-reduces" \
        "$work/check" || fail "expected 20 launches, 5 syncs with call sites, 20 kernels, 5 all-reduces"
    ;;

*)
    fail "unknown story $story"
    ;;
esac
echo "PASS: $story"
