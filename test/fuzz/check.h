/*
 * The fuzz harnesses' one assertion: an expectation that fails names its
 * file and line and aborts, which libFuzzer reports with the input.
 */
#ifndef TOOLRUN_FUZZ_CHECK_H
#define TOOLRUN_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			check_failed(__FILE__, __LINE__, #cond);               \
	} while (0)

__attribute__((noreturn, unused)) static void check_failed(const char *file, int line,
							    const char *what)
{
	fprintf(stderr, "%s:%d: expectation failed: %s\n", file, line, what);
	abort();
}

#endif
