/* SPDX-License-Identifier: MIT */
/* Shared helpers of the ustack command. The CLI includes only <ustack/...>. */
#ifndef USTACK_CLI_CLI_H
#define USTACK_CLI_CLI_H

#include <stdio.h>
#include <string.h>

#include <ustack/trace.h>
#include <ustack/ustack.h>

/* One subcommand: argv[0] is the subcommand name. Returns the exit status. */
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_sframe(int argc, char **argv);
int cmd_maps(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_probe(int argc, char **argv);

/* Print "ustack: <message>" to stderr. */
__attribute__((format(printf, 1, 2))) void cli_error(const char *fmt, ...);

/* Is argv[i] "-h" or "--help"? */
int cli_is_help(const char *arg);

/* Parse a hex (0x optional) or decimal u64; 0 on success, -EINVAL otherwise. */
int cli_parse_u64(const char *s, int base, unsigned long long *out);
/* Room for @need bytes in the buffer *@p of *@cap bytes (doubling from
 * 256). 0, or -1 with *@p and *@cap unchanged. */
int cli_grow(void **p, size_t *cap, size_t need);

/* A file name that is already in brackets ("[vdso]", "[heap]"): an
 * unnamed frame there is shown as it is, not as "[[vdso]]" */
static inline int cli_is_bracketed(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n >= 2 && s[0] == '[' && s[n - 1] == ']';
}

/* A recorded user frame's offset is where its code was (the sample's pc, a
 * signal frame's resume point), not a return address: symbols and lines
 * are looked up at it, not one byte before. */
static inline int cli_frame_exact(const struct ustack_trace_frame *f)
{
	return (f->flags & USTACK_TRACE_FRAME_EXACT_PC) || f->method == USTACK_METHOD_REGS ||
	       f->method == USTACK_METHOD_SIGNAL;
}

/* Give the output stream @f (a regular file, pipe or socket) a 64 KiB buffer
 * of its own, once per process (the buffer is static, so @f may be stdout);
 * a terminal keeps its default. glibc's setvbuf() with no buffer keeps its
 * 4 KiB default, and a file written 4 KiB at a time costs the kernel about
 * six times what 64 KiB writes do (dd bs=4k against bs=64k, 1.2 MB). Larger
 * buffers measured no better. Call before the first write. */
void cli_output_buffer(FILE *f);

/* A subcommand that a later issue implements: says so and exits 2. */
int cli_not_yet(const char *cmd);

#endif
