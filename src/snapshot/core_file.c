// SPDX-License-Identifier: MIT
/*
 * ELF core dump reader (core_file.h). The whole file is hostile: every
 * header, note and string is checked against the end of what holds it
 * before it is read, with 64-bit arithmetic that cannot wrap.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/core_file.h"

/* Caps that no real core reaches: they bound the work a crafted one causes. */
#define CORE_MAX_THREADS (1u << 20)
#define CORE_MAX_FILES (1u << 20)
/* x86-64 struct elf_prstatus: pr_pid at 32, pr_reg (user_regs_struct,
 * 27 registers) at 112 */
#define PRSTATUS_CURSIG 12
#define PRSTATUS_PID 32
#define PRSTATUS_REGS 112
#define PRSTATUS_MIN (PRSTATUS_REGS + 27 * 8)
/* user_regs_struct indexes */
#define REG_RBP_IDX 4
#define REG_RBX_IDX 5
#define REG_RIP_IDX 16
#define REG_RSP_IDX 19
/* x86-64 struct elf_prpsinfo: pr_pid at 24, pr_fname[16] at 40 */
#define PRPSINFO_PID 24
#define PRPSINFO_FNAME 40
#define PRPSINFO_MIN (PRPSINFO_FNAME + 16)

struct parse {
	struct ustack_core *c;
	char *err;
	size_t err_sz;
	size_t cap_threads, cap_maps;
};

static int fail(struct parse *p, int errnum, uint64_t off, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->err_sz)
		snprintf(p->err, p->err_sz, "%s: offset 0x%llx: %s", p->c->name,
			 (unsigned long long)off, msg);
	return -errnum;
}

static inline uint64_t rd64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, 8);
	return v;
}

static inline uint32_t rd32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return v;
}

/* [off, off + len) inside [0, limit)? */
static inline int in_bounds(uint64_t off, uint64_t len, uint64_t limit)
{
	return off <= limit && len <= limit - off;
}

static char *keep_string(struct ustack_core *c, const char *s, size_t len)
{
	char **g = realloc(c->strings, (c->nr_strings + 1) * sizeof(*g));
	char *copy;

	if (!g)
		return NULL;
	c->strings = g;
	copy = strndup(s, len);
	if (copy)
		c->strings[c->nr_strings++] = copy;
	return copy;
}

static int add_thread(struct parse *p, const uint8_t *d, uint64_t sz, uint64_t off)
{
	struct ustack_core *c = p->c;
	struct ustack_core_thread *t;
	const uint8_t *r = d + PRSTATUS_REGS;

	if (sz < PRSTATUS_MIN)
		return fail(p, EBADMSG, off, "NT_PRSTATUS of %llu bytes, x86-64's has at least %u",
			    (unsigned long long)sz, PRSTATUS_MIN);
	if (c->nr_threads >= CORE_MAX_THREADS)
		return fail(p, EBADMSG, off, "more than %u threads", CORE_MAX_THREADS);
	if (c->nr_threads == p->cap_threads) {
		size_t cap = p->cap_threads ? 2 * p->cap_threads : 16;
		void *g = realloc(c->threads, cap * sizeof(*c->threads));

		if (!g)
			return -ENOMEM;
		c->threads = g;
		p->cap_threads = cap;
	}
	t = &c->threads[c->nr_threads++];
	t->tid = (int)rd32(d + PRSTATUS_PID);
	t->signo = d[PRSTATUS_CURSIG] | d[PRSTATUS_CURSIG + 1] << 8;
	t->regs.pc = rd64(r + 8 * REG_RIP_IDX);
	t->regs.sp = rd64(r + 8 * REG_RSP_IDX);
	t->regs.fp = rd64(r + 8 * REG_RBP_IDX);
	t->bx = rd64(r + 8 * REG_RBX_IDX);
	return 0;
}

/* NT_FILE: count, page size, count x (start, end, page offset), then count
 * NUL-terminated paths. */
static int add_files(struct parse *p, const uint8_t *d, uint64_t sz, uint64_t off)
{
	struct ustack_core *c = p->c;
	uint64_t count, page, s;

	if (sz < 16)
		return fail(p, EBADMSG, off, "NT_FILE of %llu bytes", (unsigned long long)sz);
	count = rd64(d);
	page = rd64(d + 8);
	if (count > CORE_MAX_FILES || count > (sz - 16) / 24)
		return fail(p, EBADMSG, off, "NT_FILE: %llu entries do not fit in %llu bytes",
			    (unsigned long long)count, (unsigned long long)sz);
	if (!page || (page & (page - 1)))
		return fail(p, EBADMSG, off + 8, "NT_FILE: page size %llu", (unsigned long long)page);
	if (c->maps) /* (even an empty first one: its array is allocated) */
		return fail(p, EBADMSG, off, "a second NT_FILE note");
	c->maps = calloc(count ? count : 1, sizeof(*c->maps));
	if (!c->maps)
		return -ENOMEM;
	s = 16 + 24 * count;
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *e = d + 16 + 24 * i;
		struct ustack_core_map *m = &c->maps[i];
		const void *nul = memchr(d + s, 0, sz - s);
		uint64_t pgoff = rd64(e + 16);

		if (!nul)
			return fail(p, EBADMSG, off + s, "NT_FILE: path %llu not terminated",
				    (unsigned long long)i);
		m->start = rd64(e);
		m->end = rd64(e + 8);
		if (m->start >= m->end || pgoff > UINT64_MAX / page)
			return fail(p, EBADMSG, off + 16 + 24 * i,
				    "NT_FILE: entry %llu: range 0x%llx-0x%llx, page offset 0x%llx",
				    (unsigned long long)i, (unsigned long long)m->start,
				    (unsigned long long)m->end, (unsigned long long)pgoff);
		m->file_offset = pgoff * page;
		m->fd = -1;
		m->path = keep_string(c, (const char *)d + s, (const uint8_t *)nul - (d + s));
		if (!m->path)
			return -ENOMEM;
		s = (const uint8_t *)nul - d + 1;
		c->nr_maps++;
	}
	return 0;
}

static void read_auxv(struct ustack_core *c, const uint8_t *d, uint64_t sz)
{
	for (uint64_t i = 0; i + 16 <= sz; i += 16) {
		uint64_t type = rd64(d + i), val = rd64(d + i + 8);

		if (type == AT_SYSINFO_EHDR)
			c->vdso = val;
		else if (type == AT_ENTRY)
			c->entry = val;
		else if (type == AT_NULL)
			break;
	}
}

static int parse_notes(struct parse *p, uint64_t off, uint64_t len)
{
	const uint8_t *base = p->c->data;
	uint64_t pos = off, end = off + len;
	int ret;

	while (pos < end) {
		uint64_t namesz, descsz, type, name_off, desc_off, next;

		if (end - pos < 12)
			return fail(p, EBADMSG, pos, "note header cut (%llu bytes left)",
				    (unsigned long long)(end - pos));
		namesz = rd32(base + pos);
		descsz = rd32(base + pos + 4);
		type = rd32(base + pos + 8);
		name_off = pos + 12;
		desc_off = name_off + ((namesz + 3) & ~3ull);
		next = desc_off + ((descsz + 3) & ~3ull);
		if (desc_off > end || next > end || desc_off + descsz > end)
			return fail(p, EBADMSG, pos, "note (type %llu, name %llu + desc %llu bytes) "
				    "runs past its segment's end 0x%llx", (unsigned long long)type,
				    (unsigned long long)namesz, (unsigned long long)descsz,
				    (unsigned long long)end);
		if (namesz == 5 && !memcmp(base + name_off, "CORE", 5)) {
			const uint8_t *d = base + desc_off;

			ret = 0;
			if (type == NT_PRSTATUS)
				ret = add_thread(p, d, descsz, desc_off);
			else if (type == NT_PRPSINFO && descsz >= PRPSINFO_MIN) {
				memcpy(p->c->comm, d + PRPSINFO_FNAME, 15);
				p->c->comm[15] = 0;
				p->c->pid = (int)rd32(d + PRPSINFO_PID);
			} else if (type == NT_FILE)
				ret = add_files(p, d, descsz, desc_off);
			else if (type == NT_AUXV)
				read_auxv(p->c, d, descsz);
			if (ret)
				return ret;
		}
		pos = next;
	}
	return 0;
}

static int cmp_load(const void *a, const void *b)
{
	const struct ustack_core_load *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int cmp_map(const void *a, const void *b)
{
	const struct ustack_core_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct ustack_core_load *load_of(const struct ustack_core *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nr_loads;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ustack_core_load *l = &c->loads[mid];

		if (addr < l->vaddr)
			hi = mid;
		else if (addr - l->vaddr >= l->memsz)
			lo = mid + 1;
		else
			return l;
	}
	return NULL;
}

static struct ustack_core_map *map_of(const struct ustack_core *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nr_maps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct ustack_core_map *m = &c->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

/* Bytes the core itself holds (never the mapped files): what the process
 * had in memory, to check the files on disk against. */
static int read_dumped(const struct ustack_core *c, uint64_t addr, void *buf, size_t len)
{
	const struct ustack_core_load *l = load_of(c, addr);
	uint64_t in;

	if (!l)
		return -EFAULT;
	in = addr - l->vaddr;
	if (in > l->filesz || len > l->filesz - in)
		return -EFAULT;
	memcpy(buf, c->data + l->offset + in, len);
	return 0;
}

/* The build ID in the ELF headers the core kept of the file mapped at
 * @start (the kernel dumps the first page of every ELF mapping). */
static size_t dumped_build_id(const struct ustack_core *c, uint64_t start, uint8_t *out)
{
	uint8_t page[4096];
	Elf64_Ehdr eh;
	uint64_t bias = 0;
	int have_bias = 0;

	if (read_dumped(c, start, page, sizeof(page)))
		return 0;
	memcpy(&eh, page, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_bounds(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), sizeof(page)))
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			uint8_t notes[1024];
			uint64_t len, pos = 0;

			memcpy(&ph, page + eh.e_phoff + i * sizeof(ph), sizeof(ph));
			if (pass == 0 && ph.p_type == PT_LOAD && ph.p_offset == 0 && !have_bias) {
				bias = start - ph.p_vaddr;
				have_bias = 1;
			}
			if (pass == 0 || ph.p_type != PT_NOTE || !have_bias)
				continue;
			len = ph.p_filesz < sizeof(notes) ? ph.p_filesz : sizeof(notes);
			if (read_dumped(c, bias + ph.p_vaddr, notes, len))
				continue;
			while (pos + 12 <= len) {
				uint32_t nsz = rd32(notes + pos), dsz = rd32(notes + pos + 4);
				uint32_t type = rd32(notes + pos + 8);
				uint64_t d = pos + 12 + ((nsz + 3ull) & ~3ull);

				if (d > len || dsz > len - d)
					break;
				if (type == NT_GNU_BUILD_ID && nsz == 4 &&
				    !memcmp(notes + pos + 12, "GNU", 4) && dsz && dsz <= 32) {
					memcpy(out, notes + d, dsz);
					return dsz;
				}
				pos = d + ((dsz + 3ull) & ~3ull);
			}
		}
	}
	return 0;
}

static void finish_maps(struct ustack_core *c, const char *exe)
{
	const char *exe_path = NULL;

	qsort(c->maps, c->nr_maps, sizeof(*c->maps), cmp_map);
	if (c->entry) {
		struct ustack_core_map *m = map_of(c, c->entry);

		if (m)
			exe_path = m->path;
	}
	for (size_t i = 0; i < c->nr_maps; i++) {
		struct ustack_core_map *m = &c->maps[i];
		const struct ustack_core_load *l = load_of(c, m->start);

		if (l && (l->flags & PF_X))
			m->flags |= USTACK_MAPPING_EXEC;
		if (m->file_offset == 0)
			m->build_id_size = dumped_build_id(c, m->start, m->build_id);
	}
	/* the build ID of a file applies to all its mappings */
	for (size_t i = 0; i < c->nr_maps; i++) {
		struct ustack_core_map *m = &c->maps[i];

		for (size_t j = 0; !m->build_id_size && j < c->nr_maps; j++)
			if (c->maps[j].build_id_size && !strcmp(c->maps[j].path, m->path)) {
				memcpy(m->build_id, c->maps[j].build_id, c->maps[j].build_id_size);
				m->build_id_size = c->maps[j].build_id_size;
			}
	}
	if (exe && exe_path) {
		const char *copy = keep_string(c, exe, strlen(exe));

		for (size_t i = 0; copy && i < c->nr_maps; i++)
			if (c->maps[i].path != exe_path && !strcmp(c->maps[i].path, exe_path))
				c->maps[i].path = copy;
		for (size_t i = 0; copy && i < c->nr_maps; i++)
			if (c->maps[i].path == exe_path)
				c->maps[i].path = copy;
	}
}

static int parse_core(struct parse *p, const char *exe)
{
	struct ustack_core *c = p->c;
	Elf64_Ehdr eh;
	uint64_t phnum;
	int ret;

	if (c->size < SELFMAG || memcmp(c->data, ELFMAG, SELFMAG))
		return fail(p, ENOEXEC, 0, "not an ELF file");
	if (c->size < sizeof(eh))
		return fail(p, EBADMSG, 0, "ELF header cut at %zu bytes", c->size);
	memcpy(&eh, c->data, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return fail(p, ENOEXEC, EI_CLASS, "not a 64-bit little-endian ELF file");
	if (eh.e_type != ET_CORE)
		return fail(p, ENOEXEC, 16, "not a core file (ELF type %u)", eh.e_type);
	if (eh.e_machine != EM_X86_64)
		return fail(p, ENOEXEC, 18, "core of machine %u; only x86-64 (%u) is read",
			    eh.e_machine, EM_X86_64);
	if (eh.e_phentsize != sizeof(Elf64_Phdr))
		return fail(p, EBADMSG, 54, "program header size %u", eh.e_phentsize);
	phnum = eh.e_phnum;
	if (phnum == PN_XNUM) {
		/* more segments than e_phnum holds: the count is in section 0 */
		Elf64_Shdr sh;

		if (!in_bounds(eh.e_shoff, sizeof(sh), c->size))
			return fail(p, EBADMSG, eh.e_shoff, "section 0 (segment count) past the end");
		memcpy(&sh, c->data + eh.e_shoff, sizeof(sh));
		phnum = sh.sh_info;
	}
	if (!in_bounds(eh.e_phoff, phnum * sizeof(Elf64_Phdr), c->size))
		return fail(p, EBADMSG, eh.e_phoff, "%llu program headers run past the end (0x%zx)",
			    (unsigned long long)phnum, c->size);
	c->loads = calloc(phnum ? phnum : 1, sizeof(*c->loads));
	if (!c->loads)
		return -ENOMEM;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t at = eh.e_phoff + i * sizeof(Elf64_Phdr);
		Elf64_Phdr ph;

		memcpy(&ph, c->data + at, sizeof(ph));
		if ((ph.p_type == PT_LOAD || ph.p_type == PT_NOTE) &&
		    !in_bounds(ph.p_offset, ph.p_filesz, c->size))
			return fail(p, EBADMSG, ph.p_offset, "%s segment %llu (0x%llx bytes) cut: the "
				    "file ends at 0x%zx (truncated core?)",
				    ph.p_type == PT_LOAD ? "PT_LOAD" : "PT_NOTE",
				    (unsigned long long)i, (unsigned long long)ph.p_filesz, c->size);
		if (ph.p_type == PT_NOTE) {
			ret = parse_notes(p, ph.p_offset, ph.p_filesz);
			if (ret)
				return ret;
		} else if (ph.p_type == PT_LOAD) {
			if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
				return fail(p, EBADMSG, at, "PT_LOAD %llu: filesz 0x%llx, memsz 0x%llx",
					    (unsigned long long)i, (unsigned long long)ph.p_filesz,
					    (unsigned long long)ph.p_memsz);
			c->loads[c->nr_loads++] = (struct ustack_core_load){
				.vaddr = ph.p_vaddr, .memsz = ph.p_memsz, .offset = ph.p_offset,
				.filesz = ph.p_filesz, .flags = ph.p_flags };
		}
	}
	if (!c->nr_threads)
		return fail(p, EBADMSG, eh.e_phoff, "no NT_PRSTATUS note: no thread to unwind");
	qsort(c->loads, c->nr_loads, sizeof(*c->loads), cmp_load);
	for (size_t i = 1; i < c->nr_loads; i++)
		if (c->loads[i].vaddr - c->loads[i - 1].vaddr < c->loads[i - 1].memsz)
			return fail(p, EBADMSG, c->loads[i].offset, "PT_LOAD at 0x%llx overlaps another",
				    (unsigned long long)c->loads[i].vaddr);
	finish_maps(c, exe);
	return 0;
}

struct ustack_core *ustack_core__parse(const void *data, size_t size, const char *name,
				       const char *exe, char *err, size_t err_sz)
{
	struct ustack_core *c = calloc(1, sizeof(*c));
	struct parse p = { .c = c, .err = err, .err_sz = err_sz };
	int ret;

	if (!c)
		return NULL;
	c->data = data;
	c->size = size;
	c->name = strdup(name ? name : "core");
	if (!c->name) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	ret = parse_core(&p, exe);
	if (ret) {
		if (ret == -ENOMEM && err && err_sz)
			snprintf(err, err_sz, "%s: out of memory", c->name);
		ustack_core__close(c);
		errno = -ret;
		return NULL;
	}
	return c;
}

struct ustack_core *ustack_core__open(const char *path, const char *exe, char *err, size_t err_sz)
{
	struct ustack_core *c;
	struct stat st;
	void *data;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), e; /* a FIFO: refused, not waited on */

	if (fd < 0 || fstat(fd, &st)) {
		e = errno;
		if (err && err_sz)
			snprintf(err, err_sz, "%s: %s", path, strerror(e));
		if (fd >= 0)
			close(fd);
		errno = e;
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		if (err && err_sz)
			snprintf(err, err_sz, "%s: offset 0x0: %s", path,
				 S_ISREG(st.st_mode) ? "empty file, not a core" : "not a regular file");
		close(fd);
		errno = ENOEXEC;
		return NULL;
	}
	data = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	e = errno;
	close(fd);
	if (data == MAP_FAILED) {
		if (err && err_sz)
			snprintf(err, err_sz, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	c = ustack_core__parse(data, st.st_size, path, exe, err, err_sz);
	if (!c) {
		e = errno;
		munmap(data, st.st_size);
		errno = e;
		return NULL;
	}
	c->mapped = 1;
	return c;
}

void ustack_core__close(struct ustack_core *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_maps; i++)
		if (c->maps[i].fd >= 0)
			close(c->maps[i].fd);
	for (size_t i = 0; i < c->nr_strings; i++)
		free(c->strings[i]);
	if (c->mapped)
		munmap((void *)c->data, c->size);
	free(c->strings);
	free(c->threads);
	free(c->maps);
	free(c->loads);
	free(c->name);
	free(c);
}

/* Bytes the core left out: from the file mapped there. */
static int read_file_backed(struct ustack_core *c, uint64_t addr, void *buf, size_t len)
{
	struct ustack_core_map *m = map_of(c, addr);
	uint64_t off;

	if (!m || len > m->end - addr)
		return -EFAULT;
	if (m->fd == -1) {
		struct stat st;

		/* the path comes from the core: a FIFO or device there must
		 * not block or be read */
		m->fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (m->fd >= 0 && (fstat(m->fd, &st) || !S_ISREG(st.st_mode))) {
			close(m->fd);
			m->fd = -1;
		}
		if (m->fd < 0)
			m->fd = -2;
	}
	if (m->fd < 0)
		return -EFAULT;
	off = m->file_offset + (addr - m->start);
	return pread(m->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EFAULT;
}

int ustack_core__read(void *core, uint64_t addr, void *buf, size_t len)
{
	struct ustack_core *c = core;
	uint8_t *out = buf;

	while (len) {
		const struct ustack_core_load *l = load_of(c, addr);
		uint64_t in, n;

		if (!l) {
			/* gdb's gcore leaves read-only file mappings out (no
			 * PT_LOAD at all; the kernel writes one without file
			 * bytes): what is there is the file's, never written
			 * (a written private page would be in the core) */
			const struct ustack_core_map *m = map_of(c, addr);

			if (!m)
				return -EFAULT;
			n = m->end - addr < len ? m->end - addr : len;
			if (read_file_backed(c, addr, out, n))
				return -EFAULT;
			out += n;
			addr += n;
			len -= n;
			continue;
		}
		in = addr - l->vaddr;
		n = l->memsz - in < len ? l->memsz - in : len;
		if (in < l->filesz) {
			if (n > l->filesz - in)
				n = l->filesz - in;
			memcpy(out, c->data + l->offset + in, n);
		} else if (read_file_backed(c, addr, out, n)) {
			return -EFAULT;
		}
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}
