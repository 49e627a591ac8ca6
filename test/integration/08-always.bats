#!/usr/bin/env bats
# truncate = always: every stream is shaped, as the seed did.

load helpers

setup_file() {
	tr_start "truncate = always" "spill_dir = $BATS_FILE_TMPDIR/spill" \
		"[tool.sort]" "max_lines = 500"
	make_lines "$TR_DIR/big" 50000
}

teardown_file() {
	tr_stop
}

@test "08-always-pipeline: a pipeline stage is shaped" {
	run tr_bash "cat $TR_DIR/big | wc -l"
	[ "$output" = 201 ]
}

@test "08-always-file: a redirect to a file is shaped" {
	run tr_bash "cat $TR_DIR/big > $TR_DIR/copy"
	[ "$(wc -l < "$TR_DIR/copy")" -eq 201 ]
	[ "$(head -n 100 "$TR_DIR/copy")" = "$(head -n 100 "$TR_DIR/big")" ]
	[ "$(tail -n 100 "$TR_DIR/copy")" = "$(tail -n 100 "$TR_DIR/big")" ]
	dropped=$(($(stat -c %s "$TR_DIR/big") - $(stat -c %s "$TR_DIR/copy") + $(sed -n 101p "$TR_DIR/copy" | wc -c)))
	[[ "$(sed -n 101p "$TR_DIR/copy")" == "...[toolrun cut 49800 lines ($dropped bytes) of cat's stdout here: lines 101-49900 of 50000; the whole stdout is in $BATS_FILE_TMPDIR/spill/$(id -u)/"*"-stdout.log]" ]]
}

@test "08-always-small: output under the limits is unchanged" {
	run tr_bash "head -n 3 $TR_DIR/big | cat"
	[ "$output" = "$(head -n 3 "$TR_DIR/big")" ]
}

@test "08-always-command-tool: inside a command, a listed tool's agent stream is cut once, by the command" {
	# sort's section allows 500 lines, the command's budget 200: one
	# marker, with the numbers of what sort wrote, naming a file that
	# holds all of it.
	n=$(tr_job_count)
	run --separate-stderr tr_agent "sort -k2,2n $TR_DIR/big"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 201 ]
	[ "$(grep -c '^\.\.\.\[toolrun cut ' <<<"$output")" -eq 1 ]
	dropped=$(($(stat -c %s "$TR_DIR/big") - $(head -n 100 "$TR_DIR/big" | wc -c) - $(tail -n 100 "$TR_DIR/big" | wc -c)))
	[[ "${lines[100]}" == "...[toolrun cut 49800 lines ($dropped bytes) of stdout here: lines 101-49900 of 50000; the whole stdout is in $BATS_FILE_TMPDIR/spill/$(id -u)/"*"-stdout.log]" ]]
	cmp "$(spill_path_in "${lines[100]}")" "$TR_DIR/big"
	jobs_since "$n" | grep -q ' tool=sort .*stdout=direct'
	# Its stream into the next program is still the tool's to shape.
	run tr_agent "sort -k2,2n $TR_DIR/big | grep -c \"^\\.\\.\\.\\[toolrun cut .* of sort's stdout here\""
	[ "$output" = 1 ]
}

@test "08-always-binary-flows: binary data flowing into the next program is passed on, not summarised" {
	head -c 3000 /bin/bash >"$TR_DIR/bin"
	run tr_bash "cat $TR_DIR/bin | od -c"
	[ "$status" -eq 0 ]
	[ "$output" = "$(od -c <"$TR_DIR/bin")" ]
	run tr_bash "printf 'x\\0y' | cat | od -c"
	[ "$output" = "$(printf 'x\0y' | od -c)" ]
	# What reaches the agent is still summarised.
	run --separate-stderr tr_bash "cat $TR_DIR/bin"
	[[ "$output" == "[toolrun: binary stdout of cat, 3000 bytes, ELF, sha256 $(sha256sum <"$TR_DIR/bin" | cut -d' ' -f1); the whole stdout is in "* ]]
}

@test "08-always-budget-held: a max_bytes above what toolrund holds is refused, naming its line" {
	printf '%s\n' "tools = cat" "truncate = always" "max_bytes = 1000000000" >"$TR_DIR/huge.conf"
	run --separate-stderr "$TR_DAEMON" -n --config "$TR_DIR/huge.conf"
	[ "$status" -eq 2 ]
	[ "$stderr" = "$TR_DIR/huge.conf:3: $(huge_message 1000000000)" ]
	# A reload says the same, and the daemon keeps its config.
	cp "$TOOLRUN_CONFIG" "$TR_DIR/kept.conf"
	printf '%s\n' "[tool.cat]" "max_bytes = 1048577" >>"$TOOLRUN_CONFIG"
	run --separate-stderr "$TR_CLI" reload
	cp "$TR_DIR/kept.conf" "$TOOLRUN_CONFIG"
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"$TOOLRUN_CONFIG:$(($(wc -l <"$TR_DIR/kept.conf") + 2)): $(huge_message 1048577)"* ]]
	# The most it holds is honoured: a stream of exactly that many bytes
	# flows on whole.
	head -c 1048576 /dev/zero | tr '\0' x >"$TR_DIR/mib"
	printf '%s\n' "[tool.cat]" "max_bytes = 1048576" >>"$TOOLRUN_CONFIG"
	"$TR_CLI" reload
	run tr_bash "cat $TR_DIR/mib | wc -c"
	cp "$TR_DIR/kept.conf" "$TOOLRUN_CONFIG"
	"$TR_CLI" reload
	[ "$output" = 1048576 ]
}

huge_message() {
	echo "max_bytes = $1 is more than toolrund holds of a stream: 1 to 1048576, or 0 for no byte limit of its own (a stream shaped for max_lines is still held to 1048576 bytes)"
}

# The job of TOOL has ended, after the first N job lines.
tool_ended() {
	jobs_since "$2" | grep -q " tool=$1 "
}

# cat_into_gated_reader READER: `cat big | { wait for a gate; READER; }`
# through toolrun, the gate opened only once cat's job has ended; prints
# what the pipeline wrote, then its PIPESTATUS.
cat_into_gated_reader() {
	local n pid
	mkfifo "$BATS_TEST_TMPDIR/gate"
	n=$(tr_job_count)
	tr_bash "cat $TR_DIR/big | { read -r _ <'$BATS_TEST_TMPDIR/gate'; $1; }; echo \"\${PIPESTATUS[*]}\"" \
		>"$BATS_TEST_TMPDIR/out" &
	pid=$!
	wait_for 60 tool_ended cat "$n"
	echo go >"$BATS_TEST_TMPDIR/gate"
	wait "$pid"
	cat "$BATS_TEST_TMPDIR/out"
}

@test "08-always-sigpipe-reader-left: a cut stream's program dies of SIGPIPE when its reader leaves without reading what it was given" {
	# The reader has read nothing when cat ends: run directly, cat would
	# be blocked writing, and die when the reader leaves.
	[ "$(cat_into_gated_reader 'read -r first; echo "$first"')" = $'line 1\n141 0' ]
}

@test "08-always-sigpipe-reader-reads: a reader that takes all it was given and waits for more gets end of file" {
	[ "$(cat_into_gated_reader 'wc -l')" = $'201\n0 0' ]
}
