/*
 * Seccomp filters (sandbox.h).
 *
 * Processes: all three (each loads its filter; the supervisor also names a
 * killed listener's call).
 */
#include "sandbox.h"

#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* What no program and no toolrund process needs: they fail with EPERM. */
static const char *const denied[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "mount_setattr", "pivot_root",
	"unshare", "setns",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "acct", "syslog", "iopl", "ioperm",
	"open_by_handle_at", "name_to_handle_at",
};

/* These fail with ENOSYS: libc takes its older path (clone, no io_uring).
 * clone3's flags sit in memory, where seccomp cannot read them. */
static const char *const unsupported[] = {
	"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
};

/* Namespace flags of clone(): any of them, and clone fails with EPERM. */
static const unsigned long clone_namespaces[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
#ifdef CLONE_NEWTIME
	CLONE_NEWTIME,
#endif
};

static int fail(char *err, size_t errlen, int rc, const char *what)
{
	snprintf(err, errlen, "seccomp: %s: %s", what, errno_text(rc));
	return rc < 0 ? rc : -rc;
}

/* Add `action` for each named call; names this kernel or libseccomp does
 * not know are skipped. */
static int add_calls(scmp_filter_ctx ctx, uint32_t action, const char *const *names,
		     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR)
			continue;
		int r = seccomp_rule_add(ctx, action, nr, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The deny-list shared by the launcher and the programs. */
static int add_deny_list(scmp_filter_ctx ctx)
{
	int r = add_calls(ctx, SCMP_ACT_ERRNO(EPERM), denied, ARRAY_SIZE(denied));
	if (r == 0)
		r = add_calls(ctx, SCMP_ACT_ERRNO(ENOSYS), unsupported, ARRAY_SIZE(unsupported));
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(clone_namespaces); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, clone_namespaces[i],
					     clone_namespaces[i]));
	/* Typing into a terminal: compared on the low 32 bits of the
	 * request, since the kernel ignores the high ones. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, TIOCSTI));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, TIOCLINUX));
	return r;
}

static int no_new_privs(void)
{
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

int sandbox_supervisor(char *err, size_t errlen)
{
	return sandbox_launcher(err, errlen);
}

int sandbox_launcher(char *err, size_t errlen)
{
	int r = no_new_privs();
	if (r < 0)
		return fail(err, errlen, r, "no_new_privs");
	/* Started by the supervisor, it has the deny-list already: a second
	 * copy would only cost every program's system calls once more. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2)
		return 0;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return fail(err, errlen, ENOMEM, "init");
	r = add_deny_list(ctx);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? fail(err, errlen, r, "launcher filter") : 0;
}

/* Compile a filter to BPF in memory, through a memfd. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *out)
{
	int fd = memfd_create("toolrun-seccomp", MFD_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	int r = seccomp_export_bpf(ctx, fd);
	if (r == 0 && fstat(fd, &st) < 0)
		r = -errno;
	if (r == 0) {
		struct sock_filter *prog = malloc((size_t)st.st_size);
		if (!prog) {
			r = -ENOMEM;
		} else if (pread(fd, prog, (size_t)st.st_size, 0) != st.st_size) {
			free(prog);
			r = -EIO;
		} else {
			out->filter = prog;
			out->len = (unsigned short)((size_t)st.st_size / sizeof(*prog));
		}
	}
	close(fd);
	return r;
}

/* A program inherits the launcher's deny-list through fork; its own
 * filter adds only what differs per tool. Each filter a process installs
 * costs the kernel a pass over every system call number (the action
 * cache), so the program's stays a few instructions long. */
static int build_network_filter(struct sock_fprog *out)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
				 SCMP_A0(SCMP_CMP_NE, AF_UNIX, 0));
	if (r == 0)
		r = export_bpf(ctx, out);
	seccomp_release(ctx);
	return r;
}

int sandbox_child_filters(struct child_filters *out, char *err, size_t errlen)
{
	int r = build_network_filter(&out->deny_network);
	return r < 0 ? fail(err, errlen, r, "program filter") : 0;
}

int sandbox_child_apply(const struct child_filters *f, bool network)
{
	/* Set in the launcher already; said again so that a program never
	 * runs without it, whatever its launcher did. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (!network && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &f->deny_network) < 0)
		return -errno;
	return 0;
}

/* ---------------------------------------------------------------- */
/* The listener.                                                     */

/* What the listener's loop and glibc under it use. */
static const char *const listener_allowed[] = {
	"read", "write", "readv", "writev", "close", "fcntl", "lseek",
	/* close() of a run of fds at once (common/util.c): no power close()
	 * and fcntl() have not. */
	"close_range",
	"fstat", "newfstatat", "fstatat64", "statx",
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl",
	"accept4", "recvmsg", "sendmsg", "recvfrom", "sendto", "getsockopt",
	"shutdown", "pipe2",
	"brk", "munmap", "mremap", "madvise",
	"rt_sigprocmask", "rt_sigreturn", "restart_syscall",
	"getpid", "gettid", "getuid", "geteuid", "getgid", "getegid",
	"clock_gettime", "clock_getres", "gettimeofday", "time",
	"nanosleep", "clock_nanosleep", "sched_yield", "getrandom", "futex",
	"exit", "exit_group",
#ifdef __SANITIZE_ADDRESS__
	/* The sanitizer runtime reads it before every noreturn call. */
	"sigaltstack",
#endif
};

/* What the listener must never do: these kill it. */
static const char *const listener_forbidden[] = {
	"execve", "execveat", "fork", "vfork", "clone", "clone3",
	"open", "openat", "openat2", "creat", "memfd_create",
	"mknod", "mknodat", "mkdir", "mkdirat", "link", "linkat", "symlink",
	"symlinkat", "rename", "renameat", "renameat2", "unlink", "unlinkat",
	"truncate", "ftruncate",
	"socket", "socketpair", "connect", "bind", "listen",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsmount", "open_tree", "move_mount",
	"bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
	"init_module", "finit_module",
};

/* The fd the SIGSYS handler writes the offending call's number to. It is
 * the handler's only way to know it: a signal handler has no context. */
static int death_note = -1;

static void on_sigsys(int sig, siginfo_t *info, void *ucontext)
{
	(void)sig;
	(void)ucontext;
	int nr = info->si_syscall;
	ssize_t w = write(death_note, &nr, sizeof(nr));
	(void)w;
	syscall(SYS_exit_group, 128 + SIGSYS);
}

int sandbox_listener(int death_note_fd, char *err, size_t errlen)
{
	struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};

	death_note = death_note_fd;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		return fail(err, errlen, -errno, "SIGSYS handler");
	int r = no_new_privs();
	if (r < 0)
		return fail(err, errlen, r, "no_new_privs");

	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	if (!ctx)
		return fail(err, errlen, ENOMEM, "init");
	r = add_calls(ctx, SCMP_ACT_ALLOW, listener_allowed, ARRAY_SIZE(listener_allowed));
	if (r == 0)
		r = add_calls(ctx, SCMP_ACT_TRAP, listener_forbidden,
			      ARRAY_SIZE(listener_forbidden));
	/* Memory, but never executable memory. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? fail(err, errlen, r, "listener filter") : 0;
}

const char *sandbox_syscall_name(int nr, char *buf, size_t len)
{
	char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

	snprintf(buf, len, "%s", name ? name : "unknown");
	free(name);
	return buf;
}
