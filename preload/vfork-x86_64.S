/*
 * vfork() that tells the exec hook it runs in a vfork child.
 *
 * The child shares the parent's memory and stack, and the parent stays
 * suspended until the child execs or exits. The exec hook must therefore
 * not stand in for the program inside a vfork child; it looks at
 * toolrun_in_vfork_child, which this sets to 1 in the child. The parent
 * clears it when it resumes: the flag lives in the calling thread's TLS,
 * which the child shares.
 *
 * Like glibc's, it keeps the return address in a register across the
 * syscall, since the child may overwrite the stack slot that held it.
 */
	.text
	.globl	vfork
	.type	vfork, @function
	.hidden	toolrun_vfork_failed
	.p2align 4
vfork:
	.cfi_startproc
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	.cfi_register %rip, %rdi
	movl	$58, %eax		/* SYS_vfork */
	syscall
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rip, 0
	cmpq	$-4095, %rax
	jae	1f
	movq	toolrun_in_vfork_child@gottpoff(%rip), %rdx
	testq	%rax, %rax
	jnz	2f
	movl	$1, %fs:(%rdx)		/* child */
	ret
2:	movl	$0, %fs:(%rdx)		/* parent, once the child has gone */
	ret
1:	movq	%rax, %rdi
	jmp	toolrun_vfork_failed	/* sets errno, returns -1 */
	.cfi_endproc
	.size	vfork, .-vfork

	.section .note.GNU-stack,"",@progbits
