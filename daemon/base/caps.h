/*
 * Capabilities: the few that let toolrund run each program as its caller.
 *
 * Started as root with `user` set, toolrund keeps CAP_SETUID, CAP_SETGID,
 * CAP_KILL and CAP_CHOWN across the drop to that user. Each process then
 * holds what its part needs:
 *
 *   supervisor  permitted only (never effective): it starts every new
 *               launcher, which must get them from somewhere;
 *   listener    none;
 *   launcher    effective: switch a program to its caller (CAP_SETUID,
 *               CAP_SETGID; also to look at the caller's processes in
 *               /proc as the caller, with setfsuid), end what it started
 *               (CAP_KILL: the programs are the callers' now), and give
 *               each caller its spill directory (CAP_CHOWN);
 *   program     none: cleared after the switch, before anything of the
 *               caller's runs.
 *
 * A daemon that runs as root (no `user`) keeps root's capabilities, as
 * root does; one started as an ordinary user has none and runs every
 * program as itself (single identity).
 *
 * Processes: all three (the supervisor keeps, the launcher uses, the
 * listener clears).
 */
#ifndef TOOLRUN_CAPS_H
#define TOOLRUN_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The capabilities toolrund keeps: bit N for capability N. */
#define CAPS_SWITCH ((1ull << 6 /* CAP_SETGID */) | (1ull << 7 /* CAP_SETUID */))
#define CAPS_KEPT (CAPS_SWITCH | (1ull << 0 /* CAP_CHOWN */) | (1ull << 5 /* CAP_KILL */))

/* Before dropping root: keep the permitted set across setuid(). */
int caps_keep_across_drop(void);

/* After dropping root: permitted = CAPS_KEPT (what root had of it),
 * effective and inheritable empty, and no longer kept across setuid(). */
int caps_after_drop(void);

/* Which of CAPS_KEPT this process does not hold in its permitted set
 * (root in a container started with --cap-drop=ALL holds none). */
uint64_t caps_missing(void);

/* Their names, "CAP_KILL and CAP_CHOWN", in buf. */
const char *caps_names(uint64_t mask, char *buf, size_t size);

/* Can this process (once caps_raise() has run, where needed) run a child
 * as another uid and gid, and end it? True when it holds all of
 * CAPS_KEPT, root included: root without them cannot switch either. */
bool caps_can_switch(void);

/* Make the permitted set effective (the launcher). No-op for root. */
int caps_raise(void);

/* The file system ids (setfsuid, setfsgid): files are then made, and
 * access checked, as uid and gid. Root without CAP_DAC_OVERRIDE (a
 * container's) needs this to write into its user's directory, and the
 * launcher to act on a caller's files and processes; it takes CAP_SETUID
 * and CAP_SETGID, or is a no-op. (uid_t)-1 and (gid_t)-1 leave that id.
 * Returns the ids to go back to.
 *
 * The kernel's rule (capabilities(7)): when the fsuid goes from 0 to
 * another uid, the file capabilities (CAP_CHOWN, CAP_DAC_OVERRIDE,
 * CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, ...) leave the effective
 * set; when it comes back to 0, those of the permitted set return. For
 * root that is what is wanted: acting as a caller, it overrides no
 * access check, and it has them again once it is itself. A process that
 * is not root would lose CAP_CHOWN by acting as uid 0 and coming back to
 * its own uid, and keep it only while it acts as uid 0 again, so that as
 * itself it could give nothing away: for it, the effective set is put
 * back as it was before the switch. */
struct fs_ids {
	uid_t uid;
	gid_t gid;
};
struct fs_ids caps_fs_as(uid_t uid, gid_t gid);

/* Empty every set, root's too (the listener; a program after its
 * switch, when the launcher is not root). */
int caps_clear(void);

#endif
