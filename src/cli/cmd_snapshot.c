// SPDX-License-Identifier: MIT
/* ustack snapshot: placeholder until its issue lands. */
#include "cli/cli.h"

int cmd_snapshot(int argc, char **argv)
{
	return cli_not_yet("snapshot");
}
