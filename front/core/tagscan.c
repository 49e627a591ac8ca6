/*
 * The scanner of `toolrun tags` (tagscan.h): one byte at a time, whatever
 * the chunks, so that a stream fed byte by byte and the same stream fed
 * whole give the same calls, and a command is delivered on the byte that
 * closes it.
 *
 * States (seed 004, §2.2):
 *   SCANNING     text; '<' goes to TAG_OPEN
 *   TAG_OPEN     "<" and a prefix of a tag's name; a byte that no name
 *                continues gives the bytes back as text
 *   OPEN, WRITE, EXEC, SEARCH, GREP, TREE
 *                the white space, then the argument up to '>'
 *   WRITE_BODY   the content up to "</write>"
 *   SKIP_ARG, SKIP_BODY
 *                the rest of a command past a limit, passed as text up to
 *                its '>' or "</write>", never scanned for commands
 *
 * Choices the seed leaves open (docs/tags.md):
 *   - an argument is any bytes but '>', trimmed; the path policy, not the
 *     scanner, judges a path, so that "~/x" or "..\\x" get its refusal;
 *   - in EXEC and GREP, quotes ('...' and "...") and a backslash keep a
 *     '>' in the argument: <exec sh -c 'ls 2>/dev/null'>;
 *   - in every argument but EXEC's, a '<' or a newline outside quotes
 *     ends it as a SYNTAX error, and a '<' is scanned again: prose that
 *     mentions "<open" does not swallow the command after it;
 *   - one newline right after <write PATH> is not content.
 */
#include "tagscan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum scan_state {
	ST_SCANNING,
	ST_TAG_OPEN,
	ST_OPEN,
	ST_WRITE,
	ST_WRITE_BODY,
	ST_EXEC,
	ST_SEARCH,
	ST_GREP,
	ST_TREE,
	ST_SKIP_ARG,
	ST_SKIP_BODY,
};

static const char WRITE_CLOSE[] = "</write>";
#define WRITE_CLOSE_LEN (sizeof(WRITE_CLOSE) - 1)

/* A growing byte buffer, NUL-terminated. */

struct tag_scanner {
	const struct tag_scanner_ops *ops;
	void *arg;
	enum scan_state state;
	enum tag_kind kind;
	uint64_t line;     /* of the byte being read */
	uint64_t cmd_line; /* where the command being read began */
	uint64_t ncommands;
	struct front_buf raw;     /* the command's text from '<' up to '>' */
	size_t arg_start;     /* in raw; 0 while still in the white space */
	char quote;           /* EXEC, GREP: the open quote, or 0 */
	bool escaped;         /* EXEC, GREP: after a backslash */
	bool body_started;    /* WRITE_BODY: a byte has been seen */
	struct front_buf content; /* WRITE_BODY */
	size_t close_matched; /* bytes of "</write>" matched, not yet content */
	bool skip_body_next;  /* SKIP_ARG: a write's header, its body next */
	char text[4096];      /* text not yet passed to ops->text */
	size_t text_len;
};

static const struct {
	const char *name;
	enum tag_kind kind;
	enum scan_state state;
} TAGS[] = {
	{ "open", TAG_OPEN, ST_OPEN },       { "write", TAG_WRITE, ST_WRITE },
	{ "exec", TAG_EXEC, ST_EXEC },       { "search", TAG_SEARCH, ST_SEARCH },
	{ "grep", TAG_GREP, ST_GREP },       { "tree", TAG_TREE, ST_TREE },
};
#define NTAGS (sizeof(TAGS) / sizeof(TAGS[0]))

const char *tag_kind_name(enum tag_kind k)
{
	for (size_t i = 0; i < NTAGS; i++)
		if (TAGS[i].kind == k)
			return TAGS[i].name;
	return "unknown";
}


/* ───────────────────────── text ───────────────────────── */

static void flush_text(struct tag_scanner *s)
{
	if (s->text_len && s->ops->text)
		s->ops->text(s->arg, s->text, s->text_len);
	s->text_len = 0;
}

static void put_text(struct tag_scanner *s, const char *p, size_t n)
{
	while (n > 0) {
		if (s->text_len == sizeof(s->text))
			flush_text(s);
		size_t k = sizeof(s->text) - s->text_len;
		if (k > n)
			k = n;
		memcpy(s->text + s->text_len, p, k);
		s->text_len += k;
		p += k;
		n -= k;
	}
}

/* ───────────────────────── commands ───────────────────────── */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool takes_quotes(enum tag_kind k)
{
	return k == TAG_EXEC || k == TAG_GREP;
}

/* The argument, trimmed, as its own NUL-terminated bytes at the end of
 * raw (raw keeps the command's text for a malformed one). */
static void command_of(struct tag_scanner *s, struct tag_command *c, size_t arg_end)
{
	size_t start = s->arg_start ? s->arg_start : arg_end;

	while (arg_end > start && is_space(s->raw.p[arg_end - 1]))
		arg_end--;
	memset(c, 0, sizeof(*c));
	c->kind = s->kind;
	c->line = s->cmd_line;
	c->index = s->ncommands;
	c->argument = "";
	if (arg_end > start && s->raw.len + (arg_end - start) + 2 <= s->raw.cap) {
		/* room was reserved by the caller: see argument_room() */
		char *dst = s->raw.p + s->raw.len + 1;
		memcpy(dst, s->raw.p + start, arg_end - start);
		dst[arg_end - start] = '\0';
		c->argument = dst;
		c->argument_len = arg_end - start;
	}
}

/* Room after raw for a copy of the argument; false when out of memory. */
static bool argument_room(struct tag_scanner *s)
{
	size_t need = 2 * s->raw.len + 2;

	if (need <= s->raw.cap)
		return true;
	char *grown = realloc(s->raw.p, need);
	if (!grown)
		return false;
	s->raw.p = grown;
	s->raw.cap = need;
	return true;
}


static void reset_command(struct tag_scanner *s)
{
	front_buf_clear(&s->raw);
	front_buf_clear(&s->content);
	s->arg_start = 0;
	s->quote = 0;
	s->escaped = false;
	s->body_started = false;
	s->close_matched = 0;
	s->skip_body_next = false;
	s->state = ST_SCANNING;
}

/* A malformed command: the error, then its text, then `next`. */
static void fail_command(struct tag_scanner *s, enum front_category cat, const char *code,
			 const char *why, enum scan_state next)
{
	struct tag_command c;
	struct front_error e;

	flush_text(s);
	if (!argument_room(s))
		s->arg_start = 0; /* an empty argument rather than none */
	bool body = s->state == ST_WRITE_BODY;
	/* In WRITE_BODY, raw ends with the header's '>'. */
	command_of(s, &c, body ? s->raw.len - 1 : s->raw.len);
	if (body) {
		c.content = s->content.p ? s->content.p : "";
		c.content_len = s->content.len;
	}
	front_fail(&e, cat, code, "<%s> at line %llu: %s", tag_kind_name(s->kind),
		   (unsigned long long)s->cmd_line, why);
	if (s->ops->error)
		s->ops->error(s->arg, &c, &e);
	put_text(s, s->raw.p, s->raw.len);
	if (s->content.len)
		put_text(s, s->content.p, s->content.len);
	put_text(s, WRITE_CLOSE, s->close_matched);
	/* The header's '>' read already (MISSING_ARGUMENT, or the body's
	 * limit) or still to come (ARGUMENT_TOO_LONG). */
	bool header_read = body || (s->raw.len && s->raw.p[s->raw.len - 1] == '>');
	reset_command(s);
	s->state = next;
	if (next == ST_SKIP_BODY && !header_read) {
		s->state = ST_SKIP_ARG;
		s->skip_body_next = true;
	}
}

static void deliver(struct tag_scanner *s, size_t arg_end)
{
	struct tag_command c;

	flush_text(s);
	if (!argument_room(s)) {
		fail_command(s, FRONT_INTERNAL, "NO_MEMORY", "out of memory", ST_SCANNING);
		return;
	}
	command_of(s, &c, arg_end);
	if (s->kind == TAG_WRITE) {
		c.content = s->content.p ? s->content.p : "";
		c.content_len = s->content.len;
	}
	if (s->ops->command)
		s->ops->command(s->arg, &c);
	reset_command(s);
}

/* ───────────────────────── states ───────────────────────── */

static void scan_byte(struct tag_scanner *s, char b);

/* TAG_OPEN: raw holds "<" and a prefix of one name or more. */
static void tag_open_byte(struct tag_scanner *s, char b)
{
	const char *name = s->raw.p + 1;
	size_t n = s->raw.len - 1;

	for (size_t i = 0; i < NTAGS; i++) {
		if (strlen(TAGS[i].name) != n || memcmp(TAGS[i].name, name, n) != 0)
			continue;
		/* A whole name: white space or '>' makes it a tag. */
		if (is_space(b) || b == '>') {
			s->kind = TAGS[i].kind;
			s->state = TAGS[i].state;
			s->cmd_line = s->line;
			s->ncommands++;
			scan_byte(s, b);
			return;
		}
	}
	for (size_t i = 0; i < NTAGS; i++) {
		if (strlen(TAGS[i].name) > n && memcmp(TAGS[i].name, name, n) == 0 &&
		    TAGS[i].name[n] == b) {
			front_buf_add(&s->raw, &b, 1); /* at most 7 bytes: reserved */
			return;
		}
	}
	/* Not a tag ("<div>", "a < b", "<openx>"): text, and b is read
	 * again, as it may be a '<' itself. */
	put_text(s, s->raw.p, s->raw.len);
	s->raw.len = 0;
	s->state = ST_SCANNING;
	scan_byte(s, b);
}

/* Whether b closes the argument, keeping track of quotes. */
static bool closes_argument(struct tag_scanner *s, char b)
{
	if (!takes_quotes(s->kind))
		return b == '>';
	if (s->escaped) {
		s->escaped = false;
		return false;
	}
	if (s->quote) {
		if (b == s->quote)
			s->quote = 0;
		else if (b == '\\' && s->quote == '"')
			s->escaped = true;
		return false;
	}
	if (b == '\'' || b == '"')
		s->quote = b;
	else if (b == '\\')
		s->escaped = true;
	return b == '>';
}

static void argument_end(struct tag_scanner *s)
{
	size_t arg_end = s->raw.len - 1; /* before '>' */
	size_t start = s->arg_start ? s->arg_start : arg_end;
	bool empty = true;

	for (size_t i = start; i < arg_end; i++)
		if (!is_space(s->raw.p[i]))
			empty = false;
	if (empty && s->kind != TAG_TREE) {
		/* "<write>" is followed by content all the same: skipped. */
		fail_command(s, FRONT_SYNTAX, "MISSING_ARGUMENT", "no argument",
			     s->kind == TAG_WRITE ? ST_SKIP_BODY : ST_SCANNING);
		return;
	}
	if (s->kind == TAG_WRITE) {
		/* The path is kept in raw until "</write>". */
		s->state = ST_WRITE_BODY;
		s->raw.len = arg_end + 1;
		return;
	}
	deliver(s, arg_end);
}

/* OPEN, WRITE, EXEC, SEARCH, GREP, TREE: white space, argument, '>'. */
static void argument_byte(struct tag_scanner *s, char b)
{
	bool in_ws = s->arg_start == 0;

	/* A write's content is data: skipped with its header. */
	enum scan_state skip = s->kind == TAG_WRITE ? ST_SKIP_BODY : ST_SKIP_ARG;

	if (!in_ws && s->kind != TAG_EXEC && !s->quote && (b == '<' || b == '\n')) {
		fail_command(s, FRONT_SYNTAX, "UNTERMINATED",
			     b == '<' ? "'<' before its '>'" : "a newline before its '>'",
			     ST_SCANNING);
		scan_byte(s, b);
		return;
	}
	if (s->raw.len >= TAG_MAX_ARGUMENT) {
		fail_command(s, FRONT_RESOURCE, "ARGUMENT_TOO_LONG",
			     "argument longer than 64 KiB", skip);
		scan_byte(s, b);
		return;
	}
	if (front_buf_add(&s->raw, &b, 1) < 0) {
		fail_command(s, FRONT_INTERNAL, "NO_MEMORY", "out of memory", skip);
		scan_byte(s, b);
		return;
	}
	if (in_ws && !is_space(b) && b != '>')
		s->arg_start = s->raw.len - 1;
	if (closes_argument(s, b))
		argument_end(s);
}

/* WRITE_BODY: content, and "</write>" matched across any chunks. */
static void body_byte(struct tag_scanner *s, char b)
{
	if (!s->body_started) {
		s->body_started = true;
		if (b == '\n')
			return;
	}
	if (b == WRITE_CLOSE[s->close_matched]) {
		if (++s->close_matched == WRITE_CLOSE_LEN)
			deliver(s, s->raw.len - 1);
		return;
	}
	if (s->content.len + s->close_matched + 1 > TAG_MAX_CONTENT) {
		fail_command(s, FRONT_RESOURCE, "CONTENT_TOO_LARGE",
			     "content larger than 16 MiB", ST_SKIP_BODY);
		scan_byte(s, b);
		return;
	}
	/* What looked like "</write>" was content. "</write>" repeats no
	 * prefix of itself but "<", so b may only begin a new match. */
	if (front_buf_add(&s->content, WRITE_CLOSE, s->close_matched) < 0 ||
	    (b != '<' && front_buf_add(&s->content, &b, 1) < 0)) {
		fail_command(s, FRONT_INTERNAL, "NO_MEMORY", "out of memory", ST_SKIP_BODY);
		scan_byte(s, b);
		return;
	}
	s->close_matched = b == '<' ? 1 : 0;
}

/* SKIP_BODY: text up to "</write>"; close_matched counts its bytes. */
static void skip_body_byte(struct tag_scanner *s, char b)
{
	put_text(s, &b, 1);
	if (b == WRITE_CLOSE[s->close_matched])
		s->close_matched++;
	else
		s->close_matched = b == '<' ? 1 : 0;
	if (s->close_matched == WRITE_CLOSE_LEN)
		reset_command(s);
}

static void scan_byte(struct tag_scanner *s, char b)
{
	switch (s->state) {
	case ST_SCANNING:
		if (b == '<') {
			s->raw.len = 0;
			front_buf_add(&s->raw, &b, 1); /* reserved: see tag_scanner_new */
			s->state = ST_TAG_OPEN;
		} else {
			put_text(s, &b, 1);
		}
		break;
	case ST_TAG_OPEN:
		tag_open_byte(s, b);
		break;
	case ST_WRITE_BODY:
		body_byte(s, b);
		break;
	case ST_SKIP_ARG:
		put_text(s, &b, 1);
		if (b == '>') {
			bool body = s->skip_body_next;
			reset_command(s);
			if (body)
				s->state = ST_SKIP_BODY;
		}
		break;
	case ST_SKIP_BODY:
		skip_body_byte(s, b);
		break;
	default:
		argument_byte(s, b);
		break;
	}
}

/* ───────────────────────── API ───────────────────────── */

struct tag_scanner *tag_scanner_new(const struct tag_scanner_ops *ops, void *arg)
{
	struct tag_scanner *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ops = ops;
	s->arg = arg;
	s->line = 1;
	/* TAG_OPEN adds to raw without checking: room for "<search" and
	 * its copy, whatever happens. */
	s->raw.p = malloc(64);
	if (!s->raw.p) {
		free(s);
		return NULL;
	}
	s->raw.cap = 64;
	s->raw.p[0] = '\0';
	return s;
}

void tag_scanner_feed(struct tag_scanner *s, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		scan_byte(s, p[i]);
		/* After the byte: a command starting on a newline's byte is
		 * on that newline's line, as an editor shows it. */
		if (p[i] == '\n')
			s->line++;
	}
	flush_text(s);
}

void tag_scanner_end(struct tag_scanner *s)
{
	switch (s->state) {
	case ST_SCANNING:
	case ST_SKIP_ARG:
	case ST_SKIP_BODY:
		break;
	case ST_TAG_OPEN:
		/* "<wri" at the end is text; "<write" is a command cut short. */
		for (size_t i = 0; i < NTAGS; i++) {
			if (s->raw.len - 1 == strlen(TAGS[i].name) &&
			    memcmp(TAGS[i].name, s->raw.p + 1, s->raw.len - 1) == 0) {
				s->kind = TAGS[i].kind;
				s->cmd_line = s->line;
				s->ncommands++;
				fail_command(s, FRONT_SYNTAX, "UNTERMINATED",
					     "the input ends inside it", ST_SCANNING);
				break;
			}
		}
		put_text(s, s->raw.p, s->raw.len);
		s->raw.len = 0;
		break;
	default:
		fail_command(s, FRONT_SYNTAX, "UNTERMINATED", "the input ends inside it",
			     ST_SCANNING);
		break;
	}
	reset_command(s);
	flush_text(s);
}

void tag_scanner_free(struct tag_scanner *s)
{
	if (!s)
		return;
	free(s->raw.p);
	free(s->content.p);
	free(s);
}
