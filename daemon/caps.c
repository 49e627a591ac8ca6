#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
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

bool caps_can_switch(void)
{
	struct caps c = {0};

	if (geteuid() == 0)
		return true;
	return caps_get(&c) == 0 && (c.permitted & CAPS_SWITCH) == CAPS_SWITCH;
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

int caps_clear(void)
{
	struct caps c = {0};

	return caps_set(&c);
}
