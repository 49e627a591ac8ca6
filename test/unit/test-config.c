/*
 * Unit tests for common/config.c: toolrun.conf parsing, loading, tool
 * lookup and per-tool limits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* nftw's FTW_DEPTH and FTW_PHYS; the build sets it */
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

/* ───────────────────────── helpers ───────────────────────── */

static struct config cfg;
static char scratch[CONFIG_MAX_FILE + 1];
static char tmpdir[64];

static int parse(const char *text)
{
	config_init(&cfg, "test.conf");
	return config_parse_text(&cfg, text);
}

/* text must be refused, with cfg.error = "test.conf:LINE: ..." holding
 * `phrase`. */
static void expect_error(const char *text, int line, const char *phrase)
{
	char prefix[64];
	int r = parse(text);

	snprintf(prefix, sizeof(prefix), "test.conf:%d: ", line);
	if (r != -EINVAL || strncmp(cfg.error, prefix, strlen(prefix)) != 0 ||
	    strstr(cfg.error, phrase) == NULL)
		print_error("config:\n%s\nreturned %d, error \"%s\"; want %s...%s\n",
			    text, r, cfg.error, prefix, phrase);
	assert_int_equal(r, -EINVAL);
	assert_memory_equal(cfg.error, prefix, strlen(prefix));
	assert_non_null(strstr(cfg.error, phrase));
}

static void expect_ok(const char *text)
{
	int r = parse(text);
	if (r != 0)
		print_error("config:\n%s\nreturned %d: %s\n", text, r, cfg.error);
	assert_int_equal(r, 0);
	assert_string_equal(cfg.error, "");
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int make_tmpdir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/toolrun-unit-config-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	(void)state;
	return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmp_path(char *out, size_t cap, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", tmpdir, name);
	assert_true(n > 0 && (size_t)n < cap);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static int tool_index(const char *name)
{
	for (unsigned i = 0; i < cfg.ntools; i++)
		if (strcmp(config_tool_name(&cfg, (int)i), name) == 0)
			return (int)i;
	return -1;
}

/* ───────────────────────── values ───────────────────────── */

static void test_defaults(void **state)
{
	(void)state;
	config_init(&cfg, "/some/where.conf");
	assert_string_equal(cfg.file, "/some/where.conf");
	assert_string_equal(cfg.socket, "/run/toolrun/toolrun.sock");
	assert_int_equal(config_socket_count(&cfg), 3);
	assert_string_equal(config_socket_at(&cfg, 0), "/run/toolrun/toolrun.sock");
	assert_string_equal(config_socket_at(&cfg, 1), "/dev/shm/toolrun/toolrun.sock");
	assert_string_equal(config_socket_at(&cfg, 2), "/tmp/toolrun/toolrun.sock");
	assert_int_equal(cfg.wait_daemon_s, 5);
	assert_int_equal(cfg.defaults.max_bytes, 4000);
	assert_int_equal(cfg.defaults.max_lines, 200);
	assert_int_equal(cfg.defaults.timeout_s, 30);
	assert_int_equal(cfg.truncate, TRUNCATE_SINK);
	assert_int_equal(cfg.fallback, FALLBACK_FAIL);
	assert_int_equal(cfg.ntools, 0);
	assert_false(cfg.has_path_tools);
	assert_string_equal(cfg.error, "");
}

static void test_empty_text_keeps_defaults(void **state)
{
	(void)state;
	expect_ok("");
	expect_ok("\n\n# only a comment\n; and another\n   \n");
	assert_string_equal(cfg.socket, "/run/toolrun/toolrun.sock");
	assert_int_equal(cfg.defaults.max_bytes, 4000);
	assert_int_equal(cfg.defaults.max_lines, 200);
	assert_int_equal(cfg.defaults.timeout_s, 30);
	assert_int_equal(cfg.truncate, TRUNCATE_SINK);
	assert_int_equal(cfg.fallback, FALLBACK_FAIL);
	assert_int_equal(cfg.ntools, 0);
}

static void test_every_global_key_is_parsed(void **state)
{
	(void)state;
	expect_ok("socket = /tmp/other.sock\n"
		  "max_bytes = 123\n"
		  "max_lines = 45\n"
		  "timeout = 6\n"
		  "truncate = always\n"
		  "fallback = direct\n"
		  "tools = cat grep\n");
	assert_string_equal(cfg.socket, "/tmp/other.sock");
	assert_int_equal(cfg.defaults.max_bytes, 123);
	assert_int_equal(cfg.defaults.max_lines, 45);
	assert_int_equal(cfg.defaults.timeout_s, 6);
	assert_int_equal(cfg.truncate, TRUNCATE_ALWAYS);
	assert_int_equal(cfg.fallback, FALLBACK_DIRECT);
	assert_int_equal(cfg.ntools, 2);
	assert_string_equal(config_tool_name(&cfg, 0), "cat");
	assert_string_equal(config_tool_name(&cfg, 1), "grep");
}

static void test_output_contract_defaults(void **state)
{
	(void)state;
	expect_ok("");
	assert_true(cfg.agent_commands);
	assert_int_equal(cfg.defaults.shape, SHAPE_HEAD_TAIL);
	assert_int_equal(cfg.binary, BINARY_SUMMARY);
	assert_int_equal(cfg.command_timeout_s, 300);
	assert_string_equal(cfg.spill_dir, "/tmp/toolrun-output");
	assert_true(cfg.spill_max_bytes == (UINT64_C(64) << 20));
	assert_true(cfg.spill_total_bytes == (UINT64_C(1) << 30));
	assert_int_equal(cfg.spill_expire_s, 86400);
	assert_string_equal(cfg.audit_log, "/var/log/toolrun/audit.jsonl");
	assert_true(cfg.audit_max_bytes == (UINT64_C(16) << 20));
	assert_int_equal(cfg.audit_keep, 4);
}

static void test_output_contract_keys_are_parsed(void **state)
{
	(void)state;
	expect_ok("agent_commands = off\nshape = tail\nbinary = pass\n"
		  "command_timeout = 0\nspill_dir =\nspill_max = 1M\nspill_total = 2G\n"
		  "spill_expire = 60\naudit_log = /a/b.jsonl\naudit_max = 64K\naudit_keep = 0\n"
		  "tools = cat\n[tool.cat]\nshape = head\n");
	assert_false(cfg.agent_commands);
	assert_int_equal(cfg.defaults.shape, SHAPE_TAIL);
	assert_int_equal(cfg.binary, BINARY_PASS);
	assert_int_equal(cfg.command_timeout_s, 0);
	assert_string_equal(cfg.spill_dir, "");
	assert_true(cfg.spill_max_bytes == (UINT64_C(1) << 20));
	assert_true(cfg.spill_total_bytes == (UINT64_C(2) << 30));
	assert_int_equal(cfg.spill_expire_s, 60);
	assert_string_equal(cfg.audit_log, "/a/b.jsonl");
	assert_true(cfg.audit_max_bytes == 64 * 1024);
	assert_int_equal(cfg.audit_keep, 0);
	struct limits lim = config_tool_limits(&cfg, 0);
	assert_int_equal(lim.shape, SHAPE_HEAD);
	assert_true(lim.from_section & LIMIT_SET_SHAPE);
	expect_ok("shape = head+tail\n");
	assert_int_equal(cfg.defaults.shape, SHAPE_HEAD_TAIL);
}

static void test_output_contract_keys_refuse_bad_values(void **state)
{
	(void)state;
	expect_error("shape = middle\n", 1, "shape must be 'head+tail', 'head' or 'tail'");
	expect_error("agent_commands = yes\n", 1, "agent_commands must be 'on' or 'off'");
	expect_error("binary = hide\n", 1, "binary must be 'summary' or 'pass'");
	expect_error("command_timeout = 604801\n", 1, "command_timeout must be a number of seconds");
	expect_error("spill_dir = relative/dir\n", 1, "spill_dir must be an absolute path or empty");
	expect_error("audit_log = audit.jsonl\n", 1, "audit_log must be an absolute path or empty");
	expect_error("spill_max = 100\n", 1, "spill_max must be a size of at least 4096 bytes");
	expect_error("spill_total = unlimited\n", 1, "spill_total must be a size of at least 4096 bytes");
	expect_error("audit_max = lots\n", 1, "audit_max must be a size of at least 4096 bytes");
	expect_error("spill_expire = 0\n", 1, "spill_expire must be a number of seconds from 1");
	expect_error("audit_keep = 101\n", 1, "audit_keep must be a number of rotated files up to 100");
	expect_error("shape = head\nshape = tail\n", 2, "'shape' is set twice");
}

static void test_truncate_accepts_sink_and_always(void **state)
{
	(void)state;
	expect_ok("truncate = always\n");
	assert_int_equal(cfg.truncate, TRUNCATE_ALWAYS);
	expect_ok("truncate = sink\n");
	assert_int_equal(cfg.truncate, TRUNCATE_SINK);
}

static void test_fallback_accepts_fail_and_direct(void **state)
{
	(void)state;
	expect_ok("fallback = direct\n");
	assert_int_equal(cfg.fallback, FALLBACK_DIRECT);
	expect_ok("fallback = fail\n");
	assert_int_equal(cfg.fallback, FALLBACK_FAIL);
}

static void test_zero_limits_are_accepted(void **state)
{
	(void)state;
	expect_ok("max_bytes = 0\nmax_lines = 0\ntimeout = 0\n");
	assert_int_equal(cfg.defaults.max_bytes, 0);
	assert_int_equal(cfg.defaults.max_lines, 0);
	assert_int_equal(cfg.defaults.timeout_s, 0);
}

static void test_numbers_up_to_their_maximum_are_accepted(void **state)
{
	(void)state;
	expect_ok("max_bytes = 1048576\nmax_lines = 1099511627776\n"
		  "timeout = 604800\n");
	assert_int_equal(cfg.defaults.max_bytes, 1048576);
	assert_int_equal(cfg.defaults.max_lines, UINT64_C(1) << 40);
	assert_int_equal(cfg.defaults.timeout_s, 604800);
	expect_ok("max_bytes = 007\n");
	assert_int_equal(cfg.defaults.max_bytes, 7);
}

static void test_tools_lists_names_and_paths(void **state)
{
	(void)state;
	expect_ok("tools = cat\t/usr/bin/grep   sed\n");
	assert_int_equal(cfg.ntools, 3);
	assert_string_equal(config_tool_name(&cfg, 0), "cat");
	assert_string_equal(config_tool_name(&cfg, 1), "/usr/bin/grep");
	assert_string_equal(config_tool_name(&cfg, 2), "sed");
	assert_false(cfg.tools[0].is_path);
	assert_true(cfg.tools[1].is_path);
	assert_false(cfg.tools[2].is_path);
	assert_true(cfg.has_path_tools);

	expect_ok("tools = cat sed\n");
	assert_false(cfg.has_path_tools);
}

static void test_tools_key_may_repeat_and_appends(void **state)
{
	(void)state;
	expect_ok("tools = cat\nmax_bytes = 5\ntools = grep\n");
	assert_int_equal(cfg.ntools, 2);
	assert_string_equal(config_tool_name(&cfg, 1), "grep");
}

static void test_continuation_lines_append_to_tools(void **state)
{
	(void)state;
	expect_ok("tools = cat\n"
		  "  grep sed\n"
		  "\tawk\n"
		  "max_lines = 3\n");
	assert_int_equal(cfg.ntools, 4);
	assert_string_equal(config_tool_name(&cfg, 0), "cat");
	assert_string_equal(config_tool_name(&cfg, 1), "grep");
	assert_string_equal(config_tool_name(&cfg, 2), "sed");
	assert_string_equal(config_tool_name(&cfg, 3), "awk");
	assert_int_equal(cfg.defaults.max_lines, 3);
}

static void test_inline_comments_are_stripped(void **state)
{
	(void)state;
	expect_ok("max_bytes = 100 # hash comment\n"
		  "max_lines = 7 ; semicolon comment\n"
		  "tools = cat grep # not-a-tool\n"
		  "truncate = always\t# tab before it\n"
		  "[tool.cat] ; a section with a comment\n"
		  "timeout = 9 # seconds\n");
	assert_int_equal(cfg.defaults.max_bytes, 100);
	assert_int_equal(cfg.defaults.max_lines, 7);
	assert_int_equal(cfg.ntools, 2);
	assert_int_equal(tool_index("not-a-tool"), -1);
	assert_int_equal(cfg.truncate, TRUNCATE_ALWAYS);
	assert_int_equal(config_tool_limits(&cfg, 0).timeout_s, 9);
}

/* inih strips inline comments on `key = value` lines but not on
 * continuation lines; the words of such a comment must not become tools. */
static void test_inline_comment_on_continuation_line_is_stripped(void **state)
{
	(void)state;
	expect_ok("tools = cat\n"
		  "  sed ; not-a-tool\n"
		  "  awk # nor-this\n");
	assert_int_equal(tool_index(";"), -1);
	assert_int_equal(tool_index("not-a-tool"), -1);
	assert_int_equal(tool_index("#"), -1);
	assert_int_equal(tool_index("nor-this"), -1);
	assert_int_equal(cfg.ntools, 3);
}

static void test_full_line_comments_are_ignored(void **state)
{
	(void)state;
	expect_ok("# max_bytes = 1\n"
		  "; max_lines = 1\n"
		  "[tool.cat]\n"
		  "# max_bytes = bogus\n");
	assert_int_equal(cfg.defaults.max_bytes, 4000);
	assert_int_equal(cfg.defaults.max_lines, 200);
}

static void test_crlf_line_endings_are_accepted(void **state)
{
	(void)state;
	expect_ok("tools = cat\r\nmax_bytes = 7\r\n[tool.cat]\r\nmax_lines = 2\r\n");
	assert_int_equal(cfg.defaults.max_bytes, 7);
	assert_string_equal(config_tool_name(&cfg, 0), "cat");
	assert_int_equal(config_tool_limits(&cfg, 0).max_lines, 2);
}

static void test_line_longer_than_200_characters_parses(void **state)
{
	(void)state;
	/* inih's default line limit is 200 bytes; the config raises it. A
	 * 300-byte path would be split (and its tail rejected) at 200. */
	char path[302], text[1024];
	path[0] = '/';
	memset(path + 1, 'p', 300);
	path[301] = '\0';
	snprintf(text, sizeof(text),
		 "tools = cat %s grep sed awk\nmax_lines = 9\n", path);
	assert_true(strlen(text) > 320);

	expect_ok(text);
	assert_int_equal(cfg.ntools, 5);
	assert_string_equal(config_tool_name(&cfg, 1), path);
	assert_string_equal(config_tool_name(&cfg, 4), "awk");
	assert_int_equal(cfg.defaults.max_lines, 9);
}

/* inih would split a line longer than its buffer and parse the tail as
 * a line of its own; such a line is refused, naming it. */
static void test_overlong_comment_line_is_not_split_into_a_setting(void **state)
{
	(void)state;
	static char text[8192];
	size_t n = (size_t)snprintf(text, sizeof(text), "tools = cat\n#");
	memset(text + n, 'x', 4094);
	n += 4094;
	snprintf(text + n, sizeof(text) - n, "max_bytes = 1\n");

	assert_int_equal(parse(text), -EINVAL);
	assert_string_equal(cfg.error, "test.conf:2: line longer than 4093 bytes");
	assert_int_equal(cfg.defaults.max_bytes, 4000);
}

/* ───────────────────────── tool sections ───────────────────────── */

static void test_tool_section_sets_its_limits(void **state)
{
	(void)state;
	expect_ok("tools = cat grep\n"
		  "[tool.grep]\n"
		  "max_bytes = 11\n"
		  "max_lines = 22\n"
		  "timeout = 33\n");
	const struct tool *t = &cfg.tools[1];
	assert_int_equal(t->set, LIMIT_SET_MAX_BYTES | LIMIT_SET_MAX_LINES | LIMIT_SET_TIMEOUT);
	assert_int_equal(t->own.max_bytes, 11);
	assert_int_equal(t->own.max_lines, 22);
	assert_int_equal(t->own.timeout_s, 33);
	assert_int_equal(cfg.tools[0].set, 0);
	/* The global defaults are untouched. */
	assert_int_equal(cfg.defaults.max_bytes, 4000);
}

static void test_tool_section_for_path_tool(void **state)
{
	(void)state;
	expect_ok("tools = /usr/bin/cat\n[tool./usr/bin/cat]\nmax_lines = 4\n");
	assert_int_equal(config_tool_limits(&cfg, 0).max_lines, 4);
}

static void test_tool_limits_override_only_what_section_sets(void **state)
{
	(void)state;
	expect_ok("max_bytes = 100\nmax_lines = 10\ntimeout = 5\n"
		  "tools = cat grep sed\n"
		  "[tool.cat]\nmax_lines = 3\n"
		  "[tool.sed]\nmax_bytes = 0\ntimeout = 0\n");
	struct limits cat = config_tool_limits(&cfg, tool_index("cat"));
	assert_int_equal(cat.max_bytes, 100);
	assert_int_equal(cat.max_lines, 3);
	assert_int_equal(cat.timeout_s, 5);
	struct limits grep = config_tool_limits(&cfg, tool_index("grep"));
	assert_int_equal(grep.max_bytes, 100);
	assert_int_equal(grep.max_lines, 10);
	assert_int_equal(grep.timeout_s, 5);
	/* An override to 0 (no limit) is an override too. */
	struct limits sed = config_tool_limits(&cfg, tool_index("sed"));
	assert_int_equal(sed.max_bytes, 0);
	assert_int_equal(sed.max_lines, 10);
	assert_int_equal(sed.timeout_s, 0);
}

/*
 * inih cuts section names to 49 bytes, so [tool.NAME] with a longer NAME
 * would set the limits of whatever tool the first 44 bytes name. Such a
 * section is refused instead, at its line.
 */
static void test_tool_section_with_overlong_name_is_refused(void **state)
{
	(void)state;
	/* prefix is 44 bytes; long_name is prefix + "/bin/prog". */
	static const char prefix[] = "/opt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	char long_name[128], text[512];
	assert_int_equal(strlen(prefix), 44);
	snprintf(long_name, sizeof(long_name), "%s/bin/prog", prefix);
	snprintf(text, sizeof(text), "tools = %s %s\n[tool.%s]\nmax_bytes = 5\n",
		 prefix, long_name, long_name);

	assert_int_equal(parse(text), -EINVAL);
	assert_string_equal(cfg.error,
			    "test.conf:2: section name longer than 49 bytes: "
			    "[tool./opt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/bin/prog]");
}

static void test_tool_section_of_49_bytes_is_accepted(void **state)
{
	(void)state;
	/* "tool." + 44 bytes: the longest section name inih keeps whole. */
	static const char name[] = "/opt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	char text[256];
	snprintf(text, sizeof(text), "tools = %s\n[tool.%s]\nmax_bytes = 5\n", name, name);
	expect_ok(text);
	assert_int_equal(config_tool_limits(&cfg, 0).max_bytes, 5);
}

/* ───────────────────────── errors ───────────────────────── */

static void test_error_syntax_reports_its_line(void **state)
{
	(void)state;
	expect_error("tools = cat\n# comment\n\nthis line has no equals sign\n", 4,
		     "syntax error");
	expect_error("tools = cat\n[tool.cat\nmax_bytes = 1\n", 2, "syntax error");
}

static void test_error_unknown_key_reports_its_line(void **state)
{
	(void)state;
	expect_error("tools = cat\n\n; comment\nmax_byte = 5\n", 4, "unknown key 'max_byte'");
}

static void test_error_unknown_key_in_tool_section(void **state)
{
	(void)state;
	expect_error("tools = cat\n[tool.cat]\nmax_lines = 1\nsocket = /x\n", 4,
		     "unknown key 'socket'");
}

static void test_error_unknown_section_reports_line_of_its_first_key(void **state)
{
	(void)state;
	expect_error("tools = cat\n[toolz]\n\nmax_bytes = 1\n", 4, "unknown section [toolz]");
	expect_error("tools = cat\n[tool.]\nmax_bytes = 1\n", 3, "unknown section [tool.]");
}

static void test_error_bad_number_reports_its_line(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "-1", "+1", "1k", "0x10", "1 000", "1.5", "ten",
		"1099511627777", "99999999999999999999999",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[128];
		snprintf(text, sizeof(text), "tools = cat\nmax_lines = 2\nmax_bytes = %s\n", bad[i]);
		/* A number too large to hold is refused for that (below). */
		expect_error(text, 3, strcmp(bad[i], "1099511627777") == 0 ? "max_bytes = 1099511627777 is more"
								       : "max_bytes must be a number");
		snprintf(text, sizeof(text), "\n\nmax_lines = %s\n", bad[i]);
		expect_error(text, 3, "max_lines must be a number");
		snprintf(text, sizeof(text), "tools = cat\n[tool.cat]\ntimeout = %s\n", bad[i]);
		expect_error(text, 3, "timeout must be a number");
	}
	expect_error("timeout = 604801\n", 1, "timeout must be a number");
}

/* toolrund holds up to max_bytes of a stream in memory: a budget it could
 * not hold is refused by its line, in the defaults and in a section, and
 * the message says what it takes. */
static void test_error_max_bytes_above_what_is_held(void **state)
{
	(void)state;
	expect_error("tools = cat\ntruncate = always\nmax_bytes = 1000000000\n", 3,
		     "max_bytes = 1000000000 is more than toolrund holds of a stream: 1 to "
		     "1048576, or 0 for no byte limit of its own (a stream shaped for max_lines "
		     "is still held to 1048576 bytes)");
	expect_error("tools = cat\n[tool.cat]\nshape = head\nmax_bytes = 1048577\n", 4,
		     "max_bytes = 1048577 is more than toolrund holds");
	expect_error("max_bytes = 18446744073709551615\n", 1, "max_bytes = 18446744073709551615 is more");
	expect_error("max_bytes = 18446744073709551616\n", 1, "max_bytes must be a number");
	expect_ok("tools = cat\n[tool.cat]\nmax_bytes = 1048576\n");
	assert_int_equal(config_tool_limits(&cfg, 0).max_bytes, 1048576);
}

static void test_error_bad_truncate_value(void **state)
{
	(void)state;
	expect_error("tools = cat\ntruncate = never\n", 2, "truncate must be 'sink' or 'always'");
	expect_error("truncate = Always\n", 1, "truncate must be");
}

static void test_error_bad_fallback_value(void **state)
{
	(void)state;
	expect_error("\nfallback = local\n", 2, "fallback must be 'fail' or 'direct'");
}

static void test_error_relative_socket(void **state)
{
	(void)state;
	expect_error("max_bytes = 1\nsocket = run/toolrun.sock\n", 2,
		     "socket must be an absolute path");
}

static void test_error_socket_longer_than_103_bytes(void **state)
{
	(void)state;
	char path[128], text[160];

	/* 103 bytes: PATH.new still fits sun_path. */
	memset(path, 'a', 103);
	path[0] = '/';
	path[103] = '\0';
	snprintf(text, sizeof(text), "socket = %s\n", path);
	expect_ok(text);
	assert_string_equal(cfg.socket, path);

	path[103] = 'a';
	path[104] = '\0';
	snprintf(text, sizeof(text), "tools = cat\nsocket = %s\n", path);
	expect_error(text, 2, "socket path is longer than 103 bytes");
}

static void test_socket_fallback_list(void **state)
{
	(void)state;
	expect_ok("socket_fallback = /a/s.sock   /b/s.sock\t/c/s.sock\n");
	assert_int_equal(config_socket_count(&cfg), 4);
	assert_string_equal(config_socket_at(&cfg, 1), "/a/s.sock");
	assert_string_equal(config_socket_at(&cfg, 3), "/c/s.sock");
	/* Empty: only `socket` is tried. */
	expect_ok("socket_fallback =\n");
	assert_int_equal(config_socket_count(&cfg), 1);
	assert_string_equal(config_socket_at(&cfg, 0), "/run/toolrun/toolrun.sock");
}

static void test_error_socket_fallback(void **state)
{
	(void)state;
	expect_error("tools = cat\nsocket_fallback = /a.sock rel.sock\n", 2,
		     "socket_fallback must be an absolute path, not 'rel.sock'");
	expect_error("socket_fallback = /a /b /c /d /e\n", 1,
		     "socket_fallback lists more than 4 paths");
	char path[128], text[200];
	memset(path, 'b', 104);
	path[0] = '/';
	path[104] = '\0';
	snprintf(text, sizeof(text), "socket_fallback = /ok.sock %s\n", path);
	expect_error(text, 1, "socket_fallback path is longer than 103 bytes");
}

static void test_wait_daemon(void **state)
{
	(void)state;
	expect_ok("wait_daemon = 0\n");
	assert_int_equal(cfg.wait_daemon_s, 0);
	expect_ok("wait_daemon = 600\n");
	assert_int_equal(cfg.wait_daemon_s, 600);
	expect_error("wait_daemon = 601\n", 1, "wait_daemon must be a number of seconds up to 600");
	expect_error("wait_daemon = soon\n", 1, "wait_daemon must be a number of seconds up to 600");
}

static void test_error_tool_listed_twice(void **state)
{
	(void)state;
	expect_error("tools = cat grep cat\n", 1, "tool 'cat' is listed twice");
	expect_error("tools = cat grep\n  sed\n  grep\n", 3, "tool 'grep' is listed twice");
	expect_error("tools = cat\nmax_lines = 1\ntools = cat\n", 3, "listed twice");
}

static void test_error_tool_name_with_relative_slash(void **state)
{
	(void)state;
	expect_error("tools = cat\n  bin/grep\n", 2,
		     "must be a program name or an absolute path");
}

static void test_error_tool_name_too_long(void **state)
{
	(void)state;
	char text[400];
	int n = snprintf(text, sizeof(text), "tools = ");
	memset(text + n, 'n', 256);
	strcpy(text + n + 256, "\n");
	expect_error(text, 1, "tool name too long");
}

static void test_error_too_many_tools(void **state)
{
	(void)state;
	char text[2048];
	size_t n = (size_t)snprintf(text, sizeof(text), "tools =");
	for (int i = 0; i < CONFIG_MAX_TOOLS; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " t%d", i);
	snprintf(text + n, sizeof(text) - n, "\n  one-more\n");
	expect_error(text, 2, "too many tools");
}

static void test_error_tool_section_for_unlisted_tool(void **state)
{
	(void)state;
	expect_error("tools = cat\n\n[tool.grep]\nmax_bytes = 1\n", 4,
		     "[tool.grep] names a tool that the 'tools' key does not list");
	/* The path and the name of one program are different tools. */
	expect_error("tools = /bin/cat\n[tool.cat]\nmax_bytes = 1\n", 3, "does not list");
}

static void test_error_global_key_set_twice(void **state)
{
	(void)state;
	static const char *const keys[][2] = {
		{"socket", "/a"}, {"max_bytes", "1"}, {"max_lines", "1"},
		{"timeout", "1"}, {"truncate", "sink"}, {"fallback", "fail"},
		{"socket_fallback", "/a"}, {"wait_daemon", "1"},
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char text[160];
		snprintf(text, sizeof(text), "%s = %s\ntools = cat\n%s = %s\n",
			 keys[i][0], keys[i][1], keys[i][0], keys[i][1]);
		expect_error(text, 3, "is set twice");
		assert_non_null(strstr(cfg.error, keys[i][0]));
	}
}

static void test_error_tool_key_set_twice(void **state)
{
	(void)state;
	expect_error("tools = cat\n[tool.cat]\nmax_bytes = 1\nmax_lines = 1\nmax_bytes = 2\n",
		     5, "'max_bytes' is set twice for this tool");
	expect_error("tools = cat\n[tool.cat]\ntimeout = 1\n[tool.cat]\ntimeout = 2\n",
		     5, "'timeout' is set twice for this tool");
}

static void test_error_continuation_of_scalar_key_is_set_twice(void **state)
{
	(void)state;
	expect_error("max_bytes = 5\n  6\n", 2, "'max_bytes' is set twice");
}

static void test_error_reports_the_first_error(void **state)
{
	(void)state;
	expect_error("tools = cat\nbogus = 1\ntruncate = never\n", 2, "unknown key 'bogus'");
}

/* ───────────────────────── config_load ───────────────────────── */

static void test_load_reads_the_file(void **state)
{
	(void)state;
	char path[128];
	static const char text[] = "tools = cat\nmax_bytes = 42\n";
	tmp_path(path, sizeof(path), "ok.conf");
	write_file(path, text, sizeof(text) - 1);

	assert_int_equal(config_load(&cfg, path, scratch), 0);
	assert_string_equal(cfg.file, path);
	assert_int_equal(cfg.defaults.max_bytes, 42);
	assert_int_equal(cfg.ntools, 1);
}

static void test_load_error_names_the_file_and_line(void **state)
{
	(void)state;
	char path[128], prefix[160];
	static const char text[] = "tools = cat\nnope = 1\n";
	tmp_path(path, sizeof(path), "bad.conf");
	write_file(path, text, sizeof(text) - 1);

	assert_int_equal(config_load(&cfg, path, scratch), -EINVAL);
	snprintf(prefix, sizeof(prefix), "%s:2: unknown key 'nope'", path);
	assert_string_equal(cfg.error, prefix);
}

static void test_load_missing_file_fails(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof(path), "does-not-exist.conf");

	assert_int_equal(config_load(&cfg, path, scratch), -ENOENT);
	assert_non_null(strstr(cfg.error, path));
	assert_non_null(strstr(cfg.error, "cannot read"));
}

static void test_load_directory_fails(void **state)
{
	(void)state;
	assert_int_equal(config_load(&cfg, tmpdir, scratch), -EISDIR);
	assert_non_null(strstr(cfg.error, tmpdir));
}

static void test_load_file_of_exactly_64_kib_is_accepted(void **state)
{
	(void)state;
	char path[128];
	static char text[CONFIG_MAX_FILE];
	tmp_path(path, sizeof(path), "max.conf");
	/* Comment lines, then a setting in the very last bytes. */
	memset(text, '\n', sizeof(text));
	for (size_t i = 0; i + 64 <= sizeof(text); i += 64) {
		text[i] = '#';
		memset(text + i + 1, 'c', 62);
	}
	static const char tail[] = "max_lines = 8\n";
	memcpy(text + sizeof(text) - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
	text[sizeof(text) - (sizeof(tail) - 1) - 1] = '\n';
	write_file(path, text, sizeof(text));

	int r = config_load(&cfg, path, scratch);
	if (r != 0)
		print_error("%s\n", cfg.error);
	assert_int_equal(r, 0);
	assert_int_equal(cfg.defaults.max_lines, 8);
}

static void test_load_file_larger_than_64_kib_is_refused(void **state)
{
	(void)state;
	char path[128];
	static char text[CONFIG_MAX_FILE + 1];
	tmp_path(path, sizeof(path), "big.conf");
	memset(text, '\n', sizeof(text));
	write_file(path, text, sizeof(text));

	assert_int_equal(config_load(&cfg, path, scratch), -EFBIG);
	assert_non_null(strstr(cfg.error, path));
	assert_non_null(strstr(cfg.error, "65536"));
}

static void test_load_file_with_nul_byte_is_refused(void **state)
{
	(void)state;
	char path[128];
	static const char text[] = "tools = cat\nmax_bytes = 1\0\nmax_lines = 2\n";
	tmp_path(path, sizeof(path), "nul.conf");
	write_file(path, text, sizeof(text) - 1);

	assert_int_equal(config_load(&cfg, path, scratch), -EINVAL);
	assert_non_null(strstr(cfg.error, path));
	assert_non_null(strstr(cfg.error, "NUL"));
}

/* ───────────────────────── config_find_tool ───────────────────────── */

static void test_find_tool_by_bare_name(void **state)
{
	(void)state;
	expect_ok("tools = cat grep\n");
	assert_int_equal(config_find_tool(&cfg, "grep"), 1);
	assert_int_equal(config_find_tool(&cfg, "cat"), 0);
}

/* trusted_dirs empty: a name matches a file of that name anywhere. */
static void test_find_tool_by_basename_after_directory(void **state)
{
	(void)state;
	expect_ok("tools = cat grep\ntrusted_dirs =\n");
	assert_int_equal(config_find_tool(&cfg, "/usr/bin/cat"), 0);
	assert_int_equal(config_find_tool(&cfg, "/home/u/bin/grep"), 1);
	assert_int_equal(config_find_tool(&cfg, "./grep"), 1);
	assert_int_equal(config_find_tool(&cfg, "bin/cat"), 0);
}

static void test_find_tool_does_not_match_other_names(void **state)
{
	(void)state;
	static const char *const others[] = {
		"cats", "ca", "xcat", "/usr/bin/cats", "/usr/bin/ca", "/usr/bin/cat.sh",
		"/usr/bin/cat/", "/cat/bin", "", "CAT", "/usr/bin/grep",
	};
	expect_ok("tools = cat\n");
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		if (config_find_tool(&cfg, others[i]) != -1)
			print_error("'%s' matched\n", others[i]);
		assert_int_equal(config_find_tool(&cfg, others[i]), -1);
	}
}

static void test_find_tool_by_absolute_path(void **state)
{
	(void)state;
	/* The entry need not exist for its own path to match. */
	expect_ok("tools = cat /nonexistent/dir/prog\n");
	assert_int_equal(config_find_tool(&cfg, "/nonexistent/dir/prog"), 1);
	/* A path entry is not a name: another "prog" does not match it. */
	assert_int_equal(config_find_tool(&cfg, "/usr/bin/prog"), -1);
	assert_int_equal(config_find_tool(&cfg, "prog"), -1);
	assert_int_equal(config_find_tool(&cfg, "/nonexistent/dir/prog2"), -1);
}

static void test_find_tool_path_entry_matches_same_file_through_symlink(void **state)
{
	(void)state;
	char prog[128], link[128], text[512];
	tmp_path(prog, sizeof(prog), "prog");
	tmp_path(link, sizeof(link), "alias");
	write_file(prog, "#!/bin/sh\n", 10);
	assert_int_equal(symlink(prog, link), 0);

	snprintf(text, sizeof(text), "tools = cat %s\n", prog);
	expect_ok(text);
	assert_int_equal(config_find_tool(&cfg, prog), 1);
	assert_int_equal(config_find_tool(&cfg, link), 1);
	/* And the other way round: the entry is the symlink. */
	snprintf(text, sizeof(text), "tools = %s\n", link);
	expect_ok(text);
	assert_int_equal(config_find_tool(&cfg, prog), 0);
	unlink(link);
	unlink(prog);
}

static void test_find_tool_path_entry_does_not_match_other_file(void **state)
{
	(void)state;
	char da[128], db[128], a[160], b[160], text[512];
	tmp_path(da, sizeof(da), "a");
	tmp_path(db, sizeof(db), "b");
	assert_int_equal(mkdir(da, 0755), 0);
	assert_int_equal(mkdir(db, 0755), 0);
	snprintf(a, sizeof(a), "%s/prog", da);
	snprintf(b, sizeof(b), "%s/prog", db);
	write_file(a, "a", 1);
	write_file(b, "b", 1);

	snprintf(text, sizeof(text), "tools = %s\n", a);
	expect_ok(text);
	assert_int_equal(config_find_tool(&cfg, b), -1);
	assert_int_equal(config_find_tool(&cfg, "/nonexistent/prog"), -1);
	assert_int_equal(config_find_tool(&cfg, a), 0);
	unlink(a);
	unlink(b);
	rmdir(da);
	rmdir(db);
}

static void test_find_tool_at_resolves_relative_path_from_dirfd(void **state)
{
	(void)state;
	char dir[128], prog[160], text[512];
	tmp_path(dir, sizeof(dir), "rel");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(prog, sizeof(prog), "%s/tool-x", dir);
	write_file(prog, "x", 1);
	int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);

	snprintf(text, sizeof(text), "tools = %s\n", prog);
	expect_ok(text);
	assert_int_equal(config_find_tool_at(&cfg, dirfd, "tool-x", NULL), 0);
	assert_int_equal(config_find_tool_at(&cfg, dirfd, "./tool-x", NULL), 0);
	/* Relative to the current directory, it is not there. */
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, "tool-x", NULL), -1);
	close(dirfd);
	unlink(prog);
	rmdir(dir);
}

/* ───────────────────────── trusted_dirs ───────────────────────── */

static void test_trusted_dirs_default_and_parsed(void **state)
{
	(void)state;
	expect_ok("");
	assert_string_equal(config_text(&cfg, cfg.trusted_dirs),
			    "/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin");
	assert_int_equal(cfg.trusted_dirs_len, strlen(config_text(&cfg, cfg.trusted_dirs)));
	expect_ok("trusted_dirs = /opt/bin\t/usr/bin/\n");
	assert_string_equal(config_text(&cfg, cfg.trusted_dirs), "/opt/bin\t/usr/bin/");
	expect_ok("trusted_dirs =\n");
	assert_int_equal(cfg.trusted_dirs_len, 0);
}

static void test_trusted_dirs_refuses_bad_values(void **state)
{
	(void)state;
	char text[1024];
	expect_error("trusted_dirs = /usr/bin bin\n", 1,
		     "trusted_dirs takes absolute directories, not 'bin'");
	expect_error("trusted_dirs = /a\ntrusted_dirs = /b\n", 2, "'trusted_dirs' is set twice");
	/* DIR/NAME, with a name of 255 bytes, must fit a path of 1023. */
	snprintf(text, sizeof(text), "trusted_dirs = /%0767d\n", 0);
	expect_error(text, 1, "trusted_dirs: directory longer than 767 bytes");
	snprintf(text, sizeof(text), "trusted_dirs = /%0766d\n", 0);
	expect_ok(text);
}

/* <tmpdir>/NAME/prog, a small executable file; the directory is made. */
static void make_prog(char *out, size_t cap, const char *dir, mode_t mode)
{
	char d[128];
	tmp_path(d, sizeof(d), dir);
	mkdir(d, 0755);
	int n = snprintf(out, cap, "%s/prog", d);
	assert_true(n > 0 && (size_t)n < cap);
	write_file(out, "#!/bin/sh\n", 10);
	assert_int_equal(chmod(out, mode), 0);
}

/* A config listing prog by name, with trusted_dirs = <tmpdir>/SUFFIX. */
static void trust_dir(const char *suffix)
{
	char text[512];
	snprintf(text, sizeof(text), "tools = prog\ntrusted_dirs = /nonexistent %s/%s\n",
		 tmpdir, suffix);
	expect_ok(text);
}

static void test_name_matches_only_in_trusted_dirs(void **state)
{
	(void)state;
	char good[160], other[160], link[160];
	make_prog(good, sizeof(good), "trusted", 0755);
	make_prog(other, sizeof(other), "untrusted", 0755);
	tmp_path(link, sizeof(link), "links");
	mkdir(link, 0755);
	strcat(link, "/prog");
	assert_int_equal(symlink(good, link), 0);

	trust_dir("trusted");
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, good, NULL), 0);
	/* Another file of that name, elsewhere: not the tool. */
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, other, NULL), -1);
	/* The trusted file under that name elsewhere (a link) is. */
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, link, NULL), 0);
	/* No file at all: nothing to match. */
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, "/nonexistent/prog", NULL), -1);
	/* A directory given with a slash at its end is the same directory. */
	trust_dir("trusted/");
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, good, NULL), 0);
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, other, NULL), -1);
}

static void test_name_match_names_its_trusted_file(void **state)
{
	(void)state;
	char good[160], link[160], dir[128];
	struct tool_file f;
	struct stat st;
	make_prog(good, sizeof(good), "trusted", 0755);
	assert_int_equal(stat(good, &st), 0);
	tmp_path(link, sizeof(link), "alias");
	mkdir(link, 0755);
	strcat(link, "/prog");
	assert_int_equal(symlink(good, link), 0);

	trust_dir("trusted");
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, link, &f), 0);
	assert_string_equal(f.path, good);
	assert_true(f.dev == st.st_dev && f.ino == st.st_ino);
	assert_true(f.by_name);
	/* Relative to the caller's directory. */
	tmp_path(dir, sizeof(dir), "trusted");
	int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	assert_int_equal(config_find_tool_at(&cfg, dirfd, "prog", &f), 0);
	assert_string_equal(f.path, good);
	close(dirfd);
	/* With trusted_dirs empty, any file of that name, and nothing to check. */
	expect_ok("tools = prog\ntrusted_dirs =\n");
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, "/nonexistent/prog", &f), 0);
	assert_string_equal(f.path, "");
}

static void test_path_match_names_the_listed_file(void **state)
{
	(void)state;
	char prog[160], link[160], text[512];
	struct tool_file f;
	struct stat st;
	make_prog(prog, sizeof(prog), "listed", 0755);
	assert_int_equal(stat(prog, &st), 0);
	tmp_path(link, sizeof(link), "listed-link");
	assert_int_equal(symlink(prog, link), 0);

	snprintf(text, sizeof(text), "tools = %s\n", prog);
	expect_ok(text);
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, link, &f), 0);
	assert_string_equal(f.path, prog);
	assert_true(f.dev == st.st_dev && f.ino == st.st_ino);
	assert_false(f.by_name);
	/* A listed path without a file: nothing can be that file. */
	expect_ok("tools = /nonexistent/prog\n");
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, "/nonexistent/prog", &f), 0);
	assert_true(f.dev == 0 && f.ino == 0);
}

/* The caller's question: a bare name is still to be found on PATH. */
static void test_caller_bare_name_matches_by_name(void **state)
{
	(void)state;
	trust_dir("trusted");
	assert_int_equal(config_find_tool(&cfg, "prog"), 0);
	assert_int_equal(config_find_tool_at(&cfg, AT_FDCWD, "prog", NULL), -1);
}

/* Run check() in a child as an unprivileged user: nobody (65534) when
 * this runs as root, else this user. Its exit status is the failure. */
static void as_unprivileged(int (*check)(void))
{
	if (geteuid() == 0)
		assert_int_equal(chmod(tmpdir, 0755), 0); /* for nobody to reach */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
				       setuid(65534) < 0))
			_exit(99);
		_exit(check());
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A file owned by the unprivileged user, mode 0555; one of root's open
 * to all (0757); one of root's, not open (0755). */
static char w_mine[160], w_shared[160], w_closed[160];

static int check_writable(void)
{
	struct stat a, b, c;
	if (stat(w_mine, &a) || stat(w_shared, &b) || stat(w_closed, &c))
		return 1;
	/* Its owner could chmod it, whatever its mode. */
	if (!config_writable_by_self(AT_FDCWD, w_mine, &a))
		return 2;
	/* Others may write a file open to them: asked of the path or of an
	 * O_PATH descriptor, as the launcher's child asks. */
	int fd = open(w_shared, O_PATH | O_CLOEXEC);
	if (fd < 0 || !config_writable_by_self(fd, "", &b))
		return 3;
	if (c.st_uid != geteuid() && config_writable_by_self(AT_FDCWD, w_closed, &c))
		return 4;
	return 0;
}

static void test_writable_by_self(void **state)
{
	(void)state;
	make_prog(w_mine, sizeof(w_mine), "w-mine", 0555);
	make_prog(w_shared, sizeof(w_shared), "w-shared", 0757);
	make_prog(w_closed, sizeof(w_closed), "w-closed", 0755);
	if (geteuid() == 0)
		assert_int_equal(chown(w_mine, 65534, 65534), 0);
	as_unprivileged(check_writable);
}

static void test_root_may_rewrite_anything_so_is_not_asked(void **state)
{
	(void)state;
	char open_file[160];
	struct stat st;
	make_prog(open_file, sizeof(open_file), "w-root", 0777);
	assert_int_equal(stat(open_file, &st), 0);
	/* Only root can tell; to anyone else the file is simply writable. */
	assert_true(config_writable_by_self(AT_FDCWD, open_file, &st) == (geteuid() != 0));
}

/* A file the caller could rewrite is not its tool to the caller (it runs
 * as any unlisted program); toolrund's own lookup leaves that to the
 * launcher's child. */
static char own_prog[160];

static int check_own_file(void)
{
	if (config_find_tool(&cfg, own_prog) != -1)
		return 1;
	if (config_find_tool_at(&cfg, AT_FDCWD, own_prog, NULL) != 0)
		return 2;
	return 0;
}

static void test_caller_writable_file_is_not_the_tool(void **state)
{
	(void)state;
	make_prog(own_prog, sizeof(own_prog), "own", 0755);
	if (geteuid() == 0)
		assert_int_equal(chown(own_prog, 65534, 65534), 0);
	trust_dir("own");
	as_unprivileged(check_own_file);
}

/* Every default, as config_init gives it. */
static void test_defaults_of_every_key(void **state)
{
	(void)state;
	config_init(&cfg, "/d.conf");
	assert_string_equal(cfg.error, "");
	assert_string_equal(cfg.socket, "/run/toolrun/toolrun.sock");
	assert_int_equal(cfg.nsocket_fallback, 2);
	assert_string_equal(cfg.socket_fallback[0], "/dev/shm/toolrun/toolrun.sock");
	assert_string_equal(cfg.socket_fallback[1], "/tmp/toolrun/toolrun.sock");
	assert_string_equal(cfg.user, "");
	assert_int_equal(cfg.allow_uids_len, 0);
	assert_int_equal(cfg.wait_daemon_s, 5);
	assert_int_equal(cfg.defaults.shape, SHAPE_HEAD_TAIL);
	assert_int_equal(cfg.defaults.rlimit[POLICY_RLIMIT_AS], UINT64_C(8) << 30);
	assert_int_equal(cfg.defaults.rlimit[POLICY_RLIMIT_NPROC], 1024);
	assert_int_equal(cfg.defaults.rlimit[POLICY_RLIMIT_FSIZE], UINT64_C(8) << 30);
	assert_int_equal(cfg.defaults.rlimit[POLICY_RLIMIT_NOFILE], 4096);
	assert_int_equal(cfg.defaults.rlimit[POLICY_RLIMIT_CPU], 600);
	assert_int_equal(cfg.defaults.network, NETWORK_DENY);
	assert_int_equal(cfg.defaults.env_allow_len, 0);
	assert_string_equal(config_text(&cfg, cfg.defaults.env_deny), "*TOKEN* *SECRET* *KEY*");
	assert_int_equal(cfg.defaults.env_deny, 0);
	assert_int_equal(cfg.truncate, TRUNCATE_SINK);
	assert_int_equal(cfg.fallback, FALLBACK_FAIL);
	assert_true(cfg.agent_commands);
	assert_int_equal(cfg.command_timeout_s, 300);
	assert_int_equal(cfg.binary, BINARY_SUMMARY);
	assert_string_equal(cfg.spill_dir, "/tmp/toolrun-output");
	assert_int_equal(cfg.spill_max_bytes, UINT64_C(64) << 20);
	assert_int_equal(cfg.spill_total_bytes, UINT64_C(1) << 30);
	assert_int_equal(cfg.spill_expire_s, 24 * 3600);
	assert_string_equal(cfg.audit_log, "/var/log/toolrun/audit.jsonl");
	assert_int_equal(cfg.audit_max_bytes, UINT64_C(16) << 20);
	assert_int_equal(cfg.audit_keep, 4);
	assert_non_null(strstr(cfg.preload, "/libtoolrun.so"));
	assert_int_equal(cfg.ntools, 0);
}

/* What a reload cannot apply, named once each, in a fixed order. */
static void test_reload_fixed_names_what_needs_a_restart(void **state)
{
	static struct config old;
	const char *names[8];
	(void)state;

	config_init(&old, "test.conf");
	assert_int_equal(config_parse_text(&old, "tools = cat\nmax_bytes = 10\n"), 0);
	assert_int_equal(parse("tools = cat grep\nmax_bytes = 20\ntruncate = always\n"), 0);
	assert_int_equal(config_reload_fixed(&old, &cfg, names, 8), 0);

	assert_int_equal(parse("spill_expire = 60\naudit_keep = 1\naudit_max = 8K\n"
			       "allow_uids = 0\nsocket_fallback = /x.sock\n"), 0);
	assert_int_equal(config_reload_fixed(&old, &cfg, names, 8), 4);
	assert_string_equal(names[0], "socket");
	assert_string_equal(names[1], "allow_uids");
	assert_string_equal(names[2], "audit_*");
	assert_string_equal(names[3], "spill_*");

	assert_int_equal(parse("user = nobody\nsocket = /s.sock\nspill_dir =\n"), 0);
	assert_int_equal(config_reload_fixed(&old, &cfg, names, 2), 2);
	assert_string_equal(names[0], "socket");
	assert_string_equal(names[1], "user");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_empty_text_keeps_defaults),
		cmocka_unit_test(test_every_global_key_is_parsed),
		cmocka_unit_test(test_truncate_accepts_sink_and_always),
		cmocka_unit_test(test_fallback_accepts_fail_and_direct),
		cmocka_unit_test(test_zero_limits_are_accepted),
		cmocka_unit_test(test_numbers_up_to_their_maximum_are_accepted),
		cmocka_unit_test(test_tools_lists_names_and_paths),
		cmocka_unit_test(test_tools_key_may_repeat_and_appends),
		cmocka_unit_test(test_continuation_lines_append_to_tools),
		cmocka_unit_test(test_inline_comments_are_stripped),
		cmocka_unit_test(test_inline_comment_on_continuation_line_is_stripped),
		cmocka_unit_test(test_full_line_comments_are_ignored),
		cmocka_unit_test(test_crlf_line_endings_are_accepted),
		cmocka_unit_test(test_line_longer_than_200_characters_parses),
		cmocka_unit_test(test_overlong_comment_line_is_not_split_into_a_setting),
		cmocka_unit_test(test_tool_section_sets_its_limits),
		cmocka_unit_test(test_tool_section_for_path_tool),
		cmocka_unit_test(test_tool_limits_override_only_what_section_sets),
		cmocka_unit_test(test_tool_section_with_overlong_name_is_refused),
		cmocka_unit_test(test_tool_section_of_49_bytes_is_accepted),
		cmocka_unit_test(test_error_syntax_reports_its_line),
		cmocka_unit_test(test_error_unknown_key_reports_its_line),
		cmocka_unit_test(test_error_unknown_key_in_tool_section),
		cmocka_unit_test(test_error_unknown_section_reports_line_of_its_first_key),
		cmocka_unit_test(test_error_bad_number_reports_its_line),
		cmocka_unit_test(test_error_max_bytes_above_what_is_held),
		cmocka_unit_test(test_error_bad_truncate_value),
		cmocka_unit_test(test_error_bad_fallback_value),
		cmocka_unit_test(test_error_relative_socket),
		cmocka_unit_test(test_socket_fallback_list),
		cmocka_unit_test(test_error_socket_fallback),
		cmocka_unit_test(test_wait_daemon),
		cmocka_unit_test(test_output_contract_defaults),
		cmocka_unit_test(test_output_contract_keys_are_parsed),
		cmocka_unit_test(test_output_contract_keys_refuse_bad_values),
		cmocka_unit_test(test_error_socket_longer_than_103_bytes),
		cmocka_unit_test(test_error_tool_listed_twice),
		cmocka_unit_test(test_error_tool_name_with_relative_slash),
		cmocka_unit_test(test_error_tool_name_too_long),
		cmocka_unit_test(test_error_too_many_tools),
		cmocka_unit_test(test_error_tool_section_for_unlisted_tool),
		cmocka_unit_test(test_error_global_key_set_twice),
		cmocka_unit_test(test_error_tool_key_set_twice),
		cmocka_unit_test(test_error_continuation_of_scalar_key_is_set_twice),
		cmocka_unit_test(test_error_reports_the_first_error),
		cmocka_unit_test(test_load_reads_the_file),
		cmocka_unit_test(test_load_error_names_the_file_and_line),
		cmocka_unit_test(test_load_missing_file_fails),
		cmocka_unit_test(test_load_directory_fails),
		cmocka_unit_test(test_load_file_of_exactly_64_kib_is_accepted),
		cmocka_unit_test(test_load_file_larger_than_64_kib_is_refused),
		cmocka_unit_test(test_load_file_with_nul_byte_is_refused),
		cmocka_unit_test(test_find_tool_by_bare_name),
		cmocka_unit_test(test_find_tool_by_basename_after_directory),
		cmocka_unit_test(test_find_tool_does_not_match_other_names),
		cmocka_unit_test(test_find_tool_by_absolute_path),
		cmocka_unit_test(test_find_tool_path_entry_matches_same_file_through_symlink),
		cmocka_unit_test(test_find_tool_path_entry_does_not_match_other_file),
		cmocka_unit_test(test_find_tool_at_resolves_relative_path_from_dirfd),
		cmocka_unit_test(test_trusted_dirs_default_and_parsed),
		cmocka_unit_test(test_trusted_dirs_refuses_bad_values),
		cmocka_unit_test(test_name_matches_only_in_trusted_dirs),
		cmocka_unit_test(test_name_match_names_its_trusted_file),
		cmocka_unit_test(test_path_match_names_the_listed_file),
		cmocka_unit_test(test_caller_bare_name_matches_by_name),
		cmocka_unit_test(test_writable_by_self),
		cmocka_unit_test(test_root_may_rewrite_anything_so_is_not_asked),
		cmocka_unit_test(test_caller_writable_file_is_not_the_tool),
		cmocka_unit_test(test_defaults_of_every_key),
		cmocka_unit_test(test_reload_fixed_names_what_needs_a_restart),
	};
	return cmocka_run_group_tests_name("config", tests, make_tmpdir, remove_tmpdir);
}
