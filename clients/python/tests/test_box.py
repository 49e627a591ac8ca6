"""The client against a real box (test/container/17-client-python.bats).

The bats file starts the box with container/run.sh and runs each test
here with:

    TOOLRUN_TEST_BOX     the running box (its /workspace a host directory)
    TOOLRUN_TEST_IMAGE   the image it runs, for the boxes tests start
    TOOLRUN_TEST_RUN     container/run.sh
    TOOLRUN_TEST_PREFIX  a name prefix for those boxes (removed by bats)

Without TOOLRUN_TEST_BOX every test here is skipped. Waits are bounded
generously (a bound for a broken client, never a claim about speed).
"""

import asyncio
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from toolrun import Box, BoxError  # noqa: E402

from tests.test_protocol import in_thread, tree_of  # noqa: E402

BOX = os.environ.get("TOOLRUN_TEST_BOX")
IMAGE = os.environ.get("TOOLRUN_TEST_IMAGE")
RUN = os.environ.get("TOOLRUN_TEST_RUN")
PREFIX = os.environ.get("TOOLRUN_TEST_PREFIX", "toolrun-client-test")
BOUND_S = 120
# The image's budget (container/toolrun.conf).
MAX_BYTES, MAX_LINES = 4000, 200


def needs_box(cls):
    return unittest.skipUnless(BOX, "TOOLRUN_TEST_BOX names no box")(cls)


def children():
    """Pids of this process's children (a zombie is one too)."""
    me = str(os.getpid())
    found = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found.add(int(d))
    return found


def wait_until(predicate, what, bound=BOUND_S):
    deadline = time.monotonic() + bound
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {bound} s: {what}")
        time.sleep(0.2)


class BoxCase(unittest.TestCase):
    box: Box

    @classmethod
    def setUpClass(cls):
        cls.box = Box.attach(BOX)
        # A directory of this test's own in the workspace.
        cls.dir = f"t-{cls.__name__}-{uuid.uuid4().hex[:6]}"
        r = cls.box.exec(f"mkdir -p {cls.dir}")
        assert r.exit_code == 0, r

    @classmethod
    def tearDownClass(cls):
        cls.box.close()


# ----------------------------------------------------------------------
# An agent's work, scripted

PROJECT = {
    "README.md": "calc: sums the numbers it reads, one per line.\n\n"
                 "Build: ./build.sh (makes bin/sum). Test: ./test.sh.\n",
    "src/sum.awk": "# Sum the numbers on stdin, one per line.\n"
                   "NR > 1 { total += $1 }\n"
                   "END { print total + 0 }\n",
    "build.sh": "#!/bin/bash\nset -e\nmkdir -p bin\n"
                "printf '#!/bin/sh\\nexec awk -f %s/src/sum.awk \"$@\"\\n' \"$PWD\" >bin/sum\n"
                "chmod +x bin/sum\necho built bin/sum\n",
    "test.sh": "#!/bin/bash\n# One line per case, then a summary; status 1 if any failed.\n"
               "cases=${CASES:-250} fail=0\n"
               "for n in $(seq 1 $cases); do\n"
               "  want=$((n * (n + 1) / 2)) got=$(seq 1 $n | ./bin/sum)\n"
               "  if [ \"$got\" = \"$want\" ]; then echo \"ok $n\"\n"
               "  else echo \"FAIL $n: want $want, got $got\"; fail=$((fail + 1)); fi\n"
               "done\n"
               "echo \"summary: $((cases - fail)) passed, $fail failed\"\n"
               "[ $fail -eq 0 ]\n",
}


@needs_box
class AgentTest(BoxCase):
    def test_an_agent_explores_builds_and_tests_a_project(self):
        box, top = self.box, f"{self.dir}/calc"
        # The harness uploads the task.
        with tempfile.TemporaryDirectory() as src:
            for rel, text in PROJECT.items():
                path = os.path.join(src, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
                if rel.endswith(".sh"):
                    os.chmod(path, 0o755)
            box.upload(src, top)

        # Explore: list, read, search.
        r = box.exec("ls -R", cwd=top)
        self.assertEqual(r.exit_code, 0)
        for name in ("README.md", "build.sh", "test.sh", "sum.awk"):
            self.assertIn(name, r.stdout)
        readme = box.read_text(f"{top}/README.md")
        self.assertEqual(readme, PROJECT["README.md"])
        hits = box.call_tool("search", {"query": "sum numbers stdin"})["hits"]
        self.assertIn(f"{top}/src/sum.awk", [h["path"] for h in hits])

        # Build and test in a session of its own: the cd and the variable last.
        with box.session(cwd=top) as s:
            r = s.run("export CASES=250 && ./build.sh && cd bin && ls")
            self.assertEqual((r.state, r.exit_code), ("done", 0), r)
            self.assertIn("built bin/sum", r.stdout)
            r = s.run("cd .. && ./test.sh", yield_s=2)
            replies = [r]
            while r.state in ("running", "waiting_input"):
                r = s.read(yield_s=30)
                replies.append(r)
            self.assertEqual((r.state, r.exit_code), ("done", 1))
            output = "".join(x.stdout for x in replies)
            # Over the budget: the head, one marker, the tail with the summary.
            self.assertGreater(r.stdout_dropped_lines, 0)
            self.assertTrue(r.stdout_spill)
            self.assertIn(f"the whole stdout is in {r.stdout_spill}", output)
            self.assertIn("summary: 0 passed, 250 failed", output)
            self.assertIn("FAIL 1: want 1, got 0", output)

        # The whole log, from the spill file.
        with tempfile.TemporaryDirectory() as d:
            box.download(r.stdout_spill, os.path.join(d, "log"))
            with open(os.path.join(d, "log")) as f:
                log = f.read().splitlines()
        self.assertEqual(len(log), 251)
        self.assertEqual(sum(line.startswith("FAIL") for line in log), 250)

        # Read the source, fix it, build and test again.
        source = box.read_text(f"{top}/src/sum.awk")
        self.assertIn("NR > 1 ", source)
        box.call_tool("edit_file", {"path": f"{top}/src/sum.awk", "old_string": "NR > 1 ",
                                    "new_string": ""})
        r = box.exec("./build.sh >/dev/null && ./test.sh", cwd=top, timeout=600)
        self.assertEqual(r.exit_code, 0, r.stdout[-300:])
        self.assertTrue(r.stdout.rstrip().endswith("summary: 250 passed, 0 failed"))

        # The harness takes the result: byte for byte what the box has.
        with tempfile.TemporaryDirectory() as d:
            box.download(top, os.path.join(d, "calc"))
            with open(os.path.join(d, "calc", "src", "sum.awk")) as f:
                self.assertEqual(f.read(), PROJECT["src/sum.awk"].replace("NR > 1 ", ""))
            self.assertTrue(os.access(os.path.join(d, "calc", "bin", "sum"), os.X_OK))


# ----------------------------------------------------------------------
# Output over the budget

@needs_box
class OutputTest(BoxCase):
    def check_cut(self, text, dropped_lines, spill, stream):
        lines = text.splitlines()
        markers = [ln for ln in lines if ln.startswith("...[toolrun cut ")]
        self.assertEqual(len(markers), 1, text[:500])
        self.assertIn(f"of {stream} here", markers[0])
        self.assertTrue(markers[0].endswith(f"the whole {stream} is in {spill}]"))
        self.assertEqual(len(lines), MAX_LINES + 1)
        self.assertLessEqual(len(text.encode()), MAX_BYTES + len(markers[0]) + 1)
        self.assertGreater(dropped_lines, 0)

    def spill_bytes(self, path):
        with tempfile.TemporaryDirectory() as d:
            self.box.download(path, os.path.join(d, "spill"))
            with open(os.path.join(d, "spill"), "rb") as f:
                return f.read()

    def test_stdout_over_the_budget_is_cut_and_kept_whole(self):
        whole = "".join(f"{i}\n" for i in range(1, 100001)).encode()
        r = self.box.exec("seq 1 100000")
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout_dropped_lines, 100000 - MAX_LINES)
        self.assertEqual(r.stdout_dropped_bytes, len(whole) - len("".join(
            ln + "\n" for ln in r.stdout.splitlines() if not ln.startswith("...[")).encode()))
        self.assertTrue(r.truncated)
        self.check_cut(r.stdout, r.stdout_dropped_lines, r.stdout_spill, "stdout")
        self.assertTrue(r.stdout.startswith("1\n2\n"))
        self.assertTrue(r.stdout.endswith("99999\n100000\n"))
        self.assertIsNone(r.stderr_spill)
        self.assertEqual(self.spill_bytes(r.stdout_spill), whole)

    def test_stderr_is_cut_apart_and_a_session_too(self):
        r = self.box.exec("seq 1 30000 >&2; echo out")
        self.assertEqual((r.stdout, r.stdout_spill, r.stdout_dropped_lines), ("out\n", None, 0))
        self.check_cut(r.stderr, r.stderr_dropped_lines, r.stderr_spill, "stderr")
        self.assertEqual(self.spill_bytes(r.stderr_spill),
                         "".join(f"{i}\n" for i in range(1, 30001)).encode())
        with self.box.session() as s:
            r = s.run("seq 1 100000")
            self.assertEqual((r.state, r.exit_code), ("done", 0))
            self.check_cut(r.stdout, r.stdout_dropped_lines, r.stdout_spill, "stdout")


# ----------------------------------------------------------------------
# Sessions

@needs_box
class SessionTest(BoxCase):
    def test_state_lasts_between_commands_and_exec_leaves_none(self):
        with self.box.session(cwd=self.dir, env={"GREETING": "hi there"}) as s:
            self.assertEqual(s.run("echo \"$GREETING\"; pwd").stdout,
                             f"hi there\n/workspace/{self.dir}\n")
            s.run("cd /tmp && export MODE=fast && f() { echo fn; }")
            r = s.run("pwd; echo $MODE; f")
            self.assertEqual(r.stdout, "/tmp\nfast\nfn\n")
            self.assertEqual(s.state, "done")
        # exec: a subshell of a session of the channel's, state of none.
        self.box.exec("cd /tmp; export LEAK=1")
        r = self.box.exec("pwd; echo \"[$LEAK]\"")
        self.assertEqual(r.stdout, "/workspace\n[]\n")

    def test_waiting_input_then_write(self):
        with self.box.session() as s:
            r = s.run("read -r a; read -r b; echo \"$a+$b\"", yield_s=30)
            self.assertEqual(r.state, "waiting_input")
            r = s.write("1\n", yield_s=30)
            self.assertEqual(r.state, "waiting_input")
            r = s.write("2\n", yield_s=30)
            self.assertEqual((r.state, r.exit_code, r.stdout), ("done", 0, "1+2\n"))
            # End of input, for a command that reads to the end.
            r = s.run("wc -l", yield_s=30)
            self.assertEqual(r.state, "waiting_input")
            r = s.write("x\ny\n", eof=True, yield_s=30)
            self.assertEqual((r.state, r.stdout.strip()), ("done", "2"))

    def test_a_terminal_session(self):
        with self.box.session(tty=True) as s:
            self.assertTrue(s.tty)
            r = s.run("[ -t 0 ] && echo tty; read -r x; echo \"got $x\"", yield_s=30)
            self.assertEqual(r.state, "waiting_input")
            self.assertIn("tty", r.stdout)
            r = s.write("hello\n", yield_s=30)
            self.assertEqual(r.state, "done")
            self.assertIn("got hello\r\n", r.stdout)

    def test_interrupt(self):
        with self.box.session() as s:
            r = s.run("sleep 300", yield_s=0.5)
            self.assertEqual(r.state, "running")
            r = s.interrupt(yield_s=30)
            self.assertEqual((r.state, r.exit_code, r.signal), ("done", 130, "SIGINT"))
            self.assertEqual(s.run("echo alive").stdout, "alive\n")

    def test_kill_a_command_that_ignores_ctrl_c(self):
        with self.box.session() as s:
            r = s.run("(trap '' INT; exec sleep 301)", yield_s=0.5)
            self.assertEqual(r.state, "running")
            r = s.interrupt(yield_s=2)
            self.assertEqual(r.state, "running", "SIGINT was ignored: it runs on")
            r = s.kill(yield_s=30)
            self.assertEqual((r.state, r.exit_code, r.signal), ("done", 137, "SIGKILL"))
            self.assertEqual(s.run("echo alive").stdout, "alive\n")
            # Another signal, by name.
            r = s.run("(trap '' INT; exec sleep 305)", yield_s=0.5)
            self.assertEqual(r.state, "running")
            r = s.kill(yield_s=30, signal="TERM")
            self.assertEqual((r.state, r.exit_code, r.signal), ("done", 143, "SIGTERM"))

    def test_exec_past_its_timeout_kills_everything_it_started(self):
        r = self.box.exec("(trap '' INT; exec sleep 302) & (trap '' INT; exec sleep 303)",
                          timeout=2)
        self.assertTrue(r.timed_out)
        self.assertFalse(r.ok)

        def gone():
            ps = self.box.exec("ps -eo args").stdout
            return "sleep 302" not in ps and "sleep 303" not in ps

        wait_until(gone, "the timed-out command's processes end")
        self.assertEqual(self.box.exec("echo next").stdout, "next\n")

    def test_a_closed_session_is_refused_and_gone(self):
        s = self.box.session()
        sid = s.id
        s.close()
        with self.assertRaises(BoxError):
            s.run("true")
        listed = self.box.exec("toolrun session list --json").stdout
        self.assertNotIn(sid, listed)
        # An id toolrund does not know: its refusal, as a BoxError.
        from toolrun import Session
        with self.assertRaises(BoxError) as cm:
            Session(self.box, "00000000", False).run("true")
        self.assertEqual((cm.exception.category, cm.exception.code), ("EXECUTION", "SESSION"))


# ----------------------------------------------------------------------
# Concurrency

@needs_box
class ConcurrencyTest(BoxCase):
    def test_twenty_concurrent_calls_from_threads_and_asyncio(self):
        results, errors = {}, []

        def work(i):
            try:
                r = self.box.exec(f"sleep 0.3; echo {i}; pwd", cwd=self.dir)
                results[i] = (r.exit_code, r.stdout)
            except BoxError as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(BOUND_S)
        self.assertEqual(errors, [])
        self.assertEqual(results, {i: (0, f"{i}\n/workspace/{self.dir}\n") for i in range(20)})
        self.assertLessEqual(self.box._pool.peak, 8)

        async def many():
            return await asyncio.gather(*[asyncio.to_thread(self.box.exec, f"echo {i}")
                                          for i in range(20)])

        got = asyncio.run(many())
        self.assertEqual([r.stdout for r in got], [f"{i}\n" for i in range(20)])

    def test_calls_run_side_by_side(self):
        # Each command waits until all four have started: they can end
        # only if the client ran them at once (one at a time, the first
        # would give up after its 60 s and say so).
        n = 4
        d = f"{self.dir}/barrier"
        self.box.exec(f"mkdir -p {d}")
        script = (f"touch {d}/$ID; for i in $(seq 600); do "
                  f"[ $(ls {d} | wc -l) -ge {n} ] && exit 0; sleep 0.1; done; exit 9")
        with Box.attach(BOX, max_connections=n) as box:
            out = {}
            threads = [threading.Thread(target=lambda i=i: out.__setitem__(
                i, box.exec(script, env={"ID": str(i)}, timeout=120).exit_code))
                for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(BOUND_S)
            self.assertEqual(out, {i: 0 for i in range(n)})
            self.assertEqual(box._pool.peak, n)


# ----------------------------------------------------------------------
# Files

def make_tree(top):
    rng = random.Random(26)
    os.makedirs(os.path.join(top, "bin", "nested deeper"))
    os.makedirs(os.path.join(top, "empty dir"))
    files = {
        "bin/random.bin": bytes(rng.getrandbits(8) for _ in range(300_000)),
        "bin/nuls.dat": b"\x00" * 5000 + b"\xff\xfe" + b"\x00" * 10,
        "bin/nested deeper/crlf.txt": b"a\r\nb\r\n\r\nno end",
        "big.txt": b"".join(b"line %d of text\n" % i for i in range(20000)),
        "empty": b"",
        "üñí cødé.txt": "ünïcödé ✓\n".encode(),
        "run.sh": b"#!/bin/sh\necho ran\n",
    }
    for rel, data in files.items():
        with open(os.path.join(top, rel), "wb") as f:
            f.write(data)
    os.chmod(os.path.join(top, "run.sh"), 0o755)
    os.symlink("bin/random.bin", os.path.join(top, "link"))
    return files


@needs_box
class FilesTest(BoxCase):
    def test_a_binary_tree_uploaded_and_downloaded_byte_for_byte(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src")
            files = make_tree(src)
            self.box.upload(src, f"{self.dir}/tree")
            # The box has the same bytes (its own sha256sum, run directly).
            for rel, data in files.items():
                r = subprocess.run(["docker", "exec", "-u", "1000", BOX, "sha256sum",
                                    f"/workspace/{self.dir}/tree/{rel}"],
                                   capture_output=True, timeout=BOUND_S)
                self.assertEqual(r.stdout.split()[0].decode(), hashlib.sha256(data).hexdigest(),
                                 rel)
            r = self.box.exec("./run.sh && readlink link", cwd=f"{self.dir}/tree")
            self.assertEqual(r.stdout, "ran\nbin/random.bin\n")
            back = os.path.join(d, "back")
            self.box.download(f"{self.dir}/tree", back)
            self.assertEqual(tree_of(src), tree_of(back))
            # One file each way, to a path whose directories are new.
            self.box.upload(os.path.join(src, "bin", "random.bin"), f"{self.dir}/new/dir/r.bin")
            self.box.download(f"/workspace/{self.dir}/new/dir/r.bin", os.path.join(d, "r.bin"))
            with open(os.path.join(d, "r.bin"), "rb") as f:
                self.assertEqual(f.read(), files["bin/random.bin"])

    def test_text_through_the_path_policy(self):
        text = "".join(f"{i}\tline ü {i}\n" for i in range(1, 1001)) + "no newline at the end"
        path = f"{self.dir}/text.txt"
        self.assertEqual(self.box.write_text(path, text), len(text.encode()))
        self.assertEqual(self.box.read_text(path), text)
        with self.assertRaises(BoxError) as cm:
            self.box.read_text("/etc/passwd")
        self.assertEqual((cm.exception.category, cm.exception.code), ("VALIDATION", "OUTSIDE_ROOT"))
        with self.assertRaises(BoxError) as cm:
            self.box.write_text("../escape.txt", "x")
        self.assertEqual(cm.exception.category, "VALIDATION")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "b.bin"), "wb") as f:
                f.write(b"\x00\x01\x02" * 100)
            self.box.upload(os.path.join(d, "b.bin"), f"{self.dir}/b.bin")
        with self.assertRaises(BoxError) as cm:
            self.box.read_text(f"{self.dir}/b.bin")
        self.assertEqual((cm.exception.category, cm.exception.code), ("VALIDATION", "BINARY"))


# ----------------------------------------------------------------------
# Failures

@needs_box
class FailureTest(BoxCase):
    def test_status(self):
        st = self.box.status()
        self.assertTrue(st.ok, st)
        self.assertIn("serving", st.message)

    def test_no_such_box(self):
        before = children()
        _, e = in_thread(lambda: Box.attach(f"{PREFIX}-no-such-box"))
        self.assertIsInstance(e, BoxError)
        self.assertEqual((e.category, e.code), ("EXECUTION", "START_FAILED"))
        self.assertIn("No such container", e.message)
        self.assertLessEqual(children(), before)

    @unittest.skipUnless(IMAGE and RUN, "TOOLRUN_TEST_IMAGE and TOOLRUN_TEST_RUN unset")
    def test_the_box_killed_mid_call(self):
        before = children()
        ws = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, ws, True)
        os.chmod(ws, 0o777)
        name = f"{PREFIX}-victim"
        box = Box.start(image=IMAGE, workspace=ws, name=name, run_script=RUN, replace=True)
        try:
            # run.sh's hardening, as it starts every box.
            inspect = subprocess.run(
                ["docker", "inspect", "--format",
                 "{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.NetworkMode}} "
                 "{{.HostConfig.CapDrop}}", name], capture_output=True, text=True)
            self.assertEqual(inspect.stdout.split(), ["true", "none", "[ALL]"])
            transports = {ch.pid for ch in box._pool._idle}
            s = box.session()
            r = s.run("sleep 300", yield_s=0.5)
            self.assertEqual(r.state, "running")
            killer = threading.Timer(1.0, subprocess.run, args=(["docker", "kill", name],),
                                     kwargs={"capture_output": True})
            killer.start()
            _, e = in_thread(lambda: s.read(yield_s=600))
            killer.join()
            self.assertIsInstance(e, BoxError)
            self.assertEqual((e.category, e.code), ("EXECUTION", "CHANNEL_CLOSED"))
            # Every transport the client started is gone and reaped.
            for pid in transports:
                self.assertFalse(os.path.exists(f"/proc/{pid}"), pid)
            st = box.status()
            self.assertFalse(st.ok)
            self.assertIn("START_FAILED", st.message)
        finally:
            box.remove()
        self.assertLessEqual(children(), before)

    def test_a_transport_that_hangs(self):
        before = children()
        box = Box.attach(BOX, probe_every=1, probe_timeout=3)
        try:
            s = box.session()
            r = s.run("sleep 304", yield_s=0.5)
            self.assertEqual(r.state, "running")
            (ch,) = box._pool._idle
            os.kill(ch.pid, signal.SIGSTOP)  # docker exec, frozen
            _, e = in_thread(lambda: s.read(yield_s=600))
            self.assertIsInstance(e, BoxError)
            self.assertEqual((e.category, e.code), ("EXECUTION", "NO_ANSWER"))
            self.assertFalse(os.path.exists(f"/proc/{ch.pid}"))
            # The box itself is fine: a new channel, and the session ends.
            s.interrupt(yield_s=30)
            s.close()
        finally:
            box.close()
        self.assertLessEqual(children(), before)


if __name__ == "__main__":
    unittest.main()
