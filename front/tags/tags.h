/*
 * toolrun tags: the interpreter of a model's tagged text (seed 004):
 * <open>, <write>, <search>, <grep>, <tree> and <exec> run as they arrive
 * on a stream (docs/tags.md).
 */
#ifndef TOOLRUN_FRONT_TAGS_H
#define TOOLRUN_FRONT_TAGS_H

#include "config.h"

/* argv: "tags", then its options and the FILE. Returns the exit
 * status: 0 all commands succeeded, 1 one or more failed, 2 usage or
 * configuration error, 124 an <exec> timed out. */
int tags_main(const struct config *cfg, int argc, char **argv);

#endif
