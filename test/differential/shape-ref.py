#!/usr/bin/env python3
"""shape-ref [options] [MAX_BYTES MAX_LINES] < stream > shaped

A reference implementation of toolrun's shaping rule, written from its
statement in daemon/rules/shape.h (not from shape.c), for the shaping part of
the differential suite. Without MAX_BYTES MAX_LINES, SHAPE_BYTES and
SHAPE_LINES from the environment are the budgets (0: none; no byte budget
means SHAPE_HOLD_MAX).

Options (each also from the environment variable named after it):
  --mode head-tail|head|tail   SHAPE_MODE (default head-tail)
  --binary summary|pass        SHAPE_BINARY (default summary)
  --stream NAME                SHAPE_STREAM (default stdout)
  --program NAME               SHAPE_PROGRAM (default none)
  --spill PATH                 SHAPE_SPILL: where the whole stream is
  --spill-first N              the spill file holds only its first N bytes
  --not-kept REASON            SHAPE_NOT_KEPT: why it is not kept
                               (default "spill_dir is empty", what the
                               daemon says while it has no spill)
"""
import argparse
import hashlib
import os
import sys

HOLD_MAX = 1024 * 1024
SNIFF = 1024
NO_LIMIT = None


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


def is_cont(c):
    return c & 0xC0 == 0x80


def head_end(s, b, l):
    """The length of head(S, b, l)."""
    end = len(s)
    if end > b:
        end = b
        # A sequence whose lead byte is in the last bytes and that would
        # continue past b goes, lead byte and all.
        i, back = b - 1, 0
        while i >= 0 and back < 3 and is_cont(s[i]):
            i -= 1
            back += 1
        if i >= 0 and not is_cont(s[i]) and i + seq_len(s[i]) > b:
            end = i
    if l is not NO_LIMIT:
        pos = 0
        for _ in range(l):
            nl = s.find(b"\n", pos, end)
            if nl < 0:
                break
            pos = nl + 1
        else:
            return pos
    # Whole lines: a line the budget cuts goes, unless it is the only one.
    if 0 < end < len(s) and s[end - 1] != 0x0A:
        nl = s.rfind(b"\n", 0, end)
        if nl >= 0:
            end = nl + 1
    return end


def tail_start(s, b, l):
    """Where tail(S, b, l) starts."""
    n = len(s)
    if b == 0 or l == 0:
        return n
    ws = max(0, n - b)
    if ws > 0:
        # Continuation bytes at ws of a sequence begun before ws go.
        i, back = ws - 1, 0
        while i >= 0 and back < 3 and is_cont(s[i]):
            i -= 1
            back += 1
        if i >= 0 and not is_cont(s[i]):
            end = i + seq_len(s[i])
            while ws < min(end, n) and is_cont(s[ws]):
                ws += 1
    # Whole lines: a line the window starts inside goes, unless it is the
    # last one.
    if 0 < ws < n and s[ws - 1] != 0x0A:
        nl = s.find(b"\n", ws, n - 1)
        if nl >= 0:
            ws = nl + 1
    if l is NO_LIMIT:
        return ws
    # The last l lines of s[ws:]: a '\n' at n - 1 ends the last one.
    k, y = 0, n - 2
    while y >= ws:
        if s[y] == 0x0A:
            k += 1
            if k == l:
                return y + 1
        y -= 1
    return ws


def lines(s):
    return s.count(b"\n") + (1 if s and not s.endswith(b"\n") else 0)


def count(n, unit):
    return f"{n} {unit}" + ("" if n == 1 else "s")


def rng(unit, a, b):
    return f"{unit} {a}" if a == b else f"{unit}s {a}-{b}"


def where(o):
    if o.spill:
        w = f"the whole {o.stream} is in {o.spill}"
        if o.spill_first is not None:
            w += f" (partial: its first {count(o.spill_first, 'byte')})"
        return w
    w = f"the whole {o.stream} is not kept"
    return w + (f": {o.not_kept}" if o.not_kept else "")


def whose(o):
    return f"{o.program}'s {o.stream}" if o.program else o.stream


def parts(s, a, b, la, lb, starts_whole, ends_whole, first, nwhole):
    if la == lb:
        if starts_whole:
            return f"the start of line {la}"
        return f"the rest of line {la}" if ends_whole else f"inside line {la}"
    p = []
    if not starts_whole:
        p.append(f"the rest of line {la}")
    if nwhole:
        p.append(rng("line", first, first + nwhole - 1))
    if not ends_whole:
        p.append(f"the start of line {lb}")
    return p[0] if len(p) == 1 else ", ".join(p[:-1]) + " and " + p[-1]


def marker(s, a, b, o):
    n = len(s)
    la = s.count(b"\n", 0, a) + 1
    lb = s.count(b"\n", 0, b - 1) + 1
    starts_whole = a == 0 or s[a - 1] == 0x0A
    ends_whole = b == n or s[b - 1] == 0x0A
    first = la if starts_whole else la + 1
    last = lb if ends_whole else lb - 1
    nwhole = max(0, last - first + 1)
    if starts_whole and ends_whole:
        what = (f"{count(nwhole, 'line')} ({count(b - a, 'byte')}) of {whose(o)} "
                f"here: {rng('line', la, lb)} of {lines(s)}")
    else:
        what = (f"{count(b - a, 'byte')} of {whose(o)} here: "
                f"{rng('byte', a + 1, b)} of {n}, "
                + parts(s, a, b, la, lb, starts_whole, ends_whole, first, nwhole))
    return f"...[toolrun cut {what}; {where(o)}]\n".encode()


def utf8_valid(s, i):
    """The length of the valid sequence at s[i:], 0 if invalid, what is
    left when a valid sequence is cut by the end."""
    c = s[i]
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        ln, lo, hi = 2, 0x80, 0xBF
    elif c == 0xE0:
        ln, lo, hi = 3, 0xA0, 0xBF
    elif c == 0xED:
        ln, lo, hi = 3, 0x80, 0x9F
    elif 0xE1 <= c <= 0xEF:
        ln, lo, hi = 3, 0x80, 0xBF
    elif c == 0xF0:
        ln, lo, hi = 4, 0x90, 0xBF
    elif 0xF1 <= c <= 0xF3:
        ln, lo, hi = 4, 0x80, 0xBF
    elif c == 0xF4:
        ln, lo, hi = 4, 0x80, 0x8F
    else:
        return 0
    for k in range(1, ln):
        if i + k == len(s):
            return len(s) - i
        if not (lo if k == 1 else 0x80) <= s[i + k] <= (hi if k == 1 else 0xBF):
            return 0
    return ln


def is_binary(w):
    if b"\0" in w:
        return True
    bad, i = 0, 0
    while i < len(w):
        ln = utf8_valid(w, i)
        if ln == 0:
            bad += 1
            ln = 1
        i += ln
    return bad * 10 > len(w)


MAGIC = [
    (0, b"\x7fELF", "ELF"), (0, b"\x1f\x8b", "gzip"), (0, b"BZh", "bzip2"),
    (0, b"\xfd7zXZ\0", "xz"), (0, b"\x28\xb5\x2f\xfd", "zstd"),
    (0, b"PK\x03\x04", "zip"), (0, b"PK\x05\x06", "zip"),
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"), (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF87a", "GIF image"), (0, b"GIF89a", "GIF image"),
    (0, b"%PDF-", "PDF document"), (0, b"SQLite format 3\0", "SQLite database"),
    (257, b"ustar", "tar archive"), (0, b"\0asm", "WebAssembly module"),
    (0, b"\xca\xfe\xba\xbe", "Java class"), (0, b"MZ", "PE/MZ executable"),
]


def type_guess(w):
    for off, magic, name in MAGIC:
        if w[off:off + len(magic)] == magic:
            return name
    return "data"


def summary(s, o):
    who = o.stream + (f" of {o.program}" if o.program else "")
    return (f"[toolrun: binary {who}, {count(len(s), 'byte')}, "
            f"{type_guess(s[:SNIFF])}, sha256 {hashlib.sha256(s).hexdigest()}; "
            f"{where(o)}]\n").encode()


def text_end(w):
    """Where the text at the start of w ends: before a NUL or an invalid
    sequence, or before a sequence cut by the end of w."""
    i = 0
    while i < len(w):
        ln = utf8_valid(w, i)
        if ln == 0 or w[i] == 0 or (ln == len(w) - i and ln < seq_len(w[i])):
            return i
        i += ln
    return i


def leading_lines(s, hb, hl):
    """The whole lines of text a binary stream shows before its summary:
    before any NUL or invalid UTF-8 in the sniffed bytes, within the head
    part's bytes less 4, and fewer lines than the head part's."""
    w = s[:SNIFF]
    end = min(text_end(w), max(hb - 4, 0))
    if hl is not NO_LIMIT:
        if hl <= 1:
            return b""
        k, i = 0, 0
        while k < hl - 1:
            j = w.find(b"\n", i, end)
            if j < 0:
                break
            i, k = j + 1, k + 1
        if k == hl - 1:
            end = i
    cut = w.rfind(b"\n", 0, end)
    return w[:cut + 1] if cut >= 0 else b""


def budgets(b, l, mode):
    B = b if 0 < b < HOLD_MAX else HOLD_MAX
    L = l if l else NO_LIMIT
    half = lambda x: x if x is NO_LIMIT else x // 2
    rest = lambda x: x if x is NO_LIMIT else x - x // 2
    if mode == "head":
        return B, L, B, L, 0, 0
    if mode == "tail":
        return B, L, 0, 0, B, L
    return B, L, B // 2, half(L), B - B // 2, rest(L)


def shape(s, b, l, o):
    B, L, hb, hl, tb, tl = budgets(b, l, o.mode)
    if o.binary == "summary" and s and is_binary(s[:SNIFF]):
        return leading_lines(s, hb, hl) + summary(s, o)
    if len(s) <= B and (L is NO_LIMIT or lines(s) <= L):
        return s
    a = head_end(s, hb, hl)
    t = tail_start(s, tb, tl)
    assert a < t, (a, t)
    head = s[:a]
    nl = b"\n" if head and not head.endswith(b"\n") else b""
    return head + nl + marker(s, a, t, o) + s[t:]


def main():
    env = os.environ.get
    p = argparse.ArgumentParser(description="toolrun's shaping rule")
    p.add_argument("--mode", default=env("SHAPE_MODE", "head-tail"),
                   choices=["head-tail", "head", "tail"])
    p.add_argument("--binary", default=env("SHAPE_BINARY", "summary"),
                   choices=["summary", "pass"])
    p.add_argument("--stream", default=env("SHAPE_STREAM", "stdout"))
    p.add_argument("--program", default=env("SHAPE_PROGRAM"))
    p.add_argument("--spill", default=env("SHAPE_SPILL"))
    p.add_argument("--spill-first", type=int, default=None,
                   help="the spill file holds only the first N bytes")
    p.add_argument("--not-kept", default=env("SHAPE_NOT_KEPT", "spill_dir is empty"))
    p.add_argument("limits", nargs="*", type=int)
    o = p.parse_args()
    if len(o.limits) == 2:
        b, l = o.limits
    elif not o.limits:
        b, l = int(env("SHAPE_BYTES")), int(env("SHAPE_LINES"))
    else:
        p.error("give both MAX_BYTES and MAX_LINES, or neither")
    data = sys.stdin.buffer.read()
    sys.stdout.buffer.write(shape(data, b, l, o))


if __name__ == "__main__":
    main()
