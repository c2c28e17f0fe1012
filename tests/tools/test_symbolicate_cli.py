#!/usr/bin/env python3
"""test_symbolicate_cli: stacksnap-symbolicate's command line (issue 27).

  help       --help and -h: usage on stdout, exit 0, nothing on stderr.
  version    --version: stacksnap's version (the project's, from CMake),
             yyjson's (third_party/yyjson/yyjson.h's YYJSON_VERSION_STRING)
             and libdw's (pkg-config --modversion libdw).
  mistakes   each usage mistake exits 2 with its own message naming it
             (unknown option, a missing argument for each option that takes
             one, a bad --max-memory, -o twice, no report, - twice, -o FILE
             or -o - with several reports), before any report is read.
  per report unreadable file, not JSON, not a report: exit 1, "failed:" with
             the reason; a good report beside them still named.
  directory  every *.json directly in a directory (sorted; not .txt, not
             subdirectories): a report named, a FIFO and JSON that is not a
             report "skipped" with the reason, a broken one (bad value, or
             not JSON) "failed"; exit 1
             when one failed, 0 when none did; -o DIR gets each report
             under its own name; a file name with terminal escapes is
             escaped in the messages.
  atomic -o  strace: the output is written to a temporary file in its
             directory opened O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC
             mode 0600, fsync'ed, then renamed over the target; a symlink at
             the target is replaced (its file untouched); a report that
             fails leaves an existing target as it was and no temporary
             file behind; -o into a missing directory fails cleanly.

usage: test_symbolicate_cli.py TOOL --version-want V --yyjson-h PATH
                               [--run-with "EMULATOR ARGS"]
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import fail, failures  # noqa: E402


REPORT = {"schema": "stacksnap.lag/2", "os": "linux", "kind": "lag",
          "images": [{"name": "a.so", "path": "/nonexistent/a.so",
                      "base": "0x10000000", "size": 65536,
                      "build_id": "00112233445566778899aabbccddeeff00112233"}],
          "threads": [{"tid": 1, "name": "main", "stack": [
              {"pc": "0x10001000", "image": "a.so",
               "image_offset": "0x1000"}]}]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--version-want", required=True)
    ap.add_argument("--yyjson-h", required=True)
    ap.add_argument("--run-with", default="")
    a = ap.parse_args()
    emu = shlex.split(a.run_with)

    def run(*args, stdin=None):
        r = subprocess.run(emu + [a.tool, "--no-default-dirs"] + list(args),
                           input=stdin, capture_output=True, timeout=120)
        return r.returncode, r.stdout.decode(errors="replace"), \
            r.stderr.decode(errors="replace")

    def bare(*args):
        r = subprocess.run(emu + [a.tool] + list(args), capture_output=True,
                           timeout=60)
        return r.returncode, r.stdout.decode(errors="replace"), \
            r.stderr.decode(errors="replace")

    # help
    for flag in ("--help", "-h"):
        st, out, err = bare(flag)
        if st != 0 or not out.startswith("usage: stacksnap-symbolicate") \
                or err or "--version" not in out:
            fail(f"{flag}: exit {st}, stdout {out[:80]!r}, stderr {err!r}")
    # version
    st, out, err = bare("--version")
    yy = re.search(r'#define YYJSON_VERSION_STRING "([^"]+)"',
                   open(a.yyjson_h).read()).group(1)
    dw = subprocess.run(["pkg-config", "--modversion", "libdw"],
                        capture_output=True, text=True).stdout.strip()
    for want in ("stacksnap " + a.version_want, "yyjson " + yy,
                 "libdw (elfutils) " + dw):
        if st != 0 or want not in out:
            fail(f"--version: exit {st}, {out!r} lacks {want!r}")
    print("--version:", out.replace("\n", "; "))

    with tempfile.TemporaryDirectory(prefix="snap_cli.") as w:
        good = os.path.join(w, "good.json")
        with open(good, "w") as f:
            json.dump(REPORT, f)
        # mistakes: each its own message, exit 2, nothing read or written
        out_file = os.path.join(w, "o.json")
        mistakes = [
            (["--frobnicate", good], "unknown option '--frobnicate'"),
            (["-x", good], "unknown option '-x'"),
            ([good, "-o"], "option '-o' needs an argument"),
            ([good, "--debug-dir"], "option '--debug-dir' needs an argument"),
            ([good, "--binary"], "option '--binary' needs an argument"),
            ([good, "--max-memory"],
             "option '--max-memory' needs an argument"),
            (["--max-memory", "0", good], "--max-memory '0': not a number"),
            (["--max-memory", "-5", good], "--max-memory '-5': not a number"),
            (["--max-memory", "12x", good], "--max-memory '12x': not a"),
            (["-o", out_file, "-o", out_file, good], "-o given twice"),
            ([], "no report given"),
            (["-", "-"], "'-' (standard input) given more than once"),
            (["-o", out_file, good, good],
             "with several reports: -o must name an existing directory"),
            (["-o", "-", good, w], "with several reports"),
            (["-o", w, "-"], "a report is standard input"),
        ]
        for args, want in mistakes:
            st, out, err = run(*args)
            if st != 2 or want not in err or "--help" not in err:
                fail(f"mistake {args}: exit {st}, stderr {err!r}, want "
                     f"{want!r}")
            if os.path.exists(out_file):
                fail(f"mistake {args}: wrote {out_file}")
        print(f"{len(mistakes)} usage mistakes: exit 2, each its message")

        # per report: unreadable, not JSON, not a report, beside a good one
        notjson = os.path.join(w, "notjson.txt")
        with open(notjson, "w") as f:
            f.write("{\"images\": [")
        notrep = os.path.join(w, "trace.txt")
        with open(notrep, "w") as f:
            json.dump({"traceEvents": []}, f)
        missing = os.path.join(w, "missing.json")
        st, out, err = run(good, missing, notjson, notrep)
        want = [f"{good}: named: 1 frames",
                f"{missing}: failed: cannot open: No such file",
                f"{notjson}: failed: not JSON: line 1 col",
                f"{notrep}: failed: not a stacksnap report (no \"images\"",
                "4 reports: 1 named, 0 skipped, 3 failed"]
        for x in want:
            if x not in err:
                fail(f"per report: stderr lacks {x!r}: {err!r}")
        if st != 1 or f"==> {good} <==" not in out or \
                "a.so" not in out:
            fail(f"per report: exit {st}, stdout {out[:200]!r}")
        print("per report:", err.strip().replace("\n", " | ")[:300])

        # directory: reports, a FIFO, a non-report, a broken one, a .txt
        d = os.path.join(w, "reports")
        os.mkdir(d)
        for n in ("b.json", "a.json"):
            with open(os.path.join(d, n), "w") as f:
                json.dump(REPORT, f)
        os.mkfifo(os.path.join(d, "fifo.json"))
        with open(os.path.join(d, "chrome.json"), "w") as f:
            json.dump([{"ph": "X"}], f)
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("not read")
        os.mkdir(os.path.join(d, "sub.json"))
        evil = os.path.join(d, "e\x1b[2Jvil.json")
        with open(evil, "w") as f:
            json.dump(REPORT, f)
        outdir = os.path.join(w, "named")
        os.mkdir(outdir)
        st, out, err = run("-o", outdir, d)
        lines = err.strip().split("\n")
        order = [l.split(": ")[1] for l in lines if l.count(": ") >= 2
                 and l.split(": ")[1].startswith(d)]
        want_order = sorted(["a.json", "b.json", "chrome.json", "fifo.json",
                             "sub.json", "e\\x1b[2Jvil.json"])
        if [os.path.basename(o) for o in order] != want_order:
            fail(f"directory: order {order}, want {want_order}")
        checks = [f"{d}/a.json: named: 1 frames, 0 named from 0 of 1 images "
                  f"-> {outdir}/a.json",
                  f"{d}/fifo.json: skipped: not a regular file",
                  f"{d}/sub.json: skipped: not a regular file",
                  f"{d}/chrome.json: skipped: not a stacksnap report (not a "
                  f"JSON object)",
                  "6 reports: 3 named, 3 skipped, 0 failed"]
        for x in checks:
            if x not in err:
                fail(f"directory: stderr lacks {x!r}: {err!r}")
        if "\x1b" in err or "notes" in err:
            fail(f"directory: stderr {err!r}")
        if st != 0:
            fail(f"directory: exit {st} with none failed")
        got = sorted(os.listdir(outdir))
        if got != sorted(["a.json", "b.json", "e\x1b[2Jvil.json"]):
            fail(f"directory: -o DIR holds {got}")
        for n in got:
            doc = json.load(open(os.path.join(outdir, n)))
            if doc["images"][0].get("symbols", "").find("not named") < 0:
                fail(f"directory: {n} lacks the image status")
        with open(os.path.join(d, "z.json"), "w") as f:
            f.write("{\"images\": [], \"threads\": [{\"stack\": [{\"pc\": "
                    "\"zz\"}]}]}")
        with open(os.path.join(d, "y.json"), "w") as f:
            f.write("{\"images\": [")  # cut short: broken, not skipped
        st, out, err = run("-o", outdir, d)
        if st != 1 or f"{d}/z.json: failed: " not in err or \
                f"{d}/y.json: failed: not JSON: " not in err or \
                "8 reports: 3 named, 3 skipped, 2 failed" not in err:
            fail(f"directory with broken reports: exit {st}, {err!r}")
        print("directory:", err.strip().split("\n")[-1])

        # atomic -o
        target = os.path.join(w, "out.json")
        strace = shutil.which("strace")
        if strace and not emu:
            log = os.path.join(w, "strace.log")
            r = subprocess.run([strace, "-f", "-o", log, "-e",
                                "trace=openat,fsync,rename,renameat,"
                                "renameat2", a.tool, "--no-default-dirs",
                                "-o", target, good], capture_output=True,
                               # LeakSanitizer cannot run under ptrace
                               env=dict(os.environ, ASAN_OPTIONS=(
                                   os.environ.get("ASAN_OPTIONS", "") +
                                   ":detect_leaks=0").lstrip(":")))
            tr = open(log).read()
            m = re.search(r'openat\(AT_FDCWD, "(%s/\.out\.json\.[0-9a-f]+'
                          r'\.tmp)", ([A-Z_|]+), 0600\) = (\d+)'
                          % re.escape(w), tr)
            flags = set(m.group(2).split("|")) if m else set()
            if r.returncode != 0 or not m or flags != {
                    "O_WRONLY", "O_CREAT", "O_EXCL", "O_NOFOLLOW",
                    "O_CLOEXEC"}:
                fail(f"atomic: no temporary file opened as asked: {tr}")
            else:
                tmp, fd = m.group(1), m.group(3)
                rest = tr[m.end():]
                fs = re.search(r"fsync\(%s\)\s+= 0" % fd, rest)
                rn = re.search(r'rename(?:at2?)?\((?:AT_FDCWD, )?"%s", '
                               r'(?:AT_FDCWD, )?"%s"' % (re.escape(tmp),
                                                         re.escape(target)),
                               rest)
                if not fs or not rn or fs.start() > rn.start():
                    fail(f"atomic: not fsync then rename: {rest}")
                else:
                    print(f"atomic: {os.path.basename(tmp)} O_EXCL|O_NOFOLLOW"
                          "|O_CLOEXEC 0600, fsync, rename")
        else:
            print("atomic: strace not usable here: the syscall check is "
                  "left out")
        st, _, err = run("-o", target, good)
        mode = os.stat(target).st_mode & 0o777
        if st != 0 or mode != 0o600 or \
                json.load(open(target))["schema"] != "stacksnap.lag/2":
            fail(f"atomic: exit {st}, mode {mode:o}, {err!r}")
        # A failing report leaves the target as it was.
        before = open(target, "rb").read()
        st, _, err = run("-o", target, notjson)
        if st != 1 or open(target, "rb").read() != before:
            fail(f"atomic: a failed report changed {target} (exit {st})")
        # A symlink at the target is replaced, its file untouched.
        victim = os.path.join(w, "victim")
        with open(victim, "w") as f:
            f.write("keep")
        link = os.path.join(w, "link.json")
        os.symlink(victim, link)
        st, _, err = run("-o", link, good)
        if st != 0 or os.path.islink(link) or open(victim).read() != "keep":
            fail(f"atomic: symlink target: exit {st}, link still a link "
                 f"{os.path.islink(link)}, victim {open(victim).read()!r}")
        # Into a missing directory: failed, nothing left.
        st, _, err = run("-o", os.path.join(w, "nodir", "x.json"), good)
        if st != 1 or "failed: cannot create a temporary file in" not in err:
            fail(f"atomic: missing directory: exit {st}, {err!r}")
        left = [n for n in os.listdir(w) if n.endswith(".tmp")]
        if left:
            fail(f"atomic: temporary files left: {left}")
        print("atomic: mode 0600, failure keeps the old file, symlink "
              "replaced, no temporary file left")

    if failures:
        print(f"test_symbolicate_cli: {len(failures)} failure(s)")
        return 1
    print("test_symbolicate_cli: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
