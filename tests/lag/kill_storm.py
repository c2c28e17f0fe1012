#!/usr/bin/env python3
"""test_lag_kills: kill a report-writing process at random instants.

Runs lag_churn (a loop whose iterations are lags and hangs, so report files
are written, updated, renamed and converted all the time) N times, each
killed with SIGKILL after a random delay. Then checks, with Python's json
module (not stacksnap's code):
  - every *.json in the report dir parses and is a stacksnap.lag/2 report
    whose kind matches its file name;
  - every file the process announced (after its rename) still exists, or
    was superseded by design: <ms>-lag -> <ms>-hang -> <ms>-hang_killed;
  - killed lags were turned into hang_killed reports by the next start;
  - after one clean start/stop nothing is left "ongoing".

usage: kill_storm.py LAG_CHURN KILLS [--seed S] [--max-delay SECONDS]
                     [--run-with "EMULATOR ARGS"]
"""
import argparse
import glob
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REQUIRED = ["schema", "kind", "ongoing", "start_unix_ms", "duration_ms",
            "threshold_ms", "main_stack", "costliest_stack", "class", "threads"]
SUPERSEDED_BY = {"lag": ["hang", "hang_killed"], "hang": ["hang_killed"]}


def wait_for_ongoing(rdir, deadline):
    """Waits until some report in rdir is written as ongoing."""
    prefix = b'{"schema":"stacksnap.lag/2","kind":"'
    while time.time() < deadline:
        for f in glob.glob(os.path.join(rdir, "*.json")):
            try:
                with open(f, "rb") as fh:
                    head = fh.read(80)
            except OSError:
                continue
            if head.startswith(prefix) and b'"ongoing":true' in head:
                return 1
        time.sleep(0.002)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("churn")
    ap.add_argument("kills", type=int)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--max-delay", type=float, default=0.4)
    ap.add_argument("--run-with", default="")
    a = ap.parse_args()
    churn = shlex.split(a.run_with) + [a.churn]
    rng = random.Random(a.seed)
    print(f"kill_storm: seed {a.seed}, {a.kills} kills")
    work = tempfile.mkdtemp(prefix="snap_kill_storm.")
    rdir, log = os.path.join(work, "reports"), os.path.join(work, "announced")
    failures = []
    killed_alive = 0
    ongoing_kills = 0
    for i in range(a.kills):
        p = subprocess.Popen(churn + [rdir, log, "30"], stdout=subprocess.PIPE)
        if p.stdout.readline() != b"ready\n":  # snap_lag_start returned
            failures.append(f"run {i}: the child did not start")
        if i % 10 == 9:
            # Every tenth kill lands while a report is "ongoing", for sure.
            ongoing_kills += wait_for_ongoing(rdir, deadline=time.time() + 10)
        else:
            time.sleep(rng.uniform(0.0, a.max_delay))
        if p.poll() is None:
            killed_alive += 1
        p.send_signal(signal.SIGKILL)
        p.wait()
        if p.returncode not in (-signal.SIGKILL, 0):
            failures.append(f"run {i}: exit status {p.returncode}")
    files = sorted(glob.glob(os.path.join(rdir, "*.json")))

    def check_reports(when):
        for f in sorted(glob.glob(os.path.join(rdir, "*.json"))):
            name = os.path.basename(f)
            try:
                with open(f) as fh:
                    r = json.load(fh)
            except Exception as e:  # any parse error is a failure
                failures.append(f"{when}: {name} does not parse: {e}")
                continue
            missing = [k for k in REQUIRED if k not in r]
            if missing:
                failures.append(f"{when}: {name} lacks {missing}")
            elif r["schema"] != "stacksnap.lag/2" or \
                    not name.endswith(f"-{r['kind']}.json") or \
                    not name.startswith(f"{r['start_unix_ms']}-"):
                failures.append(f"{when}: {name}: schema/kind/start mismatch")

    check_reports("after the kills")
    announced = []
    if os.path.exists(log):
        with open(log) as fh:
            announced = sorted(set(l.strip() for l in fh if l.strip()))
    lost = []
    for path in announced:
        if os.path.exists(path):
            continue
        base = os.path.basename(path)
        ms, kind = base[:-5].split("-", 1)
        later = [os.path.join(rdir, f"{ms}-{k}.json")
                 for k in SUPERSEDED_BY.get(kind, [])]
        if not any(os.path.exists(p) for p in later):
            lost.append(base)
    if lost:
        failures.append(f"{len(lost)} announced report(s) lost: {lost[:5]}")
    killed = glob.glob(os.path.join(rdir, "*-hang_killed.json"))
    if not killed:
        failures.append("no hang_killed report: kills mid-lag were not recovered")

    # One clean start and stop: whatever the last kill left is recovered.
    rc = subprocess.call(churn + [rdir, log, "0"], stdout=subprocess.DEVNULL)
    if rc != 0:
        failures.append(f"clean run: exit status {rc}")
    check_reports("after a clean start")
    for f in glob.glob(os.path.join(rdir, "*.json")):
        with open(f) as fh:
            try:
                if json.load(fh).get("ongoing"):
                    failures.append(f"{os.path.basename(f)} still ongoing")
            except ValueError:
                pass
    tmps = [f for f in os.listdir(rdir) if f.endswith(".tmp")]
    if tmps:
        failures.append(f"temporary files left after a clean start: {tmps}")

    if ongoing_kills == 0:
        failures.append("never saw an ongoing report to kill during")
    print(f"kill_storm: {ongoing_kills} kills during an ongoing report")
    print(f"kill_storm: {killed_alive} processes killed while running, "
          f"{len(files)} reports after the kills, {len(announced)} announced, "
          f"{len(killed)} hang_killed")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        shutil.rmtree(work)
    else:
        print(f"kill_storm: kept {work}; rerun with --seed {a.seed}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
