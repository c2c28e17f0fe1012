#!/usr/bin/env python3
"""test_lag_report_script: scripts/lag-report.py labels a lag "computing",
"starved (runnable, no CPU)" or "blocked (in ...)" from the report's time
split (docs/lag.md), on handmade reports whose answers are known.

A compute lag on a saturated machine (little CPU, much run-queue wait)
must read "starved" or "computing", never "waiting" or "blocked"; a lock
wait "blocked (in lock)", a sleep "blocked (in sleep)". Reports without
the split (written before it existed) are still rendered.

usage: test_lag_report_script.py SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def split(cpu, wall, runnable, blocked, states=None, blocked_in=None,
          vol=3, invol=4, faults=0):
    d = {"cpu_ms": cpu, "wall_ms": wall, "runnable_ms": runnable,
         "blocked_ms": blocked, "voluntary_switches": vol,
         "involuntary_switches": invol, "major_faults": faults,
         "states": {"unknown": 0, "running": 0, "runnable": 0,
                    "running_or_runnable": 0, "blocked": 0},
         "blocked_in": {"lock": 0, "io": 0, "sleep": 0, "wait": 0,
                        "other": 0}}
    d["states"].update(states or {})
    d["blocked_in"].update(blocked_in or {})
    return d


def report(main, costliest=None):
    r = {"schema": "stacksnap.lag/1", "kind": "lag", "ongoing": False,
         "start_unix_ms": 1700000000000, "updated_unix_ms": 1700000001000,
         "duration_ms": main["wall_ms"], "threshold_ms": 300, "pid": 1,
         "repeats": 0, "main_thread": dict(main, tid=1),
         "main_stack": [],
         "costliest_stack": dict(costliest or main, hits=5, samples=6,
                                 frames=[]),
         "class": {"l1": "", "l2": ""}, "threads_total": 1,
         "threads": [{"tid": 1, "name": "main", "main": True,
                      "running": False, "frames": []}]}
    return r


CASES = [
    # name, report, expected label on the main thread's line
    ("compute", report(split(590, 600, 5, 5, {"running": 11})), "computing"),
    # A compute lag on a saturated box: 22 ms of CPU in 600 ms, the rest on
    # a run queue (issue 13: it was labelled "waiting").
    ("starved", report(split(22, 600, 570, 8, {"runnable": 10, "running": 1})),
     "starved (runnable, no CPU)"),
    # Half starved, half computing, more CPU than wait: computing.
    ("half", report(split(200, 600, 180, 220, {"running": 6, "blocked": 5},
                          {"other": 5})), "computing"),
    ("lock", report(split(1, 800, 0, 799, {"blocked": 15}, {"lock": 15})),
     "blocked (in lock)"),
    ("sleep", report(split(2, 900, 1, 897, {"blocked": 16, "runnable": 1},
                           {"sleep": 14, "other": 2})),
     "blocked (in sleep)"),
    ("io", report(split(5, 500, 2, 493, {"blocked": 9}, {"io": 9})),
     "blocked (in io)"),
    # Apple: no run-queue wait; the samples say it was on a CPU or wanted
    # one.
    ("apple", report(split(100, 600, -1, -1, {"running_or_runnable": 10,
                                              "blocked": 1}, {"other": 1})),
     "computing or starved (the OS does not say which)"),
]


def main():
    script = sys.argv[1]
    work = tempfile.mkdtemp(prefix="snap_lag_report_script.")
    for name, r, want in CASES:
        path = os.path.join(work, f"{name}.json")
        with open(path, "w") as f:
            json.dump(r, f)
        p = subprocess.run([sys.executable, script, path],
                           capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"{name}: exit status {p.returncode}: {p.stderr}")
            continue
        line = next((l for l in p.stdout.splitlines()
                     if l.startswith("Main thread:")), "")
        if f": {want})" not in line:
            fail(f"{name}: want {want!r}, got {line!r}")
        elif name == "starved" and ("waiting" in line or "blocked" in line):
            fail(f"starved: {line!r}")
        else:
            print(f"ok {name}: {line.split(', CPU ')[-1]}")
        split_line = next((l for l in p.stdout.splitlines()
                           if l.startswith("Time split:")), None)
        if split_line is None:
            fail(f"{name}: no Time split line")
    # A report of the schema before the split: rendered, no verdict made up.
    old = report(split(100, 600, 0, 0))
    for k in ("runnable_ms", "blocked_ms", "voluntary_switches",
              "involuntary_switches", "major_faults", "states", "blocked_in"):
        old["main_thread"].pop(k)
        old["costliest_stack"].pop(k)
    path = os.path.join(work, "old.json")
    with open(path, "w") as f:
        json.dump(old, f)
    p = subprocess.run([sys.executable, script, path], capture_output=True,
                       text=True)
    if p.returncode != 0 or "no time split" not in p.stdout or \
            "Time split:" in p.stdout:
        fail(f"old report: {p.returncode} {p.stdout[:400]!r}")
    else:
        print("ok old report (no split): rendered, no verdict made up")
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    os.rmdir(work)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
