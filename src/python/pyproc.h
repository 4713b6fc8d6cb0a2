/* SPDX-License-Identifier: MIT */
/*
 * The found interpreter (struct ustack_py_proc), shared by the finder
 * (pyframes.c) and the walk (pywalk.c), and a constructor without a
 * process for the fuzz target and tests: a layout and addresses given.
 */
#ifndef USTACK_PYTHON_PYPROC_H
#define USTACK_PYTHON_PYPROC_H

#include <stdint.h>

#include "python/pyframes.h"
#include "python/pylayout.h"

struct ustack_py_proc {
	struct ustack_py_layout lay;
	uint32_t py_version;           /* Py_Version: 0x030b02f0 is 3.11.2 final */
	uint64_t runtime;              /* &_PyRuntime in the process */
	/* the type objects a code object, its strings and its line table
	 * must point to (0: not checked) */
	uint64_t code_type, str_type, bytes_type;
	uint64_t eval_lo, eval_hi;
	uint64_t eval_cold_lo, eval_cold_hi; /* its .cold part (0, 0: none found) */
	char desc[160];
};

/* A proc from a layout and addresses, no process looked at (malloc'd,
 * ustack_py_proc__free()); NULL with errno ENOMEM */
struct ustack_py_proc *ustack_py_proc__new(const struct ustack_py_layout *lay, uint32_t py_version,
					   uint64_t runtime, uint64_t code_type, uint64_t str_type,
					   uint64_t bytes_type);

/* The line of byte offset @addrq in a 3.11+ location table (@tab, @len
 * bytes), counted from @firstlineno: 0 when the range has no line (a
 * "no location" entry), -ENOENT when @addrq is past the table, -EBADMSG
 * when the table is cut inside an entry */
int ustack_py_line_of(const uint8_t *tab, size_t len, int firstlineno, int64_t addrq, int *line);

/*
 * The cold part of a function the compiler split (pyeval_cold.c): @code,
 * @len bytes of the hot part at @lo; @starts the sorted start addresses
 * of the file's FDEs (.eh_frame_hdr). The function most of the hot
 * part's rel32 jumps reach inside, not at its start, at least 4 of them:
 * [*@cold_lo, *@cold_hi) up to the next start. 0; -ENOENT: none;
 * -EBADMSG: @starts not sorted; -ENOMEM.
 */
int ustack_py_eval_cold(const uint8_t *code, size_t len, uint64_t lo, const uint64_t *starts,
			size_t nstarts, uint64_t *cold_lo, uint64_t *cold_hi);

struct ustack_elf;
/*
 * The FDE start addresses of @elf's .eh_frame_hdr search table (link-time
 * addresses, in the table's order, malloc'd into *@out, *@n of them): 0;
 * -ENOENT: no such table, or not in the encodings every toolchain here
 * writes; -EBADMSG: its count is 0 or runs past the section; -ENOMEM.
 */
int ustack_py_fde_starts(struct ustack_elf *elf, uint64_t **out, size_t *n);

#endif
