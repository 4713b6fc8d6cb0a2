// SPDX-License-Identifier: MIT
/* ustack archive TRACE [-o FILE]: the files a trace's frames are named from,
 * in one ustar file for another host (docs/cli/archive.md). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "archive/archive.h"
#include "cli/cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack archive TRACE [-o FILE]\n"
		"\n"
		"Write the files TRACE's frames are named from (each mapped file by its build ID\n"
		"and content, its separate debug file, the vDSO) into one ustar file, so that\n"
		"'ustack report' on another host prints what it prints here. JIT maps and kernel\n"
		"symbols are in the trace itself.\n"
		"\n"
		"  -o, --output FILE  the archive (default TRACE" USTACK_ARCHIVE_SUFFIX
		", which report finds by itself)\n"
		"  -q, --quiet        no progress on stderr\n"
		"  -h, --help         this text\n"
		"\n"
		"Each file that was found nowhere is named on stderr; the closing line counts them.\n");
}

static int show_info;

/* warnings always; progress (info) only on a terminal, on one line */
static int print_cb(enum ustack_print_level level, const char *fmt, va_list ap)
{
	if (level <= USTACK_WARN)
		return vfprintf(stderr, fmt, ap);
	if (level == USTACK_INFO && show_info) {
		char line[256];

		vsnprintf(line, sizeof(line), fmt, ap);
		line[strcspn(line, "\n")] = 0;
		return fprintf(stderr, "\r%s\033[K", line);
	}
	return 0;
}

int cmd_archive(int argc, char **argv)
{
	const char *trace = NULL, *out = NULL;
	char def[4096], err[4096 + 256];
	struct ustack_archive_stats st;
	ustack_print_fn_t old;
	int quiet = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			if (++i >= argc) {
				cli_error("archive: %s needs a file", argv[i - 1]);
				return 2;
			}
			out = argv[i];
		} else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			quiet = 1;
		} else if (argv[i][0] == '-' || trace) {
			cli_error("archive: unexpected argument '%s' (see 'ustack archive --help')",
				  argv[i]);
			return 2;
		} else {
			trace = argv[i];
		}
	}
	if (!trace) {
		usage(stderr);
		return 2;
	}
	if (!out) {
		if (snprintf(def, sizeof(def), "%s%s", trace, USTACK_ARCHIVE_SUFFIX) >= (int)sizeof(def)) {
			cli_error("%s: name too long", trace);
			return 1;
		}
		out = def;
	}
	show_info = !quiet && isatty(STDERR_FILENO);
	old = ustack_set_print(print_cb);
	rc = ustack_archive__write(trace, out, &st, err, sizeof(err));
	ustack_set_print(old);
	if (show_info)
		fputs("\r\033[K", stderr);
	if (rc) {
		cli_error("archive: %s", err);
		return 1;
	}
	printf("%s: %" PRIu64 " files, %" PRIu64 " bytes, %" PRIu64 " missing\n", out, st.files,
	       st.bytes, st.missing);
	return 0;
}
