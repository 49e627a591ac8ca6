#!/usr/bin/env bats
# The host-side Python client (clients/python) against a real box: each
# test runs one test of clients/python/tests/test_box.py with Debian's
# python3 (unittest, the standard library's), the box started by
# container/run.sh; the protocol layer's own tests against a stand-in
# server; and the package installed with pip, offline.

load helpers

CLIENT="$CT_SRC/clients/python"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || echo python3)

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

# unittest NAME...: run tests of clients/python/tests; every one must run
# and pass (a skip fails here: the box is there).
unittest_ok() {
	run --separate-stderr env -C "$CLIENT" PYTHONDONTWRITEBYTECODE=1 \
		TOOLRUN_TEST_BOX="$CT_BOX" TOOLRUN_TEST_IMAGE="$CT_IMAGE" \
		TOOLRUN_TEST_RUN="$CT_RUN" TOOLRUN_TEST_PREFIX="$CT_PREFIX" \
		timeout 1200 "$PY" -m unittest -v "$@"
	printf '%s\n' "$output" "$stderr"
	[ "$status" -eq 0 ]
	[[ $stderr == *$'\nOK'* ]]
	[[ $stderr != *skipped* ]]
}

box_test() { unittest_ok "tests.test_box.$1"; }

@test "17-client-python: the protocol layer against a stand-in server, bash and tar" {
	unittest_ok tests.test_protocol
}
@test "17-client-python: a scripted agent explores, builds and tests a project" {
	box_test AgentTest.test_an_agent_explores_builds_and_tests_a_project
}
@test "17-client-python: stdout over the budget: cut fields, the marker, the spill file read back" {
	box_test OutputTest.test_stdout_over_the_budget_is_cut_and_kept_whole
}
@test "17-client-python: stderr cut apart from stdout, and in a session" {
	box_test OutputTest.test_stderr_is_cut_apart_and_a_session_too
}
@test "17-client-python: a session keeps its state; exec leaves none" {
	box_test SessionTest.test_state_lasts_between_commands_and_exec_leaves_none
}
@test "17-client-python: waiting_input, then write, then end of input" {
	box_test SessionTest.test_waiting_input_then_write
}
@test "17-client-python: a terminal session" {
	box_test SessionTest.test_a_terminal_session
}
@test "17-client-python: interrupt" {
	box_test SessionTest.test_interrupt
}
@test "17-client-python: kill a command that ignores Ctrl-C (bash_kill)" {
	box_test SessionTest.test_kill_a_command_that_ignores_ctrl_c
}
@test "17-client-python: exec past its timeout kills all it started" {
	box_test SessionTest.test_exec_past_its_timeout_kills_everything_it_started
}
@test "17-client-python: a closed or unknown session is refused" {
	box_test SessionTest.test_a_closed_session_is_refused_and_gone
}
@test "17-client-python: 20 concurrent calls from threads and from asyncio" {
	box_test ConcurrencyTest.test_twenty_concurrent_calls_from_threads_and_asyncio
}
@test "17-client-python: concurrent calls run side by side" {
	box_test ConcurrencyTest.test_calls_run_side_by_side
}
@test "17-client-python: a binary tree uploaded and downloaded byte for byte" {
	box_test FilesTest.test_a_binary_tree_uploaded_and_downloaded_byte_for_byte
}
@test "17-client-python: read_text and write_text through the path policy" {
	box_test FilesTest.test_text_through_the_path_policy
}
@test "17-client-python: status" {
	box_test FailureTest.test_status
}
@test "17-client-python: no such box: START_FAILED, nothing left running" {
	box_test FailureTest.test_no_such_box
}
@test "17-client-python: Box.start with run.sh; the box killed mid-call: an exception, no process left" {
	box_test FailureTest.test_the_box_killed_mid_call
}
@test "17-client-python: a transport that hangs: NO_ANSWER, the transport killed and reaped" {
	box_test FailureTest.test_a_transport_that_hangs
}

# The README's install, offline: a venv that sees Debian's setuptools and
# wheel, and pip without build isolation (which would fetch setuptools).
@test "17-client-python: pip install --no-build-isolation, then the installed package drives the box" {
	"$PY" -c 'import venv, ensurepip' 2>/dev/null || skip "python3-venv is not installed"
	local tmp="$BATS_TEST_TMPDIR"
	cp -r "$CLIENT" "$tmp/src"
	rm -rf "$tmp/src/tests"
	"$PY" -m venv --system-site-packages "$tmp/venv"
	run "$tmp/venv/bin/pip" install --no-build-isolation --no-index "$tmp/src"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
	run env -C "$tmp" "$tmp/venv/bin/python" -c '
import sys, toolrun
assert toolrun.__file__.startswith(sys.prefix), toolrun.__file__
with toolrun.Box.attach(sys.argv[1]) as box:
    r = box.exec("echo installed; id -u")
    print(r.stdout, end="")
' "$CT_BOX"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
	[ "$output" = $'installed\n1000' ]
}
