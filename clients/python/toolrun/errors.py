"""Errors of the client: one class, toolrun's category, code and line.

Every failure the client reports is a BoxError whose str() is the line
toolrun itself writes, "CATEGORY CODE: message", with the categories of
docs/mcp.md: SYNTAX (bad arguments), VALIDATION (the path policy
refused), EXECUTION (it ran and failed, or the box or its channel went
away), RESOURCE (a limit), INTERNAL. The server's own refusals keep the
server's code; the client's own failures use the codes below.
"""

from __future__ import annotations

CATEGORIES = ("SYNTAX", "VALIDATION", "EXECUTION", "RESOURCE", "INTERNAL")

# Codes the client itself gives (the server's are its own: OUTSIDE_ROOT,
# NOT_FOUND, SESSION, TOOLRUND...).
CHANNEL_CLOSED = "CHANNEL_CLOSED"   # the transport ended: the box died, docker exited
NO_ANSWER = "NO_ANSWER"             # nothing came back within the call's deadline
START_FAILED = "START_FAILED"       # the transport or the box could not be started
PROTOCOL = "PROTOCOL"               # the server broke JSON-RPC, or answered with an error object
UNSUPPORTED = "UNSUPPORTED"         # the box's toolrun mcp lacks a tool this call needs
TRANSFER = "TRANSFER"               # tar over the transport failed
BAD_ARGUMENT = "BAD_ARGUMENT"


class BoxError(Exception):
    """A call that failed: `category`, `code` and a one-line `message`."""

    def __init__(self, category: str, code: str, message: str):
        self.category = category if category in CATEGORIES else "INTERNAL"
        self.code = code
        self.message = " ".join(str(message).split()) or "(no message)"
        super().__init__(f"{self.category} {self.code}: {self.message}")

    @classmethod
    def from_line(cls, line: str) -> "BoxError":
        """Parse toolrun's "CATEGORY CODE: message" (an isError result)."""
        head, sep, rest = line.partition(": ")
        words = head.split(" ")
        if sep and len(words) == 2 and words[0] in CATEGORIES:
            return cls(words[0], words[1], rest)
        return cls("INTERNAL", PROTOCOL, line)


class ChannelClosed(BoxError):
    """The channel to the box ended or was ended: no answer will come."""

    def __init__(self, message: str, code: str = CHANNEL_CLOSED):
        super().__init__("EXECUTION", code, message)
