/*
 * Unit tests for proto/arena.c: the bound on what decoding a message
 * costs. What real callers send must decode, what no execve takes or only
 * an attacker sends must not, and a refusal leaves nothing mapped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"
#include "frame.h"
#include "toolrun.pb-c.h"

/* ───────────────────────── helpers ───────────────────────── */

/* A packed ClientMessage with a Request: /usr/bin/ls, nargv arguments
 * of arg_len bytes, nenv variables of env_len bytes, a ProcessState with
 * 16 limits, as the library sends. */
static uint8_t *pack_request(size_t nargv, size_t arg_len, size_t nenv, size_t env_len,
			     size_t *len)
{
	Toolrun__Request r = TOOLRUN__REQUEST__INIT;
	Toolrun__ClientMessage m = TOOLRUN__CLIENT_MESSAGE__INIT;
	Toolrun__ProcessState st = TOOLRUN__PROCESS_STATE__INIT;
	Toolrun__Limit limits[16], *lp[16];
	uint32_t fds[] = {0};
	size_t longest = arg_len > env_len ? arg_len : env_len;
	char *bytes = malloc(longest + 1);
	ProtobufCBinaryData *argv = calloc(nargv + 1, sizeof(*argv));
	ProtobufCBinaryData *envp = calloc(nenv + 1, sizeof(*envp));

	assert_non_null(bytes);
	assert_non_null(argv);
	assert_non_null(envp);
	memset(bytes, 'f', longest);
	for (size_t i = 0; i < nargv; i++)
		argv[i] = (ProtobufCBinaryData){arg_len, (uint8_t *)bytes};
	for (size_t i = 0; i < nenv; i++)
		envp[i] = (ProtobufCBinaryData){env_len, (uint8_t *)bytes};
	for (int i = 0; i < 16; i++) {
		toolrun__limit__init(&limits[i]);
		limits[i].resource = (uint32_t)i;
		limits[i].soft = limits[i].hard = UINT64_MAX;
		lp[i] = &limits[i];
	}
	st.umask = 022;
	st.n_limits = 16;
	st.limits = lp;
	r.executable = (ProtobufCBinaryData){11, (uint8_t *)"/usr/bin/ls"};
	r.n_argv = nargv;
	r.argv = argv;
	r.n_envp = nenv;
	r.envp = envp;
	r.cwd = (ProtobufCBinaryData){18, (uint8_t *)"/home/agent/work/x"};
	r.n_fds = 1;
	r.fds = fds;
	r.shape_stdout = r.shape_stderr = true;
	r.state = &st;
	m.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
	m.request = &r;
	*len = protobuf_c_message_get_packed_size(&m.base);
	uint8_t *out = malloc(*len);
	assert_non_null(out);
	protobuf_c_message_pack(&m.base, out);
	free(bytes);
	free(argv);
	free(envp);
	return out;
}

/* Decode it into an arena: 0 with the message checked, or the error. */
static int decode(size_t nargv, size_t arg_len, size_t nenv, size_t env_len)
{
	size_t len;
	uint8_t *buf = pack_request(nargv, arg_len, nenv, env_len, &len);
	struct arena a;
	ProtobufCMessage *m;
	int r = arena_unpack(&a, &toolrun__client_message__descriptor, len, buf, &m);

	free(buf);
	if (r < 0) {
		assert_null(m);
		assert_null(a.small.base); /* nothing held */
		assert_null(a.large.base);
		return r;
	}
	const Toolrun__Request *req = ((Toolrun__ClientMessage *)m)->request;
	assert_int_equal(req->n_argv, nargv);
	assert_int_equal(req->n_envp, nenv);
	if (nargv && arg_len)
		assert_int_equal(req->argv[nargv - 1].len, arg_len);
	assert_true(a.used <= a.cap);
	assert_true(a.cap <= arena_capacity(len));
	arena_release(&a);
	return 0;
}

/* ───────────────────────── the arena ───────────────────────── */

static void test_capacity_is_twice_the_payload_and_the_entries(void **state)
{
	(void)state;
	assert_true(arena_capacity(0) >= ARENA_BASE);
	assert_true(arena_capacity(0) < ARENA_BASE + 4096);
	/* An 8 MiB payload: twice itself, the most entries, the base. */
	size_t most = 2 * FRAME_MAX_CLIENT_PAYLOAD + ARENA_MAX_ENTRIES * 16 + ARENA_BASE;
	assert_true(arena_capacity(FRAME_MAX_CLIENT_PAYLOAD) >= most);
	assert_true(arena_capacity(FRAME_MAX_CLIENT_PAYLOAD) < most + 4096);
	assert_int_equal(arena_capacity(SIZE_MAX / 2), SIZE_MAX);
}

static void test_alloc_aligns_and_stops_at_the_capacity(void **state)
{
	struct arena a;
	(void)state;

	assert_int_equal(arena_init(&a, 100), 0);
	uint8_t *p = arena_alloc(&a, 1), *q = arena_alloc(&a, 40);
	assert_non_null(p);
	assert_non_null(q);
	assert_true(q >= p + 1);
	assert_int_equal((uintptr_t)q % _Alignof(max_align_t), 0);
	memset(q, 0xaa, 40);
	assert_false(a.exhausted);
	/* 16 + 48 taken: 64 bytes do not fit in what is left, 32 do. */
	assert_null(arena_alloc(&a, 64));
	assert_true(a.exhausted);
	assert_non_null(arena_alloc(&a, 32));
	assert_null(arena_alloc(&a, SIZE_MAX));
	arena_release(&a);
	arena_release(&a); /* twice is harmless */
	assert_null(a.small.base);
}

static void test_free_does_nothing(void **state)
{
	struct arena a;
	(void)state;

	assert_int_equal(arena_init(&a, 4096), 0);
	void *p = a.allocator.alloc(a.allocator.allocator_data, 100);
	size_t used = a.used;
	a.allocator.free(a.allocator.allocator_data, p);
	assert_int_equal(a.used, used);
	arena_release(&a);
}

/* ───────────────────────── what must decode ───────────────────────── */

static void test_typical_request_decodes(void **state)
{
	(void)state;
	/* A few arguments, an environment of 100 variables. */
	assert_int_equal(decode(5, 10, 100, 40), 0);
	assert_int_equal(decode(0, 0, 0, 0), 0);
}

static void test_many_short_file_names_decode(void **state)
{
	(void)state;
	/* `find . -exec grep x {} +`: 100,000 names of 8 to 20 bytes. */
	assert_int_equal(decode(100000, 8, 100, 40), 0);
	assert_int_equal(decode(100000, 12, 100, 40), 0);
	assert_int_equal(decode(100000, 20, 100, 40), 0);
	/* As many as execve takes under an unlimited stack (6 MiB), 16
	 * bytes each. */
	assert_int_equal(decode(250000, 16, 100, 40), 0);
}

static void test_the_most_entries_execve_takes_decode(void **state)
{
	(void)state;
	/* 6 MiB of empty strings (a NUL and a pointer each), or of 10 bytes. */
	assert_int_equal(decode(ARENA_MAX_ENTRIES, 0, 0, 0), 0);
	assert_int_equal(decode(ARENA_MAX_ENTRIES - 100, 0, 100, 0), 0);
	assert_int_equal(decode(FRAME_MAX_EXEC_BYTES / FRAME_EXEC_COST(10), 10, 0, 0), 0);
}

static void test_what_execve_takes_by_default_decodes(void **state)
{
	(void)state;
	/* Under an 8 MiB stack limit execve takes 2 MiB of strings (with
	 * their NULs) and pointers (8 bytes each): the most entries there
	 * are, empty or of one byte. */
	assert_int_equal(decode((2u << 20) / 9, 0, 0, 0), 0);
	assert_int_equal(decode((2u << 20) / 10, 1, 0, 0), 0);
	assert_int_equal(decode((2u << 20) / 14, 5, 0, 0), 0);
}

static void test_one_huge_argument_decodes(void **state)
{
	(void)state;
	assert_int_equal(decode(1, (6u << 20) - 8192, 100, 40), 0);
}

/* ───────────────────────── what must not ───────────────────────── */

static void test_more_than_execve_takes_is_refused(void **state)
{
	(void)state;
	/* An 8 MiB Request of empty arguments: 200 MB decoded whole. */
	assert_int_equal(decode(4190000, 0, 0, 0), -E2BIG);
	/* And of one byte each; one entry past the most; one huge one. */
	assert_int_equal(decode(2790000, 1, 0, 0), -E2BIG);
	assert_int_equal(decode(ARENA_MAX_ENTRIES + 1, 0, 0, 0), -E2BIG);
	assert_int_equal(decode(1, 6u << 20, 0, 0), -E2BIG);
}

/* The entries are not copied: they point into the payload. */
static void test_entries_point_into_the_payload(void **state)
{
	size_t len;
	uint8_t *buf = pack_request(1000, 7, 10, 30, &len);
	struct arena a;
	ProtobufCMessage *m;
	(void)state;

	assert_int_equal(arena_unpack(&a, &toolrun__client_message__descriptor, len, buf, &m), 0);
	const Toolrun__Request *req = ((Toolrun__ClientMessage *)m)->request;
	assert_int_equal(req->n_argv, 1000);
	assert_int_equal(req->n_envp, 10);
	for (size_t i = 0; i < req->n_argv; i++) {
		assert_true(req->argv[i].data > buf && req->argv[i].data + 7 <= buf + len);
		assert_memory_equal(req->argv[i].data, "fffffff", 7);
	}
	assert_true(req->envp[9].data > buf && req->envp[9].data + 30 <= buf + len);
	/* The rest is decoded as protobuf-c does. */
	assert_memory_equal(req->executable.data, "/usr/bin/ls", 11);
	assert_int_equal(req->state->n_limits, 16);
	assert_true(req->shape_stdout && req->shape_stderr);
	/* 16 bytes an entry, a copy of the rest, what protobuf-c made of it. */
	assert_true(a.used < 1010 * 16 + 2 * (len - 1000 * 9 - 10 * 32) + 16384);
	arena_release(&a);
	free(buf);
}

/* An empty entry is as protobuf-c gives it: no bytes, a NULL pointer. */
static void test_empty_entries_are_null(void **state)
{
	size_t len;
	uint8_t *buf = pack_request(3, 0, 0, 0, &len);
	struct arena a;
	ProtobufCMessage *m;
	(void)state;

	assert_int_equal(arena_unpack(&a, &toolrun__client_message__descriptor, len, buf, &m), 0);
	const Toolrun__Request *req = ((Toolrun__ClientMessage *)m)->request;
	assert_int_equal(req->n_argv, 3);
	assert_int_equal(req->argv[2].len, 0);
	assert_null(req->argv[2].data);
	arena_release(&a);
	free(buf);
}

/* A session's environment is lifted as a Request's is. */
static void test_session_environment_is_lifted(void **state)
{
	Toolrun__SessionCall c = TOOLRUN__SESSION_CALL__INIT;
	Toolrun__ClientMessage msg = TOOLRUN__CLIENT_MESSAGE__INIT;
	ProtobufCBinaryData env[2] = {{5, (uint8_t *)"A=one"}, {5, (uint8_t *)"B=two"}};
	uint8_t buf[256];
	struct arena a;
	ProtobufCMessage *m;
	(void)state;

	c.op = TOOLRUN__SESSION_OP__SESSION_OP_NEW;
	c.n_envp = 2;
	c.envp = env;
	c.cwd = (ProtobufCBinaryData){4, (uint8_t *)"/tmp"};
	msg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_SESSION_CALL;
	msg.session_call = &c;
	size_t len = protobuf_c_message_pack(&msg.base, buf);
	assert_int_equal(arena_unpack(&a, &toolrun__client_message__descriptor, len, buf, &m), 0);
	const Toolrun__SessionCall *got = ((Toolrun__ClientMessage *)m)->session_call;
	assert_int_equal(got->op, TOOLRUN__SESSION_OP__SESSION_OP_NEW);
	assert_int_equal(got->n_envp, 2);
	assert_memory_equal(got->envp[1].data, "B=two", 5);
	assert_true(got->envp[1].data > buf && got->envp[1].data < buf + len);
	assert_memory_equal(got->cwd.data, "/tmp", 4);
	arena_release(&a);
}

/* Fields other than argv and envp are bounded too: 3 million fds, packed
 * (a byte each on the wire, 4 decoded), do not fit. */
static void test_other_fields_are_bounded_too(void **state)
{
	Toolrun__Request r = TOOLRUN__REQUEST__INIT;
	Toolrun__ClientMessage msg = TOOLRUN__CLIENT_MESSAGE__INIT;
	size_t n = 3000000;
	uint32_t *fds = calloc(n, sizeof(*fds));
	struct arena a;
	ProtobufCMessage *m;
	(void)state;

	assert_non_null(fds);
	r.n_fds = n;
	r.fds = fds;
	msg.msg_case = TOOLRUN__CLIENT_MESSAGE__MSG_REQUEST;
	msg.request = &r;
	size_t len = protobuf_c_message_get_packed_size(&msg.base);
	uint8_t *buf = malloc(len);
	assert_non_null(buf);
	protobuf_c_message_pack(&msg.base, buf);
	assert_int_equal(arena_unpack(&a, &toolrun__client_message__descriptor, len, buf, &m),
			 -EMSGSIZE);
	assert_null(m);
	assert_null(a.small.base);
	assert_null(a.large.base);
	free(buf);
	free(fds);
}

/* A Request sent twice in one message would be merged by protobuf-c. */
static void test_a_sub_message_twice_is_refused(void **state)
{
	size_t len;
	uint8_t *one = pack_request(2, 3, 0, 0, &len);
	uint8_t *two = malloc(2 * len);
	struct arena a;
	ProtobufCMessage *m;
	(void)state;

	assert_non_null(two);
	memcpy(two, one, len);
	memcpy(two + len, one, len);
	assert_int_equal(arena_unpack(&a, &toolrun__client_message__descriptor, 2 * len, two, &m),
			 -EBADMSG);
	assert_null(a.small.base);
	free(one);
	free(two);
}

static void test_garbage_is_not_a_message(void **state)
{
	static const uint8_t junk[] = {0x12, 0x7f, 0x01};
	struct arena a;
	ProtobufCMessage *m;
	(void)state;

	assert_int_equal(arena_unpack(&a, &toolrun__client_message__descriptor,
				      sizeof(junk), junk, &m),
			 -EBADMSG);
	assert_null(m);
	assert_null(a.small.base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capacity_is_twice_the_payload_and_the_entries),
		cmocka_unit_test(test_alloc_aligns_and_stops_at_the_capacity),
		cmocka_unit_test(test_free_does_nothing),
		cmocka_unit_test(test_typical_request_decodes),
		cmocka_unit_test(test_many_short_file_names_decode),
		cmocka_unit_test(test_the_most_entries_execve_takes_decode),
		cmocka_unit_test(test_what_execve_takes_by_default_decodes),
		cmocka_unit_test(test_one_huge_argument_decodes),
		cmocka_unit_test(test_more_than_execve_takes_is_refused),
		cmocka_unit_test(test_entries_point_into_the_payload),
		cmocka_unit_test(test_empty_entries_are_null),
		cmocka_unit_test(test_session_environment_is_lifted),
		cmocka_unit_test(test_other_fields_are_bounded_too),
		cmocka_unit_test(test_a_sub_message_twice_is_refused),
		cmocka_unit_test(test_garbage_is_not_a_message),
	};
	return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
