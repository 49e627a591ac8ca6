#!/usr/bin/env python3
"""A stand-in for `toolrun mcp` on stdio, for the protocol layer's unit
tests (test_protocol.py): newline-delimited JSON-RPC as docs/mcp.md says,
with misbehaviours chosen by the first argument.

    fake_server.py MODE [toolrun mcp's own arguments, ignored]

MODE:
  normal    answers as the server does; tools/call bash runs its command
            with this machine's bash (bash -c, stdin /dev/null) and
            answers with the session's fields; requests are served on
            threads, so a quick one overtakes a slow one (the client
            matches answers by id); a command may hold, on a line
            "#fake: sleep S", "#fake: die", "#fake: hang", "#fake: garbage",
            "#fake: error LINE", "#fake: rpcerror", "#fake: running"
  noinit    reads, never answers (not even initialize)
  nostart   says why on stderr and exits 1 at once, as `docker exec` to a
            missing container does
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

out_lock = threading.Lock()
hung = threading.Event()


def send(msg):
    if hung.is_set():
        return
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def reply(rid, result):
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def session_fields(stdout="", stderr="", code=0, state="done"):
    return {"session": "fake0001", "state": state, "command_number": 1,
            "stdout": stdout, "stderr": stderr,
            "exit_code": code if state == "done" else None, "signal": None,
            "duration_ms": 1 if state == "done" else None,
            "stdout_dropped_bytes": 0, "stdout_dropped_lines": 0, "stdout_spill": None,
            "stderr_dropped_bytes": 0, "stderr_dropped_lines": 0, "stderr_spill": None,
            "message": None}


def tool_result(sc, text="ok"):
    return {"content": [{"type": "text", "text": text}], "structuredContent": sc,
            "isError": False}


def run_bash(rid, args):
    cmd = args.get("command", "")
    # Anywhere: Box.exec wraps the command (cd, export, eval '...').
    directive = re.search(r"#fake: ([^\n']*)", cmd)
    if directive:
        what = directive.group(1)
        if what.startswith("sleep "):
            time.sleep(float(what.split()[1]))
        elif what == "die":
            sys.stderr.write("fake: the box went away\n")
            sys.stderr.flush()
            os._exit(3)
        elif what == "hang":
            hung.set()
            return
        elif what == "garbage":
            with out_lock:
                sys.stdout.write("this is not JSON\n")
                sys.stdout.flush()
            return
        elif what.startswith("error "):
            reply(rid, {"content": [{"type": "text", "text": what[len("error "):]}],
                        "isError": True})
            return
        elif what == "rpcerror":
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32602, "message": "bash: bad params"}})
            return
        elif what == "running":
            reply(rid, tool_result(session_fields(stdout="partial", state="running")))
            return
    p = subprocess.run(["bash", "-c", cmd], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True)
    reply(rid, tool_result(session_fields(p.stdout, p.stderr, p.returncode)))


def serve(msg):
    rid, method = msg.get("id"), msg.get("method")
    params = msg.get("params") or {}
    if rid is None:
        return
    if method == "initialize":
        reply(rid, {"protocolVersion": params.get("protocolVersion"),
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "fake"}})
    elif method == "ping":
        reply(rid, {})
    elif method == "tools/list":
        reply(rid, {"tools": [{"name": n} for n in
                              ("bash", "bash_output", "bash_input", "bash_interrupt",
                               "read_file", "write_file")]})
    elif method == "tools/call" and params.get("name") == "bash":
        run_bash(rid, params.get("arguments") or {})
    elif method == "tools/call" and params.get("name") == "bash_output":
        reply(rid, tool_result(session_fields(stdout=" and the rest", code=0)))
    else:
        send({"jsonrpc": "2.0", "id": rid,
              "error": {"code": -32601, "message": f"no method {method}"}})


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
    if mode == "nostart":
        sys.stderr.write("Error: No such container: nobox\n")
        sys.exit(1)
    for line in sys.stdin:
        if mode == "noinit" or hung.is_set():
            continue
        msg = json.loads(line)
        threading.Thread(target=serve, args=(msg,), daemon=True).start()


if __name__ == "__main__":
    main()
