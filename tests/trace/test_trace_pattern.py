#!/usr/bin/env python3
"""test_trace_pattern.py — the sampling trace, end to end, read by readers
nobody here wrote.

Runs trace_pattern (tests/trace/trace_pattern.c: phase_a 200 ms computing,
phase_b 100 ms blocked on a mutex, phase_a again, phase_c with a mark, all
under pattern_run on the main thread, traced at 1 kHz), then:
  - the .pftrace, parsed with the Perfetto protos of the `perfetto` package
    (perfetto_trace_pb2), rebuilt into slices per thread track from
    SLICE_BEGIN / SLICE_END: the children of pattern_run on the main track
    are phase_a, phase_b, phase_a, phase_c in that order, each as long as
    the phase the program measured around it (within 10 %, or within how
    late the sampler was in all, by its own count of missed periods, when
    the machine held it back longer: a sample cannot end a slice before it
    is taken; plus how long the program's own CPU clock says the phase's
    thread, and the next phase's, waited for a CPU at their starts: a
    sampler of running code cannot see a phase before it ran in it; or,
    where the trace shows no sample between a phase's start and where it
    was drawn, that lateness: a busy machine can leave a running thread
    unsampled that long),
    phase_b's state "blocked" on a "mutex", the phases computing
    "running" or "runnable"; the mark an instant event inside phase_c with
    phase_c in its stack;
  - the Chrome JSON, parsed with json: the same slices, the same order;
  - the folded stacks: the counts are microseconds, and each phase's
    lines add up to the phase's length as the program measured it;
  - and 150 turns of computing 2 ms then sleeping 5 ms: no slice of the
    computing function is mostly blocked (a thread that went to sleep is
    never shown in the stack it left).
Exit 0, or 1 with every failed check printed.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, result, run_phases  # noqa: E402


def perfetto_slices(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    tracks, open_, slices, instants = {}, {}, [], []
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.HasField("thread"):
                tracks[td.uuid] = (td.thread.tid, td.thread.thread_name)
        if p.HasField("track_event"):
            te = p.track_event
            ann = {}
            for a in te.debug_annotations:
                kind = a.WhichOneof("value")
                ann[a.name] = getattr(a, kind) if kind else None
            stack = open_.setdefault(te.track_uuid, [])
            if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                stack.append(dict(name=te.name, ts=p.timestamp, ann=ann,
                                  depth=len(stack), track=te.track_uuid))
            elif te.type == pb.TrackEvent.TYPE_SLICE_END:
                s = stack.pop()
                s["dur"] = p.timestamp - s["ts"]
                slices.append(s)
            elif te.type == pb.TrackEvent.TYPE_INSTANT:
                instants.append(dict(name=te.name, ts=p.timestamp, ann=ann,
                                     track=te.track_uuid))
    for uuid, st in open_.items():
        check(not st, "track %d: %d slices never ended" % (uuid, len(st)))
    return tracks, slices, instants


def phase_children(slices, track):
    """The slices just under pattern_run on a track, in time order."""
    runs = [s for s in slices if s["track"] == track and s["name"] == "pattern_run"]
    out = []
    for r in runs:
        out += [s for s in slices if s["track"] == track and
                s["depth"] == r["depth"] + 1 and
                r["ts"] <= s["ts"] < r["ts"] + r["dur"]]
    return sorted(out, key=lambda s: s["ts"])


def runs(items, name_of):
    """Consecutive items of one name, merged: [(name, [items...])]."""
    out = []
    for it in items:
        if out and out[-1][0] == name_of(it):
            out[-1][1].append(it)
        else:
            out.append((name_of(it), [it]))
    return out


# How long a computing phase's thread waited for a CPU at its start: the
# wall time it took to use its first 5 ms of CPU (trace_pattern.c,
# FIRST_CPU_NS), less those 5 ms. A sampler of running code cannot draw
# the phase before its thread ran in it, so its start (and the previous
# phase's end) may be that much late: the program's own clocks say how
# much. 0 on a quiet machine, and for a blocked phase.
FIRST_CPU_NS = 5e6


def starved(p):
    if not p.get("first_cpu"):
        return 0
    return max(0, p["first_cpu"] - p["begin"] - FIRST_CPU_NS)


def unseen(p, drawn, samples):
    """How late phase p's start was drawn because no sample was taken in
    it before: the thread's timer ticks only when a scheduler tick finds
    it on a CPU, and a busy machine that preempts it between ticks (a
    wake-up of another task) can leave it unsampled for tens of ms of wall
    time even after it ran (seen: 24 ms, under gcc-under-load). Excused
    only when the trace shows no sample between the phase's start and
    where it was drawn: every sample in the phase would begin or end a
    slice there (its stack differs from the phase before). samples: the
    main track's slice edges (ns)."""
    at = drawn.get(id(p))
    if at is None or at <= p["begin"]:
        return 0
    lo, hi = p["begin"] + 0.5e6, at - 0.5e6
    if any(lo < t < hi for t in samples):
        return 0
    return at - p["begin"]


def edge_slack(phases, p, drawn, samples):
    """What a busy machine may move phase p's two edges by: its own
    start's starvation and the next phase's, and how late the sampler
    first saw each of them (unseen)."""
    i = phases.index(p)
    nxt = phases[i + 1] if i + 1 < len(phases) else None
    return (max(starved(p), unseen(p, drawn, samples)) +
            (max(starved(nxt), unseen(nxt, drawn, samples)) if nxt else 0))


def check_phases(kind, children, phases, gaps, samples):
    """pattern_run's children against the phases: the same names in the
    same order, each as long as its phase. Where the sampler was held back
    (gaps: how late it was in all, by its own count, plus what its failed
    samples cost), a phase it never sampled may be missing (two phase_a
    then meet), and a failed sample may cut a slice in two: consecutive
    slices of one name are compared as one. Returns where each phase's
    start was drawn (id(phase): ns); samples: the track's slice edges, for
    unseen()."""
    names = [c["name"] for c in children]
    want = [p["name"] for p in phases]
    if names == want:
        pairs = list(zip(children, phases))
    else:
        ok = gaps >= 100e6
        got = runs(children, lambda c: c["name"])
        sampled = [p for p in phases
                   if any(c["name"] == p["name"] and c["ts"] < p["end"] and
                          c["ts"] + c["dur"] > p["begin"] for c in children)]
        exp = runs(sampled, lambda p: p["name"])
        print("%s: the sampler was held back (up to %.0f ms); children %s, "
              "phases sampled %s" % (kind, gaps / 1e6, names,
                                     [p["name"] for p in sampled]))
        check(ok and [g[0] for g in got] == [e[0] for e in exp] and
              len(exp) >= 2,
              "%s: pattern_run's children are %s, not phase_a, phase_b, "
              "phase_a, phase_c" % (kind, names))
        if not ok or [g[0] for g in got] != [e[0] for e in exp]:
            return {}
        pairs = []
        for (gn, gs), (en, es) in zip(got, exp):
            pairs.append((dict(name=gn, ts=gs[0]["ts"],
                               dur=gs[-1]["ts"] + gs[-1]["dur"] - gs[0]["ts"]),
                          dict(name=en, begin=es[0]["begin"], end=es[-1]["end"])))
    drawn = {id(p): c["ts"] for c, p in pairs if p in phases}
    for c, p in pairs:
        want_ns = p["end"] - p["begin"]
        # Within 10 %; on a machine that held the sampler back, a slice
        # edge can also be off by as long as the sampler was held back;
        # plus how long the phase's thread, and the next one's, waited for
        # a CPU at their starts (starved()), or went unsampled in them
        # (unseen()), whichever is more.
        slack = max(0.10 * want_ns, gaps) + (
            edge_slack(phases, p, drawn, samples) if p in phases else 0)
        err = abs(c["dur"] - want_ns)
        print("%s: %s %.1f ms (measured %.1f ms, error %.1f ms, allowed %.1f)"
              % (kind, c["name"], c["dur"] / 1e6, want_ns / 1e6, err / 1e6,
                 slack / 1e6))
        check(err <= slack, "%s: %s lasts %.1f ms for a %.1f ms phase"
              % (kind, c["name"], c["dur"] / 1e6, want_ns / 1e6))
    return drawn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("--run-with", default="")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="snap_trace_pattern.")
    cmd = shlex.split(a.run_with) + [a.program, d]
    facts = run_phases(cmd, d)
    if facts is None:
        return 1
    phases = facts["phases"]
    print("stats:", facts["stats"])

    tracks, slices, instants = perfetto_slices(os.path.join(d, "trace.pftrace"))
    # The main thread's track: the one that holds pattern_run.
    holders = {s["track"] for s in slices if s["name"] == "pattern_run"}
    check(len(holders) == 1, "pattern_run on %d tracks" % len(holders))
    if len(holders) != 1:
        return result("test_trace_pattern", d)
    track = holders.pop()
    # How long the sampler was held back in all, by its own counts: its
    # missed 1 ms periods, and the sample timeout (100 ms) of each failed
    # sample (a thread that got no CPU to answer). 0 + 2 ms on a quiet
    # machine: then 10 % holds strictly.
    st = facts["stats"]
    gap_at = st["missed_ticks"] * 1e6 + st["failed"] * 100e6 + 2e6
    print("sampler held back up to %.0f ms in all (%d missed periods, %d "
          "failed samples)" % (gap_at / 1e6, st["missed_ticks"], st["failed"]))

    children = phase_children(slices, track)
    if facts.get("tsan"):
        # TSan holds the sampling signal back (tests/check.h): the files
        # must parse and hold the pattern's frames; the slices are printed,
        # not held to the phases.
        print("TSan build: slices under pattern_run:",
              [c["name"] for c in children])
        check(any(s["name"].startswith("phase_") for s in slices),
              "perfetto: no phase_* slice at all")
        return result("test_trace_pattern", d)
    pf_edges = [t for s in slices if s["track"] == track
                for t in (s["ts"], s["ts"] + s["dur"])]
    pf_drawn = check_phases("perfetto", children, phases, gap_at, pf_edges)
    for c in children:
        st, wait = c["ann"].get("state"), c["ann"].get("wait")
        if c["name"] == "phase_b":
            check(st == "blocked" and wait == "mutex",
                  "perfetto: phase_b is %s/%s, not blocked on a mutex" % (st, wait))
        else:
            check(st in ("running", "runnable"),
                  "perfetto: %s is %s, not computing" % (c["name"], st))
    marks = [i for i in instants if i["name"] == "phase_c mark"]
    check(len(marks) == 1, "perfetto: %d marks named 'phase_c mark'" % len(marks))
    if marks and len(phases) == 4:
        m = marks[0]
        check(phases[3]["begin"] <= m["ts"] <= phases[3]["end"],
              "perfetto: the mark is not inside phase_c")
        stack = str(m["ann"].get("stack", ""))
        check("phase_c" in stack, "perfetto: the mark's stack lacks phase_c: %r" % stack)

    # Chrome JSON: the same slices.
    with open(os.path.join(d, "trace.json")) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    runs = [e for e in xs if e["name"] == "pattern_run"]
    check(len({e["tid"] for e in runs}) == 1, "json: pattern_run on several threads")
    if runs:
        tid = runs[0]["tid"]
        mine = [e for e in xs if e["tid"] == tid]
        kids = []
        for r in runs:
            kids += [e for e in mine if r["ts"] <= e["ts"] < r["ts"] + r["dur"]
                     and e["name"].startswith("phase_") and
                     e["ts"] + e["dur"] <= r["ts"] + r["dur"] + 1e-3]
        # Only the outermost phase_* slices (a phase under a phase would be
        # recursion, which the pattern has none of).
        kids = sorted(kids, key=lambda e: e["ts"])
        # Chrome's ts are us from ts_base_unix_ns: the phases' clock.
        base = int(doc["otherData"]["ts_base_unix_ns"])
        as_slices = [dict(name=e["name"], ts=base + e["ts"] * 1000,
                          dur=e["dur"] * 1000) for e in kids]
        edges = [base + t * 1000 for e in mine
                 for t in (e["ts"], e["ts"] + e["dur"])]
        check_phases("json", as_slices, phases, gap_at, edges)
        ims = [e for e in ev if e.get("ph") in ("i", "I") and e["name"] == "phase_c mark"]
        check(len(ims) == 1, "json: %d mark instants" % len(ims))

    # Folded: counts add up to the samples of the window (marks excluded),
    # which the JSON's slices also count.
    total, per_phase = 0, {}
    with open(os.path.join(d, "trace.folded")) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            check(count.isdigit(), "folded: bad line %r" % line)
            total += int(count)
            for p in ("phase_a", "phase_b", "phase_c"):
                if ";%s;" % p in stack + ";":
                    per_phase[p] = per_phase.get(p, 0) + int(count)
    json_samples = sum(e["args"]["samples"] for e in xs
                       if e.get("args", {}).get("samples") is not None and
                       e["name"] == "_start" and e["tid"] == (runs[0]["tid"] if runs else -1))
    print("folded: %d us; per phase %s; json main-root samples %d"
          % (total, per_phase, json_samples))
    check(total >= json_samples > 0, "folded: %d us, the main thread's slices "
          "%d samples" % (total, json_samples))
    # Issue 25 (item 6): folded counts are time (microseconds), so each
    # phase's lines add up to how long the program measured it, however
    # unevenly a busy machine let the sampler sample it: within 10 %, or
    # within how late the sampler was in all (an edge can be off by that),
    # plus the edges' slack as the Perfetto slices drew them.
    for p in ("phase_a", "phase_b", "phase_c"):
        want_ns = sum(q["end"] - q["begin"] for q in phases if q["name"] == p)
        got_ns = per_phase.get(p, 0) * 1000
        slack = max(0.10 * want_ns, gap_at) + sum(
            edge_slack(phases, q, pf_drawn, pf_edges)
            for q in phases if q["name"] == p)
        print("folded: %s %.1f ms (measured %.1f ms, allowed %.1f)"
              % (p, got_ns / 1e6, want_ns / 1e6, slack / 1e6))
        check(abs(got_ns - want_ns) <= slack or (got_ns == 0 and gap_at >= 100e6),
              "folded: %s %.1f ms, the program measured %.1f ms"
              % (p, got_ns / 1e6, want_ns / 1e6))
    transitions(a, d, facts.get("tsan"))
    return result("test_trace_pattern", d)


def transitions(a, d, tsan):
    """150 times burn_2ms (computing) then nap_5ms (asleep): no slice of
    burn_2ms may be mostly blocked (the stack of a thread that went to
    sleep is not the one it was computing in), and the naps are seen."""
    cmd = shlex.split(a.run_with) + [a.program, d, "transitions"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
    check(r.returncode == 0, "transitions: exit %d %s" % (r.returncode, r.stderr))
    if r.returncode != 0:
        return
    with open(os.path.join(d, "transitions.json")) as f:
        ev = json.load(f)["traceEvents"]
    burns = [e for e in ev if e.get("ph") == "X" and e["name"] == "burn_2ms"]
    naps = [e for e in ev if e.get("ph") == "X" and e["name"] == "nap_5ms"]
    blocked = [e for e in burns if e["args"].get("state") == "blocked"]
    print("transitions: %d burn_2ms slices (%d of them blocked), %d nap_5ms "
          "slices" % (len(burns), len(blocked), len(naps)))
    if tsan:
        return
    check(len(naps) >= 30, "transitions: only %d nap_5ms slices" % len(naps))
    check(not blocked, "transitions: %d burn_2ms slices are blocked (a "
          "sleeping thread shown in the stack it had left): %s"
          % (len(blocked), blocked[:2]))



if __name__ == "__main__":
    sys.exit(main())
