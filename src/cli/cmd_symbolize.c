// SPDX-License-Identifier: MIT
/* ustack symbolize: file offsets of an ELF file (or a build ID) to names. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/procmaps.h>
#include <ustack/symbolize.h>
#include "cli/cli.h"
#include "cli/out_names.h"
#include "cli/report_lookup.h"

/* deeper inline chains print their innermost and outermost levels */
#define MAX_CHAIN 64

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack symbolize (-e ELF | --build-id HEX) [--return] [-v] OFFSET...\n"
		"\n"
		"Name file offsets (as in 'ustack report --format raw': the offset of a pc\n"
		"in its file) with the function that holds them: one line per offset,\n"
		"'0xOFFSET function+0xOFF (file) at SOURCE:LINE', or '0xOFFSET ?? (reason)'.\n"
		"An offset inside inlined code gets one line per inlined function first,\n"
		"innermost first, '0xOFFSET function (file) at SOURCE:LINE [inlined]', the\n"
		"line being where the pc is (innermost) or where the inner one was inlined.\n"
		"Source lines come from the DWARF of the file the symbols come from.\n"
		"\n"
		"  -e, --elf ELF        the file the offsets are in\n"
		"  -b, --build-id HEX   find the file by build ID (ustack's and perf's build-ID\n"
		"                       caches, /usr/lib/debug/.build-id)\n"
		"  -r, --return         the offsets are return addresses: name the call\n"
		"                       (offset - 1), as report does for outer frames\n"
		"  -d, --debug-dir DIR  root of separate debug files (default /usr/lib/debug)\n"
		"  -L, --no-lines       names only: no DWARF, no source lines, no inlined lines\n"
		"\n"
		"  -v, --verbose        first print where the file and its symbols came from,\n"
		"                       on stderr: 'image: PLACE FILE' (PLACE: path,\n"
		"                       ustack cache, perf cache, debug dir, none), one\n"
		"                       'refused: FILE (PLACE): build ID differs' per file\n"
		"                       found and not used, 'symbols: SOURCE FILE' (SOURCE:\n"
		"                       self, build-ID cache, build-id dir, debuglink,\n"
		"                       minidebuginfo, debuginfod, dynsym, none),\n"
		"                       then where the source lines came from: 'dwarf:\n"
		"                       SOURCE FILE' ('dwarf: none' without DWARF or with -L)\n"
		"\n"
		"Symbols come from the file itself when it has DWARF, else a debug file of\n"
		"the same build ID under DIR/.build-id, else its .gnu_debuglink (CRC\n"
		"checked), else its own .symtab, its .gnu_debugdata (MiniDebugInfo), a\n"
		"debuginfod server (only when DEBUGINFOD_URLS is set; DEBUGINFOD_TIMEOUT\n"
		"seconds at most, default 10), else its .dynsym. A file whose build ID\n"
		"differs from --build-id is never used. Names from .symtab or\n"
		"MiniDebugInfo carry no DWARF: the lines are then asked of debuginfod.\n");
}

static int parse_build_id(const char *hex, struct ustack_file_map *fm)
{
	size_t n = strlen(hex);

	if (!n || n % 2 || n / 2 > USTACK_BUILD_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1 || !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i + 1]))
			return -EINVAL;
		fm->build_id[i] = (uint8_t)b;
	}
	fm->build_id_size = (uint32_t)(n / 2);
	fm->build_id_source = USTACK_BUILD_ID_ELF;
	return 0;
}

int cmd_symbolize(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "elf", required_argument, NULL, 'e' },
		{ "build-id", required_argument, NULL, 'b' },
		{ "return", no_argument, NULL, 'r' },
		{ "debug-dir", required_argument, NULL, 'd' },
		{ "no-lines", no_argument, NULL, 'L' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ustack_symbolizer_opts so = { .sz = sizeof(so) };
	struct ustack_file_map fm = { .file_id = 1, .kind = USTACK_VMA_FILE };
	struct ustack_symbolizer *sym;
	char path[PATH_MAX];
	const char *elf = NULL;
	int c, ret = 0, is_return = 0, verbose = 0;

	while ((c = getopt_long(argc, argv, "e:b:rd:Lvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			elf = optarg;
			break;
		case 'b':
			if (parse_build_id(optarg, &fm)) {
				cli_error("symbolize: bad build ID '%s' (hex, at most %d bytes)", optarg,
					  USTACK_BUILD_ID_MAX);
				return 2;
			}
			break;
		case 'r':
			is_return = 1;
			break;
		case 'd':
			so.debug_dir = optarg;
			break;
		case 'L':
			so.flags |= USTACK_SYMBOLIZER_NO_LINES;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!!elf == !!fm.build_id_size || optind == argc) {
		usage(stderr);
		return 2;
	}
	if (elf) {
		if (!realpath(elf, path)) {
			cli_error("%s: %s", elf, strerror(errno));
			return 1;
		}
		fm.path = path;
	}
	sym = ustack_symbolizer__new(&so);
	if (!sym || ustack_symbolizer__add_file(sym, &fm)) {
		cli_error("symbolize: out of memory");
		ustack_symbolizer__free(sym);
		return 1;
	}
	if (verbose) {
		const char *from = NULL;
		int st = ustack_symbolizer__file_status(sym, 1, &from);

		const char *dfrom = NULL;
		int dsrc;

		/* where the file was found, and what was found and refused */
		report_lookup__stats(stderr, NULL, sym, 1, NULL);
		fprintf(stderr, "symbols: %s %s\n",
			ustack_debug_source_name((unsigned int)ustack_symbolizer__file_source(sym, 1)),
			from ? from : ustack_sym_status_name((unsigned int)st));
		/* lines and inlined functions may come from elsewhere (names
		 * from .symtab or MiniDebugInfo, DWARF from debuginfod) */
		dsrc = ustack_symbolizer__file_dwarf_source(sym, 1, &dfrom);
		fprintf(stderr, "dwarf: %s%s%s\n", ustack_debug_source_name((unsigned int)dsrc),
			dfrom ? " " : "", dfrom ? dfrom : "");
	}
	for (int i = optind; i < argc; i++) {
		unsigned long long off;
		struct ustack_sym chain[MAX_CHAIN];
		int n;

		if (cli_parse_u64(argv[i], 16, &off) &&
		    (strncmp(argv[i], "0x", 2) || cli_parse_u64(argv[i] + 2, 16, &off))) {
			cli_error("symbolize: bad offset '%s' (hex)", argv[i]);
			ret = 2;
			continue;
		}
		n = ustack_symbolizer__symbolize_frames(sym, 1, off,
							is_return ? 0 : USTACK_SYM_EXACT_PC, chain,
							MAX_CHAIN, sizeof(chain[0]));
		if (n < 0) {
			printf("0x%llx ?? (error)\n", off);
			ret = 1;
			continue;
		}
		/* the inlined functions first (innermost first), the function
		 * that holds the code last, as addr2line -i prints them */
		for (int k = 0; k < n && k < MAX_CHAIN; k++) {
			const struct ustack_sym *s = &chain[k];
			const char *from = s->elf_path ? s->elf_path : (s->path ? s->path : "?");

			/* names and paths are the file's: one line whatever
			 * they hold (out_names.h) */
			if (s->status != USTACK_SYM_OK) {
				printf("0x%llx ?? (%s)", off, ustack_sym_status_name(s->status));
			} else {
				printf("0x%llx ", off);
				out_name_put(stdout, OUT_NAME_LINE, s->name);
				if (!s->inlined)
					printf("+0x%llx", (unsigned long long)s->sym_offset);
				fputs(" (", stdout);
				out_name_put(stdout, OUT_NAME_LINE, from);
				putchar(')');
			}
			if (s->file) {
				fputs(" at ", stdout);
				out_name_put(stdout, OUT_NAME_LINE, s->file);
				printf(":%u", s->line);
			}
			printf("%s\n", s->inlined ? " [inlined]" : "");
		}
		if (chain[n - 1 < MAX_CHAIN ? n - 1 : MAX_CHAIN - 1].status == USTACK_SYM_NO_FILE ||
		    chain[n - 1 < MAX_CHAIN ? n - 1 : MAX_CHAIN - 1].status == USTACK_SYM_MISMATCH)
			ret = 1;
	}
	ustack_symbolizer__free(sym);
	return ret;
}
