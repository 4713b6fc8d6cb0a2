// SPDX-License-Identifier: MIT
/* The recorder's picture of each process's executable mappings (perf_maps.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ustack/hashmap.h>
#include <ustack/trace.h>
#include "common/log.h"
#include "elf/elf_file.h"
#include "record/recmaps.h"

struct recmaps_proc {
	uint32_t pid;
	struct pm_vma *v; /* sorted by start, not overlapping */
	size_t n, cap;
	int root_fd;      /* capture: O_PATH of its root, when not ours */
	int root_checked; /* root_fd is known (-1: ours, or unknown) */
};

/* What the recorder keeps per file beside procmaps' record of it. */
struct recmaps_tables {
	struct ustack_modref mod; /* weak: the cache may evict the tables */
	int failed;               /* cannot be opened: not tried again */
	uint8_t pin;              /* enum recmaps_pin */
	int pin_fd, pin_root;     /* RECMAPS_PIN_HELD: the file, its process's root (or -1) */
	uint32_t pin_pid;
};

struct ustack_recmaps {
	struct ustack_u64map *procs; /* pid -> struct recmaps_proc * */
	struct ustack_procmaps *files; /* the file table (ids, file_map) */
	struct recmaps_tables *tabs;   /* per file index */
	size_t cap_tabs;
	struct ustack_modcache *mc;
	uint32_t cur_pid;
	struct recmaps_proc *cur; /* last process looked up */
	unsigned int pin_max, pin_open; /* capture: descriptors kept at most, now */
};

struct ustack_recmaps *ustack_recmaps__new(struct ustack_modcache *mc)
{
	struct ustack_recmaps *rm = calloc(1, sizeof(*rm));

	if (!rm)
		return NULL;
	/* build IDs and debuglinks come from the tables the unwinder opens */
	rm->files = pm_open_file_table(PM_SEQUENTIAL_IDS | USTACK_PROCMAPS_NO_ELF);
	rm->procs = ustack_u64map__new();
	if (!rm->files || !rm->procs) {
		ustack_procmaps__close(rm->files);
		ustack_u64map__free(rm->procs);
		free(rm);
		errno = ENOMEM;
		return NULL;
	}
	rm->mc = mc;
	return rm;
}

static void proc_free(struct recmaps_proc *p)
{
	if (p->root_fd >= 0)
		close(p->root_fd);
	free(p->v);
	free(p);
}

void ustack_recmaps__free(struct ustack_recmaps *rm)
{
	size_t iter = 0;
	uint64_t pid, val;

	if (!rm)
		return;
	while (ustack_u64map__next(rm->procs, &iter, &pid, &val))
		proc_free((struct recmaps_proc *)(uintptr_t)val);
	ustack_u64map__free(rm->procs);
	ustack_procmaps__close(rm->files);
	for (size_t i = 0; i < rm->cap_tabs; i++)
		if (rm->tabs[i].pin == RECMAPS_PIN_HELD) {
			close(rm->tabs[i].pin_fd);
			if (rm->tabs[i].pin_root >= 0)
				close(rm->tabs[i].pin_root);
		}
	free(rm->tabs);
	free(rm);
}

static struct recmaps_proc *proc_get(struct ustack_recmaps *rm, uint32_t pid, int create)
{
	struct recmaps_proc *p;
	uint64_t val;

	if (rm->cur && rm->cur->pid == pid)
		return rm->cur;
	if (ustack_u64map__get(rm->procs, pid, &val))
		return rm->cur = (struct recmaps_proc *)(uintptr_t)val;
	if (!create)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->root_fd = -1;
	if (ustack_u64map__put(rm->procs, pid, (uintptr_t)p)) {
		free(p);
		return NULL;
	}
	return rm->cur = p;
}

static void proc_drop(struct ustack_recmaps *rm, uint32_t pid)
{
	uint64_t val;

	if (ustack_u64map__delete(rm->procs, pid, &val)) {
		struct recmaps_proc *p = (struct recmaps_proc *)(uintptr_t)val;

		if (rm->cur == p)
			rm->cur = NULL;
		proc_free(p);
	}
}

/* procmaps' file of a mapping (-1: none), with room for its tables entry. */
static int32_t file_of(struct ustack_recmaps *rm, const char *path, uint32_t maj, uint32_t min,
		       uint64_t ino, const uint8_t *bid, uint32_t bid_size, uint64_t start,
		       uint64_t end, uint32_t *kind, uint32_t *vflags)
{
	size_t plen = strlen(path);
	const char *name;
	struct pm_file *f;
	int32_t idx;

	*vflags = USTACK_VMA_READ | USTACK_VMA_EXEC;
	/* perf names anonymous memory "//anon" (and anonymous huge pages
	 * "/anon_hugepage"): JIT code, not a file, so its frames keep file id
	 * 0 and their absolute address for the JIT maps */
	if (!strcmp(path, "//anon") || (!ino && !strcmp(path, "/anon_hugepage"))) {
		*kind = USTACK_VMA_JIT;
		return -1;
	}
	if (path[0] == '/') {
		/* the kernel marks unlinked files in the name */
		if (plen > 10 && !strcmp(path + plen - 10, " (deleted)")) {
			plen -= 10;
			*vflags |= USTACK_VMA_DELETED;
		}
		*kind = USTACK_VMA_FILE;
	} else if (!strcmp(path, "[vdso]")) {
		*kind = USTACK_VMA_VDSO;
		start = end = 0; /* one file for every process: the same image */
	} else {
		*kind = USTACK_VMA_JIT;
		return -1;
	}
	name = pm_intern(rm->files, path, plen);
	if (!name)
		return -ENOMEM;
	idx = pm_file_lookup(rm->files, *kind, maj, min, ino, name, start, end);
	if (idx < 0)
		return idx;
	f = pm_file_at(rm->files, idx);
	f->flags |= *vflags & USTACK_VMA_DELETED;
	if (bid_size && !f->build_id_size) {
		f->build_id_size = bid_size < USTACK_BUILD_ID_MAX ? bid_size : USTACK_BUILD_ID_MAX;
		memcpy(f->build_id, bid, f->build_id_size);
		f->build_id_source = USTACK_BUILD_ID_KERNEL;
	}
	if ((size_t)idx >= rm->cap_tabs) {
		size_t cap = rm->cap_tabs ? 2 * rm->cap_tabs : 64;
		struct recmaps_tables *t;

		while (cap <= (size_t)idx)
			cap *= 2;
		t = realloc(rm->tabs, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + rm->cap_tabs, 0, (cap - rm->cap_tabs) * sizeof(*t));
		rm->tabs = t;
		rm->cap_tabs = cap;
	}
	return idx;
}

/* ---- capture: descriptors of the mapped files ---------------------------------------- */

void ustack_recmaps__pin_files(struct ustack_recmaps *rm, unsigned int max_fds)
{
	rm->pin_max = max_fds;
}

/* An O_PATH descriptor of @p's root when it is not ours (a container, a
 * chroot), for the debug files inside it; -1 otherwise. */
static int proc_root(struct recmaps_proc *p)
{
	char path[64];
	struct stat self, other;

	if (p->root_checked)
		return p->root_fd;
	p->root_checked = 1;
	snprintf(path, sizeof(path), "/proc/%u/root", p->pid);
	if (stat("/proc/self/root", &self) || stat(path, &other) ||
	    (self.st_dev == other.st_dev && self.st_ino == other.st_ino))
		return -1;
	p->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return p->root_fd;
}

/* The map_files entry of the VMA holding @start now: the record's range
 * is the mmap() call's, and the VMA may have been split (mprotect) or
 * merged since. -1 with errno ENOENT when there is none. */
static int open_covering(uint32_t pid, uint64_t start)
{
	char path[320];
	struct dirent *de;
	DIR *d;
	int fd = -1;

	snprintf(path, sizeof(path), "/proc/%u/map_files", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		unsigned long long a, b;

		if (sscanf(de->d_name, "%llx-%llx", &a, &b) != 2 || start < a || start >= b)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/map_files/%s", pid, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		break;
	}
	closedir(d);
	if (fd < 0 && !errno)
		errno = ENOENT;
	return fd;
}

/* Keep a descriptor of file @idx, opened through @p's mapping of it: the
 * content the process runs, also after it exited or the file was deleted
 * or unmounted. One per file, whichever process maps it first. */
static void pin_file(struct ustack_recmaps *rm, struct recmaps_proc *p, int32_t idx, uint32_t kind,
		     uint64_t start, uint64_t end, uint64_t ino)
{
	struct recmaps_tables *t = &rm->tabs[idx];
	char path[80];
	struct stat sb;
	int fd, root;

	if (kind != USTACK_VMA_FILE) {
		t->pin = RECMAPS_PIN_NOT_FILE;
		return;
	}
	if (t->pin != RECMAPS_PIN_NONE && t->pin != RECMAPS_PIN_GONE)
		return;
	if (rm->pin_open >= rm->pin_max) {
		t->pin = RECMAPS_PIN_CAPPED;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", p->pid,
		 (unsigned long long)start, (unsigned long long)end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		fd = open_covering(p->pid, start);
	if (fd < 0) {
		pr_debug("capture: %s (%s): %s\n", path, pm_file_at(rm->files, idx)->path,
			 strerror(errno));
		t->pin = errno == ENOENT || errno == ESRCH ? RECMAPS_PIN_GONE : RECMAPS_PIN_ERROR;
		return;
	}
	/* the mapping there now may be another file than the record's */
	if (fstat(fd, &sb) || sb.st_ino != ino) {
		pr_debug("capture: %s: inode %llu, not the record's %llu\n", path,
			 (unsigned long long)sb.st_ino, (unsigned long long)ino);
		close(fd);
		t->pin = RECMAPS_PIN_GONE;
		return;
	}
	root = proc_root(p);
	t->pin_root = root >= 0 ? fcntl(root, F_DUPFD_CLOEXEC, 0) : -1;
	t->pin_fd = fd;
	t->pin_pid = p->pid;
	t->pin = RECMAPS_PIN_HELD;
	rm->pin_open += 1 + (t->pin_root >= 0);
}

enum recmaps_pin ustack_recmaps__take_pin(struct ustack_recmaps *rm, uint64_t file_id, int *fd,
					  int *root_fd, uint32_t *pid)
{
	struct recmaps_tables *t;
	enum recmaps_pin st;

	*fd = *root_fd = -1;
	if (!file_id || file_id > rm->cap_tabs)
		return RECMAPS_PIN_NONE;
	t = &rm->tabs[file_id - 1]; /* ids are 1, 2, ... (PM_SEQUENTIAL_IDS) */
	st = (enum recmaps_pin)t->pin;
	if (st != RECMAPS_PIN_HELD) {
		if (st != RECMAPS_PIN_NOT_FILE)
			t->pin = RECMAPS_PIN_TAKEN;
		return st;
	}
	*fd = t->pin_fd;
	*root_fd = t->pin_root;
	*pid = t->pin_pid;
	rm->pin_open -= 1 + (t->pin_root >= 0);
	t->pin = RECMAPS_PIN_TAKEN;
	return RECMAPS_PIN_HELD;
}

int ustack_recmaps__mmap(struct ustack_recmaps *rm, uint32_t pid, uint64_t start, uint64_t len,
			 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
			 const uint8_t *build_id, uint32_t build_id_size, const char *path)
{
	struct recmaps_proc *p;
	struct pm_vma v = { .start = start, .end = start + len, .pgoff = pgoff, .inode = ino,
			    .dev_major = maj, .dev_minor = min };

	if (!len || v.end < start)
		return -EINVAL;
	p = proc_get(rm, pid, 1);
	if (!p)
		return -ENOMEM;
	v.file = file_of(rm, path ? path : "", maj, min, ino, build_id, build_id_size, v.start,
			 v.end, &v.kind, &v.flags);
	if (v.file < -1)
		return v.file;
	if (v.file >= 0)
		v.name = pm_file_at(rm->files, v.file)->path;
	if (v.file >= 0 && rm->pin_max)
		pin_file(rm, p, v.file, v.kind, v.start, v.end, ino);
	return pm_vmas_replace(&p->v, &p->n, &p->cap, &v);
}

int ustack_recmaps__fork(struct ustack_recmaps *rm, uint32_t pid, uint32_t ppid)
{
	struct recmaps_proc *parent, *child;

	proc_drop(rm, pid); /* a reused pid starts fresh */
	child = proc_get(rm, pid, 1);
	if (!child)
		return -ENOMEM;
	parent = proc_get(rm, ppid, 0);
	rm->cur = child;
	if (!parent || !parent->n)
		return 0;
	child->v = malloc(parent->n * sizeof(*child->v));
	if (!child->v)
		return -ENOMEM;
	memcpy(child->v, parent->v, parent->n * sizeof(*child->v));
	child->n = child->cap = parent->n;
	return 0;
}

void ustack_recmaps__exec(struct ustack_recmaps *rm, uint32_t pid)
{
	struct recmaps_proc *p = proc_get(rm, pid, 0);

	if (!p)
		return;
	p->n = 0;
	/* `chroot ROOT prog` changes its root before this exec: the root seen
	 * at the old image's mapping is not where the new one's debug files are */
	if (p->root_fd >= 0)
		close(p->root_fd);
	p->root_fd = -1;
	p->root_checked = 0;
}

void ustack_recmaps__exit(struct ustack_recmaps *rm, uint32_t pid)
{
	proc_drop(rm, pid);
}

int ustack_recmaps__synthesize(struct ustack_recmaps *rm, uint32_t pid)
{
	struct ustack_procmaps_opts o = { .sz = sizeof(o), .flags = USTACK_PROCMAPS_NO_ELF |
								   USTACK_PROCMAPS_NO_KERNEL_BUILD_ID };
	struct ustack_procmaps *live = ustack_procmaps__open((int)pid, &o);
	struct ustack_vma vma;
	uint64_t addr = 0;
	int n = 0, ret;

	if (!live)
		return -errno;
	ustack_recmaps__exec(rm, pid);
	while (!(ret = ustack_procmaps__next(live, addr, USTACK_VMA_EXEC, &vma))) {
		char name[4096 + 16];

		/* the picture keeps the kernel's spelling of unlinked files */
		snprintf(name, sizeof(name), "%s%s", vma.name ? vma.name : "",
			 vma.flags & USTACK_VMA_DELETED ? " (deleted)" : "");
		ret = ustack_recmaps__mmap(rm, pid, vma.start, vma.end - vma.start, vma.pgoff,
					   vma.dev_major, vma.dev_minor, vma.inode, NULL, 0,
					   vma.kind == USTACK_VMA_FILE || vma.kind == USTACK_VMA_VDSO
						   ? name : "");
		if (ret)
			break;
		n++;
		if (vma.end <= addr)
			break;
		addr = vma.end;
	}
	ustack_procmaps__close(live);
	return ret == -ENOENT ? n : ret;
}

const struct pm_vma *ustack_recmaps__find(struct ustack_recmaps *rm, uint32_t pid, uint64_t pc)
{
	struct recmaps_proc *p = proc_get(rm, pid, 0);

	return p ? pm_vmas_find(p->v, p->n, pc) : NULL;
}

struct pm_file *ustack_recmaps__file(struct ustack_recmaps *rm, int32_t idx)
{
	return pm_file_at(rm->files, idx);
}

int ustack_recmaps__file_map(struct ustack_recmaps *rm, uint64_t file_id, struct ustack_file_map *fm)
{
	/* ids are 1, 2, ... (PM_SEQUENTIAL_IDS) */
	struct pm_file *f = file_id && file_id <= INT32_MAX ? pm_file_at(rm->files, (int32_t)(file_id - 1))
							    : NULL;

	if (file_id == RECMAPS_PY_FILE_ID) {
		/* the functions of Python frames: named by PYFUNC records */
		memset(fm, 0, sizeof(*fm));
		fm->file_id = file_id;
		fm->kind = USTACK_TRACE_FILE_KIND_PYTHON;
		fm->path = "[python]";
		return 0;
	}
	if (!f)
		return -ENOENT;
	pm_file_to_map(f, fm);
	return 0;
}

/* Our own vDSO: the kernel maps the same image into every process. */
static struct ustack_modtab *vdso_tables(struct ustack_recmaps *rm)
{
	const uint8_t *img = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	struct ustack_procmaps *self;
	struct ustack_vma vma;

	if (!img)
		return NULL;
	self = ustack_procmaps__open(0, NULL);
	if (!self)
		return NULL;
	if (ustack_procmaps__query(self, (uintptr_t)img, &vma) || vma.kind != USTACK_VMA_VDSO ||
	    vma.start != (uintptr_t)img) {
		ustack_procmaps__close(self);
		return NULL;
	}
	ustack_procmaps__close(self);
	return ustack_modcache__get_mem(rm->mc, 0x7664736f, img, vma.end - vma.start, "[vdso]");
}

/* Open a file of process @pid: the mapping's map_files entry while the
 * process lives (deleted files, other mount namespaces), else through its
 * root, else by path. *@moved: map_files held another file by now. */
static struct ustack_modtab *file_tables(struct ustack_recmaps *rm, struct pm_file *f,
					 uint32_t pid, const struct pm_vma *v, int *moved)
{
	char path[4096 + 64];
	struct ustack_modtab *m;

	if (f->kind == USTACK_VMA_VDSO)
		return vdso_tables(rm);
	if (v) {
		uint64_t dev, ino;

		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
			 (unsigned long long)v->start, (unsigned long long)v->end);
		m = ustack_modcache__get(rm->mc, path);
		ustack_modtab__file(m, &dev, &ino);
		/* map_files opens what is mapped there now, which is not this
		 * file once the process replaced it at the same address
		 * (dlclose() then dlopen(), munmap() then mmap()) before we read
		 * its record: its tables would unwind this file's frames by
		 * another file's rules, for the rest of the recording. The
		 * inode tells them apart; the device cannot (btrfs subvolumes
		 * and overlayfs give stat() another st_dev than the kernel's
		 * s_dev in the record). */
		if (m && ino == f->inode)
			return m;
		*moved = !!m;
		ustack_modtab__put(m);
	}
	snprintf(path, sizeof(path), "/proc/%u/root%s", pid, f->path);
	if ((m = ustack_modcache__get(rm->mc, path)))
		return m;
	return (f->flags & USTACK_VMA_DELETED) ? NULL : ustack_modcache__get(rm->mc, f->path);
}

/* A reference to the tables of @f (the caller puts it): the cached ones
 * while they last, else the file opened again. */
static struct ustack_modtab *file_mod(struct ustack_recmaps *rm, struct pm_file *f, uint32_t pid,
				      const struct pm_vma *v)
{
	struct recmaps_tables *t = &rm->tabs[f - pm_file_at(rm->files, 0)];
	struct ustack_modtab *m;
	int moved = 0;

	if (t->failed)
		return NULL;
	if ((m = ustack_modcache__lookup(rm->mc, t->mod)))
		return m;
	m = file_tables(rm, f, pid, v, &moved);
	t->mod = ustack_modtab__ref(m);
	/* without the mapping only the path was tried: map_files may work;
	 * a mapping that holds another file by now says nothing either */
	t->failed = !m && v && !moved;
	return m;
}

void ustack_recmaps__file_info(struct ustack_recmaps *rm, struct pm_file *f, uint32_t pid)
{
	struct ustack_modtab *m;
	struct ustack_elf *elf;
	const char *name;
	uint32_t crc;
	int n;

	if (f->state & PM_FILE_INFO_DONE)
		return;
	f->state |= PM_FILE_INFO_DONE;
	m = file_mod(rm, f, pid, NULL);
	if (!m)
		return;
	elf = ustack_modtab__elf(m);
	if (!f->build_id_size && (n = ustack_elf__build_id(elf, f->build_id, sizeof(f->build_id))) > 0) {
		f->build_id_size = n < USTACK_BUILD_ID_MAX ? (uint32_t)n : USTACK_BUILD_ID_MAX;
		f->build_id_source = USTACK_BUILD_ID_ELF;
	}
	if (!ustack_elf__debuglink(elf, &name, &crc)) {
		f->debuglink = pm_intern(rm->files, name, strlen(name));
		f->debuglink_crc = crc;
	}
	ustack_modtab__put(m);
}

struct ustack_modtab *ustack_recmaps__tables(struct ustack_recmaps *rm, uint32_t pid,
					     const struct pm_vma *v)
{
	struct pm_file *f = v ? ustack_recmaps__file(rm, v->file) : NULL;

	return f ? file_mod(rm, f, pid, v) : NULL;
}

struct pm_file *ustack_recmaps__file_at_path(struct ustack_recmaps *rm, const char *path,
					     uint32_t maj, uint32_t min, uint64_t ino,
					     struct ustack_modtab **tables)
{
	uint32_t kind, vflags;
	int32_t idx = file_of(rm, path, maj, min, ino, NULL, 0, 0, 0, &kind, &vflags);
	struct pm_file *f = idx < 0 ? NULL : pm_file_at(rm->files, idx);

	*tables = f ? file_mod(rm, f, (uint32_t)getpid(), NULL) : NULL;
	return f;
}

void ustack_recmaps__set_pid(struct ustack_recmaps *rm, uint32_t pid)
{
	rm->cur_pid = pid;
}

int ustack_recmaps__find_row(void *ctx, uint64_t pc, struct ustack_row *row, unsigned int *method)
{
	struct ustack_recmaps *rm = ctx;
	const struct pm_vma *v = ustack_recmaps__find(rm, rm->cur_pid, pc);
	struct pm_file *f;
	struct ustack_modtab *m;
	uint64_t vaddr;
	int ret;

	if (!v || !(f = ustack_recmaps__file(rm, v->file)))
		return -ENOENT;
	m = file_mod(rm, f, rm->cur_pid, v);
	if (!m)
		return -ENOENT;
	ret = ustack_elf__offset_to_vaddr(ustack_modtab__elf(m), pc - v->start + v->pgoff, &vaddr)
		      ? -ENOENT
		      : ustack_modtab__find_row(m, vaddr, row, method);
	if (!ret) {
		row->start = row->start - vaddr + pc;
		row->end = row->end - vaddr + pc;
	}
	ustack_modtab__put(m);
	return ret;
}

int ustack_recmaps__is_code(void *ctx, uint64_t pc)
{
	struct ustack_recmaps *rm = ctx;

	return ustack_recmaps__find(rm, rm->cur_pid, pc) != NULL;
}
