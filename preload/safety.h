/*
 * May the client run inside this process, or must the hook exec the
 * helper? The client blocks the calling process until the program ends,
 * which is right only when the process is about to be replaced anyway:
 * not in a vfork child (its parent stays suspended until we exec), and
 * not beside other threads (a real exec would have ended them).
 */
#ifndef TOOLRUN_SAFETY_H
#define TOOLRUN_SAFETY_H

#include <stdbool.h>

/* Set by our vfork() in the child, cleared in the parent (vfork.S). */
extern __thread int toolrun_in_vfork_child __attribute__((tls_model("initial-exec")));

bool safety_client_allowed(void);

#endif
