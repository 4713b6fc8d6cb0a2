// SPDX-License-Identifier: MIT
/*
 * Probe names split (bpftrace's syntax, probe.h) and USDT argument specs
 * decoded (the x86-64 operands <sys/sdt.h> writes into its notes).
 * Nothing here reads a file.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"

/* the uapi x86-64 struct pt_regs, by byte offset */
enum {
	PR_R15 = 0, PR_R14 = 8, PR_R13 = 16, PR_R12 = 24, PR_RBP = 32, PR_RBX = 40,
	PR_R11 = 48, PR_R10 = 56, PR_R9 = 64, PR_R8 = 72, PR_RAX = 80, PR_RCX = 88,
	PR_RDX = 96, PR_RSI = 104, PR_RDI = 112, PR_RIP = 128, PR_RSP = 152,
};

static int set_err(char *err, size_t errlen, int ret, const char *fmt, const char *a,
		   const char *b)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, a, b);
	return ret;
}

/* an unsigned number, decimal or 0x hex, the whole of [s, e) */
static int parse_u64(const char *s, const char *e, uint64_t *v)
{
	int hex = e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	uint64_t x = 0;
	const char *p = s + (hex ? 2 : 0);

	if (p >= e)
		return -1;
	for (; p < e; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (hex && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (hex && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			return -1;
		if (x > (UINT64_MAX - d) / (hex ? 16 : 10))
			return -1;
		x = x * (hex ? 16 : 10) + d;
	}
	*v = x;
	return 0;
}

static int copy_field(char *dst, size_t size, const char *s, size_t n)
{
	if (!n || n >= size)
		return -1;
	memcpy(dst, s, n);
	dst[n] = 0;
	return 0;
}

/* SYMBOL[+OFF] or 0xADDR (uprobe, uretprobe) */
static int parse_symbol(const char *s, const char *all, struct ustack_probe_spec *spec,
			char *err, size_t errlen)
{
	const char *plus = strchr(s, '+');
	size_t n = plus ? (size_t)(plus - s) : strlen(s);
	uint64_t v;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (spec->kind == USTACK_PROBE_URETPROBE)
			return set_err(err, errlen, -EINVAL, "%s: a uretprobe takes a function "
				       "name, not an address%s", all, "");
		if (parse_u64(s, s + strlen(s), &v))
			return set_err(err, errlen, -EINVAL, "%s: bad address '%s'", all, s);
		spec->address = v;
		return 0;
	}
	if (copy_field(spec->symbol, sizeof(spec->symbol), s, n))
		return set_err(err, errlen, -EINVAL, "%s: %s", all,
			       n ? "function name too long" : "no function name");
	if (!plus)
		return 0;
	if (spec->kind == USTACK_PROBE_URETPROBE)
		return set_err(err, errlen, -EINVAL, "%s: a uretprobe is at the function's "
			       "return: no +OFFSET%s", all, "");
	if (strpbrk(spec->symbol, "*?["))
		return set_err(err, errlen, -EINVAL, "%s: +OFFSET needs one function, "
			       "not a wildcard%s", all, "");
	if (parse_u64(plus + 1, plus + strlen(plus), &v))
		return set_err(err, errlen, -EINVAL, "%s: bad offset '%s'", all, plus + 1);
	spec->offset = v;
	return 0;
}

int ustack_probe_parse(const char *s, struct ustack_probe_spec *spec, char *err, size_t errlen)
{
	const char *f[4];
	size_t len[4];
	int nf = 0;
	const char *p;

	memset(spec, 0, sizeof(*spec));
	if (!strncmp(s, "uprobe:", 7))
		spec->kind = USTACK_PROBE_UPROBE;
	else if (!strncmp(s, "uretprobe:", 10))
		spec->kind = USTACK_PROBE_URETPROBE;
	else if (!strncmp(s, "usdt:", 5))
		spec->kind = USTACK_PROBE_USDT;
	else
		return 0;
	/* fields split on every ':', as bpftrace splits them: a PATH
	 * holding ':' cannot be named */
	p = strchr(s, ':') + 1;
	for (;;) {
		const char *c = strchr(p, ':');

		if (nf == 4)
			return set_err(err, errlen, -EINVAL, "%s: too many ':' (a PATH cannot "
				       "hold ':')%s", s, "");
		f[nf] = p;
		len[nf++] = c ? (size_t)(c - p) : strlen(p);
		if (!c)
			break;
		p = c + 1;
	}
	if (copy_field(spec->path, sizeof(spec->path), f[0], len[0]))
		return set_err(err, errlen, -EINVAL, "%s: %s", s,
			       len[0] ? "PATH too long" : "no PATH");
	if (spec->kind == USTACK_PROBE_USDT) {
		int named = nf == 3; /* PROVIDER:NAME, else NAME of any provider */

		if (nf != 2 && nf != 3)
			return set_err(err, errlen, -EINVAL, "%s: want usdt:PATH:PROVIDER:NAME "
				       "or usdt:PATH:NAME (a PATH cannot hold ':')%s", s, "");
		if (named ? copy_field(spec->provider, sizeof(spec->provider), f[1], len[1])
			  : copy_field(spec->provider, sizeof(spec->provider), "*", 1))
			return set_err(err, errlen, -EINVAL, "%s: bad provider%s", s, "");
		if (copy_field(spec->name, sizeof(spec->name), f[nf - 1], len[nf - 1]))
			return set_err(err, errlen, -EINVAL, "%s: bad probe name%s", s, "");
		return 1;
	}
	if (nf != 2)
		return set_err(err, errlen, -EINVAL, "%s: want %s:PATH:SYMBOL (a PATH cannot "
			       "hold ':')", s, spec->kind == USTACK_PROBE_UPROBE ? "uprobe" : "uretprobe");
	if (parse_symbol(f[1], s, spec, err, errlen))
		return -EINVAL;
	return 1;
}

/* ---- USDT argument specs ------------------------------------------------ */

static const struct {
	const char *name[4]; /* 64, 32, 16, 8 bits */
	uint16_t off;
} regs[] = {
	{ { "rax", "eax", "ax", "al" }, PR_RAX }, { { "rbx", "ebx", "bx", "bl" }, PR_RBX },
	{ { "rcx", "ecx", "cx", "cl" }, PR_RCX }, { { "rdx", "edx", "dx", "dl" }, PR_RDX },
	{ { "rsi", "esi", "si", "sil" }, PR_RSI }, { { "rdi", "edi", "di", "dil" }, PR_RDI },
	{ { "rbp", "ebp", "bp", "bpl" }, PR_RBP }, { { "rsp", "esp", "sp", "spl" }, PR_RSP },
	{ { "r8", "r8d", "r8w", "r8b" }, PR_R8 }, { { "r9", "r9d", "r9w", "r9b" }, PR_R9 },
	{ { "r10", "r10d", "r10w", "r10b" }, PR_R10 }, { { "r11", "r11d", "r11w", "r11b" }, PR_R11 },
	{ { "r12", "r12d", "r12w", "r12b" }, PR_R12 }, { { "r13", "r13d", "r13w", "r13b" }, PR_R13 },
	{ { "r14", "r14d", "r14w", "r14b" }, PR_R14 }, { { "r15", "r15d", "r15w", "r15b" }, PR_R15 },
	{ { "rip", "eip", NULL, NULL }, PR_RIP },
};

/* %NAME at [s, e): the pt_regs offset of its 64-bit register, or -1 (the
 * high-byte registers %ah..%dh are not the low bits of theirs: refused) */
static int reg_offset(const char *s, const char *e)
{
	size_t n = (size_t)(e - s);

	if (n < 2 || s[0] != '%')
		return -1;
	s++, n--;
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int w = 0; w < 4; w++)
			if (regs[i].name[w] && strlen(regs[i].name[w]) == n &&
			    !memcmp(regs[i].name[w], s, n))
				return regs[i].off;
	return -1;
}

static int parse_s64(const char *s, const char *e, int64_t *v)
{
	int neg = s < e && *s == '-';
	uint64_t u;

	if (s < e && (*s == '-' || *s == '+'))
		s++;
	if (parse_u64(s, e, &u) || u > (uint64_t)INT64_MAX + neg)
		return -1;
	*v = neg ? (int64_t)(0 - u) : (int64_t)u;
	return 0;
}

/* one "SIZE@OPERAND" at [s, e) */
static int parse_arg(const char *s, const char *e, struct ustack_usdt_arg *a, const char **why)
{
	const char *at = memchr(s, '@', (size_t)(e - s)), *op, *lp;
	int64_t sz;
	int r;

	*why = "want SIZE@OPERAND";
	if (!at || parse_s64(s, at, &sz))
		return -1;
	*why = "size not 1, 2, 4 or 8 (signed: negative)";
	if (sz != 1 && sz != 2 && sz != 4 && sz != 8 && sz != -1 && sz != -2 && sz != -4 &&
	    sz != -8)
		return -1;
	memset(a, 0, sizeof(*a));
	a->size = (int8_t)sz;
	op = at + 1;
	*why = "bad operand";
	if (op < e && *op == '$') {
		a->kind = USTACK_USDT_ARG_CONST;
		return parse_s64(op + 1, e, &a->val);
	}
	if (op < e && *op == '%') {
		a->kind = USTACK_USDT_ARG_REG;
		*why = "unknown register";
		r = reg_offset(op, e);
		if (r == PR_RIP)
			*why = "%rip as a value is not known here";
		if (r < 0 || r == PR_RIP)
			return -1;
		a->reg = (uint16_t)r;
		return 0;
	}
	lp = memchr(op, '(', (size_t)(e - op));
	if (!lp || e[-1] != ')')
		return -1;
	a->kind = USTACK_USDT_ARG_DEREF;
	if (memchr(lp, ',', (size_t)(e - lp))) {
		*why = "index form disp(%base,%index,scale) not supported";
		return -1;
	}
	if (lp > op && parse_s64(op, lp, &a->val)) {
		*why = "displacement not a number (a symbol?)";
		return -1;
	}
	r = reg_offset(lp + 1, e - 1);
	*why = r == PR_RIP ? "RIP-relative operand not supported" : "unknown register";
	if (r < 0 || r == PR_RIP)
		return -1;
	a->reg = (uint16_t)r;
	return 0;
}

int ustack_usdt_parse_args(const char *s, struct ustack_usdt_arg *args, unsigned int max,
			   char *err, size_t errlen)
{
	unsigned int n = 0;

	for (;;) {
		const char *e, *why;
		char tok[64];

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return (int)n;
		e = s + strcspn(s, " \t");
		snprintf(tok, sizeof(tok), "%.*s", (int)(e - s < 60 ? e - s : 60), s);
		if (n == max)
			return set_err(err, errlen, -EBADMSG, "more than %s arguments (at '%s')",
				       max == USTACK_USDT_MAX_ARGS ? "12" : "the room for", tok);
		if (parse_arg(s, e, &args[n], &why))
			return set_err(err, errlen, -EBADMSG, "argument '%s': %s", tok, why);
		n++;
		s = e;
	}
}
