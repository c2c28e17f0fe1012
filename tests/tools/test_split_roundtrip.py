#!/usr/bin/env python3
"""test_split_roundtrip: the stripped-build round trip of issue 15.

A program and a shared library built with -g (split_app.c, split_lib.c)
are copied, their debug info split out as a release build ships it:

    objcopy --only-keep-debug X X.debug
    objcopy --strip-all --add-gnu-debuglink=X.debug X   (.symtab gone too)
    DBG/.build-id/xx/rest.debug = X.debug               (gdb's layout)

and the debug files moved away. The stripped program then lags under the
watchdog in a static function (app_static_spin, through the library's
static lib_static_relay). Checked:
  1. the report names no static function (nothing here to name it from);
  2. stacksnap-symbolicate --debug-dir DBG names every frame of the two
     images as `addr2line -f -i -e <debug file>` does for the same image
     offset (the oracle; a return address is looked up one byte back, as
     the library and gdb do): the function holding it (the outermost of
     addr2line's inline chain: inlined code is named for its container,
     as a symbol table names it) and the innermost file:line, and the
     lag's own static functions are among them;
  3. the text output prints them in lag-report.py's frame layout;
  4. a debug file of another build of the library (same name, other build
     id), given as --binary and found through the debuglink in the only
     debug dir: not used (its static function stays unnamed), and the
     output says why (both build ids);
  5. hostile reports: a clear error, exit status 1, no crash;
  6. an Apple report: named nowhere here, the dSYM's Spotlight query by
     UUID and the atos line with the image's base and pcs printed.

usage: test_split_roundtrip.py TOOL APP LIB OTHER_LIB --objcopy P --addr2line P
                           [--run-with "EMULATOR ARGS"]
"""
import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import fail, failures  # noqa: E402

STATICS = {"app_static_spin", "app_static_outer", "lib_static_relay"}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          **kw)


def build_id(readelf_out):
    for line in readelf_out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def split(objcopy, path, dbg_root):
    """Splits path's debug info into path.debug, strips path, files the
    debug file under dbg_root/.build-id; returns (debug file, build id)."""
    debug = path + ".debug"
    for cmd in ([objcopy, "--only-keep-debug", path, debug],
                [objcopy, "--strip-all", "--add-gnu-debuglink=" + debug,
                 path]):
        r = run(cmd)
        if r.returncode != 0:
            sys.exit(f"{cmd}: {r.stderr}")
    readelf = shutil.which("readelf")
    bid = build_id(run([readelf, "-n", debug]).stdout)
    if not bid:
        sys.exit(f"{debug}: no build id")
    tree = os.path.join(dbg_root, ".build-id", bid[:2])
    os.makedirs(tree, exist_ok=True)
    shutil.copy(debug, os.path.join(tree, bid[2:] + ".debug"))
    return debug, bid


_ADDRS = {}


def symbol_addrs(addr2line_tool, debug):
    """{name: set of addresses} of the debug file's symbols, from nm (the
    binutils beside addr2line): two names at one address are aliases, and
    either is right (ASan's __interceptor_clock_gettime is clock_gettime;
    addr2line picks one, the symbol table another)."""
    if debug not in _ADDRS:
        nm = os.path.join(os.path.dirname(addr2line_tool),
                          os.path.basename(addr2line_tool).replace("addr2line", "nm"))
        if not os.path.exists(nm):
            nm = shutil.which("nm") or "nm"
        out = subprocess.run([nm, "--defined-only", debug], capture_output=True,
                             text=True).stdout
        table = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3:
                table.setdefault(parts[2], set()).add(int(parts[0], 16))
        _ADDRS[debug] = table
    return _ADDRS[debug]


def addr2line(tool, debug, offset):
    """addr2line -f -i: the function that holds the address (the last of
    the inline chain: what a symbol table names; plain -f names the
    innermost inlined one) and the innermost file:line (the line table's
    row, what plain -f prints too)."""
    r = run([tool, "-f", "-i", "-e", debug, hex(offset)])
    lines = r.stdout.splitlines()
    if r.returncode != 0 or len(lines) < 2 or len(lines) % 2:
        return None, None
    func, where = lines[-2], lines[1]
    if " (discriminator" in where:
        where = where.split(" (discriminator")[0]
    return func, where


def frames_of(report):
    """Every frames array of a report, with its name."""
    out = [("main_stack", report["main_stack"]),
           ("costliest_stack", report["costliest_stack"]["frames"])]
    for t in report["threads"]:
        out.append((f"thread {t['tid']}", t["frames"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("app")
    ap.add_argument("lib")
    ap.add_argument("other_lib")
    ap.add_argument("--objcopy", required=True)
    ap.add_argument("--addr2line", required=True)
    ap.add_argument("--run-with", default="")
    a = ap.parse_args()
    emu = shlex.split(a.run_with)
    work = tempfile.mkdtemp(prefix="snap_symbolicate.")
    try:
        check(a, emu, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"test_split_roundtrip: {len(failures)} failure(s)")
        return 1
    print("test_split_roundtrip: all checks passed")
    return 0


def check(a, emu, work):
    rel = os.path.join(work, "release")  # what ships: stripped
    dbg = os.path.join(work, "debug")    # the symbol store, kept apart
    other = os.path.join(work, "other")  # another build's debug file
    for d in (rel, dbg, other):
        os.makedirs(d)
    app = os.path.join(rel, "split_app")
    lib = os.path.join(rel, os.path.basename(a.lib))
    shutil.copy(a.app, app)
    shutil.copy(a.lib, lib)
    app_debug, app_id = split(a.objcopy, app, dbg)
    lib_debug, lib_id = split(a.objcopy, lib, dbg)
    # The debug files leave the release directory (else its debuglink
    # would find them next to the binaries).
    kept = {}
    for f in (app_debug, lib_debug):
        kept[f] = os.path.join(dbg, os.path.basename(f))
        shutil.move(f, kept[f])
    other_lib = os.path.join(other, os.path.basename(a.lib))
    shutil.copy(a.other_lib, other_lib)
    other_debug, other_id = split(a.objcopy, other_lib,
                                  os.path.join(work, "other-tree"))
    if other_id == lib_id:
        sys.exit("the other build of the library has the same build id")

    reports = os.path.join(work, "reports")
    env = dict(os.environ, LD_LIBRARY_PATH=rel)
    if emu:
        env["QEMU_SET_ENV"] = "LD_LIBRARY_PATH=" + rel
    r = run(emu + [app, reports], env=env)
    if r.returncode != 0:
        fail(f"split_app exited {r.returncode}: {r.stderr}")
        return
    report_path = r.stdout.strip().splitlines()[-1]
    with open(report_path) as f:
        report = json.load(f)
    images = {im["path"]: im for im in report["images"]}
    want = {os.path.realpath(app): (app_id, kept[app_debug]),
            os.path.realpath(lib): (lib_id, kept[lib_debug])}
    by_path = {os.path.realpath(p): im for p, im in images.items()}
    for p, (bid, _) in want.items():
        if p not in by_path:
            fail(f"the report lists no image {p}: {list(images)}")
            return
        if by_path[p]["build_id"] != bid:
            fail(f"{p}: report build id {by_path[p]['build_id']}, "
                 f"readelf -n says {bid}")

    # 1. Stripped: no static function is named in the report itself.
    named = {f["symbol"] for _, frs in frames_of(report) for f in frs}
    if named & STATICS:
        fail(f"the stripped report names {named & STATICS}")

    # 2. Named later, against addr2line on the debug files.
    out_json = os.path.join(work, "named.json")
    r = run(emu + [a.tool, "--no-default-dirs", "--debug-dir", dbg,
                   "-o", out_json, report_path])
    if r.returncode != 0:
        fail(f"symbolicate exited {r.returncode}: {r.stderr}")
        return
    with open(out_json) as f:
        named_report = json.load(f)
    seen, compared = set(), 0
    for where, frs in frames_of(named_report):
        for i, f in enumerate(frs):
            im = next((m for m in named_report["images"]
                       if m["name"] == f["image"] and
                       int(m["base"], 16) <= int(f["pc"], 16) <
                       int(m["base"], 16) + m["size"]), None)
            if not im or os.path.realpath(im["path"]) not in want:
                continue
            debug = want[os.path.realpath(im["path"])][1]
            off = int(f["image_offset"], 16)
            func, line = addr2line(a.addr2line, debug, off - 1 if i else off)
            compared += 1
            if func in (None, "??"):
                if f.get("symbol") in STATICS:
                    fail(f"{where} #{i}: named {f['symbol']} where addr2line "
                         f"knows nothing")
                continue
            seen.add(f.get("symbol"))
            table = symbol_addrs(a.addr2line, debug)
            alias = f.get("symbol") in table and func in table and \
                table[f.get("symbol")] & table[func]
            if f.get("symbol") != func and not alias:
                fail(f"{where} #{i} ({im['name']}+{hex(off)}): named "
                     f"{f.get('symbol')}, addr2line says {func}")
            got = f"{f.get('source_file')}:{f.get('source_line')}"
            if not line.startswith("??") and got != line:
                fail(f"{where} #{i} {func}: {got}, addr2line says {line}")
            if "symbols" not in im or "named from" not in im["symbols"]:
                fail(f"{im['name']}: symbols status {im.get('symbols')}")
    missing = STATICS - seen
    if missing:
        fail(f"never named on any stack: {missing}")
    print(f"compared {compared} frames with addr2line; named "
          f"{sorted(seen & STATICS)}", flush=True)

    # 3. Text: lag-report.py's frame layout, with file:line.
    r = run(emu + [a.tool, "--no-default-dirs", "--debug-dir", dbg,
                   report_path])
    if r.returncode != 0 or "app_static_spin + " not in r.stdout or \
            "split_app.c:" not in r.stdout:
        fail(f"text output (exit {r.returncode}) lacks the named lag frame "
             f"with its file:line:\n{r.stdout[:3000]}")

    # 4. Another build's debug file: never used, and the output says why.
    r = run(emu + [a.tool, "--no-default-dirs", "--debug-dir", other,
                   "--binary", other_debug, "-o", "-", report_path])
    if r.returncode != 0:
        fail(f"symbolicate (other build) exited {r.returncode}: {r.stderr}")
    else:
        doc = json.loads(r.stdout)
        lib_im = next(m for m in doc["images"]
                      if os.path.realpath(m["path"]) == os.path.realpath(lib))
        status = lib_im.get("symbols", "")
        # The stripped library itself is the image's build: its exported
        # functions may be named from it, its static ones never.
        if "not used" not in status or lib_id not in status or \
                other_id not in status:
            fail(f"other build: the library's status does not say why: "
                 f"{status!r}")
        for _, frs in frames_of(doc):
            for f in frs:
                if f.get("symbol") == "lib_static_relay":
                    fail("other build: lib_static_relay named from the "
                         "wrong file")
        if "not used" not in r.stderr or other_debug not in r.stderr:
            fail(f"other build: stderr does not name the unused --binary: "
                 f"{r.stderr!r}")

    # 5. Hostile reports: exit 1 with a message, never a crash.
    hostile(a, emu, work, report)
    # 6. An Apple report: nothing named here; the atos lines to run.
    apple(a, emu, work)


def apple(a, emu, work):
    uuid = "E3F22F87-0B68-3B06-A845-8402D70B8FE9"
    r = {"schema": "stacksnap.lag/2", "os": "darwin", "arch": "arm64e",
         "images": [{"name": "MyApp", "base": "0x104e3c000", "size": 65536,
                     "path": "/private/var/containers/Bundle/Application/"
                             "X/MyApp.app/MyApp",
                     "build_id": uuid, "in_app": True}],
         "main_stack": [{"pc": "0x104e3d2a8", "image": "MyApp",
                         "symbol": None, "offset": 4776,
                         "image_offset": "0x12a8", "symbol_offset": None,
                         "in_app": True},
                        {"pc": "0x104e3d100", "image": "MyApp",
                         "symbol": None, "offset": 4352,
                         "image_offset": "0x1100", "symbol_offset": None,
                         "in_app": True}]}
    path = os.path.join(work, "apple.json")
    with open(path, "w") as f:
        json.dump(r, f)
    p = run(emu + [a.tool, "--no-default-dirs", path])
    want = [f'mdfind "com_apple_xcode_dsym_uuids == {uuid}"',
            "atos -arch arm64e -o MyApp.app.dSYM/Contents/Resources/DWARF/"
            "MyApp -l 0x104e3c000 0x104e3d2a8 0x104e3d100"]
    missing = [w for w in want if w not in p.stdout]
    if p.returncode != 0 or missing:
        fail(f"Apple report: exit {p.returncode}, missing {missing}:\n"
             f"{p.stdout}{p.stderr}")
    else:
        print("Apple report: the Spotlight and atos lines", flush=True)


def hostile(a, emu, work, report):
    rnd = random.Random(15)
    cases = {
        "empty": b"",
        "garbage": bytes(rnd.getrandbits(8) for _ in range(10 << 20)),
        "not an object": b"[1,2,3]",
        "no images": json.dumps({"main_stack": []}).encode(),
        "images not an array": json.dumps({"images": {}}).encode(),
        "base a number": json.dumps({"images": [
            {"name": "a", "path": "/a", "base": 4096, "size": 10,
             "build_id": None}]}).encode(),
        "size negative": json.dumps({"images": [
            {"name": "a", "path": "/a", "base": "0x1000", "size": -1,
             "build_id": None}]}).encode(),
        "pc not hex": json.dumps({"images": [], "main_stack": [
            {"pc": "main+4"}]}).encode(),
        "pc a number": json.dumps({"images": [], "main_stack": [
            {"pc": 4096}]}).encode(),
        "offset outside any image": json.dumps({"images": [
            {"name": "a", "path": "/a", "base": "0x1000", "size": 16,
             "build_id": "00"}], "main_stack": [
            {"pc": "0x9000", "image_offset": "0x8000"}]}).encode(),
        "offset disagrees": json.dumps({"images": [
            {"name": "a", "path": "/a", "base": "0x1000", "size": 4096,
             "build_id": "00"}], "main_stack": [
            {"pc": "0x1010", "image_offset": "0x20"}]}).encode(),
        "huge arrays": json.dumps({"images": [], "main_stack": [
            {"pc": "0x1"}] * 200000}).encode(),
        "deep": b"[" * 100000 + b"]" * 100000,
        "truncated": json.dumps(report).encode()[:1000],
    }
    for name, data in cases.items():
        path = os.path.join(work, "hostile.json")
        with open(path, "wb") as f:
            f.write(data)
        r = subprocess.run(emu + [a.tool, "--no-default-dirs", "-o",
                                  os.path.join(work, "h.out"), path],
                           capture_output=True, timeout=120)
        err = r.stderr.decode(errors="replace")
        expect_ok = name == "huge arrays"  # legal: 200000 unnamed frames
        if expect_ok:
            if r.returncode != 0:
                fail(f"hostile {name}: exit {r.returncode}: {err[:300]}")
        elif r.returncode != 1 or "stacksnap-symbolicate:" not in err:
            fail(f"hostile {name}: exit {r.returncode}, stderr {err[:300]!r}")
        else:
            print(f"hostile {name}: {err.strip()[:160]}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
