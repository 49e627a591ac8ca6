/*
 * <grep> and <tree> of toolrun tags: walks under a directory the path
 * policy let through, without following symbolic links and skipping
 * directories named .git.
 */
#ifndef TOOLRUN_FRONT_TAGSWALK_H
#define TOOLRUN_FRONT_TAGSWALK_H

#include <json-c/json.h>

#include "front.h"
#include "path.h"

#define GREP_MAX_MATCHES 200
#define GREP_MAX_LINE 300 /* bytes of a matching line shown */
#define GREP_MAX_DEPTH 32
#define TREE_MAX_DEPTH 3
#define TREE_MAX_ENTRIES 1000

/* argument: PATTERN [PATH], PATTERN a POSIX extended regular expression,
 * quoted with '...' or "..." when it holds white space. The result:
 * {"path", "matches": [{"path", "line", "text"}], "files_searched",
 * "truncated"}. */
int tags_grep(const struct path_policy *p, const char *argument, struct json_object **result,
	      struct front_error *e);

/* argument: PATH or "" for the root. The result: {"path", "entries":
 * ["dir/", "dir/file", ...], "empty", "truncated"}, sorted,
 * depth-capped; "empty" is true for a directory with no entry (.git
 * aside). */
int tags_tree(const struct path_policy *p, const char *argument, struct json_object **result,
	      struct front_error *e);

#endif
