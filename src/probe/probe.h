/* SPDX-License-Identifier: MIT */
/*
 * User-space probes: the names `record -e` takes for them, and where each
 * one is in a file (bpftrace's syntax):
 *
 *   uprobe:PATH:SYMBOL[+OFFSET]   entry of SYMBOL (wildcards * and ?: every
 *                                 matching function), or OFFSET bytes in
 *   uprobe:PATH:0xADDRESS         the instruction at that virtual address
 *   uretprobe:PATH:SYMBOL         return of SYMBOL (payload: its return value)
 *   usdt:PATH:PROVIDER:NAME       a USDT probe of the file's .note.stapsdt
 *                                 (payload: its arguments); PROVIDER and
 *                                 NAME may hold wildcards
 *
 * PATH is a file, or a library name without a '/' ("libc", "libssl.so.3")
 * found as bpftrace finds it: first among the files the target processes
 * map, then through ld.so.cache and the standard library directories.
 * With a target process (-p PID) every path is resolved **inside its mount
 * namespace**, through /proc/PID/root, so that a process in a container is
 * probed in the file it runs, never in the host's file of the same name.
 *
 * Everything read here (ELF files, their notes, ld.so.cache, /proc) is
 * untrusted: bounds-checked, and bad input is an error naming the file and
 * offset.
 */
#ifndef USTACK_PROBE_H
#define USTACK_PROBE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ustack_probe_kind {
	USTACK_PROBE_UPROBE = 1,
	USTACK_PROBE_URETPROBE = 2,
	USTACK_PROBE_USDT = 3,
};

/* A probe name as given, split (no file is read). */
struct ustack_probe_spec {
	enum ustack_probe_kind kind;
	char path[PATH_MAX];  /* PATH as given (a file or a library name) */
	char symbol[256];     /* uprobe/uretprobe: SYMBOL (may hold * ?), "" with an address */
	uint64_t offset;      /* uprobe: +OFFSET */
	uint64_t address;     /* uprobe: 0xADDRESS (symbol "") */
	char provider[128];   /* usdt */
	char name[128];       /* usdt */
};

/* Where a USDT argument is (x86-64 operand of its spec "SIZE@OPERAND"). */
enum ustack_usdt_arg_kind {
	USTACK_USDT_ARG_CONST = 1, /* $imm: val */
	USTACK_USDT_ARG_REG = 2,   /* %reg: the register */
	USTACK_USDT_ARG_DEREF = 3, /* disp(%reg): the memory at reg + val */
};

struct ustack_usdt_arg {
	uint8_t kind;    /* enum ustack_usdt_arg_kind */
	int8_t size;     /* bytes 1, 2, 4, 8; negative: signed (sign-extended) */
	uint16_t reg;    /* REG, DEREF: byte offset of the register in the
	                    uapi x86-64 struct pt_regs (%rip: offsetof rip,
	                    the address of the next instruction is not known
	                    here: RIP-relative operands are refused) */
	int64_t val;     /* CONST: the value; DEREF: the displacement */
};

#define USTACK_USDT_MAX_ARGS 12

/* One place a probe is attached to: a (file, offset) pair. */
struct ustack_probe_target {
	enum ustack_probe_kind kind;
	char path[PATH_MAX];    /* the file as opened from here (/proc/PID/root/...
	                           for a target in another mount namespace) */
	char shown[PATH_MAX];   /* the file as the target sees it (for messages) */
	uint64_t dev, ino;      /* of the file opened (st_dev as stat gives it) */
	uint64_t offset;        /* file offset of the probed instruction */
	uint64_t ref_ctr_offset; /* USDT semaphore: its file offset, 0: none */
	char symbol[256];       /* the function ("malloc"), or "PROVIDER:NAME" */
	uint32_t nr_args;       /* USDT: its arguments */
	struct ustack_usdt_arg args[USTACK_USDT_MAX_ARGS];
};

/* Split @s into @spec. 1: @s is a probe name (uprobe:, uretprobe:,
 * usdt:); 0: it is not (another kind of event); -EINVAL with @err: a probe
 * name, but malformed ("usdt:PATH:NAME" without a provider, "+x"). */
int ustack_probe_parse(const char *s, struct ustack_probe_spec *spec, char *err, size_t errlen);

/* Every place @spec names, into *@out (malloc'd, *@nr entries). @pid: the
 * process whose mount namespace and mappings resolve PATH (0: this one's,
 * for -a and a command not started yet). 0; -ENOENT with @err one line
 * naming the file and the symbol or probe that is not there ("no symbol
 * 'mallocc' in /usr/lib/x86_64-linux-gnu/libc.so.6 (.symtab, .dynsym)",
 * "no library 'libfoo' in process 123's mappings, ld.so.cache or the
 * library directories"); -EBADMSG with @err naming the file and offset of
 * bad ELF or note data; other -errno with @err. */
int ustack_probe_resolve(const struct ustack_probe_spec *spec, pid_t pid,
			 struct ustack_probe_target **out, size_t *nr, char *err, size_t errlen);

/* The USDT argument spec of one note ("-4@%eax 8@-8(%rbp) 4@$5") into
 * @args. The number of arguments, or -EBADMSG (@err says where). */
int ustack_usdt_parse_args(const char *s, struct ustack_usdt_arg *args, unsigned int max,
			   char *err, size_t errlen);

/* The value of @a from the user registers @regs (uapi struct pt_regs) with
 * @read (reads @len bytes of the probed process's memory at @addr: 0 or
 * -errno); sign- or zero-extended to 64 bits. 0 or -errno. For user space
 * (the copy backend); the BPF program decodes the same struct itself. */
int ustack_usdt_arg_value(const struct ustack_usdt_arg *a, const void *regs,
			  int (*read)(void *ctx, uint64_t addr, void *buf, size_t len), void *ctx,
			  uint64_t *value);

#endif
