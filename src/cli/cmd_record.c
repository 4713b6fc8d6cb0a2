// SPDX-License-Identifier: MIT
/* ustack record: placeholder until its issue lands. */
#include "cli/cli.h"

int cmd_record(int argc, char **argv)
{
	return cli_not_yet("record");
}
