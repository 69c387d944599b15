	.text
	.globl	traps
	.type	traps, @function
traps:
	endbr64
	pushq	%rbp
	movq	%rsp, %rbp
	vzeroupper
	vzeroall
	vmovdqa	table(%rip), %ymm0
	vpbroadcastd	table(%rip), %ymm1
	vpshufd	$0x1b, table(%rip), %xmm2
	vpalignr	$8, table(%rip), %xmm3, %xmm3
	vmovaps	%zmm2, table(%rip)
	vpaddd	table(%rip){1to16}, %zmm1, %zmm1
	vmovaps	64(%rsp), %zmm0
	vpperm	table(%rip), %xmm6, %xmm3, %xmm0
	vphaddwq	%xmm3, %xmm3
	bextr	$0x1234, table(%rip), %eax
	rdpkru
	wrpkru
	adcx	%rcx, %rax
	adox	table(%rip), %rdx
	rdpid	%rax
	rdseed	%edx
	rdrand	%eax
	rdsspq	%rax
	incsspq	%rcx
	saveprevssp
	rdfsbase	%rax
	wrgsbase	%rbx
	xbegin	1f
	xend
1:	jrcxz	2f
	jecxz	2f
	loop	2f
	loope	2f
	loopne	2f
	je	2f
	jg	1b
	jmp	2f
	call	*%rax
	call	*8(%rax,%rcx,8)
	call	*table(%rip)
	call	*%fs:16
	notrack jmp	*%rax
	jmp	*table(%rip)
	bnd jmp	2f
	.byte	0x67
	call	2f
	lea	table(%rip), %rdi
	movl	$1, table(%rip)
	cmpl	$7, table(%rip)
	movabsq	0x1122334455667788, %rax
	movq	%fs:0x28, %rax
	pause
	syscall
	nopw	0x0(%rax,%rax,1)
	xchg	%ax, %ax
2:	popq	%rbp
	ret
	.size	traps, .-traps

	.globl	traps2
	.type	traps2, @function
traps2:
	endbr32
	ret	$16
	repz ret
	bnd ret
	int3
	int	$0x80
	ud2
	hlt
	.size	traps2, .-traps2
	.p2align 6
table:
	.zero	64
