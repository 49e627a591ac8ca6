/*
 * Unit tests for the audit log: records (daemon/rules/audit.c), the file and
 * its rotation (daemon/launcher/auditlog.c), the chain and its verification
 * (common/auditchain.c), and the launcher's Audit and AuditLogAt
 * messages end to end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* nftw's FTW_DEPTH and FTW_PHYS; the build sets it */
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "audit.h"
#include "auditchain.h"
#include "auditlog.h"
#include "config.h"
#include "frame.h"
#include "launcher.h"
#include "launcher.pb-c.h"
#include "outq.h"
#include "util.h"

/* ───────────────────────── helpers ───────────────────────── */

static char tmpdir[64];
static char logpath[128];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-audit.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(logpath, sizeof(logpath), "%s/log/audit.jsonl", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static ProtobufCBinaryData bin(const char *s)
{
	return (ProtobufCBinaryData){.len = strlen(s), .data = (uint8_t *)s};
}

/* A tool record with every member set. */
static struct audit_record sample(ProtobufCBinaryData *argv, size_t argc)
{
	static const char cwd[] = "/home/agent/src";

	return (struct audit_record){
		.kind = "tool",
		.job = 42,
		.command_job = 7,
		.start_ms = INT64_C(1700000000123),
		.duration_us = 12345,
		.user_us = 8012,
		.system_us = 3004,
		.uid = 1000,
		.caller_pid = 300,
		.pid = 301,
		.tool = "grep",
		.cwd = (const uint8_t *)cwd,
		.cwd_len = sizeof(cwd) - 1,
		.argv = argv,
		.argc = argc,
		.exit_code = 1,
		.out = {
			{.shaped = true, .bytes = 4000, .lines = 10, .bytes_dropped = 96000,
			 .lines_dropped = 990, .spill = "/var/tmp/toolrun/1000/x.out",
			 .spill_partial = false},
			{.shaped = false},
		},
	};
}

/* Format r and parse it back. */
static struct json_object *format_parse(const struct audit_record *r, char **text)
{
	char *s = audit_format(r);
	assert_non_null(s);
	assert_null(strchr(s, '\n'));
	struct json_object *o = json_tokener_parse(s);
	assert_non_null(o);
	assert_true(json_object_is_type(o, json_type_object));
	if (text)
		*text = s;
	else
		free(s);
	return o;
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("no member \"%s\"", key);
	return v;
}

static bool has(struct json_object *o, const char *key)
{
	return json_object_object_get_ex(o, key, NULL);
}

static void open_log(struct auditlog *a, uint64_t max_bytes, unsigned keep)
{
	char why[1200];
	*a = (struct auditlog){.fd = -1};
	int r = auditlog_open_file(a, logpath, max_bytes, keep, why, sizeof(why));
	if (r != 0)
		fail_msg("open: %s", why);
}

/* Append record number n (about 60 bytes with "prev"... 130 with it). */
static int append_n(struct auditlog *a, int n)
{
	char obj[128];
	int len = snprintf(obj, sizeof(obj), "{\"kind\":\"tool\",\"job\":%d,\"argv\":[\"x\"]}", n);
	return auditlog_append(a, obj, (size_t)len);
}

/* The lines of a file, NULL-terminated, and their count. */
static char **read_lines(const char *path, size_t *n)
{
	FILE *f = fopen(path, "re");
	char **v = calloc(256, sizeof(char *));
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;

	assert_non_null(f);
	*n = 0;
	while ((len = getline(&buf, &cap, f)) >= 0) {
		assert_true(*n < 255);
		if (len && buf[len - 1] == '\n')
			buf[len - 1] = '\0';
		v[(*n)++] = strdup(buf);
	}
	free(buf);
	fclose(f);
	return v;
}

static void write_lines(const char *path, char **v, size_t n)
{
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", v[i]);
	fclose(f);
}

static void free_lines(char **v)
{
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

static int verify1(const char *path, struct auditchain_report *rep)
{
	const char *paths[] = {path};
	return auditchain_verify(paths, 1, rep);
}

/* A log of n lines written through auditlog. */
static void make_log(int n)
{
	struct auditlog a;
	open_log(&a, UINT64_C(1) << 30, 4);
	for (int i = 1; i <= n; i++)
		assert_int_equal(append_n(&a, i), 0);
	auditlog_close(&a);
}

/* The log must be broken at `line` with `phrase` in the message. */
static void expect_broken(uint64_t line, const char *phrase)
{
	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_BROKEN);
	if (rep.bad_line != line || !strstr(rep.error, phrase))
		fail_msg("expected line %llu (%s), got: %s", (unsigned long long)line, phrase,
			 rep.error);
	char loc[200];
	snprintf(loc, sizeof(loc), "%s:%llu: ", logpath, (unsigned long long)line);
	assert_true(strncmp(rep.error, loc, strlen(loc)) == 0);
}

/* ───────────────────────── records ───────────────────────── */

static void test_format_tool_record_parses_back(void **state)
{
	(void)state;
	ProtobufCBinaryData argv[] = {bin("grep"), bin("-r"), bin("a \"quoted\"\\ word\n")};
	struct audit_record r = sample(argv, 3);
	char *text;
	struct json_object *o = format_parse(&r, &text);

	/* The members in their documented order. */
	assert_non_null(strstr(text, "{\"time\":\"2023-11-14T22:13:20.123Z\",\"kind\":\"tool\","
				     "\"job\":42,\"command_job\":7,\"uid\":1000,"));
	assert_non_null(strstr(text, "\"duration_ms\":12.345,\"cpu_user_ms\":8.012,"
				     "\"cpu_system_ms\":3.004,\"stdout\""));
	assert_string_equal(json_object_get_string(member(o, "kind")), "tool");
	assert_int_equal(json_object_get_uint64(member(o, "job")), 42);
	assert_int_equal(json_object_get_uint64(member(o, "command_job")), 7);
	assert_int_equal(json_object_get_int(member(o, "caller_pid")), 300);
	assert_int_equal(json_object_get_int(member(o, "pid")), 301);
	assert_string_equal(json_object_get_string(member(o, "tool")), "grep");
	assert_string_equal(json_object_get_string(member(o, "cwd")), "/home/agent/src");
	struct json_object *av = member(o, "argv");
	assert_int_equal(json_object_array_length(av), 3);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(av, 2)),
			    "a \"quoted\"\\ word\n");
	assert_int_equal(json_object_get_int(member(o, "exit")), 1);
	assert_false(has(o, "signal"));
	assert_false(has(o, "not_run"));
	assert_false(json_object_get_boolean(member(o, "timed_out")));
	assert_true(json_object_get_double(member(o, "duration_ms")) > 12.3449);

	struct json_object *out = member(o, "stdout");
	assert_int_equal(json_object_get_uint64(member(out, "bytes")), 4000);
	assert_int_equal(json_object_get_uint64(member(out, "lines")), 10);
	assert_int_equal(json_object_get_uint64(member(out, "bytes_dropped")), 96000);
	assert_int_equal(json_object_get_uint64(member(out, "lines_dropped")), 990);
	assert_string_equal(json_object_get_string(member(out, "spill")),
			    "/var/tmp/toolrun/1000/x.out");
	assert_false(json_object_get_boolean(member(out, "spill_partial")));
	struct json_object *err = member(o, "stderr");
	assert_false(json_object_get_boolean(member(err, "shaped")));
	assert_int_equal(json_object_object_length(err), 1);
	json_object_put(o);
	free(text);
}

static void test_format_command_killed_by_signal(void **state)
{
	(void)state;
	ProtobufCBinaryData argv[] = {bin("bash"), bin("-c"), bin("make")};
	struct audit_record r = sample(argv, 3);
	r.kind = "command";
	r.tool = NULL;
	r.command_job = 0;
	r.signaled = true;
	r.signal = SIGKILL;
	r.core_dumped = true;
	r.timed_out = true;
	r.duration_us = 5000000;
	r.out[0].spill = NULL;
	char *text;
	struct json_object *o = format_parse(&r, &text);

	assert_string_equal(json_object_get_string(member(o, "kind")), "command");
	assert_false(has(o, "tool"));
	assert_false(has(o, "command_job"));
	assert_false(has(o, "exit"));
	assert_string_equal(json_object_get_string(member(o, "signal")), "SIGKILL");
	assert_true(json_object_get_boolean(member(o, "core_dumped")));
	assert_true(json_object_get_boolean(member(o, "timed_out")));
	assert_non_null(strstr(text, "\"duration_ms\":5000.000,"));
	struct json_object *out = member(o, "stdout");
	assert_false(has(out, "spill"));
	assert_false(has(out, "spill_partial"));
	json_object_put(o);
	free(text);
}

static void test_signal_names(void **state)
{
	(void)state;
	char buf[32];
	assert_string_equal(audit_signal_name(SIGTERM, buf, sizeof(buf)), "SIGTERM");
	assert_string_equal(audit_signal_name(SIGSEGV, buf, sizeof(buf)), "SIGSEGV");
	assert_string_equal(audit_signal_name(SIGRTMIN + 2, buf, sizeof(buf)), "SIGRTMIN+2");
	assert_string_equal(audit_signal_name(200, buf, sizeof(buf)), "SIG200");
}

static void test_format_not_run(void **state)
{
	(void)state;
	ProtobufCBinaryData argv[] = {bin("nope")};
	struct audit_record r = sample(argv, 1);
	r.pid = 0;
	r.not_run = true;
	r.reason = "execve: No such file or directory";
	struct json_object *o = format_parse(&r, NULL);

	assert_string_equal(json_object_get_string(member(o, "not_run")),
			    "execve: No such file or directory");
	assert_false(has(o, "exit"));
	assert_false(has(o, "signal"));
	assert_int_equal(json_object_get_int(member(o, "pid")), 0);
	json_object_put(o);
}

static void test_format_invalid_utf8_becomes_replacement_characters(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
		{"a\xff" "b", "a\xef\xbf\xbd" "b"},                          /* not UTF-8 at all */
		{"\xe2\x82" "A", "\xef\xbf\xbd\xef\xbf\xbd" "A"},            /* cut short */
		{"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},                    /* overlong '/' */
		{"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},    /* a surrogate */
		{"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
		{"\x80x", "\xef\xbf\xbdx"},                                   /* stray continuation */
		{"tab\tbell\x07", "tab\tbell\x07"},                           /* escaped by json-c */
	};
	ProtobufCBinaryData argv[ARRAY_SIZE(cases)];
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		argv[i] = bin(cases[i].in);
	struct audit_record r = sample(argv, ARRAY_SIZE(cases));
	static const char cwd[] = "/tmp/\xfe\xff";
	r.cwd = (const uint8_t *)cwd;
	r.cwd_len = sizeof(cwd) - 1;
	char *text;
	struct json_object *o = format_parse(&r, &text);

	assert_null(strchr(text, '\x07')); /* control characters escaped */
	struct json_object *av = member(o, "argv");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_string_equal(json_object_get_string(json_object_array_get_idx(av, i)),
				    cases[i].out);
	assert_string_equal(json_object_get_string(member(o, "cwd")),
			    "/tmp/\xef\xbf\xbd\xef\xbf\xbd");
	json_object_put(o);
	free(text);
}

static void test_format_time_before_a_second_boundary(void **state)
{
	(void)state;
	struct audit_record r = sample(NULL, 0);
	r.start_ms = 999;
	struct json_object *o = format_parse(&r, NULL);
	assert_string_equal(json_object_get_string(member(o, "time")),
			    "1970-01-01T00:00:00.999Z");
	assert_int_equal(json_object_array_length(member(o, "argv")), 0);
	json_object_put(o);
}

/* ───────────────────────── the chain ───────────────────────── */

static void test_hash_is_sha256(void **state)
{
	(void)state;
	char hex[AUDITCHAIN_HEX_SIZE];
	assert_int_equal(auditchain_hash("abc", 3, hex), 0);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_append_chains_every_line(void **state)
{
	(void)state;
	make_log(5);
	size_t n;
	char **v = read_lines(logpath, &n);
	assert_int_equal(n, 5);
	char expect[AUDITCHAIN_HEX_SIZE];
	memcpy(expect, auditchain_zero, sizeof(expect));
	for (size_t i = 0; i < n; i++) {
		char head[128];
		snprintf(head, sizeof(head), "{\"prev\":\"%s\",\"kind\":\"tool\"", expect);
		assert_true(strncmp(v[i], head, strlen(head)) == 0);
		auditchain_hash(v[i], strlen(v[i]), expect);
	}
	free_lines(v);

	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_INTACT);
	assert_int_equal(rep.lines, 5);
	struct stat st;
	assert_int_equal(stat(logpath, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/log", tmpdir);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
}

static void test_append_refuses_what_is_not_one_object_on_one_line(void **state)
{
	(void)state;
	struct auditlog a;
	open_log(&a, 1 << 20, 4);
	static const char *bad[] = {"", "{", "[1]", "\"x\"", "{\"a\":\n1}", "{\"a\":1} ",
				    " {\"a\":1}", "{\"a\":1}{}", "{\"a\":nul}"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(auditlog_append(&a, bad[i], strlen(bad[i])), -EINVAL);
	assert_int_equal(auditlog_append(&a, "{}", 2), 0);
	assert_int_equal(auditlog_append(&a, "{ }", 3), 0);
	auditlog_close(&a);
	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_INTACT);
	assert_int_equal(rep.lines, 2);
}

static void test_tamper_changed_byte_names_the_line(void **state)
{
	(void)state;
	make_log(6);
	size_t n;
	char **v = read_lines(logpath, &n);
	char *job = strstr(v[2], "\"job\":3");
	job[6] = '4';
	write_lines(logpath, v, n);
	free_lines(v);
	expect_broken(3, "changed");
}

static void test_tamper_changed_prev_names_the_line(void **state)
{
	(void)state;
	make_log(6);
	size_t n;
	char **v = read_lines(logpath, &n);
	v[3][12] = v[3][12] == 'a' ? 'b' : 'a';
	write_lines(logpath, v, n);
	free_lines(v);
	expect_broken(4, "changed");
}

static void test_tamper_removed_line_names_the_line_before(void **state)
{
	(void)state;
	make_log(6);
	size_t n;
	char **v = read_lines(logpath, &n);
	free(v[3]);
	memmove(&v[3], &v[4], (n - 3) * sizeof(char *));
	write_lines(logpath, v, n - 1);
	free_lines(v);
	expect_broken(3, "the lines after it removed");
}

static void test_tamper_inserted_line_names_it(void **state)
{
	(void)state;
	make_log(6);
	size_t n;
	char **v = read_lines(logpath, &n);
	/* A well-formed line that chains to line 2, as a forger would write it. */
	char hex[AUDITCHAIN_HEX_SIZE], forged[256];
	auditchain_hash(v[1], strlen(v[1]), hex);
	snprintf(forged, sizeof(forged), "{\"prev\":\"%s\",\"kind\":\"tool\",\"job\":99}", hex);
	memmove(&v[3], &v[2], (n - 2 + 1) * sizeof(char *));
	v[2] = strdup(forged);
	write_lines(logpath, v, n + 1);
	expect_broken(3, "inserted");

	/* The same with a prev that chains to nothing. */
	free(v[2]);
	snprintf(forged, sizeof(forged), "{\"prev\":\"%s\",\"job\":99}", auditchain_zero);
	forged[10] = '1';
	v[2] = strdup(forged);
	write_lines(logpath, v, n + 1);
	expect_broken(3, "inserted");

	/* And a line that is not JSON at all. */
	free(v[2]);
	v[2] = strdup("hello");
	write_lines(logpath, v, n + 1);
	expect_broken(3, "not JSON");
	free_lines(v);
}

static void test_tamper_swapped_lines_name_the_first(void **state)
{
	(void)state;
	make_log(6);
	size_t n;
	char **v = read_lines(logpath, &n);
	char *t = v[1];
	v[1] = v[2];
	v[2] = t;
	write_lines(logpath, v, n);
	free_lines(v);
	expect_broken(2, "out of order");
}

static void test_tamper_missing_prev_and_new_chain(void **state)
{
	(void)state;
	make_log(4);
	size_t n;
	char **v = read_lines(logpath, &n);
	char *old = v[2];
	v[2] = strdup(strchr(old, ',') + 1 - 1);
	v[2][0] = '{';
	write_lines(logpath, v, n);
	expect_broken(3, "does not begin with the chain member \"prev\"");

	/* A line of zeros where the chain goes on: truncated before it. */
	free(v[2]);
	v[2] = strdup(old);
	memcpy(v[2] + AUDITCHAIN_PREFIX_LEN, auditchain_zero, AUDITCHAIN_HEX_SIZE - 1);
	write_lines(logpath, v, n);
	expect_broken(3, "begins a new chain");
	free(old);
	free_lines(v);
}

static void test_first_line_given_may_chain_to_anything(void **state)
{
	(void)state;
	make_log(5);
	size_t n;
	char **v = read_lines(logpath, &n);
	/* Lines 3..5: as if lines 1 and 2 had been rotated away. */
	write_lines(logpath, v + 2, n - 2);
	free_lines(v);
	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_INTACT);
	assert_int_equal(rep.lines, 3);
}

static void test_rotation_keeps_one_chain_across_files(void **state)
{
	(void)state;
	struct auditlog a;
	char name[160];
	/* About 120 bytes a line: 5 lines a file, and 20 lines rotate
	 * more often than audit_keep. */
	open_log(&a, 600, 2);
	for (int i = 1; i <= 20; i++)
		assert_true(append_n(&a, i) >= 0);
	auditlog_close(&a);

	char p1[160], p2[160];
	snprintf(p1, sizeof(p1), "%s.1", logpath);
	snprintf(p2, sizeof(p2), "%s.2", logpath);
	snprintf(name, sizeof(name), "%s.3", logpath);
	struct stat st;
	assert_int_equal(stat(p1, &st), 0);
	assert_true(st.st_size <= 600);
	assert_int_equal(stat(p2, &st), 0);
	assert_int_equal(stat(name, &st), -1);

	uint64_t counts[3];
	struct auditchain_report rep = {.file_lines = counts};
	const char *all[] = {p2, p1, logpath};
	assert_int_equal(auditchain_verify(all, 3, &rep), AUDITCHAIN_INTACT);
	assert_true(counts[0] > 1 && counts[0] == counts[1]);
	assert_true(counts[2] >= 1 && counts[2] <= counts[0]);
	assert_int_equal(counts[0] * 2 + counts[2] + 1, rep.lines + 1);
	assert_int_equal(stat(p2, &st), 0);
	assert_true(st.st_size <= 600);
	/* The newest files alone, too. */
	assert_int_equal(auditchain_verify(all + 1, 2, &rep), AUDITCHAIN_INTACT);
	/* In the wrong order, the chain breaks where the files meet. */
	const char *wrong[] = {p1, p2, logpath};
	assert_int_equal(auditchain_verify(wrong, 3, &rep), AUDITCHAIN_BROKEN);
	char at[200];
	snprintf(at, sizeof(at), "%s:1 does not chain", p2);
	assert_non_null(strstr(rep.error, at));

	/* The last line of job 20 is the newest file's last. */
	size_t n;
	char **v = read_lines(logpath, &n);
	assert_non_null(strstr(v[n - 1], "\"job\":20"));
	free_lines(v);
}

static void test_rotation_with_keep_zero_starts_a_new_chain(void **state)
{
	(void)state;
	struct auditlog a;
	open_log(&a, 600, 0);
	for (int i = 1; i <= 6; i++)
		assert_int_equal(append_n(&a, i), 0);
	auditlog_close(&a);
	size_t n;
	char **v = read_lines(logpath, &n);
	assert_true(n >= 1 && n < 6);
	assert_non_null(strstr(v[0], auditchain_zero));
	assert_non_null(strstr(v[n - 1], "\"job\":6"));
	free_lines(v);
	char p1[160];
	struct stat st;
	snprintf(p1, sizeof(p1), "%s.1", logpath);
	assert_int_equal(stat(p1, &st), -1);
	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_INTACT);
}

static void test_reopen_continues_the_chain(void **state)
{
	(void)state;
	make_log(3);
	struct auditlog a;
	open_log(&a, 1 << 20, 4);
	assert_int_equal(append_n(&a, 4), 0);
	assert_int_equal(append_n(&a, 5), 0);
	auditlog_close(&a);
	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_INTACT);
	assert_int_equal(rep.lines, 5);
}

static void test_reopen_of_an_empty_file_chains_to_the_rotated_one(void **state)
{
	(void)state;
	make_log(3);
	char p1[160];
	snprintf(p1, sizeof(p1), "%s.1", logpath);
	assert_int_equal(rename(logpath, p1), 0);
	struct auditlog a;
	open_log(&a, 1 << 20, 4);
	assert_int_equal(append_n(&a, 4), 0);
	auditlog_close(&a);
	const char *all[] = {p1, logpath};
	struct auditchain_report rep = {0};
	assert_int_equal(auditchain_verify(all, 2, &rep), AUDITCHAIN_INTACT);
	assert_int_equal(rep.lines, 4);
}

static void test_partial_last_line_is_ended_and_skipped_by_the_chain(void **state)
{
	(void)state;
	make_log(3);
	int fd = open(logpath, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	static const char cut[] = "{\"prev\":\"0123";
	assert_int_equal(write(fd, cut, sizeof(cut) - 1), (ssize_t)sizeof(cut) - 1);
	close(fd);

	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_BROKEN);
	assert_non_null(strstr(rep.error, ":4: not JSON (cut short"));

	struct auditlog a;
	open_log(&a, 1 << 20, 4);
	assert_int_equal(append_n(&a, 4), 0);
	auditlog_close(&a);
	size_t n;
	char **v = read_lines(logpath, &n);
	assert_int_equal(n, 5);
	assert_string_equal(v[3], cut);
	char hex[AUDITCHAIN_HEX_SIZE];
	auditchain_hash(v[2], strlen(v[2]), hex);
	assert_non_null(strstr(v[4], hex));
	free_lines(v);
	expect_broken(4, "not JSON");
}

static void test_open_refuses_a_symlink(void **state)
{
	(void)state;
	char dir[128], why[1200];
	snprintf(dir, sizeof(dir), "%s/log", tmpdir);
	mkdir(dir, 0700);
	assert_int_equal(symlink("/etc/passwd", logpath), 0);
	struct auditlog a = {.fd = -1};
	assert_int_equal(auditlog_open_file(&a, logpath, 1 << 20, 4, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symbolic link"));
}

/* tmpdir/log, mode mode whatever the umask, owned by uid. */
static void make_log_dir(mode_t mode, uid_t uid)
{
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/log", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chown(dir, uid, (gid_t)-1), 0);
	assert_int_equal(chmod(dir, mode), 0);
}

/* Opening logpath fails with EPERM, why says "<tmpdir>/log <want>", and
 * no file was made. */
static void expect_refused(const char *want)
{
	char why[1200], expect[300];
	struct auditlog a = {.fd = -1};
	struct stat st;
	assert_int_equal(auditlog_open_file(&a, logpath, 1 << 20, 4, why, sizeof(why)), -EPERM);
	snprintf(expect, sizeof(expect), "%s/log %s", tmpdir, want);
	if (!strstr(why, expect))
		fail_msg("why: %s; expected %s", why, expect);
	assert_int_equal(lstat(logpath, &st), -1);
}

static void test_open_refuses_a_directory_others_may_write(void **state)
{
	(void)state;
	make_log_dir(0777, geteuid());
	expect_refused("is writable by others without the sticky bit (mode 0777): "
		       "anyone could replace the log");
}

static void test_open_refuses_a_directory_its_group_may_write(void **state)
{
	(void)state;
	make_log_dir(0770, geteuid());
	expect_refused("is writable by its group without the sticky bit (mode 0770)");
}

static void test_open_accepts_a_sticky_directory(void **state)
{
	(void)state;
	struct auditlog a;
	make_log_dir(01777, geteuid());
	open_log(&a, 1 << 20, 4);
	assert_int_equal(append_n(&a, 1), 0);
	auditlog_close(&a);
}

static void test_open_refuses_a_directory_of_another_user(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	make_log_dir(0755, 65534);
	expect_refused("belongs to uid 65534 (mode 0755), neither root nor toolrund's uid 0");
}

/* In single identity (shared_uid) the programs served own the log: a
 * directory others may write, as a Kubernetes emptyDir is, is accepted. */
static void test_open_in_single_identity_accepts_a_directory_others_write(void **state)
{
	(void)state;
	char why[1200];
	make_log_dir(0777, geteuid());
	struct auditlog a = {.fd = -1, .shared_uid = true};
	assert_int_equal(auditlog_open_file(&a, logpath, 1 << 20, 4, why, sizeof(why)), 0);
	assert_string_equal(a.path, logpath);
	auditlog_close(&a);
}

/* A link among the log's directories is resolved (/var/run is /run on
 * Debian), and the real directories are the ones checked and named. */
static void test_open_resolves_links_of_its_directories(void **state)
{
	(void)state;
	char via[160], link[160], real[160], why[1200];
	struct stat st;
	make_log_dir(0700, geteuid());
	snprintf(via, sizeof(via), "%s/via", tmpdir);
	snprintf(link, sizeof(link), "%s/via/sub/audit.jsonl", tmpdir);
	snprintf(real, sizeof(real), "%s/log/sub/audit.jsonl", tmpdir);
	assert_int_equal(symlink("log", via), 0);
	struct auditlog a = {.fd = -1};
	assert_int_equal(auditlog_open_file(&a, link, 1 << 20, 4, why, sizeof(why)), 0);
	assert_string_equal(a.path, real);
	assert_int_equal(lstat(real, &st), 0);
	auditlog_close(&a);
}

/* A directory opened to others after the log was opened: rotation does
 * not reopen the log there, and loses it, saying why. */
static void test_rotation_rechecks_the_directory(void **state)
{
	(void)state;
	struct auditlog a;
	char dir[128], rotated[160];
	struct stat st;
	int r = 0;
	make_log_dir(0700, geteuid());
	open_log(&a, 600, 2);
	snprintf(dir, sizeof(dir), "%s/log", tmpdir);
	assert_int_equal(chmod(dir, 0777), 0);
	for (int i = 1; i <= 20 && r == 0; i++)
		r = append_n(&a, i);
	assert_int_equal(r, AUDITLOG_MOVED);
	assert_int_equal(a.fd, -1);
	assert_string_equal(a.path, "");
	assert_non_null(strstr(a.failure, "log is writable by others without the sticky bit"));
	snprintf(rotated, sizeof(rotated), "%s.1", logpath);
	assert_int_equal(stat(rotated, &st), -1);
}

static void test_open_falls_back_to_a_socket_fallback_directory(void **state)
{
	(void)state;
	struct config *cfg = calloc(1, sizeof(*cfg));
	config_init(cfg, "test.conf");
	snprintf(cfg->audit_log, sizeof(cfg->audit_log), "/proc/self/nope/audit.jsonl");
	snprintf(cfg->socket_fallback[0], sizeof(cfg->socket_fallback[0]), "%s/fb/s.sock",
		 tmpdir);
	cfg->nsocket_fallback = 1;
	struct auditlog a;
	assert_true(auditlog_open(&a, cfg) < 0);
	char expect[160];
	snprintf(expect, sizeof(expect), "%s/fb/audit.jsonl", tmpdir);
	assert_string_equal(a.path, expect);
	assert_true(a.fd >= 0);
	auditlog_close(&a);

	/* "" : no audit log at all. */
	cfg->audit_log[0] = '\0';
	assert_int_equal(auditlog_open(&a, cfg), 0);
	assert_int_equal(a.fd, -1);
	assert_string_equal(a.path, "");
	free(cfg);
}

/* ───────────────────── the launcher, end to end ───────────────────── */

static Toolrun__Launcher__FromLauncher *receive(int fd, struct frame_reader *rd)
{
	for (;;) {
		int r = frame_reader_read(rd, fd);
		if (r == FRAME_READ_READY)
			break;
		assert_int_equal(r, FRAME_READ_AGAIN);
		struct pollfd p = {fd, POLLIN, 0};
		assert_int_equal(poll(&p, 1, 10000), 1);
	}
	Toolrun__Launcher__FromLauncher *m =
		toolrun__launcher__from_launcher__unpack(NULL, rd->h.length, rd->payload);
	frame_reader_next(rd);
	assert_non_null(m);
	return m;
}

static void send_audit(int fd, const char *line)
{
	Toolrun__Launcher__Audit au = TOOLRUN__LAUNCHER__AUDIT__INIT;
	Toolrun__Launcher__ToLauncher m = TOOLRUN__LAUNCHER__TO_LAUNCHER__INIT;
	uint8_t buf[1024];

	au.line = bin(line);
	m.msg_case = TOOLRUN__LAUNCHER__TO_LAUNCHER__MSG_AUDIT;
	m.audit = &au;
	assert_true(frame_size(&m.base) <= sizeof(buf));
	size_t n = frame_pack(&m.base, 0, buf);
	assert_int_equal(frame_send(fd, buf, n, NULL, 0), 0);
}

static void test_launcher_appends_audit_orders_and_names_its_file(void **state)
{
	(void)state;
	struct config *cfg = calloc(1, sizeof(*cfg));
	config_init(cfg, "test.conf");
	snprintf(cfg->audit_log, sizeof(cfg->audit_log), "%s", logpath);
	cfg->nsocket_fallback = 0;
	struct launcher_link link;
	assert_int_equal(launcher_start(&link, cfg, NULL, NULL), 0);

	struct frame_reader rd = {.max_payload = 64 * 1024, .grow = frame_grow_heap};
	Toolrun__Launcher__FromLauncher *m = receive(link.fd, &rd);
	assert_int_equal(m->msg_case, TOOLRUN__LAUNCHER__FROM_LAUNCHER__MSG_AUDIT_LOG_AT);
	assert_string_equal(m->audit_log_at->path, logpath);
	toolrun__launcher__from_launcher__free_unpacked(m, NULL);

	ProtobufCBinaryData argv[] = {bin("cat"), bin("f")};
	struct audit_record r = sample(argv, 2);
	for (int i = 0; i < 3; i++) {
		r.job = (uint64_t)i + 1;
		char *line = audit_format(&r);
		send_audit(link.fd, line);
		free(line);
	}
	/* The launcher ends when its channel does, after every order. */
	close(link.fd);
	int status;
	assert_int_equal(waitpid(link.pid, &status, 0), link.pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(rd.payload);
	free(cfg);

	struct auditchain_report rep = {0};
	assert_int_equal(verify1(logpath, &rep), AUDITCHAIN_INTACT);
	assert_int_equal(rep.lines, 3);
	size_t n;
	char **v = read_lines(logpath, &n);
	struct json_object *o = json_tokener_parse(v[2]);
	assert_non_null(o);
	assert_int_equal(json_object_get_uint64(member(o, "job")), 3);
	assert_string_equal(json_object_get_string(member(o, "tool")), "grep");
	json_object_put(o);
	free_lines(v);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_tool_record_parses_back),
		cmocka_unit_test(test_format_command_killed_by_signal),
		cmocka_unit_test(test_signal_names),
		cmocka_unit_test(test_format_not_run),
		cmocka_unit_test(test_format_invalid_utf8_becomes_replacement_characters),
		cmocka_unit_test(test_format_time_before_a_second_boundary),
		cmocka_unit_test(test_hash_is_sha256),
		T(test_append_chains_every_line),
		T(test_append_refuses_what_is_not_one_object_on_one_line),
		T(test_tamper_changed_byte_names_the_line),
		T(test_tamper_changed_prev_names_the_line),
		T(test_tamper_removed_line_names_the_line_before),
		T(test_tamper_inserted_line_names_it),
		T(test_tamper_swapped_lines_name_the_first),
		T(test_tamper_missing_prev_and_new_chain),
		T(test_first_line_given_may_chain_to_anything),
		T(test_rotation_keeps_one_chain_across_files),
		T(test_rotation_with_keep_zero_starts_a_new_chain),
		T(test_reopen_continues_the_chain),
		T(test_reopen_of_an_empty_file_chains_to_the_rotated_one),
		T(test_partial_last_line_is_ended_and_skipped_by_the_chain),
		T(test_open_refuses_a_symlink),
		T(test_open_refuses_a_directory_others_may_write),
		T(test_open_refuses_a_directory_its_group_may_write),
		T(test_open_accepts_a_sticky_directory),
		T(test_open_refuses_a_directory_of_another_user),
		T(test_open_in_single_identity_accepts_a_directory_others_write),
		T(test_open_resolves_links_of_its_directories),
		T(test_rotation_rechecks_the_directory),
		T(test_open_falls_back_to_a_socket_fallback_directory),
		T(test_launcher_appends_audit_orders_and_names_its_file),
	};
#undef T
	return cmocka_run_group_tests_name("audit", tests, NULL, NULL);
}
