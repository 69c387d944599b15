	.text
	.globl	pac_func
	.type	pac_func, %function
pac_func:
	paciasp
	bti	c
	stp	x29, x30, [sp, #-16]!
	mov	x29, sp
	adr	x0, data_word
	adrp	x1, data_word
	ldr	x2, data_word
	ldr	w3, data_word
	ldrsw	x4, data_word
	prfm	pldl1keep, data_word
	ldr	q0, data_word
	cbz	x0, 1f
	cbnz	w1, 1f
	tbz	w2, #3, 1f
	tbnz	x3, #63, 1f
	b.eq	1f
	b.ne	1f
	bl	callee
	blr	x16
	blraa	x16, x17
	blraaz	x16
	swp	x0, x1, [x2]
	ldapr	x0, [x1]
	casal	x0, x1, [x2]
1:	ldp	x29, x30, [sp], #16
	autiasp
	retaa
	.size	pac_func, .-pac_func
	.globl	callee
	.type	callee, %function
callee:
	bti	c
	br	x16
	braa	x16, x17
	braaz	x16
	ret
	ret	x17
	retab
	nop
	b	callee
	svc	#0
	brk	#0
	udf	#0
	.size	callee, .-callee
	.p2align	3
data_word:
	.quad	0x1122334455667788
