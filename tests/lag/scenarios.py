#!/usr/bin/env python3
"""test_lag_scenarios: the lag demo's scenarios produce exactly the
expected reports, read with Python's json module (not stacksnap's code).

Each scenario runs stacksnap_lag_demo in a fresh report dir; then the
reports are checked: how many, their kinds, the scenario's own function on
the main stack (an app frame, its offset inside the function's size as
`nm -S` gives it), the lock holder in the threads and named as the owner of the main
thread's mutex (blocked_on, main_blocked_on), a deadlock of two and of
three threads reported while the process stays stuck, class keys stable across
two runs, annealing (one report for a lag repeated with the same stack),
a SIGSTOP of 2 s giving nothing, a SIGKILL mid-hang turned into a
hang_killed report by the next start, and (schema 2) every frame's
image_offset against the listed images, whose build ids readelf -n
confirms.

usage: scenarios.py DEMO [--run-with "EMULATOR ARGS"] [--nm NM]
"""
import argparse
import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import fail, failures  # noqa: E402

TSAN = False
EMULATED = False  # --run-with: the syscall file speaks of the host
# Scenarios whose main thread blocks (TSan may withhold its samples).
WAITING = {"demo_wait_for_lock", "demo_slow_io", "demo_hang",
           "demo_wait_for_usleep_lock"}
# Scenario functions that compute; the others wait (a lock, a read).
COMPUTING = {"demo_heavy_compute", "demo_repeat_compute"}


class Demo:
    def __init__(self, args):
        self.cmd = shlex.split(args.run_with) + [args.demo]
        self.sizes = nm_sizes(args.nm, args.demo)
        self.last_out = ""  # the last run's standard output
        self.work = tempfile.mkdtemp(prefix="snap_lag_scenarios.")

    def dir(self, name):
        d = os.path.join(self.work, name)
        return d

    def start(self, scenario, d, *extra):
        return subprocess.Popen(self.cmd + ["--dir", d, "--scenario", scenario,
                                            "--quiet", *extra],
                                stdout=subprocess.PIPE, text=True)

    def run(self, scenario, d, *extra, timeout=120):
        p = self.start(scenario, d, *extra)
        out, _ = p.communicate(timeout=timeout)
        if p.returncode != 0:
            fail(f"{scenario}: exit status {p.returncode}")
        return out


def nm_sizes(nm, path):
    """Function sizes from nm -S: the oracle for 'this pc is in f'."""
    sizes = {}
    try:
        out = subprocess.run([nm, "-S", "--defined-only", path],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"nm failed: {e}")
        return sizes
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            sizes[parts[3]] = int(parts[1], 16)
    return sizes


def reports(d):
    out = []
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        with open(f) as fh:
            try:
                r = json.load(fh)
            except ValueError as e:
                fail(f"{f} does not parse: {e}")
                continue
        r["_file"] = os.path.basename(f)
        out.append(r)
    return out


def frames_with(frames, name):
    return [f for f in frames if f.get("symbol") == name]


def check_app_frame(demo, scenario, frames, name, where):
    hits = frames_with(frames, name)
    if not hits:
        fail(f"{scenario}: {name} not on the {where}: "
             f"{[f.get('symbol') for f in frames][:12]}")
        return
    for f in hits:
        if not f["in_app"]:
            fail(f"{scenario}: {name} on the {where} is not marked in_app")
        size = demo.sizes.get(name)
        if size is None:
            fail(f"{scenario}: nm does not list {name}")
        elif not (0 <= f["offset"] <= size):
            fail(f"{scenario}: {name}+{f['offset']} is outside its "
                 f"{size} bytes (nm -S)")


BUILD_IDS = {}  # path -> the build id `readelf -n` prints, or None


def readelf_build_id(path):
    """The oracle: binutils' readelf, not stacksnap's note reader."""
    if path not in BUILD_IDS:
        BUILD_IDS[path] = None
        readelf = shutil.which("readelf")
        if readelf and os.path.isfile(path):
            out = subprocess.run([readelf, "-n", path], capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                if "Build ID:" in line:
                    BUILD_IDS[path] = line.split("Build ID:")[1].strip()
    return BUILD_IDS[path]


def check_images(scenario, r):
    """Schema 2: every frame in a known image has image_offset = pc - the
    base of a listed image that holds it; every listed image's build id is
    what readelf -n says of its file (the vdso has no file)."""
    images = r.get("images")
    if not isinstance(images, list) or not images:
        fail(f"{scenario}: {r['_file']} lists no images")
        return
    for im in images:
        want = readelf_build_id(im["path"])
        if os.path.isfile(im["path"]) and want != im["build_id"]:
            fail(f"{scenario}: {im['name']} build id {im['build_id']}, "
                 f"readelf -n says {want}")
    stacks = [r["main_stack"], r["costliest_stack"]["frames"]] + \
        [t["frames"] for t in r["threads"]]
    for f in [f for frs in stacks for f in frs]:
        pc = int(f["pc"], 16)
        if f["symbol"] is not None and f["symbol_offset"] != f["offset"]:
            fail(f"{scenario}: {f['symbol']}: symbol_offset "
                 f"{f['symbol_offset']} vs offset {f['offset']}")
        if f["image_offset"] is None:
            continue
        holders = [im for im in images if im["name"] == f["image"] and
                   int(im["base"], 16) <= pc <
                   int(im["base"], 16) + im["size"]]
        if len(holders) != 1:
            fail(f"{scenario}: pc {f['pc']} in {f['image']}: "
                 f"{len(holders)} listed images hold it")
        elif int(f["image_offset"], 16) != pc - int(holders[0]["base"], 16):
            fail(f"{scenario}: pc {f['pc']}: image_offset "
                 f"{f['image_offset']} is not pc - {holders[0]['base']}")


def check_schema(scenario, r):
    for k in ["schema", "kind", "ongoing", "start_unix_ms", "duration_ms",
              "threshold_ms", "main_stack", "costliest_stack", "class",
              "threads"]:
        if k not in r:
            fail(f"{scenario}: {r['_file']} lacks {k}")
            return False
    if r["schema"] != "stacksnap.lag/2":
        fail(f"{scenario}: schema {r['schema']}")
    if r["_file"] != f"{r['start_unix_ms']}-{r['kind']}.json":
        fail(f"{scenario}: file name {r['_file']} vs content")
    if r["ongoing"]:
        fail(f"{scenario}: {r['_file']} still ongoing after a clean exit")
    for f in r["main_stack"] + r["costliest_stack"]["frames"]:
        if not (isinstance(f["pc"], str) and f["pc"].startswith("0x")):
            fail(f"{scenario}: bad pc {f['pc']}")
    check_images(scenario, r)
    return True


def starved(main_thread):
    """Whether the main thread waited for a CPU at least half the lag, by
    the report's own time split (read from schedstat by the library)."""
    runnable = main_thread.get("runnable_ms")
    return runnable is not None and runnable * 2 >= main_thread["wall_ms"]


def expect_one(demo, scenario, d, kind, func, lo_ms, hi_ms):
    rs = [r for r in reports(d) if check_schema(scenario, r)]
    if len(rs) != 1 or rs[0]["kind"] != kind:
        fail(f"{scenario}: expected one {kind} report, got "
             f"{[r['_file'] for r in rs]}")
        return rs[0] if rs else None
    r = rs[0]
    if TSAN and func in WAITING:
        # TSan delivers the sampling signal only once the thread leaves the
        # blocking call: the sample times out (the report must say so) or
        # lands after the wait, back in the loop. The report's existence,
        # kind and duration are checked; its stacks in the other builds.
        if not r["main_stack"] and \
                "did not stop in time" not in r.get("main_stack_error", ""):
            fail(f"{scenario}: empty main stack without the reason")
        if not (lo_ms <= r["duration_ms"] <= hi_ms):
            fail(f"{scenario}: duration {r['duration_ms']} ms not in "
                 f"[{lo_ms}, {hi_ms}]")
        print(f"ok {scenario} (TSan: a blocked main thread is sampled late "
              f"or not at all: stacks not checked): {r['_file']}", flush=True)
        return r
    mt = r["main_thread"]
    if not r["main_stack"] and starved(mt) and \
            "did not stop in time" in r.get("main_stack_error", ""):
        # A sample is a signal, which a thread runs only once it gets a CPU:
        # a main thread that waited for one most of the lag (a busy box:
        # 572 of 601 ms) may not stop within the sample timeout. The
        # report must say so; its costliest stack (point samples taken
        # while the lag went on) is still checked.
        print(f"ok {scenario}: main thread starved (runnable "
              f"{mt.get('runnable_ms')} of {mt['wall_ms']} ms): no main "
              f"stack, and the report says why", flush=True)
    else:
        check_app_frame(demo, scenario, r["main_stack"], func, "main stack")
    check_app_frame(demo, scenario, r["costliest_stack"]["frames"], func,
                    "costliest stack")
    if not (lo_ms <= r["duration_ms"] <= hi_ms):
        fail(f"{scenario}: duration {r['duration_ms']} ms not in "
             f"[{lo_ms}, {hi_ms}]")
    key = r["class"]["l2" if TSAN else "l1"]  # TSan: interceptors first
    if func not in key or not \
            r["class"]["l2"].startswith(r["class"]["l1"]):
        fail(f"{scenario}: class {r['class']} does not start at {func}")
    main = [t for t in r["threads"] if t["main"]]
    if len(main) != 1 or main[0]["tid"] != r["main_thread"]["tid"]:
        fail(f"{scenario}: main thread not listed once in threads")
    # Running or waiting, as the scheduler said before it was sampled.
    elif kind == "lag" and main[0]["running"] != (func in COMPUTING):
        fail(f"{scenario}: main thread running={main[0]['running']} in "
             f"{func}")
    print(f"ok {scenario}: {r['_file']} {r['duration_ms']} ms, "
          f"class {r['class']['l1']!r}, costliest "
          f"{r['costliest_stack']['hits']}/{r['costliest_stack']['samples']}, "
          f"main cpu {r['main_thread']['cpu_ms']}/"
          f"runnable {r['main_thread'].get('runnable_ms')}/"
          f"blocked {r['main_thread'].get('blocked_ms')} of "
          f"{r['main_thread']['wall_ms']} ms",
          flush=True)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("demo")
    ap.add_argument("--run-with", default="")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--tsan", action="store_true",
                    help="ThreadSanitizer build: TSan holds the sampling "
                    "signal back while a thread blocks, so a waiting main "
                    "thread may have no stack (the report says why), and "
                    "TSan's interceptors are app frames")
    args = ap.parse_args()
    global TSAN, EMULATED
    TSAN = args.tsan
    EMULATED = bool(args.run_with.strip())
    demo = Demo(args)

    # Computation: the function is on the stack, the thread computing.
    r1 = expect_one(demo, "heavy", run_in(demo, "heavy"), "lag",
                    "demo_heavy_compute", 500, 1500)
    # Class keys are stable across runs (new process, new addresses).
    r2 = expect_one(demo, "heavy (again)", run_in(demo, "heavy"), "lag",
                    "demo_heavy_compute", 500, 1500)
    if r1 and r2 and r1["class"] != r2["class"]:
        fail(f"class keys differ across runs: {r1['class']} vs {r2['class']}")

    # A lock held by a worker: the main thread waits, the holder is listed.
    r = expect_one(demo, "lock", run_in(demo, "lock"), "lag",
                   "demo_wait_for_lock", 500, 2000)
    if r:
        holders = [t for t in r["threads"] if not t["main"] and
                   frames_with(t["frames"], "demo_lock_holder")]
        if not holders:
            fail("lock: no thread shows demo_lock_holder: " +
                 str([[f.get("symbol") for f in t["frames"]][:6]
                      for t in r["threads"]]))
        else:
            check_app_frame(demo, "lock", holders[0]["frames"],
                            "demo_lock_holder", "holder's stack")
        check_owner(r, holder_tid(demo.last_out, "lock-holder"),
                    "lock-holder")
        # Where the time went (issue 13): the heavy lag's main thread
        # computed or, on a machine whose CPUs are all busy (under qemu a
        # computing thread may get a third of a core), waited for a CPU:
        # CPU plus run-queue wait is most of its time, never blocked. The
        # lock lag's main thread is blocked, in a lock where the kernel
        # says so (under qemu the syscall file is the host's: "other").
        def split(m):
            return (m.get("cpu_ms", -1), m.get("runnable_ms", -1),
                    m.get("blocked_ms", -1), m.get("wall_ms", 0))
        if r1:
            cpu, runnable, blocked, wall = split(r1["main_thread"])
            if runnable < 0 or blocked < 0 or \
                    cpu + runnable < wall // 2 or blocked > cpu + runnable:
                fail(f"time split: heavy {r1['main_thread']}: computing "
                     f"(or starved) not told from blocked")
        cpu, runnable, blocked, wall = split(r["main_thread"])
        if blocked < 0 or blocked < wall // 2 or blocked < 4 * cpu:
            fail(f"time split: lock {r['main_thread']}: blocked not told "
                 f"from computing")
        waits = r["main_thread"].get("blocked_in", {})
        if not TSAN and sum(waits.values()) and \
                max(waits, key=waits.get) not in (
                    ("lock", "other") if EMULATED else ("lock",)):
            fail(f"time split: lock blocked in {waits}")

    # Observing must not change the app (issue 13 item 6): the holder sleeps
    # in ONE usleep(900 ms) with the lock held. The dump at detection must
    # not end that sleep (a signal would: EINTR, the lock let go, the lag
    # reported as ~250 ms). Under qemu-user the kernel's syscall file
    # describes the emulator's host thread, so the library cannot sample
    # quietly and falls back to the signal: there the lag is cut short, and
    # this says so instead of passing silently.
    qemu = "qemu" in args.run_with
    r = expect_one(demo, "usleep-lock", run_in(demo, "usleep-lock"), "lag",
                   "demo_wait_for_usleep_lock", 200 if qemu else 800, 2000)
    if r and qemu:
        # The signal ends the holder's sleep at the dump (its first sample
        # takes two signals, the stack learned in between), so the holder
        # lets go and exits: listed by its id (the demo prints it), with
        # its own frame, gone, or caught in libc's thread exit (start_thread
        # and clone, no app frame left: seen in CI).
        tid = holder_tid(demo.last_out)
        holders = [t for t in r["threads"] if not t["main"] and
                   t.get("tid") == tid and
                   (frames_with(t["frames"], "demo_usleep_holder") or
                    t.get("error") == "no such thread, or it exited" or
                    (t["frames"] and all(f.get("image") == "libc.so.6"
                                         for f in t["frames"])))]
        if tid is None or not holders:
            fail(f"usleep-lock (qemu, signalled): the holder (tid {tid}) is "
                 "not listed: " +
                 str([(t.get("tid"), t.get("error"),
                       [(f.get("image"), f.get("symbol"))
                        for f in t["frames"]][:6])
                      for t in r["threads"]]))
        print(f"usleep-lock under qemu-user: quiet sampling cannot work "
              f"(the syscall file describes the host), the library fell back "
              f"to the signal: lag {r['duration_ms']} ms of the 900 ms wait",
              flush=True)
    elif r and not TSAN:
        holders = [t for t in r["threads"] if not t["main"] and
                   frames_with(t["frames"], "demo_usleep_holder")]
        if not holders:
            fail("usleep-lock: no thread shows demo_usleep_holder: " +
                 str([[f.get("symbol") for f in t["frames"]][:6]
                      for t in r["threads"]]))
        else:
            check_app_frame(demo, "usleep-lock", holders[0]["frames"],
                            "demo_usleep_holder", "holder's stack")

    # Deadlocks: the report is written while the process stays stuck, and
    # names exactly the cycle.
    for scenario, names in (("deadlock", ["deadlock-b"]),
                            ("deadlock3", ["deadlock-b", "deadlock-c"])):
        check_deadlock(demo, scenario, names)

    # Blocking I/O.
    r = expect_one(demo, "io", run_in(demo, "io"), "lag", "demo_slow_io",
                   400, 1500)
    if r:
        m = r["main_thread"]
        waits = m.get("blocked_in", {})
        if m.get("blocked_ms", -1) < m["wall_ms"] // 2:
            fail(f"time split: io {m}: not blocked")
        elif not TSAN and sum(waits.values()) and \
                max(waits, key=waits.get) not in (
                    ("io", "other") if EMULATED else ("io",)):
            fail(f"time split: io blocked in {waits}")

    # Annealing: two identical lags, one report, counting the repeat.
    r = expect_one(demo, "repeat", run_in(demo, "repeat"), "lag",
                   "demo_repeat_compute", 300, 1000)
    if r and r["repeats"] != 1:
        fail(f"repeat: repeats {r['repeats']}, expected 1")

    # A hang: kind "hang" once past hang_ms, duration to the end.
    expect_one(demo, "hang", run_in(demo, "hang", "--hang-ms", "1500",
                                    "--hang-seconds", "3"),
               "hang", "demo_hang", 2700, 4500)

    # CPU: short iterations, main thread hot: a cpu report, no lag.
    # The demo computes ~89 % of the time, but what the main thread gets is
    # the machine's to decide: under load (two busy loops, TSan's or qemu's
    # own threads) it got less than any fixed threshold in CI. So the
    # oracle is the share the demo measured itself (its thread CPU clock):
    # a report is due when it got >= 45 % (some 1.5 s window then reached
    # the 30 % trigger), none may come below 15 %; in between either is
    # right. What is checked is the trigger against the truth, not the load.
    d = run_in(demo, "cpu", "--seconds", "4", "--cpu-window", "1500",
               "--cpu-percent", "30")
    share = measured_share(demo.last_out)
    rs = reports(d)
    # A piece is 40 ms of the demo's wall clock (demo_cpu_burner): one the
    # scheduler held off the CPU past the threshold is a true lag, and
    # only that may come: its own split shows at most one piece of CPU
    # and the rest waiting for a CPU. A lag that computed longer than a
    # piece would be pieces run together, the defect this case guards.
    starved = [r for r in rs if r["kind"] == "lag" and starved_piece(r, 40)]
    for r in starved:
        m = r["main_thread"]
        print(f"ok cpu: a 40 ms piece held off the CPU is a lag of "
              f"{r['duration_ms']} ms (cpu {m['cpu_ms']}, runnable "
              f"{m['runnable_ms']} ms): load, reported as it was", flush=True)
    rs = [r for r in rs if r not in starved]
    kinds = sorted(r["kind"] for r in rs)
    if share is None:
        fail("cpu: the demo did not say what CPU share it got")
    elif kinds and set(kinds) != {"cpu"}:
        fail(f"cpu: expected cpu reports only, got {kinds}")
    elif not kinds and share >= 0.45:
        fail(f"cpu: the main thread got {share:.0%} of a core, no cpu report")
    elif kinds and share <= 0.15:
        fail(f"cpu: the main thread got only {share:.0%} of a core, yet a "
             f"cpu report")
    elif not kinds:
        print(f"ok cpu: no report, and the main thread got only {share:.0%} "
              f"of a core (load)", flush=True)
    else:
        r = rs[0]
        check_schema("cpu", r)
        if r["cpu"]["percent"] < 30:
            fail(f"cpu: percent {r['cpu']}")
        check_app_frame(demo, "cpu", r["costliest_stack"]["frames"],
                        "demo_cpu_burner", "costliest stack")
        print(f"ok cpu: {len(rs)} report(s) at {share:.0%} measured, "
              f"{r['cpu']}, costliest "
              f"{r['costliest_stack']['hits']}/{r['costliest_stack']['samples']}",
              flush=True)

    # SIGSTOP for 2 s during busy stretches below the threshold: nothing.
    d = demo.dir("steady")
    p = demo.start("steady", d, "--seconds", "5")
    time.sleep(1.5)
    p.send_signal(signal.SIGSTOP)
    time.sleep(2.0)
    p.send_signal(signal.SIGCONT)
    p.communicate(timeout=60)
    rs = reports(d)
    if rs:
        fail(f"steady + SIGSTOP 2 s: reports {[r['_file'] for r in rs]}")
    else:
        print("ok steady + SIGSTOP 2 s: no report", flush=True)

    # Killed mid-hang: SIGKILL once the hang report exists, then restart.
    d = demo.dir("killed")
    p = demo.start("hang", d, "--hang-ms", "1000", "--hang-seconds", "30")
    deadline = time.time() + 60
    while time.time() < deadline and not glob.glob(os.path.join(d, "*-hang.json")):
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    before = [os.path.basename(f) for f in glob.glob(os.path.join(d, "*.json"))]
    demo.run("none", d)
    rs = reports(d)
    if len(rs) != 1 or rs[0]["kind"] != "hang_killed":
        fail(f"killed: before restart {before}, after "
             f"{[r['_file'] for r in rs]}")
    else:
        r = rs[0]
        check_schema("killed", r)
        check_app_frame(demo, "killed", r["main_stack"], "demo_hang",
                        "main stack")
        if r["duration_ms"] < 1000:
            fail(f"killed: duration {r['duration_ms']} below hang_ms")
        print(f"ok killed mid-hang: {before} -> {r['_file']}, "
              f"{r['duration_ms']} ms at the last update", flush=True)

    if failures:
        print(f"{len(failures)} failure(s); reports kept in {demo.work}")
        return 1
    shutil.rmtree(demo.work)
    return 0


def run_in(demo, scenario, *extra):
    d = demo.dir(scenario + "-" + str(len(os.listdir(demo.work))))
    demo.last_out = demo.run(scenario, d, *extra)
    return d


def holder_tid(out, name="usleep-holder"):
    """The thread id the demo printed for thread `name` ("holder:" line),
    or None."""
    for line in (out or "").splitlines():
        if line.startswith(f"holder: {name} tid="):
            return int(line.split("=")[1])
    return None


def check_owner(r, tid, name):
    """Issue 14: the lock lag's report names the holder as the owner of
    the mutex main waits on: in main's blocked_on, and as the second link
    of main_blocked_on, with the holder's own stack."""
    if TSAN:
        # TSan may withhold the main thread's sample (see expect_one).
        print("lock: TSan: the owner is checked in the other builds")
        return
    main = [t for t in r["threads"] if t["main"]]
    b = main[0].get("blocked_on") if main else None
    if tid is None:
        fail("lock: the demo did not print the holder's tid")
    elif not b or b.get("kind") != "mutex" or b.get("owner") != "known" or \
            b.get("owner_tid") != tid or b.get("owner_name") != name:
        fail(f"lock: main's blocked_on {b}, expected a mutex owned by "
             f"{tid} {name!r}")
    elif not (isinstance(b.get("address"), str) and
              b["address"].startswith("0x")):
        fail(f"lock: blocked_on address {b.get('address')!r}")
    chain = r.get("main_blocked_on", [])
    if len(chain) < 2 or chain[0].get("tid") != r["main_thread"]["tid"] or \
            chain[1].get("tid") != tid or \
            not frames_with(chain[1].get("frames", []), "demo_lock_holder"):
        fail(f"lock: main_blocked_on {[(c.get('tid'), c.get('kind')) for c in chain]}"
             f" does not lead from main to {tid} with its stack")
    if "deadlock" in r:
        fail(f"lock: a deadlock {r['deadlock']} where there is none")
    else:
        print(f"ok lock: main waits on mutex {b and b.get('address')} owned "
              f"by {tid} {name!r}", flush=True)


def check_deadlock(demo, scenario, names):
    """Runs a scenario that deadlocks for good: a report listing the cycle
    must appear while the process is stuck; then it is killed."""
    d = demo.dir(scenario)
    p = demo.start(scenario, d)
    found, deadline = None, time.time() + 60
    while time.time() < deadline and found is None and p.poll() is None:
        time.sleep(0.05)
        for r in reports(d):
            if "deadlock" in r:
                found = r
    alive = p.poll() is None
    p.kill()
    out, _ = p.communicate(timeout=60)
    if not alive:
        fail(f"{scenario}: the demo exited ({p.returncode}): not stuck")
    if found is None:
        if TSAN:
            print(f"{scenario}: TSan: no deadlock report (the blocked main "
                  f"thread's sample is held back)", flush=True)
            return
        fail(f"{scenario}: no report with a deadlock while stuck: "
             f"{[(r['_file'], r.get('main_blocked_on')) for r in reports(d)]}")
        return
    main_tid = found["main_thread"]["tid"]
    tids = [holder_tid(out, n) for n in names]
    want = [main_tid] + tids
    if None in tids or sorted(found["deadlock"]) != sorted(want):
        fail(f"{scenario}: deadlock {found['deadlock']}, expected the cycle "
             f"{want}")
    if not found["ongoing"]:
        fail(f"{scenario}: the report is not ongoing while the process is "
             f"stuck")
    chain = found.get("main_blocked_on", [])
    # The chain from main follows the lock order: main -> b (-> c).
    if [c.get("tid") for c in chain] != want or \
            any(c.get("kind") != "mutex" for c in chain):
        fail(f"{scenario}: main_blocked_on "
             f"{[(c.get('tid'), c.get('kind'), c.get('owner_tid')) for c in chain]}"
             f" is not {want}")
    for c in chain[1:]:
        if not frames_with(c.get("frames", []), "demo_deadlock_worker"):
            fail(f"{scenario}: {c.get('tid')}'s stack lacks "
                 f"demo_deadlock_worker")
    print(f"ok {scenario}: deadlock {found['deadlock']} reported while stuck "
          f"({found['_file']}, {found['duration_ms']} ms)", flush=True)


def starved_piece(r, piece_ms):
    """A lag report that is one piece of piece_ms (by the demo's wall
    clock) stretched by waiting for a CPU: the main thread computed no
    longer than the piece, and spent the rest of the lag runnable."""
    m = r["main_thread"]
    return (m["cpu_ms"] <= piece_ms + 10 and m["blocked_ms"] <= 10 and
            m["runnable_ms"] >= r["duration_ms"] - piece_ms - 10)


def measured_share(out):
    """The main thread's CPU share the demo measured itself (its
    "measured:" line), or None."""
    for line in (out or "").splitlines():
        if line.startswith("measured: main thread "):
            f = dict(kv.split("=") for kv in line.split()[3:])
            return int(f["cpu_ms"]) / max(1, int(f["wall_ms"]))
    return None


if __name__ == "__main__":
    sys.exit(main())
