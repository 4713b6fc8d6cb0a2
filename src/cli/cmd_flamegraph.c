// SPDX-License-Identifier: MIT
/* ustack flamegraph: placeholder until its issue lands. */
#include "cli/cli.h"

int cmd_flamegraph(int argc, char **argv)
{
	return cli_not_yet("flamegraph");
}
