#!/usr/bin/env python3
"""test_lag_liveness: a start turns only a dead process's report into
hang_killed (issue 13, item 5).

A report still "ongoing" when snap_lag_start runs used to be taken for a
killed process's, always. But two live processes may share a report
directory. Reports carry "pid" and "pid_start"; this test checks, with
real processes (lag_holder) and Python's json module as the reader:
  1. another process's lag in progress: its report is left alone by a
     start, and ends "ongoing": false when that process ends it;
  2. a killed process, not yet reaped (a zombie): hang_killed, with the
     bounds of its death it knows (killed_after_unix_ms, its last write;
     killed_by_unix_ms, the rewrite due that never came) around the
     moment this script killed it;
  3. reports made from a real one with pid and pid_start changed:
     a live process (this script) and its start token: left alone;
     the same pid with another start token (a reused pid): hang_killed;
     no pid_start (a report of an older version): hang_killed, as before;
     a pid no process has: hang_killed.
The start token's oracle is the kernel's own /proc/<pid>/stat (field 22,
proc(5)) and boot id, read here, not by stacksnap.

usage: liveness.py LAG_HOLDER [--run-with "EMULATOR ARGS"]
"""
import argparse
import glob
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


def token(pid):
    """The start token of a live pid, from the kernel (proc(5))."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return f"{boot}:{fields[22 - 3]}"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("holder")
    ap.add_argument("--run-with", default="")
    a = ap.parse_args()
    cmd = shlex.split(a.run_with) + [a.holder]
    work = tempfile.mkdtemp(prefix="snap_liveness.")
    rdir = os.path.join(work, "reports")

    def hold():
        """A process in a lag; returns it and its report's path."""
        p = subprocess.Popen(cmd + [rdir, "hold"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
        # Its first announcement: the lag's file, written ongoing. A
        # generous bound: qemu and TSan start slowly on a loaded box.
        ready, _, _ = select.select([p.stdout], [], [], 120)
        path = p.stdout.readline().decode().strip() if ready else ""
        check(path.endswith("-lag.json"), f"holder {p.pid}: no lag report")
        return p, path

    def start_stop():
        r = subprocess.run(cmd + [rdir, "start"], stdout=subprocess.PIPE,
                           timeout=300)
        check(r.returncode == 0, f"start/stop: exit status {r.returncode}")
        return r.stdout.decode().split()

    def killed():
        return sorted(glob.glob(os.path.join(rdir, "*-hang_killed.json")))

    # 1. Another live process's lag.
    a_proc, a_path = hold()
    with open(a_path) as f:
        sample = f.read()  # a real ongoing report, for part 3
    start_stop()
    r = load(a_path)
    check(r.get("ongoing") is True and r.get("kind") == "lag" and
          r.get("pid") == a_proc.pid,
          f"a live process's ongoing report was changed by another's "
          f"start: {os.path.basename(a_path)} is now {r}"[:300])
    check(not killed(), f"a live process's lag became hang_killed: "
          f"{[os.path.basename(k) for k in killed()]}")
    check(r.get("pid_start") == token(a_proc.pid),
          f"pid_start {r.get('pid_start')!r}, the kernel says "
          f"{token(a_proc.pid)!r}")
    a_proc.stdin.write(b"\n")
    a_proc.stdin.flush()
    check(a_proc.wait(timeout=120) == 0, "holder: exit status")
    r = load(a_path)
    check(r.get("ongoing") is False and r.get("kind") == "lag",
          f"the lag its process ended: {r}"[:300])
    start_stop()
    check(not killed(), "an ended lag became hang_killed")

    # 2. A killed process, not reaped yet: a zombie is no live process.
    # A zombie once every thread of it has exited: its leader turns "Z"
    # as soon as the leader itself has, while its other threads (the
    # watchdog's) may still be on their way out, for as long as they wait
    # for a CPU on a busy box; until then the process is not gone (a
    # leader that exited beside live threads is a live process, and a
    # start rightly leaves its report alone). So the event waited for is
    # the leader "Z" with no task but it.
    b_proc, b_path = hold()
    b_before = load(b_path)  # its last write before the kill
    kill_ms = time.time() * 1000  # this script's clock: the oracle
    b_proc.kill()
    deadline = time.time() + 60
    zombie = False
    while time.time() < deadline and not zombie:
        with open(f"/proc/{b_proc.pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        zombie = state == "Z" and \
            os.listdir(f"/proc/{b_proc.pid}/task") == [str(b_proc.pid)]
        if not zombie:
            time.sleep(0.01)
    check(zombie, f"the killed holder {b_proc.pid} is no zombie after 60 s")
    start_stop()
    b_killed = b_path[:-len("-lag.json")] + "-hang_killed.json"
    r = load(b_killed)
    check(not os.path.exists(b_path) and r.get("kind") == "hang_killed" and
          r.get("ongoing") is False,
          f"a killed (zombie) process's lag: {os.path.basename(b_path)} "
          f"exists {os.path.exists(b_path)}, hang_killed {r}"[:300])
    # Issue 25: it says when the process died, as far as it is known:
    # after its last write, and by the rewrite that was due and never came.
    after, by = r.get("killed_after_unix_ms"), r.get("killed_by_unix_ms")
    check(after is not None and by is not None and
          after == b_before.get("updated_unix_ms") and
          after <= kill_ms + 1 and kill_ms <= by,
          f"hang_killed bounds: killed after {after}, by {by}; the test "
          f"killed it at {kill_ms:.0f}, its last write said "
          f"{b_before.get('updated_unix_ms')}")
    b_proc.wait()

    # 3. Reports as processes would leave them (from the real one above).
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: its pid names no process (until reused)
    me = os.getpid()
    mine = token(me)
    variants = {
        "alive": (me, mine, "lag"),
        "reused": (me, mine.split(":")[0] + ":1", "hang_killed"),
        "old": (me, None, "hang_killed"),
        "gone": (gone.pid, mine, "hang_killed"),
    }
    now = int(time.time() * 1000)
    names = {}
    for i, (what, (pid, start, _)) in enumerate(sorted(variants.items())):
        ms = now - 10000 - 1000 * i
        text = re.sub(r'\n"start_unix_ms":\d+', f'\n"start_unix_ms":{ms}',
                      sample)
        text = re.sub(r'\n"pid":\d+', f'\n"pid":{pid}', text)
        text = re.sub(r',\n"pid_start":"[^"]*"',
                      "" if start is None else f',\n"pid_start":"{start}"',
                      text)
        check(json.loads(text)["pid"] == pid, f"{what}: pid not replaced")
        with open(os.path.join(rdir, f"{ms}-lag.json"), "w") as f:
            f.write(text)
        names[what] = ms
    start_stop()
    for what, (pid, start, kind) in variants.items():
        ms = names[what]
        path = os.path.join(rdir, f"{ms}-{kind}.json")
        r = load(path)
        check(r.get("kind") == kind and r.get("ongoing") is (kind == "lag"),
              f"{what} (pid {pid}, pid_start {start}): expected a {kind} "
              f"report, found {sorted(os.listdir(rdir))}")

    if failures:
        print(f"liveness: kept {work}")
        return 1
    shutil.rmtree(work)
    print("liveness: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
