#!/usr/bin/env bats
# The library trusts a socket only when its directory could not have been
# replaced by someone else, and only when the peer is who the config
# says: root, the caller, or the daemon's `user`. Otherwise a squatter
# would receive the caller's command, environment and stdio.
#
# The daemon here starts as root and runs as nobody (config `user`), so
# its socket directory belongs to nobody. Where that cannot be (not root),
# it runs as the caller, and the tests of the daemon's user skip.

load helpers

setup_file() {
	if [ -z "$(no_nobody_reason x)" ]; then
		tr_start_nobody || return
	else
		tr_start || return
		tr_kill_daemon
		TR_SOCKET="$TR_DIR/run/s.sock"
		export TR_SOCKET
		sed -i "s|^socket = .*|socket = $TR_SOCKET|" "$TOOLRUN_CONFIG"
		tr_launch || return
	fi
	RUN_DIR=$(dirname "$TR_SOCKET")
	export RUN_DIR
}

# The tests of a daemon that runs as nobody.
need_nobody_daemon() {
	need_root_and_nobody "start a daemon that drops from root to nobody"
}

teardown_file() {
	tr_stop
}

setup() {
	cd /
}

teardown() {
	chmod 755 "$TR_DIR"
	chmod 755 "$RUN_DIR"
}

# A copy of the config, edited by a sed script, in $TR_DIR/NAME.conf.
config_variant() {
	local name=$1 script=$2
	sed "$script" "$TOOLRUN_CONFIG" >"$TR_DIR/$name.conf"
	echo "$TR_DIR/$name.conf"
}

refusal() {
	echo "toolrun: refusing toolrund's socket $1: $2"
}

@test "01-user: a directory and a peer that are the daemon's user are trusted" {
	need_nobody_daemon
	[ "$(stat -c '%u %a' "$RUN_DIR")" = "$NOBODY_UID 755" ]
	run tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "02-owner: without the config's user, the same directory is refused" {
	need_nobody_daemon
	local conf
	conf=$(config_variant no-user '/^user = /d')
	run env TOOLRUN_CONFIG="$conf" "$TR_BASH" 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ "${lines[0]}" = "$(refusal "$TR_SOCKET" "$RUN_DIR is owned by uid $NOBODY_UID, not root or the caller (the config sets no user)")" ]
	[[ "${lines[1]}" == *"/cat: Operation not permitted" ]]
}

@test "03-others-write: a socket directory others may write to is refused" {
	chmod 757 "$RUN_DIR"
	run tr_bash 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ "${lines[0]}" = "$(refusal "$TR_SOCKET" "$RUN_DIR is writable by others (mode 0757)")" ]
}

@test "04-group-write: a socket directory its group may write to is refused" {
	chmod 775 "$RUN_DIR"
	run tr_bash 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ "${lines[0]}" = "$(refusal "$TR_SOCKET" "$RUN_DIR is writable by its group (mode 0775)")" ]
}

@test "05-sticky-even-innermost: a sticky socket directory is refused too" {
	# Sticky keeps others from renaming what is there, not from taking a
	# name that is free while the daemon restarts.
	chmod 1777 "$RUN_DIR"
	run tr_bash 'cat /etc/hostname'
	[ "${lines[0]}" = "$(refusal "$TR_SOCKET" "$RUN_DIR is writable by others (mode 1777)")" ]
}

@test "06-ancestor: a directory above that others may write to is refused" {
	chmod 777 "$TR_DIR"
	run tr_bash 'cat /etc/hostname'
	[ "$status" -eq 126 ]
	[ "${lines[0]}" = "$(refusal "$TR_SOCKET" "$TR_DIR is writable by others (mode 0777)")" ]
}

@test "07-sticky-ancestor: a sticky directory above, like /tmp, is fine" {
	chmod 1777 "$TR_DIR"
	run tr_bash 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "08-fallback-direct: with fallback = direct the program runs locally instead" {
	local conf
	conf=$(config_variant direct '$a fallback = direct')
	chmod 757 "$RUN_DIR"
	run env TOOLRUN_CONFIG="$conf" "$TR_BASH" 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(refusal "$TR_SOCKET" "$RUN_DIR is writable by others (mode 0757)"); running /usr/bin/cat directly" ]
	[ "${lines[1]}" = "$(cat /etc/hostname)" ]
}

@test "09-ping: the toolrun client refuses the same way" {
	chmod 757 "$RUN_DIR"
	run "$TR_CLI" ping
	[ "$status" -eq 1 ]
	[ "$output" = "$(refusal "$TR_SOCKET" "$RUN_DIR is writable by others (mode 0757)")" ]
}

# A socket in a directory root owns, bound by root, but listened on by
# nobody: what a squatter who got hold of the name would look like.
start_squatter() {
	mkdir -m 755 "$TR_DIR/squat"
	python3 - "$TR_DIR/squat/s.sock" "$NOBODY_UID" "$NOBODY_GID" >"$TR_DIR/squat.out" <<'EOF' &
import os, select, signal, socket, sys
received = 0
def stop(*_):
    print("received", received, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
os.setgid(int(sys.argv[3]))
os.setuid(int(sys.argv[2]))
s.listen(16)
print("ready", flush=True)
conns = []
while True:
    ready, _, _ = select.select([s] + conns, [], [])
    for r in ready:
        if r is s:
            conns.append(s.accept()[0])
        else:
            data = r.recv(65536)
            received += len(data)
            if not data:
                conns.remove(r)
                r.close()
EOF
	SQUATTER=$!
	wait_for 60 grep -q ready "$TR_DIR/squat.out"
}

stop_squatter() {
	kill -TERM "$SQUATTER"
	wait "$SQUATTER" || true
	rm -rf "$TR_DIR/squat"
}

@test "10-squatter: a socket served by an unexpected uid gets nothing" {
	need_nobody_daemon
	start_squatter
	local conf
	conf=$(config_variant squat "s|^socket = .*|socket = $TR_DIR/squat/s.sock|; /^user = /d")
	run env TOOLRUN_CONFIG="$conf" "$TR_BASH" 'cat /etc/hostname'
	stop_squatter
	[ "$status" -eq 126 ]
	[ "${lines[0]}" = "$(refusal "$TR_DIR/squat/s.sock" "it is served by uid $NOBODY_UID, not root or the caller (the config sets no user)")" ]
	# The connection was made and dropped before a byte was sent.
	[ "$(tail -1 "$TR_DIR/squat.out")" = "received 0" ]
}

@test "11-squatter-ping: the toolrun client refuses the squatter too" {
	need_nobody_daemon
	start_squatter
	local conf
	conf=$(config_variant squat "s|^socket = .*|socket = $TR_DIR/squat/s.sock|; /^user = /d")
	run env TOOLRUN_CONFIG="$conf" "$TR_CLI" ping
	stop_squatter
	# On a mismatch, the TAP output shows what the client said.
	printf '# %s\n' "${lines[@]}" >&3
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "$(refusal "$TR_DIR/squat/s.sock" "it is served by uid $NOBODY_UID, not root or the caller (the config sets no user)")" ]
	[ "$(tail -1 "$TR_DIR/squat.out")" = "received 0" ]
}
