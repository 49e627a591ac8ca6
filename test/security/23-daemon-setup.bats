#!/usr/bin/env bats
# How the daemon sets itself up: the socket directory it creates or
# refuses, the user it runs as; and two policies that hold for every
# program: the timeout ends the whole process group, and secret-looking
# variables never reach a program.

load helpers

setup_file() {
	tr_start 'tools = bash env' '[tool.bash]' 'timeout = 1'
}

teardown_file() {
	tr_stop
}

# Start a second daemon on SOCKET with extra config lines; wait until it
# serves or exits. Sets OTHER_PID and OTHER_LOG.
start_other() {
	local socket=$1
	shift
	OTHER_CONF=$(mktemp "$TR_DIR/other.XXXXXX")
	OTHER_LOG="$OTHER_CONF.log"
	printf '%s\n' "socket = $socket" "socket_fallback =" "tools = cat" \
		"audit_log = $(dirname "$OTHER_CONF")/other-audit.jsonl" "spill_dir =" "$@" >"$OTHER_CONF"
	"$TR_DAEMON" --config "$OTHER_CONF" 2>"$OTHER_LOG" &
	OTHER_PID=$!
	wait_for 60 other_up_or_gone
}

other_up_or_gone() {
	! kill -0 "$OTHER_PID" 2>/dev/null ||
		TOOLRUN_CONFIG="$OTHER_CONF" "$TR_CLI" ping >/dev/null 2>&1
}

stop_other() {
	kill -TERM "$OTHER_PID" 2>/dev/null || true
	wait "$OTHER_PID" || true
}

@test "01-dir-private: serving only itself, the daemon makes its directory 0700" {
	start_other "$TR_DIR/private/s.sock"
	local mode
	mode=$(stat -c '%u %a' "$TR_DIR/private")
	stop_other
	[ "$mode" = "$(id -u) 700" ]
}

@test "02-dir-shared: serving others too, it makes it 0755, for its clients to reach" {
	# Itself and another uid (a number needs no user of that name).
	start_other "$TR_DIR/shared/s.sock" "allow_uids = $(id -u) $(($(id -u) + 1))"
	local mode
	mode=$(stat -c '%u %a' "$TR_DIR/shared")
	stop_other
	[ "$mode" = "$(id -u) 755" ]
}

@test "03-dir-unsafe: an existing directory others may write to is refused at start" {
	mkdir -m 777 "$TR_DIR/open"
	chmod 777 "$TR_DIR/open"
	start_other "$TR_DIR/open/s.sock"
	wait "$OTHER_PID" && status=0 || status=$?
	[ "$status" -eq 1 ]
	[ "$(cat "$OTHER_LOG")" = "toolrund: socket directory $TR_DIR/open is writable by others: another user could replace the socket; give it a directory of its own" ]
	[ ! -e "$TR_DIR/open/s.sock" ]
}

@test "04-user: started as root with user = nobody, every daemon process runs as nobody" {
	need_root_and_nobody "start a daemon that drops to another user"
	start_other "$TR_DIR/as-nobody/s.sock" "user = nobody" "allow_uids = root"
	local pids pid uids=""
	pids="$OTHER_PID $(pgrep -P "$OTHER_PID" | tr '\n' ' ')"
	for pid in $pids; do
		uids+="$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status");"
	done
	local groups
	groups=$(awk '/^Groups:/ { print $2 }' "/proc/$OTHER_PID/status")
	stop_other
	# The supervisor, the launcher and the listener: real, effective,
	# saved and filesystem uids all nobody's, and root's group gone.
	local u=$NOBODY_UID
	[ "$uids" = "$u $u $u $u;$u $u $u $u;$u $u $u $u;" ]
	[ "$groups" != 0 ]
}

@test "05-timeout-group: the timeout kills the program's whole process group" {
	run tr_bash 'bash -c "sleep 300.5 & sleep 300.75 & wait"'
	[ "$status" -eq 124 ]
	[ "$output" = "toolrun: bash: timed out after 1 s" ]
	# Directly, its children would outlive a killed bash; here none does.
	! pgrep -f '^sleep 300\.(5|75)$'
}

@test "06-secrets: variables that look like secrets do not reach a program" {
	run env GITHUB_TOKEN=t1 AWS_SECRET_ACCESS_KEY=t2 API_KEY=t3 HARMLESS=t4 \
		"$TR_BASH" 'env | grep -E "^(GITHUB_TOKEN|AWS_SECRET_ACCESS_KEY|API_KEY|HARMLESS)=" | sort'
	[ "$status" -eq 0 ]
	[ "$output" = "HARMLESS=t4" ]
	# Directly, all four are there: the filter is toolrun's doing.
	run env GITHUB_TOKEN=t1 AWS_SECRET_ACCESS_KEY=t2 API_KEY=t3 HARMLESS=t4 \
		"$PLAIN_BASH" 'env | grep -cE "^(GITHUB_TOKEN|AWS_SECRET_ACCESS_KEY|API_KEY|HARMLESS)="'
	[ "$output" = 4 ]
}

@test "07-user-groups: with user = nobody, toolrund takes nobody's groups, whatever users allow_uids names after it" {
	need_root_and_nobody "start a daemon that drops to another user"
	ensure_test_users || skip "cannot make the test users"
	# Each name allow_uids lists is looked up after the user's: the
	# groups must still be those of the user toolrund becomes.
	start_other "$TR_DIR/groups/s.sock" "user = nobody" "allow_uids = root $TR_MEMBER"
	local pid groups=""
	for pid in $OTHER_PID $(pgrep -P "$OTHER_PID"); do
		groups+="$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$pid/status" | xargs -n1 | sort -n | xargs);"
	done
	stop_other
	local want
	want=$(id -G nobody | xargs -n1 | sort -n | xargs)
	[ "$groups" = "$want;$want;$want;" ]
}
