/*
 * What the CLI's subcommands share around getopt_long.
 */
#ifndef TOOLRUN_CLIENT_OPTIONS_H
#define TOOLRUN_CLIENT_OPTIONS_H

#include <stddef.h>

/* Long options without a short form take values from here up, so that a
 * refused option's optopt tells a short letter from a long one. */
#define OPT_LONG_ONLY 256

/* The option getopt_long has just refused ('?' or ':'), as the user wrote
 * it: "-x" for a short one, else the word it stopped on ("--bogus",
 * "--json=1", "--timeout" without its value). buf holds the short form. */
const char *option_refused(char **argv, char *buf, size_t len);

#endif
