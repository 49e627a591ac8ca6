#!/usr/bin/env bats
# network = deny (the default): a program cannot reach the network in any
# of the usual ways, where the same command directly can.

load helpers

setup_file() {
	tr_start "tools = bash try-syscall getent"
	# A local TCP server that accepts and closes, on a port of its own.
	python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
with open(sys.argv[1] + ".new", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".new", sys.argv[1])
while True:
    s.accept()[0].close()
' "$TR_DIR/port" 3>&- &
	echo "$!" >"$TR_DIR/server.pid"
	wait_for 60 test -s "$TR_DIR/port"
}

teardown_file() {
	kill "$(cat "$TR_DIR/server.pid")" 2>/dev/null || true
	tr_stop
}

@test "01-dev-tcp: bash cannot open /dev/tcp to a listening local port" {
	port=$(cat "$TR_DIR/port")
	line="bash -c 'exec 3<>/dev/tcp/127.0.0.1/$port && echo connected'"
	run plain_bash "$line"
	[ "$status" -eq 0 ]
	[ "$output" = connected ]
	n=$(tr_job_count)
	run --separate-stderr tr_bash "$line"
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	[[ "$stderr" == *"/dev/tcp/127.0.0.1/$port: Permission denied"* ]]
	jobs_since "$n" | grep -q ' tool=bash '
}

@test "02-socket: socket(AF_INET) fails with EACCES, for TCP and UDP alike" {
	run plain_bash "$TRY socket-inet socket-inet-udp"
	[ "$output" = $'socket-inet ok\nsocket-inet-udp ok' ]
	run tr_bash "$TRY socket-inet socket-inet-udp"
	[ "$output" = $'socket-inet EACCES\nsocket-inet-udp EACCES' ]
}

# In a mount and network namespace of their own: a resolv.conf naming
# 127.0.0.1, a DNS server there that answers every A query, and a daemon
# started inside, so that toolrun's programs see the same as direct ones.
# Writes direct.out/.status and via.out/.status.
resolve_in_namespace() {
	local name=$1
	cat >"$TR_DIR/ns.conf" <<-EOF
		socket = $TR_DIR/ns/s.sock
		socket_fallback =
		audit_log = $TR_DIR/audit.jsonl
		spill_dir = $TR_DIR/spill
		preload = $TR_LIB
		tools = getent
	EOF
	printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$TR_DIR/resolv.conf"
	# Hosts from the files, then DNS, whatever the machine's own order.
	sed -E 's/^hosts:.*/hosts: files dns/' /etc/nsswitch.conf >"$TR_DIR/nsswitch.conf"
	grep -qx 'hosts: files dns' "$TR_DIR/nsswitch.conf" ||
		echo 'hosts: files dns' >>"$TR_DIR/nsswitch.conf"
	cat >"$TR_DIR/ns.sh" <<-EOF
		set -e
		dns= daemon=
		# Whatever fails, nothing is left running in the namespace.
		trap 'kill \$daemon \$dns 2>/dev/null; wait' EXIT
		python3 -c '
		import fcntl, socket, struct
		s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
		req = struct.pack("16sH14x", b"lo", 0)
		flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, req))[1]  # SIOCGIFFLAGS
		fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
		'
		mount --bind "$TR_DIR/resolv.conf" /etc/resolv.conf
		mount --bind "$TR_DIR/nsswitch.conf" /etc/nsswitch.conf
		# A name service cache outside would answer in DNS's place.
		for d in /run/nscd /var/run/nscd; do
			if [ -d "\$d" ]; then mount -t tmpfs none "\$d"; fi
		done
		python3 "$BATS_TEST_DIRNAME/dns-responder.py" 127.0.0.1 "$TR_DIR/dns.ready" &
		dns=\$!
		for i in \$(seq 1 1200); do [ -e "$TR_DIR/dns.ready" ] && break; sleep 0.05; done
		"$TR_DAEMON" --config "$TR_DIR/ns.conf" -v 2>>"$TR_DIR/ns-daemon.log" &
		daemon=\$!
		for i in \$(seq 1 1200); do
			[ -S "$TR_DIR/ns/s.sock" ] && TOOLRUN_CONFIG="$TR_DIR/ns.conf" "$TR_CLI" ping >/dev/null 2>&1 && break
			sleep 0.05
		done
		set +e
		getent hosts $name >"$TR_DIR/direct.out" 2>&1
		echo \$? >"$TR_DIR/direct.status"
		TOOLRUN_CONFIG="$TR_DIR/ns.conf" "$TR_BASH" "getent hosts $name" >"$TR_DIR/via.out" 2>&1
		echo \$? >"$TR_DIR/via.status"
		# Its job logged before the daemon is stopped (tr_log_settled).
		TOOLRUN_CONFIG="$TR_DIR/ns.conf" timeout 30 "$TR_CLI" status >/dev/null 2>&1
	EOF
	timeout 120 unshare -m -n --propagation private bash "$TR_DIR/ns.sh" 3>&- 2>"$TR_DIR/ns.err"
	if [ ! -s "$TR_DIR/via.status" ]; then
		sed 's/^/# /' "$TR_DIR/ns.err" >&3
		return 1
	fi
}

@test "03-dns: getent hosts fails through toolrun, where directly it resolves" {
	[ -r /etc/nsswitch.conf ] || skip "no /etc/nsswitch.conf"
	unshare -m -n --propagation private true 2>/dev/null ||
		skip "cannot make mount and network namespaces here"
	resolve_in_namespace toolrun-test.example
	[ "$(cat "$TR_DIR/direct.status")" -eq 0 ]
	[[ "$(cat "$TR_DIR/direct.out")" =~ ^192\.0\.2\.7[[:space:]]+toolrun-test\.example$ ]]
	# 2: not found, as the resolver could not ask.
	[ "$(cat "$TR_DIR/via.status")" -eq 2 ]
	[ ! -s "$TR_DIR/via.out" ]
	grep -q ' info: job [0-9]* uid=.* tool=getent ' "$TR_DIR/ns-daemon.log"
	# tr_stop looks only at the main daemon's log.
	! grep -E 'Sanitizer|runtime error:' "$TR_DIR/ns-daemon.log"
}
