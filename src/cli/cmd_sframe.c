// SPDX-License-Identifier: MIT
/* ustack sframe: placeholder until its issue lands. */
#include "cli/cli.h"

int cmd_sframe(int argc, char **argv)
{
	return cli_not_yet("sframe");
}
