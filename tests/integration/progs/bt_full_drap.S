/* SPDX-License-Identifier: MIT */
/*
 * bf_drap_spin(flag): spins until *flag != 0 in a frame whose CFA is
 * rbx-based, as in ld.so's _dl_runtime_resolve and gcc's DRAP functions
 * (stack realigned). backtrace_full.sh assembles it without SFrame.
 */
	.text
	.globl bf_drap_spin
	.type bf_drap_spin, @function
bf_drap_spin:
	.cfi_startproc
	push %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	mov %rsp, %rbx
	.cfi_def_cfa_register rbx
	and $-64, %rsp
	sub $64, %rsp
	.globl bf_drap_loop
bf_drap_loop:			/* the spin: the handler walks only from here */
1:	pause
	cmpl $0, (%rdi)
	je 1b
	.globl bf_drap_loop_end
bf_drap_loop_end:
	mov %rbx, %rsp
	.cfi_def_cfa_register rsp
	pop %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size bf_drap_spin, .-bf_drap_spin
	.section .note.GNU-stack,"",@progbits
