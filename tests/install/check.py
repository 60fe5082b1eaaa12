#!/usr/bin/env python3
"""tests/install: what `meson install` puts on a machine works there: the
bash completion offers the verbs and each verb's options as --help gives
them, pkg-config finds the recorder, man finds every verb's page (in the
build tree and installed).

    check.py CASE   (environment: SCALEPROF_BIN, COMPLETION, BUILD_ROOT,
                     MESON; CASE: completion, pkgconfig, man)

pkgconfig and man install the build into a fresh DESTDIR
(meson install --destdir) and look there, as a user of the prefix would.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the command line every script takes)

BIN = os.environ.get("SCALEPROF_BIN", "")


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def run(*cmd, env=None, ok=(0,)):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if p.returncode not in ok:
        fail("%s exited %d: %s%s" % (" ".join(cmd), p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
    return p


def verbs_of_help():
    """The verbs as `scaleprof --help` lists them (the command's one list)."""
    out = run(BIN, "--help").stdout
    body = out.split("Verbs:", 1)[1].split("\n\n", 1)[0]
    verbs = [m.group(1) for m in re.finditer(r"^  ([a-z][a-z0-9-]*)  +\S", body, re.M)]
    if "report" not in verbs or "html" not in verbs:
        fail("scaleprof --help lists no report/html verb: %s" % verbs)
    return verbs


def options_of_help(verb):
    """A verb's options as its --help table gives them: the dash-words that
    open a table line, or follow ", " in its option column."""
    opts = []
    for line in run(BIN, verb, "--help").stdout.splitlines():
        if not re.match(r"\s+-", line):
            continue
        col = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        for part in col.split(","):
            m = re.match(r"\s*(--?[A-Za-z][A-Za-z0-9_-]*)", part)
            if m:
                opts.append(m.group(1))
    return opts


def complete(*words, cwd=None):
    """What _scaleprof offers for the command line WORDS (the last one
    being completed), as bash would call it."""
    script = ('source "$COMPLETION"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
              '_scaleprof; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "bash", BIN, *words], capture_output=True, text=True,
                       timeout=60, cwd=cwd, env=dict(os.environ))
    if p.returncode != 0 or p.stderr:
        fail("completing %s: exit %d, %s" % (words, p.returncode, p.stderr))
    return [w for w in p.stdout.splitlines() if w]


def case_completion():
    """Tab after `scaleprof` offers every verb of scaleprof --help; tab
    after `scaleprof VERB -` every option of that verb's --help and no
    other; a trace directory and -o's file complete from the disk; an
    option's number completes nothing."""
    verbs = verbs_of_help()
    got = complete("")
    if sorted(set(got) - {"help"}) != sorted(verbs):
        fail("verbs offered %s, scaleprof --help lists %s" % (got, verbs))
    # a prefix completes to exactly the verbs --help lists with it
    for prefix in ("re", "rep", "ha", "x"):
        want = sorted(v for v in verbs if v.startswith(prefix))
        if sorted(complete(prefix)) != want:
            fail("'%s' completes to %s, --help lists %s" % (prefix, complete(prefix), want))
    for v in verbs:
        want = options_of_help(v)
        if not want:
            fail("%s --help gives no option" % v)
        got = complete(v, "-")
        if sorted(set(got)) != sorted(set(want)):
            fail("%s: completion offers %s, --help gives %s" % (v, sorted(set(got)), sorted(set(want))))
    if "--per-step" not in complete("report", "--p") or "--output" not in complete("html", "--o"):
        fail("report --per-step or html --output not offered")
    tmp = tempfile.mkdtemp(prefix="compl-")
    try:
        os.makedirs(os.path.join(tmp, "run-8gpu", "host0"))
        open(os.path.join(tmp, "run-8gpu.txt"), "w").close()
        got = complete("report", "run", cwd=tmp)
        if got != ["run-8gpu"]:
            fail("report's trace directory completes to %s (a file beside it must not)" % got)
        got = complete("html", "run-8gpu", "-o", "run", cwd=tmp)
        if sorted(got) != ["run-8gpu", "run-8gpu.txt"]:
            fail("html -o completes to %s" % got)
        if complete("report", "--skip", "", cwd=tmp):
            fail("report --skip N completes to files")
        got = complete("dump", "run", cwd=tmp)
        if sorted(got) != ["run-8gpu", "run-8gpu.txt"]:
            fail("dump FILE completes to %s" % got)
        if complete("help", "rep") != ["report"]:
            fail("help VERB does not complete verbs")
    finally:
        shutil.rmtree(tmp)
    print("  %d verbs, their options as --help gives them (%d in all)" %
          (len(verbs), sum(len(set(options_of_help(v))) for v in verbs)))


def destdir_install(tmp):
    dest = os.path.join(tmp, "dest")
    run(os.environ.get("MESON", "meson"), "install", "-C", os.environ["BUILD_ROOT"], "--no-rebuild",
        "--quiet", "--destdir", dest)
    prefix = run(os.environ.get("MESON", "meson"), "introspect", os.environ["BUILD_ROOT"], "--buildoptions").stdout
    m = re.search(r'"name": "prefix", "value": "([^"]*)"', prefix)
    if not m:
        fail("no prefix in meson introspect --buildoptions")
    return dest, m.group(1)


def case_pkgconfig():
    """After meson install --destdir, pkg-config finds scaleprof.pc: its
    preload variable is the installed libscaleprof.so and --libs links a
    program against it; the completion sits where bash-completion looks."""
    if not shutil.which("pkg-config"):
        print("skip: no pkg-config")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="inst-")
    try:
        dest, prefix = destdir_install(tmp)
        root = dest + prefix
        pcs = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f == "scaleprof.pc"]
        if os.environ.get("HAVE_PRELOAD") != "1":
            if pcs:
                fail("scaleprof.pc installed without the recorder: %s" % pcs)
            print("skip: built without CUDA headers, no recorder to describe")
            sys.exit(77)
        if len(pcs) != 1:
            fail("scaleprof.pc installed %d times: %s" % (len(pcs), pcs))
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]), PKG_CONFIG_LIBDIR="")
        pc = ["pkg-config", "--define-variable=prefix=" + root]
        preload = run(*pc, "--variable=preload", "scaleprof", env=env).stdout.strip()
        if not preload.startswith(root) or not os.path.isfile(preload) or not preload.endswith("/libscaleprof.so"):
            fail("--variable=preload is %r, not the installed library" % preload)
        analyzer = run(*pc, "--variable=analyzer", "scaleprof", env=env).stdout.strip()
        if not os.access(analyzer, os.X_OK):
            fail("--variable=analyzer is %r, not the installed command" % analyzer)
        libs = run(*pc, "--libs", "scaleprof", env=env).stdout.split()
        libdirs = [w[2:] for w in libs if w.startswith("-L")]
        if "-lscaleprof" not in libs or not any(os.path.isfile(os.path.join(d, "libscaleprof.so")) for d in libdirs):
            fail("--libs %s does not name the installed library" % libs)
        src = os.path.join(tmp, "x.c")
        with open(src, "w") as f:
            f.write("int main(void) { return 0; }\n")
        cc = os.environ.get("CC", "cc")
        run(cc, src, "-o", os.path.join(tmp, "x"), "-Wl,--no-as-needed", *libs)
        needed = run("readelf", "-d", os.path.join(tmp, "x")).stdout if shutil.which("readelf") else "libscaleprof.so"
        if "libscaleprof.so" not in needed:
            fail("a program linked with --libs does not need libscaleprof.so")
        comp = os.path.join(root, "share", "bash-completion", "completions", "scaleprof")
        if not os.path.isfile(comp):
            fail("no bash completion at %s" % comp)
        p = subprocess.run(["bash", "-c", 'source "$1"; complete -p scaleprof', "bash", comp],
                           capture_output=True, text=True)
        if "_scaleprof" not in p.stdout:
            fail("the installed completion registers no _scaleprof: %s %s" % (p.stdout, p.stderr))
        print("  preload %s, libs %s" % (preload[len(dest):], " ".join(libs).replace(dest, "$DESTDIR")))
    finally:
        shutil.rmtree(tmp)


def man_pages(manpath, verbs):
    """Every verb's page, scaleprof(1) and libscaleprof(7) under manpath as
    man looks for them; with man installed, man -w finds each."""
    pages = ["man1/scaleprof.1", "man7/libscaleprof.7"] + ["man1/scaleprof-%s.1" % v for v in verbs]
    for p in pages:
        if not os.path.isfile(os.path.join(manpath, p)):
            fail("no %s under %s" % (p, manpath))
    if shutil.which("man"):
        env = dict(os.environ, MANPATH=manpath)
        for p in pages:
            name = os.path.basename(p).rsplit(".", 1)[0]
            got = run("man", "-w", name, env=env).stdout.strip()
            if os.path.realpath(got) != os.path.realpath(os.path.join(manpath, p)):
                fail("MANPATH=%s man -w %s gives %s" % (manpath, name, got))
        text = run("man", "-P", "cat", "scaleprof-report", env=dict(env, MANWIDTH="80")).stdout
        if "--per-step" not in text:
            fail("man scaleprof-report does not render its options")
    return len(pages)


def case_man():
    """MANPATH=build/man, MANPATH=man (the source tree) and the installed
    share/man each hold a page for every verb of scaleprof --help."""
    verbs = verbs_of_help()
    n = man_pages(os.path.join(os.environ["BUILD_ROOT"], "man"), verbs)
    n = man_pages(os.path.join(os.environ["SOURCE_ROOT"], "man"), verbs)
    tmp = tempfile.mkdtemp(prefix="inst-man-")
    try:
        dest, prefix = destdir_install(tmp)
        n = man_pages(os.path.join(dest + prefix, "share", "man"), verbs)
    finally:
        shutil.rmtree(tmp)
    print("  %d pages in the build tree, the source tree and the install%s" %
          (n, "" if shutil.which("man") else " (no man here: files only)"))


if __name__ == "__main__":
    testmain.run(globals())
