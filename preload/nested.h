/*
 * Interception below a program that toolrund runs.
 *
 * toolrund runs a listed program with the library still in LD_PRELOAD and
 * TOOLRUN_NESTED=1 added, so that the listed tools the program starts in
 * turn (find -exec cat, make's recipes, xargs) go through the daemon too.
 * The program itself must see exactly its envp less toolrun's variables:
 * the constructor takes them out of environ (nested_hide), and the hooks
 * put them back into the environment of whatever the program executes
 * (nested_envp), where the next constructor hides them again.
 */
#ifndef TOOLRUN_NESTED_H
#define TOOLRUN_NESTED_H

#include <stdbool.h>
#include <stddef.h>

/* Variables hidden at most; more TOOLRUN_* ones are left visible. */
#define NESTED_MAX_VARS 16

struct nested {
	bool active;
	/* The hidden TOOLRUN_* entries, as the process started with them. */
	const char *vars[NESTED_MAX_VARS];
	unsigned nvars;
	/* Our LD_PRELOAD entry (a path), inside the original string. */
	const char *library;
	size_t library_len;
};

/* In the constructor: if TOOLRUN_NESTED is set, hide toolrun's variables
 * from environ and remember them. */
void nested_hide(struct nested *n);

/* Bytes nested_envp() needs for envp. */
size_t nested_space(const struct nested *n, char *const envp[]);

/* envp for a child: envp with the hidden variables back (unless envp
 * sets them itself) and our library first in LD_PRELOAD. Built in space,
 * which the caller provides (on its stack: this runs in vfork children). */
char **nested_envp(const struct nested *n, char *const envp[], void *space);

#endif
