#!/usr/bin/env python3
"""audit-report.py — prints the privacy audit's JSON lines as a report a
person reads: per process, a table per resource, and each call site's stack.

Owns: reading the JSON-lines files the audit preload writes (schema
"stacksnap.audit/2", docs/audit.md) as they really are, and rendering them.

Algorithm: each file is read line by line. A `process` line opens a
process; the lines after it with its pid belong to it until a new
`process` line with that pid opens another (a rerun appended to the same
file, or a reused pid). `record` lines are keyed by (process, id); of the
`record` and `update` lines of one record the one with the greatest
`count` (then the latest `last_ns`) gives count, last time and threads,
whatever order they came in and however often (the contract allows both).
The `end` line gives the end reason and the process's totals; without one
the process was killed or still runs, and the report says so. Output: per
process a header; per kind (file, network, dns) the resources in byte
order, each with one table row per record (function, result, count,
first/last, threads, call site), then each record's stack, one frame a
line exactly as the library's snap_stack_line prints it (src/symbols/
stack.c: "%-4d%-35s 0x%016x %s + %u": index, image ("???" when none), pc,
then "symbol + offset", "image + image_offset" or "0x0 + pc", in
decimal); marks follow the line ("  <- call site", "  [app]") so the line
itself stays byte for byte the library's. Strings are shown as the bytes
the file's \\u00XX escapes stand for: valid UTF-8 as is, a control byte
or a byte that is not UTF-8 as \\xNN, a backslash as \\\\.
--symbolicate TOOL runs stacksnap-symbolicate once per process on a
document of that process's images and unnamed frames and takes the names
it finds (its frames at index > 0 of an array are return addresses, as
every audit frame is: each array starts with a null placeholder).

What is tolerated: lines of unknown `type`s and unknown fields (ignored),
blank lines, duplicated and out-of-order lines, update lines whose record
line is missing (noted), lines of a pid with no `process` line (a
placeholder process, warned), an unterminated last line that does not
parse (a process killed mid-write: skipped, warned) and such a fragment
glued to the start of the next line (a rerun appended after it: the
fragment skipped, warned). Anything else that is not a JSON object with
the contract's fields and types is an error naming FILE:LINE.

Must not: change its input, print a traceback (a closed stdout is not an
error), leave a partial file at -o PATH (written beside it and renamed),
or need anything beyond the Python 3 standard library.

    audit-report.py [--json] [--kind file|network|dns] [--resource TEXT]
                    [--symbolicate TOOL [--debug-dir DIR]...] [-o OUT]
                    FILE|-...

Exit status: 0 when the report was written; 1 when an input cannot be
read or is malformed, or the output cannot be written; 2 on bad usage.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

PROG = "audit-report.py"
SCHEMA = "stacksnap.audit/2"
KINDS = ("file", "network", "dns")
# The fields an update line carries: the line with the greatest count
# gives them to the merged record.
MOVING = ("count", "last", "last_ns", "threads", "threads_more")
# Field types of the known lines (absent optional fields are fine; a
# present one of another type is malformed). "int" excludes bool.
PROCESS_FIELDS = {"pid": ("int",), "ppid": ("int", None),
                  "forked_from": ("int", None), "exe": ("str", None),
                  "schema": ("str", None), "os": ("str", None),
                  "arch": ("str", None), "start": ("str", None),
                  "start_ns": ("int", None), "prefixes": ("list", None)}
RECORD_FIELDS = {"pid": ("int",), "id": ("int",), "kind": ("str",),
                 "function": ("str",), "resource": ("str",),
                 "argument": ("str", None), "result": ("str",),
                 "errno": ("int", None), "count": ("int",),
                 "first": ("str", None), "first_ns": ("int", None),
                 "last": ("str", None), "last_ns": ("int", None),
                 "threads": ("list", None), "threads_more": ("bool", None),
                 "call_site": ("int", None), "app": ("bool", None),
                 "frames_truncated": ("bool", None), "frames": ("list",)}
UPDATE_FIELDS = {"pid": ("int",), "id": ("int",), "count": ("int",),
                 "last": ("str", None), "last_ns": ("int", None),
                 "threads": ("list", None), "threads_more": ("bool", None)}
END_FIELDS = {"pid": ("int",), "reason": ("str", None),
              "signal": ("int", None), "records": ("int", None),
              "calls": ("int", None), "calls_not_kept": ("int", None),
              "lines_lost": ("int", None), "time": ("str", None),
              "time_ns": ("int", None)}
FRAME_FIELDS = {"pc": ("hex",), "image": ("str", None),
                "image_path": ("str", None), "image_base": ("hex", None),
                "image_size": ("int", None), "image_offset": ("hex", None),
                "build_id": ("str", None), "symbol": ("str", None),
                "symbol_offset": ("int", None), "in_app": ("bool", None)}
THREAD_FIELDS = {"tid": ("int",), "name": ("str", None)}
REQUIRED = {"process": ("pid",), "record": ("pid", "id", "kind", "function",
                                            "resource", "result", "count",
                                            "frames"),
            "update": ("pid", "id", "count"), "end": ("pid",)}


class Malformed(Exception):
    pass


def warn(msg):
    try:
        print(f"{PROG}: {msg}", file=sys.stderr, flush=True)
    except (BrokenPipeError, OSError):
        pass


HEX = re.compile(r"0[xX]([0-9a-fA-F]+)")


def hex_value(text):
    """"0x1f" -> 31; None when text is not such a string."""
    m = HEX.fullmatch(text) if isinstance(text, str) else None
    return int(m.group(1), 16) if m else None


def type_ok(value, kinds):
    for k in kinds:
        if k is None and value is None:
            return True
        if k == "int" and isinstance(value, int) and \
                not isinstance(value, bool):
            return True
        if k == "str" and isinstance(value, str):
            return True
        if k == "bool" and isinstance(value, bool):
            return True
        if k == "list" and isinstance(value, list):
            return True
        if k == "hex" and hex_value(value) is not None:
            return True
    return False


def check(obj, fields, where, required=()):
    for key in required:
        if key not in obj:
            raise Malformed(f"{where}: no \"{key}\"")
    for key, kinds in fields.items():
        if key in obj and not type_ok(obj[key], kinds):
            want = " or ".join("null" if k is None else
                               "a hex string \"0x...\"" if k == "hex" else
                               {"int": "an integer", "str": "a string",
                                "bool": "true/false", "list": "an array"}[k]
                               for k in kinds)
            shown_value = json.dumps(obj[key])[:60]
            raise Malformed(f"{where}: \"{key}\" is {shown_value}, not "
                            f"{want}")


def check_line(obj, where):
    """Raises Malformed when a known line breaks the contract's types."""
    t = obj["type"]
    fields = {"process": PROCESS_FIELDS, "record": RECORD_FIELDS,
              "update": UPDATE_FIELDS, "end": END_FIELDS}[t]
    check(obj, fields, where, REQUIRED[t])
    if t in ("record", "update"):
        if obj["id"] < 0 or obj["count"] < 0:
            raise Malformed(f"{where}: a negative id or count")
        for i, th in enumerate(obj.get("threads") or []):
            if not isinstance(th, dict):
                raise Malformed(f"{where}: threads[{i}] is not an object")
            check(th, THREAD_FIELDS, f"{where}: threads[{i}]", ("tid",))
    if t == "record":
        for i, f in enumerate(obj["frames"]):
            if not isinstance(f, dict):
                raise Malformed(f"{where}: frames[{i}] is not an object")
            check(f, FRAME_FIELDS, f"{where}: frames[{i}]", ("pc",))


# ---- reading ---------------------------------------------------------------

class Record:
    def __init__(self, line):
        self.base = line  # the first record line: what does not move
        self.best = line  # the line with the greatest count so far

    def offer(self, line):
        if better(line, self.best):
            self.best = line

    def merged(self):
        m = {k: v for k, v in self.base.items() if k != "type"}
        for k in MOVING:
            if k in self.best:
                m[k] = self.best[k]
        return m


def better(a, b):
    """Whether line a replaces line b: a greater count, or the same count
    and a later last_ns."""
    if a["count"] != b["count"]:
        return a["count"] > b["count"]
    la, lb = a.get("last_ns"), b.get("last_ns")
    return isinstance(la, int) and isinstance(lb, int) and la > lb


class Process:
    def __init__(self, source, line_no, pid, header):
        self.source = source
        self.line_no = line_no
        self.header = header  # None: its lines came with no process line
        self.pid = pid
        self.end = None
        self.records = {}
        self.orphans = {}  # id -> the best update line with no record line


def parse_line(raw, where):
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise Malformed(f"{where}: a byte that is not UTF-8 at column "
                        f"{e.start + 1} (the contract writes \\u00XX)")
    except RecursionError:
        raise Malformed(f"{where}: nested too deep")
    except ValueError as e:
        raise Malformed(f"{where}: not JSON: {e}")
    if not isinstance(obj, dict):
        raise Malformed(f"{where}: not a JSON object")
    return obj


STATIC_DIFF_IGNORED = set(MOVING) | {"type"}


def read_lines(name, data, procs):
    """Adds the processes of one file's bytes to procs."""
    current = {}  # pid -> its Process now
    lines = data.split(b"\n")
    last_unterminated = lines[-1] != b""
    if not last_unterminated:
        lines.pop()
    for n, raw in enumerate(lines, 1):
        where = f"{name}:{n}"
        if raw.strip() == b"":
            continue
        try:
            obj = parse_line(raw, where)
        except Malformed:
            if last_unterminated and n == len(lines):
                warn(f"{where}: the last line is cut short (a process "
                     "killed while writing it?): skipped")
                continue
            # A cut line with the next process's first line glued to it
            # (a rerun appended after a kill): the fragment is skipped.
            obj = None
            at = raw.find(b'{"type"', 1)
            while at > 0 and obj is None:
                try:
                    obj = parse_line(raw[at:], where)
                except Malformed:
                    at = raw.find(b'{"type"', at + 1)
            if obj is None:
                raise
            warn(f"{where}: starts with a line cut short (a process killed "
                 f"while writing it?): its {at} bytes skipped")
        t = obj.get("type")
        if not isinstance(t, str):
            raise Malformed(f"{where}: no \"type\" string")
        if t not in REQUIRED:
            continue  # a newer writer's line: not ours to read
        check_line(obj, where)
        pid = obj["pid"]
        if t == "process":
            if obj.get("schema") not in (None, SCHEMA):
                raise Malformed(f"{where}: schema {obj['schema']!r}, not "
                                f"{SCHEMA!r}")
            p = Process(name, n, pid, obj)
            current[pid] = p
            procs.append(p)
            continue
        p = current.get(pid)
        if p is None:
            warn(f"{where}: pid {pid} has no process line before this one: "
                 "its lines are shown under a process with no header")
            p = Process(name, n, pid, None)
            current[pid] = p
            procs.append(p)
        if t == "end":
            if p.end is not None and p.end != obj:
                warn(f"{where}: pid {pid} has a second, different end line: "
                     "the last one kept")
            p.end = obj
        elif t == "record":
            rid = obj["id"]
            r = p.records.get(rid)
            if r is None:
                r = p.records[rid] = Record(obj)
                orphan = p.orphans.pop(rid, None)
                if orphan is not None:
                    r.offer(orphan)
            else:
                a = {k: v for k, v in r.base.items()
                     if k not in STATIC_DIFF_IGNORED}
                b = {k: v for k, v in obj.items()
                     if k not in STATIC_DIFF_IGNORED}
                if a != b:
                    warn(f"{where}: pid {pid} record {rid} written again "
                         "with other contents: the first one kept")
                r.offer(obj)
        else:  # update
            rid = obj["id"]
            r = p.records.get(rid)
            if r is not None:
                r.offer(obj)
            elif rid not in p.orphans or better(obj, p.orphans[rid]):
                p.orphans[rid] = obj
    return procs


def read_input(name):
    label = "stdin" if name == "-" else name
    try:
        if name == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as f:
                data = f.read()
    except OSError as e:
        raise Malformed(f"{label}: cannot read: {e.strerror}")
    procs = []
    read_lines(label, data, procs)
    for p in procs:
        if p.orphans:
            ids = ", ".join(str(i) for i in sorted(p.orphans))
            warn(f"{label}: pid {p.pid}: update lines for record id {ids} "
                 "but no record line (lost): not shown")
    return procs


# ---- selecting -------------------------------------------------------------

def raw_bytes(s):
    """The bytes a JSON string of the file stands for: the writer escapes
    each byte that is not printable ASCII as \\u00XX (a path need not be
    UTF-8), so each character is a byte; a character above U+00FF (not
    the contract's) is taken as its UTF-8."""
    try:
        return s.encode("latin-1")
    except UnicodeEncodeError:
        return b"".join(c.encode("latin-1") if ord(c) < 256 else
                        c.encode("utf-8", "surrogatepass") for c in s)


def selected(p, kind, resource):
    out = []
    want = os.fsencode(resource) if resource is not None else None
    for rid in sorted(p.records):
        m = p.records[rid].merged()
        if kind is not None and m["kind"] != kind:
            continue
        if want is not None and want not in raw_bytes(m["resource"]):
            continue
        out.append(m)
    return out


# ---- symbolication ---------------------------------------------------------

def symbolicate(p, records, tool, debug_dirs):
    """Fills in symbol/symbol_offset of the unnamed frames of records (one
    process's) from stacksnap-symbolicate; on failure says why and leaves
    them unnamed."""
    images, doc_records, targets = {}, [], []
    for m in records:
        frames, picked = [None], []
        for f in m["frames"]:
            base, size = hex_value(f.get("image_base")), f.get("image_size")
            # Only frames inside their image: the tool refuses a whole
            # document when one frame's offset disagrees with its images.
            if f.get("symbol") is not None or base is None or \
                    not isinstance(size, int) or \
                    not 0 <= hex_value(f["pc"]) - base < size:
                continue
            key = (f.get("image_path"), base, size)
            if key not in images:
                images[key] = {"name": f.get("image"),
                               "path": f.get("image_path"),
                               "base": f["image_base"], "size": size,
                               "build_id": f.get("build_id"),
                               "in_app": f.get("in_app")}
            frames.append({"pc": f["pc"], "image": f.get("image"),
                           "image_offset": f.get("image_offset")})
            picked.append(f)
        if picked:
            doc_records.append({"frames": frames})
            targets.append(picked)
    if not targets:
        return
    doc = {"os": (p.header or {}).get("os"), "images": list(images.values()),
           "records": doc_records}
    cmd = [tool]
    for d in debug_dirs:
        cmd += ["--debug-dir", d]
    cmd += ["-o", "-", "-"]
    what = f"--symbolicate: pid {p.pid}: {tool}"
    try:
        r = subprocess.run(cmd, input=json.dumps(doc).encode(),
                           capture_output=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        warn(f"{what}: {e}; its frames stay unnamed")
        return
    msg = r.stderr.decode("utf-8", "replace").strip()
    if r.returncode != 0:
        warn(f"{what} failed (exit {r.returncode}): {msg or 'no message'}; "
             "its frames stay unnamed")
        return
    if msg:
        sys.stderr.write(msg + "\n")
    try:
        named = json.loads(r.stdout)["records"]
        if len(named) != len(targets):
            raise ValueError("another number of records")
        pairs = []
        for got, picked in zip(named, targets):
            frames = got["frames"][1:]
            if len(frames) != len(picked):
                raise ValueError("another number of frames")
            pairs += zip(frames, picked)
    except (ValueError, KeyError, TypeError) as e:
        warn(f"{what}: its output is not the document sent ({e}); its "
             "frames stay unnamed")
        return
    for got, f in pairs:
        sym, off = got.get("symbol"), got.get("symbol_offset")
        if isinstance(sym, str) and type_ok(off, ("int",)):
            f["symbol"], f["symbol_offset"] = sym, off
            if isinstance(got.get("source_file"), str) and \
                    type_ok(got.get("source_line"), ("int",)):
                f["source_file"] = got["source_file"]
                f["source_line"] = got["source_line"]


# ---- text ------------------------------------------------------------------

def shown(s):
    """A file string as bytes for a terminal (shown_bytes); "-" for null."""
    return b"-" if s is None else shown_bytes(raw_bytes(s))


def shown_bytes(b):
    """Bytes for a terminal: valid UTF-8 kept, control bytes and bytes
    that are not UTF-8 as \\xNN, a backslash doubled."""
    text = b.decode("utf-8", "surrogateescape")
    out = []
    for c in text:
        o = ord(c)
        if 0xDC80 <= o <= 0xDCFF:
            out.append("\\x%02x" % (o - 0xDC00))
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F or 0x80 <= o <= 0x9F:
            out.append("".join("\\x%02x" % b for b in c.encode("utf-8")))
        else:
            out.append(c)
    return "".join(out).encode("utf-8")


def stack_line(i, f):
    """Frame i as snap_stack_line prints it (src/symbols/stack_line.c)."""
    pc = hex_value(f["pc"])
    image = f.get("image")
    line = b"%-4d" % i + (shown(image) if image is not None
                          else b"???").ljust(35) + b" 0x%016x " % pc
    sym, off = f.get("symbol"), f.get("symbol_offset")
    if sym is not None and off is not None:
        return line + shown(sym) + b" + %d" % off
    if image is not None:
        io = hex_value(f.get("image_offset"))
        if io is None and hex_value(f.get("image_base")) is not None:
            io = pc - hex_value(f["image_base"])
        if io is not None:
            return line + shown(image) + b" + %d" % io
    return line + b"0x0 + %d" % pc


def site_text(m):
    """The call site frame: "symbol + off (image)" or "image + 0xoff"."""
    cs, frames = m.get("call_site"), m["frames"]
    if cs is None or not 0 <= cs < len(frames):
        return b"?"
    f = frames[cs]
    if f.get("symbol") is not None:
        return shown(f["symbol"]) + b" + %d (" % (f.get("symbol_offset")
                                                 or 0) + \
            shown(f.get("image")) + b")"
    if f.get("image") is not None:
        io = f.get("image_offset")
        return shown(f["image"]) + b" + " + (shown(io) if io else b"?")
    return shown(f["pc"])


def threads_text(m):
    t = b",".join(b"%d:" % th["tid"] + shown(th.get("name"))
                  for th in m.get("threads") or [])
    if m.get("threads_more"):
        t += b",+more"
    return t or b"-"


def table(rows, right=()):
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [r[c].rjust(widths[c]) if c in right else
                 r[c].ljust(widths[c]) for c in range(len(r))]
        out.append(b"  " + b"  ".join(cells).rstrip())
    return out


def signal_name(n):
    try:
        return signal.Signals(n).name
    except (ValueError, AttributeError):
        return None


def header_lines(p, records, total):
    h, e = p.header or {}, p.end
    exe = shown(h.get("exe")) if p.header else b"(no process line)"
    out = [b"== process %d: " % p.pid + exe + b" ==",
           b"  input:          " + shown_bytes(os.fsencode(p.source)) +
           b", line %d" % p.line_no]
    if p.header is None:
        out.append(b"  header:         none: the file has no process line "
                   b"for this pid before its other lines")
    else:
        ppid = h.get("ppid")
        out.append(b"  pid:            %d" % p.pid +
                   (b" (ppid %d)" % ppid if ppid is not None else b""))
        ff = h.get("forked_from")
        out.append(b"  forked_from:    " +
                   (b"%d (a forked child, no exec)" % ff if ff is not None
                    else b"- (not a forked child)"))
        out.append(b"  exe:            " + exe)
        out.append(b"  system:         " + shown(h.get("os")) + b" " +
                   shown(h.get("arch")))
        out.append(b"  start:          " + shown(h.get("start")))
        if h.get("prefixes") is not None:
            out.append(b"  prefixes:       " + b":".join(
                shown(x) if isinstance(x, str) else b"?"
                for x in h["prefixes"]))
    if e is None:
        out.append(b"  end:            no end line: killed or still running")
    else:
        reason = e.get("reason")
        what = shown(reason)
        if reason == "signal" or e.get("signal") is not None:
            s = e.get("signal")
            nm = signal_name(s) if s is not None else None
            what = b"signal %s" % (b"%d" % s if s is not None else b"?") + \
                (b" (" + nm.encode() + b")" if nm else b"")
        out.append(b"  end:            " + what + b" at " +
                   shown(e.get("time")))

    def num(key):
        v = e.get(key) if e else None
        return b"%d" % v if v is not None else b"unknown (no end line)" \
            if e is None else b"unknown"
    out.append(b"  calls:          " + num("calls"))
    seen = b"%d record%s read" % (total, b"" if total == 1 else b"s")
    recs = e.get("records") if e else None
    out.append(b"  records:        " + (b"%d (%s)" % (recs, seen)
                                        if recs is not None else seen))
    out.append(b"  calls_not_kept: " + num("calls_not_kept"))
    out.append(b"  lines_lost:     " + num("lines_lost"))
    if p.orphans:
        out.append(b"  note:           update lines for record id " +
                   b", ".join(b"%d" % i for i in sorted(p.orphans)) +
                   b" but no record line (lost): not shown")
    return out


def kind_order(k):
    return (KINDS.index(k) if k in KINDS else len(KINDS), raw_bytes(k))


def record_lines(m):
    cs = m.get("call_site")
    head = b"  record %d: " % m["id"] + shown(m["function"]) + b" " + \
        shown(m["resource"]) + b" -> " + shown(m["result"])
    if m.get("errno"):
        head += b" (errno %d)" % m["errno"]
    head += b", %d call%s" % (m["count"], b"" if m["count"] == 1 else b"s")
    if m.get("argument") is not None:
        head += b"; passed as " + shown(m["argument"])
    if cs is not None:
        head += b"; call site: frame %d" % cs + \
            (b" (app)" if m.get("app") else
             b" (no app frame: the hooked function's caller)")
    out = [head]
    for i, f in enumerate(m["frames"]):
        line = stack_line(i, f)
        if i == cs:
            line += b"  <- call site"
        if f.get("in_app"):
            line += b"  [app]"
        if f.get("source_file") is not None:
            line += b"  (" + shown(f["source_file"]) + b":%d)" % \
                f["source_line"]
        out.append(line)
    if not m["frames"]:
        out.append(b"  (no frames)")
    if m.get("frames_truncated"):
        out.append(b"  (the stack was deeper: only its innermost frames "
                   b"were kept)")
    return out


def render_text(selection, filtered):
    out = []
    n = len(selection)
    out.append(b"privacy audit (%s): %d process%s" % (
        SCHEMA.encode(), n, b"" if n == 1 else b"es"))
    if n == 0:
        out.append(b"no processes in the input: nothing was recorded")
    for p, records in selection:
        out.append(b"")
        out += header_lines(p, records, len(p.records))
        if not records:
            out.append(b"")
            out.append(b"  no records match" if filtered else
                       b"  no records")
            continue
        kinds = sorted({m["kind"] for m in records}, key=kind_order)
        for k in kinds:
            mine = [m for m in records if m["kind"] == k]
            res = sorted({raw_bytes(m["resource"]) for m in mine})
            out.append(b"")
            out.append(b"-- " + shown(k) + b": %d resource%s, %d record%s --"
                       % (len(res), b"" if len(res) == 1 else b"s",
                          len(mine), b"" if len(mine) == 1 else b"s"))
            for rb in res:
                rows = sorted((m for m in mine
                               if raw_bytes(m["resource"]) == rb),
                              key=lambda m: (m.get("first_ns") or 0,
                                             m["id"]))
                out.append(b"")
                out.append(shown(rows[0]["resource"]))
                cells = [[b"function", b"result", b"count", b"first",
                          b"last", b"threads", b"call site"]]
                for m in rows:
                    cells.append([shown(m["function"]), shown(m["result"]),
                                  b"%d" % m["count"], shown(m.get("first")),
                                  shown(m.get("last")), threads_text(m),
                                  site_text(m)])
                out += table(cells, right=(2,))
                for m in rows:
                    out.append(b"")
                    out += record_lines(m)
    return b"\n".join(out) + b"\n"


def render_json(selection):
    doc = {"processes": []}
    for p, records in selection:
        d = {k: v for k, v in (p.header or {"pid": p.pid}).items()
             if k != "type"}
        d["input"] = p.source
        d["end"] = ({k: v for k, v in p.end.items() if k != "type"}
                    if p.end is not None else None)
        d["records"] = records
        if p.orphans:
            d["updates_without_record"] = sorted(p.orphans)
        doc["processes"].append(d)
    return (json.dumps(doc, indent=1) + "\n").encode()


# ---- output ----------------------------------------------------------------

def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomically(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".audit-report.", suffix=".tmp",
                               dir=directory)
    try:
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Prints the privacy audit's JSON lines "
        f"({SCHEMA}, docs/audit.md) as a report: per process, a table per "
        "resource and each call site's stack.")
    ap.add_argument("inputs", metavar="FILE", nargs="+",
                    help="a JSON-lines file the audit wrote; - for stdin")
    ap.add_argument("-o", "--output", metavar="OUT",
                    help="write here (atomically) instead of stdout")
    ap.add_argument("--json", action="store_true",
                    help="print the merged records as one JSON document")
    ap.add_argument("--kind", choices=KINDS, help="only records of this kind")
    ap.add_argument("--resource", metavar="TEXT",
                    help="only records whose resource contains TEXT")
    ap.add_argument("--symbolicate", metavar="TOOL",
                    help="name unnamed frames with stacksnap-symbolicate")
    ap.add_argument("--debug-dir", metavar="DIR", action="append",
                    default=[], help="passed to --symbolicate's tool "
                    "(repeatable)")
    args = ap.parse_args(argv)
    if args.debug_dir and not args.symbolicate:
        ap.error("--debug-dir needs --symbolicate")
    if args.inputs.count("-") > 1:
        ap.error("stdin (-) given twice")

    procs = []
    try:
        for name in args.inputs:
            procs += read_input(name)
    except Malformed as e:
        warn(str(e))
        return 1
    selection = [(p, selected(p, args.kind, args.resource)) for p in procs]
    if args.symbolicate:
        for p, records in selection:
            symbolicate(p, records, args.symbolicate, args.debug_dir)
    filtered = args.kind is not None or args.resource is not None
    data = render_json(selection) if args.json else \
        render_text(selection, filtered)
    if args.output is None or args.output == "-":
        sys.stdout.flush()
        write_all(sys.stdout.fileno(), data)
        return 0
    try:
        write_atomically(args.output, data)
    except OSError as e:
        warn(f"{args.output}: cannot write: {e.strerror}")
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:  # audit-report.py ... | head
        # Point stdout at /dev/null so the interpreter's final flush does
        # not raise again; the reader left, which is not our error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
