#!/usr/bin/env python3
"""test_trace_lag_edges.py — the trace's phase edges with the lag watchdog
on (issue 25, "one sampler").

Runs trace_lag_phases (tests/trace/trace_lag_phases.c: 3 loop iterations
of 5 phases of known length on the main thread, traced at 1 kHz while the
watchdog reports each iteration as a lag), optionally beside busy loops,
and reads its Chrome JSON trace with Python's json:
  - the outermost ph_* slices of the main thread are the 15 phases, in
    order: none missing, none drawn as its neighbour;
  - every edge between two phases of an iteration is where the program
    measured it, within --bound-ms (20 quiet, 40 beside three busy loops),
    plus, at the start of a computing phase, how long its thread took to
    use its first 5 ms of CPU time there (a kernel
    tick: CPU-time timers fire at ticks) (the program's own CPU
    clock: a sampler of running code cannot see the phase before it ran in
    it, and a machine busy with other work delays that);
  - no edge is drawn more than --early-ms (15) before its phase began,
    however busy the machine: a sampler cannot see a phase before it
    begins, so an early edge is a sample dated before the stack it holds
    was taken (the old sampler read its clock, then waited on the sampler
    lock while the watchdog sampled: edges 30-60 ms early); the design's
    one early dating, a sleep dated by the CPU time since the thread's
    last tick, is early only by the thread's wait for a CPU in that tick;
  - the watchdog wrote reports (it sampled the main thread meanwhile).
The old design failed it: the trace's sampler and the watchdog's waited on
each other at the sampler lock, and edges moved by 50-100 ms.
Exit 0, or 1 with every failed check printed.
"""
import argparse
import json
import os
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, result, run_phases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--bound-ms", type=float, default=20.0)
    ap.add_argument("--early-ms", type=float, default=15.0)
    ap.add_argument("--run-with", default="")
    ap.add_argument("--nolag", action="store_true",
                    help="the trace alone (for comparison by hand)")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="snap_trace_lag_edges.")
    cmd = shlex.split(a.run_with) + [a.program, d, str(a.busy)] + \
        (["nolag"] if a.nolag else [])
    facts = run_phases(cmd, d)
    if facts is None:
        return 1
    phases = facts["phases"]
    print("stats:", facts["stats"], "lag reports:", facts["reports"])
    check(a.nolag or facts["reports"] >= 1, "the watchdog wrote no report: it did not "
          "sample the main thread, the test proves nothing")
    with open(os.path.join(d, "trace.json")) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    base = int(doc["otherData"]["ts_base_unix_ns"])  # ts: us past it
    xs = [e for e in ev if e.get("ph") == "X"]
    iters = [e for e in xs if e["name"] == "iteration"]
    tids = {e["tid"] for e in iters}
    check(len(tids) == 1, "iteration on %d threads" % len(tids))
    if len(tids) != 1:
        return result("test_trace_lag_edges", d)
    tid = tids.pop()
    kids = sorted([e for e in xs if e["tid"] == tid and
                   e["name"].startswith("ph_")], key=lambda e: e["ts"])
    # Only the outermost ph_* slices (no phase nests in another), and
    # consecutive slices of one phase (a failed sample between) as one.
    merged = []
    for e in kids:
        b, n = base + e["ts"] * 1000, e["name"]
        end = b + e["dur"] * 1000
        if merged and b < merged[-1]["end"] - 1e3:
            continue  # nested (1 us: ts and dur are rounded to it)
        if merged and merged[-1]["name"] == n:
            merged[-1]["end"] = max(merged[-1]["end"], end)
        else:
            merged.append(dict(name=n, begin=b, end=end))
    got = [m["name"] for m in merged]
    want = [p["name"] for p in phases]
    check(got == want, "the phases drawn are %s, not %s" % (got, want))
    if facts.get("tsan"):
        print("TSan build: edges printed, not held (TSan defers signals)")
    bound = a.bound_ms * 1e6
    worst = 0
    if got == want:
        for i in range(len(phases) - 1):
            p, q = phases[i], phases[i + 1]
            if q["begin"] - p["end"] > 10e6:
                continue  # between iterations: the idle loop in between
            truth = q["begin"]
            edge = merged[i + 1]["begin"]
            late_cpu = (q["first_cpu_ms"] - q["begin"]) if q["first_cpu_ms"] else 0
            allowed = bound + max(0, late_cpu)
            err = edge - truth
            worst = max(worst, abs(err))
            print("edge %s -> %s: %+.1f ms (its first 5 ms of CPU took %.1f ms; "
                  "allowed %.1f)" % (p["name"], q["name"], err / 1e6,
                                     late_cpu / 1e6, allowed / 1e6))
            if not facts.get("tsan"):
                check(abs(err) <= allowed,
                      "edge %s -> %s off by %.1f ms (allowed %.1f)"
                      % (p["name"], q["name"], err / 1e6, allowed / 1e6))
                check(err >= -a.early_ms * 1e6,
                      "edge %s -> %s drawn %.1f ms before the phase began"
                      % (p["name"], q["name"], -err / 1e6))
    print("worst edge error %.1f ms" % (worst / 1e6))
    return result("test_trace_lag_edges", d)


if __name__ == "__main__":
    sys.exit(main())
