/* Fixture: an outermost frame (RA undefined) and a signal trampoline. */
	.text
	.globl	_start
	.type	_start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	xorl	%ebp, %ebp
	movq	%rsp, %rdi
	andq	$-16, %rsp
	call	entry
	hlt
	.cfi_endproc
	.size	_start, .-_start

	.globl	sigtramp
	.type	sigtramp, @function
	nop
sigtramp:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa_offset 160
	movq	$15, %rax
	syscall
	.cfi_endproc
	.size	sigtramp, .-sigtramp
	.section .note.GNU-stack,"",@progbits
