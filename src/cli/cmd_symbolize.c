// SPDX-License-Identifier: MIT
/* ustack symbolize: placeholder until its issue lands. */
#include "cli/cli.h"

int cmd_symbolize(int argc, char **argv)
{
	return cli_not_yet("symbolize");
}
