#include "options.h"

#include <getopt.h>
#include <stdio.h>

const char *option_refused(char **argv, char *buf, size_t len)
{
	if (optopt > 0 && optopt < OPT_LONG_ONLY) {
		snprintf(buf, len, "-%c", optopt);
		return buf;
	}
	return argv[optind - 1];
}
