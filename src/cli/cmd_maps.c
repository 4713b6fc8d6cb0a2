// SPDX-License-Identifier: MIT
/*
 * ustack maps -p PID [ADDR...]: which mapping holds an address, through the
 * same resolver the recorder uses (PROCMAP_QUERY, else the text maps).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/procmaps.h>
#include "cli/cli.h"
#include "cli/out_names.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack maps -p PID [--text] [--no-elf] [ADDR...]\n"
		"\n"
		"Without addresses: list the executable mappings of PID, one per line:\n"
		"  START-END PERMS PGOFF DEV INODE PATH BUILD_ID\n"
		"With addresses (hex, 0x optional): one line per address:\n"
		"  0xADDR FILE_OFFSET PATH BUILD_ID\n"
		"PATH is the file as the process sees it (\" (deleted)\" appended for an\n"
		"unlinked file) or the kind of a region without a file: [vdso], [jit],\n"
		"[anon], [heap], [stack], ...; BUILD_ID is '-' when unknown. An address\n"
		"in no mapping prints '0xADDR - [not mapped] -' and the exit status is 1.\n"
		"\n"
		"options:\n"
		"  -p, --pid PID   process to inspect\n"
		"      --text      parse /proc/PID/maps instead of the PROCMAP_QUERY ioctl\n"
		"      --no-elf    do not open ELF files (build IDs from the kernel only)\n"
		"  -h, --help      this help\n");
}

static const char *region_name(const struct ustack_vma *v, char *buf, size_t size)
{
	if (v->kind == USTACK_VMA_FILE) {
		if (!v->name)
			return "[file]";
		if (v->flags & USTACK_VMA_DELETED) {
			snprintf(buf, size, "%s (deleted)", v->name);
			return buf;
		}
		return v->name;
	}
	if (v->name && v->name[0] == '[' && v->kind != USTACK_VMA_ANON && v->kind != USTACK_VMA_JIT)
		return v->name;
	snprintf(buf, size, "[%s]", ustack_vma_kind_name(v->kind));
	return buf;
}

static const char *build_id_of(struct ustack_procmaps *pm, uint64_t file_id, char *buf)
{
	struct ustack_file_map fm;

	if (!file_id || ustack_procmaps__file_map(pm, file_id, &fm) || !fm.build_id_size)
		return "-";
	for (uint32_t i = 0; i < fm.build_id_size; i++)
		sprintf(buf + 2 * i, "%02x", fm.build_id[i]);
	return buf;
}

static int list_exec(struct ustack_procmaps *pm, int pid)
{
	struct ustack_vma v;
	uint64_t addr = 0;
	char bid[2 * USTACK_BUILD_ID_MAX + 1], name[4200];
	int err, n = 0;

	while ((err = ustack_procmaps__next(pm, addr, USTACK_VMA_EXEC, &v)) == 0) {
		printf("%08" PRIx64 "-%08" PRIx64 " %c%c%c%c %08" PRIx64 " %02x:%02x %" PRIu64 " ",
		       v.start, v.end, v.flags & USTACK_VMA_READ ? 'r' : '-',
		       v.flags & USTACK_VMA_WRITE ? 'w' : '-', v.flags & USTACK_VMA_EXEC ? 'x' : '-',
		       v.flags & USTACK_VMA_SHARED ? 's' : 'p', v.pgoff, v.dev_major, v.dev_minor,
		       v.inode);
		/* a path is any bytes: one line whatever it holds (out_names.h) */
		out_name_put(stdout, OUT_NAME_LINE, region_name(&v, name, sizeof(name)));
		printf(" %s\n", build_id_of(pm, v.file_id, bid));
		n++;
		if (v.end <= addr)
			break;
		addr = v.end;
	}
	if (err && err != -ENOENT) {
		cli_error("maps: pid %d: %s", pid, strerror(-err));
		return 1;
	}
	return n ? 0 : 1;
}

int cmd_maps(int argc, char **argv)
{
	struct ustack_procmaps_opts opts = { .sz = sizeof(opts) };
	struct ustack_procmaps *pm;
	unsigned long long pid = 0, addr;
	int have_pid = 0, first_addr = argc, status = 0;

	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-p") || !strcmp(argv[i], "--pid")) {
			if (i + 1 >= argc || cli_parse_u64(argv[i + 1], 10, &pid) || !pid || pid > 0x7fffffff) {
				cli_error("maps: -p needs a process id%s%s", i + 1 < argc ? ", not " : "",
					  i + 1 < argc ? argv[i + 1] : "");
				return 2;
			}
			have_pid = 1;
			i++;
		} else if (!strcmp(argv[i], "--text")) {
			opts.flags |= USTACK_PROCMAPS_FORCE_TEXT;
		} else if (!strcmp(argv[i], "--no-elf")) {
			opts.flags |= USTACK_PROCMAPS_NO_ELF;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			cli_error("maps: unknown option '%s' (see 'ustack maps --help')", argv[i]);
			return 2;
		} else {
			first_addr = i;
			break;
		}
	}
	if (!have_pid) {
		cli_error("maps: -p PID is required (see 'ustack maps --help')");
		return 2;
	}
	for (int i = first_addr; i < argc; i++) {
		if (cli_parse_u64(argv[i], 16, &addr)) {
			cli_error("maps: '%s' is not a hex address", argv[i]);
			return 2;
		}
	}
	pm = ustack_procmaps__open((int)pid, &opts);
	if (!pm) {
		if (errno == ESRCH)
			cli_error("maps: pid %llu: no such process", pid);
		else if (errno == EACCES || errno == EPERM)
			cli_error("maps: pid %llu: permission denied reading /proc/%llu/maps", pid, pid);
		else
			cli_error("maps: pid %llu: cannot read /proc/%llu/maps: %s", pid, pid, strerror(errno));
		return 1;
	}
	if (first_addr >= argc) {
		status = list_exec(pm, (int)pid);
		ustack_procmaps__close(pm);
		return status;
	}
	for (int i = first_addr; i < argc; i++) {
		struct ustack_resolved r;
		struct ustack_vma v;
		char bid[2 * USTACK_BUILD_ID_MAX + 1], name[4200];
		uint64_t a;
		int err;

		cli_parse_u64(argv[i], 16, &addr);
		a = addr;
		err = ustack_procmaps__resolve(pm, &a, 1, &r);
		if (err < 0) {
			cli_error("maps: pid %llu: 0x%llx: %s", pid, addr, strerror(-err));
			status = 1;
			break;
		}
		if (r.kind == USTACK_VMA_UNMAPPED || ustack_procmaps__query(pm, a, &v)) {
			printf("0x%" PRIx64 " - [not mapped] -\n", a);
			status = 1;
			continue;
		}
		if (r.file_id)
			printf("0x%" PRIx64 " 0x%" PRIx64 " ", a, r.offset);
		else
			printf("0x%" PRIx64 " - ", a);
		out_name_put(stdout, OUT_NAME_LINE, region_name(&v, name, sizeof(name)));
		printf(" %s\n", r.file_id ? build_id_of(pm, r.file_id, bid) : "-");
	}
	ustack_procmaps__close(pm);
	return status;
}
