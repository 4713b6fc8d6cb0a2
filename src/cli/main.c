// SPDX-License-Identifier: MIT
/* ustack: the command-line entry point; one file per subcommand. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ustack/ustack.h>
#include "cli/cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "record", cmd_record, "record events with their user and kernel stacks" },
	{ "report", cmd_report, "print a recorded trace (text, raw, folded, ...)" },
	{ "archive", cmd_archive, "the files a trace needs, for a report on another host" },
	{ "flamegraph", cmd_flamegraph, "write an SVG flame graph of a trace" },
	{ "snapshot", cmd_snapshot, "stacks of every thread of a running process" },
	{ "sframe", cmd_sframe, "dump an SFrame section or look up addresses" },
	{ "maps", cmd_maps, "query the mappings of a process (PROCMAP_QUERY)" },
	{ "symbolize", cmd_symbolize, "file offsets to function names" },
	{ "probe", cmd_probe, "where a uprobe, uretprobe or USDT probe name attaches" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ustack <command> [options]\n\n"
		   "User-space stack traces without frame pointers.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'ustack <command> --help' describes each command.\n");
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ustack: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int cli_parse_u64(const char *s, int base, unsigned long long *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, base);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

void cli_output_buffer(FILE *f)
{
	static char buf[64 << 10];
	static int taken;
	struct stat st;

	if (taken || fstat(fileno(f), &st) ||
	    !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return;
	if (!setvbuf(f, buf, _IOFBF, sizeof(buf)))
		taken = 1;
}

int cli_not_yet(const char *cmd)
{
	cli_error("%s: not implemented yet", cmd);
	return 2;
}

/* USTACK_DEBUG=1: every message of the library, debug ones included (the
 * BPF verifier's log, for one) */
static int debug_print(enum ustack_print_level level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	const char *dbg = getenv("USTACK_DEBUG");

	if (dbg && *dbg && strcmp(dbg, "0"))
		ustack_set_print(debug_print);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ustack %s\n", ustack_version());
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s' (see 'ustack --help')", argv[1]);
	return 2;
}
