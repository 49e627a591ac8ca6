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
 */
#ifndef TOOLRUN_CAPS_H
#define TOOLRUN_CAPS_H

#include <stdbool.h>

/* The capabilities toolrund keeps: bit N for capability N. */
#define CAPS_SWITCH ((1ull << 6 /* CAP_SETGID */) | (1ull << 7 /* CAP_SETUID */))
#define CAPS_KEPT (CAPS_SWITCH | (1ull << 0 /* CAP_CHOWN */) | (1ull << 5 /* CAP_KILL */))

/* Before dropping root: keep the permitted set across setuid(). */
int caps_keep_across_drop(void);

/* After dropping root: permitted = CAPS_KEPT (what root had of it),
 * effective and inheritable empty, and no longer kept across setuid(). */
int caps_after_drop(void);

/* Can this process (once caps_raise() has run, where needed) switch a
 * child to another uid and gid? True for root and for a process that
 * holds CAPS_SWITCH in its permitted set. */
bool caps_can_switch(void);

/* Make the permitted set effective (the launcher). No-op for root. */
int caps_raise(void);

/* Empty every set, root's too (the listener; a program after its
 * switch, when the launcher is not root). */
int caps_clear(void);

#endif
