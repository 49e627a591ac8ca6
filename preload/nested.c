#include "nested.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

extern char **environ;

static const char preload_key[] = "LD_PRELOAD=";

/* Find our library among the entries of an LD_PRELOAD value (separated
 * by colons or spaces, as ld.so reads it). */
static const char *find_library(const char *v, size_t *len)
{
	for (const char *p = v; *p;) {
		size_t n = strcspn(p, ": ");
		if (preload_entry_is_toolrun(p, n)) {
			*len = n;
			return p;
		}
		p += n;
		if (*p)
			p++;
	}
	return NULL;
}

/* The value without our entry; NULL if nothing else is left. */
static char *without_library(const char *v, const char *lib, size_t lib_len)
{
	size_t len = strlen(v);
	char *out = malloc(sizeof(preload_key) + len);
	size_t at = sizeof(preload_key) - 1;

	if (!out)
		return NULL;
	memcpy(out, preload_key, at);
	for (const char *p = v; *p;) {
		size_t n = strcspn(p, ": ");
		if (n && !(p == lib && n == lib_len)) {
			if (at > sizeof(preload_key) - 1)
				out[at++] = ':';
			memcpy(out + at, p, n);
			at += n;
		}
		p += n;
		if (*p)
			p++;
	}
	out[at] = '\0';
	if (at == sizeof(preload_key) - 1) {
		free(out);
		return NULL;
	}
	return out;
}

void nested_hide(struct nested *n)
{
	char **e = environ;
	size_t w = 0;

	if (!getenv("TOOLRUN_NESTED"))
		return;
	n->active = true;
	for (size_t r = 0; e[r]; r++) {
		char *v = e[r];
		if (strncmp(v, "TOOLRUN_", 8) == 0 && n->nvars < NESTED_MAX_VARS) {
			n->vars[n->nvars++] = v;
			continue;
		}
		if (strncmp(v, preload_key, sizeof(preload_key) - 1) == 0 && !n->library) {
			const char *value = v + sizeof(preload_key) - 1;
			n->library = find_library(value, &n->library_len);
			if (n->library) {
				char *rest = without_library(value, n->library, n->library_len);
				if (!rest)
					continue; /* nothing but us: no LD_PRELOAD at all */
				v = rest;
			}
		}
		e[w++] = v;
	}
	e[w] = NULL;
}

static size_t name_len(const char *var)
{
	const char *eq = strchr(var, '=');
	return eq ? (size_t)(eq - var) : strlen(var);
}

static bool sets(char *const envp[], const char *var)
{
	size_t n = name_len(var);

	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, var, n) == 0 && (*e)[n] == '=')
			return true;
	return false;
}

size_t nested_space(const struct nested *n, char *const envp[])
{
	size_t count = 0, preload = 0;

	for (char *const *e = envp; e && *e; e++, count++)
		if (strncmp(*e, preload_key, sizeof(preload_key) - 1) == 0)
			preload += strlen(*e);
	return (count + n->nvars + 2) * sizeof(char *) + preload +
	       sizeof(preload_key) + n->library_len + 2;
}

char **nested_envp(const struct nested *n, char *const envp[], void *space)
{
	size_t count = 0, last_preload = (size_t)-1;
	for (; envp && envp[count]; count++)
		if (strncmp(envp[count], preload_key, sizeof(preload_key) - 1) == 0)
			last_preload = count;
	char **out = space;
	char *text = (char *)(out + count + n->nvars + 2);
	size_t k = 0;
	bool have_preload = last_preload != (size_t)-1;

	for (size_t i = 0; i < count; i++) {
		const char *v = envp[i];
		/* ld.so reads the last LD_PRELOAD: that is the one to extend. */
		if (n->library && i == last_preload) {
			/* Ours first, then what the program asked for. */
			const char *value = v + sizeof(preload_key) - 1;
			size_t dummy;
			if (!find_library(value, &dummy)) {
				char *p = text;
				memcpy(p, preload_key, sizeof(preload_key) - 1);
				p += sizeof(preload_key) - 1;
				memcpy(p, n->library, n->library_len);
				p += n->library_len;
				if (*value) {
					*p++ = ':';
					memcpy(p, value, strlen(value));
					p += strlen(value);
				}
				*p++ = '\0';
				out[k++] = text;
				text = p;
				continue;
			}
		}
		out[k++] = (char *)v;
	}
	if (n->library && !have_preload) {
		char *p = text;
		memcpy(p, preload_key, sizeof(preload_key) - 1);
		p += sizeof(preload_key) - 1;
		memcpy(p, n->library, n->library_len);
		p[n->library_len] = '\0';
		out[k++] = text;
	}
	for (unsigned i = 0; i < n->nvars; i++)
		if (!sets(envp, n->vars[i]))
			out[k++] = (char *)n->vars[i];
	out[k] = NULL;
	return out;
}
