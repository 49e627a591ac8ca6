#!/usr/bin/env bats
# Malformed and oversized frames sent straight to the socket: the daemon
# answers with an Error, closes that connection, and keeps serving.

load helpers

setup_file() {
	tr_start
}

teardown_file() {
	tr_stop
}

frame() {
	run --separate-stderr timeout 120 "$TR_RAWFRAME" "$TR_DIR/s.sock" "$1"
	[ "$status" -eq 0 ]
}

still_serving() {
	"$TR_CLI" ping >/dev/null
	run tr_bash 'cat /etc/hostname'
	[ "$output" = "$(cat /etc/hostname)" ]
}

@test "13-protocol-garbage: random bytes get BAD_FRAME and a close" {
	frame garbage
	[ "${lines[0]}" = "error ERROR_BAD_FRAME: malformed frame (bad header, fds not matching its count, or cut short)" ]
	[ "${lines[1]}" = closed ]
	still_serving
}

@test "13-protocol-huge-length: a length field of 4 GiB gets FRAME_TOO_LARGE" {
	frame huge-length
	[ "${lines[0]}" = "error ERROR_FRAME_TOO_LARGE: frame of 4294967295 bytes exceeds the maximum of 4096 for Hello" ]
	[ "${lines[1]}" = closed ]
	still_serving
}

@test "13-protocol-too-large: a Request one byte over the maximum gets FRAME_TOO_LARGE" {
	frame too-large
	[ "${lines[0]}" = "hello 1" ]
	[ "${lines[1]}" = "error ERROR_FRAME_TOO_LARGE: frame of 8388609 bytes exceeds the maximum of 8388608 for a Request" ]
	[ "${lines[2]}" = closed ]
	still_serving
}

@test "13-protocol-bad-version: a frame version other than 1 gets BAD_FRAME" {
	frame bad-version
	[[ "${lines[0]}" == "error ERROR_BAD_FRAME: "* ]]
	[ "${lines[1]}" = closed ]
}

@test "13-protocol-bad-flags: reserved flags set get BAD_FRAME" {
	frame bad-flags
	[[ "${lines[0]}" == "error ERROR_BAD_FRAME: "* ]]
}

@test "13-protocol-undecodable: a payload that is not protobuf gets BAD_MESSAGE" {
	frame undecodable
	[ "${lines[0]}" = "error ERROR_BAD_MESSAGE: payload is not a ClientMessage" ]
	[ "${lines[1]}" = closed ]
	still_serving
}

@test "13-protocol-empty-message: a message of no known type gets BAD_MESSAGE" {
	frame empty-message
	[ "${lines[0]}" = "error ERROR_BAD_MESSAGE: message of an unknown type or with unknown fields" ]
}

@test "13-protocol-ping-first: anything before Hello gets UNEXPECTED_MESSAGE" {
	frame ping-first
	[ "${lines[0]}" = "error ERROR_UNEXPECTED_MESSAGE: the first message must be Hello" ]
}

@test "13-protocol-wrong-version: an unknown protocol version is refused" {
	frame wrong-version
	[ "${lines[0]}" = "error ERROR_UNSUPPORTED_VERSION: protocol version 99 is not supported (this daemon speaks 1 and 2)" ]
}

@test "13-protocol-fds-missing: fewer fds than the header announces gets BAD_FRAME" {
	frame fds-missing
	[ "${lines[0]}" = "hello 1" ]
	[[ "${lines[1]}" == "error ERROR_BAD_FRAME: "* ]]
	still_serving
}

@test "13-protocol-fds-on-hello: fds on a message other than Request or SessionCall are refused" {
	frame fds-on-hello
	[ "${lines[0]}" = "error ERROR_BAD_FRAME: only a Request or a SessionCall may carry file descriptors" ]
}

@test "13-protocol-cut-short: a frame cut short by the peer gets BAD_FRAME" {
	frame cut-short
	[[ "${lines[-1]}" == closed ]]
	still_serving
}

@test "13-protocol-big-request: a request with 2 MiB of arguments is decoded" {
	frame big-request
	[ "${lines[0]}" = "hello 1" ]
	[[ "${lines[1]}" == "exit 126: not a tool listed in $TOOLRUN_CONFIG as toolrund read it "* ]]
	[ "${lines[2]}" = closed ]
}

@test "13-protocol-after-all: the daemon logged each refusal and still serves" {
	still_serving
	[ "$(grep -c 'warn: client pid' "$TR_DIR/daemon.log")" -ge 9 ]
}

@test "13-protocol-reload: Reload is answered with Reloaded, then a close" {
	frame reload
	[ "${lines[0]}" = "hello 1" ]
	[[ "${lines[1]}" == "reloaded ok: $TOOLRUN_CONFIG: "*" tools (was "*"), truncate=sink" ]]
	[ "${lines[2]}" = closed ]
	still_serving
}

@test "13-protocol-reader-gone-first: ReaderGone before a Request gets UNEXPECTED_MESSAGE" {
	frame reader-gone-first
	[ "${lines[0]}" = "hello 1" ]
	[ "${lines[1]}" = "error ERROR_UNEXPECTED_MESSAGE: expected Request, Ping, Reload or Status after Hello" ]
	[ "${lines[2]}" = closed ]
	still_serving
}

@test "13-protocol-hello-held: a Hello that says its Request follows is answered with the message after it" {
	frame hello-held
	[ "${lines[0]}" = held ]
	[ "${lines[1]}" = "hello 1" ]
	[ "${lines[2]}" = pong ]
	[ "${lines[3]}" = closed ]
}

@test "13-protocol-hello-alone: a Hello without request_follows is answered before the client says more" {
	frame hello-alone
	[ "${lines[0]}" = answered ]
	[ "${lines[1]}" = "hello 1" ]
	[ "${lines[2]}" = pong ]
	[ "${lines[3]}" = closed ]
}
