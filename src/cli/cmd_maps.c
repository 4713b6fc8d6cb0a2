// SPDX-License-Identifier: MIT
/* ustack maps: placeholder until its issue lands. */
#include "cli/cli.h"

int cmd_maps(int argc, char **argv)
{
	return cli_not_yet("maps");
}
