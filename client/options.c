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

int options_each(int argc, char **argv, const struct option *longopts, option_take_fn take,
		 void *ctx, const char **refused, char *buf, size_t len)
{
	int opt, r;

	opterr = 0;
	optind = 0;
	while ((opt = getopt_long(argc, argv, "-:", longopts, NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			*refused = option_refused(argv, buf, len);
			return OPTIONS_REFUSED;
		}
		if ((r = take(opt, optarg, ctx)) != 0)
			return r;
	}
	for (; optind < argc; optind++)
		if ((r = take(1, argv[optind], ctx)) != 0)
			return r;
	return 0;
}
