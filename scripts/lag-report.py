#!/usr/bin/env python3
"""lag-report.py — prints stacksnap lag reports as text a person reads.

Owns: turning "stacksnap.lag/1" and "/2" JSON files (docs/lag.md) into a text
layout in the spirit of an Apple hang report: a header, the costliest
stack, the main thread's stack at detection, then every other thread.
When the main thread waited on something (main_blocked_on) the text
opens with what it waited for, in one sentence ("main thread waits 812 ms
for mutex 0x... held by thread 4711 'db-writer' in `rebuild_index`"),
preceded by "deadlock: threads A → B → A" when the report found one,
and followed by the stacks of the threads it waited through (the holder
first), before the header.
Frames print one per line in the layout of Apple's callStackSymbols
(index, image, pc, "symbol + offset"; "image + offset" when unnamed),
with "(file:line)" after it when the report was named by
stacksnap-symbolicate from a debug file. A /2 report ends with its images
(base, end, name, build id, path): what names an unnamed frame later.

Must not: change, move or delete a report, or need anything beyond the
Python 3 standard library (it runs where the reports are, often a
machine with no build tools).

    lag-report.py FILE|DIR...   a directory: every *.json in it, by name

Exit status: 0 when every file was rendered; 1 when one could not be
read, is not valid JSON, or is not schema "stacksnap.lag/1" or "/2" (the others
are still rendered); 2 on bad usage.
"""
import datetime
import json
import os
import sys

SCHEMAS = ("stacksnap.lag/1", "stacksnap.lag/2")
LEGEND = "Frames: * = the app's own image (in_app), innermost first"


class BadReport(Exception):
    pass


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BadReport(f"cannot read: {e.strerror}")
    except UnicodeDecodeError:
        raise BadReport("not valid JSON (not UTF-8 text)")
    try:
        report = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadReport(f"not valid JSON: {e}")
    if not isinstance(report, dict) or report.get("schema") not in SCHEMAS:
        found = report.get("schema") if isinstance(report, dict) else None
        raise BadReport(f'not a lag report: schema is {found!r}, '
                        f'expected one of {", ".join(SCHEMAS)}')
    return report


def utc(ms):
    if not isinstance(ms, (int, float)):
        return "?"
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(v):
    return f"{v} ms" if isinstance(v, (int, float)) else "?"


def num(v):
    """v when it is a known figure (a number >= 0), else None."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) \
        and v >= 0 else None


def verdict(d):
    """What the main thread did over a split (main_thread or the costliest
    stack's): "computing", "starved (runnable, no CPU)" or "blocked (in
    lock|io|sleep|wait|other)". The rule, on the wall time W:
      cpu >= 50 % of W                          -> computing;
      cpu + runnable >= 50 % of W, runnable > cpu -> starved (it wanted a
                                                   CPU and did not get it);
      cpu + runnable >= 50 % of W               -> computing;
      otherwise                                 -> blocked, in what most
                                                   blocked samples waited.
    Where the OS does not give the run-queue wait (Apple), a thread seen
    running-or-runnable in at least as many samples as blocked is
    "computing or starved"; a report without the split (before these
    fields) says only whether the CPU time reached half the wall time."""
    cpu, wall = num(d.get("cpu_ms")), num(d.get("wall_ms"))
    if cpu is None or not wall:
        return None
    if cpu >= 0.5 * wall:
        return "computing"
    runnable = num(d.get("runnable_ms"))
    states = d.get("states") if isinstance(d.get("states"), dict) else {}
    blocked_in = d.get("blocked_in") \
        if isinstance(d.get("blocked_in"), dict) else {}
    if runnable is not None:
        if cpu + runnable >= 0.5 * wall:
            return "starved (runnable, no CPU)" if runnable > cpu \
                else "computing"
    elif "runnable_ms" not in d:
        return "not computing (this report has no time split)"
    else:
        on_cpu = sum(num(states.get(k)) or 0 for k in
                     ("running", "runnable", "running_or_runnable"))
        if on_cpu and on_cpu >= (num(states.get("blocked")) or 0):
            return "computing or starved (the OS does not say which)"
    counts = [(num(v) or 0, k) for k, v in blocked_in.items()]
    counts = [c for c in counts if c[0] > 0]
    if not counts:
        return "blocked"
    top = max(counts)[1]
    return f"blocked (in {top})"


def cpu_share(d):
    """'cpu_ms of wall_ms (NN%: verdict)'."""
    cpu_ms, wall_ms = d.get("cpu_ms"), d.get("wall_ms")
    if not isinstance(cpu_ms, (int, float)) or cpu_ms < 0:
        return f"unknown of {ms(wall_ms)}"
    if not isinstance(wall_ms, (int, float)) or wall_ms <= 0:
        return f"{ms(cpu_ms)} of {ms(wall_ms)}"
    pct = round(100 * cpu_ms / wall_ms)
    return f"{ms(cpu_ms)} of {ms(wall_ms)} ({pct}%: {verdict(d)})"


def split_text(d):
    """'runnable X ms, blocked Y ms; switches V voluntary, I involuntary;
    F major faults; samples: ...' or None when the report has no split."""
    if "runnable_ms" not in d:
        return None

    def fig(key, unit=""):
        v = num(d.get(key))
        return "?" if v is None else f"{v}{unit}"
    text = (f"runnable {fig('runnable_ms', ' ms')}, blocked "
            f"{fig('blocked_ms', ' ms')}; switches "
            f"{fig('voluntary_switches')} voluntary, "
            f"{fig('involuntary_switches')} involuntary; "
            f"{fig('major_faults')} major faults")
    states = d.get("states") if isinstance(d.get("states"), dict) else {}
    seen = [f"{k.replace('_', ' ')} {v}" for k, v in states.items()
            if num(v)]
    blocked_in = d.get("blocked_in") \
        if isinstance(d.get("blocked_in"), dict) else {}
    why = [f"{k} {v}" for k, v in blocked_in.items() if num(v)]
    if seen:
        text += "; samples: " + ", ".join(seen)
        if why:
            text += " (blocked in " + ", ".join(why) + ")"
    return text


def frame_line(i, fr):
    """One frame, Apple's layout: '%-4d%-30s 0x%016x %s + %d'."""
    image = fr.get("image") or "???"
    try:
        pc = int(str(fr.get("pc", "0")), 16)
    except ValueError:
        pc = 0
    symbol = fr.get("symbol") or image
    # /2 says which offset it is; /1's "offset" is the symbol's when there
    # is one, else the image's.
    if fr.get("symbol") and isinstance(fr.get("symbol_offset"), int):
        offset = fr["symbol_offset"]
    elif not fr.get("symbol") and isinstance(fr.get("image_offset"), str):
        try:
            offset = int(fr["image_offset"], 16)
        except ValueError:
            offset = 0
    else:
        offset = fr.get("offset")
        offset = offset if isinstance(offset, int) else 0
    mark = "*" if fr.get("in_app") else " "
    line = f"{mark} {i:<4d}{image:<30s} 0x{pc:016x} {symbol} + {offset}"
    if fr.get("source_file"):
        line += f" ({fr['source_file']}:{fr.get('source_line', 0)})"
    return line


def frames(out, frs):
    if not frs:
        out.append("  (no frames)")
    for i, fr in enumerate(frs or []):
        out.append(frame_line(i, fr))


def kind_text(kind):
    return str(kind or "?").replace("_", " ")


def thread_ref(tid, name):
    """"thread 4711 'db-writer'" (no quotes when it has no name)."""
    return f"thread {tid}" + (f" '{name}'" if name else "")


def where(frs):
    """The function a thread is in: its innermost app frame's, else its
    innermost named frame's; None when no frame is named."""
    frs = [f for f in (frs or []) if isinstance(f, dict) and f.get("symbol")]
    app = [f for f in frs if f.get("in_app")]
    return (app or frs or [{}])[0].get("symbol")


def frames_by_tid(r):
    """Every thread's frames the report holds, by tid (main_blocked_on's
    links first: they are the chain's own samples)."""
    got = {}
    for t in (r.get("main_blocked_on") or []) + (r.get("threads") or []):
        if isinstance(t, dict) and t.get("frames") and t.get("tid") not in got:
            got[t.get("tid")] = t["frames"]
    return got


def wait_text(b, frs):
    """What a blocked_on (or a main_blocked_on link) says: "mutex 0x...
    held by thread 4711 'db-writer' in `f`", "mutex 0x... (owner
    unknown)", "io on fd 3", "condvar 0x...". frs: frames by tid, for
    "in `f`" (the owner's innermost app frame)."""
    text = kind_text(b.get("kind"))
    if b.get("address"):
        text += f" {b['address']}"
    if isinstance(b.get("fd"), int):
        text += f" on fd {b['fd']}"
    owner = b.get("owner")
    if owner == "known" and b.get("owner_tid") is not None:
        text += " held by " + thread_ref(b["owner_tid"], b.get("owner_name"))
        f = where(frs.get(b["owner_tid"]))
        if f:
            text += f" in `{f}`"
    elif owner == "unknown":
        text += " (owner unknown)"
    return text


def waiting(b, frs):
    """", waiting for mutex 0x... held by ..." (a thing waited for) or
    ", waiting in sleep" (a call with no object)."""
    word = "for" if b.get("address") else "in"
    return f", waiting {word} " + wait_text(b, frs)


def lock_lines(r):
    """The opening of a report whose main thread waited: the deadlock, the
    sentence, then each further thread of main's chain with its stack
    (the holder first). [] when main waited on nothing."""
    out = []
    threads = r.get("threads") or []
    names = {t.get("tid"): t.get("name") for t in threads
             if isinstance(t, dict)}
    cycle = r.get("deadlock")
    if isinstance(cycle, list) and cycle:
        out.append("deadlock: threads " + " → ".join(
            f"{tid}" + (f" '{names[tid]}'" if names.get(tid) else "")
            for tid in cycle + cycle[:1]))
    chain = [c for c in (r.get("main_blocked_on") or [])
             if isinstance(c, dict)]
    if not chain:
        return out
    frs = frames_by_tid(r)
    out.append(f"main thread waits {ms(r.get('duration_ms'))} for "
               f"{wait_text(chain[0], frs)}")
    for i, c in enumerate(chain[1:], 1):
        out.append("")
        head = ("Holder: " if i == 1 else "Then: ") + \
            thread_ref(c.get("tid", "?"), c.get("name"))
        if c.get("kind") not in (None, "none"):
            head += waiting(c, frs)
        if c.get("error"):
            head += f" (not sampled: {c['error']})"
        out.append(head + ":")
        frames(out, c.get("frames"))
    out.append("")
    return out


def render(path, r):
    out = lock_lines(r)
    threads = r.get("threads") or []
    frs = frames_by_tid(r)

    def row(key, value):
        out.append(f"{key + ':':<18}{value}")

    row("Report", path)
    row("Kind", r.get("kind", "?"))
    row("Start", f"{utc(r.get('start_unix_ms'))} (UTC)")
    row("Updated", f"{utc(r.get('updated_unix_ms'))} (UTC)")
    row("Duration", ms(r.get("duration_ms")))
    row("Threshold", ms(r.get("threshold_ms")))
    row("Ongoing", "yes" if r.get("ongoing") else "no")
    row("Repeats", r.get("repeats", 0))
    row("PID", r.get("pid", "?"))
    mt = r.get("main_thread") or {}
    main = next((t for t in threads if t.get("main")), {})
    state = " [running]" if main.get("running") else ""
    row("Main thread",
        f"tid {mt.get('tid', '?')}{state}, CPU {cpu_share(mt)}")
    split = split_text(mt)
    if split:
        row("Time split", split)
    cls = r.get("class") or {}
    row("Class l1", cls.get("l1") or "-")
    row("Class l2", cls.get("l2") or "-")
    cpu = r.get("cpu")
    if isinstance(cpu, dict):
        row("CPU", f"{cpu.get('percent', '?')}% of one core over "
                   f"{ms(cpu.get('window_ms'))}")
    row("Threads", f"{r.get('threads_total', '?')} in the process, "
                   f"{len(threads)} in the report")
    out.append(LEGEND)

    cs = r.get("costliest_stack")
    out.append("")
    if isinstance(cs, dict):
        out.append(f"Costliest stack ({cs.get('hits', '?')}/"
                   f"{cs.get('samples', '?')} samples; main thread CPU "
                   f"{cpu_share(cs)}):")
        split = split_text(cs)
        if split:
            out.append(f"  ({split})")
        frames(out, cs.get("frames"))
    else:
        out.append("Costliest stack: none (no samples)")

    out.append("")
    out.append("Main thread stack at detection:")
    frames(out, r.get("main_stack"))

    for t in threads:
        if t.get("main"):
            continue
        out.append("")
        head = f"Thread {t.get('tid', '?')} {t.get('name') or '(no name)'}"
        if t.get("running"):
            head += " [running]"
        if t.get("error"):
            head += f" (not sampled: {t['error']})"
        b = t.get("blocked_on")
        if isinstance(b, dict):
            head += waiting(b, frs)
        out.append(head + ":")
        if not t.get("error") or t.get("frames"):
            frames(out, t.get("frames"))
    images = r.get("images")
    if isinstance(images, list) and images:
        out.append("")
        out.append("Images (base - end, name, build id, path):")
        for im in images:
            if isinstance(im, dict):
                out.append(image_line(im))
    return "\n".join(out)


def image_line(im):
    """One image, as Apple's Binary Images list has it."""
    try:
        base = int(str(im.get("base", "0")), 16)
    except ValueError:
        base = 0
    size = im.get("size") if isinstance(im.get("size"), int) else 0
    mark = "*" if im.get("in_app") else " "
    return (f"{mark} 0x{base:x} - 0x{base + size:x} {im.get('name') or '???'} "
            f"<{im.get('build_id') or 'no build id'}> {im.get('path') or ''}")


def expand(args):
    for a in args:
        if os.path.isdir(a):
            names = sorted(n for n in os.listdir(a) if n.endswith(".json"))
            if not names:
                print(f"lag-report.py: {a}: no *.json reports", file=sys.stderr)
            for n in names:
                yield os.path.join(a, n)
        else:
            yield a


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print("usage: lag-report.py FILE|DIR...", file=sys.stderr)
        return 2
    failed = False
    first = True
    for path in expand(argv[1:]):
        try:
            text = render(path, load(path))
        except BadReport as e:
            print(f"lag-report.py: {path}: {e}", file=sys.stderr)
            failed = True
            continue
        if not first:
            print("\n" + "-" * 78 + "\n")
        first = False
        print(text)
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except BrokenPipeError:  # lag-report.py ... | head
        sys.stderr.close()
        sys.exit(0)
