/*
 * Unit tests for front/core/tagscan.c: the seed's scanner table (§6.2) and the
 * edges of the grammar docs/tags.md states. Each case is fed whole, byte
 * by byte and in random chunks: the calls the scanner makes, written as
 * one transcript, must be the same every time, since a live stream may be
 * cut anywhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tagscan.h"

/* ───────────────────────── helpers ───────────────────────── */

/* A transcript: T[text] for the text (runs joined), C ... for a command,
 * E ... for an error; one per line. */
struct log {
	char *p;
	size_t len, cap;
	int in_text; /* the last entry is a T[...] still open */
	unsigned ncommands, nerrors;
};

static void log_add(struct log *l, const char *p, size_t n)
{
	if (l->len + n + 1 > l->cap) {
		size_t cap = l->cap ? l->cap : 256;
		while (cap < l->len + n + 1)
			cap *= 2;
		char *grown = realloc(l->p, cap);
		assert_non_null(grown);
		l->p = grown;
		l->cap = cap;
	}
	memcpy(l->p + l->len, p, n);
	l->len += n;
	l->p[l->len] = '\0';
}

static void log_str(struct log *l, const char *s)
{
	log_add(l, s, strlen(s));
}

/* The input's bytes, with control bytes but '\n' as \xHH: a transcript
 * is a C string. */
static void log_esc(struct log *l, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 && c != '\n') {
			char hex[8];
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			log_str(l, hex);
		} else {
			log_add(l, p + i, 1);
		}
	}
}

static void log_close_text(struct log *l)
{
	if (l->in_text)
		log_str(l, "]\n");
	l->in_text = 0;
}

static void on_text(void *arg, const char *p, size_t n)
{
	struct log *l = arg;

	assert_true(n > 0);
	if (!l->in_text)
		log_str(l, "T[");
	l->in_text = 1;
	log_esc(l, p, n);
}

static void log_command(struct log *l, const struct tag_command *c)
{
	char head[128];

	snprintf(head, sizeof(head), "%s %llu@%llu [", tag_kind_name(c->kind),
		 (unsigned long long)c->index, (unsigned long long)c->line);
	log_str(l, head);
	assert_int_equal(c->argument[c->argument_len], '\0');
	log_esc(l, c->argument, c->argument_len);
	log_str(l, "]");
	if (c->content) {
		log_str(l, " {");
		assert_int_equal(c->content[c->content_len], '\0');
		log_esc(l, c->content, c->content_len);
		log_str(l, "}");
	}
	log_str(l, "\n");
}

static void on_command(void *arg, const struct tag_command *c)
{
	struct log *l = arg;

	log_close_text(l);
	log_str(l, "C ");
	log_command(l, c);
	l->ncommands++;
}

static void on_error(void *arg, const struct tag_command *c, const struct front_error *e)
{
	struct log *l = arg;

	log_close_text(l);
	log_str(l, "E ");
	log_str(l, front_category_name(e->category));
	log_str(l, " ");
	log_str(l, e->code);
	log_str(l, " ");
	log_command(l, c);
	l->nerrors++;
}

static const struct tag_scanner_ops OPS = { on_text, on_command, on_error };

/* chunk: 0 whole, 1 byte by byte, else random sizes from 1 to chunk. */
static char *scan(const char *in, size_t n, size_t chunk, unsigned seed)
{
	struct log l = { 0 };
	struct tag_scanner *s = tag_scanner_new(&OPS, &l);

	assert_non_null(s);
	srand(seed);
	for (size_t i = 0; i < n;) {
		size_t k = chunk == 0 ? n - i : chunk == 1 ? 1 : 1 + (size_t)rand() % chunk;
		if (k > n - i)
			k = n - i;
		tag_scanner_feed(s, in + i, k);
		i += k;
	}
	tag_scanner_end(s);
	tag_scanner_free(s);
	log_close_text(&l);
	if (!l.p)
		log_str(&l, "");
	return l.p;
}

/* Every way of cutting the input gives `want`. */
static void check_n(const char *in, size_t n, const char *want)
{
	char *whole = scan(in, n, 0, 0);
	if (strcmp(whole, want) != 0)
		fail_msg("input \"%s\"\nwant:\n%sgot:\n%s", in, want, whole);
	char *bytes = scan(in, n, 1, 0);
	assert_string_equal(bytes, whole);
	free(bytes);
	for (unsigned seed = 1; seed <= 20; seed++) {
		char *rnd = scan(in, n, 1 + seed % 9, seed);
		assert_string_equal(rnd, whole);
		free(rnd);
	}
	free(whole);
}

static void check(const char *in, const char *want)
{
	check_n(in, strlen(in), want);
}

/* ───────────────────────── the seed's table (§6.2) ───────────────────────── */

static void test_seed_simple_open(void **state)
{
	(void)state;
	check("<open README.md>", "C open 1@1 [README.md]\n");
}

static void test_seed_open_in_text(void **state)
{
	(void)state;
	check("Please read this: <open main.go> and tell me about it",
	      "T[Please read this: ]\n"
	      "C open 1@1 [main.go]\n"
	      "T[ and tell me about it]\n");
}

static void test_seed_write(void **state)
{
	(void)state;
	check("<write test.txt>Hello, World!</write>",
	      "C write 1@1 [test.txt] {Hello, World!}\n");
}

static void test_seed_multiple(void **state)
{
	(void)state;
	check("<open a.go><open b.go>", "C open 1@1 [a.go]\nC open 2@1 [b.go]\n");
}

static void test_seed_in_comment(void **state)
{
	(void)state;
	/* The scanner parses it; the path policy refuses it. */
	check("// <open secret.key>", "T[// ]\nC open 1@1 [secret.key]\n");
}

/* ───────────────────────── text ───────────────────────── */

static void test_text_only(void **state)
{
	(void)state;
	check("", "");
	check("no commands here\n", "T[no commands here\n]\n");
	check("a < b and c<d, <div>x</div> <", "T[a < b and c<d, <div>x</div> <]\n");
	check("<<open a>", "T[<]\nC open 1@1 [a]\n");
	check("<op", "T[<op]\n");
	check("</write> alone", "T[</write> alone]\n");
}

static void test_not_a_tag(void **state)
{
	(void)state;
	check("<openx> <opens a> <Open a> <execute b>",
	      "T[<openx> <opens a> <Open a> <execute b>]\n");
	check("<open-a>", "T[<open-a>]\n");
}

static void test_text_around(void **state)
{
	(void)state;
	check("before <open a> between <exec ls> after\n",
	      "T[before ]\nC open 1@1 [a]\nT[ between ]\nC exec 2@1 [ls]\nT[ after\n]\n");
}

/* ───────────────────────── each tag ───────────────────────── */

static void test_all_kinds(void **state)
{
	(void)state;
	check("<search  query  terms >\n<grep foo src>\n<tree>\n<tree docs>\n<exec\tmake -j2>",
	      "C search 1@1 [query  terms]\nT[\n]\n"
	      "C grep 2@2 [foo src]\nT[\n]\n"
	      "C tree 3@3 []\nT[\n]\n"
	      "C tree 4@4 [docs]\nT[\n]\n"
	      "C exec 5@5 [make -j2]\n");
}

static void test_white_space_after_name(void **state)
{
	(void)state;
	check("<open\n  a.c>", "C open 1@1 [a.c]\n");
	check("<open a b.txt>", "C open 1@1 [a b.txt]\n");
}

static void test_attack_paths_reach_the_policy(void **state)
{
	(void)state;
	check("<open ../../../etc/passwd><open ..\\..\\x><open ~/.ssh/id_rsa>"
	      "<open file:///etc/passwd>",
	      "C open 1@1 [../../../etc/passwd]\nC open 2@1 [..\\..\\x]\n"
	      "C open 3@1 [~/.ssh/id_rsa]\nC open 4@1 [file:///etc/passwd]\n");
}

static void test_exec_quotes(void **state)
{
	(void)state;
	check("<exec sh -c 'ls 2>/dev/null'>", "C exec 1@1 [sh -c 'ls 2>/dev/null']\n");
	check("<exec echo \"a>b\" \\> c>", "C exec 1@1 [echo \"a>b\" \\> c]\n");
	check("<exec echo \"it's > 1\">", "C exec 1@1 [echo \"it's > 1\"]\n");
	/* An exec may hold '<' and newlines: it is shell. */
	check("<exec cat < in.txt\necho done>", "C exec 1@1 [cat < in.txt\necho done]\n");
	check("<grep 'a>b' src>", "C grep 1@1 ['a>b' src]\n");
}

/* ───────────────────────── write ───────────────────────── */

static void test_write_content(void **state)
{
	(void)state;
	check("<write a.c>if (a < b && c </wri) x = \"</write\";</write>",
	      "C write 1@1 [a.c] {if (a < b && c </wri) x = \"</write\";}\n");
	check("<write a>x<</write>", "C write 1@1 [a] {x<}\n");
	check("<write a><</</w</wr</write>", "C write 1@1 [a] {<</</w</wr}\n");
	check("<write a><open b></write>", "C write 1@1 [a] {<open b>}\n");
	check("<write a></write>", "C write 1@1 [a] {}\n");
	/* One newline after the header is not content; a second is. */
	check("<write a>\nx\n</write>", "C write 1@1 [a] {x\n}\n");
	check("<write a>\n\nx</write>", "C write 1@1 [a] {\nx}\n");
}

static void test_write_lines(void **state)
{
	(void)state;
	check("one\n<write a>\n1\n2\n</write>\n<open a>",
	      "T[one\n]\nC write 1@2 [a] {1\n2\n}\nT[\n]\nC open 2@6 [a]\n");
}

/* ───────────────────────── errors ───────────────────────── */

static void test_missing_argument(void **state)
{
	(void)state;
	check("<open> then <open   > then <open a>",
	      "E SYNTAX MISSING_ARGUMENT open 1@1 []\nT[<open> then ]\n"
	      "E SYNTAX MISSING_ARGUMENT open 2@1 []\nT[<open   > then ]\n"
	      "C open 3@1 [a]\n");
	/* A write without a path: its content is skipped, never scanned. */
	check("<write><exec rm -rf x></write><open b>",
	      "E SYNTAX MISSING_ARGUMENT write 1@1 []\n"
	      "T[<write><exec rm -rf x></write>]\n"
	      "C open 2@1 [b]\n");
}

static void test_unterminated_at_end(void **state)
{
	(void)state;
	check("x <open a", "T[x ]\nE SYNTAX UNTERMINATED open 1@1 [a]\nT[<open a]\n");
	check("<write", "E SYNTAX UNTERMINATED write 1@1 []\nT[<write]\n");
	check("<write a>half</wri",
	      "E SYNTAX UNTERMINATED write 1@1 [a] {half}\nT[<write a>half</wri]\n");
	check("<exec 'echo >", "E SYNTAX UNTERMINATED exec 1@1 ['echo >]\nT[<exec 'echo >]\n");
}

static void test_prose_mentions_a_tag(void **state)
{
	(void)state;
	check("use <open to read.\n<open a.c>",
	      "T[use ]\nE SYNTAX UNTERMINATED open 1@1 [to read.]\nT[<open to read.\n]\n"
	      "C open 2@2 [a.c]\n");
	check("<open a <open b>",
	      "E SYNTAX UNTERMINATED open 1@1 [a]\nT[<open a ]\nC open 2@1 [b]\n");
}

static void test_argument_too_long(void **state)
{
	(void)state;
	size_t n = TAG_MAX_ARGUMENT + 100;
	char *in = malloc(n + 64);
	assert_non_null(in);
	strcpy(in, "<exec ");
	memset(in + 6, 'x', n);
	strcpy(in + 6 + n, "<open y>><open z>");
	char *got = scan(in, strlen(in), 0, 0);
	assert_non_null(strstr(got, "E RESOURCE ARGUMENT_TOO_LONG exec 1@1 [xxx"));
	/* The rest up to '>' is text, not scanned: <open y> is not run. */
	assert_null(strstr(got, "C open 2@1 [y]"));
	assert_non_null(strstr(got, "<open y>>]\nC open 2@1 [z]\n"));
	char *bytes = scan(in, strlen(in), 1, 0);
	assert_string_equal(bytes, got);
	free(bytes);
	free(got);
	free(in);
}

static void test_content_too_large(void **state)
{
	(void)state;
	size_t n = TAG_MAX_CONTENT + 10;
	char *in = malloc(n + 64);
	assert_non_null(in);
	strcpy(in, "<write big>");
	memset(in + 11, 'y', n);
	strcpy(in + 11 + n, "<exec no></write><open z>");
	char *got = scan(in, strlen(in), 0, 0);
	assert_non_null(strstr(got, "E RESOURCE CONTENT_TOO_LARGE write 1@1 [big] {yyy"));
	assert_null(strstr(got, "C exec"));
	assert_non_null(strstr(got, "<exec no></write>]\nC open 2@1 [z]\n"));
	free(got);
	free(in);
}

static void test_nul_and_high_bytes(void **state)
{
	(void)state;
	const char in[] = "\x00\xff<open a\x01\xfe>\x00<open b\x00" "c>";
	/* A NUL in an argument is kept (argument_len counts it): the
	 * interpreter refuses it, not a shorter path. */
	check_n(in, sizeof(in) - 1,
		"T[\\x00\xff]\nC open 1@1 [a\\x01\xfe]\nT[\\x00]\nC open 2@1 [b\\x00c]\n");
}

/* Random bytes over an alphabet rich in '<', '>' and tag letters: any
 * cutting gives the same calls, and text + commands account for input. */
static void test_random_input(void **state)
{
	(void)state;
	static const char alpha[] = "<>/ \n'\"\\openwritexcsahgt";
	char in[400];

	srand(4);
	for (int round = 0; round < 300; round++) {
		size_t n = (size_t)rand() % sizeof(in);
		for (size_t i = 0; i < n; i++)
			in[i] = alpha[(size_t)rand() % (sizeof(alpha) - 1)];
		char *whole = scan(in, n, 0, 0);
		char *bytes = scan(in, n, 1, 0);
		assert_string_equal(bytes, whole);
		char *rnd = scan(in, n, 7, (unsigned)round);
		assert_string_equal(rnd, whole);
		free(whole);
		free(bytes);
		free(rnd);
	}
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(tag_kind_name(TAG_OPEN), "open");
	assert_string_equal(tag_kind_name(TAG_WRITE), "write");
	assert_string_equal(tag_kind_name(TAG_EXEC), "exec");
	assert_string_equal(tag_kind_name(TAG_SEARCH), "search");
	assert_string_equal(tag_kind_name(TAG_GREP), "grep");
	assert_string_equal(tag_kind_name(TAG_TREE), "tree");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_simple_open),
		cmocka_unit_test(test_seed_open_in_text),
		cmocka_unit_test(test_seed_write),
		cmocka_unit_test(test_seed_multiple),
		cmocka_unit_test(test_seed_in_comment),
		cmocka_unit_test(test_text_only),
		cmocka_unit_test(test_not_a_tag),
		cmocka_unit_test(test_text_around),
		cmocka_unit_test(test_all_kinds),
		cmocka_unit_test(test_white_space_after_name),
		cmocka_unit_test(test_attack_paths_reach_the_policy),
		cmocka_unit_test(test_exec_quotes),
		cmocka_unit_test(test_write_content),
		cmocka_unit_test(test_write_lines),
		cmocka_unit_test(test_missing_argument),
		cmocka_unit_test(test_unterminated_at_end),
		cmocka_unit_test(test_prose_mentions_a_tag),
		cmocka_unit_test(test_argument_too_long),
		cmocka_unit_test(test_content_too_large),
		cmocka_unit_test(test_nul_and_high_bytes),
		cmocka_unit_test(test_random_input),
		cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
