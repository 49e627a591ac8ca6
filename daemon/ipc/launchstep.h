/*
 * The steps of a launch (launcher/launch.h), as Spawned reports a failed
 * one (launcher.proto: Spawned.step), with their names for messages: the
 * launcher fails at them, the listener tells the caller which one it was.
 *
 * Processes: the launcher fails at a step, the listener names it.
 */
#ifndef TOOLRUN_LAUNCHSTEP_H
#define TOOLRUN_LAUNCHSTEP_H

enum launch_step {
	LAUNCH_STEP_NONE = 0,
	LAUNCH_STEP_FORK,
	LAUNCH_STEP_SIGNALS,
	LAUNCH_STEP_SESSION,
	LAUNCH_STEP_PARENT_DEATH,
	LAUNCH_STEP_FDS,
	LAUNCH_STEP_CWD,
	LAUNCH_STEP_LIMITS,
	LAUNCH_STEP_SANDBOX,
	LAUNCH_STEP_EXEC,
	LAUNCH_STEP_IDENTITY,
	/* A tool's executable, opened, is not what the listener matched,
	 * or is one the caller could rewrite (execcheck.h). */
	LAUNCH_STEP_CHECK_FILE,
	LAUNCH_STEP_CHECK_WRITERS,
};

const char *launch_step_name(enum launch_step step);

#endif
