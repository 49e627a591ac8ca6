"""The protocol layer: one `toolrun mcp` server over a transport's stdio.

A Channel runs the transport's command (`docker exec -i BOX toolrun mcp
--root DIR`), speaks newline-delimited JSON-RPC 2.0 to it (docs/mcp.md)
and matches answers to requests by id, on a reader thread of its own.
Several threads may have requests in flight on one channel; the server
serves them one at a time, in order, so a caller that wants its call to
run beside another's takes a channel of its own (box.py's pool).

Nothing here waits without a deadline:
- every request has one; past it the channel is aborted: its process
  group killed (SIGKILL) and reaped, and every pending call fails with
  EXECUTION NO_ANSWER;
- a call that waits on a command (the bash tools) may last as long as
  the command's own wait; meanwhile the channel sends the server an MCP
  `ping` every `probe_every` seconds, which the server answers at once
  even while a command runs. No answer to a ping within `probe_timeout`
  seconds means the box or the transport hangs: the channel is aborted;
- a write into a transport that no longer reads (a stopped `docker`) is
  bounded by the request's deadline too;
- the transport ending (the box killed, `docker` gone) fails every
  pending call at once with EXECUTION CHANNEL_CLOSED and the transport's
  last stderr line.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import signal
import subprocess
import threading
import time
import weakref
from typing import Optional, Sequence

from . import errors
from .errors import BoxError, ChannelClosed

PROTOCOL_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "toolrun-python", "version": "0.1.0"}

# How long toolrun mcp itself waits on toolrund past a call's own wait
# before it gives up with its own error (front/mcp/mcp.c, ANSWER_GRACE_MS), and
# our margin on top, so that its error reaches us before our deadline.
SERVER_GRACE_S = 10.0
MARGIN_S = 10.0

_live = weakref.WeakSet()


def _close_all_at_exit():
    for ch in list(_live):
        ch.abort("the Python interpreter is exiting")


atexit.register(_close_all_at_exit)


class _Pending:
    __slots__ = ("event", "response", "error")

    def __init__(self):
        self.event = threading.Event()
        self.response = None
        self.error: Optional[BoxError] = None


def _rpc_error(method: str, err: dict, params: Optional[dict]) -> BoxError:
    """A JSON-RPC error object as a BoxError."""
    code = err.get("code") if isinstance(err, dict) else None
    msg = err.get("message", "") if isinstance(err, dict) else str(err)
    what = method
    if method == "tools/call" and params:
        what = f"tools/call {params.get('name')}"
    if code == -32601:
        return BoxError("SYNTAX", errors.UNSUPPORTED, f"{what}: {msg} (JSON-RPC {code})")
    if code == -32602:
        return BoxError("SYNTAX", errors.BAD_ARGUMENT, f"{what}: {msg} (JSON-RPC {code})")
    return BoxError("INTERNAL", errors.PROTOCOL, f"{what}: {msg} (JSON-RPC {code})")


class Channel:
    """One `toolrun mcp` process reached through `argv`'s stdio."""

    def __init__(self, argv: Sequence[str], label: str = "box", connect_timeout: float = 30.0,
                 probe_every: float = 5.0, probe_timeout: float = 10.0,
                 env: Optional[dict] = None):
        self.argv = list(argv)
        self.label = label
        self.probe_every = probe_every
        self.probe_timeout = probe_timeout
        self.tools: dict = {}
        self.server_info: dict = {}
        self._lock = threading.Lock()          # _pending, _next_id, _closed
        self._write_lock = threading.Lock()
        self._pending: dict = {}
        self._next_id = 1
        self._closed: Optional[ChannelClosed] = None
        self._stderr_tail: collections.deque = collections.deque(maxlen=20)
        try:
            # A process group of its own: abort() kills the transport with
            # anything it started, and a Ctrl-C meant for the host program
            # does not cut the box off mid-call.
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True, env=env)
        except OSError as e:
            raise BoxError("EXECUTION", errors.START_FAILED,
                           f"cannot run {self.argv[0]}: {e.strerror or e}") from None
        _live.add(self)
        self._reader = threading.Thread(target=self._read_loop, daemon=True,
                                        name=f"toolrun-mcp-reader[{label}]")
        self._errreader = threading.Thread(target=self._stderr_loop, daemon=True,
                                           name=f"toolrun-mcp-stderr[{label}]")
        self._reader.start()
        self._errreader.start()
        try:
            self._initialize(connect_timeout)
        except BoxError as e:
            self.abort(str(e))
            raise BoxError("EXECUTION", errors.START_FAILED,
                           f"{label}: toolrun mcp did not start: {e.message}") from None

    # ------------------------------------------------------------------
    # State

    @property
    def alive(self) -> bool:
        return self._closed is None

    @property
    def pid(self) -> int:
        """The transport's pid on this machine (the `docker` client)."""
        return self._proc.pid

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr_tail)

    # ------------------------------------------------------------------
    # Requests

    def _initialize(self, timeout: float):
        self.server_info = self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": CLIENT_INFO}, timeout)
        self.notify("notifications/initialized")
        listed = self.request("tools/list", {}, timeout)
        self.tools = {t.get("name"): t for t in listed.get("tools", []) if isinstance(t, dict)}

    def notify(self, method: str, params: Optional[dict] = None, timeout: float = 30.0):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg, timeout)

    def request(self, method: str, params: Optional[dict], timeout: float,
                probe: bool = False):
        """Send a request and wait for its result, at most `timeout` s.
        With `probe`, ping the server while waiting (see the module's
        docstring); a call the caller abandons (an exception such as
        KeyboardInterrupt while waiting) is cancelled on the wire."""
        rid, pending = self._register()
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        deadline = time.monotonic() + timeout
        try:
            self._write(msg, timeout)
            self._wait(pending, deadline, probe, method)
        except BoxError:
            raise
        except BaseException:
            # The caller gave up (KeyboardInterrupt...): tell the server,
            # which interrupts the command and sends no answer.
            self._forget(rid)
            if self.alive:
                try:
                    self.notify("notifications/cancelled",
                                {"requestId": rid, "reason": "the client gave up"}, 5.0)
                except BoxError:
                    pass
            raise
        if pending.error:
            raise pending.error
        resp = pending.response
        if "error" in resp:
            raise _rpc_error(method, resp["error"], params)
        result = resp.get("result")
        if not isinstance(result, dict):
            raise BoxError("INTERNAL", errors.PROTOCOL, f"{method}: the result is not an object")
        return result

    def call_tool(self, name: str, arguments: dict, timeout: float, probe: bool = False) -> dict:
        """tools/call: the structuredContent of a result; a result with
        isError raises its "CATEGORY CODE: message" line as a BoxError."""
        if name not in self.tools:
            raise BoxError("SYNTAX", errors.UNSUPPORTED,
                           f"the box's toolrun mcp has no {name} tool (it has "
                           f"{', '.join(sorted(self.tools))}): a newer toolrun is needed")
        result = self.request("tools/call", {"name": name, "arguments": arguments}, timeout, probe)
        text = ""
        for block in result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                text += block.get("text", "")
        if result.get("isError"):
            raise BoxError.from_line(text.strip().splitlines()[0] if text.strip() else
                                     f"INTERNAL {errors.PROTOCOL}: {name} failed without a line")
        sc = result.get("structuredContent")
        if not isinstance(sc, dict):
            raise BoxError("INTERNAL", errors.PROTOCOL, f"{name}: no structuredContent in its result")
        return sc

    def _register(self):
        with self._lock:
            if self._closed:
                raise self._closed
            rid = self._next_id
            self._next_id += 1
            p = _Pending()
            self._pending[rid] = p
            return rid, p

    def _forget(self, rid):
        with self._lock:
            self._pending.pop(rid, None)

    def _write(self, msg: dict, timeout: float):
        line = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        # A transport that stopped reading blocks the write once the pipe
        # is full: the watchdog aborts the channel, which ends the write.
        watchdog = threading.Timer(timeout, self.abort,
                                   args=(f"{self.label}: writing to the channel blocked for "
                                         f"{timeout:g} s", errors.NO_ANSWER))
        watchdog.daemon = True
        with self._write_lock:
            if self._closed:
                raise self._closed
            watchdog.start()
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except (OSError, ValueError):
                self.abort(self._ended_reason())
                raise self._closed from None
            finally:
                watchdog.cancel()

    def _wait(self, pending: _Pending, deadline: float, probe: bool, method: str):
        probe_sent = None  # (time, _Pending) of the ping in flight
        last_probe = time.monotonic()
        while True:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                self.abort(f"{self.label}: no answer to {method} within its deadline",
                           errors.NO_ANSWER)
                return
            slice_s = min(remaining, 1.0) if probe else remaining
            if pending.event.wait(slice_s):
                return
            if not probe or not self.alive:
                continue
            now = time.monotonic()
            if probe_sent is not None:
                sent_at, ping = probe_sent
                if ping.event.is_set():
                    probe_sent = None
                elif now - sent_at > self.probe_timeout:
                    self.abort(f"{self.label}: the box stopped answering (no answer to a ping "
                               f"within {self.probe_timeout:g} s while {method} waited)",
                               errors.NO_ANSWER)
                    return
            if probe_sent is None and now - last_probe >= self.probe_every:
                last_probe = now
                rid, ping = self._register()
                try:
                    self._write({"jsonrpc": "2.0", "id": rid, "method": "ping"},
                                self.probe_timeout)
                except BoxError:
                    return  # aborted: pending has its error
                probe_sent = (now, ping)

    # ------------------------------------------------------------------
    # Reading

    def _read_loop(self):
        out = self._proc.stdout
        try:
            self._dispatch(out)
        finally:
            out.close()

    def _dispatch(self, out):
        """Hand each answer to its request, until the end of the channel."""
        try:
            for line in out:
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    self.abort(f"{self.label}: the server wrote a line that is not JSON: "
                               f"{line[:80]!r}", errors.PROTOCOL)
                    return
                if not isinstance(msg, dict):
                    continue
                rid = msg.get("id")
                if rid is None or ("result" not in msg and "error" not in msg):
                    continue  # a notification (progress...) or a request: nothing asked it
                with self._lock:
                    p = self._pending.pop(rid, None)
                if p is not None:
                    p.response = msg
                    p.event.set()
        except (OSError, ValueError):
            pass
        self.abort(self._ended_reason())

    def _stderr_loop(self):
        try:
            for line in self._proc.stderr:
                text = line.decode("utf-8", "replace").rstrip()
                if text:
                    self._stderr_tail.append(text)
        except (OSError, ValueError):
            pass
        self._proc.stderr.close()

    def _ended_reason(self) -> str:
        try:
            status = self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            status = None
        # The stderr reader may still hold the transport's last words.
        self._errreader.join(timeout=1)
        how = "still running" if status is None else (
            f"killed by signal {-status}" if status < 0 else f"exited with status {status}")
        last = self._stderr_tail[-1] if self._stderr_tail else ""
        return (f"the channel to {self.label} ended ({os.path.basename(self.argv[0])} {how}"
                + (f": {last}" if last else "") + ")")

    # ------------------------------------------------------------------
    # Ending

    def abort(self, reason: str, code: str = errors.CHANNEL_CLOSED):
        """End the channel now: kill the transport's process group, reap
        it, fail every pending call with `reason`."""
        with self._lock:
            first = self._closed is None
            if first:
                self._closed = ChannelClosed(reason, code)
            pending, self._pending = self._pending, {}
        for p in pending.values():
            p.error = self._closed
            p.event.set()
        if not first:
            return
        _live.discard(self)
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        # The readers close stdout and stderr when they see their end.
        try:
            self._proc.stdin.close()
        except (OSError, ValueError):
            pass

    def close(self, timeout: float = 5.0):
        """End the channel cleanly: end of input, which ends the server
        (and, with a toolrun that does so, closes its own session); past
        `timeout`, abort."""
        if not self.alive:
            return
        with self._write_lock:
            try:
                self._proc.stdin.close()
            except (OSError, ValueError):
                pass
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        self.abort(f"the channel to {self.label} was closed")
        self._reader.join(timeout=timeout)

    def __repr__(self):
        state = "alive" if self.alive else "closed"
        return f"<Channel {self.label} pid={self._proc.pid} {state}>"
