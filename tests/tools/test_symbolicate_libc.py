#!/usr/bin/env python3
"""test_symbolicate_libc: stacksnap-symbolicate names libc frames from
Debian's libc6-dbg (compressed debug sections) with addr2line's file:line.

A report of libc's real build id whose frames are the return addresses of
every call in __libc_start_call_main and __libc_start_main_impl (the
frames under main() in every lag report), as callers (the tool looks up
pc - 1): each frame's source_file:source_line must be what
`addr2line -e /usr/lib/debug/.build-id/xx/yyy.debug <offset - 1>` prints.
Where binutils 2.40 differs (it gives DWARF 5 rows before a sequence's
first set_file the file 0: libc-start.c for the lines of
libc_start_call_main.h that __libc_start_call_main is made of), the line
must still be addr2line's and the file llvm-addr2line's (gdb's too). At
least one frame of __libc_start_main_impl must be addr2line's exactly.
Each frame's "inlined" calls (call_init is inlined into
__libc_start_main_impl) must be what `addr2line -f -i` prints.
Exits 77 (ctest: skipped) without libc6-dbg's file for this libc.

usage: test_symbolicate_libc.py TOOL LIBC --addr2line P --llvm-addr2line P
"""
import argparse
import json
import re
import subprocess
import sys

SKIP = 77
FUNCS = ("__libc_start_call_main", "__libc_start_main_impl")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("libc")
    ap.add_argument("--addr2line", required=True)
    ap.add_argument("--llvm-addr2line", required=True)
    a = ap.parse_args()
    notes = subprocess.run(["readelf", "-n", a.libc], capture_output=True,
                           text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", notes)
    if not m:
        print("skipped: %s has no build id" % a.libc)
        return SKIP
    bid = m.group(1)
    dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
    try:
        open(dbg, "rb").close()
    except OSError:
        print("skipped: no %s (libc6-dbg)" % dbg)
        return SKIP
    syms = {}
    for line in subprocess.run(["nm", "-S", dbg], capture_output=True,
                               text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] in FUNCS:
            syms[f[3]] = (int(f[0], 16), int(f[1], 16))
    if len(syms) != len(FUNCS):
        print("FAIL: %s lacks %s" % (dbg, FUNCS))
        return 1
    # Return addresses: the instruction after each call in the functions.
    rets = []
    for fn, (start, size) in sorted(syms.items()):
        dis = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", a.libc,
             "--start-address=%#x" % start,
             "--stop-address=%#x" % (start + size)],
            capture_output=True, text=True).stdout
        lines = [l for l in dis.splitlines() if re.match(r"\s+[0-9a-f]+:\t", l)]
        for i, l in enumerate(lines):
            if "\tcall" in l and i + 1 < len(lines):
                rets.append((fn, int(lines[i + 1].split(":")[0], 16)))
    base = 0x7f0000000000
    frames = [{"pc": hex(base + 0x10), "image": "libc.so.6",
               "image_offset": "0x10"}]
    frames += [{"pc": hex(base + r), "image": "libc.so.6",
                "image_offset": hex(r)} for _, r in rets]
    rep = {"schema": "stacksnap.lag/2", "os": "linux", "kind": "lag",
           "images": [{"name": "libc.so.6", "path": a.libc, "base": hex(base),
                       "size": 0x400000, "build_id": bid}],
           "threads": [{"tid": 1, "name": "main", "stack": frames}]}
    r = subprocess.run([a.tool, "--no-default-dirs", "--debug-dir",
                        "/usr/lib/debug", "-o", "-", "-"],
                       input=json.dumps(rep), capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: tool exit %d: %s" % (r.returncode, r.stderr))
        return 1
    out = json.loads(r.stdout)["threads"][0]["stack"][1:]
    offs = ["%#x" % (ret - 1) for _, ret in rets]
    want = subprocess.run([a.addr2line, "-e", dbg] + offs,
                          capture_output=True, text=True).stdout.splitlines()
    llvm = subprocess.run([a.llvm_addr2line, "-e", dbg] + offs,
                          capture_output=True, text=True).stdout.splitlines()
    bad, exact, via_llvm = 0, {f: 0 for f in FUNCS}, 0
    for (fn, ret), f, w, l in zip(rets, out, want, llvm):
        w = w.split(" (discriminator")[0]
        l = l.split(" (discriminator")[0]
        got = "%s:%s" % (f.get("source_file"), f.get("source_line"))
        if got == w:
            exact[fn] += 1
        elif got == l and got.rsplit(":", 1)[1] == w.rsplit(":", 1)[1]:
            via_llvm += 1
        else:
            bad += 1
            print("FAIL: %s %#x: tool %s, addr2line %s, llvm-addr2line %s"
                  % (fn, ret, got, w, l))
        print("%s+%#x: %s (addr2line %s)" % (fn, ret - syms[fn][0], got, w))
    print("%d frames: %s as addr2line, %d as llvm-addr2line (same line, "
          "binutils 2.40's DWARF 5 file 0), %d different"
          % (len(rets), exact, via_llvm, bad))
    # Inlined calls: `addr2line -f -i` prints the innermost function and
    # its file:line, then per inlined call the function around it and the
    # call's file:line; the frame's "inlined" is [{function: the inlined
    # one, source_file:source_line: its call}], innermost first.
    def chains(tool):
        out = []
        for o in offs:  # one run each: no address is a safe separator
            lines = subprocess.run([tool, "-f", "-i", "-e", dbg, o],
                                   capture_output=True,
                                   text=True).stdout.splitlines()
            out.append([(fn, loc.split(" (discriminator")[0])
                        for fn, loc in zip(lines[0::2], lines[1::2])])
        return out
    want_b, want_l = chains(a.addr2line), chains(a.llvm_addr2line)
    with_inlined = 0
    for (fn, ret), f, wb, wl in zip(rets, out, want_b, want_l):
        got = [(e.get("function"), "%s:%s" % (e.get("source_file"),
                                             e.get("source_line")))
               for e in f.get("inlined", [])]
        exp = [[(w[k][0], w[k + 1][1]) for k in range(len(w) - 1)]
               for w in (wb, wl)]
        if got not in exp:
            bad += 1
            print("FAIL: %s %#x: inlined %s, addr2line -i %s" % (fn, ret,
                                                                 got, exp[0]))
        with_inlined += bool(got)
    print("%d frames in inlined code, their calls as addr2line -i"
          % with_inlined)
    if bad or not rets or exact["__libc_start_main_impl"] == 0 or \
            with_inlined == 0:
        print("FAIL")
        return 1
    print("test_symbolicate_libc: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
