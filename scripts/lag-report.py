#!/usr/bin/env python3
"""lag-report.py — prints stacksnap lag reports as text a person reads.

Owns: turning "stacksnap.lag/1" JSON files (docs/lag.md) into a text
layout in the spirit of an Apple hang report: a header, the costliest
stack, the main thread's stack at detection, then every other thread.
Frames print one per line in the layout of Apple's callStackSymbols
(index, image, pc, "symbol + offset"; "image + offset" when unnamed).

Must not: change, move or delete a report, or need anything beyond the
Python 3 standard library (it runs where the reports are, often a
machine with no build tools).

    lag-report.py FILE|DIR...   a directory: every *.json in it, by name

Exit status: 0 when every file was rendered; 1 when one could not be
read, is not valid JSON, or is not schema "stacksnap.lag/1" (the others
are still rendered); 2 on bad usage.
"""
import datetime
import json
import os
import sys

SCHEMA = "stacksnap.lag/1"
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
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        found = report.get("schema") if isinstance(report, dict) else None
        raise BadReport(f'not a lag report: schema is {found!r}, '
                        f'expected "{SCHEMA}"')
    return report


def utc(ms):
    if not isinstance(ms, (int, float)):
        return "?"
    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(v):
    return f"{v} ms" if isinstance(v, (int, float)) else "?"


def cpu_share(cpu_ms, wall_ms):
    """'cpu_ms of wall_ms (NN%: computing|waiting)'."""
    if not isinstance(cpu_ms, (int, float)) or cpu_ms < 0:
        return f"unknown of {ms(wall_ms)}"
    if not isinstance(wall_ms, (int, float)) or wall_ms <= 0:
        return f"{ms(cpu_ms)} of {ms(wall_ms)}"
    pct = round(100 * cpu_ms / wall_ms)
    what = "computing" if pct >= 50 else "waiting"
    return f"{ms(cpu_ms)} of {ms(wall_ms)} ({pct}%: {what})"


def frame_line(i, fr):
    """One frame, Apple's layout: '%-4d%-30s 0x%016x %s + %d'."""
    image = fr.get("image") or "???"
    try:
        pc = int(str(fr.get("pc", "0")), 16)
    except ValueError:
        pc = 0
    symbol = fr.get("symbol") or image
    offset = fr.get("offset")
    offset = offset if isinstance(offset, int) else 0
    mark = "*" if fr.get("in_app") else " "
    return f"{mark} {i:<4d}{image:<30s} 0x{pc:016x} {symbol} + {offset}"


def frames(out, frs):
    if not frs:
        out.append("  (no frames)")
    for i, fr in enumerate(frs or []):
        out.append(frame_line(i, fr))


def render(path, r):
    out = []
    threads = r.get("threads") or []

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
        f"tid {mt.get('tid', '?')}{state}, CPU "
        f"{cpu_share(mt.get('cpu_ms'), mt.get('wall_ms'))}")
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
                   f"{cpu_share(cs.get('cpu_ms'), cs.get('wall_ms'))}):")
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
        out.append(head + ":")
        if not t.get("error") or t.get("frames"):
            frames(out, t.get("frames"))
    return "\n".join(out)


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
