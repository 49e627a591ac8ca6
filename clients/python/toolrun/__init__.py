"""toolrun's host-side client: drive a toolrun box from Python.

    from toolrun import Box
    with Box.attach("box") as box:
        r = box.exec("make test", timeout=600)
        print(r.exit_code, r.stdout, r.stdout_spill)

Standard library only; Python 3.9 or later. README.md beside this
package says how it works and what each call returns.
"""

from .box import Box, Session
from .errors import BoxError, ChannelClosed
from .mcp import Channel
from .result import Result, Status
from .transport import Command, Docker, Kubectl, Podman, Transport

__version__ = "0.1.0"
__all__ = ["Box", "Session", "Result", "Status", "BoxError", "ChannelClosed", "Channel",
           "Transport", "Docker", "Podman", "Kubectl", "Command", "__version__"]
