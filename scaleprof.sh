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
# CUDA headers come from $CUDA_HOME or /usr/local/cuda (no GPU needed);
# without them only the format, the analyzer and import are built and tested.
#
# Environment: SCALEPROF_WERROR=1 builds with -Werror (CI does);
# SCALEPROF_MESON_OPTIONS adds meson options ("-Dcuda=enabled").  Both
# apply to a build folder made earlier too: it is reconfigured when one
# of its options differs.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

BUILD=${SCALEPROF_BUILD:-build}
PACKAGES=(meson ninja-build pkg-config gcc libc6-dev libzstd-dev libunwind-dev
          libyajl-dev zlib1g-dev python3 util-linux)
# The tests also drive a real PyTorch DataLoader (CPU) through the recorder,
# render the HTML report in headless Chromium, and read the man pages
# with man (tests/install).
TEST_PACKAGES=(python3-torch chromium man-db)

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

# The options this script asks of meson: werror from SCALEPROF_WERROR
# (off unless 1: a build folder set up when werror was the default loses
# it), then SCALEPROF_MESON_OPTIONS.
meson_options() {
    local werror=false
    [ "${SCALEPROF_WERROR:-0}" = 1 ] && werror=true
    # shellcheck disable=SC2086
    printf '%s\n' "-Dwerror=$werror" ${SCALEPROF_MESON_OPTIONS:-}
}

# The options of $1 that differ from its build folder's, one per line.
changed_options() {
    meson introspect "$1" --buildoptions | python3 -c '
import json, sys
now = {o["name"]: o["value"] for o in json.load(sys.stdin)}
for arg in sys.argv[1:]:
    name, _, want = arg[2:].partition("=")
    have = now.get(name)
    have = str(have).lower() if isinstance(have, bool) else ",".join(have) if isinstance(have, list) else str(have)
    if have != want:
        print(arg)' "${@:2}"
}

# Set up build folder $1 with the options that follow, or bring one made
# earlier to them; then build it.  Output only when something fails, or
# with SHOW_PROGRESS=1 (the demo) ninja's progress on stderr.
setup_and_build() {
    local dir=$1 log changed
    shift
    log=$(mktemp)
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
    else
        changed=$(changed_options "$dir" "$@")
        if [ -n "$changed" ]; then
            echo "scaleprof.sh: reconfiguring $dir:" $changed >&2
            # shellcheck disable=SC2086
            meson configure "$dir" $changed >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
        fi
    fi
    if [ "${SHOW_PROGRESS:-0}" = 1 ]; then
        # the first build takes minutes: ninja's [N/M] lines show it moving
        # (on a terminal ninja keeps them to one line)
        echo "scaleprof.sh: building into $dir (the first build takes a few minutes)" >&2
        ninja -C "$dir" >&2 || { rm -f "$log"; exit 1; }
    else
        ninja -C "$dir" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
    fi
    rm -f "$log"
}

build() {
    install_missing
    local opts
    mapfile -t opts < <(meson_options)
    setup_and_build "$BUILD" "${opts[@]}"
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
    mapfile -t opts < <(meson_options)
    setup_and_build "$BUILD" -Db_sanitize=address,undefined -Db_lundef=false "${opts[@]}"
    rc=0
    ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        meson test -C "$BUILD" --print-errorlogs --suite format --suite analyzer --suite import \
        --no-suite recorded --num-processes "${SCALEPROF_TEST_JOBS:-2}" "$@" || rc=$?
    summary
    exit $rc
    ;;
demo)
    SHOW_PROGRESS=1 build
    exec examples/demo.sh "$BUILD" "$@"
    ;;
*)
    sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
    [ "$cmd" = "-h" ] || [ "$cmd" = "--help" ] || [ "$cmd" = "help" ]
    ;;
esac
