#!/usr/bin/env bats
# Variables that look like secrets (the default env_deny: *TOKEN*,
# *SECRET*, *KEY*) reach no program: not the shell of an agent command,
# not a session's shell, not a listed tool. A harness that means a
# program to have one sets an env_deny that does not match it.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

SHOW='echo "${API_TOKEN-unset} ${MY_SECRET-unset} ${PLAIN-unset}"'

# The variables, as `docker exec -e` passes them, to a program.
with_vars() {
	env API_TOKEN=t0ken MY_SECRET=s3cret PLAIN=plain "$@"
}

# What an agent command's shell sees.
in_command() {
	run --separate-stderr with_vars "$AGENT_BASH" "$SHOW"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	echo "$output"
}

# What a command in a session (toolrun session new, then run) sees.
in_session() {
	local id
	id=$(with_vars "$TR_CLI" session new)
	[ -n "$id" ]
	run --separate-stderr "$TR_CLI" session run "$id" -- "$SHOW"
	"$TR_CLI" session close "$id"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	echo "$output"
}

# What a listed tool (awk) sees, run from a shell with toolrun on.
in_tool() {
	run --separate-stderr with_vars "$TR_BASH" \
		"awk 'BEGIN { print (ENVIRON[\"API_TOKEN\"] ? ENVIRON[\"API_TOKEN\"] : \"unset\"), (ENVIRON[\"MY_SECRET\"] ? ENVIRON[\"MY_SECRET\"] : \"unset\"), ENVIRON[\"PLAIN\"] }'"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	echo "$output"
}

# Serve a config with these extra lines from now on.
reconfigure() {
	tr_write_config "$TOOLRUN_CONFIG" "$@"
	"$TR_CLI" reload >/dev/null
}

@test "29-secret-env 01: an agent command's shell does not see API_TOKEN or MY_SECRET" {
	[ "$(in_command)" = "unset unset plain" ]
}

@test "29-secret-env 02: a session's shell does not see them" {
	[ "$(in_session)" = "unset unset plain" ]
}

@test "29-secret-env 03: a listed tool does not see them" {
	[ "$(in_tool)" = "unset unset plain" ]
}

@test "29-secret-env 04: with an env_deny that does not match them, all three see them" {
	reconfigure "env_deny = *PASSWORD*"
	[ "$(in_command)" = "t0ken s3cret plain" ]
	[ "$(in_session)" = "t0ken s3cret plain" ]
	[ "$(in_tool)" = "t0ken s3cret plain" ]
	reconfigure
}

@test "29-secret-env 05: env_allow: a command keeps toolrun, so a listed tool below it still goes through toolrund" {
	local jobs
	reconfigure "env_allow = PATH PLAIN"
	echo hello >"$TR_DIR/hello.txt"
	jobs=$(tr_job_count)
	run --separate-stderr with_vars "$AGENT_BASH" "$SHOW; cat $TR_DIR/hello.txt"
	reconfigure
	[ "$status" -eq 0 ]
	same_text "unset unset plain
hello" "$output"
	# The command and cat, each a job of toolrund's.
	[ "$(jobs_since "$jobs" | wc -l)" -eq 2 ]
	[ "$(jobs_since "$jobs" | grep -c ' tool=cat ')" -eq 1 ]
}
