#!/usr/bin/env bats
# Pipelines end when their reader ends, as they do without toolrun. The
# bounds are generous: they catch a hang, not a slow machine.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

@test "05-pipes-yes-head: yes | head -1 returns" {
	run --separate-stderr timeout 120 "$TR_BASH" 'yes | head -1'
	[ "$status" -eq 0 ]
	[ "$output" = y ]
}

@test "05-pipes-zero-head: cat /dev/zero | head -c 10 returns ten bytes" {
	run timeout 120 "$TR_BASH" 'cat /dev/zero | head -c 10 | wc -c'
	[ "$status" -eq 0 ]
	[ "$output" = 10 ]
}

@test "05-pipes-reader-gone: the agent's reader closing ends a shaped cat with SIGPIPE" {
	# Endless text: binary output would reach the reader only at its end.
	run timeout 120 bash -c "'$TR_BASH' 'yes | cat' | head -c 10 >/dev/null; echo \${PIPESTATUS[0]}"
	[ "$status" -eq 0 ]
	[ "$output" = 141 ]
}

# toolrund drains a shaped stream past its budget, so a tool can finish
# writing although its reader left; run directly it would have blocked on
# the full pipe and died of SIGPIPE. Here cat writes 229 KB (more than a
# pipe holds), then reads its stdin until its reader has surely gone:
# through toolrun its caller must end as it would have, with SIGPIPE.
@test "05-pipes-drained-sigpipe: a shaped tool that wrote past a reader that left ends with SIGPIPE" {
	seq 1 40000 >"$TR_DIR/big"
	rm -f "$TR_DIR/reader-gone" "$TR_DIR/go-on"
	run timeout 120 bash -c "
		{ until [ -e '$TR_DIR/go-on' ]; do sleep 0.05; done; } |
			'$TR_BASH' 'cd \"$TR_DIR\" && cat big -; echo \$? >&2' 2>'$TR_DIR/status' |
			{ head -c 10 >/dev/null; exec 0<&-; touch '$TR_DIR/reader-gone'; } &
		until [ -e '$TR_DIR/reader-gone' ]; do sleep 0.05; done
		touch '$TR_DIR/go-on'
		wait
		cat '$TR_DIR/status'"
	[ "$status" -eq 0 ]
	[ "$output" = 141 ]
	# The same cat run directly, into the same reader.
	run timeout 120 bash -c "'$PLAIN_BASH' 'cd \"$TR_DIR\" && cat big' | head -c 10 >/dev/null; echo \${PIPESTATUS[0]}"
	[ "$output" = 141 ]
}

# Run directly, the program alone holds its end of each pipe; the process
# that stands in for it must not keep a copy, or the writer upstream would
# never get its SIGPIPE (`seq 1 100000 | cat | head -1`). Only stderr stays,
# for the caller's own messages.
@test "05-pipes-caller-lets-go: the caller keeps none of the fds it passed on" {
	run timeout 30 "$TR_BASH" '
		{ echo x; sleep 8; } | cat 3</dev/null >"$TR_DIR/caller-out" &
		caller=$!
		for ((i = 0; i < 400; i++)); do
			[ -s "$TR_DIR/caller-out" ] && [ ! -e /proc/$caller/fd/0 ] && break
			sleep 0.01
		done
		echo "fds: $(ls /proc/$caller/fd | sort -n | tr "\n" " ")"
		kill $caller; wait $caller'
	echo "$output"
	[[ "${lines[0]}" == "fds: 2 "* ]]
	[[ ! "${lines[0]}" =~ \ [013]\  ]]
}
