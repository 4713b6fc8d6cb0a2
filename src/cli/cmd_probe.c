// SPDX-License-Identifier: MIT
/*
 * ustack probe [-p PID] SPEC...: where each probe name would attach, the
 * answer `record -e SPEC` acts on (as `bpftrace -l` answers "what does
 * this name?").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out_names.h"
#include "probe/probe.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ustack probe [-p PID] SPEC...\n"
		"\n"
		"Resolve each probe name as `ustack record -e SPEC` would and print one line\n"
		"per place it attaches to:\n"
		"  KIND PATH 0xFILE_OFFSET SYMBOL [ref_ctr=0xOFFSET] [args=ARG,...]\n"
		"KIND is uprobe, uretprobe or usdt; PATH the file as the process sees it;\n"
		"SYMBOL the function (or func+0xOFF for an address, PROVIDER:NAME for a USDT\n"
		"probe); ref_ctr the file offset of a USDT probe's semaphore; each argument\n"
		"as SIZE@OPERAND with a negative size for a signed one (-4@%%rax, 8@-8(%%rbp),\n"
		"4@$5; registers are named by their 64-bit name).\n"
		"\n"
		"SPEC: uprobe:PATH:SYMBOL[+OFFSET], uprobe:PATH:0xADDRESS, uretprobe:PATH:SYMBOL,\n"
		"      usdt:PATH:PROVIDER:NAME, usdt:PATH:NAME (docs/cli/record.md, \"Probes\")\n"
		"\n"
		"options:\n"
		"  -p, --pid PID   resolve inside PID's mount namespace and mappings\n"
		"  -h, --help      this help\n");
}

static const char *reg_name(unsigned int off)
{
	static const char *const names[] = {
		"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax",
		"rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss",
	};

	return off % 8 == 0 && off / 8 < sizeof(names) / sizeof(names[0]) ? names[off / 8] : "?";
}

static void print_arg(const struct ustack_usdt_arg *a)
{
	switch (a->kind) {
	case USTACK_USDT_ARG_CONST:
		printf("%d@$%" PRId64, a->size, a->val);
		break;
	case USTACK_USDT_ARG_REG:
		printf("%d@%%%s", a->size, reg_name(a->reg));
		break;
	case USTACK_USDT_ARG_DEREF:
		printf("%d@%" PRId64 "(%%%s)", a->size, a->val, reg_name(a->reg));
		break;
	default:
		printf("?");
	}
}

static void print_target(const struct ustack_probe_target *t)
{
	static const char *const kinds[] = { "?", "uprobe", "uretprobe", "usdt" };

	printf("%s ", kinds[t->kind <= 3 ? t->kind : 0]);
	out_name_put(stdout, OUT_NAME_LINE, t->shown);
	printf(" 0x%" PRIx64 " ", t->offset);
	out_name_put(stdout, OUT_NAME_LINE, t->symbol);
	if (t->ref_ctr_offset)
		printf(" ref_ctr=0x%" PRIx64, t->ref_ctr_offset);
	for (uint32_t i = 0; i < t->nr_args; i++) {
		printf(i ? "," : " args=");
		print_arg(&t->args[i]);
	}
	printf("\n");
}

static int resolve_one(const char *s, pid_t pid)
{
	struct ustack_probe_spec spec;
	struct ustack_probe_target *v;
	char err[PATH_MAX + 256];
	size_t nr;
	int ret = ustack_probe_parse(s, &spec, err, sizeof(err));

	if (ret == 0) {
		cli_error("%s: not a probe name (uprobe:, uretprobe:, usdt:)", s);
		return -EINVAL;
	}
	if (ret < 0) {
		cli_error("%s", err);
		return ret;
	}
	ret = ustack_probe_resolve(&spec, pid, &v, &nr, err, sizeof(err));
	if (ret) {
		cli_error("%s: %s", s, err);
		return ret;
	}
	for (size_t i = 0; i < nr; i++)
		print_target(&v[i]);
	free(v);
	return 0;
}

int cmd_probe(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long pid = 0;
	int c, bad = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "+p:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || *end || pid <= 0 || pid > INT32_MAX) {
				cli_error("probe: bad pid '%s'", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (resolve_one(argv[i], (pid_t)pid))
			bad = 1;
	return bad;
}
