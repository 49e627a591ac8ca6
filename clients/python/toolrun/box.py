"""Box and Session: the API an agent framework calls.

A Box holds a pool of channels (mcp.py) to one box, each a `toolrun mcp`
server with a bash session of its own:

- the first channel is opened by attach(): one long-lived `docker exec`
  carries every call after it, so a call costs a session call, not a
  `docker exec`;
- a call leases one idle channel for its duration. When every channel is
  busy (another thread's command runs on it), a new one is opened, up to
  `max_connections` (default 8); beyond that a call waits for one to be
  free, at most `wait_connection` seconds. So concurrent calls from
  threads (or from asyncio through asyncio.to_thread) run side by side,
  up to `max_connections` at once, and queue after that;
- exec() runs its command on the leased channel's own session, in a
  subshell, so that nothing a command does (cd, export, set -e) reaches
  the next one;
- a Session (box.session()) is a toolrund session of its own, made with
  `toolrun session new`; any channel can drive it, as the MCP bash tools
  take a session id.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import subprocess
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Mapping, Optional, Sequence

from . import errors, transfer
from .errors import BoxError
from .mcp import MARGIN_S, SERVER_GRACE_S, Channel
from .result import Result, Status
from .transport import Docker, Transport

# The longest wait one bash call may ask of the server (its schema's maximum).
MAX_YIELD_S = 3600.0
# How long exec() gives a killed command to be reported.
KILL_WAIT_S = 5.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _deadline(wait_s: float) -> float:
    """A bash call's deadline: its own wait, the server's grace, ours."""
    return wait_s + SERVER_GRACE_S + MARGIN_S


class _Pool:
    """Channels to one box: leased one call at a time, opened on demand."""

    def __init__(self, open_channel, max_size: int, wait_s: float, label: str):
        if max_size < 1:
            raise BoxError("SYNTAX", errors.BAD_ARGUMENT, "max_connections must be at least 1")
        self._open = open_channel
        self._max = max_size
        self._wait_s = wait_s
        self._label = label
        self._cond = threading.Condition()
        self._idle: list = []
        self._count = 0            # open or being opened
        self._closed = False
        self.opened = 0            # channels opened in all
        self.peak = 0              # most open at once

    @property
    def size(self) -> int:
        with self._cond:
            return self._count

    @contextmanager
    def lease(self):
        ch = self._acquire()
        try:
            yield ch
        finally:
            self._release(ch)

    def _acquire(self) -> Channel:
        deadline = time.monotonic() + self._wait_s
        with self._cond:
            while True:
                if self._closed:
                    raise BoxError("EXECUTION", errors.CHANNEL_CLOSED,
                                   f"{self._label}: this Box was closed")
                while self._idle:
                    ch = self._idle.pop()
                    if ch.alive:
                        return ch
                    self._count -= 1
                if self._count < self._max:
                    self._count += 1
                    self.peak = max(self.peak, self._count)
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise BoxError("RESOURCE", "NO_CONNECTION",
                                   f"{self._label}: all {self._max} connections stayed busy "
                                   f"for {self._wait_s:g} s")
                self._cond.wait(remaining)
        try:
            ch = self._open()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise
        with self._cond:
            self.opened += 1
        return ch

    def _release(self, ch: Channel):
        close = False
        with self._cond:
            if ch.alive and not self._closed:
                self._idle.append(ch)
            else:
                self._count -= 1
                close = ch.alive
            self._cond.notify()
        if close:
            ch.close()

    def close(self):
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        for ch in idle:
            ch.close()


def _exec_script(command: str, cwd: str, env: Optional[Mapping[str, str]]) -> str:
    """exec()'s command as the session runs it: a subshell, so that the
    session's own state never changes; stdin /dev/null, as `docker exec`
    without -i gives it; eval, so that the command is parsed alone (a
    comment or a here-document at its end stays its own)."""
    parts = [f"cd -- {shlex.quote(cwd)} || exit"]
    for name, value in (env or {}).items():
        if not _ENV_NAME.match(str(name)):
            raise BoxError("SYNTAX", errors.BAD_ARGUMENT, f"env: {name!r} is not a variable name")
        parts.append(f"export {name}={shlex.quote(str(value))}")
    parts.append(f"eval {shlex.quote(command)}")
    return "( " + "\n".join(parts) + "\n) </dev/null"


class Session:
    """A bash session in the box of its own (docs/sessions.md): its working
    directory, variables and background jobs last from one command to the
    next. Each call returns within its `yield_s` what the command wrote
    since the last call, and its state: "done" (with exit_code),
    "running", "waiting_input" (write to it), or "closed".

    Usable as a context manager: the session is closed at the end."""

    def __init__(self, box: "Box", session_id: str, tty: bool):
        self.box = box
        self.id = session_id
        self.tty = tty
        self.state = "idle"
        self.closed = False

    def _call(self, tool: str, args: dict, yield_s: float) -> Result:
        if self.closed:
            raise BoxError("EXECUTION", "SESSION", f"session {self.id}: closed")
        args = dict(args, session=self.id, timeout=float(yield_s))
        t0 = time.monotonic()
        with self.box._pool.lease() as ch:
            reply = ch.call_tool(tool, args, _deadline(yield_s), probe=True)
        r = Result.from_replies([reply], elapsed=time.monotonic() - t0)
        self.state = r.state
        if r.state == "closed":
            self.closed = True
            self.box._forget_session(self)
        return r

    def run(self, command: str, yield_s: float = 30.0) -> Result:
        """Start `command` and return what it wrote within `yield_s`
        seconds (sooner if it finishes or waits for input)."""
        if not command:
            raise BoxError("SYNTAX", errors.BAD_ARGUMENT, "run: the command is empty")
        return self._call("bash", {"command": command}, yield_s)

    def read(self, yield_s: float = 10.0) -> Result:
        """Wait up to `yield_s` for more of the running command."""
        return self._call("bash_output", {}, yield_s)

    def write(self, text: str, eof: bool = False, yield_s: float = 1.0) -> Result:
        """Send `text` as it is (add "\\n" for a line) to the command's
        stdin, or type it into the terminal; `eof` then ends the input
        (for good, without a tty: docs/sessions.md)."""
        return self._call("bash_input", {"text": text, "newline": False, "eof": bool(eof)},
                          yield_s)

    def interrupt(self, yield_s: float = 1.0) -> Result:
        """Ctrl-C for the running command."""
        return self._call("bash_interrupt", {}, yield_s)

    def kill(self, yield_s: float = 1.0, signal: Optional[str] = None) -> Result:
        """SIGKILL (or `signal`: "TERM", "SIGTERM", a number) to every
        process of the running command, the session and its bash living
        on: for a command that ignores Ctrl-C (MCP's bash_kill)."""
        args = {} if signal is None else {"signal": str(signal)}
        return self._call("bash_kill", args, yield_s)

    def close(self) -> None:
        """End the session: SIGHUP, then SIGKILL, to all it runs."""
        if self.closed:
            return
        self.closed = True
        self.state = "closed"
        self.box._close_session(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<Session {self.id} {'tty ' if self.tty else ''}{self.state}>"


class Box:
    """A running toolrun box, reached through `transport`."""

    def __init__(self, transport: Transport, root: str = "/workspace",
                 max_connections: int = 8, connect_timeout: float = 30.0,
                 call_timeout: float = 120.0, wait_connection: float = 600.0,
                 mcp_args: Sequence[str] = (), probe_every: float = 5.0,
                 probe_timeout: float = 10.0):
        self.transport = transport
        self.root = root
        self.name = transport.label
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self._mcp_args = list(mcp_args)
        self._probe = (probe_every, probe_timeout)
        self._pool = _Pool(self._open_channel, max_connections, wait_connection, self.name)
        self._sessions: dict = {}
        self._sessions_lock = threading.Lock()
        self._engine: Optional[str] = None   # set by start(): the box is ours to remove
        # The first channel now: a wrong name or a box without toolrun
        # fails here, not at the first call.
        with self._pool.lease():
            pass

    # ------------------------------------------------------------------
    # Reaching a box

    @classmethod
    def attach(cls, name: str, user: Optional[str] = "1000:1000", engine: str = "docker",
               **options) -> "Box":
        """A running box by container name, as `user` (the agent, uid 1000
        in the image; None: the container's default, root in a box
        container/run.sh started). `engine`: "docker" or "podman". Other
        transports (kubectl, ssh): `Box(transport, ...)`."""
        return cls(Docker(name, user=user, engine=engine), **options)

    @classmethod
    def start(cls, image: str = "toolrun:latest", workspace: Optional[str] = None,
              name: Optional[str] = None, *, run_script: Optional[str] = None,
              user: str = "1000:1000", memory: Optional[str] = None,
              cpus: Optional[str] = None, pids: Optional[int] = None,
              tmp_size: Optional[str] = None, config: Optional[str] = None,
              seccomp: Optional[str] = None, replace: bool = False, wait: int = 20,
              **options) -> "Box":
        """Start a box with toolrun's own run script (container/run.sh of a
        toolrun checkout: its hardening, seccomp profile and limits, in one
        place) and attach to it. `run_script` defaults to $TOOLRUN_RUN_SCRIPT,
        else container/run.sh above this package when it is used from the
        checkout. Without `workspace`, run.sh makes an empty one."""
        script = run_script or os.environ.get("TOOLRUN_RUN_SCRIPT") or _checkout_run_script()
        if not script or not os.path.isfile(script):
            raise BoxError("SYNTAX", errors.BAD_ARGUMENT,
                           "Box.start needs toolrun's container/run.sh: pass run_script= "
                           "or set TOOLRUN_RUN_SCRIPT")
        name = name or f"toolrun-{uuid.uuid4().hex[:10]}"
        argv = [script, "--image", image, "--user", user, "--wait", str(int(wait))]
        for flag, value in (("--memory", memory), ("--cpus", cpus), ("--pids", pids),
                            ("--tmp-size", tmp_size), ("--config", config),
                            ("--seccomp", seccomp)):
            if value is not None:
                argv += [flag, str(value)]
        if replace:
            argv.append("--replace")
        argv.append(name)
        if workspace is not None:
            argv.append(os.path.abspath(workspace))
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=wait + 120, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise BoxError("EXECUTION", errors.START_FAILED,
                           f"{script} did not finish within {wait + 120} s") from None
        except OSError as e:
            raise BoxError("EXECUTION", errors.START_FAILED,
                           f"cannot run {script}: {e.strerror or e}") from None
        if done.returncode != 0:
            lines = [ln for ln in done.stderr.decode("utf-8", "replace").splitlines()
                     if ln.startswith("run: ")]
            raise BoxError("EXECUTION", errors.START_FAILED,
                           f"{os.path.basename(script)} {name}: "
                           f"{lines[0][5:] if lines else 'exit status %d' % done.returncode}")
        box = cls(Docker(name, user=user), **options)
        box._engine = "docker"
        return box

    def _open_channel(self) -> Channel:
        argv = self.transport.command(["toolrun", "mcp", "--root", self.root] + self._mcp_args,
                                      stdin=True)
        return Channel(argv, label=self.name, connect_timeout=self.connect_timeout,
                       probe_every=self._probe[0], probe_timeout=self._probe[1])

    @property
    def connections(self) -> int:
        """Channels open now."""
        return self._pool.size

    def _path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.root, path))

    # ------------------------------------------------------------------
    # Commands

    def exec(self, command: str, timeout: Optional[float] = 300.0, cwd: Optional[str] = None,
             env: Optional[Mapping[str, str]] = None) -> Result:
        """Run `command` (bash source) to its end, in `cwd` (default the
        workspace; relative to it), with `env` added, stdin /dev/null.
        Past `timeout` seconds (None: no limit) every process of the
        command is killed (bash_kill) and the Result says timed_out."""
        if not command:
            raise BoxError("SYNTAX", errors.BAD_ARGUMENT, "exec: the command is empty")
        script = _exec_script(command, self._path(cwd or "."), env)
        t0 = time.monotonic()
        replies = []
        timed_out = False
        with self._pool.lease() as ch:
            tool, args = "bash", {"command": script}
            try:
                while True:
                    wait = MAX_YIELD_S
                    if timeout is not None:
                        wait = min(wait, max(0.0, timeout - (time.monotonic() - t0)))
                    args["timeout"] = wait
                    replies.append(ch.call_tool(tool, args, _deadline(wait), probe=True))
                    if replies[-1].get("state") not in ("running", "waiting_input"):
                        break
                    if timeout is not None and time.monotonic() - t0 >= timeout:
                        timed_out = True
                        replies += self._kill_own(ch)
                        break
                    tool, args = "bash_output", {}
            except BoxError:
                raise
            except BaseException:
                # The caller gave up (KeyboardInterrupt...): the command may
                # run on in the channel's session, so the channel is not
                # lent again; its end of input closes that session.
                ch.abort(f"{self.name}: a call was abandoned mid-command")
                raise
        return Result.from_replies(replies, timed_out=timed_out, elapsed=time.monotonic() - t0)

    def _kill_own(self, ch: Channel) -> list:
        """End the command running in a channel's own session: bash_kill;
        a server without it gets Ctrl-C, and the channel is given up if
        the command lives on (its end of input closes its session)."""
        tool = "bash_kill" if "bash_kill" in ch.tools else "bash_interrupt"
        reply = ch.call_tool(tool, {"timeout": KILL_WAIT_S}, _deadline(KILL_WAIT_S), probe=True)
        if reply.get("state") in ("running", "waiting_input"):
            ch.abort(f"{self.name}: a timed-out command outlived {tool}; its channel is closed",
                     errors.NO_ANSWER)
        return [reply]

    def session(self, tty: bool = False, cwd: Optional[str] = None,
                env: Optional[Mapping[str, str]] = None) -> Session:
        """A new session of its own (`toolrun session new`), in `cwd`
        (default the workspace), with the box's environment plus `env`."""
        argv = ["toolrun", "session", "new", "--json", "--cwd", self._path(cwd or ".")]
        if tty:
            argv.append("--tty")
        for name, value in (env or {}).items():
            if not _ENV_NAME.match(str(name)):
                raise BoxError("SYNTAX", errors.BAD_ARGUMENT,
                               f"env: {name!r} is not a variable name")
            argv += ["--env", f"{name}={value}"]
        r = self.exec(" ".join(shlex.quote(a) for a in argv), timeout=60)
        answer = _json_line(r.stdout)
        if r.exit_code != 0 or "session" not in answer or answer.get("error"):
            why = answer.get("message") or (r.stderr or r.stdout).strip() or f"exit {r.exit_code}"
            kind = str(answer.get("error") or "failed").upper()
            raise BoxError("EXECUTION", f"SESSION_{kind}", f"toolrun session new: {why}")
        s = Session(self, answer["session"], bool(answer.get("tty", tty)))
        with self._sessions_lock:
            self._sessions[s.id] = s
        return s

    def _forget_session(self, s: Session):
        with self._sessions_lock:
            self._sessions.pop(s.id, None)

    def _close_session(self, s: Session):
        self._forget_session(s)
        r = self.exec(f"toolrun session close {shlex.quote(s.id)} --json", timeout=60)
        answer = _json_line(r.stdout)
        if answer.get("state") != "closed" and answer.get("error") != "not_found":
            raise BoxError("EXECUTION", "SESSION",
                           f"toolrun session close {s.id}: "
                           f"{answer.get('message') or r.stderr.strip() or r.stdout.strip()}")

    # ------------------------------------------------------------------
    # Files

    def call_tool(self, name: str, arguments: dict, yield_s: Optional[float] = None) -> dict:
        """Any tool of the box's `toolrun mcp` (docs/mcp.md): its
        structuredContent. A bash tool's `yield_s` is its timeout."""
        with self._pool.lease() as ch:
            if yield_s is None:
                return ch.call_tool(name, arguments, self.call_timeout)
            return ch.call_tool(name, dict(arguments, timeout=yield_s), _deadline(yield_s),
                                probe=True)

    def read_text(self, path: str) -> str:
        """A text file's whole content, through toolrun's path policy
        (read_file: relative to the workspace, never outside it), page by
        page within the output budget. Raises VALIDATION BINARY for a
        binary file and RESOURCE LINE_TOO_LONG when a line alone is over
        the budget (download() copies any file exactly)."""
        pieces = []
        offset = 1
        size = None
        with self._pool.lease() as ch:
            while True:
                sc = ch.call_tool("read_file", {"path": path, "offset": offset},
                                  self.call_timeout)
                size = sc.get("size")
                if sc.get("binary"):
                    raise BoxError("VALIDATION", "BINARY",
                                   f"{path}: {sc.get('text', 'a binary file')}; download() "
                                   "copies it byte for byte")
                total, first, last = sc["total_lines"], sc["first_line"], sc["last_line"]
                if total == 0 or last == 0:
                    break
                pieces += _unnumber(sc["text"], first, last, total, path)
                if last >= total:
                    break
                offset = last + 1
        text = "".join(pieces)
        if size is not None and len(text.encode("utf-8", "surrogatepass")) != size:
            raise BoxError("VALIDATION", "NOT_TEXT",
                           f"{path}: {size} bytes that are not all UTF-8 text; download() "
                           "copies it byte for byte")
        return text

    def write_text(self, path: str, text: str) -> int:
        """Create or replace a file atomically through toolrun's path
        policy (write_file); its directory must exist. Returns its size."""
        with self._pool.lease() as ch:
            sc = ch.call_tool("write_file", {"path": path, "content": text}, self.call_timeout)
        return int(sc.get("bytes", 0))

    def upload(self, local: str, remote: str, timeout: float = 300.0) -> None:
        """Copy a local file or tree into the box, byte for byte (tar run
        directly over the transport; remote relative to the workspace)."""
        transfer.upload(self.transport, self.root, local, remote, timeout)

    def download(self, remote: str, local: str, timeout: float = 300.0) -> None:
        """Copy a file or tree out of the box to `local`, byte for byte."""
        transfer.download(self.transport, self.root, remote, local, timeout)

    # ------------------------------------------------------------------
    # State and end

    def status(self) -> Status:
        """Whether toolrund in the box serves: `toolrun ping` through the
        channel (ok False, with the reason, when it or the box does not)."""
        try:
            r = self.exec("toolrun ping", timeout=30)
        except BoxError as e:
            return Status(False, str(e), self.connections, len(self._sessions))
        message = (r.stdout + r.stderr).strip()
        return Status(r.exit_code == 0, message, self.connections, len(self._sessions))

    def close(self) -> None:
        """Close this Box's sessions, then its channels (their end of
        input ends each `toolrun mcp`). The box itself runs on."""
        with self._sessions_lock:
            sessions = list(self._sessions.values())
        for s in sessions:
            try:
                s.close()
            except BoxError:
                pass
        self._pool.close()

    def remove(self) -> None:
        """close(), then remove the container (`docker rm -f`): for a box
        this object started."""
        self.close()
        engine = self._engine or getattr(self.transport, "engine", "docker")
        subprocess.run([engine, "rm", "-f", self.name], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=120)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<Box {self.name} root={self.root} connections={self.connections}>"


def _json_line(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            return v
    return {}


def _unnumber(text: str, first: int, last: int, total: int, path: str) -> list:
    """read_file's numbered lines ("%6d\\t" then the line) back to the
    lines themselves; a line cut by the budget is an error."""
    lines = []
    pos = 0
    for n in range(first, last + 1):
        prefix = f"{n:6d}\t"
        if not text.startswith(prefix, pos):
            raise BoxError("INTERNAL", errors.PROTOCOL, f"{path}: read_file's line {n} is not "
                                                         "where its number says")
        pos += len(prefix)
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end + 1
        line = text[pos:end]
        if not line.endswith("\n") and n < total:
            raise BoxError("RESOURCE", "LINE_TOO_LONG",
                           f"{path}: line {n} alone is over the output budget; download() "
                           "copies the file whole")
        lines.append(line)
        pos = end
    return lines


def _checkout_run_script() -> Optional[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    for up in (here, os.path.dirname(here), os.path.dirname(os.path.dirname(here)),
               os.path.dirname(os.path.dirname(os.path.dirname(here)))):
        candidate = os.path.join(up, "container", "run.sh")
        if os.path.isfile(candidate):
            return candidate
    return None
