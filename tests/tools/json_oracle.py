#!/usr/bin/env python3
"""json_oracle.py — Python's json module as the oracle for
stacksnap-symbolicate's JSON reader (yyjson, through tools/symbolicate/json.c)
and writer.

Usage: json_oracle.py TEST_JSON [--run-with "qemu-aarch64 ..."] [--seed N]

Three sets of texts go through `test_json --oracle DIR N` in one run:
  1. random documents from Python objects (nested objects and arrays,
     strings with escapes, control characters and astral characters, 64-bit
     edge integers, long integers, floats), dumped by json.dumps in random
     layouts. Ours must parse each, and write it back byte for byte as
     json.dumps(obj, ensure_ascii=False) writes it (with the library's
     string rule: control characters as \\u00XX): compact with
     separators=(',', ':'), pretty with indent=2.
  2. handmade texts, valid and invalid (duplicate keys, escapes, NaN...).
  3. the random documents mutated at random bytes (deleted, inserted,
     replaced, among them bytes that are not UTF-8).
For 2 and 3 Python decides: valid when the bytes are strict UTF-8 and
json.loads reads them, except where Python is laxer than RFC 8259 (NaN and
Infinity, rejected with parse_constant; \\u escapes that leave a lone
surrogate, which cannot be written as UTF-8). Ours must agree on every text,
and what ours writes back must read in Python as the same members in the
same order (duplicates included) with the same number texts.
"""
import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile


class Num:
    """A number by its exact text: ours must keep it."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Num) and other.text == self.text

    def __repr__(self):
        return "Num(%s)" % self.text


class Obj(list):
    """An object as its (key, value) pairs: order and duplicates kept."""

    def __eq__(self, other):
        return isinstance(other, Obj) and list.__eq__(self, other)

    __hash__ = None


def reject_constant(name):
    raise ValueError("not JSON: " + name)


def all_strings_utf8(value):
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False  # a lone surrogate from a \u escape
        return True
    if isinstance(value, Obj):
        return all(all_strings_utf8(k) and all_strings_utf8(v)
                   for k, v in value)
    if isinstance(value, list):
        return all(all_strings_utf8(v) for v in value)
    return True


INVALID = object()


def python_reads(data):
    """The value Python reads from data (with exact numbers and ordered
    pairs), or INVALID when the text is not RFC 8259 JSON."""
    try:
        text = data.decode("utf-8")  # strict: no overlong, surrogate, >10FFFF
        value = json.loads(text, parse_constant=reject_constant,
                           parse_int=Num, parse_float=Num,
                           object_pairs_hook=Obj)
    except (ValueError, RecursionError, TypeError):
        return INVALID
    return value if all_strings_utf8(value) else INVALID


# ---- Random documents -----------------------------------------------------

def random_char(rng):
    r = rng.random()
    if r < 0.4:
        return rng.choice("abcxyz ABC019_-/.:")
    if r < 0.55:
        return rng.choice('"\\/\b\f\n\r\t\x00\x01\x1f\x7f')
    if r < 0.7:
        return rng.choice("\u00e9\u20ac\u2028\u2029\ufeff\ufffd\uffff")
    if r < 0.85:
        return chr(rng.randint(0x10000, 0x10FFFF))  # astral: a pair in \u
    c = rng.randint(0x80, 0xFFFF)
    return chr(c) if not 0xD800 <= c <= 0xDFFF else "s"


def random_string(rng):
    return "".join(random_char(rng) for _ in range(rng.choice([0, 1, 3, 8, 20])))


INT_EDGES = [0, -1, 1, 2**31 - 1, -2**31, 2**32, 2**53 + 1, 2**63 - 1,
             -2**63, 2**63, 2**64 - 1, 2**64, -2**63 - 1, -2**64]
FLOAT_EDGES = [0.0, -0.0, 1.5, -2.25, 1e308, 1.7976931348623157e308, 5e-324,
               2.2250738585072014e-308, 1e-300, 0.1, 1e16, 123456789.125]


def random_value(rng, depth):
    r = rng.random()
    if depth < 6 and r < 0.3:
        if rng.random() < 0.5:
            return [random_value(rng, depth + 1)
                    for _ in range(rng.randint(0, 5))]
        return {random_string(rng): random_value(rng, depth + 1)
                for _ in range(rng.randint(0, 5))}
    r = rng.random()
    if r < 0.1:
        return rng.choice([None, True, False])
    if r < 0.35:
        return rng.choice(INT_EDGES)
    if r < 0.45:
        return rng.getrandbits(rng.choice([8, 40, 70, 200, 1000])) * \
            rng.choice([1, -1])
    if r < 0.6:
        return rng.choice(FLOAT_EDGES)
    if r < 0.7:
        return rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300)
    return random_string(rng)


def random_layout(rng, value):
    kw = {"ensure_ascii": rng.random() < 0.5,
          "sort_keys": rng.random() < 0.3}
    r = rng.random()
    if r < 0.3:
        kw["indent"] = rng.choice([0, 2, 4, "\t"])
    elif r < 0.6:
        kw["separators"] = (",", ":")
    text = json.dumps(value, **kw)
    return rng.choice(["", " ", "\n", "\r\n\t "]) + text + \
        rng.choice(["", "\n", " \t"])


def library_dumps(value, **kw):
    """json.dumps(value, ensure_ascii=False, **kw) with the library's one
    string rule (src/report/text_buf.c, snap__tbuf_json_string): '"' and '\\'
    escaped, every other control character as \\u00XX (Python writes
    \\n, \\t, ... for five of them)."""
    import json.encoder as enc

    def escape(s):
        return '"' + enc.ESCAPE.sub(
            lambda m: {'"': '\\"', '\\': '\\\\'}.get(
                m.group(0), "\\u%04x" % ord(m.group(0))), s) + '"'

    saved = enc.encode_basestring, enc.c_make_encoder
    enc.encode_basestring, enc.c_make_encoder = escape, None
    try:
        return json.dumps(value, ensure_ascii=False, **kw)
    finally:
        enc.encode_basestring, enc.c_make_encoder = saved


# ---- Handmade texts --------------------------------------------------------

HANDMADE = [
    b'{"a":1,"a":2,"a":[3]}', b'{"":0}', b'[1,2,]', b'{"a":1,}', b'[,1]',
    b'NaN', b'[Infinity]', b'-Infinity', b'[1e400]', b'[-1e-400]',
    b'"\\ud800"', b'"\\udfff"', b'"\\ud800\\udc00"', b'"\\udbff\\udfff"',
    b'"\\ud800\\u0041"', b'"\\u00"', b'"\\U0041"', b'"\\x41"', b"'a'",
    b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'"\xf4\x8f\xbf\xbf"',
    b'"\xf4\x90\x80\x80"', b'"\xf8\x88\x80\x80\x80"', b'"\xef\xbb\xbf"',
    b'\xef\xbb\xbf[]', b'[]\x00', b'"\x00"', b'"\x1f"', b'"\x7f"',
    b' \t\r\n[ \t\r\n] \t\r\n', b'\x0b[]', b'\x0c[]', b'[]\xa0',
    b'01', b'-0', b'-01', b'0.0e+00', b'1.', b'.1', b'1e', b'+1', b'0x10',
    b'[true,false,null]', b'[True]', b'nul', b'truee', b'{"a" 1}',
    b'{"a":1 "b":2}', b'[1 2]', b'{"a"}', b'{1:2}', b'[]]', b'[[]', b'',
    b' ', b'"', b'"\\"', b'"\\\\"', b'/*x*/[]', b'[]//x', b'# x\n[]',
    b'{"a":{"b":{"c":[{"d":"\\u20ac\\ud83d\\ude00"}]}}}',
    b'18446744073709551615', b'-9223372036854775808', b'1' * 4000,
]


def mutate(rng, data):
    data = bytearray(data)
    alphabet = b'[]{},:"\\u0123456789abcdefE.+- \n\t\rtfnl\x00\x01\x7f' \
        b'\x80\xbf\xc0\xc3\xe2\xed\xef\xf0\xf4\xf8\xff'
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        pos = rng.randint(0, len(data))
        if r < 0.3 and pos < len(data):
            del data[pos]
        elif r < 0.6:
            data.insert(pos, rng.choice(alphabet))
        elif r < 0.9 and pos < len(data):
            data[pos] = rng.choice(alphabet)
        else:
            n = rng.randint(1, 8)
            data[pos:pos] = data[pos:pos + n]
    return bytes(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test_json")
    ap.add_argument("--run-with", default="")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--count", type=int, default=300)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    generated = [random_layout(rng, random_value(rng, 0)).encode("utf-8")
                 for _ in range(args.count)]
    texts = generated + HANDMADE
    short = [t for t in generated if len(t) < 400]
    for _ in range(2 * args.count):
        texts.append(mutate(rng, rng.choice(short)))

    failures = []
    counts = {"valid": 0, "invalid": 0}
    with tempfile.TemporaryDirectory(prefix="json_oracle.") as tmp:
        for i, t in enumerate(texts):
            with open(os.path.join(tmp, "%d.json" % i), "wb") as f:
                f.write(t)
        cmd = shlex.split(args.run_with) + [args.test_json, "--oracle", tmp,
                                            str(len(texts))]
        run = subprocess.run(cmd, timeout=300)
        if run.returncode != 0:
            print("json_oracle: %s exited with %d" % (cmd, run.returncode))
            return 1

        def ours(i, kind):
            path = os.path.join(tmp, "%d.%s" % (i, kind))
            if not os.path.exists(path):
                return None
            with open(path, "rb") as f:
                return f.read()

        for i, t in enumerate(texts):
            want = python_reads(t)
            err = ours(i, "err")
            counts["valid" if want is not INVALID else "invalid"] += 1
            if want is INVALID:
                if err is None:
                    failures.append("%d: %r: Python rejects it, ours parsed"
                                    % (i, t[:80]))
                elif not err.startswith(b"line "):
                    failures.append("%d: message %r" % (i, err))
                continue
            if err is not None:
                failures.append("%d: %r: Python reads it, ours: %s"
                                % (i, t[:80], err.decode(errors="replace")))
                continue
            for kind in ("c.json", "p.json"):
                text = ours(i, kind)
                got = python_reads(text) if text is not None else INVALID
                if got != want:
                    failures.append("%d: %r written back (%s) reads as %r"
                                    % (i, t[:80], kind, got))
            if i < len(generated):
                # Written exactly as Python writes the value it reads
                # (members in the text's order).
                value = json.loads(t.decode("utf-8"))
                exact = {
                    "c.json": library_dumps(value, separators=(",", ":")),
                    "p.json": library_dumps(value, indent=2),
                }
                for kind, text in exact.items():
                    if ours(i, kind) != text.encode("utf-8"):
                        failures.append("%d: %s differs from json.dumps:\n"
                                        "  ours   %r\n  python %r"
                                        % (i, kind, ours(i, kind)[:200],
                                           text.encode("utf-8")[:200]))

    print("json_oracle: seed %d: %d texts (%d generated, %d handmade, %d "
          "mutated): %d valid, %d invalid per Python"
          % (args.seed, len(texts), len(generated), len(HANDMADE),
             len(texts) - len(generated) - len(HANDMADE), counts["valid"],
             counts["invalid"]))
    for f in failures[:30]:
        print("FAIL", f)
    if failures:
        print("json_oracle: %d failure(s)" % len(failures))
        return 1
    print("json_oracle: ours agrees with Python on every text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
