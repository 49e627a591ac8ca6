#!/usr/bin/env bats
# Spill files for every uid a daemon serves, root included, in any order
# (issue 23): a daemon started as root that runs as nobody (`user`), as
# the box's runs as toolrun, keeping CAP_SETUID, CAP_SETGID, CAP_KILL and
# CAP_CHOWN, serves root and another uid. Acting as uid 0 once took
# CAP_CHOWN from its launcher for good (capabilities(7): the fsuid going
# from 0 to another uid), and every later spill directory could not be
# given to its uid. A spill_dir that another uid made first must not stop
# spilling either: toolrund uses a directory of its own beside it.

load helpers

# The other caller: a uid with no passwd entry is served by number.
OTHER_UID=4242

setup_file() {
	TR_FILE_SKIP=
	if [ "$(id -u)" -ne 0 ]; then
		TR_FILE_SKIP="needs root to start a daemon that drops to nobody and serves another uid"
	elif ! id -u nobody >/dev/null 2>&1; then
		TR_FILE_SKIP="this machine has no user nobody"
	elif ! command -v setpriv >/dev/null; then
		TR_FILE_SKIP="setpriv is not installed"
	fi
	export TR_FILE_SKIP
	[ -z "$TR_FILE_SKIP" ] || return 0
	TR_DIR=$(mktemp -d /tmp/trt.XXXXXX)
	chmod 755 "$TR_DIR"
	export TR_DIR TOOLRUN_CONFIG="$TR_DIR/toolrun.conf" TR_MARK="trmark-$TR_DIR"
	# A /tmp of the file's own, as the box's: sticky, open to everyone.
	mkdir -m 1777 "$TR_DIR/tmp"
	# The audit log where nobody may write it.
	mkdir -m 755 "$TR_DIR/log"
	chown nobody "$TR_DIR/log"
	tr_write_config "$TOOLRUN_CONFIG" "user = nobody" "allow_uids = root $OTHER_UID" \
		"audit_log = $TR_DIR/log/audit.jsonl" "spill_dir = $TR_DIR/tmp/spill"
	chmod 644 "$TOOLRUN_CONFIG"
	tr_write_wrappers
	# Longer than the budget (4000 bytes), readable by both callers.
	make_lines "$TR_DIR/lines" 3000
	chmod 644 "$TR_DIR/lines"
	tr_launch
}

teardown_file() {
	[ -n "${TR_FILE_SKIP:-}" ] || tr_stop
}

setup() {
	[ -z "${TR_FILE_SKIP:-}" ] || skip "$TR_FILE_SKIP"
}

# as_other WRAPPER COMMAND: a wrapper ($TR_BASH, $PLAIN_BASH) as the
# other caller, from /.
as_other() {
	(cd / && setpriv --reuid="$OTHER_UID" --regid="$OTHER_UID" --clear-groups "$@")
}

# cut_and_kept DIR UID [as_other]: `cat lines` through toolrun, as root
# or as the other caller, is cut; its marker names a file in DIR/UID/,
# owned by UID, that UID reads back without toolrun byte for byte.
cut_and_kept() {
	local dir=$1 uid=$2 path
	shift 2
	run --separate-stderr "$@" "$TR_BASH" "cat $TR_DIR/lines"
	[ "$status" -eq 0 ]
	path=$(spill_path_in "$output")
	if [ -z "$path" ]; then
		echo "uid $uid: no spill file named; the marker:" >&2
		grep -F '[toolrun' <<<"$output" >&2
		return 1
	fi
	[[ "$path" == "$dir/$uid/"*-stdout.log ]]
	[ "$(stat -c %u "$path")" = "$uid" ]
	[ "$(stat -c %a "$path")" = 600 ]
	"$@" "$PLAIN_BASH" "cat '$path'" | cmp - "$TR_DIR/lines"
}

@test "27-spill-owners-root-then-other: root's cut output, then another uid's, then root's again, are all kept" {
	cut_and_kept "$TR_DIR/tmp/spill" 0
	cut_and_kept "$TR_DIR/tmp/spill" "$OTHER_UID" as_other
	cut_and_kept "$TR_DIR/tmp/spill" 0
	cut_and_kept "$TR_DIR/tmp/spill" "$OTHER_UID" as_other
}

@test "27-spill-owners-taken-spill-dir: a spill_dir another uid made first does not stop spilling" {
	local taken="$TR_DIR/tmp/taken" beside
	tr_kill_daemon
	# The other uid makes it before the daemon starts, as a caller could.
	as_other mkdir -m 755 "$taken"
	sed -i "s|^spill_dir = .*|spill_dir = $taken|" "$TOOLRUN_CONFIG"
	tr_launch
	# The launcher says so when it starts, naming both directories.
	wait_for 30 grep -q "spill files go to $taken\." "$TR_DIR/daemon.log"
	grep -F "spill_dir $taken: owned by uid $OTHER_UID, not by toolrund's ($(id -u nobody)); spill files go to $taken." "$TR_DIR/daemon.log"
	beside=$(sed -n "s|.*spill files go to \($taken\.[A-Za-z0-9]\{6\}\) instead.*|\1|p" "$TR_DIR/daemon.log")
	[ -n "$beside" ]
	[ "$(stat -c '%U %a' "$beside")" = "nobody 755" ]
	cut_and_kept "$beside" "$OTHER_UID" as_other
	cut_and_kept "$beside" 0
	# Nothing went into the other uid's directory.
	[ -z "$(ls -A "$taken")" ]
}
