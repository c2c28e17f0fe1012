#!/usr/bin/env python3
"""test_audit.py — runs programs under libstacksnap_audit.so and checks the
JSON lines it writes (docs/audit.md) against oracles from outside the
preload: strace (how many times the kernel saw each path), what the
program itself saw (its results, its thread ids), nm (the names of its
functions) and readelf (build ids).

    test_audit.py CASE --preload SO --work DIR [--target EXE --nm FILE
                  --readelf READELF --tool STACKSNAP_SYMBOLICATE]

CASE is one of: target, probe, net, threads, fork, exit, term,
close-stderr, sigpipe, stuck-pipe, signal-malloc, exec, clone,
out-symlink, out-symlinks, out-mode, vfork, table-full (the test's own
program, audit_target), git, xz, python, python-exec, peers6, perl, signals
(programs nobody here wrote). Exit 0 when it holds; 1 with the reason.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ARGS = None


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def env_with(**extra):
    env = dict(os.environ)
    env.pop("STACKSNAP_AUDIT_OUT", None)
    env.pop("STACKSNAP_AUDIT_PREFIX", None)
    env.pop("STACKSNAP_AUDIT_APP", None)
    env["LD_PRELOAD"] = ARGS.preload
    # A preload is never first in the library list, which AddressSanitizer
    # checks for (its runtime is in the test's own program).
    env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
    # A forked child of a process with threads (the audit's helper) starts
    # its own helper: glibc allows it, ThreadSanitizer only when told.
    env["TSAN_OPTIONS"] = "die_after_fork=0"
    for k, v in extra.items():
        env[k] = v
    return env


def iso(ns):
    """The ISO 8601 form docs/audit.md gives, by Python's own calendar."""
    t = datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (ns % 10**9 // 1000)


def check_times(d, where):
    for k in ("start", "first", "last", "time"):
        if k + "_ns" in d:
            check(d[k] == iso(d[k + "_ns"]), "%s: %s %r is not %s_ns %d (%s)"
                  % (where, k, d[k], k, d[k + "_ns"], iso(d[k + "_ns"])))


def read_audit(path):
    """Every line must be one JSON object (a line written in part is a
    failure). Returns {pid: {"process":..., "records": {id: merged},
    "end":...}} for the process lines in the file."""
    check(os.path.exists(path), "no audit file " + path)
    procs = {}
    with open(path, "rb") as f:
        data = f.read()
    check(data.endswith(b"\n") or not data, path + ": does not end in a newline")
    for n, raw in enumerate(data.split(b"\n")[:-1], 1):
        try:
            d = json.loads(raw.decode("ascii"))
        except (ValueError, UnicodeDecodeError) as e:
            fail("%s:%d: not a JSON line (%s): %r" % (path, n, e, raw[:200]))
        check(isinstance(d, dict) and "type" in d and "pid" in d,
              "%s:%d: no type or pid" % (path, n))
        check_times(d, "%s:%d" % (path, n))
        p = procs.setdefault(d["pid"], {"process": None, "records": {}, "end": None})
        t = d["type"]
        if t == "process":
            check(d.get("schema") == "stacksnap.audit/2", "schema: %r" % d)
            check(p["process"] is None, "%s:%d: a second process line" % (path, n))
            p["process"] = d
        elif t == "record":
            check(p["process"] is not None, "%s:%d: a record before its process line" % (path, n))
            old = p["records"].get(d["id"])
            if old is None or d["count"] > old["count"]:
                p["records"][d["id"]] = d
        elif t == "update":
            r = p["records"].get(d["id"])
            check(r is not None, "%s:%d: an update before its record" % (path, n))
            if d["count"] > r["count"]:
                for k in ("count", "last", "last_ns", "threads", "threads_more"):
                    r[k] = d[k]
        elif t == "end":
            p["end"] = d
    for pid, p in procs.items():
        check(p["process"] is not None, "pid %d has no process line" % pid)
        for r in p["records"].values():
            check(r["first_ns"] <= r["last_ns"], "first after last: %r" % r)
            check(r["count"] >= 1, "count < 1")
            # The call site indexes the stack; a line too long for the
            # writer's buffer lists only the stack's first frames.
            check(0 <= r["call_site"] < max(1, len(r["frames"])) or
                  (r["frames_truncated"] and r["call_site"] >= 0),
                  "call_site %d out of range of %d frames: %r"
                  % (r["call_site"], len(r["frames"]), r))
    return procs


def only_process(path):
    procs = read_audit(path)
    check(len(procs) == 1, "%s: %d processes, expected 1" % (path, len(procs)))
    return next(iter(procs.values()))


def one_record(proc, resource, count):
    """The one record of resource, which must have counted count calls."""
    recs = records_for(proc, resource)
    check(len(recs) == 1 and recs[0]["count"] == count,
          "%s: records %r, expected one of %d calls"
          % (resource, [(x["function"], x["count"]) for x in recs], count))
    return recs[0]


def dir_with_file(name, file):
    """A fresh work directory with an empty file in it; both paths."""
    d = fresh_dir(name)
    f = os.path.join(d, file)
    open(f, "w").close()
    return d, f


def records_for(proc, resource):
    return [r for r in proc["records"].values() if r["resource"] == resource]


OPEN_SYSCALLS = ("open", "openat", "openat2", "creat")


def strace_count(log, path, calls=OPEN_SYSCALLS):
    """How many of the given system calls named path, in strace's log."""
    n = 0
    pat = re.compile(r'^(?:\[pid +\d+\] |\d+ +)?(\w+)\((?:[^"]*?)"((?:[^"\\]|\\.)*)"')
    with open(log) as f:
        for line in f:
            m = pat.match(line)
            if m and m.group(1) in calls and m.group(2) == path:
                n += 1
    return n


def run(cmd, env, cwd=None, strace_log=None, timeout=120, **kw):
    if strace_log:
        # The preload and its settings for the traced program only (-E):
        # strace itself must not be audited.
        mine = [k for k in env if k == "LD_PRELOAD" or k.startswith("STACKSNAP_AUDIT")]
        sets = sum((["-E", "%s=%s" % (k, env[k])] for k in mine), [])
        env = {k: v for k, v in env.items() if k not in mine}
        cmd = ["strace", "-f", "-qq", "-o", strace_log, "-e",
               "trace=" + ",".join(OPEN_SYSCALLS)] + sets + cmd
    return subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout, **kw)


def fresh_dir(name):
    d = os.path.join(ARGS.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def nm_functions():
    names = set()
    with open(ARGS.nm) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] in "Tt":
                names.add(parts[2])
    return names


def call_site(r):
    return r["frames"][r["call_site"]]


# ---- cases: the test's own program -------------------------------------


def case_target():
    d = fresh_dir("target")
    os.makedirs(os.path.join(d, "private"))
    with open(os.path.join(d, "private", "settings.conf"), "w") as f:
        f.write("colour=blue\n")
    out = os.path.join(d, "audit.jsonl")
    # The program alone is the app (by default its whole directory would
    # be, and the preload is built beside it).
    r = run([ARGS.target, "basic", "private/settings.conf"], cwd=d,
            env=env_with(STACKSNAP_AUDIT_OUT=out,
                         STACKSNAP_AUDIT_PREFIX=d + "/private/",
                         STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target basic failed: %d" % r.returncode)
    p = only_process(out)
    check(p["end"] and p["end"]["reason"] == "exit", "end: %r" % p["end"])
    nm = nm_functions()
    want = {("open", "audit_read_settings", 2), ("fopen", "audit_read_profile", 1),
            ("getaddrinfo", "audit_resolve_server", 1)}
    got = set()
    for rec in p["records"].values():
        cs = call_site(rec)
        check(rec["app"], "call site not the app's: %r" % cs)
        check(cs["symbol"] in nm, "call site %r is not a function nm lists" % cs["symbol"])
        got.add((rec["function"], cs["symbol"], rec["count"]))
        if rec["kind"] == "file":
            check(rec["resource"] == d + "/private/settings.conf", "resource %r" % rec["resource"])
            check(rec["argument"] == "private/settings.conf", "argument %r" % rec["argument"])
            check(rec["result"] == "ok" and rec["errno"] == 0, "result %r" % rec["result"])
        tids = [t["tid"] for t in rec["threads"]]
        check(tids == [p["process"]["pid"]], "threads %r" % rec["threads"])
    check(got == want, "records %r, expected %r" % (sorted(got), sorted(want)))

    # Build ids, as readelf reads them, and image offsets that name the
    # frame: the program's image offset is the nm address of its function
    # plus the symbol offset.
    notes = subprocess.run([ARGS.readelf, "-n", ARGS.target], capture_output=True, text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    addrs = {}
    with open(ARGS.nm) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                addrs[parts[2]] = int(parts[0], 16)
    for rec in p["records"].values():
        cs = call_site(rec)
        check(cs["build_id"] == bid, "build id %r, readelf says %s" % (cs["build_id"], bid))
        check(int(cs["image_offset"], 16) == addrs[cs["symbol"]] + cs["symbol_offset"],
              "image_offset %s of %s is not nm's address + %d" %
              (cs["image_offset"], cs["symbol"], cs["symbol_offset"]))

    # Named later, from the file, by stacksnap-symbolicate (issue 15): the
    # frames with their names taken out, and the images they point into.
    if ARGS.tool:
        images, frames = {}, []
        for rec in p["records"].values():
            for fr in rec["frames"]:
                if fr["image_path"]:
                    images[(fr["image_path"], fr["image_base"])] = {
                        "name": fr["image"], "path": fr["image_path"],
                        "base": fr["image_base"], "size": fr["image_size"],
                        "build_id": fr["build_id"], "in_app": fr["in_app"]}
                frames.append({"pc": fr["pc"], "image": fr["image"],
                               "image_offset": fr["image_offset"],
                               "symbol": None, "symbol_offset": None})
        doc = os.path.join(d, "unnamed.json")
        with open(doc, "w") as f:
            json.dump({"images": list(images.values()), "sites": [{"frames": frames}]}, f)
        named = os.path.join(d, "named.json")
        t = subprocess.run([ARGS.tool, "--no-default-dirs", "-o", named, doc],
                           capture_output=True, text=True)
        check(t.returncode == 0, "stacksnap-symbolicate: %s" % t.stderr)
        text = open(named).read()
        for fn in ("audit_read_settings", "audit_read_profile", "audit_resolve_server"):
            check('"symbol": "%s"' % fn in text, "stacksnap-symbolicate did not name " + fn)
    print("target: 3 records (open x2, fopen x1, getaddrinfo x1) named as nm "
          "names them; build ids as readelf; named again by stacksnap-symbolicate")


def case_probe():
    d = fresh_dir("probe")
    probe = os.path.join(d, "probe")
    os.makedirs(probe)
    with open(os.path.join(probe, "present"), "w") as f:
        f.write("x")
    out = os.path.join(d, "audit.jsonl")
    r = run([ARGS.target, "probe", probe], capture_output=True, text=True,
            env=env_with(STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_PREFIX=probe + "/",
                         STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target probe: %d %s" % (r.returncode, r.stderr))
    p = only_process(out)
    # What the program saw, call by call: each must be one record.
    seen = [line.split() for line in r.stdout.splitlines()]
    recs = list(p["records"].values())
    # The program's open(".") names the directory itself: not under the
    # prefix, so not recorded.
    seen = [s for s in seen if os.path.normpath(os.path.join(probe, s[1])) != probe]
    for fn, path, result in seen:
        want = os.path.normpath(os.path.join(probe, path))
        # FORTIFY or large-file builds call a variant of the same function.
        names = (fn, fn + "64", "__%s_2" % fn, "__%s64_2" % fn)
        match = [x for x in recs if x["resource"] == want and x["result"] == result
                 and x["function"] in names]
        check(len(match) == 1, "%s %s -> %s: %d records match among %r" %
              (fn, path, result, len(match),
               [(x["function"], x["resource"], x["result"]) for x in recs]))
        m = match[0]
        check(m["argument"] == (path if want != path else None),
              "%s: argument %r" % (fn, m["argument"]))
    check(len(recs) == len(seen), "%d records for %d calls" % (len(recs), len(seen)))
    print("probe: %d calls, each one record with the program's own result" % len(seen))


def case_net():
    d = fresh_dir("net")
    out = os.path.join(d, "audit.jsonl")
    r = run([ARGS.target, "net"], capture_output=True, text=True,
            env=env_with(STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target net: %d %s" % (r.returncode, r.stderr))
    p = only_process(out)
    recs = list(p["records"].values())
    seen = [line.split() for line in r.stdout.splitlines()]
    check(len(seen) == 7, "the program made %d calls" % len(seen))
    results = set()
    for fn, peer, result in seen:
        match = [x for x in recs if (x["function"], x["resource"], x["result"]) == (fn, peer, result)]
        check(len(match) == 1 and match[0]["count"] == 1,
              "%s %s -> %s: %r among %r" % (fn, peer, result, match,
                                           [(x["function"], x["resource"], x["result"]) for x in recs]))
        check(call_site(match[0])["symbol"] == "audit_net", "call site %r" % call_site(match[0]))
        results.add(result)
    check("ECONNREFUSED" in results, "no refused connect among %r" % results)
    check(len(recs) == len(seen), "%d records for %d calls" % (len(recs), len(seen)))
    print("net: connect (accepted, refused, unix abstract), sendto, sendmsg, "
          "gethostbyname and _r: each one record, with the program's own result")


def case_threads():
    d, f = dir_with_file("threads", "shared.conf")
    out = os.path.join(d, "audit.jsonl")
    n = 300
    r = run([ARGS.target, "threads", f, str(n)], capture_output=True, text=True,
            env=env_with(STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_PREFIX=d + "/",
                         STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target threads: %d %s" % (r.returncode, r.stderr))
    tids = sorted(int(t) for t in r.stdout.split())
    p = only_process(out)
    # Five threads, five stacks below one call site: one record.
    rec = one_record(p, f, 5 * n)
    check(sorted(t["tid"] for t in rec["threads"]) == tids,
          "threads %r, the program ran on %r" % (rec["threads"], tids))
    print("threads: %d opens on 5 threads at once, one record naming the 5" % (5 * n))


def case_fork():
    d = fresh_dir("fork")
    a, b = os.path.join(d, "a.conf"), os.path.join(d, "b.conf")
    for x in (a, b):
        open(x, "w").close()
    out = os.path.join(d, "audit.jsonl")
    n = 5
    r = run([ARGS.target, "fork", a, b, str(n)], capture_output=True, text=True,
            env=env_with(STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_PREFIX=d + "/",
                         STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target fork: %d %s" % (r.returncode, r.stderr))
    child = int(re.search(r"child (\d+)", r.stdout).group(1))
    files = sorted(os.listdir(d))
    check(files == ["a.conf", "audit.jsonl", "audit.jsonl-%d" % child, "b.conf"],
          "files: %r" % files)
    parent = only_process(out)
    kid = only_process(out + "-%d" % child)
    check(kid["process"]["forked_from"] == parent["process"]["pid"],
          "forked_from %r" % kid["process"]["forked_from"])
    check(parent["process"]["forked_from"] is None, "the parent says forked")
    one_record(parent, a, 2 * n)
    check(not records_for(parent, b), "the parent has the child's record")
    kb = one_record(kid, b, n)
    check(not records_for(kid, a), "the child repeats the parent's record")
    check([t["tid"] for t in kb["threads"]] == [child], "child threads %r" % kb["threads"])
    check(kid["end"] and parent["end"], "an end line is missing")
    print("fork: parent %d opens in its file, child %d in its own, counts %d and %d"
          % (parent["process"]["pid"], child, 2 * n, n))


def case_exit():
    d, f = dir_with_file("exit", "x.conf")
    out = os.path.join(d, "audit.jsonl")
    r = run([ARGS.target, "exit", f, "9"], env=env_with(
        STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_PREFIX=d + "/"))
    check(r.returncode == 7, "status %d, expected 7" % r.returncode)
    p = only_process(out)
    check(p["end"] and p["end"]["reason"] == "_exit", "end %r" % p["end"])
    one_record(p, f, 9)
    print("exit: _exit(7) wrote its 9 opens and an end line")


def case_term():
    d, f = dir_with_file("term", "t.conf")
    out = os.path.join(d, "audit.jsonl")
    proc = subprocess.Popen([ARGS.target, "term", f, "11"], stdout=subprocess.PIPE,
                            text=True, env=env_with(STACKSNAP_AUDIT_OUT=out,
                                                    STACKSNAP_AUDIT_PREFIX=d + "/"))
    line = proc.stdout.readline()
    check(line.strip() == "ready", "no ready line: %r" % line)
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    check(rc == -signal.SIGTERM, "status %d, expected killed by SIGTERM" % rc)
    p = only_process(out)
    check(p["end"] and p["end"]["reason"] == "signal" and p["end"]["signal"] == signal.SIGTERM,
          "end %r" % p["end"])
    one_record(p, f, 11)
    print("term: SIGTERM still ends the process by SIGTERM; its 11 opens and "
          "an end line were written first")


def case_close_stderr():
    d, f = dir_with_file("close_stderr", "sink")
    err = os.path.join(d, "stderr")
    with open(err, "wb") as e:
        r = run([ARGS.target, "close-stderr", f, "4"], stderr=e,
                env=env_with(STACKSNAP_AUDIT_PREFIX=d + "/"))
    check(r.returncode == 0, "status %d" % r.returncode)
    with open(f) as s:
        check(s.read() == "mine\n", "the program's file holds more than its own line")
    p = only_process(err)
    one_record(p, f, 4)
    print("close-stderr: a program that closed fd 2 still has its audit on "
          "the stderr it started with, and its own files hold only its lines")


def case_sigpipe():
    d, f = dir_with_file("sigpipe", "p.conf")
    rd, wr = os.pipe()
    os.close(rd)  # nobody reads the audit: its writes fail with EPIPE
    r = run([ARGS.target, "exit", f, "3"], stderr=wr,
            env=env_with(STACKSNAP_AUDIT_PREFIX=d + "/"))
    os.close(wr)
    check(r.returncode == 7, "status %d: the audit's write into a closed pipe "
          "changed how the program ended" % r.returncode)
    print("sigpipe: a closed stderr pipe costs the audit its lines, not the "
          "program its life")


def case_stuck_pipe():
    d, f = dir_with_file("stuck_pipe", "s.conf")
    rd, wr = os.pipe()
    # A reader that never reads, and a pipe already full: every write of
    # the audit's would wait forever.
    os.set_blocking(wr, False)
    try:
        while True:
            os.write(wr, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(wr, True)
    start = time.monotonic()
    r = run([ARGS.target, "exit", f, "3"], stderr=wr, timeout=60,
            env=env_with(STACKSNAP_AUDIT_PREFIX=d + "/"))
    took = time.monotonic() - start
    os.close(wr)
    os.close(rd)
    check(r.returncode == 7, "status %d" % r.returncode)
    print("stuck-pipe: a stderr nobody drains held the exit back %.1f s, "
          "then the audit's lines were given up" % took)


def case_signal_malloc():
    # access() from a SIGALRM handler that interrupted malloc: the hook
    # must not allocate or lock (it hung, naming the new stack).
    d, f = dir_with_file("signal_malloc", "alarm.conf")
    out = os.path.join(d, "audit.jsonl")
    n = 300
    try:
        r = run([ARGS.target, "sigmalloc", f, str(n)], capture_output=True, text=True,
                timeout=90, env=env_with(STACKSNAP_AUDIT_OUT=out,
                                         STACKSNAP_AUDIT_PREFIX=d + "/",
                                         STACKSNAP_AUDIT_APP=ARGS.target))
    except subprocess.TimeoutExpired:
        fail("audit_target sigmalloc hung (90 s): the hook deadlocked in a "
             "signal handler that interrupted malloc")
    check(r.returncode == 0, "audit_target sigmalloc: %d %s" % (r.returncode, r.stderr))
    handled = int(r.stdout.split()[0])
    check(handled == n, "the handler ran %d times, expected %d" % (handled, n))
    p = only_process(out)
    check(p["end"] and p["end"]["reason"] == "exit", "end %r" % p["end"])
    check(p["end"]["calls_not_kept"] == 0, "calls not kept: %r" % p["end"])
    rec = one_record(p, f, n)
    check(rec["function"] == "access" and rec["result"] == "ok", "record %r" % rec)
    # Named at exit (no helper thread was started from the handler), and
    # its call site is the handler, as nm names it.
    check(rec["named"] and call_site(rec)["symbol"] == "audit_on_alarm",
          "call site %r" % call_site(rec))
    print("signal-malloc: %d access() calls from a SIGALRM handler that "
          "interrupted malloc: no hang, one record of %d" % (n, n))


def case_exec():
    d, f = dir_with_file("exec", "e.conf")
    out = os.path.join(d, "audit.jsonl")
    n = 50
    r = run([ARGS.target, "exec", f, str(n), ARGS.target], capture_output=True,
            text=True, env=env_with(STACKSNAP_AUDIT_OUT=out,
                                    STACKSNAP_AUDIT_PREFIX=d + "/",
                                    STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target exec: %d %s" % (r.returncode, r.stderr))
    tids = sorted(int(t) for t in r.stdout.split())
    check(len(tids) == 8, "the program ran on %r" % tids)
    files = sorted(os.listdir(d))
    check(files == ["audit.jsonl", "e.conf"], "files: %r" % files)
    # The exec'd program (same pid) recorded nothing and wrote nothing.
    p = only_process(out)
    # 8 threads' opens just before a failed exec, the main thread's one
    # after it, then the exec: all of them written before it.
    rec = one_record(p, f, 8 * n + 1)
    got = sorted(t["tid"] for t in rec["threads"])
    check(set(tids) <= set(got) and len(got) == 8 and rec["threads_more"],
          "threads %r, the program ran on %r and its main thread" % (got, tids))
    check(p["end"] and p["end"]["reason"] == "exec", "end %r" % p["end"])
    with open(out) as fh:
        ends = [json.loads(x)["reason"] for x in fh if '"type":"end"' in x]
    check(ends == ["exec", "exec"], "end lines %r: one per exec tried" % ends)
    print("exec: 8 threads' %d opens each, written before the exec (one "
          "failed exec, the process went on)" % n)


def case_python_exec():
    d = fresh_dir("python_exec")
    out = os.path.join(d, "audit.jsonl")
    log = os.path.join(d, "py.strace")
    prog = ("open('/etc/hostname').read(); import os; "
            "os.execv('/bin/true', ['true'])")
    r = run(["/usr/bin/python3", "-c", prog], strace_log=log, capture_output=True,
            text=True, env=env_with(STACKSNAP_AUDIT_OUT=out))
    check(r.returncode == 0, "python3: %d %s" % (r.returncode, r.stderr))
    p = only_process(out)
    recs = [x for x in records_for(p, "/etc/hostname") if x["function"].startswith("open")]
    want = strace_count(log, "/etc/hostname")
    check(want >= 1 and sum(x["count"] for x in recs) == want,
          "python3: %r, strace saw %d" % ([(x["function"], x["count"]) for x in recs], want))
    check(p["end"] and p["end"]["reason"] == "exec", "end %r" % p["end"])
    print("python-exec: the open of /etc/hostname just before os.execv is written")


def case_clone():
    d = fresh_dir("clone")
    a, b = os.path.join(d, "a.conf"), os.path.join(d, "b.conf")
    for x in (a, b):
        open(x, "w").close()
    out = os.path.join(d, "audit.jsonl")
    n = 5
    r = run([ARGS.target, "clone", a, b, str(n)], capture_output=True, text=True,
            env=env_with(STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_PREFIX=d + "/",
                         STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target clone: %d %s" % (r.returncode, r.stderr))
    child = int(re.search(r"child (\d+)", r.stdout).group(1))
    files = sorted(os.listdir(d))
    check(files == ["a.conf", "audit.jsonl", "audit.jsonl-%d" % child, "b.conf"],
          "files: %r" % files)
    parent = only_process(out)
    kid = only_process(out + "-%d" % child)
    check(kid["process"]["pid"] == child and
          kid["process"]["forked_from"] == parent["process"]["pid"],
          "child process line %r" % kid["process"])
    one_record(parent, a, 2 * n)
    check(not records_for(parent, b), "the parent has the child's record")
    kb = one_record(kid, b, n)
    check(not records_for(kid, a), "the child repeats the parent's record")
    check([t["tid"] for t in kb["threads"]] == [child], "child threads %r" % kb["threads"])
    # No fork handler ran: the child never names (its locks are copies),
    # its frames are raw, each placed in its image.
    check(kb["named"] is False and kb["app"] and
          call_site(kb)["image_path"] == os.path.realpath(ARGS.target),
          "child record %r" % {k: kb[k] for k in ("named", "app", "call_site")})
    check(kid["end"] and kid["end"]["reason"] == "_exit", "child end %r" % kid["end"])
    print("clone: a raw clone(SIGCHLD) child's %d opens in its own file" % n)


def wait_open(d, out, f, n, plant):
    """Runs audit_target wait-open; plant(pid) runs before it opens."""
    proc = subprocess.Popen([ARGS.target, "wait-open", f, str(n)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env_with(STACKSNAP_AUDIT_OUT=out,
                                         STACKSNAP_AUDIT_PREFIX=d + "/"))
    pid = int(proc.stdout.readline())
    plant(pid)
    proc.stdin.write("go\n")
    proc.stdin.close()
    check(proc.wait(timeout=120) == 0, "audit_target wait-open failed")
    return pid


def victim(d):
    v = os.path.join(d, "victim")
    with open(v, "w") as fh:
        fh.write("victim\n")
    os.chmod(v, 0o644)
    return v


def untouched(v, link):
    with open(v) as fh:
        check(fh.read() == "victim\n", "the file behind the link was written to")
    check(os.stat(v).st_mode & 0o777 == 0o644, "the victim's mode changed")
    check(os.path.islink(link), link + " is no longer a symlink")


def case_out_symlink():
    d, f = dir_with_file("out_symlink", "s.conf")
    out = os.path.join(d, "audit.jsonl")
    v = victim(d)
    os.symlink(v, out)
    pid = wait_open(d, out, f, 3, lambda pid: None)
    untouched(v, out)
    # The name was refused: the audit is beside it, in a file of its own.
    sibling = out + "-%d" % pid
    check(os.path.isfile(sibling) and not os.path.islink(sibling), "no " + sibling)
    check(os.stat(sibling).st_mode & 0o777 == 0o600, "mode %o" % os.stat(sibling).st_mode)
    one_record(only_process(sibling), f, 3)
    print("out-symlink: a symlink at STACKSNAP_AUDIT_OUT is not followed; "
          "the audit went to its -<pid> sibling, 0600")


def case_out_symlinks():
    d, f = dir_with_file("out_symlinks", "s.conf")
    out = os.path.join(d, "audit.jsonl")
    v = victim(d)
    os.symlink(v, out)
    links = []

    def plant(pid):  # the predictable sibling too, once the pid is known
        links.append(out + "-%d" % pid)
        os.symlink(v, links[0])
    wait_open(d, out, f, 3, plant)
    untouched(v, out)
    untouched(v, links[0])
    files = sorted(os.listdir(d))
    check(files == sorted(["s.conf", "victim", "audit.jsonl", os.path.basename(links[0])]),
          "files: %r" % files)
    print("out-symlinks: symlinks at STACKSNAP_AUDIT_OUT and at its -<pid> "
          "sibling are not followed; nothing was written through them")


def case_out_mode():
    d, f = dir_with_file("out_mode", "m.conf")
    out = os.path.join(d, "audit.jsonl")
    old = os.umask(0o022)
    try:
        wait_open(d, out, f, 2, lambda pid: None)
    finally:
        os.umask(old)
    mode = os.stat(out).st_mode & 0o777
    check(mode == 0o600, "the output was created %o, not 600" % mode)
    one_record(only_process(out), f, 2)
    print("out-mode: the output is created 0600")


def case_vfork():
    # A vfork child runs in its parent's memory: its calls count in the
    # parent's table, and its exec must not flush (or end) the parent's.
    d = fresh_dir("vfork")
    a, b = os.path.join(d, "a.conf"), os.path.join(d, "b.conf")
    for x in (a, b):
        open(x, "w").close()
    out = os.path.join(d, "audit.jsonl")
    n = 4
    r = run([ARGS.target, "vfork", a, b, str(n), ARGS.target], capture_output=True,
            text=True, env=env_with(STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_PREFIX=d + "/",
                                    STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target vfork: %d %s" % (r.returncode, r.stderr))
    files = sorted(os.listdir(d))
    check(files == ["a.conf", "audit.jsonl", "b.conf"], "files: %r" % files)
    p = only_process(out)
    one_record(p, a, 2 * n)
    one_record(p, b, n)
    with open(out) as fh:
        ends = [json.loads(x)["reason"] for x in fh if '"type":"end"' in x]
    check(ends == ["exit"], "end lines %r: the vfork child's exec ended the parent's" % ends)
    print("vfork: the child's opens counted in the parent's table; its exec "
          "flushed nothing")


def case_table_full():
    # More resources than records: what finds no room is counted, never
    # dropped silently (the calls are the program's own count).
    d = fresh_dir("table_full")
    out = os.path.join(d, "audit.jsonl")
    n = 9000  # above the 7168 slots and the 4096 records
    r = run([ARGS.target, "many", d + "/missing", str(n)], capture_output=True,
            text=True, env=env_with(STACKSNAP_AUDIT_OUT=out,
                                    STACKSNAP_AUDIT_PREFIX=d + "/",
                                    STACKSNAP_AUDIT_APP=ARGS.target))
    check(r.returncode == 0, "audit_target many: %d %s" % (r.returncode, r.stderr))
    p = only_process(out)
    e = p["end"]
    kept = sum(x["count"] for x in p["records"].values())
    check(e and e["calls"] == n, "end %r: calls, expected %d" % (e, n))
    check(len(p["records"]) == e["records"] == 4096, "%d records, end says %r"
          % (len(p["records"]), e["records"]))
    check(kept + e["calls_not_kept"] == n, "%d calls kept + %d not kept, the "
          "program made %d" % (kept, e["calls_not_kept"], n))
    check(all(x["count"] == 1 and x["result"] == "ENOENT" for x in p["records"].values()),
          "records with other counts or results")
    print("table-full: %d resources: 4096 records, %d calls counted as not kept"
          % (n, e["calls_not_kept"]))


# ---- cases: programs nobody here wrote ------------------------------------


def case_git():
    d = fresh_dir("git")
    home = os.path.join(d, "home")
    repo = os.path.join(d, "repo")
    os.makedirs(home)
    with open(os.path.join(home, ".gitconfig"), "w") as f:
        f.write("[user]\n\tname = Audit\n\temail = audit@example.com\n")
    base = dict(HOME=home, LC_ALL="C")
    subprocess.run(["git", "init", "-q", repo], check=True, env=dict(os.environ, **base))
    for cmd in (["status", "--short"], ["config", "--list"]):
        out = os.path.join(d, cmd[0] + ".jsonl")
        log = os.path.join(d, cmd[0] + ".strace")
        r = run(["git"] + cmd, cwd=repo, strace_log=log, capture_output=True,
                env=env_with(STACKSNAP_AUDIT_OUT=out,
                             STACKSNAP_AUDIT_PREFIX="/etc/:" + home + "/", **base))
        check(r.returncode == 0, "git %s: %d %s" % (cmd[0], r.returncode, r.stderr))
        p = only_process(out)
        check(p["process"]["exe"].endswith("/git"), "exe %r" % p["process"]["exe"])
        for path in ("/etc/gitconfig", home + "/.gitconfig"):
            opens = [x for x in records_for(p, path) if x["function"].startswith(("fopen", "open"))]
            want = strace_count(log, path)
            got = sum(x["count"] for x in opens)
            if os.path.exists(path):
                check(want > 0, "strace saw no open of " + path)
            check(got == want, "git %s: %d opens of %s recorded, strace saw %d"
                  % (cmd[0], got, path, want))
            for x in opens:
                check(x["result"] == ("ok" if os.path.exists(path) else "ENOENT"),
                      "result %r for %s" % (x["result"], path))
        print("git %s: opens of /etc/gitconfig and ~/.gitconfig recorded as "
              "often as strace saw them" % cmd[0])


def case_xz():
    d = fresh_dir("xz")
    data = os.path.join(d, "input.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(1 << 20))
    out = os.path.join(d, "audit.jsonl")
    log = os.path.join(d, "xz.strace")
    r = run(["xz", "-T2", "-k", "-f", "input.bin"], cwd=d, strace_log=log,
            env=env_with(STACKSNAP_AUDIT_OUT=out, STACKSNAP_AUDIT_PREFIX=d + "/"))
    check(r.returncode == 0, "xz: %d" % r.returncode)
    p = only_process(out)
    imports = subprocess.run(["nm", "-D", shutil.which("xz")], capture_output=True,
                             text=True).stdout
    recs = records_for(p, data)
    check(len(recs) == 1, "records for the input: %r" % recs)
    rec = recs[0]
    # The oracle for which function: what xz imports (FORTIFY's __open_2
    # when it was built with it).
    want_fn = "__open_2" if re.search(r" U __open_2@", imports) else "open"
    check(rec["function"] == want_fn, "function %s, xz imports %s" % (rec["function"], want_fn))
    check(rec["argument"] == "input.bin" and rec["result"] == "ok", "record %r" % rec)
    check(rec["count"] == strace_count(log, "input.bin"), "count %d, strace %d"
          % (rec["count"], strace_count(log, "input.bin")))
    check(records_for(p, data + ".xz"), "the output file's open is not recorded")
    print("xz -T2: its %s of the input recorded, absolute, with the relative argument" % want_fn)


PY_SCRIPT = r"""
import os, sys, threading
FILES = sys.argv[1:5]
ROUNDS = int(sys.argv[5])
tids = set()
def work():
    tids.add(threading.get_native_id())
    for _ in range(ROUNDS):
        for p in FILES: open(p).close()
work()
ts = [threading.Thread(target=work) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print(" ".join(str(t) for t in sorted(tids)))
"""


def case_python():
    d = fresh_dir("python")
    files = ["/etc/hostname", "/etc/passwd", "/etc/group", "/etc/hosts"]
    files = [f for f in files if os.path.exists(f)]
    check(len(files) == 4, "this machine lacks one of the four /etc files")
    script = os.path.join(d, "four.py")
    with open(script, "w") as f:
        f.write(PY_SCRIPT)
    out = os.path.join(d, "audit.jsonl")
    log = os.path.join(d, "py.strace")
    rounds = 7
    r = run(["/usr/bin/python3", script] + files + [str(rounds)], strace_log=log,
            capture_output=True, text=True, env=env_with(STACKSNAP_AUDIT_OUT=out))
    check(r.returncode == 0, "python3: %d %s" % (r.returncode, r.stderr))
    tids = sorted(int(t) for t in r.stdout.split())
    check(len(tids) == 5, "python3 ran on %r" % tids)
    p = only_process(out)
    for f in files:
        recs = records_for(p, f)
        check(len(recs) == 1, "%s: %d records, expected one (one call site)" % (f, len(recs)))
        rec = recs[0]
        check(rec["count"] == 5 * rounds == strace_count(log, f),
              "%s: count %d, expected %d, strace saw %d"
              % (f, rec["count"], 5 * rounds, strace_count(log, f)))
        check(sorted(t["tid"] for t in rec["threads"]) == tids,
              "%s: threads %r, python ran on %r" % (f, rec["threads"], tids))
    print("python3: four files opened from one line on five threads: four "
          "records of %d calls, each naming the five threads" % (5 * rounds))


PY_PEERS6 = r"""
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
for a in sys.argv[1:]:
    try:
        s.sendto(b"x", (a, 9))
    except OSError as e:
        pass
    print("[%s]:9" % socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, a)))
"""


def case_peers6():
    # sendto's hook formats the peer by hand (inet_ntop is not
    # async-signal-safe): it must write what inet_ntop writes.
    d = fresh_dir("peers6")
    out = os.path.join(d, "audit.jsonl")
    addrs = ["::1", "::", "::ffff:1.2.3.4", "::1.2.3.4", "2001:db8::1",
             "2001:db8:0:0:1:0:0:1", "fe80::1:2", "1::", "1:0:0:2:0:0:0:3",
             "0:0:1::", "1:2:3:4:5:6:7:8", "::2", "abcd:ef01::ffff:0:1"]
    r = run(["/usr/bin/python3", "-c", PY_PEERS6] + addrs, capture_output=True,
            text=True, env=env_with(STACKSNAP_AUDIT_OUT=out))
    check(r.returncode == 0, "python3: %d %s" % (r.returncode, r.stderr))
    want = r.stdout.split()
    p = only_process(out)
    got = {x["resource"] for x in p["records"].values() if x["function"] == "sendto"}
    check(got == set(want), "peers %r, inet_ntop wrote %r" % (sorted(got), sorted(want)))
    print("peers6: %d IPv6 peers written as inet_ntop writes them" % len(want))


def case_perl():
    d = fresh_dir("perl")
    out = os.path.join(d, "perl audit.jsonl")
    log = os.path.join(d, "perl.strace")
    # Setting $0 writes over the memory the environment strings live in,
    # and %ENV = () empties it: a name kept from getenv() is gone.
    prog = ('$0 = "renamed-" . ("z" x 300); %ENV = (); '
            'for (1..3) { open(my $f, "<", "/etc/hostname") or die; close $f } '
            'print "ok\\n"')
    r = run(["perl", "-e", prog], cwd=d, strace_log=log, capture_output=True, text=True,
            env=env_with(STACKSNAP_AUDIT_OUT=out))
    check(r.returncode == 0 and r.stdout == "ok\n", "perl: %d %r" % (r.returncode, r.stderr))
    files = sorted(x for x in os.listdir(d) if x != "perl.strace")
    check(files == ["perl audit.jsonl"], "files written: %r" % files)
    p = only_process(out)
    recs = records_for(p, "/etc/hostname")
    want = strace_count(log, "/etc/hostname")
    check(want == 3 and sum(x["count"] for x in recs) == want,
          "perl: %r, strace saw %d" % ([(x["function"], x["count"]) for x in recs], want))
    print("perl: the report is in the file named at start-up, with perl's 3 opens")


def case_signals():
    # The handlers of the last write are not the program's business: a
    # program asking sees the default it would see without the audit.
    prog = ("import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
            "signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "
            "signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL)")
    plain = subprocess.run(["/usr/bin/python3", "-c", prog], capture_output=True, text=True)
    audited = run(["/usr/bin/python3", "-c", prog], capture_output=True, text=True,
                  env=env_with(STACKSNAP_AUDIT_OUT=os.path.join(fresh_dir("signals"), "a")))
    check(audited.stdout == plain.stdout, "python3 sees dispositions %r under the "
          "audit, %r without" % (audited.stdout, plain.stdout))
    print("signals: python3 sees the same dispositions with the audit as without: "
          + plain.stdout.strip())


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items()
         if name.startswith("case_")}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--preload", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target")
    ap.add_argument("--nm")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--tool")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.work, exist_ok=True)
    CASES[ARGS.case]()


if __name__ == "__main__":
    main()
