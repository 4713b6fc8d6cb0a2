// SPDX-License-Identifier: MIT
/*
 * A frame whose CFA is rbx-based, as in glibc's lazy-binding trampoline
 * _dl_runtime_resolve_* (push rbx; mov rsp, rbx; and $-64, rsp): its CFI
 * says CFA = rbx + 16, so unwinding through it needs the caller's rbx,
 * which the frames below it may have saved on the stack:
 *
 *   main -> rec_rbx_outer -> rec_rbx_realign (asm, CFA = rbx + 16)
 *        -> rec_rbx_leaf_saves: saves and clobbers rbx (its CFI says where
 *           rbx is kept) -> getppid x 3
 *        -> rec_rbx_leaf_keeps: leaves rbx alone (rbx still the value
 *           rec_rbx_realign set) -> getppid x 5
 *
 * Before ustack followed rbx, such a frame ended the walk (no-info): a
 * python3 sample inside _dl_fixup, 1 in ~2000, did not reach _start.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "rec_common.h"

REC_FN void rec_rbx_leaf_saves(void)
{
	/* rbx is used here: the compiler saves it (push rbx, with CFI) */
	__asm__ volatile("mov $0x1234, %%ebx" ::: "rbx");
	rec_marker(3);
}

REC_FN void rec_rbx_leaf_keeps(void)
{
	rec_marker(5);
}

void rec_rbx_realign(void (*fn)(void));
__asm__(".text\n"
	".globl rec_rbx_realign\n"
	".type rec_rbx_realign, @function\n"
	"rec_rbx_realign:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rbx, 0\n"
	"	mov %rsp, %rbx\n"
	".cfi_def_cfa_register %rbx\n"
	"	and $-64, %rsp\n"
	"	sub $192, %rsp\n"
	"	call *%rdi\n"
	"	mov %rbx, %rsp\n"
	".cfi_def_cfa_register %rsp\n"
	"	pop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %rbx\n"
	"	ret\n"
	".cfi_endproc\n"
	".size rec_rbx_realign, .-rec_rbx_realign\n");

REC_FN void rec_rbx_outer(void (*fn)(void))
{
	rec_rbx_realign(fn);
	rec_sink++;
}

int main(void)
{
	rec_warm();
	rec_rbx_outer(rec_rbx_leaf_saves);
	rec_rbx_outer(rec_rbx_leaf_keeps);
	printf("rec_rbx: done\n");
	return 0;
}
