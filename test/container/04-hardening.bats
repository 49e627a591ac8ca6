#!/usr/bin/env bats
# The hardening holds inside the box: no network, a read-only root
# filesystem, no capabilities, no new privileges, our seccomp profile,
# a non-root user, and a daemon that serves that user.

load helpers

setup_file() { ct_setup_file; }
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

@test "04-hardening: no network: a TCP connect fails" {
	run docker exec -u 1000 "$CT_BOX" bash -c 'echo > /dev/tcp/127.0.0.1/1'
	[ "$status" -ne 0 ]
}

@test "04-hardening: no network: names do not resolve" {
	run docker exec -u 1000 "$CT_BOX" getent hosts deb.debian.org
	[ "$status" -ne 0 ]
	run docker exec -u 1000 "$CT_BOX" getent hosts example.com
	[ "$status" -ne 0 ]
}

@test "04-hardening: no network: loopback is the only interface" {
	run docker exec -u 1000 "$CT_BOX" bash -c 'cd /sys/class/net && echo *'
	[ "$status" -eq 0 ]
	[ "$output" = lo ]
}

@test "04-hardening: the root filesystem is read-only" {
	local path
	for path in /etc/x /usr/bin/x /x /home/sandbox/x /etc/toolrun/toolrun.conf; do
		run docker exec -u 1000 "$CT_BOX" bash -c "echo > $path"
		[ "$status" -ne 0 ]
		[[ $output == *"Read-only file system"* ]] || [[ $output == *"Permission denied"* ]]
	done
	run docker exec -u 1000 "$CT_BOX" bash -c 'echo > /etc/x'
	[[ $output == *"Read-only file system"* ]]
}

@test "04-hardening: /tmp and /workspace are writable" {
	run docker exec -u 1000 "$CT_BOX" bash -c 'echo a > /tmp/x && echo b > /workspace/x && cat /tmp/x /workspace/x'
	[ "$status" -eq 0 ]
	[ "$output" = $'a\nb' ]
}

# The four capabilities run.sh grants: CAP_CHOWN (0), CAP_KILL (5),
# CAP_SETGID (6), CAP_SETUID (7).
CT_FOUR=00000000000000e1
CT_NONE=0000000000000000

@test "04-hardening: capabilities: only the four toolrund needs, and the agent holds none" {
	local sup listen launch
	sup=$(ct_daemon_pid)
	listen=$(ct_pids_named toolrund-listen)
	launch=$(ct_pids_named toolrund-launch)
	[ -n "$sup" ]
	[ -n "$listen" ]
	[ -n "$launch" ]
	caps() { docker exec -u 1000 "$CT_BOX" grep -E '^Cap(Prm|Eff|Bnd):' "/proc/$1/status" | tr '\n\t' '  '; }
	# The agent's shell: nothing, whatever it execs (the bounding set is
	# the container's).
	[ "$(caps self)" = "CapPrm: $CT_NONE CapEff: $CT_NONE CapBnd: $CT_FOUR " ]
	# The supervisor keeps them to start launchers, never effective; the
	# listener, which parses what clients send, has none; the launcher
	# uses them to run each program as its caller.
	[ "$(caps "$sup")" = "CapPrm: $CT_FOUR CapEff: $CT_NONE CapBnd: $CT_FOUR " ]
	[ "$(caps "$listen")" = "CapPrm: $CT_NONE CapEff: $CT_NONE CapBnd: $CT_FOUR " ]
	[ "$(caps "$launch")" = "CapPrm: $CT_FOUR CapEff: $CT_FOUR CapBnd: $CT_FOUR " ]
	# A program the daemon runs for the agent has none either.
	run docker exec -u 1000 "$CT_BOX" bash -lc 'grep -h "^CapEff:" /proc/self/status | cat'
	[ "$output" = $'CapEff:\t0000000000000000' ]
}

@test "04-hardening: no new privileges: NoNewPrivs is 1 in a shell, the daemon and PID 1" {
	local pid
	pid=$(ct_daemon_pid)
	run docker exec -u 1000 "$CT_BOX" bash -c \
		"grep -h '^NoNewPrivs:' /proc/self/status /proc/$pid/status /proc/1/status"
	[ "$status" -eq 0 ]
	[ "$output" = $'NoNewPrivs:\t1\nNoNewPrivs:\t1\nNoNewPrivs:\t1' ]
}

@test "04-hardening: the seccomp profile is on: filter mode" {
	run docker exec -u 1000 "$CT_BOX" grep '^Seccomp:' /proc/self/status
	[ "$output" = $'Seccomp:\t2' ]
}

@test "04-hardening: the seccomp profile denies namespaces" {
	run docker exec -u 1000 "$CT_BOX" unshare --user true
	[ "$status" -ne 0 ]
	[[ $output == *"Operation not permitted"* ]]
	run docker exec -u 1000 "$CT_BOX" unshare --net true
	[ "$status" -ne 0 ]
}

@test "04-hardening: the seccomp profile denies other personalities (no ASLR switch-off)" {
	run docker exec -u 1000 "$CT_BOX" setarch "$(docker exec -u 1000 "$CT_BOX" uname -m)" -R true
	[ "$status" -ne 0 ]
	[[ $output == *"Operation not permitted"* ]]
	run docker exec -u 1000 "$CT_BOX" setarch "$(docker exec -u 1000 "$CT_BOX" uname -m)" true
	[ "$status" -eq 0 ]
}

@test "04-hardening: the agent is sandbox, toolrund is its own user toolrun, PID 1 is root" {
	run docker exec -u 1000 "$CT_BOX" bash -lc 'id -u; id -g; id -un'
	[ "$output" = $'1000\n1000\nsandbox' ]
	local pid
	for pid in $(ct_daemon_pid) $(ct_pids_named toolrund-listen) $(ct_pids_named toolrund-launch); do
		run docker exec -u 1000 "$CT_BOX" grep -E '^(Uid|Gid):' "/proc/$pid/status"
		[ "$output" = $'Uid:\t999\t999\t999\t999\nGid:\t999\t999\t999\t999' ]
	done
	run docker exec -u 1000 "$CT_BOX" grep '^Uid:' /proc/1/status
	[ "$output" = $'Uid:\t0\t0\t0\t0' ]
	[ "$(ct_log | grep -c 'single identity')" -eq 0 ]
}

@test "04-hardening: neither the agent nor its programs can stop, signal or read toolrund" {
	local pid pids
	pids="$(ct_daemon_pid) $(ct_pids_named toolrund-listen) $(ct_pids_named toolrund-launch)"
	[ "$(wc -w <<<"$pids")" -eq 3 ]
	for pid in $pids; do
		# Directly, as the agent's own shell...
		run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c "kill -STOP $pid"
		[ "$status" -ne 0 ]
		[[ $output == *"Operation not permitted"* ]]
		run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c "cat /proc/$pid/environ"
		[ "$status" -ne 0 ]
		run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c "head -c 1 /proc/$pid/mem"
		[ "$status" -ne 0 ]
		# ... and as a program toolrund runs for it.
		run docker exec -u 1000 "$CT_BOX" bash -lc "kill -KILL $pid"
		[ "$status" -ne 0 ]
		[[ $output == *"Operation not permitted"* ]]
	done
	# Still the same processes, all serving.
	[ "$(ct_daemon_pid) $(ct_pids_named toolrund-listen) $(ct_pids_named toolrund-launch)" = "$pids" ]
	run docker exec -u 1000 "$CT_BOX" toolrun ping
	[ "$status" -eq 0 ]
}

@test "04-hardening: what a listed tool writes belongs to the agent; the audit log is toolrund's" {
	run docker exec -u 1000 "$CT_BOX" bash -lc 'printf "b\na\n" | sort -o /tmp/sorted-by-tool; stat -c "%u %g" /tmp/sorted-by-tool'
	[ "$output" = "1000 1000" ]
	run docker exec -u 999 -e TOOLRUN=off "$CT_BOX" stat -c '%u %a' /run/toolrun/audit /run/toolrun/audit/audit.jsonl
	[ "$output" = $'999 700\n999 600' ]
	run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c 'echo forged >> /run/toolrun/audit/audit.jsonl'
	[ "$status" -ne 0 ]
	run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c 'cat /run/toolrun/audit/audit.jsonl'
	[ "$status" -ne 0 ]
}

@test "04-hardening: the daemon serves the non-root user" {
	run docker exec -u 1000 "$CT_BOX" toolrun ping
	[ "$status" -eq 0 ]
	# run.sh's tmpfs on /run/toolrun: the socket's own directory.
	[[ $output == "toolrund "*" serving on /run/toolrun/toolrun.sock"* ]]
	local before
	before=$(ct_job_count)
	run docker exec -u 1000 "$CT_BOX" bash -lc 'cat /etc/hostname'
	[ "$status" -eq 0 ]
	ct_wait_job "$before" ' uid=1000 tool=cat .* exit=0 '
}

@test "04-hardening: the daemon's listener and launcher are confined by their own seccomp filters" {
	local name pid
	for name in toolrund-listen toolrund-launch; do
		pid=$(ct_pids_named "$name")
		[ -n "$pid" ]
		run docker exec -u 1000 "$CT_BOX" grep -E '^(Seccomp|NoNewPrivs):' "/proc/$pid/status"
		[ "$output" = $'NoNewPrivs:\t1\nSeccomp:\t2' ]
	done
}

@test "04-hardening: the daemon runs without the preload, though the image gives it to every process" {
	# Not grep's last: bash would exec it in its own place, and the pid
	# would be grep's stand-in, closed to the grep toolrund runs.
	run docker exec -u 1000 "$CT_BOX" bash -c 'echo "$LD_PRELOAD"; grep -c libtoolrun /proc/$$/maps; true'
	[ "${lines[0]}" = /opt/toolrun/lib/toolrun/libtoolrun.so ]
	[ "${lines[1]}" -ge 1 ]
	# The agent may not look (toolrund is undumpable); from the host, root
	# may: the daemon is PID 1's child there too.
	local pid host_pid
	pid=$(ct_daemon_pid)
	run docker exec -u 1000 "$CT_BOX" bash -c "cat /proc/$pid/environ"
	[ "$status" -ne 0 ]
	host_pid=$(pgrep -P "$(docker inspect --format '{{.State.Pid}}' "$CT_BOX")" -x toolrund)
	[ -n "$host_pid" ]
	[ "$(tr '\0' '\n' <"/proc/$host_pid/environ" | grep -c LD_PRELOAD)" -eq 0 ]
	[ "$(grep -c libtoolrun "/proc/$host_pid/maps")" -eq 0 ]
}

@test "04-hardening: the socket directory is toolrund's user's, which no caller is" {
	run docker exec -u 1000 "$CT_BOX" stat -c '%u %a' /run/toolrun
	[ "$output" = "999 755" ]
	run docker exec -u 1000 -e TOOLRUN=off "$CT_BOX" bash -c 'touch /run/toolrun/squat'
	[ "$status" -ne 0 ]
}

@test "04-hardening: root in the box (docker exec without -u) is served; its programs run as root" {
	run docker exec "$CT_BOX" bash -lc 'cat /proc/self/status | grep "^Uid:"'
	[ "$status" -eq 0 ]
	[ "$output" = $'Uid:\t0\t0\t0\t0' ]
}

@test "04-hardening: toolrun status says every protection is in force, in full identity" {
	run docker exec -u 1000 "$CT_BOX" toolrun status --require full
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "verdict     ok (--require full): "* ]]
	run docker exec -u 1000 "$CT_BOX" toolrun status --json
	[ "$status" -eq 0 ]
	[ "$(python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["identity"]["mode"], [p["uid"] for p in d["processes"]], [p["seccomp"] for p in d["processes"]])' <<<"$output")" = "full [999, 999, 999] ['filter', 'filter', 'filter']" ]
}
