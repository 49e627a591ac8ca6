#!/usr/bin/env python3
"""A DNS server for one test: every A query gets 192.0.2.7, any other
type an empty answer, so a resolver asking for AAAA first falls back.

    dns-responder.py ADDRESS READY-FILE

Listens on UDP port 53 of ADDRESS, creates READY-FILE once it does, and
serves until killed.
"""
import socket
import sys

ANSWER = bytes([192, 0, 2, 7])


def reply(query):
    if len(query) < 12:
        return None
    end = 12
    while end < len(query) and query[end] != 0:
        end += query[end] + 1
    end += 5  # the root label, QTYPE, QCLASS
    if end > len(query):
        return None
    qtype = int.from_bytes(query[end - 4:end - 2], "big")
    is_a = qtype == 1
    header = (query[:2] + b"\x81\x80"  # response, recursion available
              + b"\x00\x01" + (b"\x00\x01" if is_a else b"\x00\x00")
              + b"\x00\x00\x00\x00")
    answer = b""
    if is_a:
        answer = (b"\xc0\x0c"  # the name, as in the question
                  + b"\x00\x01\x00\x01"  # A, IN
                  + (60).to_bytes(4, "big") + len(ANSWER).to_bytes(2, "big")
                  + ANSWER)
    return header + query[12:end] + answer


def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((sys.argv[1], 53))
    open(sys.argv[2], "w").close()
    while True:
        query, peer = sock.recvfrom(4096)
        out = reply(query)
        if out:
            sock.sendto(out, peer)


if __name__ == "__main__":
    main()
