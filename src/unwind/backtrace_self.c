// SPDX-License-Identifier: MIT
/*
 * ustack_backtrace(): the calling thread's own stack, async-signal-safe.
 *
 * Tables come from the loaded PT_GNU_SFRAME segments of each module, found
 * with _dl_find_object() (lock-free, async-signal-safe, glibc >= 2.35).
 * Memory is read with plain loads, but only inside ranges known to be
 * readable: the thread's stack VMA, found once per thread with the
 * PROCMAP_QUERY ioctl on /proc/self/maps (text fallback), and re-found when
 * the walk moves to another stack (sigaltstack). So a corrupt table can end
 * the walk but cannot make us fault.
 *
 * No allocation, no locks: module descriptors are cached in a fixed array
 * guarded by per-slot sequence counters; a slot is only trusted when
 * _dl_find_object() still reports the same mapping for the pc, or when the
 * module is one that cannot be unloaded (perm).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/compiler.h"
#include "cfi/cfi.h"
#include "common/procmap_query.h"
#include "sframe/sframe.h"
#include "unwind/unwind.h"

#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554 /* binutils 2.40; not in glibc 2.36 <elf.h> */
#endif

/* ---- readable stack range of this thread --------------------------------- */

struct self_range {
	uint64_t lo, hi;
};

static __thread struct self_range self_stack __attribute__((tls_model("initial-exec")));

/*
 * Text fallback for kernels without PROCMAP_QUERY: scan /proc/self/maps
 * with a stack buffer (read() is async-signal-safe, stdio is not).
 * Fills the range of the VMA holding addr when it is a private, readable,
 * writable anonymous mapping (inode 0).
 */
static int self_vma_text(uint64_t addr, struct self_range *r)
{
	char buf[4096];
	size_t have = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	int ret = -ENOENT;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t got = read(fd, buf + have, sizeof(buf) - have);
		char *line = buf, *nl;

		if (got <= 0)
			break;
		have += got;
		while ((nl = memchr(line, '\n', buf + have - line))) {
			uint64_t lo, hi, ino = 0;
			const char *p = ustack_parse_hex(line, nl, &lo);

			if (p && *p == '-' && (p = ustack_parse_hex(p + 1, nl, &hi)) && addr >= lo && addr < hi) {
				/* " rw-p off dev inode" */
				int ok = nl - p > 5 && p[1] == 'r' && p[2] == 'w';

				for (int field = 0; ok && field < 3 && p < nl; field++) {
					p = memchr(p + 1, ' ', nl - p - 1);
					if (!p)
						ok = 0;
				}
				if (ok && p && ustack_parse_hex(p + 1, nl, &ino) && ino == 0) {
					r->lo = lo;
					r->hi = hi;
					ret = 0;
				}
				close(fd);
				return ret;
			}
			line = nl + 1;
		}
		have = buf + have - line;
		memmove(buf, line, have);
		if (have == sizeof(buf)) /* absurd line: give up */
			break;
	}
	close(fd);
	return ret;
}

int ustack_self_force_text_maps;

static int self_vma(uint64_t addr, struct self_range *r)
{
	struct procmap_query q;
	int fd, ret;

	if (ustack_self_force_text_maps)
		return self_vma_text(addr, r);
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = addr;
	q.query_flags = PROCMAP_QUERY_VMA_READABLE | PROCMAP_QUERY_VMA_WRITABLE;
	ret = ioctl(fd, PROCMAP_QUERY, &q) ? -errno : 0;
	close(fd);
	if (ret == -ENOTTY || ret == -EINVAL)
		return self_vma_text(addr, r);
	if (ret)
		return ret;
	/* Only anonymous memory: a file mapping may fault (SIGBUS past EOF). */
	if (q.inode || addr < q.vma_start || addr >= q.vma_end)
		return -ENOENT;
	r->lo = q.vma_start;
	r->hi = q.vma_end;
	return 0;
}

__attribute__((no_sanitize_address))
static int self_read_range(struct self_range *r, uint64_t addr, void *buf, size_t len)
{

	if (addr < r->lo || addr > r->hi || len > r->hi - addr) {
		struct self_range n;

		if (self_vma(addr, &n) || len > n.hi - addr)
			return -EFAULT;
		*r = n;
		self_stack = n;
	}
	/* plain loads, not memcpy (which ASan instruments); one 8-byte load
	 * for the common case keeps store-to-load forwarding intact */
	if (len == 8) {
		uint64_t v;

		__builtin_memcpy(&v, (const void *)(uintptr_t)addr, 8);
		*(uint64_t *)buf = v;
		return 0;
	}
	for (size_t i = 0; i < len; i++)
		((volatile uint8_t *)buf)[i] = ((const volatile uint8_t *)(uintptr_t)addr)[i];
	return 0;
}

/* ---- modules ---------------------------------------------------------------- */

struct self_module {
	uint64_t map_start, map_end;
	const void *link_map;
	/* the first 16 bytes of the GNU build ID, where they lie in the
	 * module's first page (0: no build ID there) */
	uint64_t bid_addr, bid[2];
	uint32_t gen;   /* unique per descriptor built: keys the row cache */
	int has_sframe, has_cfi;
	struct ustack_sframe sf;
	struct ustack_cfi cfi;
	uint64_t plt_lo, plt_hi; /* static executable: its .plt/.iplt (no CFI) */
};

static _Atomic uint32_t module_gen; /* descriptors built; gens count from PERM_GEN(PERM_MAX) */

/*
 * The same file is still loaded where a descriptor says. The loader's
 * range and link map are not enough: after dlclose() the next dlopen() of
 * a library of the same size gets the same address and, from malloc, the
 * same link map, so the build ID is compared too. It was taken from the
 * first page of the mapping, which is readable in whatever ELF file is
 * mapped there now (its ELF header; module_phdrs() reads it too).
 */
__attribute__((no_sanitize_address))
static inline int module_same_file(uint64_t bid_addr, const uint64_t bid[2])
{
	uint64_t v[2];

	if (!bid_addr)
		return 1;
	__builtin_memcpy(v, (const void *)(uintptr_t)bid_addr, sizeof(v));
	return v[0] == bid[0] && v[1] == bid[1];
}

/* Fill m->bid_addr and m->bid from a PT_NOTE inside the first page. */
__attribute__((no_sanitize_address))
static void module_build_id(const Elf64_Phdr *ph, unsigned int phnum, uint64_t bias,
			    struct self_module *m)
{
	uint64_t page_end = m->map_start + 4096;

	if (m->map_end < page_end)
		return;
	for (unsigned int i = 0; i < phnum; i++) {
		uint64_t at = bias + ph[i].p_vaddr, end = at + ph[i].p_filesz;

		if (ph[i].p_type != PT_NOTE || at < m->map_start || at > page_end ||
		    ph[i].p_filesz > page_end - at || (at & 3))
			continue;
		while (end - at >= 12) {
			uint32_t hdr[3], nsz, dsz;

			__builtin_memcpy(hdr, (const void *)(uintptr_t)at, sizeof(hdr));
			nsz = (hdr[0] + 3) & ~3u;
			dsz = (hdr[1] + 3) & ~3u;
			if (hdr[0] > 4096 || hdr[1] > 4096 || 12 + (uint64_t)nsz + dsz > end - at)
				break;
			if (hdr[2] == NT_GNU_BUILD_ID && hdr[0] == 4 && hdr[1] >= 16 &&
			    !memcmp((const void *)(uintptr_t)(at + 12), "GNU", 4)) {
				m->bid_addr = at + 12 + nsz;
				__builtin_memcpy(m->bid, (const void *)(uintptr_t)m->bid_addr, 16);
				return;
			}
			at += 12 + nsz + dsz;
		}
	}
}

#define MODULE_SLOTS 64

static struct {
	_Atomic uint32_t seq; /* odd while being written */
	struct self_module m;
} module_cache[MODULE_SLOTS];

/* Tests only: use this many module slots (1..MODULE_SLOTS) to force
 * evictions. Slots hold copies, never pointers into other slots, so an
 * eviction cannot leave a walk with a dangling table. */
unsigned int ustack_self_module_slots = MODULE_SLOTS;

static unsigned int slot_of(uint64_t map_start)
{
	unsigned int n = ustack_self_module_slots - 1 < MODULE_SLOTS ? ustack_self_module_slots
								   : MODULE_SLOTS;

	unsigned int h = (unsigned int)((map_start >> 12) * 0x9e3779b97f4a7c15ull >> 58);

	/* a division costs tens of cycles per module change: only for tests */
	return n == MODULE_SLOTS ? h : h % n;
}

/* @full: copy the tables too, not only what identifies the module;
 * @main: a permanent module (never unloaded: no build-ID check) */
static int cache_get(const struct dl_find_object *o, struct self_module *out, int full, int main)
{
	unsigned int i = slot_of((uintptr_t)o->dlfo_map_start);
	uint32_t s1 = atomic_load_explicit(&module_cache[i].seq, memory_order_acquire);

	if (!s1 || (s1 & 1))
		return -ENOENT;
	memcpy(out, &module_cache[i].m, full ? sizeof(*out) : offsetof(struct self_module, has_sframe));
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&module_cache[i].seq, memory_order_relaxed) != s1)
		return -ENOENT;
	if (out->map_start != (uintptr_t)o->dlfo_map_start ||
	    out->map_end != (uintptr_t)o->dlfo_map_end || out->link_map != o->dlfo_link_map ||
	    (!main && !module_same_file(out->bid_addr, out->bid)))
		return -ENOENT;
	return 0;
}

static void cache_put(const struct self_module *m)
{
	unsigned int i = slot_of(m->map_start);
	uint32_t s = atomic_load_explicit(&module_cache[i].seq, memory_order_relaxed);

	/* another writer owns the slot: just do not cache */
	if ((s & 1) || !atomic_compare_exchange_strong(&module_cache[i].seq, &s, s + 1))
		return;
	atomic_thread_fence(memory_order_release);
	memcpy(&module_cache[i].m, m, sizeof(*m));
	atomic_store_explicit(&module_cache[i].seq, s + 2, memory_order_release);
}

/*
 * Locate the program headers of a loaded module: at the ELF header at the
 * start of its first mapping for a normal DSO/PIE; for a static executable
 * (whose mapping reported by the loader starts at the text segment), from
 * the auxiliary vector.
 */
static int module_phdrs(const struct dl_find_object *o, const Elf64_Phdr **phdr,
			unsigned int *phnum, uint64_t *bias, uint64_t *lo, uint64_t *hi)
{
	uint64_t start = (uintptr_t)o->dlfo_map_start, end = (uintptr_t)o->dlfo_map_end;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(uintptr_t)start;
	const struct link_map *lm = o->dlfo_link_map;
	uint64_t entry = getauxval(AT_ENTRY);

	*bias = lm ? lm->l_addr : 0;
	if (end - start >= sizeof(*eh) && !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
	    eh->e_phentsize == sizeof(Elf64_Phdr) &&
	    in_bounds(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), end - start)) {
		*phdr = (const Elf64_Phdr *)(uintptr_t)(start + eh->e_phoff);
		*phnum = eh->e_phnum;
		*lo = start;
		*hi = end;
		return 0;
	}
	if (entry >= start && entry < end) {
		*phdr = (const Elf64_Phdr *)(uintptr_t)getauxval(AT_PHDR);
		*phnum = getauxval(AT_PHNUM);
		if (!*phdr)
			return -ENOENT;
		/* a static PIE's bias follows from PT_PHDR */
		for (unsigned int i = 0; i < *phnum; i++)
			if ((*phdr)[i].p_type == PT_PHDR)
				*bias = (uintptr_t)*phdr - (*phdr)[i].p_vaddr;
		/* The loader's range covers only the text of a static
		 * executable; the kernel mapped all its PT_LOADs, so they
		 * bound what we may read. */
		*lo = UINT64_MAX;
		*hi = 0;
		for (unsigned int i = 0; i < *phnum; i++) {
			const Elf64_Phdr *p = &(*phdr)[i];

			if (p->p_type != PT_LOAD)
				continue;
			if (*bias + p->p_vaddr < *lo)
				*lo = *bias + p->p_vaddr;
			if (*bias + p->p_vaddr + p->p_memsz > *hi)
				*hi = *bias + p->p_vaddr + p->p_memsz;
		}
		return *lo < *hi ? 0 : -ENOENT;
	}
	return -ENOENT;
}

/* The main program of a statically linked executable: no dynamic section. */
static int is_static_exe(const struct dl_find_object *o)
{
	const struct link_map *lm = o->dlfo_link_map;
	uint64_t entry = getauxval(AT_ENTRY);

	return (!lm || !lm->l_ld) && entry >= (uintptr_t)o->dlfo_map_start &&
	       entry < (uintptr_t)o->dlfo_map_end;
}

/*
 * The .eh_frame of a loaded module, from its .eh_frame_hdr: the header says
 * where .eh_frame starts; it ends at the latest at the end of the PT_LOAD
 * segment holding it (the zero terminator ends the walk before).
 */
static int module_cfi(const Elf64_Phdr *ph, unsigned int phnum, uint64_t bias, uint64_t lo,
		      uint64_t hi, uint64_t hdr, uint64_t hdr_size, struct ustack_cfi *cfi)
{
	uint64_t eh, end = 0;

	if (ustack_cfi__hdr_eh_frame_addr((const void *)(uintptr_t)hdr, hdr_size, hdr, &eh))
		return -ENOENT;
	for (unsigned int i = 0; i < phnum; i++) {
		uint64_t start = bias + ph[i].p_vaddr;

		if (ph[i].p_type == PT_LOAD && eh >= start && eh - start < ph[i].p_filesz)
			end = start + ph[i].p_filesz;
	}
	if (!end || eh < lo || end > hi)
		return -ENOENT;
	return ustack_cfi__init_eh_frame(cfi, (const void *)(uintptr_t)eh, end - eh, eh,
					 (const void *)(uintptr_t)hdr, hdr_size, hdr);
}

/*
 * A static executable has no .eh_frame_hdr (gcc passes --eh-frame-hdr only
 * to dynamic links), so find .eh_frame through the section headers of
 * /proc/self/exe, read with pread() into stack buffers. Done once per
 * module descriptor; the walk then scans the section (no search table).
 */
static int exe_eh_frame(uint64_t bias, uint64_t lo, uint64_t hi, struct ustack_cfi *cfi,
			uint64_t *plt_lo, uint64_t *plt_hi)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	Elf64_Shdr strtab, sh;
	int ret = -ENOENT;

	if (fd < 0)
		return -ENOENT;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_shentsize != sizeof(sh) || eh.e_shstrndx >= eh.e_shnum ||
	    pread(fd, &strtab, sizeof(strtab), eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(sh)) !=
		    sizeof(strtab))
		goto out;
	for (unsigned int i = 1; i < eh.e_shnum && i < 4096; i++) {
		char name[16];
		uint64_t addr;

		if (pread(fd, &sh, sizeof(sh), eh.e_shoff + (uint64_t)i * sizeof(sh)) != sizeof(sh))
			break;
		if (sh.sh_type != SHT_PROGBITS || sh.sh_name >= strtab.sh_size ||
		    pread(fd, name, sizeof(name), strtab.sh_offset + sh.sh_name) <= 0)
			continue;
		name[sizeof(name) - 1] = 0;
		addr = bias + sh.sh_addr;
		if (addr < lo || addr > hi || sh.sh_size > hi - addr)
			continue;
		if (!strcmp(name, ".eh_frame") && ret)
			ret = ustack_cfi__init_eh_frame(cfi, (const void *)(uintptr_t)addr, sh.sh_size,
							addr, NULL, 0, 0);
		else if ((!strcmp(name, ".plt") || !strcmp(name, ".iplt")) && !*plt_hi) {
			*plt_lo = addr;
			*plt_hi = addr + sh.sh_size;
		}
	}
out:
	close(fd);
	return ret;
}

/*
 * Modules that stay loaded as long as this code and its data do, found once:
 * the main executable; ld.so (AT_BASE); the object holding this code; and
 * the object our own reference to getauxval() binds to (libc: glibc records
 * a dependency on every object a relocation binds to, so it cannot be
 * unloaded before us; in a non-PIE executable the reference may bind to the
 * executable's PLT, which is the main executable again). If this code is
 * unloaded, this table goes with it. Their descriptors have fixed
 * generations (PERM_GEN(i)): a row cached for one of them can never be
 * stale, and finding which module a pc is in needs no _dl_find_object().
 * No public, async-signal-safe generation counts dlopen()/dlclose() (the
 * dlpi_adds/dlpi_subs of dl_iterate_phdr() come under the loader's lock),
 * so other modules are checked through the loader as before.
 */
#define PERM_MAX 4
#define PERM_GEN(i) (1u + (i))

struct perm_mod {
	uint64_t start, end;
	const void *link_map;
};

static struct {
	_Atomic int state; /* 0 unknown, 1 being found, 2 known */
	unsigned int n;    /* entries; 0 when even the main executable was not found */
	struct perm_mod m[PERM_MAX];
} perm;

static void perm_add(uint64_t addr)
{
	struct dl_find_object o;

	if (!addr || perm.n >= PERM_MAX || _dl_find_object((void *)(uintptr_t)addr, &o))
		return;
	for (unsigned int i = 0; i < perm.n; i++)
		if (perm.m[i].start == (uintptr_t)o.dlfo_map_start)
			return;
	perm.m[perm.n++] = (struct perm_mod){ (uintptr_t)o.dlfo_map_start, (uintptr_t)o.dlfo_map_end,
					      o.dlfo_link_map };
}

/* 1 when the permanent modules are known (in perm) */
static int perm_known(void)
{
	int st = atomic_load_explicit(&perm.state, memory_order_acquire);

	if (st == 0) {
		uint64_t entry = getauxval(AT_ENTRY);
		struct dl_find_object o;
		int zero = 0;

		/* a thread (or a signal handler) that finds the table being
		 * filled goes the slow way meanwhile: never waits */
		if (entry && !_dl_find_object((void *)(uintptr_t)entry, &o) &&
		    atomic_compare_exchange_strong(&perm.state, &zero, 1)) {
			perm.n = 0;
			perm_add(entry);
			perm_add((uintptr_t)&perm_known);
			perm_add((uintptr_t)&getauxval);
			perm_add(getauxval(AT_BASE));
			atomic_store_explicit(&perm.state, 2, memory_order_release);
			st = 2;
		}
	}
	return st == 2 && perm.n;
}

/* The index in perm of the module holding @pc, or -1 */
static inline int perm_of(uint64_t pc)
{
	for (unsigned int i = 0; i < perm.n; i++)
		if (pc - perm.m[i].start < perm.m[i].end - perm.m[i].start)
			return (int)i;
	return -1;
}

/* The index in perm of the module @m describes, or -1 */
static int perm_is(const struct self_module *m)
{
	if (!perm_known())
		return -1;
	for (unsigned int i = 0; i < perm.n; i++)
		if (m->map_start == perm.m[i].start && m->map_end == perm.m[i].end &&
		    m->link_map == perm.m[i].link_map)
			return (int)i;
	return -1;
}

/* @m: the identity of permanent module @i (no tables) */
static inline void perm_identity(unsigned int i, struct self_module *m)
{
	m->map_start = perm.m[i].start;
	m->map_end = perm.m[i].end;
	m->link_map = perm.m[i].link_map;
	m->bid_addr = 0;
	m->gen = PERM_GEN(i);
}

/*
 * The module descriptor of @pc: 1 when only its identity (map range, link
 * map, gen) was copied, 2 with its tables (@full or freshly built), or a
 * negative errno.
 */
static int module_find(uint64_t pc, struct self_module *m, int full)
{
	struct dl_find_object o;
	const Elf64_Phdr *ph;
	unsigned int phnum;
	uint64_t bias, lo, hi;

	/* a permanent module: no need to ask the loader; its descriptors
	 * all have the same generation (its rows never go stale), so its
	 * identity is all a fast step needs */
	int pi = perm_known() ? perm_of(pc) : -1;

	if (pi >= 0) {
		if (!full) {
			perm_identity(pi, m);
			return 1;
		}
		o.dlfo_map_start = (void *)(uintptr_t)perm.m[pi].start;
		o.dlfo_map_end = (void *)(uintptr_t)perm.m[pi].end;
		o.dlfo_link_map = (struct link_map *)perm.m[pi].link_map;
		if (!cache_get(&o, m, full, 1)) {
			/* (a descriptor built before the table was known) */
			m->gen = PERM_GEN(pi);
			return full ? 2 : 1;
		}
	}
	if (_dl_find_object((void *)(uintptr_t)pc, &o))
		return -ENOENT;
	if (!cache_get(&o, m, full, 0))
		return full ? 2 : 1;
	memset(m, 0, sizeof(*m));
	m->map_start = (uintptr_t)o.dlfo_map_start;
	m->map_end = (uintptr_t)o.dlfo_map_end;
	m->link_map = o.dlfo_link_map;
	pi = perm_is(m);
	m->gen = pi >= 0 ? PERM_GEN(pi)
			 : atomic_fetch_add_explicit(&module_gen, 1, memory_order_relaxed) + PERM_GEN(PERM_MAX);
	if (!module_phdrs(&o, &ph, &phnum, &bias, &lo, &hi)) {
		module_build_id(ph, phnum, bias, m);
		for (unsigned int i = 0; i < phnum; i++) {
			uint64_t addr = bias + ph[i].p_vaddr;

			/* every segment we use must lie inside the module's image */
			if (addr < lo || addr > hi || ph[i].p_memsz > hi - addr)
				continue;
			if (ph[i].p_type == PT_GNU_SFRAME && !m->has_sframe)
				m->has_sframe = !ustack_sframe__init(&m->sf, (const void *)(uintptr_t)addr,
								    ph[i].p_memsz, addr);
			else if (ph[i].p_type == PT_GNU_EH_FRAME && !m->has_cfi)
				m->has_cfi = !module_cfi(ph, phnum, bias, lo, hi, addr, ph[i].p_memsz, &m->cfi);
		}
		if (!m->has_cfi && is_static_exe(&o))
			m->has_cfi = !exe_eh_frame(bias, lo, hi, &m->cfi, &m->plt_lo, &m->plt_hi);
	}
	cache_put(m);
	return 2;
}

struct self_ctx {
	struct self_range stack;
	struct self_module mod; /* last module: stacks stay in one for a while */
	int have_mod;           /* 0: none; 1: mod's identity only; 2: with its tables */
};

static int self_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return self_read_range(&((struct self_ctx *)ctx)->stack, addr, buf, len);
}

/*
 * pc -> row cache, shared by all threads, in a compact form that covers the
 * ordinary rows (RA at CFA-8, no flags, CFA offset within 16 bits); other
 * rows are looked up every time. Hot stacks hit it instead of decoding the
 * table again. An entry is keyed by the generation of the module
 * descriptor it came from, and used only when that is the descriptor the
 * walk has just validated with _dl_find_object(): an entry left over from
 * an unloaded library is never served.
 *
 * Set-associative: a bucket is one 64-byte cache line (a sequence counter
 * and three 16-byte entries), so a look-up costs at most one cache miss,
 * the cost that dominates a walk over stacks not seen recently.
 */
#define ROW_BUCKETS 4096
#define ROW_WAYS 3

struct row_entry { /* decoded */
	int32_t cfa_off;
	int16_t fp_off;
	uint8_t cfa_fp;   /* CFA based on fp */
	uint8_t fp_saved; /* fp restored from CFA + fp_off */
	uint8_t method;   /* USTACK_METHOD_SFRAME, _CFI or _PLT */
	uint8_t outermost; /* the cursor stops here: USTACK_STOP_OUTERMOST */
};

struct row_packed {
	uint64_t pc;
	/* gen in bits 0-31, bits 32-39 (ROW_CFA_FP | ROW_FP_SAVED | method
	 * << 2 | ROW_OUTERMOST), fp_off 40-47 (-8 when fp is not saved: a
	 * slot always read), cfa_off 48-63 (one shift decodes it):
	 * row_word_make() */
	uint64_t word;
};
#define ROW_CFA_FP 1u
#define ROW_FP_SAVED 2u
#define ROW_METHOD_MAX 31u
/* Every walk ends at _start or clone's outermost row: kept here, such a
 * row ends a walk in fast_walk_body() instead of a table look-up each time */
#define ROW_OUTERMOST 0x80u

static struct row_bucket {
	_Atomic uint32_t seq; /* odd while being written */
	uint32_t victim;      /* next way to replace */
	uint64_t pad;
	struct row_packed e[ROW_WAYS];
} row_cache[ROW_BUCKETS] __attribute__((aligned(64)));

_Static_assert(sizeof(struct row_bucket) == 64, "a bucket is one cache line");

static inline uint64_t row_word_make(uint32_t gen, int16_t cfa_off, int8_t fp_off, uint8_t bits)
{
	return gen | (uint64_t)bits << 32 | (uint64_t)(uint8_t)fp_off << 40 |
	       (uint64_t)(uint16_t)cfa_off << 48;
}

static inline struct row_bucket *row_bucket_of(uint64_t pc)
{
	return &row_cache[(pc * 0x9e3779b97f4a7c15ull) >> 40 & (ROW_BUCKETS - 1)];
}

/* The packed second word of @pc's entry for @gen (gen in bits 0-31,
 * cfa_off 32-47, fp_off 48-55, bits 56-63), or -ENOENT. */
static inline int row_word_get(uint32_t gen, uint64_t pc, uint64_t *dp)
{
	const struct row_bucket *b = row_bucket_of(pc);
	uint32_t s1 = atomic_load_explicit(&b->seq, memory_order_acquire);
	uint64_t k = b->e[0].pc, d;

	/*
	 * The way holding pc selected with conditional moves, not branches
	 * nor a dependent load (which way holds a pc is random on unseen
	 * stacks, and this load is on the walk's critical path); k ends as
	 * pc only if some way holds it.
	 */
	d = b->e[0].word;
#if defined(__x86_64__) && defined(__GNUC__)
	/* (gcc turns the C below into branches) */
	__asm__("cmp %[p], %[pc1]\n\tcmove %[w1], %[d]\n\tcmove %[p], %[k]\n\t"
		"cmp %[p], %[pc2]\n\tcmove %[w2], %[d]\n\tcmove %[p], %[k]"
		: [d] "+&r"(d), [k] "+&r"(k)
		: [p] "r"(pc), [pc1] "m"(b->e[1].pc), [w1] "m"(b->e[1].word),
		  [pc2] "m"(b->e[2].pc), [w2] "m"(b->e[2].word)
		: "cc");
#else
	{
		d = b->e[1].pc == pc ? b->e[1].word : d;
		k = b->e[1].pc == pc ? pc : k;
		d = b->e[2].pc == pc ? b->e[2].word : d;
		k = b->e[2].pc == pc ? pc : k;
	}
#endif
	atomic_thread_fence(memory_order_acquire);
	/* an odd s1 was read while a writer was at work: never equal below;
	 * the seq unchanged, the pcs compared above were the entries' pcs */
	if (k != pc || atomic_load_explicit(&b->seq, memory_order_relaxed) != (s1 & ~1u) ||
	    (uint32_t)d != gen)
		return -ENOENT;
	*dp = d;
	return 0;
}

static inline void row_word_decode(uint64_t d, struct row_entry *e)
{
	e->cfa_off = (int16_t)(d >> 48);
	e->fp_off = (int8_t)(d >> 40);
	e->cfa_fp = (d >> 32) & ROW_CFA_FP;
	e->fp_saved = (d >> 33) & 1;
	e->method = (uint8_t)(d >> 34) & ROW_METHOD_MAX;
	e->outermost = (uint8_t)(d >> 39) & 1;
}

static inline int row_cache_get(uint32_t gen, uint64_t pc, struct row_entry *e)
{
	uint64_t d;

	if (row_word_get(gen, pc, &d))
		return -ENOENT;
	row_word_decode(d, e);
	return 0;
}

static void row_cache_put(uint32_t gen, uint64_t pc, const struct ustack_row *row,
			  unsigned int method)
{
	struct row_bucket *b = row_bucket_of(pc);
	uint32_t s = atomic_load_explicit(&b->seq, memory_order_relaxed);
	unsigned int w;

	/* (the packed form keeps no rbx rule: a step from it leaves rbx
	 * unknown, and an rbx-based CFA is never packed); an outermost row
	 * (the cursor stops before using any of its rules) keeps no rule */
	int outer = row->flags == USTACK_ROW_OUTERMOST;

	if (method > ROW_METHOD_MAX)
		return;
	/* a saved fp at most at CFA-8 (as every compiler saves it) stays below
	 * the stack's end whenever the CFA does: fast_walk_body() checks only
	 * that it lies above sp */
	if (!outer &&
	    (row->flags || row->cfa_reg > USTACK_CFA_FP || row->ra_rule != USTACK_RULE_OFFSET ||
	     row->ra_off != -8 || row->cfa_off < INT16_MIN || row->cfa_off > INT16_MAX ||
	     (row->fp_rule == USTACK_RULE_OFFSET && (row->fp_off < INT8_MIN || row->fp_off > -8))))
		return;
	/* another writer owns the bucket: just do not cache */
	if ((s & 1) || !atomic_compare_exchange_strong(&b->seq, &s, s + 1))
		return;
	atomic_thread_fence(memory_order_release);
	for (w = 0; w < ROW_WAYS; w++)
		if (b->e[w].pc == pc || !b->e[w].pc)
			break;
	if (w == ROW_WAYS)
		w = b->victim++ % ROW_WAYS;
	b->e[w].pc = pc;
	b->e[w].word = outer ? row_word_make(gen, 0, 0, (uint8_t)(ROW_OUTERMOST | method << 2))
			     : row_word_make(gen, (int16_t)row->cfa_off,
					     row->fp_rule == USTACK_RULE_OFFSET ? (int8_t)row->fp_off : -8,
					     (uint8_t)((row->cfa_reg == USTACK_CFA_FP ? ROW_CFA_FP : 0) |
						       (row->fp_rule == USTACK_RULE_OFFSET ? ROW_FP_SAVED : 0) |
						       method << 2));
	atomic_store_explicit(&b->seq, s + 2, memory_order_release);
}

static int self_find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	struct self_ctx *c = ctx;
	int err;

	if (c->have_mod != 2 || pc < c->mod.map_start || pc >= c->mod.map_end) {
		err = module_find(pc, &c->mod, 1);
		c->have_mod = err > 0 ? err : 0;
		if (!c->have_mod)
			return -ENOENT;
	}
	err = -ENOENT;
	if (c->mod.has_sframe) {
		*method = USTACK_METHOD_SFRAME;
		err = ustack_sframe__find_row(&c->mod.sf, pc, row);
	}
	if (err == -ENOENT && c->mod.has_cfi) {
		*method = USTACK_METHOD_CFI;
		err = ustack_cfi__find_row(&c->mod.cfi, pc, row);
	}
	if (err == -ENOENT && pc >= c->mod.plt_lo && pc < c->mod.plt_hi) {
		*method = USTACK_METHOD_PLT;
		ustack_plt_row(pc, row);
		err = 0;
	}
	if (!err)
		row_cache_put(c->mod.gen, pc, row, *method);
	return err;
}

static int self_is_code(void *ctx, uint64_t pc)
{
	struct dl_find_object o;

	return !_dl_find_object((void *)(uintptr_t)pc, &o);
}

/* The module of @pc into c->mod: 0, or -ENOENT. */
__attribute__((noinline)) static int fast_module(struct self_ctx *c, uint64_t pc)
{
	/* a permanent module (a walk leaves the main executable for libc
	 * and comes back for _start): its identity, without the loader */
	int pi = atomic_load_explicit(&perm.state, memory_order_acquire) == 2 ? perm_of(pc) : -1;

	if (pi >= 0) {
		perm_identity(pi, &c->mod);
		c->have_mod = 1;
	} else {
		int got = module_find(pc, &c->mod, 0);

		c->have_mod = got > 0 ? got : 0;
	}
	return c->have_mod ? 0 : -ENOENT;
}

/* Registers as the fast path's last step left them */
struct fast_walk {
	uint64_t pc, sp, fp;
	uint64_t d; /* the last step's packed row word */
	int n;      /* frames stored */
};

/*
 * The fast path: steps through cached packed rows from w's registers until
 * @limit frames are stored. Returns 1 at the limit, 0 when the generic
 * cursor must take the next step (no cached row, a check failed, an
 * unknown module), -1 where the cursor would stop with
 * USTACK_STOP_OUTERMOST: an outermost row, or a zero return address read
 * after the same checks the cursor makes (every walk ends so; without this
 * each paid a table look-up). Reads only inside the stack range already
 * validated. Branch-free on what varies between frames (CFA from sp or fp,
 * fp saved or not): on stacks not seen before those branches would be
 * mispredicted. A function of its own, instantiated per output kind: inside
 * backtrace_from() the loop's registers were spilled to its frame.
 */
__attribute__((always_inline, no_sanitize_address)) static inline int
fast_walk_body(struct self_ctx *c, struct fast_walk *w, void *out, int limit, int frames)
{
	uint64_t pc = w->pc, sp = w->sp, fp = w->fp, hi = c->stack.hi;
	uint64_t mlo = c->mod.map_start, mspan = c->have_mod ? c->mod.map_end - mlo : 0;
	uint32_t gen = c->mod.gen;
	unsigned int pn = atomic_load_explicit(&perm.state, memory_order_acquire) == 2 ? perm.n : 0;
	int n = w->n, got = 1;

	if (n >= limit)
		goto out;
	for (;;) {
		uint64_t pc1 = pc - 1, cfa, ra, v, at, nd;
		unsigned int bits;

		if (__builtin_expect(pc1 - mlo >= mspan, 0)) {
			/* a permanent module inline (a walk leaves the main
			 * executable for libc and comes back for _start) */
			unsigned int i = 0;

			while (i < pn && pc1 - perm.m[i].start >= perm.m[i].end - perm.m[i].start)
				i++;
			if (i < pn) {
				perm_identity(i, &c->mod);
				c->have_mod = 1;
			} else if (fast_module(c, pc1)) {
				got = 0;
				break;
			}
			mlo = c->mod.map_start;
			mspan = c->mod.map_end - mlo;
			gen = c->mod.gen;
		}
		if (row_word_get(gen, pc1, &nd)) {
			got = 0;
			break;
		}
		bits = (uint8_t)(nd >> 32);
		if (bits & ROW_OUTERMOST) {
			got = -1;
			break;
		}
		cfa = (bits & ROW_CFA_FP ? fp : sp) + ((int64_t)nd >> 48);
		/* the saved fp's slot, at most CFA-8 (row_cache_put()); without
		 * a saved fp, CFA-8, read for nothing */
		at = cfa + (int64_t)(int8_t)(nd >> 40);
		if (cfa <= sp || (cfa & 7) || cfa > hi || at < sp) {
			got = 0;
			break;
		}
		__builtin_memcpy(&ra, (const void *)(uintptr_t)(cfa - 8), 8);
		__builtin_memcpy(&v, (const void *)(uintptr_t)at, 8);
		if (!ra) {
			got = -1;
			break;
		}
		fp = bits & ROW_FP_SAVED ? v : fp;
		pc = ra;
		sp = cfa;
		if (frames)
			((struct ustack_frame *)out)[n] = (struct ustack_frame){
				.pc = ra, .sp = cfa, .method = bits >> 2 & ROW_METHOD_MAX };
		else
			((void **)out)[n] = (void *)(uintptr_t)ra;
		if (++n >= limit) {
			/* (kept only here: not carried through the loop) */
			w->d = nd;
			break;
		}
	}
out:
	w->pc = pc;
	w->sp = sp;
	w->fp = fp;
	w->n = n;
	return got;
}

__attribute__((noinline, no_sanitize_address)) static int
fast_walk_pcs(struct self_ctx *c, struct fast_walk *w, void *out, int limit)
{
	return fast_walk_body(c, w, out, limit, 0);
}

__attribute__((noinline, no_sanitize_address)) static int
fast_walk_frames(struct self_ctx *c, struct fast_walk *w, void *out, int limit)
{
	return fast_walk_body(c, w, out, limit, 1);
}

/*
 * Whole-stack cache. A hot stack is walked again and again through the same
 * return addresses; instead of looking up each frame's row, a slot keyed by
 * the first pc keeps the sequence of steps of the last walk from it: per
 * step the compact row used and the return address it found. A later walk
 * from the same pc replays the rows against the live stack and checks, step
 * by step, that the return-address slot still holds the recorded value, so
 * the next row is the right one again (a row is a function of its pc and
 * module only; CFA and FP are recomputed from the live registers, so
 * alloca frames and other stacks work). The first step whose return
 * address differs ends the replay and the walk goes on from there (and
 * re-records the rest), so a hit can never produce a frame that a walk
 * through the row cache would not.
 *
 * Modules: each step names the module its row came from (start, end, link
 * map, as _dl_find_object() reported them when recorded). A replay asks
 * _dl_find_object() again, once per module per walk, and stops at the
 * first module that is not what it was (dlclose + dlopen at the same
 * address), exactly like the module slots above. Permanent modules
 * (perm) cannot be unloaded: their steps need no look-up.
 *
 * Slots are shared by all threads, written under a sequence counter (odd
 * while written, claimed with a compare-and-swap, never waited for). A
 * replay reads the slot optimistically; every load it makes is bounds
 * checked against the stack range, whatever it read, and the counter is
 * checked at the end: if the slot changed meanwhile, the walk is done
 * again without the cache.
 */
#define STK_SLOTS 64
#define STK_STEPS 128
#define STK_MODS 8

struct stk_step {
	uint64_t ra;     /* the return address this step found (never 0) */
	int32_t cfa_off;
	int16_t fp_off;
	uint8_t bits;    /* STK_CFA_FP | STK_FP_SAVED | module index << 4 */
	uint8_t method;
};
#define STK_CFA_FP 1u
#define STK_FP_SAVED 2u

struct stk_mod {
	uint64_t start, end;
	const void *link_map;
	uint64_t bid_addr, bid[2];
};

static struct stk_slot {
	_Atomic uint32_t seq; /* odd while being written; 0: never written */
	uint32_t n;           /* steps recorded */
	uint32_t nmods;
	uint32_t perm;        /* bit i: mods[i] is a permanent module */
	uint32_t full;        /* the walk went on past what a slot can hold */
	uint64_t key;         /* pc of frame 0 */
	/* Hints, written without owning the slot, never trusted for a frame:
	 * a walk is recorded only when it is seen twice in a row (the same
	 * first pc, or the same return address where the replay stopped), so
	 * a stream of stacks that never repeat does not pay for recording. */
	uint64_t hint_key, hint_ra;
	uint32_t hint_k;
	struct stk_mod mods[STK_MODS];
	struct stk_step s[STK_STEPS];
} stk_cache[STK_SLOTS];

/* Tests only: 0 turns the whole-stack cache off. */
int ustack_self_stack_cache = 1;

static inline unsigned int stk_slot_of(uint64_t pc)
{
	return (unsigned int)(pc * 0x9e3779b97f4a7c15ull >> 58) & (STK_SLOTS - 1);
}

/* _dl_find_object() still reports module @mi of @sl for @pc */
static int stk_mod_ok(const struct stk_slot *sl, unsigned int mi, uint64_t pc)
{
	struct dl_find_object o;
	const struct stk_mod *m = &sl->mods[mi & (STK_MODS - 1)];

	return !_dl_find_object((void *)(uintptr_t)pc, &o) && (uintptr_t)o.dlfo_map_start == m->start &&
	       (uintptr_t)o.dlfo_map_end == m->end && o.dlfo_link_map == m->link_map &&
	       module_same_file(m->bid_addr, m->bid);
}

/* The index of the walk's current module in claimed slot @sl, added if
 * new; -1 when the slot has no room left. */
static int stk_mod_index(struct stk_slot *sl, const struct self_ctx *c)
{
	unsigned int mi;

	for (mi = 0; mi < sl->nmods; mi++)
		if (sl->mods[mi].start == c->mod.map_start && sl->mods[mi].end == c->mod.map_end &&
		    sl->mods[mi].link_map == c->mod.link_map && sl->mods[mi].bid_addr == c->mod.bid_addr &&
		    sl->mods[mi].bid[0] == c->mod.bid[0] && sl->mods[mi].bid[1] == c->mod.bid[1])
			return mi;
	if (mi == STK_MODS)
		return -1;
	sl->mods[mi] = (struct stk_mod){ c->mod.map_start, c->mod.map_end, c->mod.link_map,
					 c->mod.bid_addr, { c->mod.bid[0], c->mod.bid[1] } };
	if (perm_is(&c->mod) >= 0)
		sl->perm |= 1u << mi;
	else
		sl->perm &= ~(1u << mi);
	sl->nmods = mi + 1;
	return mi;
}

/* What a claimed slot is being recorded with */
struct stk_rec {
	struct stk_slot *sl;
	uint32_t seq, n;
	uint32_t gen; /* module descriptor mi is for (0: none yet) */
	int mi;
};

/* Record one step into the claimed slot; 0 when the slot cannot hold it. */
__attribute__((always_inline)) static inline int stk_record(struct stk_rec *r, const struct self_ctx *c,
							   const struct row_entry *e, uint64_t ra)
{
	if (__builtin_expect(r->gen != c->mod.gen, 0)) {
		r->mi = stk_mod_index(r->sl, c);
		r->gen = c->mod.gen;
	}
	if (r->n >= STK_STEPS || r->mi < 0)
		return 0;
	r->sl->s[r->n++] = (struct stk_step){
		.ra = ra, .cfa_off = e->cfa_off, .fp_off = e->fp_off,
		.bits = (uint8_t)((e->cfa_fp ? STK_CFA_FP : 0) | (e->fp_saved ? STK_FP_SAVED : 0) |
				  r->mi << 4),
		.method = e->method,
	};
	return 1;
}

static void stk_release(struct stk_rec *r, int full)
{
	r->sl->n = r->n;
	r->sl->full = full;
	atomic_store_explicit(&r->sl->seq, r->seq + 2, memory_order_release);
	r->sl = NULL;
}

/*
 * Common body of the public entry points: we start from our caller's
 * registers, recovered from our own frame (which
 * __builtin_frame_address(0) forces to have rbp set up). Ordinary frames
 * go through fast_walk_body(); anything else (cache miss, module change, signal
 * frame, fallback, the end) through the generic cursor, one step at a time,
 * so both give the same frames.
 */
typedef void (*frame_sink_fn)(void *sink, int i, const struct ustack_frame *f);
typedef int (*fast_walk_fn)(struct self_ctx *c, struct fast_walk *w, void *out, int limit);

/*
 * Replay the steps of slot @sl from @r (frame *n - 1) while they match the
 * live stack; returns the number of steps replayed.
 */
__attribute__((no_sanitize_address, always_inline))
static inline uint32_t stk_replay(const struct stk_slot *sl, uint64_t hi, struct ustack_regs *r,
				  int *n, int size, frame_sink_fn sink, void *arg, uint64_t *other)
{
	uint32_t cnt = sl->n, valid = sl->perm, k;
	uint64_t pc = r->pc, sp = r->sp, fp = r->fp;
	int i = *n;

	if (cnt > STK_STEPS)
		cnt = STK_STEPS;
	if (cnt > (uint32_t)(size - i))
		cnt = size - i;
	for (k = 0; k < cnt; k++) {
		const struct stk_step *st = &sl->s[k];
		unsigned int mi = st->bits >> 4;
		uint64_t cfa, ra, nfp = fp;
		struct ustack_frame f;

		if (__builtin_expect(!(valid >> mi & 1), 0)) {
			if (!stk_mod_ok(sl, mi, pc - 1))
				break;
			valid |= 1u << mi;
		}
		cfa = (st->bits & STK_CFA_FP ? fp : sp) + (int64_t)st->cfa_off;
		if (cfa <= sp || (cfa & 7) || cfa > hi)
			break;
		__builtin_memcpy(&ra, (const void *)(uintptr_t)(cfa - 8), 8);
		if (ra != st->ra) {
			*other = ra;
			break;
		}
		if (st->bits & STK_FP_SAVED) {
			uint64_t at = cfa + (int64_t)st->fp_off;

			if (at < sp || at > hi - 8)
				break;
			__builtin_memcpy(&nfp, (const void *)(uintptr_t)at, 8);
		}
		pc = ra;
		sp = cfa;
		fp = nfp;
		f = (struct ustack_frame){ .pc = pc, .sp = sp, .method = st->method };
		sink(arg, i++, &f);
	}
	r->pc = pc;
	r->sp = sp;
	r->fp = fp;
	*n = i;
	return k;
}

/*
 * Common body of the public entry points: we start from our caller's
 * registers, recovered from our own frame (which
 * __builtin_frame_address(0) forces to have rbp set up). A whole-stack
 * cache hit replays as many steps as still match; ordinary frames go
 * through fast_walk_body(); anything else (cache miss, module change, signal
 * frame, fallback, the end) through the generic cursor, one step at a time,
 * so all three give the same frames.
 */
__attribute__((no_sanitize_address, always_inline))
static inline int backtrace_from(uint64_t fp, uint64_t ra, int size, frame_sink_fn sink, void *arg,
			  unsigned int *stop, fast_walk_fn walk)
{
	struct self_ctx c;
	struct ustack_unwind_cursor cur;
	struct ustack_regs regs, regs0;
	struct ustack_frame f;
	struct stk_slot *sl = NULL;
	struct stk_rec rec = { 0 };
	uint32_t seq = 0;
	int n = 0, exact = 0, bx_known = 0;
	uint64_t bx = 0;

	c.have_mod = 0;
	c.stack = self_stack;
	if (fp < c.stack.lo || fp + 16 > c.stack.hi) {
		if (self_vma(fp, &c.stack)) {
			if (stop)
				*stop = USTACK_STOP_READ_FAULT;
			return 0;
		}
		self_stack = c.stack;
	}
	/* our frame: [fp] = caller's rbp, [fp + 8] = return address */
	regs.pc = ra;
	regs.sp = fp + 16;
	regs.fp = *(const uint64_t *)(uintptr_t)fp;
	f = (struct ustack_frame){ .pc = regs.pc, .sp = regs.sp, .method = USTACK_METHOD_REGS };
	sink(arg, n++, &f);

	if (ustack_self_stack_cache && n < size) {
		sl = &stk_cache[stk_slot_of(ra)];
		seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
	}
	if (sl && !(seq & 1)) {
		if (seq && sl->key == ra) {
			uint64_t other = 0;
			uint32_t k;
			int again;

			regs0 = regs;
			k = stk_replay(sl, c.stack.hi, &regs, &n, size, sink, arg, &other);
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&sl->seq, memory_order_relaxed) != seq) {
				/* rewritten under us: what we replayed may be torn */
				regs = regs0;
				n = 1;
			} else if (n < size && !(k == sl->n && sl->full)) {
				/* ran out of steps (the stack goes on as recorded),
				 * or a stack that differs at k as the last one did */
				again = k >= sl->n || (sl->hint_k == k && sl->hint_ra == other);
				if (!again) {
					sl->hint_k = k;
					sl->hint_ra = other;
				} else if (atomic_compare_exchange_strong(&sl->seq, &seq, seq + 1)) {
					/* the k steps replayed are still the slot's: go
					 * on recording from there */
					rec = (struct stk_rec){ .sl = sl, .seq = seq, .n = k };
				}
			}
		} else if (sl->hint_key != ra) {
			sl->hint_key = ra;
		} else if (atomic_compare_exchange_strong(&sl->seq, &seq, seq + 1)) {
			rec = (struct stk_rec){ .sl = sl, .seq = seq };
			sl->key = ra;
			sl->nmods = 0;
			sl->perm = 0;
		}
	}

	while (n < size) {
		struct ustack_regs prev;
		struct row_entry e;

		if (!exact) {
			/* ordinary frames; one step at a time while recording */
			struct fast_walk w = { .pc = regs.pc, .sp = regs.sp, .fp = regs.fp, .n = n };
			int got;

			do {
				got = walk(&c, &w, arg, rec.sl ? w.n + 1 : size);
				if (__builtin_expect(rec.sl != NULL, 0) && w.n > n) {
					struct row_entry fe;

					row_word_decode(w.d, &fe);
					if (!stk_record(&rec, &c, &fe, w.pc))
						stk_release(&rec, 1);
				}
				n = w.n;
			} while (got > 0 && n < size);
			if (w.pc != regs.pc)
				bx_known = 0; /* packed rows keep no rbx rule */
			regs.pc = w.pc;
			regs.sp = w.sp;
			regs.fp = w.fp;
			if (n >= size)
				break;
			if (got < 0) {
				if (rec.sl)
					stk_release(&rec, 1);
				if (stop)
					*stop = USTACK_STOP_OUTERMOST;
				return n;
			}
		}
		prev = regs;
		/* the generic cursor from the current registers: its first
		 * frame is the current one, its second the step we want (set
		 * up here, off the path of cached frames) */
		struct ustack_unwind_ops ops = {
			.find_row = self_find_row,
			.read = self_read,
			.is_code = self_is_code,
			.ctx = &c,
		};
		/* rbx as the last step left it: a frame interrupted by a signal
		 * (rbx from its context) may have an rbx-based CFA
		 * (_dl_runtime_resolve, DRAP functions) */
		struct ustack_walk_opts opts = {
			.sz = sizeof(opts), .first_is_return = !exact, .stack_lo = regs.sp,
			.bx = bx, .has_bx = bx_known,
		};

		ustack_unwind_begin(&cur, &ops, &regs, &opts);
		if (!ustack_unwind_next(&cur, &f) || !ustack_unwind_next(&cur, &f)) {
			if (rec.sl)
				stk_release(&rec, 1);
			if (stop)
				*stop = cur.reason;
			return n;
		}
		regs = cur.cur;
		exact = !cur.is_return;
		bx = cur.bx;
		bx_known = cur.bx_known;
		sink(arg, n++, &f);
		if (rec.sl) {
			/* keep recording only a step the compact row reproduces */
			uint64_t pc = prev.pc - 1, cfa, ra2, fp2 = prev.fp;
			int ok = !exact && c.have_mod && pc >= c.mod.map_start && pc < c.mod.map_end &&
				 !row_cache_get(c.mod.gen, pc, &e);

			if (ok) {
				cfa = (e.cfa_fp ? prev.fp : prev.sp) + (int64_t)e.cfa_off;
				ok = cfa > prev.sp && !(cfa & 7) && cfa <= c.stack.hi && cfa == regs.sp;
			}
			if (ok) {
				__builtin_memcpy(&ra2, (const void *)(uintptr_t)(cfa - 8), 8);
				if (e.fp_saved) {
					uint64_t at = cfa + (int64_t)e.fp_off;

					ok = at >= prev.sp && at <= c.stack.hi - 8;
					if (ok)
						__builtin_memcpy(&fp2, (const void *)(uintptr_t)at, 8);
				}
				ok = ok && ra2 && ra2 == regs.pc && fp2 == regs.fp;
			}
			if (!ok || !stk_record(&rec, &c, &e, regs.pc))
				stk_release(&rec, 1);
		}
	}
	if (rec.sl)
		stk_release(&rec, 0);
	if (stop)
		*stop = USTACK_STOP_DEPTH;
	return n;
}

static void sink_pcs(void *arg, int i, const struct ustack_frame *f)
{
	((void **)arg)[i] = (void *)(uintptr_t)f->pc;
}

static void sink_frames(void *arg, int i, const struct ustack_frame *f)
{
	((struct ustack_frame *)arg)[i] = *f;
}

USTACK_API __attribute__((noinline)) int ustack_backtrace(void **buffer, int size)
{
	if (size <= 0)
		return 0;
	return backtrace_from((uintptr_t)__builtin_frame_address(0),
			      (uintptr_t)__builtin_return_address(0), size, sink_pcs, buffer, NULL,
			      fast_walk_pcs);
}

USTACK_API __attribute__((noinline)) int ustack_backtrace_frames(struct ustack_frame *frames,
								 int size, unsigned int *stop)
{
	if (size <= 0) {
		if (stop)
			*stop = USTACK_STOP_DEPTH;
		return 0;
	}
	return backtrace_from((uintptr_t)__builtin_frame_address(0),
			      (uintptr_t)__builtin_return_address(0), size, sink_frames, frames,
			      stop, fast_walk_frames);
}
