/*
 * The names of a launch's steps (launchstep.h).
 *
 * Processes: the launcher fails at a step, the listener names it.
 */
#include "launchstep.h"

const char *launch_step_name(enum launch_step step)
{
	switch (step) {
	case LAUNCH_STEP_FORK: return "fork";
	case LAUNCH_STEP_SIGNALS: return "reset signals";
	case LAUNCH_STEP_SESSION: return "setsid";
	case LAUNCH_STEP_PARENT_DEATH: return "parent death signal";
	case LAUNCH_STEP_FDS: return "arrange file descriptors";
	case LAUNCH_STEP_CWD: return "enter the working directory";
	case LAUNCH_STEP_LIMITS: return "set resource limits";
	case LAUNCH_STEP_SANDBOX: return "install the seccomp filter";
	case LAUNCH_STEP_EXEC: return "execve";
	case LAUNCH_STEP_IDENTITY: return "become the caller";
	case LAUNCH_STEP_CHECK_FILE:
		return "run it: the path now names another file than the one checked";
	case LAUNCH_STEP_CHECK_WRITERS:
		return "run it: the caller could rewrite the file, which would then carry the tool's policy";
	case LAUNCH_STEP_NONE:
	default: return "launch";
	}
}
