// SPDX-License-Identifier: MIT
/*
 * Which CPython a process runs and where (pyframes.h): its python3.X
 * executable or libpython3.X.so mapping from /proc/PID/maps, the ELF
 * symbols of that file plus the mapping's load bias, the version word
 * Py_Version read from the process and checked against the file's name,
 * and the layout (pylayout.c) checked against the process before any
 * frame is read with it.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "python/pyproc.h"

#define PY_MAPS_MAX (16u << 20)

struct py_mapping {
	uint64_t start, end, pgoff;
	int minor;
	char path[4096];
};

/* "python3.11" or "libpython3.11.so[.1.0]": the minor version, else -1 */
static int py_name_minor(const char *base, int *is_lib)
{
	const char *s = base;
	char *end;
	long minor;

	*is_lib = !strncmp(s, "lib", 3);
	if (*is_lib)
		s += 3;
	if (strncmp(s, "python3.", 8) || !isdigit((unsigned char)s[8]))
		return -1;
	minor = strtol(s + 8, &end, 10);
	if (minor > 99)
		return -1;
	if (*is_lib ? strncmp(end, ".so", 3) || (end[3] && end[3] != '.') : *end != 0)
		return -1;
	return (int)minor;
}

static char *read_maps(pid_t pid, size_t *len)
{
	char path[64], *buf = NULL;
	size_t cap = 0, n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			char *nb = cap >= PY_MAPS_MAX ? NULL : realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				free(buf);
				close(fd);
				errno = cap >= PY_MAPS_MAX ? E2BIG : ENOMEM;
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (!r)
			break;
		n += r;
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* The interpreter's mapping: libpython3.X.so when mapped (it holds the
 * runtime, the executable is a stub), else the python3.X executable; the
 * first mapping of that file (its lowest address). 0 or -ENOENT */
static int find_mapping(const char *maps, struct py_mapping *out)
{
	int best = 0; /* 2: a library, 1: an executable */

	for (const char *line = maps; *line;) {
		const char *eol = strchr(line, '\n');
		unsigned long long start, end, pgoff, inode;
		char perms[8], dev[16];
		int pos = 0, is_lib, minor;
		size_t plen;

		if (!eol)
			eol = line + strlen(line);
		/* most processes run no Python: a line without the name costs
		 * a byte scan, not a sscanf() (a snapshot of any process asks) */
		if (!memmem(line, (size_t)(eol - line), "python3.", 8)) {
			line = *eol ? eol + 1 : eol;
			continue;
		}
		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %n", &start, &end, perms, &pgoff, dev,
			   &inode, &pos) >= 6 && pos > 0 && line + pos < eol && line[pos] == '/') {
			plen = eol - (line + pos);
			if (plen < sizeof(out->path)) {
				char path[4096];
				const char *base;

				memcpy(path, line + pos, plen);
				path[plen] = 0;
				base = strrchr(path, '/') + 1;
				minor = py_name_minor(base, &is_lib);
				if (minor >= 0 && 1 + is_lib > best) {
					best = 1 + is_lib;
					out->start = start;
					out->end = end;
					out->pgoff = pgoff;
					out->minor = minor;
					memcpy(out->path, path, plen + 1);
				}
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	return best ? 0 : -ENOENT;
}

enum { SYM_RUNTIME, SYM_VERSION, SYM_EVAL, SYM_CODE_TYPE, SYM_STR_TYPE, SYM_BYTES_TYPE,
       SYM_EVAL_COLD, SYM_NR };

struct py_syms {
	uint64_t v[SYM_NR];   /* link-time addresses, 0: absent */
	uint64_t eval_size, cold_size;
};

static void scan_symtab(struct ustack_elf *elf, const char *tab, const char *strtab, struct py_syms *s)
{
	static const char *names[SYM_NR] = { "_PyRuntime", "Py_Version", "_PyEval_EvalFrameDefault",
				       "PyCode_Type", "PyUnicode_Type", "PyBytes_Type",
				       "_PyEval_EvalFrameDefault.cold" };
	struct ustack_elf_section sym, str;

	if (ustack_elf__section(elf, tab, &sym) || ustack_elf__section(elf, strtab, &str) ||
	    !sym.data || !str.data)
		return;
	for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sym.size; off += sizeof(Elf64_Sym)) {
		Elf64_Sym e;

		memcpy(&e, sym.data + off, sizeof(e));
		if (!e.st_value || e.st_shndx == SHN_UNDEF || e.st_name >= str.size)
			continue;
		const char *nm = (const char *)str.data + e.st_name;
		size_t room = str.size - e.st_name;

		for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			size_t l = strlen(names[i]);
			uint64_t *dst = &s->v[i];

			if (room <= l || memcmp(nm, names[i], l + 1) || *dst)
				continue;
			*dst = e.st_value;
			if (i == SYM_EVAL)
				s->eval_size = e.st_size;
			if (i == SYM_EVAL_COLD)
				s->cold_size = e.st_size;
		}
	}
}

static void py_desc(struct ustack_py_proc *p, const char *path)
{
	uint32_t v = p->py_version;
	unsigned int level = v >> 4 & 15, serial = v & 15;
	char rel[16] = "";

	if (level != 0xf)
		snprintf(rel, sizeof(rel), "%s%u", level == 0xa ? "a" : level == 0xb ? "b" : "rc", serial);
	snprintf(p->desc, sizeof(p->desc), "CPython %u.%u.%u%s (%.100s)", v >> 24, v >> 16 & 0xff,
		 v >> 8 & 0xff, rel, path);
}

struct ustack_py_proc *ustack_py_proc__new(const struct ustack_py_layout *lay, uint32_t py_version,
					   uint64_t runtime, uint64_t code_type, uint64_t str_type,
					   uint64_t bytes_type)
{
	struct ustack_py_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->lay = *lay;
	p->py_version = py_version;
	p->runtime = runtime;
	p->code_type = code_type;
	p->str_type = str_type;
	p->bytes_type = bytes_type;
	py_desc(p, "no file");
	return p;
}

/* The layout of the running version, checked: 0 or -ENOTSUP / -EFAULT */
static int py_layout(struct ustack_py_proc *p, int minor, ustack_py_read_fn read, void *ctx,
		     const char *path, char *err, size_t errlen)
{
	uint8_t dbg[USTACK_PY_DEBUG_OFFSETS_LEN];
	char why[200];
	int e;

	if (minor < 13)
		return ustack_py_layout__table(minor, &p->lay);
	if (read(ctx, p->runtime, dbg, sizeof(dbg))) {
		snprintf(err, errlen, "%s: _PyRuntime at 0x%llx cannot be read", path,
			 (unsigned long long)p->runtime);
		return -EFAULT;
	}
	e = ustack_py_layout__from_debug_offsets(dbg, sizeof(dbg), p->py_version, &p->lay, why,
						 sizeof(why));
	if (e)
		snprintf(err, errlen, "%s: %s", path, why);
	return e;
}

/* The first interpreter and its first thread state must read as the
 * layout says: the thread state points back to its interpreter */
static int py_check(struct ustack_py_proc *p, ustack_py_read_fn read, void *ctx, const char *path,
		    char *err, size_t errlen)
{
	uint64_t interp = 0, ts = 0, back = 0;

	if (read(ctx, p->runtime + p->lay.rt_interp_head, &interp, 8) || !interp) {
		snprintf(err, errlen, "%s: no interpreter in _PyRuntime at 0x%llx (not started yet, or ended)",
			 path, (unsigned long long)p->runtime);
		return -EAGAIN;
	}
	if (!read(ctx, interp + p->lay.is_threads_head, &ts, 8) && !ts) {
		/* the interpreter made, its first thread state not yet */
		snprintf(err, errlen, "%s: no thread state in the first interpreter yet", path);
		return -EAGAIN;
	}
	if (read(ctx, interp + p->lay.is_threads_head, &ts, 8) || !ts ||
	    read(ctx, ts + p->lay.ts_interp, &back, 8) || back != interp) {
		snprintf(err, errlen, "%s: Py_Version 0x%x but the thread state at 0x%llx does not read as 3.%d's",
			 path, p->py_version, (unsigned long long)ts, p->lay.minor);
		return -ENOTSUP;
	}
	return 0;
}

/* The eval function's cold part: its .cold symbol, else found from the
 * hot part's jumps (a stripped build); none found leaves 0, 0 */
static void eval_cold(struct ustack_elf *elf, struct py_syms *s, uint64_t *lo, uint64_t *hi)
{
	uint64_t off, *starts = NULL;
	const uint8_t *data;
	size_t size, n;

	*lo = *hi = 0;
	if (s->v[SYM_EVAL_COLD] && s->cold_size) {
		*lo = s->v[SYM_EVAL_COLD];
		*hi = *lo + s->cold_size;
		return;
	}
	if (!s->v[SYM_EVAL] || !s->eval_size ||
	    ustack_elf__vaddr_to_offset(elf, s->v[SYM_EVAL], &off))
		return;
	data = ustack_elf__data(elf, &size);
	if (!data || off > size || s->eval_size > size - off || ustack_py_fde_starts(elf, &starts, &n))
		return;
	if (ustack_py_eval_cold(data + off, s->eval_size, s->v[SYM_EVAL], starts, n, lo, hi))
		*lo = *hi = 0;
	free(starts);
}

static int py_open(pid_t pid, const char *root, const struct py_mapping *m, struct py_syms *s,
		   uint64_t *bias, uint64_t cold[2], char *err, size_t errlen)
{
	char file[8192];
	struct ustack_elf *elf;
	uint64_t vaddr;
	int e;

	/* A live process's mapping is opened through map_files: the file it
	 * really mapped, whatever its root (a chroot's maps paths are the
	 * reader's, which its root does not have) or mount namespace says;
	 * by path under its root only where map_files is refused (not root) */
	elf = NULL;
	if (pid > 0 && (!root || !*root)) {
		snprintf(file, sizeof(file), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		elf = ustack_elf__open(file);
		if (!elf)
			snprintf(file, sizeof(file), "/proc/%d/root%s", (int)pid, m->path);
	} else {
		/* no process (a core): the file at the path it names */
		snprintf(file, sizeof(file), "%s%s", root ? root : "", m->path);
	}
	if (!elf)
		elf = ustack_elf__open(file);
	if (!elf) {
		e = -errno;
		snprintf(err, errlen, "%s: %s", m->path, strerror(-e));
		return e;
	}
	memset(s, 0, sizeof(*s));
	scan_symtab(elf, ".dynsym", ".dynstr", s);
	scan_symtab(elf, ".symtab", ".strtab", s);
	e = ustack_elf__offset_to_vaddr(elf, m->pgoff, &vaddr);
	eval_cold(elf, s, &cold[0], &cold[1]);
	ustack_elf__close(elf);
	if (e) {
		snprintf(err, errlen, "%s: mapped at file offset 0x%llx, which no PT_LOAD holds", m->path,
			 (unsigned long long)m->pgoff);
		return -ENOTSUP;
	}
	*bias = m->start - vaddr;
	if (!s->v[SYM_RUNTIME] || !s->v[SYM_VERSION]) {
		snprintf(err, errlen, "%s: no symbol %s (a stripped build?): its frames cannot be found",
			  m->path, s->v[SYM_RUNTIME] ? "Py_Version" : "_PyRuntime");
		return -ENOTSUP;
	}
	return 0;
}

/* The CPython of the process whose mappings @maps lists (the text of
 * /proc/PID/maps); @pid 0: none alive, its files opened by path */
static int find_in(pid_t pid, const char *maps, const char *root, ustack_py_read_fn read,
		   void *ctx, struct ustack_py_proc **out, char *err, size_t errlen)
{
	struct py_mapping *m = calloc(1, sizeof(*m));
	struct ustack_py_proc *p = calloc(1, sizeof(*p));
	struct py_syms s;
	uint64_t bias, cold[2];
	int e;

	*out = NULL;
	if (!m || !p) {
		e = -ENOMEM;
		snprintf(err, errlen, "pid %d: out of memory", (int)pid);
		goto out;
	}
	e = find_mapping(maps, m);
	if (e) {
		snprintf(err, errlen, "pid %d: no CPython (no python3.X or libpython3.X.so mapped)", (int)pid);
		goto out;
	}
	/* 3.16+ are let through to their _Py_DebugOffsets, whose version
	 * this build knows or refuses with what it says */
	if (m->minor < 11) {
		snprintf(err, errlen, "%s: CPython 3.%d is not supported (3.11-3.15)", m->path, m->minor);
		e = -ENOTSUP;
		goto out;
	}
	e = py_open(pid, root, m, &s, &bias, cold, err, errlen);
	if (e)
		goto out;
	p->runtime = s.v[SYM_RUNTIME] + bias;
	if (read(ctx, s.v[SYM_VERSION] + bias, &p->py_version, sizeof(p->py_version)) ||
	    p->py_version >> 24 != 3 || (int)(p->py_version >> 16 & 0xff) != m->minor) {
		snprintf(err, errlen, "%s: Py_Version 0x%x is not CPython 3.%d's", m->path, p->py_version,
			 m->minor);
		e = -ENOTSUP;
		goto out;
	}
	e = py_layout(p, m->minor, read, ctx, m->path, err, errlen);
	if (!e)
		e = py_check(p, read, ctx, m->path, err, errlen);
	if (e)
		goto out;
	p->code_type = s.v[SYM_CODE_TYPE] ? s.v[SYM_CODE_TYPE] + bias : 0;
	p->str_type = s.v[SYM_STR_TYPE] ? s.v[SYM_STR_TYPE] + bias : 0;
	p->bytes_type = s.v[SYM_BYTES_TYPE] ? s.v[SYM_BYTES_TYPE] + bias : 0;
	if (s.v[SYM_EVAL]) {
		p->eval_lo = s.v[SYM_EVAL] + bias;
		p->eval_hi = p->eval_lo + s.eval_size;
	}
	if (cold[0] < cold[1]) {
		p->eval_cold_lo = cold[0] + bias;
		p->eval_cold_hi = cold[1] + bias;
	}
	py_desc(p, m->path);
	*out = p;
	p = NULL;
out:
	free(m);
	free(p);
	return e;
}

int ustack_py_proc__find(pid_t pid, const char *root, ustack_py_read_fn read, void *ctx,
			 struct ustack_py_proc **out, char *err, size_t errlen)
{
	size_t len;
	char *maps = read_maps(pid, &len);
	int e;

	*out = NULL;
	if (!maps) {
		e = -errno;
		snprintf(err, errlen, "/proc/%d/maps: %s", (int)pid, strerror(-e));
		return e;
	}
	e = find_in(pid, maps, root, read, ctx, out, err, errlen);
	free(maps);
	return e;
}

int ustack_py_proc__find_maps(const char *maps, const char *root, ustack_py_read_fn read,
			      void *ctx, struct ustack_py_proc **out, char *err, size_t errlen)
{
	return find_in(0, maps, root, read, ctx, out, err, errlen);
}

int ustack_py_path_minor(const char *path)
{
	const char *base = strrchr(path, '/');
	int is_lib;

	return py_name_minor(base ? base + 1 : path, &is_lib);
}

const char *ustack_py_proc__describe(const struct ustack_py_proc *p)
{
	return p->desc;
}

void ustack_py_proc__eval_range(const struct ustack_py_proc *p, uint64_t *lo, uint64_t *hi)
{
	*lo = p->eval_lo;
	*hi = p->eval_hi;
}

void ustack_py_proc__eval_cold_range(const struct ustack_py_proc *p, uint64_t *lo, uint64_t *hi)
{
	*lo = p->eval_cold_lo;
	*hi = p->eval_cold_hi;
}

void ustack_py_proc__free(struct ustack_py_proc *p)
{
	free(p);
}
