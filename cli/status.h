/*
 * toolrun status: what toolrund enforces now, from toolrund's live state
 * (Status, toolrun.proto) and from the kernel (/proc/PID/status of each
 * of its processes), never from the config file. docs/status.md is the
 * reference: the text and JSON output, --require and the exit codes.
 */
#ifndef TOOLRUN_CLI_STATUS_H
#define TOOLRUN_CLI_STATUS_H

#include "config.h"

/* Exit codes. */
#define STATUS_OK 0
#define STATUS_MISSING 1     /* --require LEVEL: a protection is not in force */
#define STATUS_USAGE 2
#define STATUS_UNREACHABLE 3 /* no StatusReply from toolrund */

/* argv[0] is "status". Returns the exit code. */
int status_main(const struct config *cfg, int argc, char **argv);

#endif
