#!/usr/bin/env python3
"""test_symbolicate_hostile: stacksnap-symbolicate on reports written by an
adversary (issue 24, items 10-12; docs/security.md, "Reports as untrusted
input").

  traversal  build ids that are paths ("../../outside/secret"), or not hex
             of 8 to 64 bytes: refused per image, no file opened (the
             secret file's build id never shows); an uppercase id of the
             right form is accepted.
  unrelated  a report naming existing files by path (/etc/passwd, a
             readable ELF of another build id): the output is the same,
             byte for byte, as for paths that do not exist (nothing tells
             the report's author the file exists or its build id).
  fifo       a FIFO as an image path, through a symlink, and as --binary:
             no hang (a timeout), exit 0, the FIFO refused.
  escapes    OSC 52, ESC[2J, CR, newline, BEL and C1 in the report's kind,
             thread name, keys, image name and path, and symbol names from
             a debug file (ESC and invalid UTF-8 put in by objcopy): the
             text output and stderr hold no control byte but newline, are
             valid UTF-8, and no line is forged; -o - stays JSON that
             round-trips the strings.
  budget     --max-memory 1 with a 2 MiB file of the image's build id: not
             read, and the status says why.
  rss        (--rss) 200 spellings (/./, //) of the biggest ELF library
             under /usr/lib (with its build id) are read once: peak RSS
             (wait4's ru_maxrss, the kernel's count) at most one spelling's
             plus 64 MiB; one spelling with another build id is not read
             (RSS of a run naming no file, plus 16 MiB). Exits 77 (ctest:
             skipped) when no library of 32 MiB or more is there.

usage: test_symbolicate_hostile.py TOOL LIB --objcopy P [--rss]
                                   [--run-with "EMULATOR ARGS"]
"""
import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import SKIP, fail, failures  # noqa: E402


def build_id(path):
    r = subprocess.run([shutil.which("readelf") or "readelf", "-n", path],
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def report(images, **extra):
    """A lag report: each image (path, build id) 64 KiB at its own base,
    one frame in each, on a thread."""
    ims, frames = [], []
    for i, (path, bid) in enumerate(images):
        base = 0x10000000 + i * 0x100000
        ims.append({"name": os.path.basename(path) or "x", "path": path,
                    "base": hex(base), "size": 0x10000, "build_id": bid})
        frames.append({"pc": hex(base + 0x1000), "image": ims[-1]["name"],
                       "image_offset": "0x1000"})
    r = {"schema": "stacksnap.lag/2", "os": "linux", "kind": "lag",
         "images": ims,
         "threads": [{"tid": 1, "name": "main", "stack": frames}]}
    r.update(extra)
    return r


class Tool:
    def __init__(self, a, work):
        self.cmd = shlex.split(a.run_with) + [a.tool]
        self.work = work
        self.n = 0

    def write(self, rep):
        self.n += 1
        path = os.path.join(self.work, f"r{self.n}.json")
        with open(path, "w") as f:
            json.dump(rep, f)
        return path

    def run(self, rep, *args, timeout=120):
        """(exit status, stdout bytes, stderr bytes); a hang is a failure."""
        path = self.write(rep) if isinstance(rep, dict) else rep
        try:
            r = subprocess.run(self.cmd + ["--no-default-dirs", *args, path],
                               capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, b"", b"(timed out)"
        return r.returncode, r.stdout, r.stderr

    def statuses(self, rep, *args):
        rc, out, err = self.run(rep, *args, "-o", "-")
        if rc != 0:
            fail(f"exit {rc}: {err[:400]!r}")
            return None, out + err
        return [im.get("symbols") for im in json.loads(out)["images"]], \
            out + err


def test_traversal(t, lib, work):
    bid = build_id(lib)
    dbg = os.path.join(work, "dbg")
    os.makedirs(os.path.join(dbg, ".build-id", bid[:2]))
    outside = os.path.join(work, "outside")
    os.makedirs(outside)
    # The secret: an ELF (with a build id of its own) outside the tree.
    secret = os.path.join(outside, "secret.debug")
    shutil.copy(lib, secret)
    os.makedirs(os.path.join(dbg, "xx"), exist_ok=True)
    shutil.copy(lib, os.path.join(dbg, "xx", "secret.debug"))
    hostile = ["../../outside/secret",   # dbg/.build-id/..//../outside/...
               "..//xx/secret",          # dbg/.build-id/..//xx/secret
               "ab/../../../outside/secret", "zz" * 10, "abc",
               "a" * 17, "0" * 130, "0" * 14, "0" * 39 + "g",
               "0011223344556677/../0011223344556677", " 0011223344556677"]
    images = [("/nonexistent/lib%d.so" % i, h) for i, h in enumerate(hostile)]
    st, text = t.statuses(report(images), "--debug-dir", dbg)
    if st is None:
        return
    for h, s in zip(hostile, st):
        if not s or "not a build id" not in s:
            fail(f"traversal: build id {h!r}: status {s!r}")
    if bid.encode() in text or b"secret.debug" in text:
        fail(f"traversal: the output shows the secret file: {text[:2000]!r}")
    # An id of the right form, in uppercase: named from the tree.
    shutil.copy(lib, os.path.join(dbg, ".build-id", bid[:2],
                                  bid[2:] + ".debug"))
    st, _ = t.statuses(report([("/nonexistent/x.so", bid.upper())]),
                       "--debug-dir", dbg)
    if st and "named from" not in (st[0] or ""):
        fail(f"traversal: a valid uppercase id not named: {st[0]!r}")


def test_unrelated(t, lib, work):
    other = os.path.join(work, "unrelated.so")
    shutil.copy(lib, other)
    ids = ["00112233445566778899aabbccddeeff00112233",
           "ffeeddccbbaa99887766554433221100ffeeddcc",
           "0123456789abcdef0123456789abcdef01234567"]
    real = ["/etc/passwd", other, "/./etc/../" + other]
    fake = ["/nonexistent/a/passwd", "/nonexistent/b/unrelated.so",
            "/nonexistent/c/unrelated.so"]
    outs = []
    for paths in (real, fake):
        # One file name for both reports: the tool's per-report line on
        # stderr names it.
        rep = os.path.join(t.work, "unrelated.json")
        with open(rep, "w") as f:
            json.dump(report(list(zip(paths, ids))), f)
        rc, text, err = t.run(rep)
        rc2, js, err2 = t.run(rep, "-o", "-")
        if rc != 0 or rc2 != 0:
            fail(f"unrelated: exit {rc}/{rc2}: {err[:300]!r}")
            return
        # The report's own echo of its paths, longest first (one holds
        # another).
        for p, q in sorted(zip(paths, fake), key=lambda x: -len(x[0])):
            text = text.replace(p.encode(), q.encode())
            js = js.replace(json.dumps(p).encode(), json.dumps(q).encode())
        outs.append((text, js, err, err2))
    if outs[0] != outs[1]:
        fail("unrelated: existing files change the output:\n"
             f"{outs[0][0].decode(errors='replace')}\n--- vs ---\n"
             f"{outs[1][0].decode(errors='replace')}")
    lib_id = build_id(lib)
    if any(lib_id.encode() in x for x in outs[0]):
        fail("unrelated: the file's build id is in the output")


def test_fifo(t, lib, work):
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    link = os.path.join(work, "fifo-link.so")
    os.symlink(fifo, link)
    bid = build_id(lib)
    for args, what in (([], "image path"), (["--binary", fifo], "--binary")):
        rc, out, err = t.run(report([(fifo, bid), (link, bid)]), *args,
                             timeout=20)
        if rc is None:
            fail(f"fifo ({what}): the tool hung on a FIFO")
        elif rc != 0:
            fail(f"fifo ({what}): exit {rc}: {err[:300]!r}")
        elif args and b"not a regular file" not in err:
            fail(f"fifo (--binary): stderr does not say why: {err!r}")


def clean_text(what, data):
    """No control byte but newline, no C1, valid UTF-8."""
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"escapes: {what} is not UTF-8: {e}")
        return None
    bad = [c for c in s if (ord(c) < 0x20 and c != "\n") or
           0x7f <= ord(c) <= 0x9f]
    if bad:
        fail(f"escapes: {what} holds raw {bad!r}")
    return s


def test_escapes(t, lib, objcopy, work):
    # A debug file whose function names carry ESC and invalid UTF-8.
    evil_lib = os.path.join(work, "libevil.so")
    r = subprocess.run([objcopy, b"--redefine-sym",
                        b"split_lib_run=split\x1b[2J\xffrun\x07", lib,
                        evil_lib], capture_output=True)
    if r.returncode != 0:
        fail(f"escapes: objcopy: {r.stderr!r}")
        return
    bid = build_id(evil_lib)
    nm = subprocess.run(["nm", "-D", "--defined-only", lib],
                        capture_output=True, text=True)
    addr = next(int(line.split()[0], 16) for line in nm.stdout.splitlines()
                if line.endswith(" split_lib_run"))
    osc52 = "\x1b]52;c;dG91Y2ggcHduZWQ=\x07"
    rep = report([("/lib/\rFAKE\nFORGED: named from /etc/shadow", "00" * 20),
                  ("/opt/evil/libevil.so", bid)],
                 kind="lag" + osc52)
    rep["images"][0]["name"] = "img\u009b31m\x1b[2J"
    rep["threads"][0]["name"] = "main\x1b[2J\x1b[H\rFORGED\x7f"
    rep["threads"][0]["stack"][0]["symbol"] = "sym\u0085\nFORGED: frame"
    rep["threads"][0]["stack"][1]["pc"] = hex(0x10100000 + addr + 4)
    rep["threads"][0]["stack"][1]["image_offset"] = hex(addr + 4)
    rep["threads"].append({"tid": 2, "name": "t", "stack\x1b]0;title\x07":
                           [{"pc": "0x10001000"}]})
    rc, out, err = t.run(rep, "--binary", evil_lib)
    if rc != 0:
        fail(f"escapes: exit {rc}: {err[:300]!r}")
        return
    s = clean_text("the text output", out)
    clean_text("stderr", err)
    if s is not None:
        if any(line.lstrip().startswith("FORGED") for line in s.split("\n")):
            fail(f"escapes: a forged line:\n{s}")
        for want in ("\\x1b]52;c;", "\\x1b[2J", "\\u{9b}31m", "\\x0dFAKE",
                     "\\x0aFORGED", "\\xffrun\\x07", "\\x7f", "\\u{85}"):
            if want not in s:
                fail(f"escapes: {want!r} not in the text:\n{s}")
    # JSON output: valid JSON whose strings are the report's.
    rc, js, err = t.run(rep, "--binary", evil_lib, "-o", "-")
    try:
        doc = json.loads(js)
        if doc["kind"] != rep["kind"] or \
                doc["threads"][0]["name"] != rep["threads"][0]["name"] or \
                doc["images"][0]["path"] != rep["images"][0]["path"]:
            fail("escapes: JSON output changed the report's strings")
    except (ValueError, KeyError) as e:
        fail(f"escapes: -o - is not the report as JSON: {e}")
    # A refused report: the message names the place by its (hostile) key.
    bad = {"images": [], "x\x1b[2J\nFORGED": [{"pc": "zz"}]}
    rc, out, err = t.run(bad)
    if rc != 1:
        fail(f"escapes: a bad pc under a hostile key: exit {rc}")
    e = clean_text("the refusal message", err)
    if e is not None and "\\x1b[2J" not in e:
        fail(f"escapes: refusal message {e!r}")


def test_budget(t, lib, objcopy, work):
    blob = os.path.join(work, "blob")
    with open(blob, "wb") as f:
        f.write(b"\0" * (2 << 20))
    big = os.path.join(work, "libbig.so")
    r = subprocess.run([objcopy, "--add-section", ".blob=" + blob, lib, big],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"budget: objcopy: {r.stderr}")
        return
    st, text = t.statuses(report([(big, build_id(big))]), "--max-memory", "1")
    if st and "--max-memory" not in (st[0] or ""):
        fail(f"budget: status {st[0]!r}")
    st, _ = t.statuses(report([(big, build_id(big))]), "--max-memory", "3")
    if st and "named from" not in (st[0] or ""):
        fail(f"budget: within the budget, status {st[0]!r}")


def peak_rss_kib(t, rep):
    path = t.write(rep)
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(t.cmd + ["--no-default-dirs", "-o", "-", path],
                             stdout=subprocess.PIPE, stderr=null)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        fail(f"rss: exit {p.returncode}")
    return ru.ru_maxrss, out


def biggest_library():
    """The biggest ELF shared library with a build id in /usr/lib's usual
    places (by size first: only the few biggest are opened)."""
    sizes = []
    for pattern in ("/usr/lib/*.so*", "/usr/lib/*/*.so*",
                    "/usr/lib/*/lib/*.so*"):
        for path in glob.glob(pattern):
            try:
                if not os.path.islink(path) and os.path.isfile(path):
                    sizes.append((os.path.getsize(path), path))
            except OSError:
                pass
    for size, path in sorted(sizes, reverse=True)[:20]:
        if size < 32 << 20:
            break
        try:
            with open(path, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
        except OSError:
            continue
        if build_id(path):
            return path, size
    return None


def spellings(path, n):
    d, b = os.path.split(path)
    out = []
    for i in range(n):
        k = i + 1
        out.append(d + "/." * (k % 100) + "/" * (1 + k // 100) + b)
    return out


def test_rss(t):
    big = biggest_library()
    if not big:
        print("rss: no ELF library of 32 MiB or more under /usr/lib: skipped")
        return SKIP
    path, size = big
    bid = build_id(path)
    none, _ = peak_rss_kib(t, report([("/nonexistent/x.so", bid)]))
    one, _ = peak_rss_kib(t, report([(path, bid)]))
    many, out = peak_rss_kib(t, report([(p, bid) for p in
                                        spellings(path, 200)]))
    other, _ = peak_rss_kib(t, report([(path, "00" * 20)]))
    print(f"rss: {path} ({size >> 20} MiB): peak RSS no file {none} KiB, "
          f"one spelling {one} KiB, 200 spellings {many} KiB, another "
          f"build id {other} KiB", flush=True)
    named = [im.get("symbols", "") for im in json.loads(out)["images"]]
    if not all("named from" in s for s in named):
        fail(f"rss: not every spelling named: {set(named)}")
    if many > one + (64 << 10):
        fail(f"rss: 200 spellings took {many} KiB, one {one} KiB")
    if other > none + (16 << 10):
        fail(f"rss: a file of another build id was read ({other} KiB, "
             f"{none} KiB naming no file)")
    return 0


def run_case(name, fn, *args):
    before = len(failures)
    fn(*args)
    print(f"{name}: {'ok' if len(failures) == before else 'FAILED'}",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("lib")
    ap.add_argument("--objcopy", default="objcopy")
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("--run-with", default="")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        t = Tool(a, work)
        if a.rss:
            if test_rss(t) == SKIP:
                return SKIP
        else:
            run_case("traversal", test_traversal, t, a.lib, work)
            run_case("unrelated", test_unrelated, t, a.lib, work)
            run_case("fifo", test_fifo, t, a.lib, work)
            run_case("escapes", test_escapes, t, a.lib, a.objcopy, work)
            run_case("budget", test_budget, t, a.lib, a.objcopy, work)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
