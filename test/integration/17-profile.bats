#!/usr/bin/env bats
# The profile snippet: a login bash restarts itself with the library,
# exactly as it was started, and its commands then reach the daemon.

load helpers

setup_file() {
	tr_start
	export TR_HOME="$TR_DIR/home"
	mkdir -p "$TR_HOME"
	echo ". '$TR_SNIPPET'" >"$TR_HOME/.bash_profile"
	echo ". '$TR_SNIPPET'" >"$TR_HOME/.profile"
}

teardown_file() {
	tr_stop
}

login() {
	env -u LD_PRELOAD -u BASH_ENV -u TOOLRUN_AGENT_STDOUT -u TOOLRUN_AGENT_STDERR \
		HOME="$TR_HOME" TR_MARK="$TR_MARK" "$@"
}

@test "17-profile-c: bash -lc keeps its string, \$0 and arguments" {
	run --separate-stderr login bash -lc 'echo "$0|$1|$2"; cat /etc/hostname' zero one 'two words'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "zero|one|two words" ]
	[ "${lines[1]}" = "$(cat /etc/hostname)" ]
	[ -z "$stderr" ]
}

@test "17-profile-intercepts: commands of bash -lc reach the daemon" {
	n=$(tr_job_count)
	run login bash -lc 'cat /etc/hostname | wc -c'
	[ "$status" -eq 0 ]
	jobs_since "$n" | grep -q ' tool=cat '
	jobs_since "$n" | grep -q ' tool=wc '
}

@test "17-profile-options: options given on the command line survive the restart" {
	run login bash -l -o pipefail -c 'false | true; echo $?'
	[ "$output" = 1 ]
	run login bash -l -e -c 'false; echo unreachable'
	[ "$status" -eq 1 ]
	[ -z "$output" ]
}

@test "17-profile-login: the restarted shell is still a login shell" {
	run login bash -lc 'shopt -q login_shell && echo login'
	[ "$output" = login ]
}

@test "17-profile-stdin: commands read from stdin run once, through toolrun" {
	n=$(tr_job_count)
	run bash -c "printf 'echo from-stdin\ncat /etc/hostname\n' | env -u LD_PRELOAD -u BASH_ENV HOME='$TR_HOME' TR_MARK='$TR_MARK' bash -l"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = from-stdin ]
	[ "${lines[1]}" = "$(cat /etc/hostname)" ]
	[ "${#lines[@]}" -eq 2 ]
	jobs_since "$n" | grep -q ' tool=cat '
}

@test "17-profile-script: a script and its arguments" {
	printf 'echo "script:$1:$2"\n' >"$TR_DIR/s.sh"
	run login bash -l "$TR_DIR/s.sh" a 'b c'
	[ "$output" = "script:a:b c" ]
}

@test "17-profile-declares: the login shell's stdout and stderr are declared agent-facing" {
	run login bash -lc 'echo "$TOOLRUN_AGENT_STDOUT $TOOLRUN_AGENT_STDERR"'
	[[ "$output" =~ ^[0-9]+:[0-9]+\ [0-9]+:[0-9]+$ ]]
}

@test "17-profile-off: TOOLRUN=off leaves the shell alone" {
	n=$(tr_job_count)
	run login env TOOLRUN=off bash -lc 'echo "[${LD_PRELOAD-}]"; cat /etc/hostname'
	[ "${lines[0]}" = "[]" ]
	[ "$(tr_job_count)" -eq "$n" ]
}

@test "17-profile-sh: sh reads the snippet without error and passes the library on" {
	run --separate-stderr login sh -lc 'echo "$LD_PRELOAD"'
	[ "$status" -eq 0 ]
	[ "$output" = "$TR_LIB" ]
	[ -z "$stderr" ]
}

@test "17-profile-nested: a login bash started below a listed tool does not restart itself" {
	printf 'x\n' >"$TR_DIR/x"
	n=$(tr_job_count)
	run timeout 120 env -u LD_PRELOAD -u BASH_ENV HOME="$TR_HOME" TR_MARK="$TR_MARK" \
		bash -lc "find $TR_DIR/x -exec bash -lc 'cat \$1; echo depth-ok' sh {} \\;"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'x\ndepth-ok')" ]
	jobs_since "$n" | grep -q ' tool=cat '
}
