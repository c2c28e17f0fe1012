#!/usr/bin/env python3
"""test_lag_report_script: scripts/lag-report.py labels a lag "computing",
"starved (runnable, no CPU)" or "blocked (in ...)" from the report's time
split (docs/lag.md), on handmade reports whose answers are known.

A compute lag on a saturated machine (little CPU, much run-queue wait)
must read "starved" or "computing", never "waiting" or "blocked"; a lock
wait "blocked (in lock)", a sleep "blocked (in sleep)". Reports without
the split (written before it existed) are still rendered.

Issue 14: a lag whose main thread waits on a lock opens with one sentence
("main thread waits 812 ms for mutex 0x... held by thread 4711
'db-writer' in `rebuild_index`", the function being the holder's
innermost app frame, else its innermost named one), then the holder's
stack, then the rest; a deadlock is said first; an unknown owner is
said so; a report with no wait opens with its header as before.

Issue 15: a schema-2 report's frames print their image or symbol offset
and, once named by stacksnap-symbolicate, their file:line; its images
close the text.

usage: test_lag_report_script.py SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import fail, failures  # noqa: E402


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


def fr(symbol, in_app, pc=0x1000):
    return {"pc": hex(pc), "image": "app" if in_app else "libc.so.6",
            "symbol": symbol, "offset": 4, "in_app": in_app}


def link(tid, name, kind="none", address=None, owner="none", owner_tid=None,
         owner_name=None, frames=()):
    return {"tid": tid, "name": name, "kind": kind, "address": address,
            "owner": owner, "owner_tid": owner_tid, "owner_name": owner_name,
            "frames": list(frames)}


def lock_report(chain, deadlock=None, duration=812):
    r = report(split(1, duration, 0, duration - 1, {"blocked": 15},
                     {"lock": 15}))
    r["duration_ms"] = duration
    r["main_blocked_on"] = chain
    r["threads"] = [dict(c, main=i == 0, running=False)
                    for i, c in enumerate(chain)]
    if deadlock:
        r["deadlock"] = deadlock
    return r


HOLDER_FRAMES = [fr("__lll_lock_wait", False), fr(None, False),
                 fr("rebuild_index", True, 0x2000),
                 fr("db_writer_main", True, 0x3000)]

LOCK_CASES = [
    # name, report, the lines the text must open with (blank lines skipped)
    ("lock owner", lock_report([
        link(1, "main", "mutex", "0x55aa00c0", "known", 4711, "db-writer",
             [fr("__lll_lock_wait", False), fr("on_click", True)]),
        link(4711, "db-writer", frames=HOLDER_FRAMES)]),
     ["main thread waits 812 ms for mutex 0x55aa00c0 held by thread 4711 "
      "'db-writer' in `rebuild_index`",
      "Holder: thread 4711 'db-writer':",
      "  0   libc.so.6", "  1   libc.so.6", "* 2   app", "* 3   app",
      "Report:"]),
    # The holder has no app frame: its innermost named frame.
    ("lock owner, no app frame", lock_report([
        link(1, "main", "rwlock", "0x10", "known", 7, "",
             [fr("x", True)]),
        link(7, "", frames=[fr(None, False), fr("pthread_cond_wait", False),
                            fr("start_thread", False)])], duration=300),
     ["main thread waits 300 ms for rwlock 0x10 held by thread 7 in "
      "`pthread_cond_wait`",
      "Holder: thread 7:"]),
    ("unknown owner", lock_report([
        link(1, "main", "mutex", "0xdead0", "unknown",
             frames=[fr("on_click", True)])], duration=500),
     ["main thread waits 500 ms for mutex 0xdead0 (owner unknown)",
      "Report:"]),
    ("deadlock", lock_report([
        link(1, "main", "mutex", "0xb0", "known", 2, "b", [fr("m", True)]),
        link(2, "b", "mutex", "0xa0", "known", 1, "main",
             [fr("take_a", True)])], deadlock=[1, 2], duration=1000),
     ["deadlock: threads 1 'main' → 2 'b' → 1 'main'",
      "main thread waits 1000 ms for mutex 0xb0 held by thread 2 'b' in "
      "`take_a`",
      "Holder: thread 2 'b', waiting for mutex 0xa0 held by thread 1 "
      "'main' in `m`:",
      "* 0   app"]),
    # No wait: the header first, as before issue 14.
    ("no wait", report(split(590, 600, 5, 5, {"running": 11})),
     ["Report:"]),
]


def lock_cases(script, work):
    for name, r, want in LOCK_CASES:
        path = os.path.join(work, name.replace(" ", "_").replace(",", "")
                            + ".json")
        with open(path, "w") as f:
            json.dump(r, f)
        p = subprocess.run([sys.executable, script, path],
                           capture_output=True, text=True)
        lines = [l for l in p.stdout.splitlines() if l.strip()]
        if p.returncode != 0:
            fail(f"{name}: exit status {p.returncode}: {p.stderr}")
            continue
        got = lines[:len(want)]
        # Sentences exactly; stack and header lines by their start.
        if len(got) != len(want) or any(
                g != w if w.startswith(("main thread", "deadlock:"))
                else not g.startswith(w) for g, w in zip(got, want)):
            fail(f"{name}: the text opens with\n  " + "\n  ".join(got) +
                 "\nwant\n  " + "\n  ".join(want))
        else:
            print(f"ok {name}: {got[0]}")


def schema2(script, work):
    """Issue 15: a /2 report renders; an unnamed frame prints its image
    offset (image_offset, not the /1 offset), a named one its
    symbol_offset, a named-later one its file:line; the images close the
    text with their build ids; an unknown schema is refused."""
    r = report(split(590, 600, 5, 5, {"running": 11}))
    r["schema"] = "stacksnap.lag/2"
    r["images"] = [{"name": "app", "path": "/opt/app", "base": "0x400000",
                    "size": 8192, "build_id": "ab12", "in_app": True}]
    r["main_stack"] = [
        {"pc": "0x401a2b", "image": "app", "symbol": None, "offset": 7,
         "image_offset": "0x1a2b", "symbol_offset": None, "in_app": True},
        {"pc": "0x401100", "image": "app", "symbol": "named", "offset": 9,
         "image_offset": "0x1100", "symbol_offset": 16, "in_app": True,
         "source_file": "/src/app.c", "source_line": 42}]
    path = os.path.join(work, "v2.json")
    with open(path, "w") as f:
        json.dump(r, f)
    p = subprocess.run([sys.executable, script, path], capture_output=True,
                       text=True)
    want = ["app + 6699", "named + 16 (/src/app.c:42)",
            "* 0x400000 - 0x402000 app <ab12> /opt/app"]
    missing = [w for w in want if w not in p.stdout]
    if p.returncode != 0 or missing:
        fail(f"/2 report: exit {p.returncode}, missing {missing}: "
             f"{p.stdout[-600:]!r}")
    else:
        print("ok /2 report: image offsets, file:line, images")
    r["schema"] = "stacksnap.lag/3"
    with open(path, "w") as f:
        json.dump(r, f)
    p = subprocess.run([sys.executable, script, path], capture_output=True,
                       text=True)
    if p.returncode != 1 or "not a lag report" not in p.stderr:
        fail(f"/3 report: exit {p.returncode}, {p.stderr!r}")


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
    lock_cases(script, work)
    schema2(script, work)
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    os.rmdir(work)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
