"""testmain.py - the command line the tests' Python scripts share: the
script is run with the name of one of its cases (meson gives it), and
run() calls the function KIND_NAME of the script, its docstring printed
first and "ok" after; or verdict() runs the case and says how it ended,
for the scenario scripts.

A script imports it from beside its own folder:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    import testmain
"""
import sys


def run(scope, kind="case", cleanup=None, failure=None):
    """Runs scope[KIND_NAME] (scope: the script's globals()), NAME from the
    command line.  A name with no such function, or an exception of class
    failure (by default scope's Failure, when it has one), prints "FAIL:
    ..." and exits with status 1; cleanup, when given, runs after the
    function however it ends."""
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    fn = scope.get(kind + "_" + name)
    if not fn:
        print("FAIL: unknown %s %s" % (kind, name))
        sys.exit(1)
    print(fn.__doc__.strip())
    failure = failure or scope.get("Failure")
    try:
        fn()
    except failure or () as e:
        print("FAIL: %s" % e)
        sys.exit(1)
    finally:
        if cleanup:
            cleanup()
    print("ok")


def verdict(name, run, failure, skip=(), passed="PASS", skip_status=77):
    """run(name), then "PASSED NAME", "FAIL NAME: why" (an exception of
    class failure) or "SKIP NAME: why" (of class skip; () for none): the
    exit status, 0, 1 or skip_status."""
    try:
        run(name)
    except skip as e:
        print("SKIP %s: %s" % (name, e))
        return skip_status
    except failure as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    print("%s %s" % (passed, name))
    return 0
