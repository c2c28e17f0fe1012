#!/usr/bin/env python3
"""test_audit_report: scripts/audit-report.py reads the audit preload's
JSON lines (docs/audit.md, schema stacksnap.audit/2) as they really are
and prints what they say.

The input is written here by hand from the contract (a small JSON writer
of this file escapes each byte that is not printable ASCII as \\u00XX, as
the contract says the preload does), never by the script's code. Checked:

1. Merging: a record line and update lines out of order, duplicated, one
   before its record line: the greatest count wins with its time and
   threads; update lines with no record line are noted, not shown.
   Several processes interleaved in one file; a pid reused by a rerun
   appended to the file (two processes, each its own records); a killed
   process (no end line: said so; a cut last line: skipped with a warning
   naming its line; a cut line glued to the next process's first line:
   that process still read). Unknown types and fields change nothing.
2. Hostile strings: UTF-8 and non-UTF-8 bytes, quotes, backslashes,
   newlines and tabs in paths, thread names and symbols, a 6000-byte
   symbol: every output line is one line, the bytes come back (escaped
   where a terminal would misread them), --resource matches the bytes,
   --json gives the file's strings back unchanged.
3. --kind and --resource select records; --json's document; -o; stdin.
4. The stack layout: each frame line equals Python's own
   "%-4d%-35s 0x%016x %s + %d" (symbol + offset, image + offset, "???" and
   0x0 + pc), marks only after it; and, given --demo (stacksnap_demo,
   whose snap_print_callstack lines the library formats), a real stack's
   lines come back byte for byte from their fields.
5. Malformed input: exit 1 with FILE:LINE, no traceback; bad usage: exit
   2; a reader that closes the pipe after one line: no traceback.
6. --symbolicate (given --symbolicate-tool, Linux): a frame into a real
   ELF file (the tool itself, with its build id from readelf) with no
   symbol comes back named as nm names the function at that address; a
   tool that fails leaves the frames unnamed and says so.

usage: test_audit_report.py SCRIPT [--demo PROGRAM] [--symbolicate-tool
       TOOL --nm NM --readelf READELF] [--run-with "EMULATOR ARGS"]
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
from checks import fail, failures, ok  # noqa: E402

SCRIPT = None
WORK = None


def expect(cond, msg):
    (ok if cond else fail)(msg)
    return cond


def run(args, stdin=None):
    r = subprocess.run([sys.executable, SCRIPT] + args, input=stdin,
                       capture_output=True, timeout=120)
    if b"Traceback" in r.stderr:
        fail(f"traceback for {args}: {r.stderr.decode(errors='replace')}")
    return r


# ---- writing lines as the contract says -------------------------------------

def jstr(b):
    """A JSON string of bytes, as the preload writes it: printable ASCII
    as itself (quote and backslash escaped), any other byte \\u00XX."""
    if isinstance(b, str):
        b = b.encode()
    out = ['"']
    for c in b:
        if c == 0x22:
            out.append('\\"')
        elif c == 0x5C:
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append("\\u%04x" % c)
    out.append('"')
    return "".join(out)


def jval(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (bytes, str)):
        return jstr(v)
    if isinstance(v, list):
        return "[" + ",".join(jval(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(jstr(k) + ":" + jval(x)
                              for k, x in v.items()) + "}"
    raise TypeError(v)


def line(**kw):
    return jval(kw) + "\n"


T0 = 1795525878123456000


def iso(ns):
    # 2026-11-24T13:11:18.123456Z style, by hand: only the sub-second part
    # varies in these tests.
    return "2026-11-24T13:11:%02d.%06dZ" % (18 + (ns - T0) // 10**9,
                                           (ns // 1000) % 10**6)


def process(pid, exe="/usr/bin/prog", ppid=1, forked_from=None, start=T0):
    return line(type="process", schema="stacksnap.audit/2", pid=pid,
                ppid=ppid, forked_from=forked_from, exe=exe, os="linux",
                arch="x86_64", start=iso(start), start_ns=start,
                prefixes=["/etc/"])


def frame(pc, image=b"prog", base=0x555555554000, size=0x100000,
          symbol=None, symbol_offset=None, in_app=False, path=None,
          build_id="00aa"):
    if image is None:
        return {"pc": "0x%x" % pc, "image": None, "image_path": None,
                "image_base": None, "image_size": None, "image_offset": None,
                "build_id": None, "symbol": None, "symbol_offset": None,
                "in_app": False}
    return {"pc": "0x%x" % pc, "image": image,
            "image_path": path or b"/usr/bin/" + image,
            "image_base": "0x%x" % base, "image_size": size,
            "image_offset": "0x%x" % (pc - base), "build_id": build_id,
            "symbol": symbol, "symbol_offset": symbol_offset,
            "in_app": in_app}


DEFAULT_FRAMES = [
    frame(0x7f0a1b2c3d4e, b"libc.so.6", 0x7f0a1b200000, 0x1e0000,
          b"_IO_new_fopen", 30),
    frame(0x555555556123, in_app=True, symbol=b"read_config",
          symbol_offset=19),
    frame(0x555555555555, in_app=True)]


def record(pid, rid, resource, count=1, kind="file", function="open64",
           result="ok", errno=0, first=T0, last=None, threads=None,
           frames=None, call_site=1, app=True, argument=None, **extra):
    last = first if last is None else last
    kw = dict(type="record", pid=pid, id=rid, kind=kind, function=function,
              resource=resource, argument=argument, result=result,
              errno=errno, count=count, first=iso(first), first_ns=first,
              last=iso(last), last_ns=last,
              threads=threads or [{"tid": pid, "name": "prog"}],
              threads_more=False, call_site=call_site, app=app,
              frames_truncated=False,
              frames=DEFAULT_FRAMES if frames is None else frames)
    kw.update(extra)
    return line(**kw)


def update(pid, rid, count, last, threads=None, more=False):
    return line(type="update", pid=pid, id=rid, count=count, last=iso(last),
                last_ns=last, threads=threads or [{"tid": pid,
                                                   "name": "prog"}],
                threads_more=more)


def end(pid, reason="exit", sig=None, records=1, calls=1, time=T0 + 9):
    return line(type="end", pid=pid, reason=reason, signal=sig,
                records=records, calls=calls, calls_not_kept=0,
                lines_lost=0, time=iso(time), time_ns=time)


def write(name, text):
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
    return path


def as_json(args, stdin=None):
    r = run(["--json"] + args, stdin)
    if r.returncode != 0:
        fail(f"--json {args}: exit {r.returncode}: {r.stderr!r}")
        return None
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        fail(f"--json {args}: not JSON: {e}")
        return None


# ---- reading the text back --------------------------------------------------

def stacks(text):
    """{record id: [frame lines]} of the first process in text (bytes)."""
    out, cur = {}, None
    for ln in text.split(b"\n"):
        m = re.match(rb"  record (\d+): ", ln)
        if m:
            cur = out.setdefault(int(m.group(1)), [])
            continue
        if cur is not None and ln and not ln.startswith(b" "):
            if re.match(rb"\d+ ", ln):
                cur.append(ln)
                continue
        if cur is not None and (not ln or ln.startswith(b"==")):
            cur = None
    return out


def rows(text, resource):
    """The table rows (split on 2+ spaces) under a resource's heading."""
    lines = text.split(b"\n")
    for i, ln in enumerate(lines):
        if ln == resource and i + 1 < len(lines) and \
                lines[i + 1].lstrip().startswith(b"function"):
            out = []
            for r in lines[i + 2:]:
                if not r.startswith(b"  ") or r.startswith(b"  record"):
                    break
                out.append(re.split(rb"  +", r.strip()))
            return out
    return None


# ---- 1. merging -------------------------------------------------------------

def test_merge():
    t = [T0 + k * 10**8 for k in range(10)]
    th2 = [{"tid": 10, "name": "prog"}, {"tid": 11, "name": "worker"}]
    text = (process(10) +
            update(10, 1, 4, t[5]) +           # before its record line
            record(10, 0, "/etc/passwd", 1, first=t[0]) +
            update(10, 0, 9, t[6], th2) +
            update(10, 0, 5, t[3]) +          # older, written later
            update(10, 0, 9, t[6], th2) +     # written twice
            record(10, 0, "/etc/passwd", 1, first=t[0]) +  # twice too
            record(10, 1, "/etc/group", 2, first=t[1], last=t[2]) +
            update(10, 1, 3, t[4]) +
            update(10, 7, 50, t[7]) +         # its record line was lost
            update(10, 0, 7, t[5]) +
            end(10, records=3, calls=70))
    path = write("merge.jsonl", text)
    d = as_json([path])
    if d is None:
        return
    ps = d["processes"]
    if not expect(len(ps) == 1, "merge: one process"):
        return
    recs = {r["id"]: r for r in ps[0]["records"]}
    expect(sorted(recs) == [0, 1], f"merge: records 0 and 1 ({sorted(recs)})")
    r0, r1 = recs.get(0, {}), recs.get(1, {})
    expect(r0.get("count") == 9 and r0.get("last_ns") == t[6] and
           r0.get("last") == iso(t[6]) and r0.get("threads") == th2,
           "merge: the greatest count (9) wins with its last time and "
           f"threads ({r0.get('count')}, {r0.get('last_ns')})")
    expect(r0.get("first_ns") == t[0] and r0.get("resource") == "/etc/passwd",
           "merge: first time and resource from the record line")
    expect(r1.get("count") == 4 and r1.get("last_ns") == t[5],
           "merge: an update line before its record line counts "
           f"({r1.get('count')})")
    expect(ps[0].get("updates_without_record") == [7],
           "merge: update lines with no record line are listed")
    r = run([path])
    out = r.stdout
    rw = rows(out, b"/etc/passwd")
    expect(rw is not None and len(rw) == 1 and rw[0][0] == b"open64" and
           rw[0][1] == b"ok" and rw[0][2] == b"9" and
           rw[0][4] == iso(t[6]).encode() and
           rw[0][5] == b"10:prog,11:worker",
           f"merge: the table row says 9 calls, last {iso(t[6])}, both "
           f"threads ({rw})")
    expect(rw is not None and rw[0][6] == b"read_config + 19 (prog)",
           f"merge: the call site column ({rw and rw[0][6:]})")
    expect(b"record id 7" in r.stderr and b"record id 7" in out,
           "merge: the lost record line is said on stderr and in the text")
    expect(re.search(rb"calls: +70\n", out) and
           re.search(rb"records: +3 \(2 records read\)", out),
           "merge: the end line's totals, and how many records were read")


def test_processes():
    t = T0 + 5 * 10**8
    text = (process(20, exe="/bin/a") + process(21, exe="/bin/b",
                                               forked_from=20, ppid=20) +
            record(21, 0, "/etc/b0") + record(20, 0, "/etc/a0") +
            update(21, 0, 3, t) + record(20, 1, "/etc/a1") +
            end(21, records=1, calls=3) + update(20, 0, 2, t) +
            end(20, records=2, calls=3))
    path = write("procs.jsonl", text)
    d = as_json([path])
    if d is None:
        return
    got = [(p["pid"], p["exe"], p["forked_from"],
            [(r["id"], r["resource"], r["count"]) for r in p["records"]],
            p["end"] and p["end"]["calls"]) for p in d["processes"]]
    want = [(20, "/bin/a", None, [(0, "/etc/a0", 2), (1, "/etc/a1", 1)], 3),
            (21, "/bin/b", 20, [(0, "/etc/b0", 3)], 3)]
    expect(got == want, f"processes: two interleaved processes apart {got}")
    out = run([path]).stdout
    expect(b"forked_from:    20" in out, "processes: forked_from shown")

    # A rerun appended to the file: the same pid, a new process line.
    text = (process(30, start=T0) + record(30, 0, "/etc/first") +
            end(30, records=1, calls=1) +
            process(30, start=T0 + 10**9) + record(30, 0, "/etc/second") +
            update(30, 0, 6, T0 + 2 * 10**9))
    path = write("rerun.jsonl", text)
    d = as_json([path])
    if d is None:
        return
    got = [([(r["id"], r["resource"], r["count"]) for r in p["records"]],
            p["end"] is None, p["start_ns"]) for p in d["processes"]]
    want = [([(0, "/etc/first", 1)], False, T0),
            ([(0, "/etc/second", 6)], True, T0 + 10**9)]
    expect(got == want, f"rerun: a reused pid is a new process {got}")
    out = run([path]).stdout
    expect(out.count(b"== process 30:") == 2 and
           out.count(b"no end line: killed or still running") == 1,
           "rerun: two process headers, the second has no end line")

    # A pid whose lines come with no process line (not the contract's,
    # but its records are still facts): shown under a bare header, said.
    text = (process(31) + record(32, 0, "/etc/orphan") + update(32, 0, 4, T0)
            + end(31, records=0, calls=0))
    path = write("noheader.jsonl", text)
    r = run([path])
    expect(r.returncode == 0 and
           re.search(rb"noheader\.jsonl:2: pid 32 has no process line",
                     r.stderr) and
           b"== process 32: (no process line) ==" in r.stdout and
           rows(r.stdout, b"/etc/orphan")[0][2] == b"4",
           f"no process line: warned, its records shown ({r.returncode}, "
           f"{r.stderr!r})")


def test_killed():
    text = (process(40) + record(40, 0, "/etc/shadow", result="EACCES",
                                  errno=13) +
            update(40, 0, 3, T0 + 10**8) +
            record(40, 1, "/etc/hosts")[:57])  # cut: killed mid-write
    path = write("killed.jsonl", text)
    r = run([path])
    expect(r.returncode == 0, f"killed: exit 0 ({r.returncode})")
    expect(re.search(rb"killed\.jsonl:4: .*cut short", r.stderr) is not None,
           f"killed: the cut line is named on stderr ({r.stderr!r})")
    expect(b"no end line: killed or still running" in r.stdout,
           "killed: the missing end line is said")
    rw = rows(r.stdout, b"/etc/shadow")
    expect(rw is not None and rw[0][1] == b"EACCES" and rw[0][2] == b"3",
           f"killed: its records up to the kill are shown ({rw})")
    expect(b"/etc/hosts" not in r.stdout, "killed: the cut record is not")

    # Killed mid-write, then a rerun appended: the fragment is glued to
    # the rerun's process line.
    text = (process(41) + record(41, 0, "/etc/a")[:40] +
            process(42) + record(42, 0, "/etc/b") + end(42))
    path = write("glued.jsonl", text)
    r = run(["--json", path])
    expect(r.returncode == 0 and re.search(rb"glued\.jsonl:2: ", r.stderr),
           f"glued: exit 0, the cut line named ({r.returncode}, "
           f"{r.stderr!r})")
    try:
        ps = json.loads(r.stdout)["processes"]
        got = [(p["pid"], [x["resource"] for x in p["records"]])
               for p in ps]
    except (ValueError, KeyError) as e:
        got = e
    expect(got == [(41, []), (42, ["/etc/b"])],
           f"glued: the next process read whole ({got})")


def test_unknown():
    base = (process(50) + record(50, 0, "/etc/x") + update(50, 0, 2, T0 + 5) +
            end(50))
    noisy = (line(type="future", pid=50, what=[1, {"a": None}]) +
             process(50)[:-2] + ',"new":{"k":[1,2]}}\n' +
             line(type="process2", pid=50) +
             record(50, 0, "/etc/x", extra_field="y",
                    frames=[dict(f, more=[1]) for f in DEFAULT_FRAMES]) +
             line(type="note") +
             update(50, 0, 2, T0 + 5)[:-2] + ',"z":1.5}\n' + end(50))
    a = run([write("plain.jsonl", base)])
    b = run([write("noisy.jsonl", noisy)])
    # The same but for the process's line number in the file.
    header = re.compile(rb"(  input: +\S+), line \d+")
    expect(a.returncode == 0 and b.returncode == 0 and
           header.sub(rb"\1", a.stdout.replace(b"plain", b"noisy")) ==
           header.sub(rb"\1", b.stdout) and b"line 2\n" in b.stdout,
           "unknown types and fields: the same report as without them")


# ---- 2. hostile strings -----------------------------------------------------

def test_hostile():
    res_utf8 = b"/etc/caf\xc3\xa9 \"q\"/x"
    res_bad = b"/etc/\xff\xfe\\dir\n\tname"
    long_sym = b"_Z" + b"n" * 6000
    frames = [frame(0x555555556000, in_app=True, symbol=long_sym,
                    symbol_offset=7),
              frame(0x555555557000, image=b"lib\xc3\xa9\nx.so",
                    symbol=b"f\"q\"\x01", symbol_offset=1)]
    text = (process(60, exe=b"/bin/\xe2\x82\xac\n") +
            record(60, 0, res_utf8, frames=frames, call_site=0,
                   threads=[{"tid": 60, "name": b"t\xc3\xa9\n\x7f"}]) +
            record(60, 1, res_bad, argument=b"rel\n\xff") + end(60, records=2))
    path = write("hostile.jsonl", text)
    r = run([path])
    out = r.stdout
    expect(r.returncode == 0, f"hostile: exit 0 ({r.returncode})")
    expect(b"\n/etc/caf\xc3\xa9 \"q\"/x\n" in out,
           "hostile: UTF-8 and quotes come back as bytes")
    expect(b"\n/etc/\\xff\\xfe\\\\dir\\n\\tname\n" in out,
           "hostile: bytes that are not UTF-8, a backslash, a newline and a "
           "tab are escaped, the resource stays one line")
    expect(b"/bin/\xe2\x82\xac\\n ==" in out, "hostile: the exe's bytes")
    expect(b"60:t\xc3\xa9\\n\\x7f" in out, "hostile: a thread's name")
    expect(b"passed as rel\\n\\xff" in out, "hostile: the argument")
    st = stacks(out).get(0, [])
    want0 = b"%-4d%-35s 0x%016x %s + %d" % (0, b"prog", 0x555555556000,
                                            long_sym, 7)
    want1 = b"%-4d%-35s 0x%016x %s + %d" % (1, b"lib\xc3\xa9\\nx.so",
                                            0x555555557000, b"f\"q\"\\x01", 1)
    expect(len(st) == 2 and st[0] == want0 + b"  <- call site  [app]" and
           st[1] == want1,
           f"hostile: a 6000-byte symbol and escaped names in the stack "
           f"({[s[:80] for s in st]})")
    # every line of the output is a line: no raw control byte but \n
    expect(not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", out),
           "hostile: no raw control byte in the text")
    d = as_json([path])
    if d:
        recs = d["processes"][0]["records"]
        expect(d["processes"][0]["exe"] == "/bin/\u00e2\u0082\u00ac\n" and
               recs[0]["resource"] == res_utf8.decode("latin-1") and
               recs[1]["resource"] == res_bad.decode("latin-1") and
               recs[0]["frames"][0]["symbol"] == long_sym.decode(),
               "hostile: --json gives the file's strings back unchanged")
    d = as_json(["--resource", "café", path])
    expect(d is not None and
           [x["id"] for x in d["processes"][0]["records"]] == [0],
           "hostile: --resource matches the bytes (UTF-8 é)")
    r = run(["--resource", os.fsdecode(b"\xff\xfe"), path])
    expect(r.returncode == 0 and b"\n/etc/\\xff\\xfe" in r.stdout and
           b"caf" not in r.stdout,
           "hostile: --resource matches bytes that are not UTF-8")


# ---- 3. selecting, output ---------------------------------------------------

def test_select():
    text = (process(70) +
            record(70, 0, "/etc/hosts", kind="file") +
            record(70, 1, "93.184.216.34:443", kind="network",
                   function="connect", result="ECONNREFUSED", errno=111) +
            record(70, 2, "example.com:https", kind="dns",
                   function="getaddrinfo", result="EAI_NONAME") +
            record(70, 3, "/etc/gai.conf", kind="file") + end(70, records=4))
    path = write("select.jsonl", text)
    for kind, ids in (("file", [0, 3]), ("network", [1]), ("dns", [2])):
        d = as_json(["--kind", kind, path])
        got = d and [x["id"] for x in d["processes"][0]["records"]]
        expect(got == ids, f"--kind {kind}: records {ids} ({got})")
    d = as_json(["--resource", "example", path])
    got = d and [x["id"] for x in d["processes"][0]["records"]]
    expect(got == [2], f"--resource example: record 2 ({got})")
    d = as_json(["--kind", "file", "--resource", "gai", path])
    got = d and [x["id"] for x in d["processes"][0]["records"]]
    expect(got == [3], f"--kind file --resource gai: record 3 ({got})")
    out = run([path]).stdout
    order = [out.find(s) for s in (b"-- file: 2 resources, 2 records --",
                                   b"\n/etc/gai.conf\n", b"\n/etc/hosts\n",
                                   b"-- network: 1 resource",
                                   b"-- dns: 1 resource")]
    expect(-1 not in order and order == sorted(order),
           f"text: kinds file, network, dns; resources sorted ({order})")
    out2 = run(["--kind", "network", path]).stdout
    expect(b"/etc/hosts" not in out2 and b"93.184.216.34:443" in out2,
           "text: --kind filters the tables")
    out3 = run(["--resource", "nothing-like-it", path]).stdout
    expect(b"no records match" in out3, "text: an empty selection is said")
    r = run(["-", "--json"], stdin=text.encode())
    expect(r.returncode == 0 and json.loads(r.stdout)["processes"][0]["pid"]
           == 70, "stdin: - reads standard input")
    o = os.path.join(WORK, "out.txt")
    r = run(["-o", o, path])
    with open(o, "rb") as f:
        expect(r.returncode == 0 and r.stdout == b"" and f.read() == out,
               "-o: the same text, in the file")
    r = run(["-o", os.path.join(WORK, "no", "such", "dir"), path])
    expect(r.returncode == 1 and b"cannot write" in r.stderr,
           "-o into a missing directory: exit 1, said")
    r = run([write("empty.jsonl", "")])
    expect(r.returncode == 0 and b"no processes" in r.stdout,
           "an empty file: no processes, exit 0")


# ---- 4. the stack layout ----------------------------------------------------

def lib_line(i, image, pc, tail_name, tail_off):
    # The library's layout, from its documentation and snprintf's meaning
    # (src/symbols/stack_line.c compares itself with this format).
    return ("%-4d%-35s 0x%016x %s + %d" % (i, image, pc, tail_name,
                                          tail_off)).encode()


def test_layout():
    fr, want = [], []
    for i in range(12):  # indices past 9 and past 99 padding
        pc = 0x7f0000001000 + i * 0x10
        if i % 3 == 0:
            fr.append(frame(pc, b"libc.so.6", 0x7f0000000000,
                            symbol=b"fn%d" % i, symbol_offset=i * 3))
            want.append(lib_line(i, "libc.so.6", pc, "fn%d" % i, i * 3))
        elif i % 3 == 1:
            fr.append(frame(pc, b"libnamed_longer_than_35_characters_x.so",
                            0x7f0000000000))
            want.append(lib_line(i, "libnamed_longer_than_35_characters_x.so",
                                 pc, "libnamed_longer_than_35_characters_x.so",
                                 pc - 0x7f0000000000))
        else:
            fr.append(frame(pc, None))
            want.append(lib_line(i, "???", pc, "0x0", pc))
    fr.append(frame(0xffffffffffff0001, b"hi", 0xffffffffffff0000,
                    symbol=b"top", symbol_offset=1, in_app=True))
    want.append(lib_line(12, "hi", 0xffffffffffff0001, "top", 1))
    text = process(80) + record(80, 0, "/etc/l", frames=fr, call_site=4) + \
        end(80)
    st = stacks(run([write("layout.jsonl", text)]).stdout).get(0, [])
    marks = {4: b"  <- call site", 12: b"  [app]"}
    expect(len(st) == len(want) and
           all(st[i] == want[i] + marks.get(i, b"") for i in range(len(st))),
           "layout: every frame line is \"%-4d%-35s 0x%016x %s + %d\", "
           "marks after it\n" + "\n".join(
               f"  got  {s!r}\n  want {w!r}" for s, w in zip(st, want)
               if not s.startswith(w)))


LIB_LINE = re.compile(rb"(\d+) +(\S+) +0x([0-9a-f]{16}) (.+) \+ (\d+)")


def test_real_lines(demo, emulator):
    if not demo:
        print("skip: real lines: no stacksnap program given (--demo)")
        return
    # Only its first section is used: the stack of its main thread that
    # snap_print_callstack prints, before any thread is sampled (under
    # TSan, sampling a spinning thread may fail later: exit 1, said).
    r = subprocess.run(emulator + [demo], capture_output=True, timeout=120)
    print(f"real lines: {demo} exited {r.returncode} "
          f"{r.stderr[-300:]!r}")
    block = []
    for ln in r.stdout.split(b"\n"):  # the first block at column 0
        m = LIB_LINE.fullmatch(ln)
        if m and int(m.group(1)) == len(block):
            block.append((ln, m))
        elif block:
            break
    if not expect(len(block) >= 3, f"real lines: a stack printed by "
                  f"snap_print_callstack ({len(block)} lines; exit "
                  f"{r.returncode})"):
        return
    fr = []
    for ln, m in block:
        pc = int(m.group(3), 16)
        img, name, off = m.group(2), m.group(4), int(m.group(5))
        if name == img:  # "image + offset": no symbol
            fr.append(frame(pc, img, pc - off))
        else:  # any base holding pc will do: the line does not show it
            fr.append(frame(pc, img, pc & ~0xfff, symbol=name,
                            symbol_offset=off))
    text = process(81) + record(81, 0, "/etc/real", frames=fr,
                                call_site=None) + end(81)
    st = stacks(run([write("real.jsonl", text)]).stdout).get(0, [])
    expect(st == [ln for ln, _ in block],
           f"real lines: {len(block)} lines of {os.path.basename(demo)} "
           "come back byte for byte\n" + "\n".join(
               f"  got  {s!r}\n  want {w!r}"
               for s, (w, _) in zip(st, block) if s != w))


# ---- 5. errors --------------------------------------------------------------

def test_errors():
    good = process(90) + record(90, 0, "/etc/a")
    cases = [
        ("not JSON", good + "{\"type\":\"record\",oops}\n" + end(90), 3),
        ("an array", good + "[1,2]\n" + end(90), 3),
        ("no type", good + '{"pid":90}\n' + end(90), 3),
        ("count a string", good + update(90, 0, 1, T0).replace(
            '"count":1', '"count":"1"') + end(90), 3),
        ("frames not an array", process(90) + record(90, 0, "/x").replace(
            '"frames":[', '"frames":{"a":[').replace("]}\n", "]}}\n", 1), 2),
        ("a frame without pc", process(90) + record(
            90, 0, "/x", frames=[{"image": "x"}]), 2),
        ("a pc not hex", process(90) + record(90, 0, "/x").replace(
            '"pc":"0x', '"pc":"zz', 1), 2),
        ("raw bytes", process(90).encode() + b'{"type":"end","pid":90,'
         b'"reason":"\xff"}\n', 2),
        ("another schema", process(90).replace("audit/2", "audit/1"), 1),
        ("a truncated line inside", good[:-30] + "\n" + end(90), 2),
    ]
    for what, text, n in cases:
        path = write("bad.jsonl", text)
        r = run([path])
        expect(r.returncode == 1 and
               (f"bad.jsonl:{n}:".encode() in r.stderr) and
               r.stdout == b"",
               f"malformed ({what}): exit 1, bad.jsonl:{n} named "
               f"({r.returncode}, {r.stderr[:200]!r})")
    r = run([os.path.join(WORK, "missing.jsonl")])
    expect(r.returncode == 1 and b"missing.jsonl: cannot read" in r.stderr,
           "a missing file: exit 1, said")
    for args in ([], ["--kind", "disk", "x"], ["--debug-dir", "d", "x"],
                 ["--bogus", "x"], ["-", "-"]):
        r = run(args, stdin=b"")
        expect(r.returncode == 2, f"bad usage {args}: exit 2 "
               f"({r.returncode})")

    # A reader that leaves after one line, the output larger than a pipe.
    text = process(91) + "".join(record(91, i, "/etc/f%05d" % i)
                                 for i in range(600)) + end(91, records=600)
    path = write("big.jsonl", text)
    p = subprocess.Popen([sys.executable, SCRIPT, path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    rc = p.wait(timeout=120)
    expect(rc == 0 and b"Traceback" not in err and err == b"",
           f"| head -1: exit 0, nothing on stderr ({rc}, {err[-300:]!r})")


# ---- 6. --symbolicate -------------------------------------------------------

def build_id(readelf, path):
    r = subprocess.run([readelf, "-n", path], capture_output=True, text=True,
                       timeout=60)
    m = re.search(r"Build ID: ([0-9a-f]+)", r.stdout)
    return m.group(1) if m else None


def nm_functions(nm, path):
    """(address, size, name) of the defined functions nm lists."""
    r = subprocess.run([nm, "--defined-only", "-S", path],
                       capture_output=True, text=True, timeout=60)
    out = []
    for ln in r.stdout.splitlines():
        p = ln.split()
        # C names only: the tool demangles C++ ones (as the library does)
        if len(p) == 4 and p[2] in "Tt" and \
                re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p[3]) and \
                not p[3].startswith("_Z"):
            out.append((int(p[0], 16), int(p[1], 16), p[3]))
    return out


def test_symbolicate(tool, nm, readelf, emulator):
    text0 = process(95) + record(95, 0, "/etc/s", frames=[
        frame(0x555555556000, in_app=True)], call_site=0) + end(95)
    path0 = write("sym0.jsonl", text0)
    r = run(["--symbolicate", "/bin/false", path0])
    st = stacks(r.stdout).get(0, [])
    expect(r.returncode == 0 and b"/bin/false failed" in r.stderr and
           st[:1] == [lib_line(0, "prog", 0x555555556000, "prog", 0x2000)
                      + b"  <- call site  [app]"],
           f"--symbolicate with a tool that fails: said, frames unnamed "
           f"({r.returncode}, {r.stderr!r})")
    if not tool:
        print("skip: --symbolicate against stacksnap-symbolicate: no tool "
              "given (--symbolicate-tool)")
        return
    if emulator:  # the tool runs under the emulator: a wrapper runs it
        wrapper = os.path.join(WORK, "symbolicate.sh")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec " + " ".join(
                shlex.quote(a) for a in emulator + [tool]) + ' "$@"\n')
        os.chmod(wrapper, 0o755)
    else:
        wrapper = tool
    bid = build_id(readelf, tool)
    funcs = [f for f in nm_functions(nm, tool) if f[1] >= 16]
    names = {}
    for a, s, n in nm_functions(nm, tool):
        names.setdefault(a, []).append(n)
    # Two functions with one name at their address (no alias), main first.
    picked = [f for f in funcs if len(names[f[0]]) == 1]
    picked = sorted(picked, key=lambda f: f[2] != "main")[:2]
    if not expect(bid and len(picked) == 2, f"symbolicate: {tool} has a "
                  f"build id ({bid}) and functions nm lists ({len(picked)})"):
        return
    base = 0x555555400000
    size = os.path.getsize(tool) + 0x200000
    tool = os.path.abspath(tool)
    tool_b = os.fsencode(tool)
    img = os.path.basename(tool_b)
    fr = [frame(base + a + 5, img, base, size, path=tool_b, build_id=bid,
                in_app=True) for a, _, _ in picked]
    fr.append(frame(0x7f0000001234, b"libc.so.6", 0x7f0000000000,
                    symbol=b"already_named", symbol_offset=4))
    fr.append(frame(0x7e0000000100, b"other.so", 0x7e0000000000,
                    path=b"/nonexistent/other.so", build_id="ffff"))
    text = process(96) + record(96, 0, "/etc/s", frames=fr, call_site=0) + \
        end(96)
    path = write("sym.jsonl", text)
    r = run(["--symbolicate", wrapper, "--debug-dir", WORK, path])
    st = stacks(r.stdout).get(0, [])
    want = [lib_line(0, img.decode(), base + picked[0][0] + 5, picked[0][2],
                     5) + b"  <- call site  [app]",
            lib_line(1, img.decode(), base + picked[1][0] + 5, picked[1][2],
                     5) + b"  [app]",
            lib_line(2, "libc.so.6", 0x7f0000001234, "already_named", 4),
            lib_line(3, "other.so", 0x7e0000000100, "other.so", 0x100)]
    # A debug file's line may follow the marks: "  (FILE:LINE)".
    st = [re.sub(rb"  \(/[^()]*:\d+\)$", b"", s) for s in st]
    expect(r.returncode == 0 and st == want,
           f"--symbolicate: frames in {img.decode()} named as nm names "
           f"them ({picked[0][2]}, {picked[1][2]}), the others kept\n  "
           + "\n  ".join(repr(s) for s in st) + f"\n  stderr {r.stderr!r}")
    d = as_json(["--symbolicate", wrapper, path])
    f0 = d and d["processes"][0]["records"][0]["frames"][0]
    expect(f0 and f0.get("symbol") == picked[0][2] and
           f0.get("symbol_offset") == 5,
           f"--symbolicate --json: the name in the document ({f0})")


def main():
    global SCRIPT, WORK
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("--demo")
    ap.add_argument("--symbolicate-tool")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--run-with", default="")
    a = ap.parse_args()
    SCRIPT = a.script
    emulator = shlex.split(a.run_with)
    with tempfile.TemporaryDirectory(prefix="snap_audit_report.") as WORK:
        test_merge()
        test_processes()
        test_killed()
        test_unknown()
        test_hostile()
        test_select()
        test_layout()
        test_real_lines(a.demo, emulator)
        test_errors()
        test_symbolicate(a.symbolicate_tool, a.nm, a.readelf, emulator)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
