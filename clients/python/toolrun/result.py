"""What a command gave back, with what toolrun knows about it."""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass, field
from typing import Optional


def _signal_name(number: int) -> Optional[str]:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return None


@dataclass
class Result:
    """A command's output and end, as toolrun's session reports them
    (docs/sessions.md, the `--json` answer).

    `stdout` and `stderr` are what reaches the model: within the budget
    (4000 bytes and 200 lines a stream in the image), with one marker line
    where toolrun cut, and the whole stream in `stdout_spill` /
    `stderr_spill` (a path in the box) when it did. The `*_dropped_*`
    fields say how much the cut left out.

    `state` is "done" when the command finished, "running" or
    "waiting_input" while it goes on (a session's call returned at its
    yield), "closed" when the session ended. `exit_code` is bash's `$?`
    (None while the command runs); `signal` names the signal that ended
    it: the one toolrun reports, or N for bash's status 128+N, as bash
    itself reads it (a program that calls exit(130) looks the same).
    `timed_out` is True when `Box.exec` killed the command at its
    timeout. `duration` is the command's time in seconds, as toolrund
    measured it once it is done, else the client's time so far.
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    timed_out: bool = False
    state: str = "done"
    duration: float = 0.0
    stdout_dropped_bytes: int = 0
    stdout_dropped_lines: int = 0
    stderr_dropped_bytes: int = 0
    stderr_dropped_lines: int = 0
    stdout_spill: Optional[str] = None
    stderr_spill: Optional[str] = None
    session: Optional[str] = None
    command_number: Optional[int] = None
    message: Optional[str] = None
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """Finished with status 0, not timed out."""
        return self.state == "done" and self.exit_code == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        """toolrun cut stdout or stderr (the whole is in the spill file)."""
        return bool(self.stdout_dropped_bytes or self.stderr_dropped_bytes
                    or self.stdout_spill or self.stderr_spill)

    @property
    def output(self) -> str:
        """stdout, then stderr: for frameworks that want one string."""
        if self.stdout and self.stderr and not self.stdout.endswith("\n"):
            return self.stdout + "\n" + self.stderr
        return self.stdout + self.stderr

    @classmethod
    def from_replies(cls, replies, timed_out: bool = False, elapsed: float = 0.0) -> "Result":
        """One Result from the replies of one command: their output joined
        (each reply carries what came since the one before), the end and
        the counters from the last."""
        last = replies[-1]
        code = last.get("exit_code")
        sig = last.get("signal")
        if sig is None and isinstance(code, int) and 128 < code < 128 + 65:
            sig = _signal_name(code - 128)
        ms = last.get("duration_ms")
        return cls(
            stdout="".join(r.get("stdout") or "" for r in replies),
            stderr="".join(r.get("stderr") or "" for r in replies),
            exit_code=code,
            signal=sig,
            timed_out=timed_out,
            state=last.get("state", "done"),
            duration=ms / 1000.0 if isinstance(ms, (int, float)) else elapsed,
            stdout_dropped_bytes=last.get("stdout_dropped_bytes") or 0,
            stdout_dropped_lines=last.get("stdout_dropped_lines") or 0,
            stderr_dropped_bytes=last.get("stderr_dropped_bytes") or 0,
            stderr_dropped_lines=last.get("stderr_dropped_lines") or 0,
            stdout_spill=last.get("stdout_spill"),
            stderr_spill=last.get("stderr_spill"),
            session=last.get("session"),
            command_number=last.get("command_number"),
            message=last.get("message"),
            raw=last,
        )


@dataclass
class Status:
    """`Box.status()`: whether toolrund in the box serves (`toolrun ping`)."""

    ok: bool
    message: str
    connections: int = 0
    sessions: int = 0
