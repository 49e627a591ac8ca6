/*
 * What the kernel says of a process in /proc/PID/status: its name, ids,
 * capability sets, no_new_privs and seccomp mode. Any uid may read that
 * file (unless /proc is mounted with hidepid), so `toolrun status`
 * reports these from the kernel rather than from toolrund.
 *
 * Errors: a field the file does not show stays unknown, and why says so;
 * nothing is guessed.
 */
#ifndef TOOLRUN_PROCFACTS_H
#define TOOLRUN_PROCFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum seccomp_mode {
	SECCOMP_MODE_UNKNOWN = -1,
	SECCOMP_MODE_OFF = 0,    /* "disabled" */
	SECCOMP_MODE_ONE = 1,    /* "strict" */
	SECCOMP_MODE_FILTERS = 2, /* "filter" */
};

struct proc_facts {
	bool read;            /* the file was read: the fields it shows are set */
	char why[320];        /* not read, or a field missing: why ("" if neither) */
	char name[32];        /* Name: (the comm, e.g. "toolrund-listen") */
	bool has_ids;         /* Uid:, Gid: (real, effective, saved, fs) */
	uid_t uid[4];
	gid_t gid[4];
	bool has_caps;        /* CapEff:, CapPrm:, CapBnd: */
	uint64_t cap_effective, cap_permitted, cap_bounding;
	int no_new_privs;     /* NoNewPrivs: 0 or 1; -1 unknown */
	enum seccomp_mode seccomp;
	int seccomp_filters;  /* Seccomp_filters: (Linux 5.9+); -1 unknown */
};

/* Parse the text of a /proc/PID/status file into f. */
void procfacts_parse(const char *text, struct proc_facts *f);

/* Read /proc/PID/status (proc: the mount, "/proc") into f. */
void procfacts_read(const char *proc, pid_t pid, struct proc_facts *f);

/* "disabled", "strict", "filter" or "unknown". */
const char *procfacts_seccomp_name(enum seccomp_mode m);

/* The name of capability bit (CAP_CHOWN ...), or NULL for one this
 * build does not know (then "CAP_<bit>"). */
const char *procfacts_cap_name(unsigned bit);

#endif
