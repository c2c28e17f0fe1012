#!/usr/bin/env python3
"""test_lag_split: a report says where the main thread's time went (issue
13): a compute lag's time is CPU, a lock wait's is blocked in a lock, a
sleep's blocked in a sleep, and a compute lag starved of CPU (its thread
pinned with two busy processes to one CPU) is runnable time, labelled
"starved" or "computing" by scripts/lag-report.py, never "blocked".

lag_split (tests/lag/lag_split.c) runs the four lags and prints, for each,
the main thread's own figures around it (getrusage(RUSAGE_THREAD) and
/proc/thread-self/schedstat, read by that program itself): the oracle.
Reports are read with Python's json module. Each report's figures cover
from when the watchdog saw the stretch to its last update (a little idle
time after the lag), so they are compared within a tolerance.

usage: lag_split.py LAG_SPLIT SCRIPT [--run-with "EMULATOR ARGS"] [--tsan]
"""
import argparse
import glob
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import fail, failures  # noqa: E402


def load_script(path):
    spec = importlib.util.spec_from_file_location("lag_report", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def report_of(reports, func, start_ms):
    """The report of the lag that began at start_ms (by this program's
    clock, realtime), and whether its costliest or main stack holds func. Matched
    by time: under TSan a sample may stop at the vDSO (TSan holds the
    signal back) and name no function of ours."""
    # Lags begin >= 900 ms apart. A report's start may be late by its
    # first main-thread sample's duration (up to the sample timeout, under
    # TSan): report.c computes it from a time read before that sample.
    found = [r for r in reports
             if -100 < r["start_unix_ms"] - start_ms < 400]
    named = [r for r in found if any(
        f.get("symbol") == func
        for f in r["main_stack"] + r["costliest_stack"]["frames"])]
    return found, bool(named)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lag_split")
    ap.add_argument("script")
    ap.add_argument("--run-with", default="")
    ap.add_argument("--tsan", action="store_true")
    args = ap.parse_args()
    emulated = bool(args.run_with.strip())
    script = load_script(args.script)
    work = tempfile.mkdtemp(prefix="snap_lag_split.")
    p = subprocess.run(shlex.split(args.run_with) + [args.lag_split, work],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        fail(f"lag_split: exit status {p.returncode}: {p.stderr}")
        return 1
    oracle = {}
    for line in p.stdout.splitlines():
        d = json.loads(line)
        oracle[d["lag"]] = d
    reports = []
    for f in sorted(glob.glob(os.path.join(work, "*.json"))):
        with open(f) as fh:
            reports.append(json.load(fh))
    for name, func in [("compute", "split_compute"), ("lock", "split_lock"),
                       ("sleep", "split_sleep"),
                       ("starved", "split_starved")]:
        o = oracle.get(name)
        rs, named = report_of(reports, func, o["start_unix_ms"]) if o \
            else ([], False)
        if o is None or len(rs) != 1:
            fail(f"{name}: oracle {o}, {len(rs)} report(s) starting then "
                 f"(of {len(reports)})")
            continue
        if not named and not args.tsan:
            fail(f"{name}: {func} is on neither stack of its report")
        r = rs[0]
        m = r["main_thread"]
        keys = ["cpu_ms", "wall_ms", "runnable_ms", "blocked_ms",
                "voluntary_switches", "involuntary_switches",
                "major_faults", "states", "blocked_in"]
        missing = [k for k in keys if k not in m]
        if missing:
            fail(f"{name}: main_thread lacks {missing}: {m}")
            continue
        cs = r["costliest_stack"]
        if [k for k in keys if k not in cs]:
            fail(f"{name}: costliest_stack lacks the split: {sorted(cs)}")
        label = script.verdict(m)
        wall = m["wall_ms"]
        print(f"{name}: report {m['cpu_ms']} cpu / {m['runnable_ms']} "
              f"runnable / {m['blocked_ms']} blocked of {wall} ms, states "
              f"{ {k: v for k, v in m['states'].items() if v} }, blocked in "
              f"{ {k: v for k, v in m['blocked_in'].items() if v} }, "
              f"switches {m['voluntary_switches']}/"
              f"{m['involuntary_switches']}; oracle {o}; label {label!r}",
              flush=True)
        # The figures against the oracle: the report's window starts when
        # the watchdog saw the stretch (at most a tick after the busy call)
        # and ends at its last refresh (after the idle call).
        slack = 60 + wall // 10
        if abs(m["cpu_ms"] - o["cpu_ms"]) > slack:
            fail(f"{name}: cpu_ms {m['cpu_ms']} vs {o['cpu_ms']} measured")
        if o["runq_ms"] >= 0 and \
                abs(m["runnable_ms"] - o["runq_ms"]) > slack:
            fail(f"{name}: runnable_ms {m['runnable_ms']} vs {o['runq_ms']} "
                 f"measured")
        # Each figure is truncated to whole ms on its own.
        total = m["cpu_ms"] + m["runnable_ms"] + m["blocked_ms"]
        if abs(total - wall) > 3 and m["blocked_ms"] != 0:
            fail(f"{name}: cpu + runnable + blocked = {total} != wall: {m}")
        if m["voluntary_switches"] < 0 or m["involuntary_switches"] < 0 or \
                m["major_faults"] < 0:
            fail(f"{name}: unknown counters on Linux: {m}")
        if name in ("compute", "starved"):
            if not label or not (label == "computing" or
                                 label.startswith("starved")):
                fail(f"{name}: label {label!r}, want computing or starved")
            if name == "compute" and o["cpu_ms"] >= o["runq_ms"] and \
                    label != "computing":
                fail(f"compute: got more CPU than it waited for "
                     f"({o}) but reads {label!r}")
            if name == "compute" and m["cpu_ms"] < m["blocked_ms"]:
                fail(f"compute: cpu {m['cpu_ms']} < blocked "
                     f"{m['blocked_ms']}")
            if name == "starved":
                # The oracle says it waited for a CPU longer than it ran.
                if o["runq_ms"] < o["cpu_ms"]:
                    fail(f"starved: the test did not starve it: {o}")
                if m["runnable_ms"] < wall // 3:
                    fail(f"starved: runnable_ms {m['runnable_ms']} of {wall}")
                if m["states"]["blocked"] > m["states"]["runnable"] + \
                        m["states"]["running"]:
                    fail(f"starved: samples mostly blocked: {m['states']}")
        else:
            want = {"lock": "lock", "sleep": "sleep"}[name]
            if m["blocked_ms"] < wall // 2:
                fail(f"{name}: blocked_ms {m['blocked_ms']} of {wall}")
            if not label or not label.startswith("blocked"):
                fail(f"{name}: label {label!r}")
            # TSan holds the sampling signal back while a thread blocks: its
            # points may not exist. Under qemu the syscall file is the
            # host's: "other".
            if args.tsan and not sum(m["blocked_in"].values()):
                print("  (TSan: no point samples while blocked)")
            elif emulated:
                if label not in (f"blocked (in {want})", "blocked (in other)"):
                    fail(f"{name}: label {label!r} under an emulator")
            elif label != f"blocked (in {want})":
                fail(f"{name}: label {label!r}, want blocked (in {want})")
    if failures:
        print(f"{len(failures)} failure(s); reports kept in {work}")
        return 1
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
