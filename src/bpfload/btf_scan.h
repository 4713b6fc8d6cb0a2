/* SPDX-License-Identifier: MIT */
/*
 * A bounded scanner of raw BTF (the format of /sys/kernel/btf/vmlinux) that
 * answers one question: does a FUNC of a given name exist, and how many
 * parameters has its FUNC_PROTO. The BPF backend asks it about a few kernel
 * functions before it loads its program. libbpf's own parse of the same
 * file (read 4 KiB a read() into fresh memory, then indexed) costs 50-100
 * ms in a new process; this walk of the mapped file a few, or ~30 ms where
 * the kernel (before 6.16) cannot map it and it is read.
 *
 * Every offset and length is checked against the blob: a blob this scanner
 * does not fully understand (a kind it does not know, a record or name
 * outside its section, a FUNC whose type is not a FUNC_PROTO) gives
 * -EBADMSG, never a guess, and the caller asks libbpf instead.
 */
#ifndef USTACK_BPFLOAD_BTF_SCAN_H
#define USTACK_BPFLOAD_BTF_SCAN_H

#include <stddef.h>

/* One question: @name in, the rest out. */
struct ustack_btf_func {
	const char *name;
	int found;              /* a FUNC of that name exists */
	unsigned int id;        /* when found: its type id (the lowest, if several) */
	unsigned int proto_id;  /* when found: its FUNC_PROTO's type id */
	unsigned int nr_params; /* when found: its FUNC_PROTO's vlen */
};

/*
 * Answer @n questions from the raw BTF blob at @btf (@len bytes, no
 * alignment needed).
 * @return 0 (each @funcs[i] filled in), or -EBADMSG: the blob is corrupt
 * or of a form this scanner does not know (then no answer is to be used).
 */
int ustack_btf_scan_funcs(const void *btf, size_t len, struct ustack_btf_func *funcs, size_t n);

/* A BTF file's bytes, read whole. */
struct ustack_btf_file {
	const void *data;
	size_t len;
	size_t map_len; /* of the mapping that holds them */
};

/*
 * Read the file at @path whole: mapped where the file can be (the kernel's
 * /sys/kernel/btf/vmlinux can since 6.16), else read into an anonymous
 * mapping grown by doubling (a sysfs file's size can be wrong), 256 MiB at
 * most.
 * @return 0, or a negative errno (-EFBIG past 256 MiB).
 */
int ustack_btf_file__open(struct ustack_btf_file *f, const char *path);

/* Release what ustack_btf_file__open() gave; a zeroed @f is a no-op. */
void ustack_btf_file__close(struct ustack_btf_file *f);

/*
 * ustack_btf_file__open() and ustack_btf_scan_funcs() in one.
 * @return 0, a negative errno from reading @path, or -EBADMSG.
 */
int ustack_btf_scan_file(const char *path, struct ustack_btf_func *funcs, size_t n);

#endif
