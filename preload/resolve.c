#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool resolve_is_executable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	return faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
}

/* Is this stat() failure one after which execvp() tries the next entry? */
static bool search_goes_on(int err)
{
	switch (err) {
	case ENOENT:
	case ESTALE:
	case ENOTDIR:
	case ENODEV:
	case ETIMEDOUT:
	case EACCES:
		return true;
	default:
		return false;
	}
}

bool resolve_program(const char *file, const char *path_list,
		     char out[PATH_MAX])
{
	size_t file_len = strlen(file);

	if (file_len == 0 || file_len >= PATH_MAX)
		return false;
	if (strchr(file, '/')) {
		memcpy(out, file, file_len + 1);
		return resolve_is_executable(out);
	}
	if (file_len > NAME_MAX)
		return false;
	if (!path_list)
		path_list = RESOLVE_DEFAULT_PATH;

	for (const char *p = path_list;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dir_len = (size_t)(end - p);

		if (dir_len + 1 + file_len < PATH_MAX) {
			/* An empty element means the current directory. */
			memcpy(out, p, dir_len);
			size_t at = dir_len;
			if (dir_len > 0)
				out[at++] = '/';
			memcpy(out + at, file, file_len + 1);

			struct stat st;
			if (stat(out, &st) == 0) {
				if (S_ISREG(st.st_mode) &&
				    faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) == 0)
					return true;
				/* not executable: execve says EACCES, go on */
			} else if (!search_goes_on(errno)) {
				return false;
			}
		}
		if (*end == '\0')
			return false;
		p = end;
	}
}
