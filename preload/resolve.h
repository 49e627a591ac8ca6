/*
 * Which file an exec would run: glibc's PATH search, reproduced so that
 * the hook can decide before calling anything real.
 */
#ifndef TOOLRUN_RESOLVE_H
#define TOOLRUN_RESOLVE_H

#include <limits.h>
#include <stdbool.h>

/* glibc's default search path when PATH is unset (confstr _CS_PATH). */
#define RESOLVE_DEFAULT_PATH "/bin:/usr/bin"

/* An existing regular file that we may execute (by effective ids). */
bool resolve_is_executable(const char *path);

/*
 * The file that execvp(file) would execute, searching `path_list` (the
 * value of PATH, or NULL for the default) as glibc does: an empty element
 * is the current directory; a match that is not an executable regular
 * file is skipped; an error other than "no such file" ends the search.
 * A file containing '/' is used as it is.
 * Writes the candidate to out and returns true when one was found.
 */
bool resolve_program(const char *file, const char *path_list,
		     char out[PATH_MAX]);

#endif
