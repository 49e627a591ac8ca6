# The corpus format, shared by the generator (gen-bats.sh) and the driver
# (lib.bash). See README.md in this directory.
#
#   ## a comment line (anywhere: a command cannot have a line starting "##")
#   === ID [key=value ...] [KNOWN-DIFF: reason]
#   command line(s), any bytes but NUL, any number of lines
#   --- ref              (shaping corpus only: the reference command)
#   --- log              (shaping corpus only: regexes for the job lines)
#
# An entry runs from its "=== " header to the next header. Blank lines at
# either end of a section are dropped; everything else is kept as it is
# (tabs, quotes, backslashes, here-documents).

# corpus_split CORPUS DIR: one directory per entry, DIR/ID/, holding
#   cmd            the command (no trailing newline)
#   ref, log       the "--- ref" and "--- log" sections, when present
#   meta           the header's key=value words, one per line
#   known          the KNOWN-DIFF reason, when present
# and DIR/ids, the ids in corpus order. Fails on a malformed corpus
# (duplicate or badly formed id, text before the first header, an entry
# without a command).
corpus_split() {
	local corpus=$1 dir=$2
	local line id= section= lineno=0 rest word
	local -a words
	local -A seen=()
	local -a ids=()

	# Every entry's directory at once (one mkdir, not one per entry).
	local -a dirs=()
	while IFS= read -r line || [ -n "$line" ]; do
		[[ $line == '=== '* ]] || continue
		rest=${line#=== }
		id=${rest%% *}
		[[ $id =~ ^[0-9]{3}-[a-z0-9]+-[A-Za-z0-9-]+$ ]] && dirs+=("$dir/$id")
	done <"$corpus"
	id=
	mkdir -p "$dir" "${dirs[@]}" || return 1
	while IFS= read -r line || [ -n "$line" ]; do
		lineno=$((lineno + 1))
		case $line in
		'##'*)
			continue
			;;
		'=== '*)
			rest=${line#=== }
			id=${rest%% *}
			rest=${rest#"$id"}
			if ! [[ $id =~ ^[0-9]{3}-[a-z0-9]+-[A-Za-z0-9-]+$ ]]; then
				echo "$corpus:$lineno: bad id '$id' (want NNN-area-what)" >&2
				return 1
			fi
			if [ -n "${seen[$id]:-}" ]; then
				echo "$corpus:$lineno: duplicate id $id" >&2
				return 1
			fi
			seen[$id]=1
			ids+=("$id")
			: >"$dir/$id/meta"
			case $rest in
			*' KNOWN-DIFF:'*)
				word=${rest#* KNOWN-DIFF:}
				printf '%s\n' "${word#"${word%%[! ]*}"}" >"$dir/$id/known"
				rest=${rest%% KNOWN-DIFF:*}
				;;
			esac
			read -ra words <<<"$rest"
			for word in "${words[@]}"; do
				printf '%s\n' "$word" >>"$dir/$id/meta"
			done
			section=cmd
			: >"$dir/$id/cmd.raw"
			continue
			;;
		'--- ref' | '--- log')
			if [ -z "$id" ]; then
				echo "$corpus:$lineno: section before the first entry" >&2
				return 1
			fi
			section=${line#--- }
			: >"$dir/$id/$section.raw"
			continue
			;;
		esac
		if [ -z "$id" ]; then
			[ -z "$line" ] && continue
			echo "$corpus:$lineno: text before the first entry" >&2
			return 1
		fi
		printf '%s\n' "$line" >>"$dir/$id/$section.raw"
	done <"$corpus"

	# Drop blank lines (spaces and tabs only) at both ends and the final
	# newline. In bash alone: a process per section would take most of a
	# minute on a loaded machine.
	local f s e IFS=$'\n'
	local -a l
	for id in "${ids[@]}"; do
		for f in "$dir/$id"/*.raw; do
			mapfile -t l <"$f"
			s=0
			e=$((${#l[@]} - 1))
			while [ "$s" -le "$e" ] && [[ ${l[s]} =~ ^[[:blank:]]*$ ]]; do s=$((s + 1)); done
			while [ "$e" -ge "$s" ] && [[ ${l[e]} =~ ^[[:blank:]]*$ ]]; do e=$((e - 1)); done
			# The kept lines, joined by IFS's newline.
			printf '%s' "${l[*]:s:e-s+1}" >"${f%.raw}"
		done
		if ! [ -s "$dir/$id/cmd" ]; then
			echo "$corpus: entry $id has no command" >&2
			return 1
		fi
	done
	rm -f "$dir"/*/*.raw
	printf '%s\n' "${ids[@]}" >"$dir/ids"
}

# corpus_meta DIR ID KEY: the value of KEY=... in the entry's header, or
# "1" for a bare KEY, or nothing (status 1) when it is absent.
corpus_meta() {
	local w
	while IFS= read -r w; do
		case $w in
		"$3") echo 1; return 0 ;;
		"$3="*) printf '%s\n' "${w#*=}"; return 0 ;;
		esac
	done <"$1/$2/meta"
	return 1
}
