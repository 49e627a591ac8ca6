/*
 * The scanner of `toolrun tags`: a state machine fed a model's text as it
 * streams, byte by byte or in any chunks, that finds the commands in it
 * (seed 004, §2.2 and §2.3):
 *
 *   <open PATH>   <write PATH>CONTENT</write>   <exec COMMAND>
 *   <search QUERY>   <grep PATTERN [PATH]>   <tree [PATH]>
 *
 * A command is delivered as soon as its closing '>' (or "</write>")
 * arrives, never later: the interpreter runs it on a live stream. Text
 * outside commands is delivered as text, including a '<' that does not
 * begin a known tag, unchanged and in order. One code path serves every
 * way of feeding it.
 */
#ifndef TOOLRUN_FRONT_TAGSCAN_H
#define TOOLRUN_FRONT_TAGSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "front.h"

enum tag_kind {
	TAG_OPEN,
	TAG_WRITE,
	TAG_EXEC,
	TAG_SEARCH,
	TAG_GREP,
	TAG_TREE,
};

/* "open", "write", ... */
const char *tag_kind_name(enum tag_kind k);

struct tag_command {
	enum tag_kind kind;
	const char *argument; /* NUL-terminated; the text after the tag's name
			       * and its white space, up to '>', without the
			       * white space before '>' */
	size_t argument_len;
	const char *content;  /* write: the bytes between '>' and "</write>",
			       * less one newline right after '>' (as HTML's
			       * <pre>), NUL-terminated; else NULL */
	size_t content_len;
	uint64_t line;        /* the line of the input where the command began */
	uint64_t index;       /* 1 for the first command of the input, ... */
};

struct tag_scanner_ops {
	void (*text)(void *arg, const char *p, size_t n);
	void (*command)(void *arg, const struct tag_command *c);
	/* A malformed command (FRONT_SYNTAX, or FRONT_RESOURCE past a limit):
	 * c holds what was read of it (kind, line, index, the argument so far
	 * and for write the content so far). Its text is then passed to
	 * text(), and scanning goes on after it. A malformed command takes
	 * an index as a command does: the interpreter's answers are numbered
	 * in the order of the input. */
	void (*error)(void *arg, const struct tag_command *c, const struct front_error *e);
};

/* Limits: an argument longer than TAG_MAX_ARGUMENT or write content
 * longer than TAG_MAX_CONTENT is a RESOURCE error for that command
 * ("ARGUMENT_TOO_LONG", "CONTENT_TOO_LARGE"); the rest of it, up to its
 * '>' or "</write>", is passed to text() and never scanned for commands. */
#define TAG_MAX_ARGUMENT (64 * 1024)
#define TAG_MAX_CONTENT (16 * 1024 * 1024)

struct tag_scanner;

/* NULL when out of memory. */
struct tag_scanner *tag_scanner_new(const struct tag_scanner_ops *ops, void *arg);
void tag_scanner_feed(struct tag_scanner *s, const char *p, size_t n);
/* End of input: a command still open is a SYNTAX error ("UNTERMINATED"),
 * a complete tag name with nothing after it ("<write") included. */
void tag_scanner_end(struct tag_scanner *s);
void tag_scanner_free(struct tag_scanner *s);

#endif
