/*
 * toolrun session: the CLI's client of toolrund's sessions.
 */
#ifndef TOOLRUN_CLI_SESSION_H
#define TOOLRUN_CLI_SESSION_H

#include "config.h"

/* argv: the verb and its arguments (what follows "session"). Returns the
 * exit status (see session.c). */
int session_main(const struct config *cfg, int argc, char **argv);

#endif
