/* landings.S: hand-written assembly whose jumps land where no decoding
 * sees them (landings.c): each line a line of its own, so that each
 * instruction is a line site. */
	.text
#if defined(__x86_64__)

/* long duff(long n): adds 1 n times, 8 at a time through an unrolled run,
 * the first round entered in its middle at n % 8 from its end (Duff's
 * device): each step is 4 bytes. */
	.globl duff
	.type duff, @function
duff:
	xorl %eax, %eax
	movq %rdi, %rcx
	andq $7, %rcx
	shrq $3, %rdi
	leaq 2f(%rip), %rdx
	shlq $2, %rcx
	subq %rcx, %rdx
	jmp *%rdx
1:
	addq $1, %rax
	addq $1, %rax
	addq $1, %rax
	addq $1, %rax
	addq $1, %rax
	addq $1, %rax
	addq $1, %rax
	addq $1, %rax
2:
	subq $1, %rdi
	jns 1b
	ret
	.size duff, .-duff

/* long in_text(long i): (i & 3) + 1 additions, falling through from
 * the case a jump table kept in .text, after the code, leads to. */
	.globl in_text
	.type in_text, @function
in_text:
	xorl %eax, %eax
	andq $3, %rdi
	leaq .Ltab(%rip), %rdx
	movslq (%rdx,%rdi,4), %rcx
	addq %rdx, %rcx
	jmp *%rcx
.Lc3:
	incq %rax
.Lc2:
	incq %rax
.Lc1:
	incq %rax
.Lc0:
	incq %rax
	ret
	.p2align 2
.Ltab:
	.long .Lc0-.Ltab, .Lc1-.Ltab, .Lc2-.Ltab, .Lc3-.Ltab
	.size in_text, .-in_text

/* is_even: ZF set when rdi is even. Its result is in the flags: nothing
 * between the test and the return may change them (the jump makes the
 * next line a block of its own, counted by a probe of its own). */
	.type is_even, @function
is_even:
	testq $1, %rdi
	jmp 6f
6:
	movl $0, %eax
	ret
	.size is_even, .-is_even

/* long evens(long n): how many i below n is_even says are even. */
	.globl evens
	.type evens, @function
evens:
	pushq %rbx
	pushq %r12
	pushq %r13
	movq %rdi, %r12
	xorl %ebx, %ebx
	xorl %r13d, %r13d
3:
	cmpq %r12, %r13
	jge 5f
	movq %r13, %rdi
	call is_even
	jne 4f
	incq %rbx
4:
	incq %r13
	jmp 3b
5:
	movq %rbx, %rax
	popq %r13
	popq %r12
	popq %rbx
	ret
	.size evens, .-evens

#elif defined(__aarch64__)

	.globl duff
	.type duff, %function
duff:
	mov x1, #0
	and x2, x0, #7
	lsr x0, x0, #3
	adr x3, 2f
	sub x3, x3, x2, lsl #2
	br x3
1:
	add x1, x1, #1
	add x1, x1, #1
	add x1, x1, #1
	add x1, x1, #1
	add x1, x1, #1
	add x1, x1, #1
	add x1, x1, #1
	add x1, x1, #1
2:
	subs x0, x0, #1
	b.pl 1b
	mov x0, x1
	ret
	.size duff, .-duff

	.globl in_text
	.type in_text, %function
in_text:
	mov x1, #0
	and x0, x0, #3
	adr x2, .Ltab
	ldrsw x3, [x2, x0, lsl #2]
	add x3, x2, x3
	br x3
.Lc3:
	add x1, x1, #1
.Lc2:
	add x1, x1, #1
.Lc1:
	add x1, x1, #1
.Lc0:
	add x1, x1, #1
	mov x0, x1
	ret
	.p2align 2
.Ltab:
	.word .Lc0-.Ltab, .Lc1-.Ltab, .Lc2-.Ltab, .Lc3-.Ltab
	.size in_text, .-in_text

	.type is_even, %function
is_even:
	tst x0, #1
	b 6f
6:
	mov w0, #0
	ret
	.size is_even, .-is_even

	.globl evens
	.type evens, %function
evens:
	stp x29, x30, [sp, #-48]!
	stp x19, x20, [sp, #16]
	str x21, [sp, #32]
	mov x19, x0
	mov x20, #0
	mov x21, #0
3:
	cmp x21, x19
	b.ge 5f
	mov x0, x21
	bl is_even
	b.ne 4f
	add x20, x20, #1
4:
	add x21, x21, #1
	b 3b
5:
	mov x0, x20
	ldr x21, [sp, #32]
	ldp x19, x20, [sp, #16]
	ldp x29, x30, [sp], #48
	ret
	.size evens, .-evens
#endif
	.section .note.GNU-stack,"",%progbits
