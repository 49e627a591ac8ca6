"""The protocol layer and the client's own logic, against a stand-in
server (fake_server.py) and this machine's bash and tar: no box needed.

    cd clients/python && python3 -m unittest tests.test_protocol -v

The real box is tested by test_box.py (test/container/17-client-python.bats).
"""

import io
import os
import stat
import sys
import tarfile
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from toolrun import Box, BoxError, Channel, Command, Result, Transport  # noqa: E402
from toolrun import box as box_mod  # noqa: E402
from toolrun import transfer  # noqa: E402

FAKE = [sys.executable, os.path.join(HERE, "fake_server.py")]
# Bounds for a broken client, never claims about speed.
BOUND_S = 60


def channel(mode="normal", **kw):
    return Channel(FAKE + [mode], label="fake", **kw)


def call(ch, command, timeout=30, probe=False):
    return ch.call_tool("bash", {"command": command}, timeout, probe=probe)


def in_thread(fn):
    """Run fn on a thread, bounded: (result, exception)."""
    box = {}

    def run():
        try:
            box["r"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["e"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(BOUND_S)
    if t.is_alive():
        raise AssertionError(f"still waiting after {BOUND_S} s: the call hangs")
    return box.get("r"), box.get("e")


class ChannelTest(unittest.TestCase):
    def test_initialize_lists_the_tools(self):
        ch = channel()
        try:
            self.assertTrue(ch.alive)
            self.assertIn("bash", ch.tools)
            self.assertEqual(call(ch, "echo hi")["stdout"], "hi\n")
        finally:
            ch.close()
        self.assertFalse(ch.alive)
        self.assertIsNotNone(ch._proc.poll(), "the transport was not reaped")

    def test_answers_are_matched_by_id(self):
        ch = channel()
        done = []
        try:
            slow = threading.Thread(target=lambda: done.append(
                ("slow", call(ch, "#fake: sleep 5\necho slow")["stdout"])))
            slow.start()
            time.sleep(0.2)
            done.append(("fast", call(ch, "echo fast")["stdout"]))
            slow.join(BOUND_S)
        finally:
            ch.close()
        self.assertEqual(done, [("fast", "fast\n"), ("slow", "slow\n")])

    def test_a_deadline_ends_the_channel_and_reaps_the_transport(self):
        ch = channel()
        _, e = in_thread(lambda: call(ch, "#fake: sleep 120", timeout=1))
        self.assertIsInstance(e, BoxError)
        self.assertEqual((e.category, e.code), ("EXECUTION", "NO_ANSWER"))
        self.assertFalse(ch.alive)
        self.assertIsNotNone(ch._proc.poll())
        # Later calls fail at once, with the same reason.
        _, e2 = in_thread(lambda: call(ch, "true"))
        self.assertEqual(e2.code, "NO_ANSWER")

    def test_pings_find_a_server_that_stopped_answering(self):
        ch = channel(probe_every=0.2, probe_timeout=1.0)
        _, e = in_thread(lambda: call(ch, "#fake: hang", timeout=600, probe=True))
        self.assertIsInstance(e, BoxError)
        self.assertEqual(e.code, "NO_ANSWER")
        self.assertIn("stopped answering", e.message)
        self.assertIsNotNone(ch._proc.poll())

    def test_pings_answered_keep_a_long_call_going(self):
        ch = channel(probe_every=0.2, probe_timeout=1.0)
        try:
            r, e = in_thread(lambda: call(ch, "#fake: sleep 3\necho late", timeout=60,
                                          probe=True))
            self.assertIsNone(e)
            self.assertEqual(r["stdout"], "late\n")
        finally:
            ch.close()

    def test_the_transport_ending_fails_the_call_with_its_last_words(self):
        ch = channel()
        _, e = in_thread(lambda: call(ch, "#fake: die"))
        self.assertIsInstance(e, BoxError)
        self.assertEqual((e.category, e.code), ("EXECUTION", "CHANNEL_CLOSED"))
        self.assertIn("exited with status 3", e.message)
        self.assertIn("fake: the box went away", e.message)

    def test_a_line_that_is_not_json_ends_the_channel(self):
        ch = channel()
        _, e = in_thread(lambda: call(ch, "#fake: garbage"))
        self.assertEqual(e.code, "PROTOCOL")
        self.assertFalse(ch.alive)

    def test_a_refused_call_keeps_the_servers_category_and_code(self):
        ch = channel()
        try:
            _, e = in_thread(lambda: call(
                ch, "#fake: error VALIDATION OUTSIDE_ROOT: /etc/passwd: outside the root"))
            self.assertEqual((e.category, e.code), ("VALIDATION", "OUTSIDE_ROOT"))
            self.assertEqual(str(e), "VALIDATION OUTSIDE_ROOT: /etc/passwd: outside the root")
            _, e = in_thread(lambda: call(ch, "#fake: rpcerror"))
            self.assertEqual((e.category, e.code), ("SYNTAX", "BAD_ARGUMENT"))
            self.assertTrue(ch.alive, "a refused call must not end the channel")
        finally:
            ch.close()

    def test_a_tool_the_server_lacks_is_refused_before_sending(self):
        ch = channel()
        try:
            with self.assertRaises(BoxError) as cm:
                ch.call_tool("bash_kill", {}, 5)
            self.assertEqual(cm.exception.code, "UNSUPPORTED")
            self.assertTrue(ch.alive)
        finally:
            ch.close()

    def test_a_transport_that_fails_at_once(self):
        _, e = in_thread(lambda: channel("nostart"))
        self.assertEqual((e.category, e.code), ("EXECUTION", "START_FAILED"))
        self.assertIn("No such container: nobox", e.message)

    def test_a_server_that_never_answers_initialize(self):
        _, e = in_thread(lambda: channel("noinit", connect_timeout=0.5))
        self.assertEqual(e.code, "START_FAILED")

    def test_no_such_program(self):
        with self.assertRaises(BoxError) as cm:
            Channel(["/nonexistent/docker", "exec"], label="x")
        self.assertEqual(cm.exception.code, "START_FAILED")


class BoxOverFakeTest(unittest.TestCase):
    """Box.exec's script, run by this machine's bash through the fake."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        os.mkdir(os.path.join(self.root, "sub dir"))
        self.box = Box(Command(FAKE + ["normal"], label="fake"), root=self.root)

    def tearDown(self):
        self.box.close()

    def test_cwd_env_and_a_clean_session(self):
        r = self.box.exec("pwd; printf '%s|' \"$A\" \"$B\"", cwd="sub dir",
                          env={"A": "it's a \"value\"", "B": "$HOME `x`"})
        self.assertEqual(r.stdout, os.path.join(self.root, "sub dir") + "\n"
                         + "it's a \"value\"|$HOME `x`|")
        self.assertEqual(r.exit_code, 0)

    def test_the_command_is_parsed_alone(self):
        r = self.box.exec("echo one # a comment at the end")
        self.assertEqual(r.stdout, "one\n")
        r = self.box.exec("cat <<'EOF'\nhere ) doc\nEOF")
        self.assertEqual(r.stdout, "here ) doc\n")
        r = self.box.exec("exit 7")
        self.assertEqual(r.exit_code, 7)
        r = self.box.exec("if then")
        self.assertEqual(r.exit_code, 2)
        self.assertIn("syntax error", r.stderr)

    def test_stdin_is_dev_null(self):
        r = self.box.exec("cat; echo end")
        self.assertEqual((r.stdout, r.exit_code), ("end\n", 0))

    def test_a_signal_is_named_from_bashs_status(self):
        r = self.box.exec("kill -TERM $BASHPID")
        self.assertEqual((r.exit_code, r.signal), (143, "SIGTERM"))

    def test_bad_env_names_are_refused(self):
        with self.assertRaises(BoxError) as cm:
            self.box.exec("true", env={"A=B": "x"})
        self.assertEqual((cm.exception.category, cm.exception.code), ("SYNTAX", "BAD_ARGUMENT"))

    def test_output_of_a_running_command_is_joined(self):
        r = self.box.exec("#fake: running", timeout=None)
        self.assertEqual((r.stdout, r.state, r.exit_code), ("partial and the rest", "done", 0))

    def test_concurrent_calls_take_channels_of_their_own_up_to_the_limit(self):
        self.box.close()
        self.box = Box(Command(FAKE + ["normal"], label="fake"), root=self.root,
                       max_connections=2)
        results = {}

        def work(i):
            results[i] = self.box.exec(f"#fake: sleep 1\necho {i}").stdout

        threads = [threading.Thread(target=work, args=(i,)) for i in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(BOUND_S)
        self.assertEqual(results, {i: f"{i}\n" for i in range(5)})
        self.assertEqual(self.box._pool.peak, 2)
        self.assertEqual(self.box._pool.opened, 2)

    def test_waiting_for_a_connection_is_bounded(self):
        self.box.close()
        self.box = Box(Command(FAKE + ["normal"], label="fake"), root=self.root,
                       max_connections=1, wait_connection=0.5)
        t = threading.Thread(target=self.box.exec, args=("#fake: sleep 3\ntrue",))
        t.start()
        time.sleep(0.5)
        try:
            _, e = in_thread(lambda: self.box.exec("true"))
            self.assertEqual((e.category, e.code), ("RESOURCE", "NO_CONNECTION"))
        finally:
            t.join(BOUND_S)

    def test_a_dead_channel_is_replaced(self):
        with self.assertRaises(BoxError):
            self.box.exec("#fake: die")
        self.assertEqual(self.box.exec("echo again").stdout, "again\n")
        self.assertEqual(self.box._pool.opened, 2)


class ResultTest(unittest.TestCase):
    def test_replies_are_joined_and_the_last_one_ends(self):
        r = Result.from_replies([
            {"state": "running", "stdout": "a", "stderr": ""},
            {"state": "done", "stdout": "b\n", "stderr": "e", "exit_code": 130,
             "duration_ms": 2500, "stdout_dropped_lines": 3, "stdout_spill": "/tmp/x"}])
        self.assertEqual((r.stdout, r.stderr, r.exit_code, r.signal), ("ab\n", "e", 130, "SIGINT"))
        self.assertEqual(r.duration, 2.5)
        self.assertTrue(r.truncated)
        self.assertFalse(r.ok)
        self.assertEqual(r.output, "ab\ne")

    def test_numbered_lines_back_to_text(self):
        text = "     9\tnine\n    10\tten\twith tab\n    11\tlast"
        self.assertEqual(box_mod._unnumber(text, 9, 11, 11, "f"),
                         ["nine\n", "ten\twith tab\n", "last"])
        with self.assertRaises(BoxError) as cm:
            box_mod._unnumber("     1\tcut sho", 1, 1, 2, "f")
        self.assertEqual(cm.exception.code, "LINE_TOO_LONG")


class _Cat(Transport):
    """A transport whose 'tar -c' is a prepared archive."""

    def __init__(self, path):
        self.path = path

    def command(self, argv, stdin=True):
        return ["cat", self.path]


def tree_of(path):
    """{relative path: (kind, mode, bytes or link)} of a tree."""
    out = {}
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, path)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), f.read())
    return out


class TransferTest(unittest.TestCase):
    """upload and download with this machine's tar as the box's."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.local = Command([], label="here")

    def make_tree(self, top):
        os.makedirs(os.path.join(top, "a", "b"))
        with open(os.path.join(top, "a", "bin.dat"), "wb") as f:
            f.write(bytes(range(256)) * 100)
        with open(os.path.join(top, "a", "b", "run.sh"), "wb") as f:
            f.write(b"#!/bin/sh\necho hi\r\n\x00")
        os.chmod(os.path.join(top, "a", "b", "run.sh"), 0o750)
        open(os.path.join(top, "empty"), "wb").close()
        os.symlink("a/bin.dat", os.path.join(top, "link"))
        os.mkdir(os.path.join(top, "ro"))
        with open(os.path.join(top, "ro", "f"), "wb") as f:
            f.write(b"x")
        os.chmod(os.path.join(top, "ro"), 0o555)

    def test_a_tree_goes_and_comes_back_whole(self):
        src = os.path.join(self.tmp, "src")
        self.make_tree(src)
        remote = os.path.join(self.tmp, "box", "deep", "copy")
        transfer.upload(self.local, "/", src, remote, 60)
        back = os.path.join(self.tmp, "back")
        transfer.download(self.local, "/", remote, back, 60)
        self.assertEqual(tree_of(src), tree_of(remote))
        self.assertEqual(tree_of(src), tree_of(back))

    def test_download_names_the_copy(self):
        with self.assertRaises(BoxError) as cm:
            transfer.download(self.local, "/", "/etc/hostname", self.tmp, 60)
        self.assertEqual(cm.exception.code, "EXISTS")

    def test_a_missing_remote_says_what_tar_said(self):
        with self.assertRaises(BoxError) as cm:
            transfer.download(self.local, "/", os.path.join(self.tmp, "nothing"),
                              os.path.join(self.tmp, "x"), 60)
        self.assertEqual(cm.exception.code, "TRANSFER")
        self.assertIn("No such file or directory", cm.exception.message)

    def archive(self, *members):
        path = os.path.join(self.tmp, "evil.tar")
        with tarfile.open(path, "w") as tf:
            for info, data in members:
                tf.addfile(info, io.BytesIO(data) if data is not None else None)
        return path

    def test_members_that_leave_the_copy_are_refused(self):
        def reg(name, data=b"x"):
            i = tarfile.TarInfo(name)
            i.size = len(data)
            return i, data

        def sym(name, target):
            i = tarfile.TarInfo(name)
            i.type, i.linkname = tarfile.SYMTYPE, target
            return i, None

        dev = tarfile.TarInfo("top/dev")
        dev.type = tarfile.CHRTYPE
        for members in ([reg("top/../../escape")], [reg("/top/abs")], [reg("other/x")],
                        [sym("top/l", "/etc/passwd")], [sym("top/l", "../../x")],
                        [(dev, None)]):
            with self.subTest(members=[m[0].name for m in members]):
                path = self.archive(*members)
                dest = os.path.join(self.tmp, "dest")
                with self.assertRaises(BoxError) as cm:
                    transfer.download(_Cat(path), "/", "/x/top", dest, 60)
                self.assertEqual(cm.exception.category, "VALIDATION")
                self.assertFalse(os.path.lexists(dest))
                self.assertFalse(os.path.lexists(os.path.join(self.tmp, "escape")))


if __name__ == "__main__":
    unittest.main()
