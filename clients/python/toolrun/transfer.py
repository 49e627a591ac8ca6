"""upload and download: tar run directly in the box over the transport.

`tar` started by `docker exec` is a program run directly, the harness's,
not an agent command: toolrun passes its bytes and its status exactly
(README, "Using toolrun from an agent harness"). The archive is made and
read on this side by Python's tarfile, streamed: nothing is held whole in
memory, and no tar program is needed on the host.

Every run has a deadline: a watchdog kills the transport's process group
when it passes, so a `docker` that hangs ends the call with EXECUTION
NO_ANSWER instead of blocking it.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
from typing import Sequence

from . import errors
from .errors import BoxError


class _Run:
    """A transport command with a deadline, its process group killed at
    the deadline or on any error, and always reaped."""

    def __init__(self, argv: Sequence[str], timeout: float, what: str, **popen):
        self.what = what
        self.timeout = timeout
        self.expired = False
        try:
            self.proc = subprocess.Popen(list(argv), start_new_session=True,
                                         stderr=subprocess.PIPE, **popen)
        except OSError as e:
            raise BoxError("EXECUTION", errors.START_FAILED,
                           f"{what}: cannot run {argv[0]}: {e.strerror or e}") from None
        self.stderr = b""
        self._err = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err.start()
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _drain_stderr(self):
        try:
            self.stderr = self.proc.stderr.read()
        except (OSError, ValueError):
            pass

    def _expire(self):
        self.expired = True
        self.kill()

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def finish(self, error: BaseException = None) -> None:
        """Reap; raise a BoxError if the run failed, timed out or `error`."""
        if error is not None:
            self.kill()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                try:
                    f.close()
                except (OSError, ValueError):
                    pass
        try:
            status = self.proc.wait(timeout=max(self.timeout, 1))
        except subprocess.TimeoutExpired:
            self.kill()
            status = self.proc.wait()
        self._timer.cancel()
        self._err.join(timeout=5)
        self.proc.stderr.close()
        # tar's first complaint says what was wrong; its last line only
        # that something was.
        lines = [ln for ln in self.stderr.decode("utf-8", "replace").splitlines()
                 if ln.strip() and "Exiting with failure status" not in ln]
        last = lines[0] if lines else ""
        if self.expired:
            raise BoxError("EXECUTION", errors.NO_ANSWER,
                           f"{self.what}: not done within {self.timeout:g} s; stopped")
        if status != 0 or error is not None:
            why = last or (f"{type(error).__name__}: {error}" if error is not None else "")
            raise BoxError("EXECUTION", errors.TRANSFER,
                           f"{self.what}: tar failed (status {status})" + (f": {why}" if why else ""))


def _box_path(root: str, path: str) -> str:
    if not path:
        raise BoxError("SYNTAX", errors.BAD_ARGUMENT, "an empty path in the box")
    full = posixpath.normpath(posixpath.join(root, path))
    if full == "/":
        raise BoxError("VALIDATION", errors.BAD_ARGUMENT, f"{path}: the box's / itself")
    return full


def upload(transport, root: str, local: str, remote: str, timeout: float) -> None:
    """Copy a local file or directory tree to `remote` in the box (relative
    paths are under `root`), byte for byte, with its modes. The box's tar
    extracts it at / with the remote path as the member names, so missing
    parent directories are made; existing directories keep their own
    owner and mode (--no-overwrite-dir)."""
    if not os.path.lexists(local):
        raise BoxError("EXECUTION", "NOT_FOUND", f"{local}: no such file or directory here")
    target = _box_path(root, remote).lstrip("/")
    argv = transport.command(["tar", "-C", "/", "--no-overwrite-dir", "-xf", "-"], stdin=True)
    run = _Run(argv, timeout, f"upload {local} to {remote}", stdin=subprocess.PIPE,
               stdout=subprocess.DEVNULL)
    error = None
    try:
        with tarfile.open(fileobj=run.proc.stdin, mode="w|", format=tarfile.GNU_FORMAT) as tf:
            tf.add(local, arcname=target, recursive=True)
    except (OSError, tarfile.TarError, ValueError) as e:
        error = e
    run.finish(error)


# Members are checked by _check_member; where tarfile has extraction
# filters (3.12, and some 3.8 to 3.11 updates), say so, so that it neither
# warns nor filters again (its "data" filter would change modes).
_TRUSTED = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}


class _HostTar(tarfile.TarFile):
    """Extraction that keeps what this side's user makes: never chown."""

    def chown(self, *args, **kwargs):
        pass


def _check_member(m: tarfile.TarInfo, top: str) -> None:
    """Members must stay inside the one top-level name asked for: no
    absolute paths, no '..', no links out, no devices."""
    parts = m.name.split("/")
    if m.name.startswith("/") or ".." in parts or parts[0] != top:
        raise BoxError("VALIDATION", errors.TRANSFER, f"download: unsafe member {m.name!r}")
    if not (m.isreg() or m.isdir() or m.issym() or m.islnk()):
        raise BoxError("VALIDATION", errors.TRANSFER,
                       f"download: {m.name!r} is neither a file, a directory nor a link")
    if m.issym():
        dest = posixpath.normpath(posixpath.join(posixpath.dirname(m.name), m.linkname))
        if m.linkname.startswith("/") or dest.split("/")[0] != top:
            raise BoxError("VALIDATION", errors.TRANSFER,
                           f"download: the link {m.name!r} leads out ({m.linkname!r})")
    if m.islnk() and (m.linkname.startswith("/") or ".." in m.linkname.split("/")
                      or m.linkname.split("/")[0] != top):
        raise BoxError("VALIDATION", errors.TRANSFER,
                       f"download: the hard link {m.name!r} leads out ({m.linkname!r})")
    m.mode &= 0o777  # no set-id or sticky bits on this side


def download(transport, root: str, remote: str, local: str, timeout: float) -> None:
    """Copy a file or directory tree from the box to `local`, byte for
    byte. `local` names the copy: it must not exist, or be a file (then
    replaced, when `remote` is a file too). The tree is extracted beside
    `local` first and renamed into place once whole."""
    src = _box_path(root, remote)
    parent, base = posixpath.split(src)
    local = os.path.abspath(local)
    if os.path.isdir(local) and not os.path.islink(local):
        raise BoxError("VALIDATION", "EXISTS", f"{local}: a directory already; download names "
                                               "the copy, which must not be a directory")
    argv = transport.command(["tar", "-C", parent or "/", "-cf", "-", "--", base], stdin=False)
    staging = tempfile.mkdtemp(prefix=".toolrun-download-", dir=os.path.dirname(local))
    try:
        run = _Run(argv, timeout, f"download {remote}", stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE)
        error = None
        dirs = []
        try:
            with _HostTar.open(fileobj=run.proc.stdout, mode="r|") as tf:
                for m in tf:
                    _check_member(m, base)
                    # A directory's mode and time are set once its files are
                    # in (it may be read-only), as extractall does.
                    tf.extract(m, staging, set_attrs=not m.isdir(), **_TRUSTED)
                    if m.isdir():
                        dirs.append(m)
            # tarfile stops at the end-of-archive blocks; the rest of tar's
            # last record must still be read, or tar dies of SIGPIPE.
            while run.proc.stdout.read(1 << 16):
                pass
            for m in reversed(dirs):
                path = os.path.join(staging, m.name)
                os.chmod(path, m.mode)
                os.utime(path, (m.mtime, m.mtime))
        except BoxError as e:
            run.kill()
            try:
                run.finish()
            except BoxError:
                pass
            raise e
        except (OSError, tarfile.TarError, ValueError) as e:
            error = e
        run.finish(error)
        got = os.path.join(staging, base)
        if not os.path.lexists(got):
            raise BoxError("EXECUTION", errors.TRANSFER, f"download {remote}: tar sent nothing")
        os.replace(got, local)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
