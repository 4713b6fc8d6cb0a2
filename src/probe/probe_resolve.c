// SPDX-License-Identifier: MIT
/*
 * Where a probe name is: its file (inside the target's root), then the
 * functions or USDT sites it names, as (file offset, semaphore offset)
 * pairs the kernel's uprobe takes. Symbols and notes come from a file
 * anyone may have written: offsets are translated only through the
 * file's own PT_LOAD segments and refused where none covers them.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "probe/probe.h"
#include "probe/probe_internal.h"

struct resolve {
	const struct ustack_probe_spec *spec;
	struct ustack_elf *elf;
	struct ustack_probe_target proto; /* kind, path, shown, dev, ino */
	struct ustack_probe_target *v;
	size_t nr, cap;
	char *err;
	size_t errlen;
	int ret;
};

static struct ustack_probe_target *add_target(struct resolve *r)
{
	if (r->nr == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 8;
		struct ustack_probe_target *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->nr] = r->proto;
	return &r->v[r->nr++];
}

/* ---- the file -------------------------------------------------------------- */

/* @spec->path as a path from here (@open) and as the target sees it (@shown) */
static int locate_file(const struct ustack_probe_spec *spec, pid_t pid, char *open_path,
		       char *shown, char *err, size_t errlen)
{
	char root[32] = "";
	int ret;

	if (pid > 0) {
		struct stat st;

		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
		/* a process that is gone (or not ours to look into) has no
		 * root: say so, rather than that its file is missing */
		if (stat(root, &st)) {
			int e = errno;

			snprintf(err, errlen, "process %d: %s", (int)pid,
				 e == ENOENT ? "no such process" : strerror(e));
			return -e;
		}
	}
	if (!strchr(spec->path, '/')) {
		ret = ustack_lib_find(spec->path, pid, root, shown, PATH_MAX, err, errlen);
		if (ret)
			return ret;
	} else if (spec->path[0] == '/') {
		snprintf(shown, PATH_MAX, "%s", spec->path);
	} else if (pid > 0) {
		/* relative: to the target's working directory, as it would
		 * open the name itself */
		char cwd[PATH_MAX], link[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
		n = readlink(link, cwd, sizeof(cwd) - 1);
		if (n < 0) {
			snprintf(err, errlen, "%s: process %d's working directory: %s", spec->path,
				 (int)pid, strerror(errno));
			return -errno;
		}
		cwd[n] = 0;
		if ((size_t)snprintf(shown, PATH_MAX, "%s/%s", cwd, spec->path) >= PATH_MAX)
			return -ENAMETOOLONG;
	} else {
		snprintf(shown, PATH_MAX, "%s", spec->path);
	}
	if ((size_t)snprintf(open_path, PATH_MAX, "%s%s", root, shown) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int open_file(struct resolve *r, const char *open_path, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(open_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", r->proto.shown, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	r->elf = ustack_elf__open_fd(fd, open_path);
	close(fd);
	if (!r->elf) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", r->proto.shown,
			 e == EBADMSG ? "not an ELF64 little-endian file" : strerror(e));
		return -e;
	}
	if (ustack_elf__machine(r->elf) != EM_X86_64) {
		snprintf(err, errlen, "%s: not an x86-64 file", r->proto.shown);
		return -ENOEXEC;
	}
	r->proto.dev = st.st_dev;
	r->proto.ino = st.st_ino;
	return 0;
}

/* ---- functions ------------------------------------------------------------- */

/* @name without its "@VERSION" / "@@VERSION" is @pattern */
static int sym_matches(const char *pattern, const char *name, int wild)
{
	char buf[256];
	const char *at = strchr(name, '@');

	if (at) {
		size_t n = (size_t)(at - name);

		if (n >= sizeof(buf))
			return 0;
		memcpy(buf, name, n);
		buf[n] = 0;
		name = buf;
	}
	return wild ? !fnmatch(pattern, name, 0) : !strcmp(pattern, name);
}

/* among aliases of one address the name shown: global, then fewer leading
 * underscores (malloc, not __libc_malloc), then shorter */
static int name_better(const struct ustack_elf_symbol *s, const char *cur, uint8_t cur_bind)
{
	size_t us = strspn(s->name, "_"), uc = strspn(cur, "_");

	if ((s->bind == STB_GLOBAL) != (cur_bind == STB_GLOBAL))
		return s->bind == STB_GLOBAL;
	if (us != uc)
		return us < uc;
	return strcspn(s->name, "@") < strcspn(cur, "@+");
}

struct func_ctx {
	struct resolve *r;
	int wild;
	uint8_t *binds; /* per target: the binding of the name shown */
	size_t nbinds;
};

/* NAME (without @VERSION), +0xOFF when the probe is inside it */
static void set_symbol(struct ustack_probe_target *t, const char *name, uint64_t off)
{
	int n = snprintf(t->symbol, sizeof(t->symbol), "%.*s", (int)strcspn(name, "@"), name);

	if (off && n > 0 && (size_t)n < sizeof(t->symbol))
		snprintf(t->symbol + n, sizeof(t->symbol) - (size_t)n, "+0x%llx",
			 (unsigned long long)off);
}

static int func_one(void *ctx, const struct ustack_elf_symbol *s)
{
	struct func_ctx *c = ctx;
	struct resolve *r = c->r;
	const struct ustack_probe_spec *spec = r->spec;
	struct ustack_probe_target *t;
	uint64_t off;

	if (!sym_matches(spec->symbol, s->name, c->wild))
		return 0;
	if (spec->offset && spec->offset >= s->size) {
		snprintf(r->err, r->errlen, "%s: %s+0x%llx is past the end of %s (%llu bytes)",
			 r->proto.shown, spec->symbol, (unsigned long long)spec->offset,
			 spec->symbol, (unsigned long long)s->size);
		return -ERANGE;
	}
	/* the address the symbol says, then its place in the file: only
	 * a PT_LOAD segment says where code of the file is loaded from */
	if (ustack_elf__vaddr_to_offset(r->elf, s->value + spec->offset, &off)) {
		snprintf(r->err, r->errlen, "%s: %s at 0x%llx is in no loaded segment",
			 r->proto.shown, s->name, (unsigned long long)(s->value + spec->offset));
		return -EBADMSG;
	}
	for (size_t i = 0; i < r->nr; i++) {
		if (r->v[i].offset == off) {
			/* the same place under another name or from the other
			 * table: one probe */
			if (name_better(s, r->v[i].symbol, c->binds[i])) {
				set_symbol(&r->v[i], s->name, spec->offset);
				c->binds[i] = s->bind;
			}
			return 0;
		}
	}
	t = add_target(r);
	if (!t)
		return -ENOMEM;
	if (c->nbinds < r->cap) {
		uint8_t *b = realloc(c->binds, r->cap);

		if (!b)
			return -ENOMEM;
		c->binds = b;
		c->nbinds = r->cap;
	}
	t->offset = off;
	set_symbol(t, s->name, spec->offset);
	c->binds[r->nr - 1] = s->bind;
	return 0;
}

static int resolve_funcs(struct resolve *r)
{
	struct func_ctx c = { .r = r, .wild = !!strpbrk(r->spec->symbol, "*?[") };
	struct ustack_elf_section s;
	int ret = ustack_elf__for_each_func(r->elf, func_one, &c);

	free(c.binds);
	if (ret < 0 && ret != -ENOENT)
		return ret;
	if (!r->nr) {
		int sym = !ustack_elf__section(r->elf, ".symtab", &s);
		int dyn = !ustack_elf__section(r->elf, ".dynsym", &s);

		snprintf(r->err, r->errlen, "no function %s'%s' in %s (%s)",
			 c.wild ? "matching " : "", r->spec->symbol, r->proto.shown,
			 sym && dyn ? ".symtab, .dynsym" : sym ? ".symtab" :
			 dyn ? ".dynsym only: stripped" : "no symbol table");
		return -ENOENT;
	}
	return 0;
}

static int resolve_address(struct resolve *r)
{
	struct ustack_probe_target *t;
	const char *name;
	uint64_t off, start;

	if (ustack_elf__vaddr_to_offset(r->elf, r->spec->address, &off)) {
		snprintf(r->err, r->errlen, "no address 0x%llx in %s: in no loaded segment",
			 (unsigned long long)r->spec->address, r->proto.shown);
		return -ENOENT;
	}
	t = add_target(r);
	if (!t)
		return -ENOMEM;
	t->offset = off;
	if (!ustack_elf__symbolize(r->elf, r->spec->address, &name, &start))
		snprintf(t->symbol, sizeof(t->symbol), "%.*s+0x%llx", (int)strcspn(name, "@"),
			 name, (unsigned long long)(r->spec->address - start));
	else
		snprintf(t->symbol, sizeof(t->symbol), "0x%llx",
			 (unsigned long long)r->spec->address);
	return 0;
}

/* ---- USDT sites ------------------------------------------------------------ */

struct usdt_ctx {
	struct resolve *r;
	int have_base;
	uint64_t base; /* .stapsdt.base as linked */
};

static int usdt_one(void *ctx, const struct ustack_usdt_note *n)
{
	struct usdt_ctx *c = ctx;
	struct resolve *r = c->r;
	struct ustack_probe_target *t;
	uint64_t pc = n->pc, sem = n->semaphore, off, sem_off = 0;
	char why[128];
	int nargs;

	if (fnmatch(r->spec->provider, n->provider, 0) || fnmatch(r->spec->name, n->name, 0))
		return 0;
	/* prelink moved the file: the note holds the old addresses, the
	 * distance .stapsdt.base moved says by how much */
	if (c->have_base) {
		pc += c->base - n->base;
		if (sem)
			sem += c->base - n->base;
	}
	if (ustack_elf__vaddr_to_offset(r->elf, pc, &off) ||
	    (sem && ustack_elf__vaddr_to_offset(r->elf, sem, &sem_off))) {
		int pc_bad = ustack_elf__vaddr_to_offset(r->elf, pc, &off) != 0;

		snprintf(r->err, r->errlen, "%s: .note.stapsdt+0x%llx (%s:%s): %s 0x%llx in no "
			 "loaded segment", r->proto.shown, (unsigned long long)n->off, n->provider,
			 n->name, pc_bad ? "pc" : "semaphore",
			 (unsigned long long)(pc_bad ? pc : sem));
		return -EBADMSG;
	}
	t = add_target(r);
	if (!t)
		return -ENOMEM;
	nargs = ustack_usdt_parse_args(n->args, t->args, USTACK_USDT_MAX_ARGS, why, sizeof(why));
	if (nargs < 0) {
		snprintf(r->err, r->errlen, "%s: .note.stapsdt+0x%llx (%s:%s): %s", r->proto.shown,
			 (unsigned long long)n->off, n->provider, n->name, why);
		return nargs;
	}
	t->nr_args = (uint32_t)nargs;
	t->offset = off;
	t->ref_ctr_offset = sem_off;
	snprintf(t->symbol, sizeof(t->symbol), "%s:%s", n->provider, n->name);
	return 0;
}

static int resolve_usdt(struct resolve *r)
{
	struct usdt_ctx c = { .r = r };
	struct ustack_elf_section notes, base;
	uint64_t bad = 0;
	int ret = ustack_elf__section(r->elf, ".note.stapsdt", &notes);

	if (ret == -ENOENT || (!ret && !notes.data)) {
		snprintf(r->err, r->errlen, "no USDT probes in %s (no .note.stapsdt)",
			 r->proto.shown);
		return -ENOENT;
	}
	if (ret)
		goto bad;
	if (!ustack_elf__section(r->elf, ".stapsdt.base", &base)) {
		c.have_base = 1;
		c.base = base.addr;
	}
	ret = ustack_usdt_notes_walk(notes.data, notes.size, usdt_one, &c, &bad);
	if (ret == -EBADMSG && !r->err[0])
		goto bad;
	if (ret)
		return ret;
	if (!r->nr) {
		snprintf(r->err, r->errlen, "no USDT probe %s:%s in %s (.note.stapsdt)",
			 r->spec->provider, r->spec->name, r->proto.shown);
		return -ENOENT;
	}
	return 0;
bad:
	snprintf(r->err, r->errlen, "%s: .note.stapsdt+0x%llx: malformed note", r->proto.shown,
		 (unsigned long long)bad);
	return -EBADMSG;
}

int ustack_probe_resolve(const struct ustack_probe_spec *spec, pid_t pid,
			 struct ustack_probe_target **out, size_t *nr, char *err, size_t errlen)
{
	struct resolve r = { .spec = spec, .err = err, .errlen = errlen };
	int ret;

	*out = NULL;
	*nr = 0;
	if (err && errlen)
		err[0] = 0;
	r.proto.kind = spec->kind;
	ret = locate_file(spec, pid, r.proto.path, r.proto.shown, err, errlen);
	if (!ret)
		ret = open_file(&r, r.proto.path, err, errlen);
	if (!ret) {
		if (spec->kind == USTACK_PROBE_USDT)
			ret = resolve_usdt(&r);
		else if (!spec->symbol[0])
			ret = resolve_address(&r);
		else
			ret = resolve_funcs(&r);
	}
	ustack_elf__close(r.elf);
	if (ret) {
		if (err && errlen && !err[0])
			snprintf(err, errlen, "%s: %s", spec->path, strerror(-ret));
		free(r.v);
		return ret;
	}
	*out = r.v;
	*nr = r.nr;
	return 0;
}
