// SPDX-License-Identifier: MIT
/*
 * ustack sframe: dump, validate and query the .sframe section of an ELF file.
 * The dump mirrors `objdump --sframe` (same columns and value spelling) so
 * the two can be compared line by line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ustack/sframe.h>
#include "cli/cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack sframe dump FILE\n"
		"       ustack sframe lookup FILE ADDR...\n"
		"       ustack sframe validate FILE\n"
		"\n"
		"Read the .sframe section (SFrame v1, v2 or v3) of an ELF file.\n"
		"\n"
		"  dump      header, then every function and its rows, in the layout of\n"
		"            `objdump --sframe` (CFA sp+N/fp+N, FP/RA c+N/c-N, u = not saved,\n"
		"            f = fixed by the header; PCMASK functions show STARTPC[m] and\n"
		"            offsets in the block; attr \"S\" signal trampoline, \"F\" flexible\n"
		"            FDE, whose rules print as reg+N or (reg+N) for a load, U for an\n"
		"            RA padding word; \"RA undefined\" marks the outermost frame)\n"
		"  lookup    one line per ADDR (hex, the file's own virtual addresses):\n"
		"              0x<addr> cfa=<sp|fp><+|-><n> ra=<c<+|-><n>|u> fp=<c<+|-><n>|u>\n"
		"            followed by ' signal' for a signal trampoline;\n"
		"              0x<addr> outermost   (no caller: end of the stack)\n"
		"              0x<addr> fallback    (a rule SFrame rows cannot express, e.g.\n"
		"                                    a DRAP frame: unwind it another way)\n"
		"              0x<addr> none        (no row covers the address)\n"
		"  validate  check every function and row; print a summary\n"
		"\n"
		"Exit status 0 on success, 1 when the file cannot be read, has no .sframe\n"
		"section or the section is corrupt (the message names the FDE/FRE index\n"
		"and byte offset), 2 on a usage error.\n");
}

static void off_str(char *buf, size_t len, const char *base, int off)
{
	snprintf(buf, len, "%s%c%d", base, off < 0 ? '-' : '+', off < 0 ? -off : off);
}

/* FP / RA column of the dump, spelled as objdump does. */
static void rule_str(char *buf, size_t len, unsigned int rule, int off, int fixed)
{
	if (rule == USTACK_SFRAME_RULE_UNDEFINED)
		snprintf(buf, len, "U");
	else if (rule == USTACK_SFRAME_RULE_SAME)
		snprintf(buf, len, "u");
	else if (fixed)
		snprintf(buf, len, "f");
	else
		off_str(buf, len, "c", off);
}

/* Register of a flexible-FDE control word, spelled as objdump does. */
static void flex_base(char *buf, size_t len, unsigned int abi, unsigned int reg)
{
	unsigned int sp = abi == 3 ? 7 : 31, fp = abi == 3 ? 6 : 29;

	if (reg == sp)
		snprintf(buf, len, "sp");
	else if (reg == fp)
		snprintf(buf, len, "fp");
	else
		snprintf(buf, len, "r%u", reg);
}

static unsigned int word_u(const struct ustack_sframe_row *r, unsigned int i)
{
	unsigned int v = (unsigned int)r->words[i];

	return r->word_size >= 4 ? v : v & ((1u << (8 * r->word_size)) - 1);
}

/* One rule of a flexible FRE, from its raw data words: (control, offset)
 * or a single zero word (padding). Returns the number of words used. */
static unsigned int flex_rule(char *buf, size_t len, const struct ustack_sframe_row *r,
			      unsigned int i, unsigned int abi, const char *absent,
			      const char *padding)
{
	char base[16], val[40];
	unsigned int ctrl;

	if (i >= r->nr_words) {
		snprintf(buf, len, "%s", absent);
		return 0;
	}
	ctrl = word_u(r, i);
	if (!ctrl || i + 1 >= r->nr_words) {
		snprintf(buf, len, "%s", padding);
		return 1;
	}
	if (ctrl & 1)
		flex_base(base, sizeof(base), abi, ctrl >> 3);
	else
		snprintf(base, sizeof(base), "c");
	off_str(val, sizeof(val), base, r->words[i + 1]);
	if ((ctrl & 3) == 3)
		snprintf(buf, len, "(%s)", val);
	else
		snprintf(buf, len, "%s", val);
	return 2;
}

static const char *flag_names(unsigned int flags, char *buf, size_t len)
{
	static const char *names[] = { "SFRAME_F_FDE_SORTED", "SFRAME_F_FRAME_POINTER",
				       "SFRAME_F_FDE_FUNC_START_PCREL" };
	/* objdump puts each further flag on its own line, aligned. */
	static const char sep[] = ",\n           ";
	size_t n = 0;

	buf[0] = 0;
	for (unsigned int b = 0; b < 8; b++) {
		if (!(flags & (1u << b)))
			continue;
		if (b < 3)
			n += snprintf(buf + n, len - n, "%s%s", n ? sep : "", names[b]);
		else
			n += snprintf(buf + n, len - n, "%s0x%x", n ? sep : "", 1u << b);
		if (n >= len)
			break;
	}
	if (!buf[0])
		snprintf(buf, len, "NONE");
	return buf;
}

static const char *abi_name(unsigned int abi)
{
	switch (abi) {
	case 1: return "AARCH64 big-endian";
	case 2: return "AARCH64 little-endian";
	case 3: return "AMD64 little-endian";
	case 4: return "S390X big-endian";
	default: return "unknown";
	}
}

static struct ustack_sframe_file *open_file(const char *path)
{
	char err[256];
	struct ustack_sframe_file_opts so = { .sz = sizeof(so), .errbuf = err,
					      .errbuf_sz = sizeof(err) };
	struct ustack_sframe_file *f = ustack_sframe_file__open_opts(path, &so);

	if (!f)
		cli_error("%s: %s", path, err);
	return f;
}

static int check_file(struct ustack_sframe_file *f, const char *path)
{
	char err[256];

	if (ustack_sframe_file__validate(f, err, sizeof(err))) {
		cli_error("%s: .sframe: %s", path, err);
		return -1;
	}
	return 0;
}

static int do_dump(const char *path)
{
	struct ustack_sframe_header h;
	struct ustack_sframe_file *f;
	char flags[256];

	f = open_file(path);
	if (!f)
		return 1;
	if (check_file(f, path)) {
		ustack_sframe_file__close(f);
		return 1;
	}
	ustack_sframe_file__header(f, &h);
	printf("%s:\n\nContents of the SFrame section .sframe:\n  Header :\n\n", path);
	printf("    Version: SFRAME_VERSION_%u\n", h.version);
	printf("    Flags: %s\n", flag_names(h.flags, flags, sizeof(flags)));
	printf("    ABI: %s\n", abi_name(h.abi));
	if (h.fixed_fp_offset)
		printf("    CFA fixed FP offset: %d\n", h.fixed_fp_offset);
	if (h.fixed_ra_offset)
		printf("    CFA fixed RA offset: %d\n", h.fixed_ra_offset);
	printf("    Num FDEs: %u\n    Num FREs: %u\n", h.nr_fdes, h.nr_fres);
	printf("    FRE bytes: %u\n", h.fre_len);
	printf("    Section: addr 0x%llx, size %llu, file offset 0x%llx\n",
	       (unsigned long long)h.section_addr, (unsigned long long)h.section_size,
	       (unsigned long long)h.section_offset);
	printf("\n  Function Index :\n");

	for (unsigned int i = 0; i < h.nr_fdes; i++) {
		struct ustack_sframe_func fn;
		int mask;

		if (ustack_sframe_file__func(f, i, &fn))
			goto corrupt;
		mask = fn.pc_type == USTACK_SFRAME_PCMASK;
		printf("\n    func idx [%u]: pc = 0x%llx, size = %u bytes", i,
		       (unsigned long long)fn.start, fn.size);
		if (fn.signal || fn.fde_type)
			printf(", attr = \"%s%s\"", fn.signal ? "S" : "", fn.fde_type ? "F" : "");
		printf("\n");
		printf("    %-16s%-10s%-10s%-13s\n", mask ? "STARTPC[m]" : "STARTPC", "CFA", "FP", "RA");
		if (!fn.nr_rows)
			printf("    %016llx  RA undefined\n", (unsigned long long)fn.start);
		for (unsigned int j = 0; j < fn.nr_rows; j++) {
			struct ustack_sframe_row r;
			char cfa[48], fp[48], ra[48];

			if (ustack_sframe_file__func_row(f, i, j, &r))
				goto corrupt;
			if (r.flags & USTACK_SFRAME_ROW_OUTERMOST) {
				printf("    %016llx  RA undefined\n", (unsigned long long)r.start);
				continue;
			}
			if (fn.fde_type) {
				unsigned int k = flex_rule(cfa, sizeof(cfa), &r, 0, h.abi, "?", "?");

				k += flex_rule(ra, sizeof(ra), &r, k, h.abi, "f", "U");
				flex_rule(fp, sizeof(fp), &r, k, h.abi, "u", "u");
			} else {
				off_str(cfa, sizeof(cfa),
					r.cfa_reg == USTACK_SFRAME_REG_FP ? "fp" : "sp", r.cfa_off);
				rule_str(fp, sizeof(fp), r.fp_rule, r.fp_off,
					 h.fixed_fp_offset && r.fp_off == h.fixed_fp_offset);
				rule_str(ra, sizeof(ra), r.ra_rule, r.ra_off,
					 h.fixed_ra_offset && r.ra_off == h.fixed_ra_offset);
			}
			printf("    %016llx  %-9s %-9s %-13s%s\n", (unsigned long long)r.start, cfa, fp,
			       ra, (r.flags & USTACK_SFRAME_ROW_NEEDS_FALLBACK) ? " [fallback]" : "");
		}
	}
	ustack_sframe_file__close(f);
	return 0;
corrupt:
	check_file(f, path);
	ustack_sframe_file__close(f);
	return 1;
}

static int do_lookup(const char *path, int n, char **addrs)
{
	struct ustack_sframe_file *f;
	int status = 0;

	for (int i = 0; i < n; i++) {
		unsigned long long a;
		const char *s = addrs[i];

		if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
			s += 2;
		if (cli_parse_u64(s, 16, &a)) {
			cli_error("sframe lookup: '%s' is not a hex address", addrs[i]);
			return 2;
		}
	}
	f = open_file(path);
	if (!f)
		return 1;
	for (int i = 0; i < n; i++) {
		const char *s = addrs[i];
		struct ustack_sframe_row r;
		unsigned long long a;
		char cfa[24], ra[24], fp[24];
		int ret;

		if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
			s += 2;
		cli_parse_u64(s, 16, &a);
		ret = ustack_sframe_file__lookup(f, a, &r);
		if (ret == -ENOENT) {
			printf("0x%llx none\n", a);
			continue;
		}
		if (ret) {
			fflush(stdout);
			if (!check_file(f, path))
				cli_error("%s: .sframe: lookup of 0x%llx: %s", path, a, strerror(-ret));
			status = 1;
			break;
		}
		if (r.flags & USTACK_SFRAME_ROW_OUTERMOST) {
			printf("0x%llx outermost\n", a);
			continue;
		}
		if (r.flags & USTACK_SFRAME_ROW_NEEDS_FALLBACK) {
			/* The rule is not CFA = SP/FP + N with RA/FP on the stack:
			 * printing the row's fields would suggest one. */
			printf("0x%llx fallback\n", a);
			continue;
		}
		off_str(cfa, sizeof(cfa), r.cfa_reg == USTACK_SFRAME_REG_FP ? "fp" : "sp", r.cfa_off);
		rule_str(ra, sizeof(ra), r.ra_rule, r.ra_off, 0);
		rule_str(fp, sizeof(fp), r.fp_rule, r.fp_off, 0);
		printf("0x%llx cfa=%s ra=%s fp=%s%s\n", a, cfa, ra, fp,
		       (r.flags & USTACK_SFRAME_ROW_SIGNAL) ? " signal" : "");
	}
	ustack_sframe_file__close(f);
	return status;
}

static int do_validate(const char *path)
{
	struct ustack_sframe_header h;
	struct ustack_sframe_file *f = open_file(path);

	if (!f)
		return 1;
	if (check_file(f, path)) {
		ustack_sframe_file__close(f);
		return 1;
	}
	ustack_sframe_file__header(f, &h);
	printf("%s: .sframe v%u OK: %u functions, %u rows\n", path, h.version, h.nr_fdes, h.nr_fres);
	ustack_sframe_file__close(f);
	return 0;
}

int cmd_sframe(int argc, char **argv)
{
	const char *sub;

	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		}
	}
	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	sub = argv[1];
	if (!strcmp(sub, "dump") && argc == 3)
		return do_dump(argv[2]);
	if (!strcmp(sub, "validate") && argc == 3)
		return do_validate(argv[2]);
	if (!strcmp(sub, "lookup") && argc >= 4)
		return do_lookup(argv[2], argc - 3, argv + 3);
	usage(stderr);
	return 2;
}
