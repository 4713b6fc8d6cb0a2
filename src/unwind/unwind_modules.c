// SPDX-License-Identifier: MIT
/* Per-file unwind tables and their cache (see modules.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfi/cfi.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "sframe/sframe.h"
#include "unwind/modules.h"
#include "unwind/modules_internal.h"
#include "unwind/unwind.h"

struct ustack_modcache {
	struct ustack_modtab **tabs;
	unsigned int nr, max, flags;
	uint64_t clock, serial;
	uint64_t opened, evicted;
};

struct ustack_modcache *ustack_modcache__new(unsigned int max_files, unsigned int flags)
{
	struct ustack_modcache *mc = calloc(1, sizeof(*mc));

	if (!mc)
		return NULL;
	mc->flags = flags;
	mc->max = max_files ? max_files : USTACK_MODCACHE_DEFAULT_MAX;
	mc->tabs = calloc(mc->max, sizeof(*mc->tabs));
	if (!mc->tabs) {
		free(mc);
		return NULL;
	}
	return mc;
}

static void modtab_free(struct ustack_modtab *m)
{
	if (!m)
		return;
	ustack_cfi_table__free(m->cfi_table);
	ustack_cfi_index__free(m->cfi_index);
	ustack_elf__close(m->elf);
	free(m->mem_copy);
	free(m);
}

void ustack_modtab__put(struct ustack_modtab *m)
{
	if (m && !--m->refs)
		modtab_free(m);
}

struct ustack_modtab *ustack_modtab__get(struct ustack_modtab *m)
{
	if (m)
		m->refs++;
	return m;
}

/* The cache lets go of the table in @slot; a holder may keep it alive. */
static void modcache_drop(struct ustack_modcache *mc, unsigned int slot)
{
	struct ustack_modtab *m = mc->tabs[slot];

	mc->tabs[slot] = NULL;
	m->slot = -1;
	ustack_modtab__put(m);
}

void ustack_modcache__free(struct ustack_modcache *mc)
{
	if (!mc)
		return;
	for (unsigned int i = 0; i < mc->nr; i++)
		modcache_drop(mc, i);
	free(mc->tabs);
	free(mc);
}

/* Find the tables inside an opened ELF file. A corrupt section is
 * reported here, once, and not used. */
static void modtab_load(struct ustack_modtab *m)
{
	struct ustack_elf_section s;
	struct ustack_sframe_error err;
	int ret;

	if (!ustack_elf__section(m->elf, ".sframe", &s) && s.data) {
		ret = ustack_sframe__init_err(&m->sf, s.data, s.size, s.addr, &err);
		if (!ret) {
			m->has_sframe = 1;
		} else {
			char msg[256];

			ustack_sframe_error__format(&err, msg, sizeof(msg));
			pr_warn("%s: .sframe: %s (not used)\n", ustack_elf__path(m->elf), msg);
		}
	}
	{
		static const char *const plts[] = { ".plt", ".plt.sec", ".iplt" };

		for (int i = 0; i < 3; i++)
			if (!ustack_elf__section(m->elf, plts[i], &s) && s.size)
				m->plt[i][0] = s.addr, m->plt[i][1] = s.addr + s.size;
		if (ustack_elf__type(m->elf) == ET_EXEC || ustack_elf__type(m->elf) == ET_DYN)
			m->entry = ustack_elf__entry(m->elf);
	}
	ret = ustack_cfi__init_elf(&m->cfi, m->elf, 1);
	if (!ret)
		m->has_cfi = 1;
	else if (ret != -ENOENT)
		pr_warn("%s: DWARF CFI header corrupt (not used)\n", ustack_elf__path(m->elf));
}

/* Make room: drop the least recently used entry when full. */
static int modcache_slot(struct ustack_modcache *mc)
{
	unsigned int victim = 0;

	if (mc->nr < mc->max)
		return mc->nr++;
	for (unsigned int i = 1; i < mc->nr; i++)
		if (mc->tabs[i]->last_use < mc->tabs[victim]->last_use)
			victim = i;
	modcache_drop(mc, victim);
	mc->evicted++;
	return victim;
}

/* A new table enters the cache (which keeps one reference) and goes to
 * the caller with another. */
static struct ustack_modtab *modcache_insert(struct ustack_modcache *mc, struct ustack_modtab *m)
{
	int slot = modcache_slot(mc);

	mc->tabs[slot] = m;
	m->slot = slot;
	m->serial = ++mc->serial;
	m->refs = 1;
	m->last_use = ++mc->clock;
	mc->opened++;
	if (!m->elf) {
		errno = EBADMSG;
		return NULL;
	}
	return ustack_modtab__get(m);
}

/* A cached table found again: a new reference for the caller. */
static struct ustack_modtab *modcache_hit(struct ustack_modcache *mc, struct ustack_modtab *m)
{
	m->last_use = ++mc->clock;
	if (!m->elf) {
		errno = EBADMSG;
		return NULL;
	}
	return ustack_modtab__get(m);
}

/* The cached table of the file @st describes, or NULL. */
static struct ustack_modtab *modcache_find(struct ustack_modcache *mc, const struct stat *st)
{
	uint64_t mtime = (uint64_t)st->st_mtim.tv_sec * 1000000000ull + st->st_mtim.tv_nsec;

	for (unsigned int i = 0; i < mc->nr; i++) {
		struct ustack_modtab *m = mc->tabs[i];

		if (!m->is_mem && m->dev == st->st_dev && m->ino == st->st_ino &&
		    m->size == (uint64_t)st->st_size && m->mtime_ns == mtime)
			return m;
	}
	return NULL;
}

struct ustack_modtab *ustack_modcache__get(struct ustack_modcache *mc, const char *path)
{
	struct ustack_modtab *m;
	struct stat st;
	int fd, err;

	if (stat(path, &st))
		return NULL;
	if ((m = modcache_find(mc, &st)))
		return modcache_hit(mc, m);
	/* A miss: the identity is taken again from the descriptor the
	 * contents are read from. A path can name another file from one
	 * moment to the next (/proc/PID/map_files/START-END once the process
	 * unmapped the file and mapped another there; a file renamed over):
	 * the stat() above and the open() here could see two files, and one
	 * file's tables would be cached under the other's identity.
	 * O_NONBLOCK: a FIFO's open would wait for a writer (it is refused
	 * as not an ELF file). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	if ((m = modcache_find(mc, &st))) {
		close(fd);
		return modcache_hit(mc, m);
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		return NULL;
	}
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->size = st.st_size;
	m->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
	m->compile_cfi = !!(mc->flags & USTACK_MODCACHE_COMPILE_CFI);
	m->elf = ustack_elf__open_fd(fd, path);
	err = errno;
	close(fd);
	if (m->elf) {
		modtab_load(m);
	} else if (err != EBADMSG && err != EINVAL) {
		/* could not open it now (the process exited, no permission,
		 * no memory): not a verdict on the file, so not remembered */
		free(m);
		errno = err;
		return NULL;
	}
	return modcache_insert(mc, m);
}

struct ustack_modtab *ustack_modcache__get_mem(struct ustack_modcache *mc, uint64_t key,
					       const void *image, size_t size, const char *name)
{
	struct ustack_modtab *m;

	for (unsigned int i = 0; i < mc->nr; i++) {
		m = mc->tabs[i];
		if (m->is_mem && m->mem_key == key && m->size == size &&
		    !memcmp(m->mem_copy, image, size))
			return modcache_hit(mc, m);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->is_mem = 1;
	m->mem_key = key;
	m->compile_cfi = !!(mc->flags & USTACK_MODCACHE_COMPILE_CFI);
	m->size = size;
	m->mem_copy = malloc(size ? size : 1);
	if (!m->mem_copy) {
		free(m);
		return NULL;
	}
	memcpy(m->mem_copy, image, size);
	m->elf = ustack_elf__open_mem(m->mem_copy, size, name);
	if (m->elf)
		modtab_load(m);
	return modcache_insert(mc, m);
}

struct ustack_modref ustack_modtab__ref(const struct ustack_modtab *m)
{
	return (struct ustack_modref){ .serial = m ? m->serial : 0, .slot = m ? m->slot : -1 };
}

struct ustack_modtab *ustack_modcache__lookup(struct ustack_modcache *mc, struct ustack_modref ref)
{
	struct ustack_modtab *m;

	if (ref.slot < 0 || (unsigned int)ref.slot >= mc->nr)
		return NULL;
	m = mc->tabs[ref.slot];
	if (!m || m->serial != ref.serial || !m->elf)
		return NULL;
	m->last_use = ++mc->clock;
	return ustack_modtab__get(m);
}

void ustack_modcache__stats(const struct ustack_modcache *mc, uint64_t *opened, uint64_t *evicted)
{
	*opened = mc->opened;
	*evicted = mc->evicted;
}

static int find_row_tables(struct ustack_modtab *m, uint64_t vaddr, struct ustack_row *row,
			   unsigned int *method)
{
	int ret = -ENOENT;

	if (m->has_sframe) {
		ret = ustack_sframe__find_row(&m->sf, vaddr, row);
		if (ret == -EBADMSG) {
			pr_warn("%s: .sframe corrupt near 0x%llx (not used again)\n",
				ustack_elf__path(m->elf), (unsigned long long)vaddr);
			m->has_sframe = 0;
		}
		if (!ret) {
			*method = USTACK_METHOD_SFRAME;
			return 0;
		}
	}
	if (m->has_cfi) {
		const struct ustack_cfi_table *t = ustack_modtab__cfi_table(m);
		const struct ustack_cfi_index *ix = t ? NULL : ustack_modtab__cfi_index(m);

		ret = t ? ustack_cfi_table__find_row(t, vaddr, row)
			: ix ? ustack_cfi_index__find_row(&m->cfi, ix, vaddr, row)
			: ustack_cfi__find_row(&m->cfi, vaddr, row);
		/* one bad FDE does not spoil the rest: say it once per file */
		if (ret == -EBADMSG && !m->cfi_warned) {
			m->cfi_warned = 1;
			pr_warn("%s: %s corrupt near 0x%llx\n", ustack_elf__path(m->elf),
				ustack_cfi__section_name(&m->cfi), (unsigned long long)vaddr);
		}
		if (!ret)
			*method = USTACK_METHOD_CFI;
	}
	/* a PLT stub no table covers (static executables) */
	for (int i = 0; ret == -ENOENT && i < 3; i++) {
		if (vaddr >= m->plt[i][0] && vaddr < m->plt[i][1]) {
			ustack_plt_row(vaddr, row);
			*method = USTACK_METHOD_PLT;
			ret = 0;
		}
	}
	return ret;
}

/* Whether [entry, vaddr] lies in the table gap that holds the entry point
 * (ustack_entry_row()). Only asked for a pc no table covers within
 * USTACK_ENTRY_GAP_MAX bytes after the entry, so the byte-wise scan is rare
 * and short. */
static int in_entry_gap(struct ustack_modtab *m, uint64_t vaddr)
{
	struct ustack_row r;
	unsigned int meth;

	if (!m->entry || m->entry == UINT64_MAX || vaddr < m->entry ||
	    vaddr - m->entry >= USTACK_ENTRY_GAP_MAX)
		return 0;
	for (uint64_t p = m->entry; p < vaddr; p++)
		if (find_row_tables(m, p, &r, &meth) != -ENOENT)
			return 0;
	return 1;
}

int ustack_modtab__find_row(struct ustack_modtab *m, uint64_t vaddr, struct ustack_row *row,
			    unsigned int *method)
{
	int ret = find_row_tables(m, vaddr, row, method);

	if (ret == -ENOENT && in_entry_gap(m, vaddr)) {
		/* the row as far as this pc is known to lie in the gap */
		ustack_entry_row(m->entry, vaddr + 1, row);
		*method = USTACK_METHOD_CFI;
		ret = 0;
	}
	return ret;
}

struct ustack_elf *ustack_modtab__elf(struct ustack_modtab *m)
{
	return m->elf;
}

void ustack_modtab__file(const struct ustack_modtab *m, uint64_t *dev, uint64_t *ino)
{
	*dev = m && !m->is_mem ? m->dev : 0;
	*ino = m && !m->is_mem ? m->ino : 0;
}
