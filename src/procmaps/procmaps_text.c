// SPDX-License-Identifier: MIT
/*
 * The text form of /proc/PID/maps: the fallback when PROCMAP_QUERY is
 * missing, and the parser of recorded maps. Hostile input: every field is
 * range-checked, the table must be sorted and non-overlapping, and any
 * error names its line.
 *
 * Line layout (fs/proc/task_mmu.c, show_vma_header_prefix + seq_pad):
 *   START-END PERM PGOFF MAJ:MIN INODE ' ' [pad to column 72] ' ' NAME
 * All numbers hex but INODE (decimal). The name starts at column
 * max(prefix length, 72) + 1, which keeps leading spaces of a file name;
 * lines written with another width (32-bit kernels, hand edits) fall back
 * to "skip all blanks".
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"
#include "procmaps/procmaps.h"

#define PM_NAME_COLUMN 72
#define PM_DELETED_SUFFIX " (deleted)"

static __thread unsigned int pm_error_line;

void pm_set_error_line(unsigned int line)
{
	pm_error_line = line;
}

unsigned int ustack_procmaps__error_line(void)
{
	return pm_error_line;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parse hex digits at *p (at least one, at most 16: no overflow). */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0, d;

	while (s < end && (d = hexval(*s)) >= 0) {
		if (++n > 16)
			return -1;
		v = (v << 4) | (uint64_t)d;
		s++;
	}
	if (!n)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

static int parse_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		s++;
		n++;
	}
	if (!n)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

static const struct {
	const char *name;
	uint32_t kind;
} special_names[] = {
	{ "[heap]", USTACK_VMA_HEAP },
	{ "[stack]", USTACK_VMA_STACK },
	{ "[vdso]", USTACK_VMA_VDSO },
	{ "[vvar]", USTACK_VMA_VVAR },
	{ "[vvar_vclock]", USTACK_VMA_VVAR },
	{ "[vsyscall]", USTACK_VMA_VSYSCALL },
};

uint32_t pm_kind_of_name(const char *name, size_t len, uint32_t flags, int file_backed)
{
	uint32_t anon = (flags & USTACK_VMA_EXEC) ? USTACK_VMA_JIT : USTACK_VMA_ANON;

	if (file_backed)
		return USTACK_VMA_FILE;
	if (!name || !len)
		return anon;
	for (size_t i = 0; i < ARRAY_SIZE(special_names); i++)
		if (strlen(special_names[i].name) == len && !memcmp(special_names[i].name, name, len))
			return special_names[i].kind;
	/* "[stack:TID]" of kernels before 4.5 */
	if (len > 7 && !memcmp(name, "[stack:", 7))
		return USTACK_VMA_STACK;
	/* prctl(PR_SET_VMA_ANON_NAME) names and shared anonymous memory */
	if ((len > 6 && !memcmp(name, "[anon:", 6)) || (len > 12 && !memcmp(name, "[anon_shmem:", 12)))
		return anon;
	return USTACK_VMA_SPECIAL;
}

static int bad_line(struct ustack_procmaps *pm, unsigned int line, const char *why)
{
	/* the failure's message goes one way: the caller's errbuf when it
	 * gave one, else (callers from before 0.2) the print callback */
	if (pm->errbuf && pm->errbuf_sz)
		snprintf(pm->errbuf, pm->errbuf_sz, "%s: line %u: %s", pm->name, line, why);
	else
		pr_warn("%s: line %u: %s\n", pm->name, line, why);
	pm_set_error_line(line);
	return -EBADMSG;
}

static int push_vma(struct ustack_procmaps *pm, struct pm_vma **vmas, size_t *nr, size_t *cap,
		    const struct pm_vma *v)
{
	if (*nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct pm_vma *n = realloc(*vmas, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		*vmas = n;
		*cap = ncap;
	}
	(*vmas)[(*nr)++] = *v;
	return 0;
}

/* Parse one line [s, e) into *v; name bytes into *name / *name_len. */
static const char *parse_line(const char *s, const char *e, struct pm_vma *v, const char **name,
			      size_t *name_len)
{
	const char *p = s, *q;
	uint64_t maj, min;
	size_t prefix, col;

	memset(v, 0, sizeof(*v));
	v->file = -1;
	if (parse_hex(&p, e, &v->start) || expect(&p, e, '-') || parse_hex(&p, e, &v->end))
		return "bad address range";
	if (expect(&p, e, ' ') || e - p < 4)
		return "missing permissions";
	if (p[0] == 'r') v->flags |= USTACK_VMA_READ; else if (p[0] != '-') return "bad permissions";
	if (p[1] == 'w') v->flags |= USTACK_VMA_WRITE; else if (p[1] != '-') return "bad permissions";
	if (p[2] == 'x') v->flags |= USTACK_VMA_EXEC; else if (p[2] != '-') return "bad permissions";
	if (p[3] == 's') v->flags |= USTACK_VMA_SHARED; else if (p[3] != 'p') return "bad permissions";
	p += 4;
	if (expect(&p, e, ' ') || parse_hex(&p, e, &v->pgoff))
		return "bad offset";
	if (expect(&p, e, ' ') || parse_hex(&p, e, &maj) || expect(&p, e, ':') ||
	    parse_hex(&p, e, &min) || maj > 0xffffffffu || min > 0xffffffffu)
		return "bad device";
	v->dev_major = (uint32_t)maj;
	v->dev_minor = (uint32_t)min;
	if (expect(&p, e, ' ') || parse_dec(&p, e, &v->inode))
		return "bad inode";
	if (v->start >= v->end)
		return "empty or inverted address range";

	*name = NULL;
	*name_len = 0;
	if (p == e)
		return NULL;
	if (*p != ' ')
		return "junk after inode";
	p++;
	prefix = (size_t)(p - s);
	col = (prefix > PM_NAME_COLUMN ? prefix : PM_NAME_COLUMN) + 1;
	q = p;
	while (q < e && *q == ' ' && (size_t)(q - s) < col)
		q++;
	if (q < e && (size_t)(q - s) < col) {
		/* not the kernel's 64-bit layout: the name starts at the first non-blank */
	} else if (q == e) {
		return NULL; /* blanks only: no name */
	}
	*name = q;
	*name_len = (size_t)(e - q);
	return NULL;
}

/* Classify, strip " (deleted)", intern the name and bind the file entry. */
static int finish_vma(struct ustack_procmaps *pm, struct pm_vma *v, const char *name, size_t len)
{
	int file_backed = v->inode || v->dev_major || v->dev_minor || (len && name[0] == '/');
	size_t sl = sizeof(PM_DELETED_SUFFIX) - 1;

	if (file_backed && len > sl && !memcmp(name + len - sl, PM_DELETED_SUFFIX, sl)) {
		v->flags |= USTACK_VMA_DELETED;
		len -= sl;
	}
	v->kind = pm_kind_of_name(name, len, v->flags, file_backed);
	if (len) {
		v->name = pm_intern(pm, name, len);
		if (!v->name)
			return -ENOMEM;
	}
	if (!file_backed)
		v->pgoff = 0;
	if (v->kind == USTACK_VMA_FILE || v->kind == USTACK_VMA_VDSO) {
		v->file = pm_file_lookup(pm, v->kind, v->dev_major, v->dev_minor, v->inode,
					 v->name, v->start, v->end);
		if (v->file < 0)
			return v->file;
		if (v->kind == USTACK_VMA_FILE && (v->flags & USTACK_VMA_DELETED))
			pm->files[v->file].flags |= USTACK_VMA_DELETED;
	}
	return 0;
}

int pm_text_parse(struct ustack_procmaps *pm, const char *buf, size_t len)
{
	struct pm_vma *vmas = NULL;
	size_t nr = 0, cap = 0;
	const char *s = buf, *end = buf + len;
	unsigned int line = 0;
	uint64_t prev_end = 0;
	int err = 0;

	pm_set_error_line(0);
	while (s < end) {
		const char *e = memchr(s, '\n', (size_t)(end - s));
		const char *why, *name;
		size_t name_len;
		struct pm_vma v;

		if (!e)
			e = end;
		line++;
		why = parse_line(s, e, &v, &name, &name_len);
		if (why) {
			err = bad_line(pm, line, why);
			goto fail;
		}
		if (nr && v.start < prev_end) {
			err = bad_line(pm, line, "mapping overlaps or is out of order");
			goto fail;
		}
		if (memchr(name ? name : "", '\0', name_len)) {
			err = bad_line(pm, line, "NUL byte in name");
			goto fail;
		}
		err = finish_vma(pm, &v, name, name_len);
		if (!err)
			err = push_vma(pm, &vmas, &nr, &cap, &v);
		if (err)
			goto fail;
		prev_end = v.end;
		s = e + 1;
	}
	free(pm->vmas);
	pm->vmas = vmas;
	pm->nr_vmas = nr;
	pm->cap_vmas = cap;
	return 0;
fail:
	free(vmas);
	return err;
}

/* Read the whole text: seq_file returns about a page per read(). */
int pm_text_read(struct ustack_procmaps *pm)
{
	size_t len = 0;

	if (pm->maps_fd < 0)
		return -EINVAL;
	if (lseek(pm->maps_fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (pm->text_cap - len < 4096) {
			size_t ncap = pm->text_cap ? pm->text_cap * 2 : 65536;
			char *t = realloc(pm->text, ncap);

			if (!t)
				return -ENOMEM;
			pm->text = t;
			pm->text_cap = ncap;
		}
		n = read(pm->maps_fd, pm->text + len, pm->text_cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return pm_text_parse(pm, pm->text, len);
}

/* First VMA whose end is above @addr. */
size_t pm_text_lower_bound(const struct ustack_procmaps *pm, uint64_t addr)
{
	return pm_vmas_lower_bound(pm->vmas, pm->nr_vmas, addr);
}

const struct pm_vma *pm_text_find(const struct ustack_procmaps *pm, uint64_t addr)
{
	return pm_vmas_find(pm->vmas, pm->nr_vmas, addr);
}
