#!/usr/bin/env python3
"""The trace exporters' files, read by readers nobody here wrote.

Usage: test_trace_export.py TEST_TRACE_EXPORT [--run-with "qemu-aarch64 ..."]

Runs the C program (tests/trace/test_trace_export.c) into a temporary
directory, then reads what it wrote:
  - .pftrace with the Perfetto protos of the `perfetto` PyPI package: the
    clock (REALTIME, first), the sequence flags, the process and thread
    tracks, and the slices rebuilt per thread track from SLICE_BEGIN /
    SLICE_END (names, order, nesting, begin and end to the ns, debug
    annotations) and the marks' instants;
  - .json with Python's json module: the same slices from "X" events,
    the thread names from "M" events, the marks' "i" events;
  - .folded by its line rules: "<thread>;<root>;...;<leaf> <count>",
    sorted by stack (bytewise), no empty frame, counts adding up to the periodic samples.
The expected slices below are written from the scenarios' definitions
(test_trace_export.c), not from the library's output.
Without the perfetto and protobuf packages this test FAILS: CI installs
them (scripts/install-deps.sh).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # never a skip: CI must have them
    print("FAIL: the Perfetto protos are missing (%s): run "
          "scripts/install-deps.sh (pip install perfetto protobuf)" % e)
    sys.exit(1)

MS = 1000000
T0 = 1700000000000000000


# The pattern's slices per thread, in (begin, depth) order: name, depth,
# begin ms, end ms, samples, cpu ms (None: unknown), state, wait.
PATTERN = {
    "main": [
        ("main", 0, 0, 550, 550, 450, "running", "mutex"),
        ("run", 1, 0, 550, 550, 450, "running", "mutex"),
        ("A", 2, 0, 200, 200, 200, "running", None),
        ("B", 2, 200, 300, 100, 0, "blocked", "mutex"),
        ("A", 2, 300, 500, 200, 200, "running", None),
        ("C", 2, 500, 550, 50, 50, "running", None),
    ],
    "worker": [
        ("start", 0, 0, 400, 40, 300, "running", "sleep"),
        ("job", 1, 0, 400, 40, 300, "running", "sleep"),
        ("compute", 2, 0, 300, 30, 300, "running", None),
        ("wait", 2, 300, 400, 10, 0, "blocked", "sleep"),
    ],
    4301: [
        ("thread_start", 0, 0, 50, 5, None, "running", None),
        ("loop", 1, 0, 50, 5, None, "running", None),
    ],
}
PATTERN_TIDS = {4242: "main", 4300: "worker", 4301: 4301}
PATTERN_MARK = ("C mark", 520 * MS + 300, "hook\nC\nrun\nmain")
# Folded counts are microseconds of the thread's time (docs/trace.md): the
# leaf slices' durations above; the stackless sample at 550 ms covers one
# period (1 ms).
PATTERN_FOLDED = {
    "main;main;run;A": 400000, "main;main;run;B": 100000,
    "main;main;run;C": 50000, "main;[no stack]": 1000,
    "worker;start;job;compute": 300000, "worker;start;job;wait": 100000,
    "4301;thread_start;loop": 50000,
}


# ---- Perfetto ------------------------------------------------------------

def read_perfetto(path):
    """Tracks and per-track slices and instants, rebuilt from the events."""
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    packets = list(trace.packet)
    check(len(packets) > 0, "%s: no packets" % path)
    first = packets[0]
    check(first.HasField("clock_snapshot"), "%s: first packet is not the "
          "clock snapshot" % path)
    check(first.clock_snapshot.primary_trace_clock ==
          pb.BUILTIN_CLOCK_REALTIME, "%s: trace clock is not REALTIME" % path)
    check([c.clock_id for c in first.clock_snapshot.clocks] ==
          [pb.BUILTIN_CLOCK_REALTIME], "%s: snapshot clocks" % path)
    check(first.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED,
          "%s: first packet does not clear the incremental state" % path)
    seqs = {p.trusted_packet_sequence_id for p in packets}
    check(len(seqs) == 1 and 0 not in seqs, "%s: sequence ids %s" % (path, seqs))

    process = None
    threads = {}  # uuid -> (tid, name or None)
    slices = {}   # uuid -> [(name, depth, begin, end, annotations)]
    instants = {}
    stacks = {}
    last_ts = 0
    for p in packets[1:]:
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            check(td.uuid != 0, "%s: track uuid 0" % path)
            if td.HasField("process"):
                process = (td.process.pid, td.process.process_name, td.uuid)
            elif td.HasField("thread"):
                threads[td.uuid] = (td.thread.tid, td.thread.thread_name
                                    if td.thread.HasField("thread_name")
                                    else None, td.thread.pid)
            continue
        check(p.HasField("track_event"), "%s: unexpected packet %s" %
              (path, p.WhichOneof("data")))
        check(p.HasField("timestamp") and p.timestamp_clock_id ==
              pb.BUILTIN_CLOCK_REALTIME, "%s: event without a REALTIME "
              "timestamp" % path)
        check(p.timestamp >= last_ts, "%s: time goes back %d -> %d" %
              (path, last_ts, p.timestamp))
        last_ts = p.timestamp
        ev = p.track_event
        check(ev.track_uuid in threads, "%s: event on unknown track" % path)
        stack = stacks.setdefault(ev.track_uuid, [])
        ann = {}
        for a in ev.debug_annotations:
            kind = a.WhichOneof("value")
            ann[a.name] = getattr(a, kind)
        if ev.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            stack.append((ev.name, len(stack), p.timestamp, ann))
        elif ev.type == pb.TrackEvent.TYPE_SLICE_END:
            check(len(stack) > 0, "%s: SLICE_END with nothing open" % path)
            if stack:
                name, depth, begin, ann0 = stack.pop()
                check(p.timestamp >= begin, "%s: %s ends before it begins" %
                      (path, name))
                slices.setdefault(ev.track_uuid, []).append(
                    (name, depth, begin, p.timestamp, ann0))
        elif ev.type == pb.TrackEvent.TYPE_INSTANT:
            instants.setdefault(ev.track_uuid, []).append(
                (ev.name, p.timestamp, ann))
        else:
            check(False, "%s: event type %d" % (path, ev.type))
    for uuid, stack in stacks.items():
        check(not stack, "%s: %d slices never end" % (path, len(stack)))
    for uuid in slices:  # by begin, then depth: the order slices.c promises
        slices[uuid].sort(key=lambda s: (s[2], s[1]))
    return process, threads, slices, instants


def check_pattern_perfetto(path):
    process, threads, slices, instants = read_perfetto(path)
    check(process is not None and process[0] == 4242 and
          process[1] == "synthapp", "pftrace: process %s" % (process,))
    by_tid = {tid: uuid for uuid, (tid, _, _) in threads.items()}
    check(set(by_tid) == set(PATTERN_TIDS), "pftrace: thread tids %s" %
          sorted(by_tid))
    for uuid, (tid, name, pid) in threads.items():
        want = PATTERN_TIDS.get(tid)
        check(pid == 4242, "pftrace: thread %d pid %d" % (tid, pid))
        check(name == (want if isinstance(want, str) else None),
              "pftrace: thread %d named %r" % (tid, name))
    for tid, key in PATTERN_TIDS.items():
        got = slices.get(by_tid.get(tid), [])
        want = PATTERN[key]
        check(len(got) == len(want), "pftrace %s: %d slices, want %d: %s" %
              (key, len(got), len(want), [g[0] for g in got]))
        for g, w in zip(got, want):
            name, depth, begin, end, ann = g
            ok = (name == w[0] and depth == w[1] and begin == T0 + w[2] * MS
                  and end == T0 + w[3] * MS and ann.get("samples") == w[4]
                  and ann.get("state") == w[6] and ann.get("wait") == w[7]
                  and ann.get("image") == "app")
            if w[5] is None:
                ok = ok and "cpu_ms" not in ann
            else:
                ok = ok and abs(ann.get("cpu_ms", -1) - w[5]) < 1e-9
            check(ok, "pftrace %s: slice %r, want %r" % (key, g, w))
        # The order and durations, said plainly.
        if key == "main":
            leaves = [(g[0], (g[3] - g[2]) / MS) for g in got if g[1] == 2]
            check(leaves == [("A", 200), ("B", 100), ("A", 200), ("C", 50)],
                  "pftrace: main leaves %s" % leaves)
    marks = instants.get(by_tid.get(4242), [])
    check(len(marks) == 1 and marks[0][0] == PATTERN_MARK[0] and
          marks[0][1] == T0 + PATTERN_MARK[1] and
          marks[0][2].get("stack") == PATTERN_MARK[2],
          "pftrace: marks %s" % marks)
    check(sum(len(v) for k, v in instants.items() if k != by_tid.get(4242))
          == 0, "pftrace: instants on other threads")


# ---- Chrome JSON -----------------------------------------------------------

def read_chrome(path):
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))  # strict UTF-8
    check(doc.get("displayTimeUnit") == "ms", "json: displayTimeUnit")
    base = int(doc["otherData"]["ts_base_unix_ns"])
    names, process = {}, None
    xs, marks = {}, {}
    for e in doc["traceEvents"]:
        ph = e["ph"]
        if ph == "M":
            if e["name"] == "process_name":
                process = (e["pid"], e["args"]["name"])
            elif e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
        elif ph == "X":
            begin = base + round(e["ts"] * 1000)
            end = begin + round(e["dur"] * 1000)
            xs.setdefault(e["tid"], []).append([e["name"], None, begin, end,
                                                e["args"]])
        elif ph == "i":
            check(e.get("s") == "t", "json: instant not thread-scoped")
            marks.setdefault(e["tid"], []).append(
                (e["name"], base + round(e["ts"] * 1000), e["args"]))
        else:
            check(False, "json: phase %r" % ph)
    # Depth from containment, as a viewer nests complete events.
    for tid, evs in xs.items():
        evs.sort(key=lambda x: (x[2], -(x[3] - x[2])))
        open_ = []
        for x in evs:
            while open_ and open_[-1][3] <= x[2] and not (
                    open_[-1][3] == x[2] == open_[-1][2]):
                open_.pop()
            for o in open_:
                check(x[3] <= o[3], "json: %s overlaps %s" % (x[0], o[0]))
            x[1] = len(open_)
            open_.append(x)
    return process, names, xs, marks


def check_pattern_chrome(path):
    process, names, xs, marks = read_chrome(path)
    check(process == (4242, "synthapp"), "json: process %s" % (process,))
    check(names == {4242: "main", 4300: "worker"}, "json: names %s" % names)
    for tid, key in PATTERN_TIDS.items():
        got = xs.get(tid, [])
        want = PATTERN[key]
        check(len(got) == len(want), "json %s: %d slices" % (key, len(got)))
        for g, w in zip(got, want):
            name, depth, begin, end, args = g
            ok = (name == w[0] and depth == w[1] and begin == T0 + w[2] * MS
                  and end == T0 + w[3] * MS and args.get("samples") == w[4]
                  and args.get("state") == w[6] and args.get("wait") == w[7]
                  and args.get("image") == "app")
            if w[5] is None:
                ok = ok and "cpu_ms" not in args
            else:
                ok = ok and abs(args.get("cpu_ms", -1) - w[5]) < 1e-9
            check(ok, "json %s: slice %r, want %r" % (key, g, w))
    m = marks.get(4242, [])
    check(len(m) == 1 and m[0][0] == PATTERN_MARK[0] and
          m[0][1] == T0 + PATTERN_MARK[1] and
          m[0][2].get("stack") == PATTERN_MARK[2], "json: marks %s" % m)


# ---- Folded ----------------------------------------------------------------

LINE = re.compile(r"^(\S.*) ([0-9]+)$")


def read_folded(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")  # strict UTF-8
    check(text.endswith("\n") or text == "", "folded: no final newline")
    lines = text.split("\n")[:-1]
    counts = {}
    for line in lines:
        m = LINE.match(line)
        check(m is not None, "folded: bad line %r" % line)
        if not m:
            continue
        stack = m.group(1)
        check(stack not in counts, "folded: stack twice %r" % stack)
        frames = stack.split(";")
        for fr in frames:
            # ASCII spaces only: the count is what follows the last one
            # (a U+2002 at a name's edge is part of the name).
            check(fr != "" and fr == fr.strip(" ") and not any(
                ord(c) < 0x20 or c == "\x7f" for c in fr),
                "folded: bad frame %r in %r" % (fr, line))
        counts[stack] = int(m.group(2))
    stacks = [LINE.match(x).group(1).encode() for x in lines if LINE.match(x)]
    check(stacks == sorted(stacks), "folded: lines not sorted by stack")
    return counts


# ---- Hostile names -----------------------------------------------------------

def as_python(got, raw):
    """got is raw as Python's UTF-8 decoder reads it, each maximal invalid
    subpart replaced by one U+FFFD."""
    return got == raw.decode("utf-8", "replace")


def folded_name(raw):
    """The documented folded-name rule, applied to what Python decodes."""
    s = raw.decode("utf-8", "replace").replace(";", ":")
    s = "".join(" " if ord(c) < 0x20 or c == "\x7f" else c for c in s)
    return s.strip(" ") or "?"


def check_hostile(d):
    with open(os.path.join(d, "hostile.inputs")) as f:
        raw = [bytes.fromhex(line.strip()) for line in f]
    proc, thread, label, frames = raw[0], raw[1], raw[2], raw[3:]
    long_name = "x" * 3000

    process, threads, slices, instants = read_perfetto(
        os.path.join(d, "hostile.pftrace"))
    check(process is not None and as_python(process[1], proc),
          "hostile pftrace: process %r" % (process,))
    (uuid, (tid, tname, _)), = threads.items()
    check(as_python(tname, thread), "hostile pftrace: thread %r" % tname)
    got = slices.get(uuid, [])
    names = [g[0] for g in got]
    want_names = frames + [long_name.encode()]  # begin order: root first
    check(len(names) == len(want_names), "hostile pftrace: %d slices" %
          len(names))
    for g, w in zip(names, want_names):
        check(as_python(g, w), "hostile pftrace: %r for %r" % (g, w))
    (mark,) = instants[uuid]
    check(as_python(mark[0], label), "hostile pftrace: label %r" % mark[0])
    check(as_python(mark[2]["stack"], b"\n".join(reversed(frames))),
          "hostile pftrace: mark stack %r" % mark[2]["stack"])

    process, tnames, xs, marks = read_chrome(os.path.join(d, "hostile.json"))
    check(as_python(process[1], proc), "hostile json: process %r" % (process,))
    check(as_python(tnames[4242], thread), "hostile json: thread")
    got = [x[0] for x in xs[4242]]
    check(len(got) == len(want_names), "hostile json: %d slices" % len(got))
    for g, w in zip(got, want_names):
        check(as_python(g, w), "hostile json: %r for %r" % (g, w))
    check(as_python(marks[4242][0][0], label), "hostile json: label")
    check(as_python(marks[4242][0][2]["stack"],
                  b"\n".join(reversed(frames))), "hostile json: mark stack")

    counts = read_folded(os.path.join(d, "hostile.folded"))
    tn = folded_name(thread)
    want = {";".join([tn] + [folded_name(f) for f in frames]): 3000,
            ";".join([tn] + [folded_name(f) for f in frames[:-1]] +
                     [long_name]): 2000}
    check(counts == want, "hostile folded: %r\nwant %r" % (counts, want))


FUZZ_ROUNDS = 12


def check_fuzz(d, i):
    """Random hostile snapshots: every format parses and nests (the
    readers check that), and every name read back is an input name as
    Python's decoder reads it."""
    with open(os.path.join(d, "fuzz%d.inputs" % i)) as f:
        known = {bytes.fromhex(line.strip()).decode("utf-8", "replace")
                 for line in f}
    _, threads, slices, instants = read_perfetto(
        os.path.join(d, "fuzz%d.pftrace" % i))
    for uuid, (tid, tname, _) in threads.items():
        check(tname is None or tname in known, "fuzz%d: thread %r" % (i, tname))
    for v in slices.values():
        for name, _, _, _, ann in v:
            check(name in known and ann["image"] in known,
                  "fuzz%d pftrace: name %r" % (i, name))
    for v in instants.values():
        for label, _, ann in v:
            check(label in known and all(
                x in known for x in ann["stack"].split("\n")
                if "\n" not in "".join(known)), "fuzz%d: label %r" % (i, label))
    _, tnames, xs, marks = read_chrome(os.path.join(d, "fuzz%d.json" % i))
    check(sorted(len(v) for v in xs.values()) ==
          sorted(len(v) for v in slices.values()),
          "fuzz%d: json and pftrace slice counts differ" % i)
    for v in xs.values():
        for x in v:
            check(x[0] in known, "fuzz%d json: name %r" % (i, x[0]))
    read_folded(os.path.join(d, "fuzz%d.folded" % i))


def check_bench(d, seconds):
    """39 frames that stay and a leaf that changes every sample: a slice
    per sample, 39 around them; the leaf cycles through 1000 names."""
    main, other = seconds * 1000, seconds * 100
    want = {5000: main + 39}
    want.update({5000 + t: other + 39 for t in range(1, 5)})
    _, threads, slices, _ = read_perfetto(os.path.join(d, "bench.pftrace"))
    n = {threads[u][0]: len(v) for u, v in slices.items()}
    check(n == want, "bench pftrace: slices per thread %s" % n)
    _, _, xs, _ = read_chrome(os.path.join(d, "bench.json"))
    n = {t: len(v) for t, v in xs.items()}
    check(n == want, "bench json: slices per thread %s" % n)
    counts = read_folded(os.path.join(d, "bench.folded"))
    lines = min(main, 1000) + 4 * min(other, 1000)
    # Each thread's samples are evenly spaced: its time is its samples
    # times its period (1 ms main, 10 ms the others), in microseconds.
    check(sum(counts.values()) == (main + 4 * other * 10) * 1000 and
          len(counts) == lines,
          "bench folded: %d us in %d lines" % (sum(counts.values()),
                                               len(counts)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--run-with", default="")
    args = ap.parse_args()
    # The figure is a 30 s trace; under an emulator (qemu with
    # emulated pointer authentication) a tenth of it keeps the test short.
    seconds = 3 if args.run_with.strip() else 30
    with tempfile.TemporaryDirectory(prefix="snap-trace-export-") as d:
        r = subprocess.run(shlex.split(args.run_with) + [args.exe, d, str(seconds)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=240)
        sys.stdout.write(r.stdout)
        check(r.returncode == 0, "test_trace_export exited %d" % r.returncode)
        check_pattern_perfetto(os.path.join(d, "pattern.pftrace"))
        check_pattern_chrome(os.path.join(d, "pattern.json"))
        counts = read_folded(os.path.join(d, "pattern.folded"))
        check(counts == PATTERN_FOLDED, "folded: %s" % counts)
        check(sum(counts.values()) == (550 + 1 + 400 + 50) * 1000,
              "folded: %d us" % sum(counts.values()))
        check_hostile(d)
        for i in range(FUZZ_ROUNDS):
            check_fuzz(d, i)
        check_bench(d, seconds)
    if failures:
        print("test_trace_export.py: %d check(s) failed" % len(failures))
        return 1
    print("test_trace_export.py: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
