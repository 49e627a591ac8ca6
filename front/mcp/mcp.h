/*
 * toolrun mcp: a Model Context Protocol server on stdin and stdout
 * (docs/mcp.md).
 */
#ifndef TOOLRUN_FRONT_MCP_H
#define TOOLRUN_FRONT_MCP_H

#include "config.h"

/* argv: "mcp", then its options. Returns the exit status: 0 at the end
 * of input, 2 for a usage error or a root that cannot be used; on
 * SIGTERM, SIGHUP or SIGINT it closes its sessions and dies of that
 * signal instead. */
int mcp_main(const struct config *cfg, int argc, char **argv);

#endif
