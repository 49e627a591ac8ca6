# The differential driver: run each corpus entry directly (plain_bash) and
# with toolrun on (tr_bash) and compare stdout, stderr, exit status and the
# files the line wrote; check in the daemon log which tools went through
# toolrund. Loaded by the .bats files that gen-bats.sh generates from
# corpus.txt and shaping.txt (see README.md).

# The integration harness: tr_start, tr_bash, plain_bash, jobs_since...
DT_HERE=$TOOLRUN_SOURCE/test/differential
load "$TOOLRUN_SOURCE/test/integration/helpers"
source "$DT_HERE/corpus.bash"

DT_TOOLS="cat grep find ls head tail sed awk sort uniq wc"

# dt_config FILE MAX_BYTES MAX_LINES [LINE...]: the whole config, written
# here rather than by tr_write_config, whose defaults would clash with
# ours (a key set twice is an error). DT_TRUNCATE: the truncate mode
# (default sink).
dt_config() {
	local file=$1 bytes=$2 lines=$3
	shift 3
	{
		echo "# written by test/differential/lib.bash"
		echo "socket = $TR_DIR/s.sock"
		echo "socket_fallback ="
		echo "preload = $TR_LIB"
		echo "tools = $DT_TOOLS"
		echo "max_bytes = $bytes"
		echo "max_lines = $lines"
		echo "timeout = 60"
		echo "truncate = ${DT_TRUNCATE:-sink}"
		echo "spill_dir = $TR_DIR/spill"
		echo "audit_log = $TR_DIR/audit.jsonl"
		# The policy is lifted, as the limits are: the suite compares
		# semantics. (The seccomp filter and no_new_privs stay.)
		echo "network = allow"
		echo "env_deny ="
		local r
		for r in as nproc fsize nofile cpu; do
			echo "rlimit_$r = unlimited"
		done
		local line
		for line in "$@"; do
			echo "$line"
		done
	} >"$file"
}

# dt_start MAX_BYTES MAX_LINES [LINE...]: a daemon with our config. tr_start
# sets up TR_DIR, the wrappers and a daemon with the default config; that
# daemon is replaced by one that reads ours.
dt_start() {
	tr_start || return 1
	tr_kill_daemon
	dt_config "$TOOLRUN_CONFIG" "$@"
	tr_launch
}

# dt_env_cmd: the environment of both runs of every entry, and nothing
# else from bats' (env -i): a fixed PATH, locale, time zone and terminal
# type, HOME in the fixture, and the config for tr_bash. DT_EXTRA_ENV
# (an array of NAME=VALUE) adds to it.
dt_env_cmd() {
	DT_ENV=(env -i "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
		"HOME=$DT_FX" "LANG=C.UTF-8" "TZ=UTC" "TERM=xterm" "TMPDIR=$TR_DIR"
		"TOOLRUN_CONFIG=$TOOLRUN_CONFIG" "${DT_EXTRA_ENV[@]}")
}

# ---------------------------------------------------------------- fixture

# dt_fixture DIR: the fixture the corpus runs in, the same on every run.
# Timestamps are fixed (ls -l, ls -t, find -newer); everything is written
# by deterministic commands. DIR/w is the scratch directory, emptied
# before every run; the rest must not be written by the corpus.
dt_fixture() {
	local fx=$1
	mkdir -p "$fx" && cd "$fx" || return 1
	mkdir -p w big tree/a/b/c tree/d tree/.hid tree/u tree/odd tree/emptydir

	cat >words.txt <<'EOF'
apple
Banana
cherry
apple
date
Éclair
éclair
banana
Apple
fig
grape
cherry
zeta
äpfel
Zebra
naïve
apple pie
Date
_under
10 apples
2 pears
EOF
	cat >nums.txt <<'EOF'
10
2
33
-4
2
100
7.5
0
-0.5
1e3
42
007
3
EOF
	cat >table.csv <<'EOF'
id,name,dept,salary
3,alice,eng,120
1,bob,ops,90
2,carol,eng,110
5,dave,sales,70
4,erin,ops,95
6,frank,eng,120
EOF
	printf 'alice\teng\t120\nbob\tops\t90\ncarol\teng\t110\ndave\tsales\t70\n' >table.tsv
	cat >passwd.txt <<'EOF'
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
sys:x:3:3:sys:/dev:/usr/sbin/nologin
agent:x:1000:1000:Agent Smith,,,:/home/agent:/bin/bash
EOF
	cat >utf8.txt <<'EOF'
Ärger über Öl
éclair ÉCLAIR Éclair
naïve café
日本語のテキスト
straße STRASSE
emoji 😀 🎉 done
ǅ title-case
Ωmega ωmega
EOF
	cat >lorem.txt <<'EOF'
Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod
tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim
veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea
commodo consequat. Duis aute irure dolor in reprehenderit in voluptate
velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint
occaecat cupidatat non proident, sunt in culpa qui officia deserunt
mollit anim id est laborum.

The needle is here: needle.
Another line with the word Needle and NEEDLE.
the end
EOF
	printf 'one\n\n\n\ntwo\n\nthree\n\n\n' >blank.txt
	printf 'tab\there\r\nbell\a ctrl-a\001 del\177\nhigh\200\377 utf8 é\n  trailing  \n' >ctrl.txt
	printf 'last line without newline' >noeol.txt
	: >empty.txt
	printf 'a\0b\0c\nd\0\nplain line\n\0\0\n' >nul.bin
	printf 'caf\351\nna\357ve\nplain\n' >latin1.txt
	printf 'dos\r\nlines\r\n' >crlf.txt
	printf 'a\na\nb\nc\nc\nc\nd\na\nA\na\nbb x\nbb y\n' >dup.txt
	printf 'x 1\nx 1\ny 1\nY 1\nz 2\n' >fields.txt
	printf '1.10\n1.2\n1.9\n10K\n2M\n3G\n512\n1.1.1\nfile10\nfile9\nfile1\n' >versions.txt
	printf 'Feb\nJan\nDec\nmar\nApr\n' >months.txt
	printf 'apple\ncherry\n' >patterns.txt
	printf '{ n++; s += length($0) }\nEND { printf "%%d lines, %%d chars\\n", n, s }\n' >prog.awk
	printf 's/a/4/g\ns/e/3/g\n' >prog.sed
	seq -f 'stdin line %g' 1 10 >stdin.txt
	perl -e 'srand(42); print map { chr(int(rand(256))) } 1..4096' >rand.bin
	perl -e 'print map { chr } 0..255' >allbytes.bin
	printf 'words.txt\0dup.txt\0noeol.txt\0' >files0.lst
	seq 1 50000 >lines50k.txt

	# Large files: ~22 MB of numbers, 10 MB of one repeated line, a 1 MB line.
	seq 1 3000000 >big/seq.txt
	yes abcdefghijklmnopqrstuvwxy | head -c 10000000 >big/yes.txt
	head -c 1048576 /dev/zero | tr '\0' x >big/line1m-noeol.txt
	{ cat big/line1m-noeol.txt; echo; } >big/line1m.txt

	# tree/: for ls, find and grep -r.
	printf 'one\nneedle in a\n' >tree/a/one.txt
	seq 1 30 >tree/a/b/two.log
	seq -f 'three %g needle' 1 300 >tree/a/b/c/three.txt
	printf 'FOUR\n' >tree/d/four.TXT
	printf 'spaced needle\n' >"tree/d/with space.txt"
	head -c 20000 big/yes.txt >tree/big.dat
	printf 'hidden needle\n' >tree/.hidden
	printf 'x\n' >tree/.hid/inner.txt
	: >tree/empty_file
	printf '#!/bin/sh\necho run\n' >tree/exe.sh
	chmod 755 tree/exe.sh
	chmod 600 tree/a/one.txt
	chmod 640 tree/a/b/two.log
	ln -s a/one.txt tree/link
	ln -s nowhere tree/dangling
	local n
	for n in a.txt B.txt é.txt Ä.txt z.txt _x.txt .dot; do
		printf '%s\n' "$n" >"tree/u/$n"
	done
	printf 'q\n' >"tree/odd/sp ace"
	printf 'n\n' >"tree/odd/new
line"
	printf 'q\n' >"tree/odd/quo'te"
	printf 'd\n' >"tree/odd/-dash"

	# Fixed times: every file gets its own hour of 2021-03-04 (UTC), in a
	# fixed order; directories last, deepest first.
	local t=1614816000 f
	while IFS= read -r -d '' f; do
		touch -h -d "@$t" "$f"
		t=$((t + 3600))
	done < <(find . -path ./w -prune -o ! -type d -print0 | LC_ALL=C sort -z)
	while IFS= read -r -d '' f; do
		touch -d "@$t" "$f"
		t=$((t + 3600))
	done < <(find . -path ./w -prune -o -type d -print0 | LC_ALL=C sort -rz)
	cd - >/dev/null
}

# ---------------------------------------------------------------- running

# dt_setup_file CORPUS MAX_BYTES MAX_LINES [CONFIG LINE...]: daemon,
# fixture and the split corpus, once per .bats file.
dt_setup_file() {
	local corpus=$1
	shift
	dt_start "$@" || return 1
	export DT_FX="$TR_DIR/fx" DT_CASES="$TR_DIR/cases" DT_OUT="$TR_DIR/out"
	# A run's bound, for a hang: entries take well under a second, but a
	# loaded machine may stretch the largest ones many times over.
	export DT_STDIN="$DT_FX/stdin.txt" DT_TIMEOUT=120
	export DT_MAX_BYTES=$1 DT_MAX_LINES=$2
	dt_fixture "$DT_FX" || return 1
	corpus_split "$corpus" "$DT_CASES" || return 1
	# The reference shaper, as a command for "--- ref" sections.
	mkdir -p "$TR_DIR/bin"
	cp "$DT_HERE/shape-ref.py" "$TR_DIR/bin/shape-ref"
	chmod +x "$TR_DIR/bin/shape-ref"
}

dt_teardown_file() {
	tr_stop
}

# dt_run WRAPPER CMD PREFIX MODE: run CMD in bash through WRAPPER from the
# fixture, into PREFIX.out, PREFIX.err, PREFIX.status, PREFIX.files.
# MODE says what the line's stdout and stderr are (the agent's streams):
#   file  regular files (the default for the differential corpus)
#   pipe  pipes, as under `docker exec` (the default for the shaping one)
#   joined  one pipe for both (2>&1 outside the line)
#   tty   a terminal (script(1)); stderr then goes to the terminal too
# The scratch directory w/ starts empty; the line gets fds 0, 1 and 2
# only (bats' own are closed) and the environment of dt_env_cmd.
dt_run() {
	local wrapper=$1 cmd=$2 p=$3 mode=$4 st inner
	local -a DT_ENV
	dt_env_cmd
	rm -rf "$DT_FX/w" && mkdir "$DT_FX/w" || return 1
	# What runs the line: close every fd above 2, enter the fixture, and
	# exec WRAPPER under timeout(1), in the clean environment.
	printf -v inner 'for f in /proc/$BASHPID/fd/*; do f=${f##*/}; [ "$f" -gt 2 ] && eval "exec $f>&-"; done; cd %q && exec timeout -k 5 %q' \
		"$DT_FX" "$DT_TIMEOUT"
	local word quoted
	for word in "${DT_ENV[@]}" "$wrapper" "$cmd"; do
		printf -v quoted '%q' "$word"
		inner+=" $quoted"
	done
	case $mode in
	file)
		bash -c "$inner" <"$DT_STDIN" >"$p.out" 2>"$p.err"
		st=$?
		;;
	pipe)
		bash -c "$inner" <"$DT_STDIN" 2> >(cat >"$p.err") | cat >"$p.out"
		st=${PIPESTATUS[0]}
		wait $! # the process substitution
		;;
	joined)
		bash -c "$inner" <"$DT_STDIN" 2>&1 | cat >"$p.out"
		st=${PIPESTATUS[0]}
		: >"$p.err"
		;;
	tty)
		# script(1) gives the line a terminal; its own stdin is empty.
		SHELL=/bin/bash script -qec "$inner" /dev/null </dev/null >"$p.out" 2>"$p.err"
		st=$?
		;;
	*)
		echo "dt_run: unknown mode $mode" >&2
		return 1
		;;
	esac
	echo "$st" >"$p.status"
	# What the line left in w/: type, mode, size, name, link target and
	# the files' hashes (not their times).
	(cd "$DT_FX/w" && find . -printf '%y %m %s %p -> %l\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) >"$p.files"
}

# dt_via N: the tools of the jobs the daemon logged after the first N,
# sorted, comma-separated ("-" for none).
dt_via() {
	local v
	v=$(jobs_since "$1" | sed -n 's/.* tool=\([^ ]*\) .*/\1/p' | LC_ALL=C sort | paste -sd, -)
	echo "${v:--}"
}

# dt_show_diff LABEL A B NAME_A NAME_B: a unified diff of two outputs (of
# their first MB), as text when they are text, else of their od -c dumps;
# at most 150 lines of it.
dt_show_diff() {
	local label=$1 a=$2 b=$3 na=$4 nb=$5 d
	if cmp -s "$a" "$b"; then
		echo "$label: identical"
		return 0
	fi
	echo "$label differs ($(wc -c <"$a") bytes $na, $(wc -c <"$b") bytes $nb):"
	if LC_ALL=C grep -qaP '[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]' "$a" "$b" ||
		! iconv -f UTF-8 -t UTF-8 "$a" >/dev/null 2>&1 ||
		! iconv -f UTF-8 -t UTF-8 "$b" >/dev/null 2>&1; then
		d=$(diff -u --label "$label ($na, od -c)" --label "$label ($nb, od -c)" \
			<(head -c 1048576 "$a" | od -An -c -v) <(head -c 1048576 "$b" | od -An -c -v)) || true
	else
		d=$(diff -u --label "$label ($na)" --label "$label ($nb)" \
			<(head -c 1048576 "$a") <(head -c 1048576 "$b")) || true
	fi
	printf '%s\n' "$d" | head -n 150
	if [ "$(printf '%s\n' "$d" | wc -l)" -gt 150 ]; then
		echo "... (diff cut at 150 lines)"
	fi
}

# dt_report ID P1 P2 NAME1 NAME2: everything about a difference.
dt_report() {
	local id=$1 a=$2 b=$3
	echo "entry $id, command:"
	sed 's/^/    /' "$DT_CASES/$id/cmd"
	echo
	echo "exit status: $4 $(cat "$a.status"), $5 $(cat "$b.status")"
	dt_show_diff stdout "$a.out" "$b.out" "$4" "$5"
	dt_show_diff stderr "$a.err" "$b.err" "$4" "$5"
	dt_show_diff "files left in w/" "$a.files" "$b.files" "$4" "$5"
}

dt_same() { # P1 P2: same status, stdout, stderr and files
	cmp -s "$1.status" "$2.status" && cmp -s "$1.out" "$2.out" &&
		cmp -s "$1.err" "$2.err" && cmp -s "$1.files" "$2.files"
}

# dt_expand_via LIST: "awk*3,cat" -> "awk,awk,awk,cat" (each alternative
# of A|B alike).
dt_expand_via() {
	local alt out= w tool count word
	local -a alts words
	IFS='|' read -ra alts <<<"$1"
	for alt in "${alts[@]}"; do
		w=
		IFS=, read -ra words <<<"$alt"
		for word in "${words[@]}"; do
			tool=${word%\**}
			count=1
			[ "$tool" = "$word" ] || count=${word##*\*}
			while [ "$count" -gt 0 ]; do
				w+="${w:+,}$tool"
				count=$((count - 1))
			done
		done
		out+="${out:+|}$w"
	done
	echo "$out"
}

# dt_check_via ID N: the tools that went through the daemon, against the
# entry's via= (tools sorted, comma-separated, NAME*N for N times; "-":
# none). Each job's log line is written before its client is told the
# exit; still, allow the log a moment.
dt_check_via() {
	local id=$1 n=$2 want got i
	want=$(corpus_meta "$DT_CASES" "$id" via) || want=
	want=$(dt_expand_via "$want")
	for i in $(seq 1 "$([ -n "$want" ] && echo 10 || echo 1)"); do
		got=$(dt_via "$n")
		# via=A|B: either (where the lead's work in progress may change it)
		case "|$want|" in *"|$got|"*) return 0 ;; esac
		sleep 0.1
	done
	if [ -n "${DT_RECORD:-}" ]; then
		printf '%s via=%s\n' "$id" "$got" >>"$DT_RECORD"
		return 0
	fi
	if [ -z "$want" ]; then
		echo "entry $id has no via=; the daemon ran: via=$got"
	else
		echo "entry $id: the daemon ran via=$got, the corpus says via=$want"
	fi
	jobs_since "$n" | sed 's/^/    /'
	return 1
}

# dt_known ID VERDICT: a KNOWN-DIFF entry fails with its reason; if it
# shows no difference any more, it fails too, so that the mark goes.
dt_known() {
	local id=$1 differs=$2 f=$DT_CASES/$1/known
	if [ -f "$f" ]; then
		if [ "$differs" = yes ]; then
			echo "KNOWN-DIFF: $(cat "$f")"
		else
			echo "marked KNOWN-DIFF ($(cat "$f")) but no difference now: remove the mark"
		fi
		return 1
	fi
	[ "$differs" = no ]
}

# diff_case ID: one entry of the differential corpus.
diff_case() {
	local id=$1 cmd mode out n differs=no
	cmd=$(cat "$DT_CASES/$id/cmd")
	mode=$(corpus_meta "$DT_CASES" "$id" mode) || mode=file
	out="$DT_OUT/$id"
	mkdir -p "$out"
	dt_run "$PLAIN_BASH" "$cmd" "$out/direct" "$mode" || return 1
	n=$(tr_job_count)
	dt_run "$TR_BASH" "$cmd" "$out/toolrun" "$mode" || return 1
	if ! dt_same "$out/direct" "$out/toolrun"; then
		differs=yes
		dt_report "$id" "$out/direct" "$out/toolrun" direct toolrun
	fi
	local via_ok=0
	dt_check_via "$id" "$n" || via_ok=1
	dt_known "$id" "$differs" || return 1
	[ "$via_ok" -eq 0 ] || return 1
	dt_done "$out"
}

# dt_done DIR: a passed entry's outputs go (DT_KEEP=DIR keeps a copy, for
# reviewing what the corpus does).
dt_done() {
	if [ -n "${DT_KEEP:-}" ]; then
		mkdir -p "$DT_KEEP" && cp -r "$1" "$DT_KEEP/"
	fi
	rm -rf "$1"
}

# shape_case ID: one entry of the shaping corpus (see README.md): the
# toolrun run against the expected output, derived from the direct run.
shape_case() {
	local id=$1 cmd kind mode limits out n differs=no b l
	cmd=$(cat "$DT_CASES/$id/cmd")
	kind=$(corpus_meta "$DT_CASES" "$id" kind) || kind=shape
	mode=$(corpus_meta "$DT_CASES" "$id" mode) || mode=pipe
	limits=$(corpus_meta "$DT_CASES" "$id" limits) || limits="$DT_MAX_BYTES,$DT_MAX_LINES"
	b=${limits%,*}
	l=${limits#*,}
	out="$DT_OUT/$id"
	mkdir -p "$out"
	dt_run "$PLAIN_BASH" "$cmd" "$out/direct" "$mode" || return 1
	n=$(tr_job_count)
	dt_run "$TR_BASH" "$cmd" "$out/toolrun" "$mode" || return 1

	# The whole of a cut stream is in the file its marker names: when one
	# program wrote the stream (kind=shape, stdout and stderr apart), that
	# file must hold what the direct run wrote. Then the path and the
	# program's name (the unit tests check those) give way to fixed text
	# that the reference model writes too.
	local f path whole=no
	if [ "$kind" = shape ] && ! corpus_meta "$DT_CASES" "$id" names >/dev/null; then
		whole=yes
	fi
	for f in out err; do
		path=$(sed -n 's/.*the whole [a-z]* is in \([^] ]*\).*/\1/p' "$out/toolrun.$f" | head -n 1)
		if [ "$whole" = yes ] && [ -n "$path" ] && ! cmp -s "$path" "$out/direct.$f"; then
			echo "entry $id: the spill file $path does not hold the direct run's std$f"
			return 1
		fi
		[ -z "$path" ] || rm -f "$path"
		sed -i -E -e 's#(the whole [a-z]+ is in )[^] ]+#\1SPILL#' \
			-e "s#( of )[^ ]+'s (stdout|stderr|output) here#\\1\\2 here#" \
			-e 's#(\[toolrun: binary [a-z]+) of [^,]+,#\1,#' "$out/toolrun.$f"
	done

	# The expectation: status and files as run directly; the streams as
	# the kind says.
	cp "$out/direct.status" "$out/expected.status"
	cp "$out/direct.files" "$out/expected.files"
	case $kind in
	same)
		cp "$out/direct.out" "$out/expected.out"
		cp "$out/direct.err" "$out/expected.err"
		;;
	shape)
		# names=OUT,ERR: what the shaped program calls the streams that
		# reach the agent's stdout and stderr ("output" when its stdout
		# and stderr are one pipe, as with `cat >&2` or 2>&1).
		local names
		names=$(corpus_meta "$DT_CASES" "$id" names) || names=stdout,stderr
		"$TR_DIR/bin/shape-ref" --spill SPILL --stream "${names%,*}" "$b" "$l" \
			<"$out/direct.out" >"$out/expected.out"
		"$TR_DIR/bin/shape-ref" --spill SPILL --stream "${names#*,}" "$b" "$l" \
			<"$out/direct.err" >"$out/expected.err"
		;;
	ref)
		# The "--- ref" section, run directly, with shape-ref on PATH and
		# SHAPE_BYTES/SHAPE_LINES set, gives the expected streams.
		local ref
		ref=$(cat "$DT_CASES/$id/ref")
		local -a DT_EXTRA_ENV=("SHAPE_BYTES=$b" "SHAPE_LINES=$l" "SHAPE_SPILL=SPILL"
			"PATH=$TR_DIR/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
		dt_run "$PLAIN_BASH" "$ref" "$out/ref" "$mode" || return 1
		cp "$out/ref.out" "$out/expected.out"
		cp "$out/ref.err" "$out/expected.err"
		;;
	*)
		echo "entry $id: unknown kind=$kind"
		return 1
		;;
	esac
	if ! dt_same "$out/expected" "$out/toolrun"; then
		differs=yes
		echo "(expected: the direct run, shaped as kind=$kind limits=$limits says)"
		dt_report "$id" "$out/expected" "$out/toolrun" expected toolrun
	fi
	local via_ok=0 re
	dt_check_via "$id" "$n" || via_ok=1
	if [ -f "$DT_CASES/$id/log" ]; then
		while IFS= read -r re; do
			[ -n "$re" ] || continue
			if ! jobs_since "$n" | grep -qE -- "$re"; then
				echo "entry $id: no job line matches /$re/; the jobs:"
				jobs_since "$n" | sed 's/^/    /'
				via_ok=1
			fi
		done <"$DT_CASES/$id/log"
	fi
	dt_known "$id" "$differs" || return 1
	[ "$via_ok" -eq 0 ] || return 1
	dt_done "$out"
}
