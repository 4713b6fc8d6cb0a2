// SPDX-License-Identifier: MIT
/* ustack report: placeholder until its issue lands. */
#include "cli/cli.h"

int cmd_report(int argc, char **argv)
{
	return cli_not_yet("report");
}
