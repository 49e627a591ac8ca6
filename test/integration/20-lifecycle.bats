#!/usr/bin/env bats
# The daemon's life beside its callers: a config read again (SIGHUP,
# `toolrun reload`), a socket removed or replaced under it, a socket
# directory it cannot use, and TOOLRUN=off.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

# Wait (bounded) until the daemon log has a line matching an ERE.
wait_log() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -qE "$1" "$TR_DIR/daemon.log" && return 0
		sleep 0.05
	done
	echo "no log line matches: $1" >&2
	return 1
}

@test "20-reload-new-tool: a tool added to the file runs through the daemon after toolrun reload" {
	n=$(tr_job_count)
	tr_write_config "$TOOLRUN_CONFIG" "tools = nl"
	# The library reads the file at each exec, the daemon only when told.
	run --separate-stderr tr_bash 'nl /etc/hostname'
	[ "$status" -eq 126 ]
	[[ "$stderr" =~ "toolrun: nl: not a tool listed in $TOOLRUN_CONFIG as toolrund read it (at "[0-9:]+" UTC); if the file lists it now, run 'toolrun reload'" ]]
	run --separate-stderr "$TR_CLI" reload
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^"toolrund reloaded $TOOLRUN_CONFIG: "[0-9]+" tools (was "[0-9]+"), truncate=sink"$ ]]
	run --separate-stderr tr_bash 'nl /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(nl /etc/hostname)" ]
	jobs_since "$n" | grep -q ' tool=nl '
}

@test "20-reload-invalid: a file with an error is refused by line, and the old config stays" {
	tr_write_config "$TOOLRUN_CONFIG" "tools = nl"
	"$TR_CLI" reload
	cp "$TOOLRUN_CONFIG" "$TR_DIR/good.conf"
	printf 'colour = blue\n' >>"$TOOLRUN_CONFIG"
	# toolrun reload reads the file first: the same line, exit 2.
	run --separate-stderr "$TR_CLI" reload
	[ "$status" -eq 2 ]
	[ "$stderr" = "toolrun: $TOOLRUN_CONFIG:$(wc -l <"$TOOLRUN_CONFIG"): unknown key 'colour'" ]
	# SIGHUP: the daemon refuses it the same way and keeps serving.
	kill -HUP "$(cat "$TR_DIR/daemon.pid")"
	wait_log "config not read again, the old one stays: $TOOLRUN_CONFIG:[0-9]+: unknown key 'colour'"
	run --separate-stderr env TOOLRUN_CONFIG="$TR_DIR/good.conf" "$TR_CLI" run /usr/bin/nl /etc/hostname
	[ "$status" -eq 0 ]
	[ "$output" = "$(nl /etc/hostname)" ]
	tr_write_config "$TOOLRUN_CONFIG"
	"$TR_CLI" reload
}

@test "20-reload-in-flight: a program already running keeps the limits it started with" {
	mkfifo "$TR_DIR/feed"
	make_lines "$TR_DIR/ten" 10
	# Started under max_lines = 200: its output is the agent's (a file).
	"$TR_BASH" "cat '$TR_DIR/feed'" >"$TR_DIR/old.out" 2>&1 &
	caller=$!
	# The caller lets go of its stdin once the daemon has the request.
	for ((i = 0; i < 400; i++)); do
		[ -e "/proc/$caller/fd/0" ] || break
		sleep 0.05
	done
	tr_write_config "$TOOLRUN_CONFIG" "[tool.cat]" "max_lines = 2"
	run "$TR_CLI" reload
	[ "$status" -eq 0 ]
	# A new one gets the new limit: its first line and its last...
	run --separate-stderr tr_bash "cat '$TR_DIR/ten'"
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "line 1" ]
	# (spill_dir is the default: a reload would not change it.)
	[[ "${lines[1]}" == "...[toolrun cut 8 lines (56 bytes) of cat's stdout here: lines 2-9 of 10; the whole stdout is in /"*"/$(id -u)/"*"-stdout.log]" ]]
	[ "${lines[2]}" = "line 10" ]
	# ...and the one in flight the old one.
	cat "$TR_DIR/ten" >"$TR_DIR/feed"
	wait "$caller"
	cat "$TR_DIR/old.out"
	[ "$(cat "$TR_DIR/old.out")" = "$(cat "$TR_DIR/ten")" ]
	tr_write_config "$TOOLRUN_CONFIG"
	"$TR_CLI" reload
}

@test "20-socket-removed: a socket removed under the daemon is made again" {
	rm "$TR_DIR/s.sock"
	wait_log "$TR_DIR/s.sock is gone .*; listening on a new socket there"
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
	"$TR_CLI" ping
}

@test "20-socket-replaced: a file put in the socket's place is replaced by a new socket" {
	rm "$TR_DIR/s.sock"
	: >"$TR_DIR/s.sock"
	wait_log "$TR_DIR/s.sock was replaced by another file; listening on a new socket there"
	[ -S "$TR_DIR/s.sock" ] || sleep 1
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "20-socket-fallback: a socket directory the daemon cannot use: it listens at socket_fallback" {
	tr_kill_daemon
	mkdir -m 0777 "$TR_DIR/shared"
	tr_write_config "$TOOLRUN_CONFIG"
	sed -i -e "s|^socket = .*|socket = $TR_DIR/shared/s.sock|" \
		-e "s|^socket_fallback =.*|socket_fallback = $TR_DIR/own/s.sock|" "$TOOLRUN_CONFIG"
	TR_SOCKET=$TR_DIR/own/s.sock tr_launch
	grep -q "warn: listening at $TR_DIR/own/s.sock instead (socket directory $TR_DIR/shared is writable by others" "$TR_DIR/daemon.log"
	n=$(tr_job_count)
	run --separate-stderr tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
	[ "$(tr_job_count)" -eq $((n + 1)) ]
	run "$TR_CLI" ping
	[[ "$output" == *" serving on $TR_DIR/own/s.sock: "* ]]
	tr_kill_daemon
	tr_write_config "$TOOLRUN_CONFIG"
	tr_launch
}

@test "20-toolrun-off: TOOLRUN=off runs listed programs directly, for one command or all below" {
	n=$(tr_job_count)
	run tr_bash 'TOOLRUN=off cat /etc/hostname; export TOOLRUN=off; cat /etc/hostname; sh -c "cat /etc/hostname"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(tr_job_count)" -eq "$n" ]
	run tr_bash 'cat /etc/hostname'
	[ "$(tr_job_count)" -eq $((n + 1)) ]
}
