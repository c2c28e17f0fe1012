"""checks.py — the Python tests' few assertions, one copy (the C tests'
counterpart is check.h).

A failed check is printed at once ("FAIL: ...", flushed, so it sits beside
the output of the program under test) and kept in `failures`; a test ends
with `return result(name)` or reads `failures` itself. A test that cannot
run on this machine calls skip(why): it exits with SKIP (77), which ctest
counts as "Skipped" (SKIP_RETURN_CODE on the test), never as passed.

Each test imports it from the directory above its own:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from checks import check, fail, failures  # noqa: E402
"""

import sys

SKIP = 77  # ctest's SKIP_RETURN_CODE, set on every test that may skip

failures = []

# A broken file can fail every event it holds: the first ones say it.
PRINTED_AT_MOST = 40


def fail(msg):
    failures.append(msg)
    if len(failures) <= PRINTED_AT_MOST:
        print("FAIL:", msg, flush=True)


def check(cond, msg):
    """fail(msg) unless cond; returns cond, for `if check(...)`."""
    if not cond:
        fail(msg)
    return cond


def ok(msg):
    print("ok", msg, flush=True)


def skip(why):
    """This test cannot run here: say why, and tell ctest so."""
    print("skipped:", why, flush=True)
    sys.exit(SKIP)


def result(name, work=None):
    """The exit code of a test that is done: 0, or 1 after any failure.
    work: its scratch directory, removed when it passed and kept (said)
    for a look when it failed."""
    if failures:
        print(f"{name}: {len(failures)} check(s) failed", flush=True)
        if work:
            print(f"{name}: kept {work}", flush=True)
        return 1
    if work:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    print(f"{name}: all checks passed", flush=True)
    return 0


def run_phases(cmd, out_dir):
    """Runs a phase program (its output passed through) and reads the
    phases.json it leaves in out_dir: the facts, or None after a failure
    (said)."""
    import json
    import os
    import subprocess
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        fail("%s exited %d" % (" ".join(cmd), r.returncode))
        return None
    with open(os.path.join(out_dir, "phases.json")) as f:
        return json.load(f)
