/*
 * What the CLI's subcommands share around getopt_long.
 */
#ifndef TOOLRUN_CLIENT_OPTIONS_H
#define TOOLRUN_CLIENT_OPTIONS_H

#include <getopt.h>
#include <stddef.h>

/* Long options without a short form take values from here up, so that a
 * refused option's optopt tells a short letter from a long one. */
#define OPT_LONG_ONLY 256

/* The option getopt_long has just refused ('?' or ':'), as the user wrote
 * it: "-x" for a short one, else the word it stopped on ("--bogus",
 * "--json=1", "--timeout" without its value). buf holds the short form. */
const char *option_refused(char **argv, char *buf, size_t len);

/* options_take gives each word of a subcommand's arguments, in order,
 * to take(opt, value, ctx): an option as getopt_long returns it, any
 * other word (and each word after "--") as opt 1. */
typedef int (*option_take_fn)(int opt, const char *value, void *ctx);

/* Returned by options_each for an option getopt_long refused. */
#define OPTIONS_REFUSED (-1)

/* Walk argv (argv[0] the subcommand's name, as getopt expects) with
 * getopt_long and longopts (no short options). Returns 0, the first
 * nonzero result of take, or OPTIONS_REFUSED with the refused option as
 * the user wrote it in *refused (buf, of len bytes, holds a short one). */
int options_each(int argc, char **argv, const struct option *longopts, option_take_fn take,
		 void *ctx, const char **refused, char *buf, size_t len);

#endif
