#!/bin/sh
# manpath.sh SRC DST STAMP - lays the man pages of SRC out under DST as
# man(1) looks for them (DST/man1/scaleprof-report.1, DST/man7/...), so
# MANPATH=build/man man scaleprof-report reads the pages of this build
# tree.  Every page in SRC is taken, so a new page needs no line here;
# a page is copied only when it changed, so man's cache stays valid.
set -eu
src=$1 dst=$2 stamp=$3
for page in "$src"/*.[1-8]; do
    [ -f "$page" ] || continue
    name=${page##*/}
    sec=${name##*.}
    mkdir -p "$dst/man$sec"
    cmp -s "$page" "$dst/man$sec/$name" 2>/dev/null || cp "$page" "$dst/man$sec/$name"
done
: >"$stamp"
