#include "cfgcache.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sbuf.h"
#include "util.h"

/* A published config, with what identified its file when it was read. */
struct cached {
	struct config cfg;
	bool valid;
	bool exists;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	int64_t checked_ms; /* CLOCK_MONOTONIC of the last staleness check */
};

const char *cfgcache_file(char *const envp[], const char *inherited)
{
	static const char key[] = "TOOLRUN_CONFIG=";

	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, key, sizeof(key) - 1) == 0 && (*e)[sizeof(key) - 1])
			return *e + sizeof(key) - 1;
	return inherited && inherited[0] ? inherited : config_default_path;
}

static void note_identity(struct cached *c, const char *file)
{
	struct stat st;

	c->exists = stat(file, &st) == 0;
	if (c->exists) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
		c->mtime = st.st_mtim;
		c->size = st.st_size;
	}
	c->checked_ms = monotonic_ms();
}

static bool same_identity(const struct cached *c, const char *file)
{
	struct stat st;
	bool exists = stat(file, &st) == 0;

	if (exists != c->exists)
		return false;
	return !exists ||
	       (st.st_dev == c->dev && st.st_ino == c->ino &&
		st.st_size == c->size && st.st_mtim.tv_sec == c->mtime.tv_sec &&
		st.st_mtim.tv_nsec == c->mtime.tv_nsec);
}

static void warn_once(struct cfgcache *cc, const struct cached *c)
{
	if (__atomic_exchange_n(&cc->warned, true, __ATOMIC_RELAXED))
		return;
	char msg[CONFIG_ERROR_MAX + 64];
	struct sbuf sb = SBUF_INIT(msg);
	sbuf_add(&sb, "toolrun: ");
	sbuf_add(&sb, c->cfg.error);
	sbuf_add(&sb, "; intercepting nothing\n");
	(void)write_all(STDERR_FILENO, msg, sb.len);
}

/* Parse file into a fresh mapping and make it the process's config. */
static struct cached *load_and_publish(struct cfgcache *cc, const char *file,
				       struct cached *old)
{
	struct cached *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *scratch = mmap(NULL, CONFIG_MAX_FILE + 1, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED || scratch == MAP_FAILED) {
		if (c != MAP_FAILED)
			munmap(c, sizeof(*c));
		if (scratch != MAP_FAILED)
			munmap(scratch, CONFIG_MAX_FILE + 1);
		return NULL;
	}
	note_identity(c, file);
	c->valid = config_load(&c->cfg, file, scratch) == 0;
	munmap(scratch, CONFIG_MAX_FILE + 1);

	/* Another thread may have published meanwhile: keep the winner. The
	 * loser's mapping was never shared and can go; a replaced one may
	 * still be read by another thread and is left alone. */
	struct config *expected = old ? &old->cfg : NULL;
	if (!__atomic_compare_exchange_n(&cc->config, &expected, &c->cfg,
					 false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(c, sizeof(*c));
		return (struct cached *)expected;
	}
	if (!c->valid)
		warn_once(cc, c);
	return c;
}

static struct cached *current(struct cfgcache *cc)
{
	return (struct cached *)__atomic_load_n(&cc->config, __ATOMIC_ACQUIRE);
}

struct config *cfgcache_get(struct cfgcache *cc, const char *file)
{
	struct cached *c = current(cc);

	if (!c || strcmp(c->cfg.file, file) != 0)
		c = load_and_publish(cc, file, c);
	return c && c->valid ? &c->cfg : NULL;
}

void cfgcache_refresh(struct cfgcache *cc, const char *file)
{
	struct cached *c = current(cc);

	if (c && strcmp(c->cfg.file, file) == 0) {
		if (monotonic_ms() - c->checked_ms < 1000)
			return;
		if (same_identity(c, file)) {
			c->checked_ms = monotonic_ms();
			return;
		}
		/* The file changed: a new config may be warned about again. */
		__atomic_store_n(&cc->warned, false, __ATOMIC_RELAXED);
	}
	load_and_publish(cc, file, c);
}
