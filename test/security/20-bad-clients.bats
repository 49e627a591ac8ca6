#!/usr/bin/env bats
# Clients that misuse the socket: a uid that is not served, floods of
# idle or half-sent connections, garbage, impossible lengths, frames that
# would fill the daemon's memory or fds. Each is refused with a reason,
# the daemon's memory stays bounded, and a normal request is still
# served, by the same listener (none of this kills it).

load helpers

FLOOD="$TOOLRUN_BUILD/test/security/flood"

setup_file() {
	tr_start 'tools = sleep'
	# Others may pass through the daemon's directory (its socket is
	# 0666), so that a uid it does not serve can reach it.
	chmod 755 "$TR_DIR"
	pgrep -P "$(tr_daemon_pid)" -x toolrund-listen >"$TR_DIR/listener.pid"
}

teardown_file() {
	tr_stop
}

sock() {
	echo "$TR_DIR/s.sock"
}

# A normal request, served by the listener that started with the file.
still_serving() {
	run tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
	[ "$(pgrep -P "$(tr_daemon_pid)" -x toolrund-listen)" = "$(cat "$TR_DIR/listener.pid")" ]
}

asan_build() {
	ldd "$TR_DAEMON" | grep -q libasan
}

listener_kib() {
	proc_status "$(cat "$TR_DIR/listener.pid")" "$1" | tr -dc 0-9
}

@test "01-wrong-uid: a uid the daemon does not serve is refused, and logged" {
	need_root_and_nobody "switch to another uid"
	local u=$NOBODY_UID
	run setpriv --reuid="$u" --regid="$NOBODY_GID" --clear-groups \
		env TOOLRUN_CONFIG="$TOOLRUN_CONFIG" "$TR_CLI" ping
	[ "$status" -eq 1 ]
	[ "$output" = "toolrun: toolrund refused: uid $u is not served by this toolrund (it serves uid 0)" ]
	grep -q "warn: client pid [0-9]* uid $u: uid $u is not served" "$TR_DIR/daemon.log"
	still_serving
}

@test "02-wrong-uid-exec: an intercepted exec by that uid fails with the reason" {
	need_root_and_nobody "switch to another uid"
	local u=$NOBODY_UID
	cd /
	run setpriv --reuid="$u" --regid="$NOBODY_GID" --clear-groups \
		env TOOLRUN_CONFIG="$TOOLRUN_CONFIG" "$TR_BASH" 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ "${lines[0]}" = "toolrun: toolrund refused the request: uid $u is not served by this toolrund (it serves uid 0)" ]
	[[ "${lines[1]}" == *"/cat: Permission denied" ]]
	# fallback = fail: nothing ran.
	[ "${#lines[@]}" -eq 2 ]
}

# The flood and the daemon each hold N connections: skip where the hard
# limit on open files (which both raise their own to) leaves no room.
need_fds() {
	local hard
	hard=$(ulimit -H -n)
	[ "$hard" = unlimited ] || [ "$hard" -ge $(($1 + 64)) ] ||
		skip "the hard limit on open files is $hard, too few for $1 connections"
}

@test "03-idle-1000: 1,000 idle connections, and a request is still served" {
	need_fds 1000
	mkfifo "$TR_DIR/flood.out"
	"$FLOOD" "$(sock)" idle 1000 4 >"$TR_DIR/flood.out" &
	local flooder=$! first tally
	exec {out}<"$TR_DIR/flood.out"
	read -r first <&"$out"
	[ "$first" = "opened 1000" ]
	still_serving
	run "$TR_CLI" ping
	[[ "$output" == *": 100"[0-9]" connections,"* ]]
	tally=$(cat <&"$out")
	exec {out}<&-
	wait "$flooder"
	# None was cut: all 1,000 were still open when the flooder looked.
	[ "$tally" = "1000× open" ]
}

@test "04-per-uid: past 1,024 a uid's oldest idle connections make room" {
	need_fds 1100
	run "$FLOOD" "$(sock)" idle 1100 1 76
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "opened 1100" ]
	[ "${lines[1]}" = "1024× open" ]
	[ "${lines[2]}" = "76× error ERROR_BUSY: uid $(id -u) has 1024 connections open (the limit per uid); this one, waiting longest for its request, is closed" ]
	still_serving
}

@test "05-idle-deadline: a connection that sends nothing is cut after 10 s" {
	run "$FLOOD" "$(sock)" idle 20 12 20
	[ "${lines[1]}" = "20× error ERROR_TIMEOUT: no complete request within 10 s" ]
	still_serving
}

@test "06-slowloris: half a frame header, then nothing, is cut after 10 s" {
	run "$FLOOD" "$(sock)" partial 20 12 20
	[ "${lines[1]}" = "20× error ERROR_TIMEOUT: no complete request within 10 s" ]
	still_serving
}

@test "07-slowloris-running: a frame begun after the Request must end in 10 s" {
	run "$FLOOD" "$(sock)" stall-after /bin/sleep 61.25
	[ "${lines[0]}" = hello ]
	[ "${lines[1]}" = started ]
	[ "${lines[2]}" = "error ERROR_TIMEOUT: a frame begun 10 s ago is still incomplete" ]
	[ "${lines[3]}" = closed ]
	# Its program went with it.
	# Logged once the launcher has reaped it, a moment after the close.
	wait_for 30 grep -q "tool=sleep .*signal=KILL.*client-gone" "$TR_DIR/daemon.log"
	wait_for 30 bash -c "! pgrep -f '^/bin/sleep 61.25\$' >/dev/null"
	still_serving
}

@test "08-garbage: 200 connections of random bytes are each refused" {
	run "$FLOOD" "$(sock)" garbage 200 20261122 200
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "sent 200" ]
	# Every connection got a reason; none was left hanging or crashed it.
	local total=0 line n
	for line in "${lines[@]:1}"; do
		[[ "$line" == *"× error ERROR_"* ]]
		n=${line%%×*}
		total=$((total + n))
	done
	[ "$total" -eq 200 ]
	still_serving
}

@test "09-4gib: a frame whose length claims 4 GiB is refused before any memory is taken" {
	local before after
	before=$(listener_kib VmRSS)
	run "$TR_RAWFRAME" "$(sock)" huge-length
	[ "${lines[0]}" = "error ERROR_FRAME_TOO_LARGE: frame of 4294967295 bytes exceeds the maximum of 4096 for Hello" ]
	after=$(listener_kib VmRSS)
	[ $((after - before)) -lt 1024 ]
	still_serving
}

@test "10-big-frames: frames that would fill memory are refused past 64 MiB" {
	# 600 clients each announce an 8 MiB Request and send 200 KB of it:
	# past the budget for frames still arriving, the rest are refused.
	# The ones let in wait for the rest of their frame until the deadline
	# cuts them: flood waits for all 600 to end, however long the daemon
	# takes over the refusals on a loaded machine.
	run "$FLOOD" "$(sock)" big 600 200000 600
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "sent 600" ]
	[[ "${lines[1]}" =~ ^[0-9]+×\ error\ ERROR_BUSY:\ no\ room\ for\ a\ frame\ of\ 8388608\ bytes:\ [0-9]+\ bytes\ of\ frames\ are\ arriving\ already\ \(the\ limit\ is\ 67108864\)$ ]]
	[[ "${lines[2]}" =~ ^[0-9]+×\ error\ ERROR_TIMEOUT:\ no\ complete\ request\ within\ 10\ s$ ]]
	[ "${#lines[@]}" -eq 3 ]
	# Well under what 600 × 200 KB would take. (Under AddressSanitizer,
	# freed memory waits in its quarantine, so the peak says nothing.)
	if ! asan_build; then
		[ "$(listener_kib VmHWM)" -lt $((96 * 1024)) ]
	fi
	still_serving
}

@test "11-fds: fds sent with unfinished frames are capped at half the daemon's limit" {
	# A daemon with room for 512 fds: 256 may arrive with frames.
	tr_kill_daemon
	prlimit --nofile=512:512 "$TR_DAEMON" --config "$TOOLRUN_CONFIG" -v 2>>"$TR_DIR/daemon.log" &
	echo "$!" >"$TR_DIR/daemon.pid"
	wait_for 60 tr_serving
	pgrep -P "$(tr_daemon_pid)" -x toolrund-listen >"$TR_DIR/listener.pid"
	# Three clients each send 200 fds with the start of a Request.
	# The one let in waits for the rest of its frame until the deadline.
	run "$FLOOD" "$(sock)" fds 3 200 3
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "2× error ERROR_BUSY: too many file descriptors in flight (400; the limit is 256)" ]
	[ "${lines[2]}" = "1× error ERROR_TIMEOUT: no complete request within 10 s" ]
	still_serving
}
