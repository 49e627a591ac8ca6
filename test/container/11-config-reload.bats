#!/usr/bin/env bats
# A config mounted into the box and edited on the host: the library reads
# the new file at once, the daemon when told (`toolrun reload`); until
# then the refusal says so and what to do.

load helpers

setup_file() {
	ct_setup_image || return 1
	[ -n "${CT_SKIP-}" ] && return 0
	CONF="$BATS_FILE_TMPDIR/toolrun.conf"
	docker run --rm --entrypoint cat "$CT_IMAGE" /etc/toolrun/toolrun.conf >"$CONF"
	chmod 0644 "$CONF"
	export CONF
	CT_BOX=$(ct_start reload --config "$CONF") || return 1
	export CT_BOX
}
teardown_file() { ct_teardown_file; }
setup() { ct_setup; }

# Edit in place: a bind-mounted file keeps its inode (sed -i would make a
# new file that the container never sees).
add_tool() {
	local text
	text=$(sed -E "s/^(tools *=.*)$/\1 $1/" "$CONF")
	printf '%s\n' "$text" >"$CONF"
}

@test "11-config-reload: a tool added on the host runs through the daemon after toolrun reload" {
	add_tool nl
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'nl words.txt'
	[ "$status" -eq 126 ]
	[[ "$stderr" == *"toolrun: nl: not a tool listed in /etc/toolrun/toolrun.conf as toolrund read it (at "*" UTC); if the file lists it now, run 'toolrun reload'"* ]]
	run --separate-stderr docker exec -u 1000 "$CT_BOX" toolrun reload
	[ "$status" -eq 0 ]
	[[ "$output" == "toolrund reloaded /etc/toolrun/toolrun.conf: "* ]]
	local before
	before=$(ct_job_count)
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'nl words.txt'
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'alpha\nbeta\ngamma\nbeta\n' | nl)" ]
	ct_wait_job "$before" ' tool=nl .* exit=0 '
}

@test "11-config-reload: a file with an error is refused by line, and the daemon keeps serving" {
	local good
	good=$(cat "$CONF")
	printf 'colour = blue\n%s\n' "$good" >"$CONF"
	run --separate-stderr docker exec -u 1000 "$CT_BOX" toolrun reload
	[ "$status" -eq 2 ]
	[ "$stderr" = "toolrun: /etc/toolrun/toolrun.conf:1: unknown key 'colour'" ]
	printf '%s\n' "$good" >"$CONF"
	run --separate-stderr docker exec -u 1000 "$CT_BOX" bash -lc 'cat words.txt | grep -c beta'
	[ "$status" -eq 0 ]
	[ "$output" = 2 ]
}
