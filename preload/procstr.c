#include "procstr.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

static void *map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The whole file, in a mapping that grows by doubling. */
static char *read_all(int fd, size_t *len)
{
	size_t cap = 64 * 1024;
	char *text = map(cap);

	*len = 0;
	while (text) {
		if (*len == cap) {
			char *t = map(cap * 2);
			if (t)
				memcpy(t, text, *len);
			munmap(text, cap);
			text = t;
			cap *= 2;
			continue;
		}
		ssize_t n = RETRY_EINTR(read(fd, text + *len, cap - *len));
		if (n < 0) {
			munmap(text, cap);
			return NULL;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return text;
}

char **procstr_self(const char *name)
{
	char path[64] = "/proc/self/";
	size_t len;

	if (strlen(name) >= sizeof(path) - strlen(path))
		return NULL;
	strcat(path, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *text = read_all(fd, &len);
	close(fd);
	if (!text || len == 0)
		return NULL;
	size_t count = 0;
	for (size_t i = 0; i < len; i++)
		count += text[i] == '\0';
	if (text[len - 1] != '\0')
		count++; /* a last string without its NUL: the mapping is zeroed past it */
	char **v = map((count + 1) * sizeof(char *));
	if (!v)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < len; i += strlen(text + i) + 1)
		v[k++] = text + i;
	v[k] = NULL;
	return v;
}
