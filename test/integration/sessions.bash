# Shared by the session tests (24-sessions, 28-session-channel,
# 29-session-limits, and the status tests): the CLI, JSON fields of its
# answers, a new session, the counts `toolrun status` gives.
# Loaded after helpers.bash.

PY=$(command -v /usr/bin/python3 || command -v python3)

# session ARGS...: `toolrun session ARGS...`.
session() {
	"$TR_CLI" session "$@"
}

# jf FIELD [JSON]: a field of a JSON object (by default $output), dotted
# for a nested one (a.0.b): a string as it is, anything else as JSON
# (null, 0, true...).
jf() {
	"$PY" -c '
import json, sys
v = json.loads(sys.argv[2])
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v.get(k)
sys.stdout.write(v if isinstance(v, str) else json.dumps(v))
' "$1" "${2-$output}"
}

# new_session [OPTIONS]: a new session's id in $sid, its bash in $spid.
new_session() {
	local out
	out=$(session new --json "$@")
	sid=$(jf session "$out")
	spid=$(jf pid "$out")
	[[ "$sid" =~ ^[0-9a-f]{8}$ ]]
	[ "$spid" -gt 1 ]
}

# status ARGS...: `toolrun status ARGS...`.
status() {
	"$TR_CLI" status "$@"
}

# status_counts JOBS SESSIONS: `toolrun status` counts JOBS running jobs
# and SESSIONS open sessions (30-status, security 31-status).
status_counts() {
	local out
	out=$("$TR_CLI" status --json) || return 1
	[ "$(jf jobs.running "$out")" = "$1" ] && [ "$(jf sessions.open "$out")" = "$2" ]
}

# status_names_daemon SUP: the `toolrun status --json` in $output names
# toolrund's three processes in order, with the pids the kernel gives the
# supervisor SUP and its two children.
status_names_daemon() {
	[ "$(jf processes.0.role)" = supervisor ] && [ "$(jf processes.0.pid)" = "$1" ] &&
		[ "$(jf processes.1.role)" = listener ] &&
		[ "$(jf processes.1.pid)" = "$(pgrep -P "$1" -x toolrund-listen)" ] &&
		[ "$(jf processes.2.role)" = launcher ] &&
		[ "$(jf processes.2.pid)" = "$(pgrep -P "$1" -x toolrund-launch)" ]
}
