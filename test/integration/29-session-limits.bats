#!/usr/bin/env bats
# session_max is shared fairly: each uid toolrund serves is sure of
# session_max / (uids served), and may borrow only what the others'
# shares do not need; ended sessions take no place.

load helpers
load sessions

setup_file() {
	tr_start "allow_uids = root 65534" "session_max = 4" "session_max_per_uid = 4"
	chmod 755 "$TR_DIR"
}

teardown_file() {
	tr_stop
}

other() {
	(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$TR_CLI" session "$@")
}

@test "29-session-limits-share: one uid's sessions never lock out another's" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch uid"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	# Root takes its share (2 of 4 for 2 uids), and no more while the
	# other uid has none.
	a=$(session new) && b=$(session new)
	run --separate-stderr session new --json
	[ "$status" -eq 125 ]
	[[ "$(jf message)" == *"uid 0 has 2 sessions, more than its share (2: session_max 4 among the 2 uids toolrund serves)"* ]]
	# The other uid still gets its own share.
	c=$(other new) && d=$(other new)
	# The pool is full now, for both.
	run --separate-stderr other new --json
	[ "$status" -eq 125 ]
	[[ "$(jf message)" == *"the most session_max allows"* ]]
	for s in "$c" "$d"; do other close "$s"; done
	for s in "$a" "$b"; do session close "$s"; done
}

@test "29-session-limits-ended: a closed session leaves its place at once" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch uid"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	a=$(other new) && b=$(other new) && c=$(session new) && d=$(session new)
	session close "$c"
	other close "$a"
	# Kept a while for their news, the closed ones take no place.
	e=$(session new)
	f=$(other new)
	for s in "$b" "$f"; do other close "$s"; done
	for s in "$d" "$e"; do session close "$s"; done
}

@test "29-session-limits-close: a close that cannot finish says why, never a state alone" {
	sid=$(session new)
	launcher=$(pgrep -P "$(cat "$TR_DIR/daemon.pid")" -x toolrund-launch)
	[ -n "$launcher" ]
	# A launcher that does not run: the bash is neither killed nor reaped.
	kill -STOP "$launcher"
	run --separate-stderr session close "$sid" --json
	kill -CONT "$launcher"
	[ "$status" -eq 125 ]
	[ "$(jf error)" = busy ]
	[[ "$(jf message)" == *"is closing, but its bash (pid "*") has not ended 30 s after SIGHUP and SIGKILL"* ]]
	# Once it has, close says so.
	run --separate-stderr session close "$sid" --json
	[ "$status" -eq 0 ]
	[ "$(jf state)" = closed ]
}
