#!/bin/sh
# check_format.sh - every C file of the tree is as clang-format (with the
# committed .clang-format) would write it, except the files listed in
# .clang-format-ignore: files written before the check, left as they are
# while other work changes them (reformatting them is a change of its own).
# A new file is checked from its first commit.
#
# Usage: check_format.sh SOURCE_ROOT   (suite 'style'; CI runs it)
# Skips (77) without clang-format, or with a major version other than the
# one the configuration was measured with: another version formats a few
# constructs differently and would fail files that are fine.
set -eu
root=$1
want_major=14
cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "SKIP: no clang-format"; exit 77; }
major=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$major" = "$want_major" ] ||
    { echo "SKIP: clang-format $major; the check is for clang-format $want_major"; exit 77; }
cd "$root"
ignored=$(grep -v '^#' .clang-format-ignore | grep -v '^ *$' || true)
checked=0 bad=0
for f in $(find format analyzer preload cupti sim examples tests fuzz bench \
               -name '*.c' -o -name '*.h' -o -name '*.cu' | sort); do
    if printf '%s\n' "$ignored" | grep -qxF "$f"; then
        continue
    fi
    checked=$((checked + 1))
    if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f  (clang-format -i $f; or see the diff: clang-format $f | diff $f -)"
        bad=$((bad + 1))
    fi
done
echo "clang-format: $checked files checked, $bad not formatted, $(printf '%s\n' "$ignored" | grep -c . || true) left out (.clang-format-ignore)"
[ "$bad" -eq 0 ]
