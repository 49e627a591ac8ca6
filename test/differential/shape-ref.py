#!/usr/bin/env python3
"""shape-ref [MAX_BYTES MAX_LINES] < stream > shaped

A reference implementation of toolrun's truncation rule, written from its
statement in daemon/shape.h (not from shape.c), for the shaping part of
the differential suite. Without arguments, SHAPE_BYTES and SHAPE_LINES
from the environment are the limits. 0 means no limit.

For a stream S with limits B bytes and L lines:
  1. S1 = the first B bytes of S, shortened so that it does not end inside
     a UTF-8 sequence that would continue past byte B (a lead byte whose
     sequence length reaches past B is dropped with what follows it);
  2. S2 = the first L lines of S1 (a line ends after '\\n'; a final partial
     line counts);
  3. if S2 is shorter than S, a marker line follows:
        ...[truncated: N bytes, M lines omitted]
     with N = |S| - |S2| and M = lines(S) - lines(S2); a '\\n' precedes it
     when S2 is not empty and does not end in '\\n' (so that the marker is
     a line of its own).
"1 byte" and "1 line" are written in the singular, as README.md's
example wording and the implementation do.
"""
import os
import sys


def seq_len(c):
    """The length a UTF-8 lead byte announces; 1 for ASCII and for bytes
    that cannot start a sequence (continuation bytes are not asked)."""
    if c < 0x80:
        return 1
    if c & 0xE0 == 0xC0:
        return 2
    if c & 0xF0 == 0xE0:
        return 3
    if c & 0xF8 == 0xF0:
        return 4
    return 1


def cut_bytes(s, b):
    if b == 0 or len(s) <= b:
        return s
    # Look back over at most 3 continuation bytes for the sequence's start.
    i = b - 1
    back = 0
    while i >= 0 and back < 3 and s[i] & 0xC0 == 0x80:
        i -= 1
        back += 1
    if i >= 0 and s[i] & 0xC0 != 0x80 and i + seq_len(s[i]) > b:
        return s[:i]
    return s[:b]


def cut_lines(s, n):
    if n == 0:
        return s
    pos = 0
    for _ in range(n):
        nl = s.find(b"\n", pos)
        if nl < 0:
            return s
        pos = nl + 1
    return s[:pos]


def lines(s):
    return s.count(b"\n") + (1 if s and not s.endswith(b"\n") else 0)


def plural(n, unit):
    return f"{n} {unit}" + ("" if n == 1 else "s")


def shape(s, b, l):
    s2 = cut_lines(cut_bytes(s, b), l)
    if len(s2) == len(s):
        return s
    marker = b""
    if s2 and not s2.endswith(b"\n"):
        marker = b"\n"
    marker += ("...[truncated: %s, %s omitted]\n" % (
        plural(len(s) - len(s2), "byte"),
        plural(lines(s) - lines(s2), "line"))).encode()
    return s2 + marker


def main():
    if len(sys.argv) == 3:
        b, l = int(sys.argv[1]), int(sys.argv[2])
    else:
        b, l = int(os.environ["SHAPE_BYTES"]), int(os.environ["SHAPE_LINES"])
    data = sys.stdin.buffer.read()
    sys.stdout.buffer.write(shape(data, b, l))


if __name__ == "__main__":
    main()
