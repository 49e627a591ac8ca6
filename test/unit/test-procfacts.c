/*
 * Unit tests for cli/procfacts.c: what toolrun status takes from
 * /proc/PID/status, and that a field the file does not show stays
 * unknown, with the reason, rather than being guessed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "procfacts.h"

/* As Linux 6.x writes it for toolrund's launcher, abridged. */
static const char launcher_status[] =
	"Name:\ttoolrund-launch\n"
	"Umask:\t0022\n"
	"State:\tS (sleeping)\n"
	"Uid:\t65534\t65534\t65534\t65534\n"
	"Gid:\t65534\t65534\t65534\t65534\n"
	"CapInh:\t0000000000000000\n"
	"CapPrm:\t00000000000000e1\n"
	"CapEff:\t00000000000000e1\n"
	"CapBnd:\t000001ffffffffff\n"
	"CapAmb:\t0000000000000000\n"
	"NoNewPrivs:\t1\n"
	"Seccomp:\t2\n"
	"Seccomp_filters:\t1\n"
	"Speculation_Store_Bypass:\tthread vulnerable\n";

static void test_parse_all(void **state)
{
	struct proc_facts f;
	(void)state;

	procfacts_parse(launcher_status, &f);
	assert_true(f.read);
	assert_string_equal(f.name, "toolrund-launch");
	assert_true(f.has_ids);
	assert_int_equal(f.uid[1], 65534);
	assert_int_equal(f.gid[3], 65534);
	assert_true(f.has_caps);
	/* CAP_CHOWN, CAP_KILL, CAP_SETGID, CAP_SETUID. */
	assert_int_equal(f.cap_effective, 0xe1);
	assert_int_equal(f.cap_permitted, 0xe1);
	assert_int_equal(f.cap_bounding, 0x1ffffffffffULL);
	assert_int_equal(f.no_new_privs, 1);
	assert_int_equal(f.seccomp, SECCOMP_MODE_FILTERS);
	assert_int_equal(f.seccomp_filters, 1);
	assert_string_equal(f.why, "");
}

/* A kernel without NoNewPrivs and Seccomp lines (or a /proc that hides
 * them): unknown, and why names both. */
static void test_missing_fields_unknown(void **state)
{
	struct proc_facts f;
	(void)state;

	procfacts_parse("Name:\ttoolrund\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
			"CapPrm:\t0\nCapEff:\t0\nCapBnd:\t1ff\n", &f);
	assert_true(f.has_ids);
	assert_true(f.has_caps);
	assert_int_equal(f.no_new_privs, -1);
	assert_int_equal(f.seccomp, SECCOMP_MODE_UNKNOWN);
	assert_int_equal(f.seccomp_filters, -1);
	assert_string_equal(procfacts_seccomp_name(f.seccomp), "unknown");
	assert_string_equal(f.why, "/proc shows no NoNewPrivs, Seccomp");
}

/* A malformed value is not read as a number it does not hold. */
static void test_malformed_unknown(void **state)
{
	struct proc_facts f;
	(void)state;

	procfacts_parse("Name:\tx\nUid:\t0\t0\nGid:\t0\t0\t0\t0\nCapPrm:\tzz\nCapEff:\t0\n"
			"CapBnd:\t0\nNoNewPrivs:\t2\nSeccomp:\t3\n", &f);
	assert_false(f.has_ids);
	assert_false(f.has_caps);
	assert_int_equal(f.no_new_privs, -1);
	assert_int_equal(f.seccomp, SECCOMP_MODE_UNKNOWN);
	assert_string_equal(f.why,
			    "/proc shows no Uid/Gid, CapEff/CapPrm/CapBnd, NoNewPrivs, Seccomp");
}

/* The kernel's own file, for this very process. */
static void test_read_self(void **state)
{
	struct proc_facts f;
	(void)state;

	procfacts_read("/proc", getpid(), &f);
	assert_true(f.read);
	assert_true(f.has_ids);
	assert_int_equal(f.uid[0], getuid());
	assert_int_equal(f.gid[1], getegid());
	assert_true(f.seccomp != SECCOMP_MODE_UNKNOWN);
}

static void test_read_absent(void **state)
{
	struct proc_facts f;
	(void)state;

	procfacts_read("/nonexistent-proc", 1, &f);
	assert_false(f.read);
	assert_int_equal(f.seccomp, SECCOMP_MODE_UNKNOWN);
	assert_int_equal(f.no_new_privs, -1);
	assert_string_equal(f.why, "/nonexistent-proc/1/status: No such file or directory");
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(procfacts_cap_name(0), "CAP_CHOWN");
	assert_string_equal(procfacts_cap_name(7), "CAP_SETUID");
	assert_string_equal(procfacts_cap_name(21), "CAP_SYS_ADMIN");
	assert_string_equal(procfacts_cap_name(40), "CAP_CHECKPOINT_RESTORE");
	assert_null(procfacts_cap_name(41));
	assert_string_equal(procfacts_seccomp_name(SECCOMP_MODE_OFF), "disabled");
	assert_string_equal(procfacts_seccomp_name(SECCOMP_MODE_ONE), "strict");
	assert_string_equal(procfacts_seccomp_name(SECCOMP_MODE_FILTERS), "filter");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_all),
		cmocka_unit_test(test_missing_fields_unknown),
		cmocka_unit_test(test_malformed_unknown),
		cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_read_absent),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
