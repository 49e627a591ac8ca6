#include "safety.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

__thread int toolrun_in_vfork_child __attribute__((tls_model("initial-exec")));

/* Does this process share its memory with its parent (a vfork or
 * CLONE_VM child that did not come through our vfork)? Unknown counts as
 * no: kcmp may be filtered, and our vfork flag covers the common case. */
static bool shares_parent_vm(void)
{
	pid_t parent = getppid();

	if (parent <= 0)
		return false;
	return syscall(SYS_kcmp, getpid(), parent, KCMP_VM, 0, 0) == 0;
}

static bool single_threaded(void)
{
	_cleanup_close_ int dir =
		open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[512];
	unsigned tasks = 0;

	if (dir < 0)
		return false; /* cannot tell: take the safe path */
	for (;;) {
		long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
		if (n < 0)
			return false;
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			if (d->d_name[0] != '.' && ++tasks > 1)
				return false;
			off += d->d_reclen;
		}
	}
	return tasks == 1;
}

bool safety_client_allowed(void)
{
	if (toolrun_in_vfork_child)
		return false;
	if (shares_parent_vm())
		return false;
	return single_threaded();
}
