/*
 * The C side of our vfork(). On x86_64, vfork-x86_64.S marks the child.
 * Elsewhere, vfork() is fork(), which POSIX allows: the hook then never
 * runs in a shared address space.
 */
#include <errno.h>
#include <unistd.h>

#include "safety.h"
#include "util.h"

#if defined(__x86_64__)
HIDDEN int toolrun_vfork_failed(long ret);

HIDDEN int toolrun_vfork_failed(long ret)
{
	errno = (int)-ret;
	return -1;
}
#else
__attribute__((visibility("default"))) pid_t vfork(void)
{
	return fork();
}
#endif
