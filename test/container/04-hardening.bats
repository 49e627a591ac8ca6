#!/usr/bin/env bats
# The hardening holds inside the box: no network, a read-only root
# filesystem, no capabilities, no new privileges, our seccomp profile,
# a non-root user, and a daemon that serves that user.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

@test "04-hardening: no network: a TCP connect fails" {
	run docker exec "$CT_BOX" bash -c 'echo > /dev/tcp/127.0.0.1/1'
	[ "$status" -ne 0 ]
}

@test "04-hardening: no network: names do not resolve" {
	run docker exec "$CT_BOX" getent hosts deb.debian.org
	[ "$status" -ne 0 ]
	run docker exec "$CT_BOX" getent hosts example.com
	[ "$status" -ne 0 ]
}

@test "04-hardening: no network: loopback is the only interface" {
	run docker exec "$CT_BOX" bash -c 'cd /sys/class/net && echo *'
	[ "$status" -eq 0 ]
	[ "$output" = lo ]
}

@test "04-hardening: the root filesystem is read-only" {
	local path
	for path in /etc/x /usr/bin/x /x /home/sandbox/x /etc/toolrun/toolrun.conf; do
		run docker exec "$CT_BOX" bash -c "echo > $path"
		[ "$status" -ne 0 ]
		[[ $output == *"Read-only file system"* ]] || [[ $output == *"Permission denied"* ]]
	done
	run docker exec "$CT_BOX" bash -c 'echo > /etc/x'
	[[ $output == *"Read-only file system"* ]]
}

@test "04-hardening: /tmp and /workspace are writable" {
	run docker exec "$CT_BOX" bash -c 'echo a > /tmp/x && echo b > /workspace/x && cat /tmp/x /workspace/x'
	[ "$status" -eq 0 ]
	[ "$output" = $'a\nb' ]
}

@test "04-hardening: no capabilities: CapEff is 0 in a shell, the daemon and PID 1" {
	local pid
	pid=$(ct_daemon_pid)
	[ -n "$pid" ]
	run docker exec "$CT_BOX" bash -c \
		"grep -h '^CapEff:' /proc/self/status /proc/$pid/status /proc/1/status"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	local line
	for line in "${lines[@]}"; do
		[ "$line" = $'CapEff:\t0000000000000000' ]
	done
	run docker exec "$CT_BOX" grep -h '^CapBnd:' /proc/self/status
	[ "$output" = $'CapBnd:\t0000000000000000' ]
}

@test "04-hardening: no new privileges: NoNewPrivs is 1 in a shell, the daemon and PID 1" {
	local pid
	pid=$(ct_daemon_pid)
	run docker exec "$CT_BOX" bash -c \
		"grep -h '^NoNewPrivs:' /proc/self/status /proc/$pid/status /proc/1/status"
	[ "$status" -eq 0 ]
	[ "$output" = $'NoNewPrivs:\t1\nNoNewPrivs:\t1\nNoNewPrivs:\t1' ]
}

@test "04-hardening: the seccomp profile is on: filter mode" {
	run docker exec "$CT_BOX" grep '^Seccomp:' /proc/self/status
	[ "$output" = $'Seccomp:\t2' ]
}

@test "04-hardening: the seccomp profile denies namespaces" {
	run docker exec "$CT_BOX" unshare --user true
	[ "$status" -ne 0 ]
	[[ $output == *"Operation not permitted"* ]]
	run docker exec "$CT_BOX" unshare --net true
	[ "$status" -ne 0 ]
}

@test "04-hardening: the seccomp profile denies other personalities (no ASLR switch-off)" {
	run docker exec "$CT_BOX" setarch "$(docker exec "$CT_BOX" uname -m)" -R true
	[ "$status" -ne 0 ]
	[[ $output == *"Operation not permitted"* ]]
	run docker exec "$CT_BOX" setarch "$(docker exec "$CT_BOX" uname -m)" true
	[ "$status" -eq 0 ]
}

@test "04-hardening: the user is not root, in a shell, the daemon and PID 1" {
	run docker exec "$CT_BOX" bash -lc 'id -u; id -g; id -un'
	[ "$output" = $'1000\n1000\nsandbox' ]
	local pid
	pid=$(ct_daemon_pid)
	run docker exec "$CT_BOX" bash -c "grep -h '^Uid:' /proc/$pid/status /proc/1/status"
	[ "$output" = $'Uid:\t1000\t1000\t1000\t1000\nUid:\t1000\t1000\t1000\t1000' ]
}

@test "04-hardening: the daemon serves the non-root user" {
	run docker exec "$CT_BOX" toolrun ping
	[ "$status" -eq 0 ]
	# run.sh's tmpfs on /run/toolrun: the socket's own directory.
	[[ $output == "toolrund "*" serving on /run/toolrun/toolrun.sock"* ]]
	local before
	before=$(ct_job_count)
	run docker exec "$CT_BOX" bash -lc 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	ct_wait_job "$before" ' uid=1000 tool=cat .* exit=0 '
}

@test "04-hardening: the daemon's listener and launcher are confined by their own seccomp filters" {
	local name pid
	for name in toolrund-listen toolrund-launch; do
		pid=$(ct_pids_named "$name")
		[ -n "$pid" ]
		run docker exec "$CT_BOX" grep -E '^(Seccomp|NoNewPrivs):' "/proc/$pid/status"
		[ "$output" = $'NoNewPrivs:\t1\nSeccomp:\t2' ]
	done
}

@test "04-hardening: the daemon runs without the preload, though the image gives it to every process" {
	run docker exec "$CT_BOX" bash -c 'echo "$LD_PRELOAD"; grep -c libtoolrun /proc/$$/maps'
	[ "${lines[0]}" = /opt/toolrun/lib/toolrun/libtoolrun.so ]
	[ "${lines[1]}" -ge 1 ]
	# The agent may not look (toolrund is undumpable); from the host, root
	# may: the daemon is PID 1's child there too.
	local pid host_pid
	pid=$(ct_daemon_pid)
	run docker exec "$CT_BOX" bash -c "cat /proc/$pid/environ"
	[ "$status" -ne 0 ]
	host_pid=$(pgrep -P "$(docker inspect --format '{{.State.Pid}}' "$CT_BOX")" -x toolrund)
	[ -n "$host_pid" ]
	[ "$(tr '\0' '\n' <"/proc/$host_pid/environ" | grep -c LD_PRELOAD)" -eq 0 ]
	[ "$(grep -c libtoolrun "/proc/$host_pid/maps")" -eq 0 ]
}

@test "04-hardening: the socket directory belongs to the user alone" {
	run docker exec "$CT_BOX" stat -c '%u %a' /run/toolrun
	[ "$output" = "1000 700" ]
}

@test "04-hardening: root in the box (no capabilities) is not served" {
	run docker exec --user 0 "$CT_BOX" toolrun ping
	[ "$status" -ne 0 ]
}
