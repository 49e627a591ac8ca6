"""How the client reaches a box: the command that runs a program in it.

A transport turns the argv of a program to run in the box into the argv
of a host command that runs it with its stdin, stdout and stderr passed
through: `docker exec -i BOX PROGRAM...`. The client runs two kinds of
program this way, both directly (never a shell command string, so that
toolrun passes their bytes exactly: README, "Using toolrun from an agent
harness"): `toolrun mcp`, the long-lived channel that carries every call,
and `tar`, for upload and download.
"""

from __future__ import annotations

from typing import Optional, Sequence


class Transport:
    """Base class: `command(argv, stdin)` gives the host argv."""

    #: A name for messages: the box, the pod.
    label = "box"

    def command(self, argv: Sequence[str], stdin: bool = True) -> list:
        raise NotImplementedError


class Docker(Transport):
    """`docker exec [-i] [-u USER] [-e NAME=VALUE]... CONTAINER ARGV...`.

    `engine` is the client program: "docker", or "podman", whose `exec`
    takes the same flags.
    """

    def __init__(self, container: str, user: Optional[str] = None, engine: str = "docker",
                 env: Optional[dict] = None):
        self.container = container
        self.user = user
        self.engine = engine
        self.env = dict(env or {})
        self.label = container

    def command(self, argv, stdin=True):
        cmd = [self.engine, "exec"]
        if stdin:
            cmd.append("-i")
        if self.user:
            cmd += ["-u", self.user]
        for name, value in self.env.items():
            cmd += ["-e", f"{name}={value}"]
        return cmd + [self.container] + list(argv)

    def __repr__(self):
        return f"{type(self).__name__}({self.container!r}, user={self.user!r})"


class Podman(Docker):
    """`podman exec`, which takes docker's flags."""

    def __init__(self, container: str, user: Optional[str] = None, engine: str = "podman",
                 env: Optional[dict] = None):
        super().__init__(container, user=user, engine=engine, env=env)


class Kubectl(Transport):
    """`kubectl [--context C] [-n NS] exec [-i] POD [-c CONTAINER] -- ARGV...`.

    kubectl exec cannot choose the user: the program runs as the
    container's (its securityContext's runAsUser).
    """

    def __init__(self, pod: str, container: Optional[str] = None,
                 namespace: Optional[str] = None, context: Optional[str] = None,
                 kubectl: str = "kubectl"):
        self.pod = pod
        self.container = container
        self.namespace = namespace
        self.context = context
        self.kubectl = kubectl
        self.label = pod

    def command(self, argv, stdin=True):
        cmd = [self.kubectl]
        if self.context:
            cmd += ["--context", self.context]
        if self.namespace:
            cmd += ["-n", self.namespace]
        cmd.append("exec")
        if stdin:
            cmd.append("-i")
        cmd.append(self.pod)
        if self.container:
            cmd += ["-c", self.container]
        return cmd + ["--"] + list(argv)

    def __repr__(self):
        return f"Kubectl({self.pod!r}, container={self.container!r})"


class Command(Transport):
    """Any prefix that runs ARGV in the box with stdio passed through, e.g.
    `["ssh", "host", "docker", "exec", "-i", "box"]`. The prefix must pass
    stdin through whether or not the call writes to it."""

    def __init__(self, prefix: Sequence[str], label: str = "box"):
        self.prefix = list(prefix)
        self.label = label

    def command(self, argv, stdin=True):
        return self.prefix + list(argv)

    def __repr__(self):
        return f"Command({self.prefix!r})"
