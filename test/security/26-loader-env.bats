#!/usr/bin/env bats
# The environment a program gets is the policy's, loader variables
# included: LD_PRELOAD and LD_AUDIT pass env_allow / env_deny like any
# other name, and only toolrun's own library (the path `preload` names,
# or a file named libtoolrun.so) makes a program nested. Even then only
# toolrun's own TOOLRUN_ variables pass the filters unasked.
#
# "evil.so" is an empty file: ld.so that tries to load it says so on
# stderr, so a line from ld.so shows that the caller's library reached
# the program.

load helpers

setup_file() {
	# env with an allow-list; printenv with the default policy.
	tr_start 'tools = env printenv' '[tool.env]' 'env_allow = PATH HOME'
	EVIL="$TR_DIR/evil.so"
	LOOKALIKE="$TR_DIR/x/libtoolrun.so"
	mkdir "$TR_DIR/x"
	: >"$EVIL"
	: >"$LOOKALIKE"
	printf 'a\nb\n' >"$TR_DIR/ab"
	export EVIL LOOKALIKE
}

teardown_file() {
	tr_stop
}

# The tools of the jobs logged after the first N, sorted, one line.
tools_since() {
	jobs_since "$1" | sed -n 's/.* tool=\([^ ]*\) .*/\1/p' | LC_ALL=C sort | paste -sd, -
}

@test "01-ld-preload: with env_allow, a library the caller adds to LD_PRELOAD stays out" {
	# Directly, ld.so tries to load it: the probe works.
	run plain_bash "LD_PRELOAD=$EVIL env 2>&1"
	[[ "$output" == *"ld.so: object '$EVIL'"* ]]

	n=$(tr_job_count)
	run tr_bash "LD_PRELOAD=$TR_LIB:$EVIL env 2>&1"
	[ "$status" -eq 0 ]
	[ "$(tools_since "$n")" = env ]
	[[ "$output" != *ld.so* ]]
	[ -z "$(grep '^LD_' <<<"$output")" ]
	grep -qx "PATH=$PATH" <<<"$output"
}

@test "02-ld-audit: with env_allow, LD_AUDIT stays out" {
	run plain_bash "LD_AUDIT=$EVIL env 2>&1"
	[[ "$output" == *"ld.so: object '$EVIL'"* ]]

	n=$(tr_job_count)
	run tr_bash "LD_AUDIT=$EVIL env 2>&1"
	[ "$status" -eq 0 ]
	[ "$(tools_since "$n")" = env ]
	[[ "$output" != *ld.so* ]]
	[ -z "$(grep '^LD_' <<<"$output")" ]
}

@test "03-default: without a filter naming them, the caller's own loader variables pass" {
	run tr_bash "LD_AUDIT=$EVIL LD_LIBRARY_PATH=$TR_DIR/x printenv LD_AUDIT LD_LIBRARY_PATH 2>/dev/null"
	[ "$output" = "$(printf '%s\n' "$EVIL" "$TR_DIR/x")" ]
}

@test "04-lookalike: a libtoolrun.so by another path is ours, and a secret-looking TOOLRUN_ variable still goes" {
	n=$(tr_job_count)
	run tr_bash "LD_PRELOAD=$LOOKALIKE TOOLRUN_API_KEY=key-value-04 printenv 2>/dev/null"
	[ "$status" -eq 0 ]
	[ "$(tools_since "$n")" = printenv ]
	# Nested: the entry stays, toolrun's own variables with it (the file
	# here is not a library, so nothing hides them from printenv).
	grep -qx "LD_PRELOAD=$LOOKALIKE" <<<"$output"
	grep -qx "TOOLRUN_NESTED=1" <<<"$output"
	grep -qx "TOOLRUN_CONFIG=$TOOLRUN_CONFIG" <<<"$output"
	# The caller's TOOLRUN_API_KEY is a variable like any other, and the
	# default env_deny (*KEY*) drops it.
	# (A value no random name in the environment can hold.)
	[[ "$output" != *key-value-04* ]]
	! grep -q '^TOOLRUN_API_KEY=' <<<"$output"
}

@test "05-nested: toolrun's own library keeps nesting, alone, when the policy drops LD_PRELOAD" {
	n=$(tr_job_count)
	run tr_bash "LD_PRELOAD=$TR_LIB:$EVIL env cat $TR_DIR/ab 2>&1"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'a\nb')" ]
	# cat, started by env, went through the daemon too.
	[ "$(tools_since "$n")" = cat,env ]
}
