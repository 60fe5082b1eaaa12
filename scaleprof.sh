#!/usr/bin/env bash
# scaleprof.sh - the two commands of the README's quick start.
#
#   ./scaleprof.sh demo    install what is missing, build, profile a simulated
#                          4-GPU training job with a slow input pipeline and
#                          print the diagnosis (add --gpu to profile the real
#                          GPUs of this machine instead)
#   ./scaleprof.sh test    install what is missing, build, run every test and
#                          end with one summary line "Tests: N passed, N failed"
#   ./scaleprof.sh build   install what is missing and build into ./build
#   ./scaleprof.sh sanitize  build into ./build-asan with ASan and UBSan and run
#                          the suites of the code that reads untrusted input
#                          (format, analyzer, import; not the tests that
#                          run a job under the preload: suite 'recorded')
#
# Debian packages are installed only when missing (root or sudo needed then).
# CUDA headers come from $CUDA_HOME or /usr/local/cuda (no GPU needed).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

BUILD=${SCALEPROF_BUILD:-build}
PACKAGES=(meson ninja-build pkg-config gcc libc6-dev libzstd-dev libunwind-dev
          libyajl-dev zlib1g-dev python3 util-linux)
# The tests also drive a real PyTorch DataLoader (CPU) through the recorder.
TEST_PACKAGES=(python3-torch)

install_missing() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "scaleprof.sh: installing ${missing[*]}" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
    install_missing
    local log
    log=$(mktemp)
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
    fi
    ninja -C "$BUILD" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
    rm -f "$log"
}

# Meson prints its own summary block; CI and people read one line.
summary() {
    local log=$BUILD/meson-logs/testlog.json passed=0 failed=0 skipped=0
    if [ -f "$log" ]; then
        passed=$(grep -c '"result": "OK"' "$log" || true)
        skipped=$(grep -c '"result": "SKIP"' "$log" || true)
        failed=$(grep -cE '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
    fi
    echo "Tests: $passed passed, $failed failed, $skipped skipped"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
build)
    build
    ;;
test)
    PACKAGES+=("${TEST_PACKAGES[@]}")
    build
    rc=0
    meson test -C "$BUILD" --print-errorlogs --num-processes "${SCALEPROF_TEST_JOBS:-2}" "$@" || rc=$?
    summary
    exit $rc
    ;;
sanitize)
    BUILD=${SCALEPROF_BUILD:-build-asan}
    install_missing
    [ -f "$BUILD/build.ninja" ] ||
        meson setup "$BUILD" -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
    ninja -C "$BUILD" >/dev/null
    rc=0
    ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        meson test -C "$BUILD" --print-errorlogs --suite format --suite analyzer --suite import \
        --no-suite recorded --num-processes "${SCALEPROF_TEST_JOBS:-2}" "$@" || rc=$?
    summary
    exit $rc
    ;;
demo)
    build
    exec examples/demo.sh "$BUILD" "$@"
    ;;
*)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    [ "$cmd" = "-h" ] || [ "$cmd" = "--help" ] || [ "$cmd" = "help" ]
    ;;
esac
