/*
 * /proc/PID/status, read (procfacts.h).
 */
#include "procfacts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* linux/capability.h, in bit order: CAP_LAST_CAP of Linux 6.x is 40. */
static const char *const cap_names[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

const char *procfacts_cap_name(unsigned bit)
{
	return bit < ARRAY_SIZE(cap_names) ? cap_names[bit] : NULL;
}

const char *procfacts_seccomp_name(enum seccomp_mode m)
{
	switch (m) {
	case SECCOMP_MODE_OFF: return "disabled";
	case SECCOMP_MODE_ONE: return "strict";
	case SECCOMP_MODE_FILTERS: return "filter";
	case SECCOMP_MODE_UNKNOWN:
	default: return "unknown";
	}
}

/* The value of "Key:\t..." in text, or NULL. */
static const char *field(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *line = text; line && *line;) {
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			return line + n + 1 + strspn(line + n + 1, " \t");
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return NULL;
}

static bool parse_hex(const char *v, uint64_t *out)
{
	char *end;

	if (!v)
		return false;
	errno = 0;
	*out = strtoull(v, &end, 16);
	return errno == 0 && end != v && (*end == '\n' || *end == '\0');
}

/* "Uid:\t1000\t1000\t1000\t1000" */
static bool parse_ids(const char *v, unsigned out[4])
{
	char *end;

	for (int i = 0; i < 4; i++) {
		if (!v)
			return false;
		/* Each on this line: strtoul would skip a newline too. */
		v += strspn(v, " \t");
		if (*v < '0' || *v > '9')
			return false;
		errno = 0;
		unsigned long n = strtoul(v, &end, 10);
		if (errno || end == v || n > UINT32_MAX)
			return false;
		out[i] = (unsigned)n;
		v = end;
	}
	return true;
}

/* A small number, alone on its line: 0 ... max; -1 if not. */
static int parse_small(const char *v, int max)
{
	char *end;

	if (!v)
		return -1;
	long n = strtol(v, &end, 10);
	return end != v && (*end == '\n' || *end == '\0') && n >= 0 && n <= max ? (int)n : -1;
}

static void missing(struct proc_facts *f, const char *what)
{
	size_t len = strlen(f->why);

	snprintf(f->why + len, sizeof(f->why) - len, "%s%s", len ? ", " : "/proc shows no ",
		 what);
}

void procfacts_parse(const char *text, struct proc_facts *f)
{
	unsigned uid[4], gid[4];
	const char *name = field(text, "Name");

	*f = (struct proc_facts){.read = true, .no_new_privs = -1,
				 .seccomp = SECCOMP_MODE_UNKNOWN, .seccomp_filters = -1};
	if (name)
		snprintf(f->name, sizeof(f->name), "%.*s", (int)strcspn(name, "\n"), name);
	f->has_ids = parse_ids(field(text, "Uid"), uid) && parse_ids(field(text, "Gid"), gid);
	for (int i = 0; f->has_ids && i < 4; i++) {
		f->uid[i] = (uid_t)uid[i];
		f->gid[i] = (gid_t)gid[i];
	}
	f->has_caps = parse_hex(field(text, "CapEff"), &f->cap_effective) &&
		      parse_hex(field(text, "CapPrm"), &f->cap_permitted) &&
		      parse_hex(field(text, "CapBnd"), &f->cap_bounding);
	f->no_new_privs = parse_small(field(text, "NoNewPrivs"), 1);
	int mode = parse_small(field(text, "Seccomp"), 2);
	f->seccomp = mode < 0 ? SECCOMP_MODE_UNKNOWN : (enum seccomp_mode)mode;
	f->seccomp_filters = parse_small(field(text, "Seccomp_filters"), 1 << 20);
	if (!f->has_ids)
		missing(f, "Uid/Gid");
	if (!f->has_caps)
		missing(f, "CapEff/CapPrm/CapBnd");
	if (f->no_new_privs < 0)
		missing(f, "NoNewPrivs");
	if (f->seccomp == SECCOMP_MODE_UNKNOWN)
		missing(f, "Seccomp");
}

void procfacts_read(const char *proc, pid_t pid, struct proc_facts *f)
{
	char path[64], text[8192];
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/%d/status", proc, (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		*f = (struct proc_facts){.no_new_privs = -1, .seccomp = SECCOMP_MODE_UNKNOWN,
					 .seccomp_filters = -1};
		snprintf(f->why, sizeof(f->why), "%s: %s", path, errno_text(err));
		return;
	}
	for (;;) {
		ssize_t n = read(fd, text + len, sizeof(text) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (len += (size_t)n) == sizeof(text) - 1)
			break;
	}
	close(fd);
	text[len] = '\0';
	procfacts_parse(text, f);
}
