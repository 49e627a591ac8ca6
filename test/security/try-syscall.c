/*
 * try-syscall: make system calls with harmless bad arguments and say what
 * each returned, in the style of bubblewrap's tests/try-syscall.c.
 *
 *   try-syscall all          every call of the table, in its order
 *   try-syscall NAME...      only those
 *
 * One line per call: "NAME ok", "NAME ERRNO-NAME", or, for a call made
 * in a child of its own, "NAME signal SIGNAME" when the child was killed.
 *
 * The arguments are chosen so that the call would do nothing even if it
 * were allowed: the kernel refuses them (EINVAL, EBADF, ENOENT, ESRCH...)
 * or, for the few allowed controls, the call has no lasting effect. Run
 * directly and through toolrun, the difference is the seccomp policy's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Paths under a directory that does not exist: no lookup can succeed. */
#define NOWHERE "/nonexistent-toolrun-try-syscall/a"
#define NOWHERE2 "/nonexistent-toolrun-try-syscall/b"

/* Flags no call accepts. */
#define BAD_FLAGS 0x7fff0000UL

static long child_exit(void)
{
	/* Not exit(): a clone child shares nothing it should flush. */
	syscall(SYS_exit_group, 0);
	return 0;
}

/* A raw clone() that the kernel refuses outright: CLONE_SIGHAND without
 * CLONE_VM is EINVAL before anything is created. Should a child be
 * created anyway, it leaves at once and is reaped. */
static long try_clone(unsigned long flags)
{
	long r = syscall(SYS_clone, flags | CLONE_SIGHAND, 0UL, 0UL, 0UL, 0UL);
	if (r == 0)
		child_exit();
	if (r > 0) {
		waitpid((pid_t)r, NULL, __WALL);
		return 0;
	}
	return r;
}

static long do_ptrace(void)
{
	/* No process has pid 0: ESRCH. */
	return syscall(SYS_ptrace, 2 /* PTRACE_PEEKDATA */, 0, 0UL, 0UL);
}

static long do_process_vm_readv(void)
{
	return syscall(SYS_process_vm_readv, getpid(), NULL, 0UL, NULL, 0UL, 1UL);
}

static long do_process_vm_writev(void)
{
	return syscall(SYS_process_vm_writev, getpid(), NULL, 0UL, NULL, 0UL, 1UL);
}

static long do_kcmp(void)
{
	return syscall(SYS_kcmp, -1, -1, 0, 0UL, 0UL);
}

static long do_pidfd_getfd(void)
{
	return syscall(SYS_pidfd_getfd, -1, 0, 0U);
}

static long do_mount(void)
{
	return syscall(SYS_mount, NOWHERE, NOWHERE2, NULL, (unsigned long)MS_BIND, NULL);
}

static long do_umount2(void)
{
	return syscall(SYS_umount2, NOWHERE, (int)0x40000000);
}

#ifdef SYS_umount
static long do_umount(void)
{
	return syscall(SYS_umount, NOWHERE);
}
#endif

/* Bad flags, not an unknown file system: the kernel would try to load a
 * module named after the type. */
static long do_fsopen(void)
{
	return syscall(SYS_fsopen, "tmpfs", (unsigned)BAD_FLAGS);
}

static long do_fsconfig(void)
{
	return syscall(SYS_fsconfig, -1, 0xffffU, NULL, NULL, 0);
}

static long do_fsmount(void)
{
	return syscall(SYS_fsmount, -1, (unsigned)BAD_FLAGS, 0U);
}

static long do_fspick(void)
{
	return syscall(SYS_fspick, AT_FDCWD, NOWHERE, (unsigned)BAD_FLAGS);
}

static long do_open_tree(void)
{
	return syscall(SYS_open_tree, AT_FDCWD, NOWHERE, (unsigned)BAD_FLAGS);
}

static long do_move_mount(void)
{
	return syscall(SYS_move_mount, AT_FDCWD, NOWHERE, AT_FDCWD, NOWHERE2,
		       (unsigned)BAD_FLAGS);
}

static long do_mount_setattr(void)
{
	/* A size below the first version of struct mount_attr: EINVAL. */
	return syscall(SYS_mount_setattr, AT_FDCWD, NOWHERE, 0U, NULL, (size_t)0);
}

static long do_pivot_root(void)
{
	return syscall(SYS_pivot_root, NOWHERE, NOWHERE2);
}

/* unshare(0) changes nothing, and succeeds where it is allowed. */
static long do_unshare(void)
{
	return syscall(SYS_unshare, 0);
}

static long do_setns(void)
{
	return syscall(SYS_setns, -1, 0);
}

static long do_clone_newns(void) { return try_clone(CLONE_NEWNS); }
static long do_clone_newuts(void) { return try_clone(CLONE_NEWUTS); }
static long do_clone_newipc(void) { return try_clone(CLONE_NEWIPC); }
static long do_clone_newuser(void) { return try_clone(CLONE_NEWUSER); }
static long do_clone_newpid(void) { return try_clone(CLONE_NEWPID); }
static long do_clone_newnet(void) { return try_clone(CLONE_NEWNET); }
static long do_clone_newcgroup(void) { return try_clone(CLONE_NEWCGROUP); }
static long do_clone_newtime(void) { return try_clone(CLONE_NEWTIME); }
/* The same refused clone without a namespace flag: clone itself is
 * allowed, so only the flags make the difference. */
static long do_clone_plain(void) { return try_clone(0); }

static long do_fork(void)
{
	long r = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
	if (r == 0)
		child_exit();
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		return 0;
	}
	return r;
}

static long do_clone3(void)
{
	return syscall(SYS_clone3, NULL, (size_t)0);
}

static long do_io_uring_setup(void)
{
	return syscall(SYS_io_uring_setup, 0U, NULL);
}

static long do_io_uring_enter(void)
{
	return syscall(SYS_io_uring_enter, -1, 0U, 0U, 0U, NULL, (size_t)0);
}

static long do_io_uring_register(void)
{
	return syscall(SYS_io_uring_register, -1, 0U, NULL, 0U);
}

static long do_bpf(void)
{
	return syscall(SYS_bpf, 0xffff, NULL, 0U);
}

static long do_perf_event_open(void)
{
	return syscall(SYS_perf_event_open, NULL, 0, -1, -1, ~0UL);
}

static long do_userfaultfd(void)
{
	return syscall(SYS_userfaultfd, ~0);
}

static long do_keyctl(void)
{
	return syscall(SYS_keyctl, 0xffff, 0UL, 0UL, 0UL, 0UL);
}

/* An empty key type is EINVAL (a type starting with '.' would be EPERM). */
static long do_add_key(void)
{
	return syscall(SYS_add_key, "", NULL, NULL, (size_t)0, 0);
}

static long do_request_key(void)
{
	return syscall(SYS_request_key, "", NULL, NULL, 0);
}

static long do_kexec_load(void)
{
	return syscall(SYS_kexec_load, 0UL, 0UL, NULL, BAD_FLAGS);
}

static long do_kexec_file_load(void)
{
	return syscall(SYS_kexec_file_load, -1, -1, 0UL, NULL, BAD_FLAGS);
}

/* Shorter than an ELF header: ENOEXEC. */
static long do_init_module(void)
{
	return syscall(SYS_init_module, NULL, 0UL, "");
}

static long do_finit_module(void)
{
	return syscall(SYS_finit_module, -1, "", (int)BAD_FLAGS);
}

static long do_delete_module(void)
{
	return syscall(SYS_delete_module, "toolrun_no_such_module", O_NONBLOCK);
}

static long do_acct(void)
{
	return syscall(SYS_acct, NOWHERE);
}

static long do_syslog(void)
{
	return syscall(SYS_syslog, 0xffff, NULL, 0);
}

#ifdef SYS_iopl
static long do_iopl(void)
{
	return syscall(SYS_iopl, 4); /* levels are 0 to 3 */
}
#endif

#ifdef SYS_ioperm
static long do_ioperm(void)
{
	return syscall(SYS_ioperm, 0UL, 0UL, 0);
}
#endif

static long do_open_by_handle_at(void)
{
	return syscall(SYS_open_by_handle_at, -1, NULL, O_RDONLY);
}

static long do_name_to_handle_at(void)
{
	return syscall(SYS_name_to_handle_at, AT_FDCWD, NOWHERE, NULL, NULL, (int)BAD_FLAGS);
}

/* ioctl on /dev/null, which is no terminal: allowed, it is ENOTTY. */
static long null_ioctl(unsigned long request, void *arg)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long r = syscall(SYS_ioctl, fd, request, arg);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static long do_ioctl_tiocsti(void)
{
	char c = '#';
	return null_ioctl(TIOCSTI, &c);
}

/* The kernel reads the request as 32 bits: the high ones do not change
 * which ioctl this is, so they must not change the verdict either. */
static long do_ioctl_tiocsti_high(void)
{
	char c = '#';
	return null_ioctl((unsigned long)TIOCSTI | 0x100000000UL, &c);
}

static long do_ioctl_tioclinux(void)
{
	char subcode = 0;
	return null_ioctl(TIOCLINUX, &subcode);
}

static long do_ioctl_tcgets(void)
{
	struct termios t;
	return null_ioctl(TCGETS, &t);
}

static long try_socket(int domain, int type, int protocol)
{
	long fd = syscall(SYS_socket, domain, type | SOCK_CLOEXEC, protocol);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return fd;
}

static long do_socket_inet(void) { return try_socket(AF_INET, SOCK_STREAM, 0); }
static long do_socket_inet_udp(void) { return try_socket(AF_INET, SOCK_DGRAM, 0); }
static long do_socket_inet6(void) { return try_socket(AF_INET6, SOCK_STREAM, 0); }
static long do_socket_netlink(void) { return try_socket(AF_NETLINK, SOCK_RAW, 0); }
static long do_socket_unix(void) { return try_socket(AF_UNIX, SOCK_STREAM, 0); }

static long do_socketpair_unix(void)
{
	int sv[2];
	long r = syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	if (r == 0) {
		close(sv[0]);
		close(sv[1]);
	}
	return r;
}

static long do_getpid(void)
{
	return syscall(SYS_getpid) > 0 ? 0 : -1;
}

static long do_uname(void)
{
	struct utsname u;
	return syscall(SYS_uname, &u);
}

static long do_openat_devnull(void)
{
	long fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return fd;
}

#ifdef __x86_64__
/* ptrace(PTRACE_PEEKDATA, 0) through the 32-bit entry point (int 0x80,
 * i386 number 26), which a filter must not leave open. Made in a child:
 * the filter may kill it, and a kernel without 32-bit emulation faults. */
static long do_ptrace_i386(void)
{
	long r;
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(26L), "b"(2L), "c"(0L), "d"(0L), "S"(0L)
			 : "memory", "r8", "r9", "r10", "r11");
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

/* unshare(0) through the x32 entry point (number 272 with bit 30). */
static long do_unshare_x32(void)
{
	return syscall(0x40000000L | 272L, 0);
}
#endif

struct call {
	const char *name;
	long (*fn)(void);
	bool in_child; /* may kill the caller: made in a child of its own */
};

static const struct call calls[] = {
	{"ptrace", do_ptrace, false},
	{"process_vm_readv", do_process_vm_readv, false},
	{"process_vm_writev", do_process_vm_writev, false},
	{"kcmp", do_kcmp, false},
	{"pidfd_getfd", do_pidfd_getfd, false},
	{"mount", do_mount, false},
	{"umount2", do_umount2, false},
#ifdef SYS_umount
	{"umount", do_umount, false},
#endif
	{"fsopen", do_fsopen, false},
	{"fsconfig", do_fsconfig, false},
	{"fsmount", do_fsmount, false},
	{"fspick", do_fspick, false},
	{"open_tree", do_open_tree, false},
	{"move_mount", do_move_mount, false},
	{"mount_setattr", do_mount_setattr, false},
	{"pivot_root", do_pivot_root, false},
	{"unshare", do_unshare, false},
	{"setns", do_setns, false},
	{"clone-newns", do_clone_newns, false},
	{"clone-newuts", do_clone_newuts, false},
	{"clone-newipc", do_clone_newipc, false},
	{"clone-newuser", do_clone_newuser, false},
	{"clone-newpid", do_clone_newpid, false},
	{"clone-newnet", do_clone_newnet, false},
	{"clone-newcgroup", do_clone_newcgroup, false},
	{"clone-newtime", do_clone_newtime, false},
	{"clone3", do_clone3, false},
	{"io_uring_setup", do_io_uring_setup, false},
	{"io_uring_enter", do_io_uring_enter, false},
	{"io_uring_register", do_io_uring_register, false},
	{"bpf", do_bpf, false},
	{"perf_event_open", do_perf_event_open, false},
	{"userfaultfd", do_userfaultfd, false},
	{"keyctl", do_keyctl, false},
	{"add_key", do_add_key, false},
	{"request_key", do_request_key, false},
	{"kexec_load", do_kexec_load, false},
	{"kexec_file_load", do_kexec_file_load, false},
	{"init_module", do_init_module, false},
	{"finit_module", do_finit_module, false},
	{"delete_module", do_delete_module, false},
	{"acct", do_acct, false},
	{"syslog", do_syslog, false},
#ifdef SYS_iopl
	{"iopl", do_iopl, false},
#endif
#ifdef SYS_ioperm
	{"ioperm", do_ioperm, false},
#endif
	{"open_by_handle_at", do_open_by_handle_at, false},
	{"name_to_handle_at", do_name_to_handle_at, false},
	{"ioctl-tiocsti", do_ioctl_tiocsti, false},
	{"ioctl-tiocsti-high", do_ioctl_tiocsti_high, false},
	{"ioctl-tioclinux", do_ioctl_tioclinux, false},
	{"socket-inet", do_socket_inet, false},
	{"socket-inet-udp", do_socket_inet_udp, false},
	{"socket-inet6", do_socket_inet6, false},
	{"socket-netlink", do_socket_netlink, false},
	/* Allowed. */
	{"socket-unix", do_socket_unix, false},
	{"socketpair-unix", do_socketpair_unix, false},
	{"clone-plain", do_clone_plain, false},
	{"fork", do_fork, false},
	{"ioctl-tcgets", do_ioctl_tcgets, false},
	{"getpid", do_getpid, false},
	{"uname", do_uname, false},
	{"openat-devnull", do_openat_devnull, false},
#ifdef __x86_64__
	/* Other entry points. */
	{"ptrace-i386", do_ptrace_i386, true},
	{"unshare-x32", do_unshare_x32, true},
#endif
};

static void report(const char *name, long r, int err)
{
	if (r >= 0)
		printf("%s ok\n", name);
	else if (strerrorname_np(err))
		printf("%s %s\n", name, strerrorname_np(err));
	else
		printf("%s E%d\n", name, err);
}

static void run(const struct call *c)
{
	if (!c->in_child) {
		errno = 0;
		long r = c->fn();
		report(c->name, r, errno);
		return;
	}
	/* The child reports through a pipe, so that a child killed before
	 * it could write leaves no line behind. */
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		report(c->name, -1, errno);
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		report(c->name, -1, errno);
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		errno = 0;
		long r = c->fn();
		int res[2] = {r >= 0 ? 0 : -1, errno};
		ssize_t w = write(p[1], res, sizeof(res));
		_exit(w == (ssize_t)sizeof(res) ? 0 : 1);
	}
	close(p[1]);
	int res[2], status = 0;
	ssize_t n = read(p[0], res, sizeof(res));
	close(p[0]);
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		printf("%s signal SIG%s\n", c->name, sigabbrev_np(WTERMSIG(status)));
	else if (n == (ssize_t)sizeof(res))
		report(c->name, res[0], res[1]);
	else
		printf("%s lost\n", c->name);
}

int main(int argc, char **argv)
{
	const size_t ncalls = sizeof(calls) / sizeof(calls[0]);

	if (argc < 2) {
		fprintf(stderr, "usage: try-syscall all | NAME...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "all")) {
		for (size_t i = 0; i < ncalls; i++)
			run(&calls[i]);
		return 0;
	}
	int status = 0;
	for (int a = 1; a < argc; a++) {
		size_t i = 0;
		while (i < ncalls && strcmp(calls[i].name, argv[a]))
			i++;
		if (i == ncalls) {
			fprintf(stderr, "try-syscall: unknown call '%s'\n", argv[a]);
			status = 2;
			continue;
		}
		run(&calls[i]);
	}
	return status;
}
