#!/usr/bin/env python3
"""Cross-check of tool_effects::canonical_json against an independent RFC 8785
(JCS) implementation: Python's json module for strings, sorting member names
by UTF-16 code units, and the RFC's number rule (ECMAScript Number::toString)
written out below from Python's shortest round-trip repr().

    check_jcs.py <jcs_canonicalize executable> [documents] [seed]

Generates random documents (nested objects and arrays; strings with controls,
quotes, non-ASCII and astral characters; integers, large integers and random
IEEE doubles), writes each in a random non-canonical layout (shuffled members,
whitespace, \\u escapes, exponent forms) and requires the tool's output to be
byte-identical to the expected canonical form. Python 3 standard library only.
"""
import json
import random
import struct
import subprocess
import sys
from decimal import Decimal


def es_number(x):
    """ECMAScript Number::toString for a finite double (RFC 8785 3.2.2.3)."""
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError("no JSON form")
    if x == 0:
        return "0"
    if x < 0:
        return "-" + es_number(-x)
    _, digit_tuple, exp = Decimal(repr(x)).as_tuple()  # repr: shortest round-trip
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exp += len("".join(map(str, digit_tuple))) - len(digits)
    k = len(digits)
    n = k + exp  # value = 0.digits * 10^n
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    mant = digits[0] + ("." + digits[1:] if k > 1 else "")
    return mant + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def canonical(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return es_number(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(canonical(e) for e in v) + "]"
    keys = sorted(v, key=lambda s: s.encode("utf-16-be"))
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical(v[k]) for k in keys) + "}"


ALPHABET = (
    [chr(c) for c in range(0x20)]
    + list("aAzZ09 \"\\/'<>&~\x7f")
    + ["\u0080", "\u00e9", "\u00f6", "\u20ac", "\u2028", "\ud7ff", "\ue000", "\ufb33", "\uffff", "\ufffd"]
    + ["\U00010000", "\U0001f600", "\U0001f602", "\U0010ffff"]
)


def rand_string(r):
    return "".join(r.choice(ALPHABET) for _ in range(r.randrange(0, 8)))


def rand_double(r):
    while True:
        x = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
        if x == x and abs(x) != float("inf"):
            return x


def rand_number(r):
    pick = r.randrange(9)
    if pick == 0:
        return r.randrange(-1000, 1000)
    if pick == 1:
        return r.randrange(-(2**63), 2**64)  # int64 / uint64 range: rounded to a double
    if pick == 2:
        return r.randrange(-(2**70), 2**70)  # beyond uint64: parsed as a double
    if pick == 3:
        return round(r.uniform(-1e6, 1e6), r.randrange(0, 8))
    if pick == 4:
        return float(r.randrange(-(2**53), 2**53))
    if pick == 5:
        return r.choice([0.0, -0.0, 1e21, 1e-6, 1e-7, 1e20, 999999999999999900000.0, 5e-324, 1.7976931348623157e308])
    if pick == 6:
        return r.uniform(-1, 1) * 10 ** r.randrange(-30, 30)
    return rand_double(r)


def rand_value(r, depth):
    pick = r.randrange(10 if depth < 4 else 6)
    if pick == 0:
        return None
    if pick == 1:
        return r.random() < 0.5
    if pick in (2, 3):
        return rand_number(r)
    if pick in (4, 5):
        return rand_string(r)
    if pick in (6, 7):
        return [rand_value(r, depth + 1) for _ in range(r.randrange(0, 5))]
    return {rand_string(r): rand_value(r, depth + 1) for _ in range(r.randrange(0, 6))}


def layout(v, r):
    """A valid, non-canonical text of v: shuffled members, spaces, escapes."""
    sp = lambda: r.choice(["", " ", "\t", "\n ", "  "])
    if isinstance(v, dict):
        items = list(v.items())
        r.shuffle(items)
        inner = ",".join(sp() + json.dumps(k, ensure_ascii=r.random() < 0.5) + sp() + ":" + sp() + layout(e, r)
                         for k, e in items)
        return "{" + inner + sp() + "}"
    if isinstance(v, list):
        return "[" + ",".join(sp() + layout(e, r) for e in v) + sp() + "]"
    if isinstance(v, float) and r.random() < 0.3:
        return "%.17e" % v  # same double, another spelling
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=r.random() < 0.5)
    return json.dumps(v)


FIXED = [  # (input, expected): RFC 8785 section 3.2.2 / cyberphone testdata
    ('{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
     ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
     '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
     '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'),
]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    tool = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 8785
    r = random.Random(seed)
    inputs, expected = [], []
    for text, want in FIXED:
        assert canonical(json.loads(text)) == want, "the reference disagrees with the RFC example"
        inputs.append(text.replace("\n", " "))
        expected.append(want)
    for _ in range(count):
        v = rand_value(r, 0)
        inputs.append(layout(v, r).replace("\n", " "))
        expected.append(canonical(v))
    out = subprocess.run([tool], input="\n".join(inputs) + "\n", capture_output=True, encoding="utf-8", check=True)
    got = out.stdout.split("\n")[:-1]
    if len(got) != len(inputs):
        print("expected %d lines, got %d" % (len(inputs), len(got)))
        return 1
    bad = [(i, e, g) for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    for i, e, g in bad[:10]:
        print("document %d: %s\n  expected %s\n  got      %s" % (i, inputs[i], e, g))
    print("%d documents (seed %d): %d mismatches" % (len(inputs), seed, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
