#!/usr/bin/env bats
# A bad config: toolrund names the line and exits 2; the library
# intercepts nothing and says so once.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

bad_config() {
	printf '%s\n' "$@" >"$TR_DIR/bad.conf"
}

@test "12-config-check-ok: toolrund -n accepts the test config" {
	run "$TR_DAEMON" -n --config "$TOOLRUN_CONFIG"
	[ "$status" -eq 0 ]
	[[ "$output" == "$TOOLRUN_CONFIG: ok"* ]]
}

@test "12-config-unknown-key: an unknown key is an error naming its line" {
	bad_config "tools = cat" "# comment" "colour = blue"
	run --separate-stderr "$TR_DAEMON" --config "$TR_DIR/bad.conf"
	[ "$status" -eq 2 ]
	[ "$stderr" = "$TR_DIR/bad.conf:3: unknown key 'colour'" ]
}

@test "12-config-bad-number: a bad number names its line" {
	bad_config "tools = cat" "max_bytes = lots"
	run --separate-stderr "$TR_DAEMON" --config "$TR_DIR/bad.conf"
	[ "$status" -eq 2 ]
	[ "$stderr" = "$TR_DIR/bad.conf:2: max_bytes must be a number of bytes (0 for no limit), not 'lots'" ]
}

@test "12-config-syntax: a line that is not key = value names its line" {
	bad_config "tools = cat" "" "just some words"
	run --separate-stderr "$TR_DAEMON" -n --config "$TR_DIR/bad.conf"
	[ "$status" -eq 2 ]
	[ "$stderr" = "$TR_DIR/bad.conf:3: syntax error: expected 'key = value' or '[section]'" ]
}

@test "12-config-unlisted-section: a section for a tool that is not listed" {
	bad_config "tools = cat" "[tool.grep]" "timeout = 3"
	run --separate-stderr "$TR_DAEMON" -n --config "$TR_DIR/bad.conf"
	[ "$status" -eq 2 ]
	[ "$stderr" = "$TR_DIR/bad.conf:3: [tool.grep] names a tool that the 'tools' key does not list" ]
}

@test "12-config-missing: a missing config file is one line and exit 2" {
	run --separate-stderr "$TR_DAEMON" --config "$TR_DIR/nope.conf"
	[ "$status" -eq 2 ]
	[ "$stderr" = "cannot read $TR_DIR/nope.conf: No such file or directory" ]
}

@test "12-config-library-invalid: the library intercepts nothing and says so once" {
	bad_config "tools = cat" "max_lines = -1"
	n=$(tr_job_count)
	run --separate-stderr env TOOLRUN_CONFIG="$TR_DIR/bad.conf" "$TR_BASH" 'cat /etc/hostname; cat /etc/hostname; cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '%s\n%s\n%s' "$(cat /etc/hostname)" "$(cat /etc/hostname)" "$(cat /etc/hostname)")" ]
	[ "$stderr" = "toolrun: $TR_DIR/bad.conf:2: max_lines must be a number of lines (0 for no limit), not '-1'; intercepting nothing" ]
	[ "$(tr_job_count)" -eq "$n" ]
}

@test "12-config-library-unreadable: a missing config is said once, nothing intercepted" {
	run --separate-stderr env TOOLRUN_CONFIG="$TR_DIR/nope.conf" "$TR_BASH" 'cat /etc/hostname; cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$stderr" = "toolrun: cannot read $TR_DIR/nope.conf: No such file or directory; intercepting nothing" ]
}
