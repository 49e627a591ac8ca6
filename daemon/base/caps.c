/*
 * Capabilities (caps.h).
 *
 * Processes: all three (the supervisor keeps, the launcher uses, the
 * listener clears).
 */
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc has no wrapper for these two: the raw system calls, version 3
 * (64 capability bits in two words). */
struct caps {
	uint64_t effective, permitted, inheritable;
};

static int caps_get(struct caps *c)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	c->effective = d[0].effective | (uint64_t)d[1].effective << 32;
	c->permitted = d[0].permitted | (uint64_t)d[1].permitted << 32;
	c->inheritable = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

static int caps_set(const struct caps *c)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {
		{(uint32_t)c->effective, (uint32_t)c->permitted, (uint32_t)c->inheritable},
		{(uint32_t)(c->effective >> 32), (uint32_t)(c->permitted >> 32),
		 (uint32_t)(c->inheritable >> 32)},
	};

	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int caps_keep_across_drop(void)
{
	return prctl(PR_SET_KEEPCAPS, 1) < 0 ? -errno : 0;
}

int caps_after_drop(void)
{
	struct caps c = {0};
	int r = caps_get(&c);

	if (r < 0)
		return r;
	c = (struct caps){.permitted = c.permitted & CAPS_KEPT};
	r = caps_set(&c);
	if (r == 0 && prctl(PR_SET_KEEPCAPS, 0) < 0)
		r = -errno;
	return r;
}

uint64_t caps_missing(void)
{
	struct caps c = {0};

	if (caps_get(&c) < 0)
		return CAPS_KEPT;
	return CAPS_KEPT & ~c.permitted;
}

const char *caps_names(uint64_t mask, char *buf, size_t size)
{
	static const struct { unsigned bit; const char *name; } known[] = {
		{7, "CAP_SETUID"}, {6, "CAP_SETGID"}, {5, "CAP_KILL"}, {0, "CAP_CHOWN"},
	};
	unsigned total = 0, done = 0;
	size_t len = 0;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		total += (mask >> known[i].bit) & 1;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]) && len < size; i++) {
		if (!((mask >> known[i].bit) & 1))
			continue;
		done++;
		const char *sep = done == 1 ? "" : done == total ? " and " : ", ";
		int n = snprintf(buf + len, size - len, "%s%s", sep, known[i].name);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	return buf;
}

bool caps_can_switch(void)
{
	return caps_missing() == 0;
}

int caps_raise(void)
{
	struct caps c = {0};
	int r = caps_get(&c);

	if (r < 0 || geteuid() == 0)
		return r;
	c.effective = c.permitted;
	return caps_set(&c);
}

struct fs_ids caps_fs_as(uid_t uid, gid_t gid)
{
	struct caps before = {0}, after = {0};
	/* Root's file capabilities follow its fsuid (caps.h); anyone
	 * else's stay as they were. */
	bool keep = geteuid() != 0 && caps_get(&before) == 0;
	struct fs_ids was = {(uid_t)setfsuid(uid), (gid_t)setfsgid(gid)};

	if (keep && caps_get(&after) == 0 && after.effective != before.effective)
		caps_set(&before);
	return was;
}

int caps_clear(void)
{
	struct caps c = {0};

	return caps_set(&c);
}
