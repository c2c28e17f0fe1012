#!/usr/bin/env python3
"""flamegraph.py — draws a folded-stacks file as a flame-graph SVG.

Owns: reading folded stacks ("frame1;frame2;...;leaf COUNT" a line, the
format flamegraph.pl and speedscope read, and the one snap_trace_write
writes with SNAP_TRACE_FOLDED, whose first frame is the thread's name) and
writing one self-contained SVG a browser or an image viewer shows.

Algorithm: lines with the same stack are summed; the distinct stacks are
sorted frame by frame, so that the stacks through any prefix are one run of
the list. From an "all" root down, a box is such a run (frames with the same
text under the same parent are one box, its count every sample that passed
through it): its children are the sub-runs sharing the next frame, found by
binary search, in name order (code point order, as flamegraph.pl's sorted
input gives). A box is count / total of the usable width, children left to
right from their parent's left edge; root at the bottom (flame graph) or at
the top (--icicle). A box narrower than --min-width (a percentage of the
width) is not drawn, nor anything above it, and not split further: the work
is the boxes drawn, not the frames of the file. Labels are
cut to what fits the box in a monospace font, ending in ".."; every box has a
<title> "name (N samples, P%)" a viewer shows on hover ("N us" with
--countname us: stacksnap's folded stacks weigh each sample by the time it
covers, in microseconds, so widths are time, docs/trace.md). Colours come from a
CRC of the name (the same name, the same colour, run after run), in warm
hues. A frame may end in an annotation that picks its palette and is not
shown: flamegraph.pl's "_[k]" (kernel: pale sand), "_[i]" (inlined: aqua),
"_[j]" (JIT: green), "_[w]", and stacksnap's "_[a]" (the app's own code:
red to orange). In a file that marks app frames, unmarked ones are drawn
pale sand too, so the app's code stands out; in one that does not, every
frame gets flamegraph.pl's "hot" red-to-yellow.

Bad input is counted, not fatal: blank lines and lines that do not parse
(no count, an empty frame) are reported on stderr; bytes that are not UTF-8
and characters XML cannot hold become U+FFFD. Only a file with no samples
at all fails.

Must not: need anything beyond the Python 3 standard library or the network
(it runs where the traces are); leave a partial file at -o PATH (it writes a
temporary file beside it and renames it into place).

    flamegraph.py [--title T] [--width PX] [--min-width PCT] [--icicle]
                  [--countname NAME] [-o OUT.svg] FILE|-

Exit status: 0 when the SVG was written; 1 when the input could not be read
or holds no samples, or the output could not be written; 2 on bad usage.
"""
import argparse
import bisect
import colorsys
import os
import re
import sys
import tempfile
import zlib

PROG = "flamegraph.py"

# Layout, in SVG user units (pixels).
FONT_SIZE = 12
TITLE_SIZE = 17
CHAR_WIDTH = 0.62 * FONT_SIZE  # monospace advance (0.6 em) plus a margin
FRAME_HEIGHT = 17
X_PAD = 10
TOP = 56            # title and total line
BOTTOM = 12
TEXT_INSET = 3

# Characters XML 1.0 cannot hold (C0 controls but tab/LF/CR, surrogates,
# U+FFFE/U+FFFF); decode(errors="replace") already turned bad UTF-8 into
# U+FFFD.
_NOT_XML = re.compile(
    "[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# "stack count": the count is the last run of digits after white space.
_LINE = re.compile(r"^(.*\S)\s+(\d+)$")
# A frame's kind after its name: flamegraph.pl's (and perf's) "_[k]"
# kernel, "_[i]" inlined, "_[j]" JIT, "_[w]" waker, and ours, "_[a]": a
# frame of the app's own images.
_ANNOTATION = re.compile(r"_\[([aijkw])\]$")


class Folded:
    """What a folded file held: its distinct stacks and what was skipped."""

    def __init__(self):
        self.stacks = {}  # "frame;frame;..." -> samples
        self.total = 0
        self.lines = 0
        self.blank = 0
        self.bad = 0
        self.first_bad = None  # (line number, text)


def xml_escape(s):
    """s as XML character data or an attribute value: every text the SVG
    holds goes through here, so no name can break the file."""
    return (_NOT_XML.sub("\ufffd", s).replace("&", "&amp;")
            .replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


def parse(stream, folded):
    """Adds every line of a binary stream to folded.stacks."""
    stacks = folded.stacks
    for number, raw in enumerate(stream, 1):
        folded.lines += 1
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            folded.blank += 1
            continue
        m = _LINE.match(line)
        stack = m.group(1) if m else ""
        if not m or stack.startswith(";") or stack.endswith(";") or \
                ";;" in stack:  # an empty frame
            folded.bad += 1
            if folded.first_bad is None:
                folded.first_bad = (number, line[:80])
            continue
        count = int(m.group(2))
        if count:
            stacks[stack] = stacks.get(stack, 0) + count
            folded.total += count


def thousands(n):
    return f"{n:,}"


COUNT_NAME = "samples"  # --countname


def samples_text(n):
    """A count as the titles say it: "N samples", or "N <countname>"
    (stacksnap's folded stacks count microseconds: --countname us)."""
    if COUNT_NAME != "samples":
        return f"{thousands(n)} {COUNT_NAME}"
    return f"{thousands(n)} sample" + ("" if n == 1 else "s")


def split_annotation(name):
    """(name without its annotation, the annotation's letter or "")."""
    m = _ANNOTATION.search(name)
    if m and m.start() > 0:
        return name[:m.start()], m.group(1)
    return name, ""


def colour(name, depth, app_marked):
    """A fill for a frame, deterministic in its name (CRC-32, not Python's
    per-run salted hash()). app_marked: the file marks its app frames, so
    an unmarked frame is someone else's (drawn pale)."""
    if depth == 0:
        return "rgb(200,200,200)"
    h = zlib.crc32(name.encode("utf-8", "surrogatepass"))
    v1 = (h & 0xFFFF) / 0xFFFF
    v2 = (h >> 16) / 0xFFFF
    kind = split_annotation(name)[1]
    if depth == 1:  # the thread: a cool grey lane under the warm frames
        hue, light, sat = 0.62, 0.80 + 0.06 * v2, 0.25 + 0.15 * v1
    elif kind == "a":  # the app's own frame: red to orange
        hue, light, sat = 0.0 + 0.07 * v1, 0.58 + 0.08 * v2, 0.85
    elif kind == "k" or (app_marked and kind not in ("i", "j")):
        # kernel, or not the app's: pale sand
        hue, light, sat = 0.11 + 0.04 * v1, 0.72 + 0.08 * v2, 0.45
    elif kind == "i":  # inlined: aqua
        hue, light, sat = 0.50, 0.65 + 0.1 * v2, 0.55
    elif kind == "j":  # JIT: green
        hue, light, sat = 0.30, 0.55 + 0.1 * v2, 0.55
    else:  # no marks in the file: flamegraph.pl's "hot", red to yellow
        hue, light, sat = 0.0 + 0.14 * v1, 0.58 + 0.08 * v2, 0.80
    r, g, b = colorsys.hls_to_rgb(hue, light, sat)
    return f"rgb({round(r * 255)},{round(g * 255)},{round(b * 255)})"


def label(name, box_width):
    """The text a box shows: name cut with ".." to what fits; "" when not
    even one character and the dots fit."""
    chars = int((box_width - 2 * TEXT_INSET) / CHAR_WIDTH)
    if chars < 3:
        return ""
    if len(name) > chars:
        return name[:chars - 2] + ".."
    return name


def fit(text, width, char_width):
    """text cut with ".." to width (a heading's, not a box's)."""
    chars = max(3, int((width - 2 * X_PAD) / char_width))
    return text if len(text) <= chars else text[:chars - 2] + ".."


def render(folded, title, width, min_width_pct, icicle):
    total = folded.total
    usable = width - 2 * X_PAD
    min_px = usable * min_width_pct / 100.0
    scale = usable / total

    # The stacks, sorted with NUL between frames (a NUL in a name becomes
    # U+FFFD, as XML would have it anyway): NUL sorts before every other
    # character, so the order is the frames' order, frame by frame, and
    # the stacks through any prefix P are one run of the list: P itself,
    # then P NUL ... . A node is such a run; its children are the sub-runs
    # that share the next frame, each found by one binary search, its
    # samples a difference of running sums. A child narrower than min_px
    # is counted and not split further. The work is the drawn boxes and
    # their narrow children, not the frames of the file (200,000 distinct
    # stacks under one 40-deep prefix cost as much as 200,000 shallow ones).
    merged = {}
    while folded.stacks:  # emptied as it goes: one copy of the text at a time
        st, n = folded.stacks.popitem()
        key = st.replace("\0", "\ufffd").replace(";", "\0")
        merged[key] = merged.get(key, 0) + n
    keys = sorted(merged)
    sums = [0]
    for k in keys:
        sums.append(sums[-1] + merged[k])
    del merged
    app_marked = any("_[a]\0" in k or k.endswith("_[a]") for k in keys)
    boxes = []  # (depth, x, w, name, count)
    hidden = 0
    threads = 0
    # (depth, x, name, count, prefix with its trailing NUL, run lo, hi)
    todo = [(0, X_PAD, "all", total, "", 0, len(keys))]
    while todo:
        depth, x, name, count, prefix, lo, hi = todo.pop()
        boxes.append((depth, x, count * scale, name, count))
        at = len(prefix)
        i = lo
        if i < hi and len(keys[i]) == at - 1:  # the stack that ends here
            i += 1
        cx = x
        kids = []
        while i < hi:
            k = keys[i]
            end = k.find("\0", at)
            child = k[at:] if end < 0 else k[at:end]
            j = bisect.bisect_left(keys, prefix + child + "\1", i, hi)
            n = sums[j] - sums[i]
            w = n * scale
            if w >= min_px:
                kids.append((depth + 1, cx, child, n, prefix + child + "\0",
                             i, j))
            else:  # neither it nor what it called is drawn
                hidden += 1
            if depth == 0:
                threads += 1
            cx += w
            i = j
        todo.extend(reversed(kids))  # drawn left to right
    levels = 1 + max(b[0] for b in boxes)
    height = TOP + levels * FRAME_HEIGHT + BOTTOM

    out = []
    put = out.append
    put('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n')
    put(f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">\n')
    put("<style>text{font-family:monospace;font-size:%dpx;fill:#000}"
        "#title{font-size:%dpx;font-family:sans-serif}"
        "#total{fill:#444;font-family:sans-serif}"
        "g.f:hover rect{stroke:#000;stroke-width:1}</style>\n"
        % (FONT_SIZE, TITLE_SIZE))
    put(f'<rect x="0" y="0" width="{width}" height="{height}" '
        'fill="#f8f8f4"/>\n')
    put(f'<text id="title" x="{width / 2:.1f}" y="24" text-anchor="middle">'
        f"{xml_escape(fit(title, width, 0.62 * TITLE_SIZE))}</text>\n")
    summary = (f"{samples_text(total)} in {threads} thread"
               + ("" if threads == 1 else "s"))
    if hidden:
        summary += (f"; {thousands(hidden)} frame"
                    + ("" if hidden == 1 else "s")
                    + f" under {min_width_pct:g}% not drawn (nor their "
                    "callees)")
    put(f'<text id="total" x="{width / 2:.1f}" y="44" text-anchor="middle">'
        f"{xml_escape(fit(summary, width, CHAR_WIDTH))}</text>\n")
    for depth, x, w, name, count in boxes:
        if icicle:
            y = TOP + depth * FRAME_HEIGHT
        else:
            y = height - BOTTOM - (depth + 1) * FRAME_HEIGHT
        pct = 100.0 * count / total
        bare = split_annotation(name)[0]
        fill = colour(name, depth, app_marked)
        # Round corners only where they show: on a box a few pixels wide
        # they turn a row of small frames into a comb of slivers.
        rounded = ' rx="2"' if w >= 6 else ""
        put(f'<g class="f"><title>{xml_escape(bare)} ({samples_text(count)}, '
            f'{pct:.2f}%)</title>'
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" '
            f'height="{FRAME_HEIGHT - 1}"{rounded} fill="{fill}"/>')
        text = label(bare, w)
        if text:
            put(f'<text x="{x + TEXT_INSET:.2f}" '
                f'y="{y + FRAME_HEIGHT - 5}">{xml_escape(text)}</text>')
        put("</g>\n")
    put("</svg>\n")
    return "".join(out).encode("utf-8")


def write_all(fd, data):
    """Writes all of data, or raises. sys.stdout.buffer.write can return a
    short count without raising (a pipe whose reader left mid-write: the
    kernel reports the part written, the next write would fail), and the
    rest would be lost in silence."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomically(path, data):
    """Writes data to path through a temporary file in the same directory
    and a rename: a reader sees the old file or the whole new one."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".flamegraph.", suffix=".tmp",
                               dir=directory)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 is not a file's mode
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def percentage(text):
    t = text[:-1] if text.endswith("%") else text
    try:
        v = float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}")
    if not 0 <= v < 100:
        raise argparse.ArgumentTypeError(f"not in [0, 100): {text!r}")
    return v


def pixels(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    if not 200 <= v <= 100000:
        raise argparse.ArgumentTypeError(f"not in [200, 100000]: {text!r}")
    return v


def main(argv):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Draws a folded-stacks file as a flame-graph "
        "SVG (no network, Python 3 standard library only).")
    ap.add_argument("input", metavar="FILE",
                    help='folded stacks ("a;b;c COUNT" a line); - for stdin')
    ap.add_argument("-o", "--output", metavar="OUT.svg",
                    help="write here (atomically) instead of stdout")
    ap.add_argument("--title", default="Flame Graph",
                    help='the heading (default "Flame Graph")')
    ap.add_argument("--width", type=pixels, default=1200,
                    help="image width in pixels (default 1200)")
    ap.add_argument("--min-width", type=percentage, default=0.1,
                    metavar="PCT", help="omit frames narrower than PCT %% "
                    "of the width (default 0.1)")
    ap.add_argument("--countname", default="samples",
                    help="what the counts are, for the titles (flamegraph.pl's "
                    "option): stacksnap's folded stacks count microseconds "
                    "of each thread's time, so 'us' (default: samples)")
    ap.add_argument("--icicle", action="store_true",
                    help="root at the top, stacks growing down")
    args = ap.parse_args(argv)
    global COUNT_NAME
    COUNT_NAME = args.countname

    folded = Folded()
    name = "stdin" if args.input == "-" else args.input
    try:
        if args.input == "-":
            parse(sys.stdin.buffer, folded)
        else:
            with open(args.input, "rb") as f:
                parse(f, folded)
    except OSError as e:
        print(f"{PROG}: {name}: cannot read: {e.strerror}", file=sys.stderr)
        return 1
    if folded.bad:
        n, text = folded.first_bad
        print(f"{PROG}: {name}: skipped {folded.bad} line"
              f"{'' if folded.bad == 1 else 's'} that do not parse "
              f"(first, line {n}: {text!r})", file=sys.stderr)
    if folded.blank:
        print(f"{PROG}: {name}: skipped {folded.blank} blank line"
              f"{'' if folded.blank == 1 else 's'}", file=sys.stderr)
    if folded.total == 0:
        what = "no samples" if folded.lines > folded.blank + folded.bad \
            else "no stacks"
        print(f'{PROG}: {name}: {what} (expected lines "frame;frame;... '
              f'COUNT")', file=sys.stderr)
        return 1

    svg = render(folded, args.title, args.width, args.min_width, args.icicle)
    if args.output is None:
        sys.stdout.flush()
        write_all(sys.stdout.fileno(), svg)
        return 0
    try:
        write_atomically(args.output, svg)
    except OSError as e:
        print(f"{PROG}: {args.output}: cannot write: {e.strerror}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # flamegraph.py ... | head
        # Point stdout at /dev/null so the interpreter's final flush does
        # not raise again; the reader left, which is not our error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
