#!/usr/bin/env python3
"""test_flamegraph: scripts/flamegraph.py draws folded stacks as an SVG
whose boxes say what the input said, read back with xml.etree.

1. Known input (unsorted lines, repeated stacks, stacks ending at an inner
   frame, names with spaces, a tab and CRLF): every box of the SVG is
   found again by geometry alone (levels from its y, its parent as the box
   one level nearer the root whose horizontal extent holds it); its path of
   names must be a stack prefix of the input, its width count / total of
   the usable width (the "all" box's), its <title> the exact count and
   percentage; siblings lie left to right in name order from their
   parent's left edge; every prefix is drawn (--min-width 0), or exactly
   the ones of at least --min-width percent; the total line says the
   samples and threads. The same with --icicle, the root on top. Labels
   are the name or a prefix of it ending in "..", and fit their box in the
   monospace font the SVG asks for. Colours: the same name the same fill,
   run after run (other PYTHONHASHSEED); warm hues; app frames ("_[a]")
   apart from the rest, the annotation not shown.
2. Hostile input: <&>"' , control characters, bytes that are not UTF-8,
   U+FFFE, "]]>" in names and title: the SVG parses, the names come back
   (unrepresentable characters as U+FFFD); 200,000 random lines: parses,
   adds up, in time (printed); 200,000 stacks under one 40-deep prefix:
   the chain drawn whole, the leaves counted as not drawn; no file, an
   empty one, only junk, only zero counts: exit 1 and a message; bad
   usage: exit 2; -o replaces a file whole, leaves no temporary file,
   keeps the old one when it fails; stdin; a reader that closes the pipe
   early: no traceback; an SVG larger than a pipe's buffer arrives whole.
3. flamegraph.pl as the outside oracle when it is on PATH (or in
   $FLAMEGRAPH_PL): per-frame (name, count) pairs of its <title>s equal
   ours. No Debian 12 package ships it, so it is usually skipped (said so).

usage: test_flamegraph.py SCRIPT
"""
import colorsys
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import fail, failures, ok  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def run(script, args, stdin=None, env=None):
    return subprocess.run([sys.executable, script] + args, input=stdin,
                          capture_output=True, env=env, timeout=300)


# ---- reading an SVG back ---------------------------------------------------

TITLE = re.compile(r"(.*) \(([0-9,]+) samples?, ([0-9.]+)%\)", re.S)


class Box:
    def __init__(self, g):
        t = g.find(SVG + "title").text or ""
        m = TITLE.fullmatch(t)
        if not m:
            raise ValueError(f"title {t!r}")
        self.name = m.group(1)
        self.count = int(m.group(2).replace(",", ""))
        self.pct = float(m.group(3))
        r = g.find(SVG + "rect")
        self.x, self.y = float(r.get("x")), float(r.get("y"))
        self.w, self.h = float(r.get("width")), float(r.get("height"))
        self.fill = r.get("fill")
        txt = g.find(SVG + "text")
        self.label = txt.text if txt is not None else None
        self.parent = None
        self.level = None
        self.path = None


class Drawing:
    """An SVG's boxes, levels and parents, from geometry alone."""

    def __init__(self, data, icicle):
        self.root_el = ET.fromstring(data)
        self.width = float(self.root_el.get("width"))
        self.boxes = [Box(g) for g in self.root_el.iter(SVG + "g")]
        by_id = {e.get("id"): e for e in self.root_el.iter()
                 if e.get("id")}
        self.title = by_id["title"].text
        self.total_line = by_id["total"].text
        style = "".join(s.text or "" for s in self.root_el.iter(SVG + "style"))
        m = re.search(r"(?:^|})text\{[^}]*font-size:([0-9.]+)px", style)
        self.font_size = float(m.group(1))
        self.monospace = "font-family:monospace" in style
        roots = [b for b in self.boxes if b.name == "all"]
        if len(roots) != 1:
            raise ValueError(f"{len(roots)} 'all' boxes")
        self.all = roots[0]
        ys = sorted({b.y for b in self.boxes}, reverse=not icicle)
        if ys[0] != self.all.y:
            raise ValueError("the root is not at the " +
                             ("top" if icicle else "bottom"))
        step = abs(ys[1] - ys[0]) if len(ys) > 1 else 1.0
        for b in self.boxes:
            lv = abs(b.y - self.all.y) / step
            if abs(lv - round(lv)) > 1e-9:
                raise ValueError(f"{b.name}: y {b.y} off the level grid")
            b.level = round(lv)
        levels = {}
        for b in self.boxes:
            levels.setdefault(b.level, []).append(b)
        eps = 0.011
        for b in self.boxes:
            if b is self.all:
                b.path = ()
                continue
            cands = [p for p in levels.get(b.level - 1, [])
                     if p.x - eps <= b.x and b.x + b.w <= p.x + p.w + eps]
            if len(cands) != 1:
                raise ValueError(f"{b.name} at level {b.level}: "
                                 f"{len(cands)} parents hold it")
            b.parent = cands[0]
        for b in sorted(self.boxes, key=lambda b: b.level):
            if b.parent is not None:
                b.path = b.parent.path + (b.name,)
        self.children = {}
        for b in self.boxes:
            if b.parent is not None:
                self.children.setdefault(id(b.parent), []).append(b)


def drawing(tag, data, icicle=False):
    """The Drawing of an SVG, or None after a failure saying why not."""
    try:
        return Drawing(data, icicle)
    except Exception as e:  # any reader failure is the finding
        fail(f"{tag}: cannot read the SVG back: {e}")
        return None


def expected(stacks, min_pct):
    """What a drawing of stacks must show: {path: samples} of every stack
    prefix of at least min_pct percent of the samples (a prefix is never
    wider than its own prefixes, so these are exactly the drawn boxes), and
    how many prefixes are too narrow while their callers are drawn."""
    trie = [0, {}]
    for frames, n in stacks:
        node = trie
        node[0] += n
        for f in frames:
            node = node[1].setdefault(f, [0, {}])
            node[0] += n
    total = trie[0]
    want, hidden = {}, 0
    todo = [((), trie)]
    while todo:
        path, node = todo.pop()
        for name, child in node[1].items():
            if 100.0 * child[0] / total >= min_pct:
                want[path + (name,)] = child[0]
                todo.append((path + (name,), child))
            else:
                hidden += 1
    return want, hidden


def check_drawing(tag, d, stacks, width, min_pct, icicle, title):
    want, hidden = expected(stacks, min_pct)
    total = sum(n for _, n in stacks)
    threads = {f[0] for f, _ in stacks}
    usable = d.all.w
    bad = []
    if d.width != width:
        bad.append(f"svg width {d.width} != {width}")
    # The usable width is the "all" box's: inside the image, centred, most
    # of it.
    if not (0 < d.all.x and d.all.x + d.all.w < width
            and abs(d.all.x - (width - d.all.x - d.all.w)) < 0.011
            and usable > 0.9 * width):
        bad.append(f"'all' box {d.all.x}+{d.all.w} not centred in {width}")
    if d.all.count != total:
        bad.append(f"'all' says {d.all.count} samples, input has {total}")
    if d.title != title:
        bad.append(f"title {d.title!r} != {title!r}")
    m = re.match(r"([0-9,]+) samples? in ([0-9]+) threads?", d.total_line)
    if not m or int(m.group(1).replace(",", "")) != total or \
            int(m.group(2)) != len(threads):
        bad.append(f"total line {d.total_line!r}: want {total} samples, "
                   f"{len(threads)} threads")
    drawn = {b.path for b in d.boxes if b is not d.all}
    if len(drawn) != len(d.boxes) - 1:
        bad.append("two boxes with one path")
    if drawn != set(want):
        bad.append(f"drawn-not-wanted {sorted(drawn - set(want))[:3]}, "
                   f"wanted-not-drawn {sorted(set(want) - drawn)[:3]}")
    # Not drawn, counted: the narrow frames whose callers are drawn.
    if hidden and f"{hidden:,} frame" not in d.total_line or \
            not hidden and "not drawn" in d.total_line:
        bad.append(f"total line {d.total_line!r} does not say {hidden} "
                   f"frames not drawn")
    cw = 0.6 * d.font_size  # a monospace font's advance
    if not d.monospace:
        bad.append("labels not in a monospace font: their fit is a guess")
    for b in d.boxes:
        c = want.get(b.path, total if b is d.all else None)
        if c is None:
            continue
        if b.count != c:
            bad.append(f"{b.path}: title says {b.count}, input {c}")
        if abs(b.pct - round(100.0 * c / total, 2)) > 0.0051:
            bad.append(f"{b.path}: {b.pct}% for {c}/{total}")
        if abs(b.w - c / total * usable) > 0.011:
            bad.append(f"{b.path}: width {b.w} != {c}/{total}*{usable}")
        if b.parent is not None:
            above = b.y < b.parent.y
            if above == icicle:
                bad.append(f"{b.path}: on the wrong side of its parent")
        if b.label is not None:
            lab = b.label
            if lab != b.name and not (lab.endswith("..") and
                                      b.name.startswith(lab[:-2]) and
                                      len(lab) < len(b.name) + 2):
                bad.append(f"{b.path}: label {lab!r} for {b.name!r}")
            if len(lab) * cw > b.w:
                bad.append(f"{b.path}: label {lab!r} overflows {b.w}")
        if b.w >= (len(b.name) + 1) * 0.65 * d.font_size + 6 and \
                b.label != b.name:
            bad.append(f"{b.path}: room for {b.name!r}, shows {b.label!r}")
    for kids in d.children.values():
        kids.sort(key=lambda b: b.x)
        names = [k.name for k in kids]
        if names != sorted(names):
            bad.append(f"siblings {names} not in name order")
        if min_pct == 0:
            p = kids[0].parent
            x = p.x
            for k in kids:
                if abs(k.x - x) > 0.021:
                    bad.append(f"{k.path}: x {k.x}, expected {x}")
                x = k.x + k.w
    if bad:
        for b in bad[:8]:
            fail(f"{tag}: {b}")
    else:
        ok(f"{tag}: {len(d.boxes)} boxes at their counts, widths, places")


# ---- 1. known input --------------------------------------------------------

KNOWN = [
    # (frames, count) as written, in no order; some repeat, some end at
    # an inner frame (that frame's own samples).
    (("main", "run_loop", "draw", "paint"), 20),
    (("worker 2", "loop", "compress"), 25),
    (("main", "run_loop", "idle"), 50),
    (("main", "run_loop", "draw", "layout"), 30),
    (("main", "run_loop", "draw", "layout"), 5),
    (("main", "run_loop"), 7),
    (("main", "run_loop", "draw", "Paint"), 3),
    (("main", "libfoo.so + 0x1f2e", "helper"), 11),
    (("main", "run_loop", "draw", "layout", "helper"), 9),
    (("worker 2", "loop", "wait"), 2),
    (("main", "run_loop", "draw", "layout", "measure", "text_width",
      "glyph_advance", "hb_font_get_glyph_h_advance"), 1),
    (("net", "poll"), 40),
]


def known_text(stacks):
    out = []
    for i, (frames, n) in enumerate(stacks):
        sep = "\t" if i == 1 else " "
        end = "\r\n" if i == 2 else "\n"
        out.append(";".join(frames) + sep + str(n) + end)
    return "".join(out).encode()


def known(script, work):
    path = os.path.join(work, "known.folded")
    with open(path, "wb") as f:
        f.write(known_text(KNOWN))
    for icicle in (False, True):
        for min_pct in (0, 5):
            args = [path, "--min-width", str(min_pct), "--width", "1000",
                    "--title", "Known"]
            if icicle:
                args.append("--icicle")
            p = run(script, args)
            tag = f"known{' --icicle' if icicle else ''} --min-width {min_pct}"
            if p.returncode != 0:
                fail(f"{tag}: exit {p.returncode}: {p.stderr.decode()!r}")
                continue
            d = drawing(tag, p.stdout, icicle)
            if d is None:
                continue
            check_drawing(tag, d, KNOWN, 1000, min_pct, icicle, "Known")
            if p.stderr:
                fail(f"{tag}: stderr {p.stderr.decode()!r} on clean input")
    # Default width and min width (1200, 0.1 %).
    p = run(script, [path])
    d = drawing("known, defaults", p.stdout)
    if d is not None:
        check_drawing("known, defaults", d, KNOWN, 1200, 0.1, False,
                      d.title)
    return path


def colours(script, work, known_path):
    env = dict(os.environ, PYTHONHASHSEED="1")
    a = run(script, [known_path], env=env).stdout
    env["PYTHONHASHSEED"] = "2"
    b = run(script, [known_path], env=env).stdout
    if a != b:
        fail("two runs (PYTHONHASHSEED 1, 2) wrote different SVGs")
    else:
        ok("two runs, other hash seeds: the same bytes")
    d = drawing("colours", a)
    if d is None:
        return
    fills = {}
    for bx in d.boxes:
        fills.setdefault(bx.name, set()).add(bx.fill)
    if len(fills["helper"]) != 1:
        fail(f"'helper' in two places, fills {fills['helper']}")

    def hls(fill):
        r, g, b = (int(v) / 255 for v in re.findall(r"\d+", fill))
        return colorsys.rgb_to_hls(r, g, b)

    cold = [bx.name for bx in d.boxes if bx.level >= 2
            and not (hls(bx.fill)[0] <= 1 / 6 or hls(bx.fill)[0] >= 0.97)]
    if cold:
        fail(f"frames not in warm hues: {cold}")
    else:
        ok("frames: one fill per name, warm hues")
    # App frames marked "_[a]": apart from the others, marker not shown.
    marked = [(("main", "app_main_[a]", "app_draw_[a]", "memcpy"), 30),
              (("main", "app_main_[a]", "g_poll", "poll_[k]"), 30),
              (("main", "libc_start", "app_main_[a]"), 30)]
    path = os.path.join(work, "marked.folded")
    with open(path, "wb") as f:
        f.write(known_text(marked))
    d = drawing("marked", run(script, [path]).stdout)
    if d is None:
        return
    app = [bx for bx in d.boxes if bx.name.startswith("app_")]
    rest = [bx for bx in d.boxes if bx.level >= 2 and bx not in app]
    shown = [bx.name for bx in d.boxes] + [bx.label or "" for bx in d.boxes]
    if any("_[" in s for s in shown):
        fail(f"an annotation is shown: {shown}")
    elif len(app) != 3 or not rest:
        fail(f"marked: app boxes {[a.name for a in app]}")
    elif {a.fill for a in app} & {r.fill for r in rest}:
        fail("an app frame shares its fill with a system frame")
    elif min(hls(a.fill)[2] for a in app) <= max(hls(r.fill)[2]
                                                 for r in rest):
        fail("app frames are not more saturated than the others")
    else:
        ok("app frames (_[a]) stand apart, annotations not shown")


# ---- 2. hostile input ------------------------------------------------------

def hostile(script, work):
    names = ["<script>&amp\"'</script>", "a & b < c > d", "]]>", "--",
             "ctl\x01\x08\x1b\x7f", "tab\there"]
    raw = [b"thr\xff\xfe;bad\xc3;ok 3\n",
           b"thr;\xed\xa0\x80surrogate 2\n",          # encoded surrogate
           "thr;nonchar\ufffe\uffff 1\n".encode(),
           "thr;emoji \U0001F525 4\n".encode()]
    for i, n in enumerate(names):
        raw.append(f"thr;{n};leaf{i} {i + 1}\n".encode())
    path = os.path.join(work, "hostile.folded")
    with open(path, "wb") as f:
        f.write(b"".join(raw))
    title = "t <&>\"' \x01 \ufffe"
    p = run(script, [path, "--title", title, "--min-width", "0"])
    d = drawing(f"hostile (exit {p.returncode})", p.stdout)
    if d is None:
        return
    got = {b.name for b in d.boxes}
    want = {"<script>&amp\"'</script>", "a & b < c > d", "]]>", "--",
            "ctl\ufffd\ufffd\ufffd\x7f", "thr\ufffd\ufffd", "bad\ufffd",
            "nonchar\ufffd\ufffd", "emoji \U0001F525"}
    missing = want - got
    if p.returncode != 0 or missing:
        fail(f"hostile: exit {p.returncode}, names missing {missing}; "
             f"got {sorted(got)}")
    elif d.title != "t <&>\"' \ufffd \ufffd":
        fail(f"hostile title came back {d.title!r}")
    else:
        ok("hostile names and title: the SVG parses, names come back")
    # White space before the count separates; a tab inside a frame stays.
    if not any(b.name == "tab\there" for b in d.boxes):
        fail("a tab inside a frame name was not kept")


def big(script, work):
    """200,000 random lines: frames drawn per level from a few likely names
    and many rare ones, so that some prefixes are wide (drawn, checked
    against the counts computed here) and most narrow (not drawn)."""
    rnd = random.Random(16)
    threads = [f"thread-{i}" for i in range(8)]
    # fn_i is in the pool about 2000 / (i + 1) ** 1.5 times: fn_0 is drawn
    # 2000 times as often as fn_99, fn_100 to fn_299 once in 7,000 draws.
    pool = [f"fn_{i}" for i in range(300)
            for _ in range(max(1, round(2000 / (i + 1) ** 1.5)))]
    stacks = []
    lines = []
    for _ in range(200_000):
        frames = (rnd.choice(threads),) + tuple(
            rnd.choices(pool, k=rnd.randrange(1, 14)))
        n = rnd.randrange(1, 50)
        stacks.append((frames, n))
        lines.append(f"{';'.join(frames)} {n}\n")
    path = os.path.join(work, "big.folded")
    with open(path, "w") as f:
        f.writelines(lines)
    t0 = time.monotonic()
    p = run(script, [path, "-o", os.path.join(work, "big.svg")])
    secs = time.monotonic() - t0
    print(f"200,000 lines: {secs:.2f} s wall (incl. interpreter start)",
          flush=True)
    if p.returncode != 0:
        fail(f"200k lines: exit {p.returncode} {p.stderr.decode()!r}")
        return
    with open(os.path.join(work, "big.svg"), "rb") as f:
        data = f.read()
    d = drawing("200k lines", data)
    if d is None:
        return
    before = len(failures)
    check_drawing("200k lines", d, stacks, 1200, 0.1, False, d.title)
    # Generous: a loaded 2-core box, sanitizer builds beside it.
    if secs > 120:
        fail(f"200k lines took {secs:.1f} s")
    elif len(failures) == before and len(d.boxes) < 100:
        fail(f"200k lines: only {len(d.boxes)} boxes drawn")
    # 200,000 distinct stacks under one 40-deep prefix (a deep main thread
    # whose leaf changes every sample): the chain is drawn whole, each box
    # of it holding every sample; the leaves are too narrow.
    chain = ["main"] + [f"frame_{i}" for i in range(40)]
    head = ";".join(chain)
    total = 0
    path = os.path.join(work, "deep.folded")
    with open(path, "w") as f:
        for i in range(200_000):
            n = 1 + i % 5
            total += n
            f.write(f"{head};{'abc'[i % 3]};leaf_{i} {n}\n")
    t0 = time.monotonic()
    p = run(script, [path])
    secs = time.monotonic() - t0
    print(f"200,000 stacks under a 40-deep prefix: {secs:.2f} s wall",
          flush=True)
    d = drawing("deep", p.stdout)
    if d is None:
        return
    got = sorted((b.level, b.name, b.count) for b in d.boxes)
    want = [(0, "all", total)] + \
        [(i + 1, c, total) for i, c in enumerate(chain)] + \
        [(len(chain) + 1, c, sum(1 + i % 5 for i in range(k, 200_000, 3)))
         for k, c in enumerate("abc")]
    if got != want:
        fail(f"deep: boxes {got[-5:]}, expected {want[-5:]}")
    elif "200,000 frames under 0.1% not drawn" not in d.total_line:
        fail(f"deep: total line {d.total_line!r}")
    elif secs > 120:
        fail(f"deep: took {secs:.1f} s")
    else:
        ok("deep: the 40-deep chain whole, the 200,000 leaves counted")


def errors(script, work):
    def expect(tag, args, code, needle, stdin=None):
        p = run(script, args, stdin=stdin)
        err = p.stderr.decode(errors="replace")
        if p.returncode != code or needle not in err or \
                "Traceback" in err or (code and p.stdout):
            fail(f"{tag}: exit {p.returncode} (want {code}), stderr "
                 f"{err[-300:]!r} (want {needle!r}), {len(p.stdout)} "
                 "bytes out")
        else:
            said = err.strip().splitlines()[-1:] or [""]
            ok(f"{tag}: exit {code}, {said[0]!r}")

    empty = os.path.join(work, "empty.folded")
    open(empty, "wb").close()
    junk = os.path.join(work, "junk.folded")
    with open(junk, "wb") as f:
        f.write(b"\n\n  \nno count here\na;;b 3\n;a 1\na;b 1.5\n")
    zero = os.path.join(work, "zero.folded")
    with open(zero, "wb") as f:
        f.write(b"a;b 0\na 0\n")
    mixed = os.path.join(work, "mixed.folded")
    with open(mixed, "wb") as f:
        f.write(b"a;b 3\n\nnonsense\na;c 1\nx;;y 2\n")
    expect("empty file", [empty], 1, "no stacks")
    expect("only junk", [junk], 1, "no stacks")
    expect("only zero counts", [zero], 1, "no samples")
    expect("no such file", [os.path.join(work, "nope")], 1, "cannot read")
    expect("a directory", [work], 1, "cannot read")
    expect("junk lines beside good ones", [mixed], 0,
           "skipped 2 lines that do not parse")
    expect("blank lines beside good ones", [mixed], 0, "1 blank line")
    expect("stdin", ["-"], 0, "", stdin=b"a;b 1\n")
    expect("no argument", [], 2, "usage")
    expect("bad width", [mixed, "--width", "wide"], 2, "usage")
    expect("tiny width", [mixed, "--width", "10"], 2, "usage")
    expect("min width 150%", [mixed, "--min-width", "150"], 2, "usage")
    expect("unknown option", [mixed, "--colour", "x"], 2, "usage")
    p = run(script, ["-"], stdin=b"a;b 1\n")
    try:
        ET.fromstring(p.stdout)
    except ET.ParseError as e:
        fail(f"stdin: {e}")

    # -o: whole files, no temporaries, the old file kept on failure.
    outdir = os.path.join(work, "out")
    os.mkdir(outdir)
    out = os.path.join(outdir, "g.svg")
    with open(out, "wb") as f:
        f.write(b"old")
    p = run(script, [empty, "-o", out])
    with open(out, "rb") as f:
        if p.returncode != 1 or f.read() != b"old":
            fail("bad input with -o: the old file changed")
    p = run(script, [mixed, "-o", out])
    with open(out, "rb") as f:
        data = f.read()
    if p.returncode != 0 or not data.startswith(b"<?xml") or \
            os.listdir(outdir) != ["g.svg"]:
        fail(f"-o: exit {p.returncode}, dir {os.listdir(outdir)}")
    else:
        ok("-o replaced the file whole, nothing else in its directory")
    umask = os.umask(0)
    os.umask(umask)
    mode = os.stat(out).st_mode & 0o777
    if mode != 0o666 & ~umask:  # a new file's mode, not mkstemp's 0600
        fail(f"-o file mode {oct(mode)}, umask {oct(umask)}")
    blocker = os.path.join(outdir, "isdir.svg")
    os.mkdir(blocker)
    expect("-o onto a directory", [mixed, "-o", blocker], 1, "cannot write")
    if sorted(os.listdir(outdir)) != ["g.svg", "isdir.svg"]:
        fail(f"failed -o left {os.listdir(outdir)}")
    expect("-o in no directory", [mixed, "-o", os.path.join(work, "no/x.svg")],
           1, "cannot write")


def broken_pipe(script, work):
    # flamegraph.py many.folded | head -c 64, with an SVG (~700 KB) larger
    # than the pipe's buffer, so that the write does meet the closed end.
    path = os.path.join(work, "many.folded")
    with open(path, "w") as f:
        for i in range(5000):
            f.write(f"main;loop_{i % 50};fn_{i} {1 + i % 7}\n")
    p = subprocess.Popen([sys.executable, script, "--min-width", "0", path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.read(64)
    p.stdout.close()
    err = p.stderr.read().decode(errors="replace")
    code = p.wait(timeout=300)
    if "Traceback" in err or "Exception" in err or code != 0:
        fail(f"reader closed early: exit {code}, stderr {err[-400:]!r}")
    else:
        ok("reader closed the pipe early: exit 0, no traceback")
    # The same SVG read whole, from stdout and from -o: all of it.
    p = run(script, ["--min-width", "0", path])
    out = os.path.join(work, "many.svg")
    q = run(script, ["--min-width", "0", path, "-o", out])
    with open(out, "rb") as f:
        written = f.read()
    if len(p.stdout) < 256 << 10:  # 4 times a pipe buffer (64 KiB)
        fail(f"the pipe test's SVG is only {len(p.stdout)} bytes")
    elif p.returncode or q.returncode or written != p.stdout:
        fail(f"a large SVG: stdout {len(p.stdout)} bytes, -o "
             f"{len(written)}")
    else:
        try:
            n = sum(1 for _ in ET.fromstring(p.stdout).iter(SVG + "rect"))
            if n != 1 + 1 + 1 + 50 + 5000:  # background, all, main
                fail(f"a large SVG: {n} rects")
            else:
                ok(f"a large SVG ({len(p.stdout)} bytes) whole on stdout "
                   "and in -o")
        except ET.ParseError as e:
            fail(f"a large SVG does not parse: {e}")


# ---- 3. flamegraph.pl, when there is one -----------------------------------

def oracle(script, work):
    pl = os.environ.get("FLAMEGRAPH_PL") or shutil.which("flamegraph.pl")
    if not pl:
        print("skip flamegraph.pl oracle: not installed (no Debian 12 "
              "package ships it)", flush=True)
        return
    # flamegraph.pl reads LF lines only (a CR stays before the count).
    known_path = os.path.join(work, "known-lf.folded")
    with open(known_path, "w") as f:
        f.writelines(f"{';'.join(fr)} {n}\n" for fr, n in KNOWN)
    for path in (known_path, os.path.join(work, "many.folded")):
        compare(script, pl, path)


def compare(script, pl, path):
    p = subprocess.run(["perl", pl, "--minwidth", "0", path],
                       capture_output=True, timeout=120)
    if p.returncode != 0:
        fail(f"flamegraph.pl: exit {p.returncode} {p.stderr!r}")
        return

    def pairs(data):
        root = ET.fromstring(data)
        out = []
        for t in root.iter(SVG + "title"):
            m = TITLE.fullmatch(t.text or "")
            if m:
                out.append((m.group(1), int(m.group(2).replace(",", ""))))
        return sorted(out)

    theirs = pairs(p.stdout)
    ours = pairs(run(script, [path, "--min-width", "0"]).stdout)
    name = os.path.basename(path)
    if theirs != ours:
        fail(f"{name}: flamegraph.pl's frames {theirs[:5]}... != ours "
             f"{ours[:5]}...")
    else:
        ok(f"{name}: flamegraph.pl ({pl}) has the same {len(ours)} "
           "(name, count) frames")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    script = sys.argv[1]
    work = tempfile.mkdtemp(prefix="test_flamegraph.")
    try:
        known_path = known(script, work)
        colours(script, work, known_path)
        hostile(script, work)
        big(script, work)
        errors(script, work)
        broken_pipe(script, work)
        oracle(script, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all flamegraph checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
