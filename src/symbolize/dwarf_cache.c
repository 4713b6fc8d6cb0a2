// SPDX-License-Identifier: MIT
/*
 * Decompressed copies of compressed DWARF, cached by build ID.
 *
 * A distribution's debug file compresses every DWARF section (zlib), and
 * libdw inflates each one the lines need when it opens the file: for libc's
 * debug file 8.6 MB of output, about 40 ms, paid again by every report,
 * snapshot --lines or symbolize that names one libc frame with its line,
 * however few frames it names (a deflate stream cannot be entered in the
 * middle). The first open inflates as before (libelf's elf_compress(),
 * the same code libdw would run) and writes the result to
 * <cache>/debug/<build id>.dwarf: the file's bytes followed by the inflated
 * sections and a section header table pointing at them. Later opens map
 * that copy; libdw then reads the sections in place.
 *
 * The copy is trusted no more than the original: it must carry the same
 * build ID and no compressed DWARF section the lines read, and libdw parses
 * it as it would parse any debug file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "common/cache_dir.h"
#include "common/log.h"
#include "symbolize/dwarf_cache.h"

#include "common/dl_syms.h"

/* libelf as symbolize_dwarf.c reaches it: opened at first use (the DWARF
 * reader has loaded it by then, through libdw), never linked */
#define LIBELF_FNS(X)                                                                          \
	X(elf_begin) X(elf_compress) X(elf_end) X(elf_getdata) X(elf_getscn) X(elf_getshdrnum) \
	X(elf_getshdrstrndx) X(elf_kind) X(elf_nextscn) X(elf_rawfile) X(elf_strptr) \
	X(gelf_getchdr) X(gelf_getehdr) X(gelf_getnote) X(gelf_getshdr)
DL_SYMS_STRUCT(libelf, LIBELF_FNS)
DL_SYMS_LOAD(libelf_load, libelf, LIBELF_FNS, "libelf.so.1")
#define elf_begin (libelf.elf_begin)
#define elf_compress (libelf.elf_compress)
#define elf_end (libelf.elf_end)
#define elf_getdata (libelf.elf_getdata)
#define elf_getscn (libelf.elf_getscn)
#define elf_getshdrnum (libelf.elf_getshdrnum)
#define elf_getshdrstrndx (libelf.elf_getshdrstrndx)
#define elf_kind (libelf.elf_kind)
#define elf_nextscn (libelf.elf_nextscn)
#define elf_rawfile (libelf.elf_rawfile)
#define elf_strptr (libelf.elf_strptr)
#define gelf_getchdr (libelf.gelf_getchdr)
#define gelf_getehdr (libelf.gelf_getehdr)
#define gelf_getnote (libelf.gelf_getnote)
#define gelf_getshdr (libelf.gelf_getshdr)

/* below this much inflated DWARF, inflating is cheaper than a cache file */
#define MIN_INFLATED (256u << 10)
/* a bound on what one cache file may hold */
#define MAX_INFLATED (1ull << 31)

#define MAX_BUILD_ID 64

static int build_id(Elf *elf, uint8_t *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)data->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz && nh.n_descsz <= MAX_BUILD_ID) {
				memcpy(out, (const char *)data->d_buf + desc_off, nh.n_descsz);
				return (int)nh.n_descsz;
			}
		}
	}
	return 0;
}

static int is_dwarf_name(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *name = elf_strptr(elf, shstrndx, sh->sh_name);

	return name && !strncmp(name, ".debug_", 7);
}

/* Inflated size of the compressed DWARF sections still to be read (the
 * caller made the unread ones SHT_NOBITS); 0 when there are none, or when
 * one of them is not zlib (libelf could not inflate it). */
static uint64_t inflated_size(Elf *elf, size_t shstrndx)
{
	Elf_Scn *scn = NULL;
	uint64_t total = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_COMPRESSED) || !is_dwarf_name(elf, shstrndx, &sh))
			continue;
		if (gelf_getchdr(scn, &ch) == NULL || ch.ch_type != ELFCOMPRESS_ZLIB)
			return 0;
		total += ch.ch_size;
		if (total > MAX_INFLATED)
			return 0;
	}
	return total;
}

/* 1: a DWARF section still to be read is compressed */
static int compressed_dwarf(Elf *elf, size_t shstrndx)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (sh.sh_flags & SHF_COMPRESSED) && is_dwarf_name(elf, shstrndx, &sh))
			return 1;
	}
	return 0;
}

static int cache_path(const uint8_t *id, int n, char *dir, size_t dirlen, char *path, size_t len)
{
	char buf[PATH_MAX], hex[2 * MAX_BUILD_ID + 1];
	const char *cd = ustack_cache_dir(buf, sizeof(buf));

	if (!*cd)
		return -ENOENT;
	for (int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	if (snprintf(dir, dirlen, "%s/debug", cd) >= (int)dirlen ||
	    snprintf(path, len, "%s/%s.dwarf", dir, hex) >= (int)len)
		return -ENAMETOOLONG;
	if (mkdir(cd, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t w = write(fd, (const char *)p + done, n - done);

		if (w <= 0)
			return -EIO;
		done += (size_t)w;
	}
	return 0;
}

static int pad_to(int fd, uint64_t *off, uint64_t align)
{
	static const char zero[64];
	uint64_t pad = align > 1 ? (align - *off % align) % align : 0;

	if (pad > sizeof(zero))
		pad = 0; /* alignment beyond 64 is not kept (never seen for DWARF) */
	*off += pad;
	return pad ? write_all(fd, zero, pad) : 0;
}

/* Inflate @elf's compressed DWARF sections in memory (for the caller's
 * libdw) and write the copy to @path. */
static int inflate_and_write(Elf *elf, size_t shstrndx, const char *dir, const char *path)
{
	char tmp[PATH_MAX + 32];
	size_t rawsize, shnum;
	const char *raw = elf_rawfile(elf, &rawsize);
	GElf_Ehdr eh;
	Elf64_Ehdr neh;
	Elf64_Shdr *shdrs = NULL;
	uint8_t *inflated = NULL;
	uint64_t off;
	int fd = -1, err = 0;

	if (!raw || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || elf_getshdrnum(elf, &shnum) || !eh.e_shnum ||
	    shnum != eh.e_shnum || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    rawsize < sizeof(Elf64_Ehdr))
		return -ENOTSUP;
	shdrs = calloc(shnum, sizeof(*shdrs));
	inflated = calloc(shnum, 1);
	if (!shdrs || !inflated) {
		err = -ENOMEM;
		goto out;
	}
	/* first what libdw needs, in memory: a cache that cannot be written
	 * costs nothing but the attempt */
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh)) {
			err = -EBADMSG;
			goto out;
		}
		if (sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_COMPRESSED) ||
		    !is_dwarf_name(elf, shstrndx, &sh))
			continue;
		if (elf_compress(scn, 0, 0) < 0) {
			err = -EBADMSG; /* libdw says it again, naming the file */
			goto out;
		}
		inflated[i] = 1;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	/* the file as it is (its other sections, notes, symbols stay where
	 * their headers say), then each inflated section, then the headers */
	err = write_all(fd, raw, rawsize);
	off = rawsize;
	/* from section 0: it holds e_shstrndx when that is SHN_XINDEX */
	for (size_t i = 0; i < shnum && !err; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh)) {
			err = -EBADMSG;
			break;
		}
		shdrs[i] = (Elf64_Shdr){
			.sh_name = sh.sh_name, .sh_type = sh.sh_type, .sh_flags = sh.sh_flags,
			.sh_addr = sh.sh_addr, .sh_offset = sh.sh_offset, .sh_size = sh.sh_size,
			.sh_link = sh.sh_link, .sh_info = sh.sh_info,
			.sh_addralign = sh.sh_addralign, .sh_entsize = sh.sh_entsize,
		};
		if (!inflated[i])
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || data->d_size != sh.sh_size || (sh.sh_size && !data->d_buf)) {
			err = -EBADMSG;
			break;
		}
		err = pad_to(fd, &off, sh.sh_addralign);
		if (!err && sh.sh_size)
			err = write_all(fd, data->d_buf, sh.sh_size);
		shdrs[i].sh_offset = off;
		off += sh.sh_size;
	}
	if (!err)
		err = pad_to(fd, &off, 8);
	if (!err)
		err = write_all(fd, shdrs, shnum * sizeof(*shdrs));
	if (!err) {
		memcpy(&neh, raw, sizeof(neh));
		neh.e_shoff = off;
		if (pwrite(fd, &neh, sizeof(neh), 0) != (ssize_t)sizeof(neh))
			err = -EIO;
	}
	if (close(fd) && !err)
		err = -EIO;
	if (err || rename(tmp, path)) {
		unlink(tmp);
		err = err ? err : -EIO;
	} else {
		ustack_debug_cache_trim(dir, path);
	}
out:
	free(inflated);
	free(shdrs);
	return err;
}

/* @elf of the cached copy holds what the lines need: the same build ID as
 * the original, nothing compressed left */
static int copy_usable(Elf *copy, size_t shstrndx, const uint8_t *id, int n)
{
	uint8_t cid[MAX_BUILD_ID];

	return build_id(copy, cid) == n && !memcmp(cid, id, (size_t)n) &&
	       !compressed_dwarf(copy, shstrndx);
}

Elf *ustack_dwarf_cache__open(Elf *elf, const char *path, int *fd_out, int (*prepare)(Elf *))
{
	char dir[PATH_MAX], cpath[PATH_MAX];
	uint8_t id[MAX_BUILD_ID];
	size_t shstrndx;
	int n, fd, err;
	Elf *copy;

	*fd_out = -1;
	if (libelf_load() || elf_getshdrstrndx(elf, &shstrndx) || inflated_size(elf, shstrndx) < MIN_INFLATED ||
	    (n = build_id(elf, id)) <= 0 || cache_path(id, n, dir, sizeof(dir), cpath, sizeof(cpath)))
		return NULL;
	fd = open(cpath, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		size_t cstrndx;

		copy = elf_begin(fd, ELF_C_READ_MMAP_PRIVATE, NULL);
		if (copy && elf_kind(copy) == ELF_K_ELF && !elf_getshdrstrndx(copy, &cstrndx)) {
			if (prepare(copy) && copy_usable(copy, cstrndx, id, n)) {
				ustack_cache_touch(fd); /* used: trimmed last */
				*fd_out = fd;
				return copy;
			}
		}
		pr_debug("%s: cached DWARF of %s not usable: written again\n", cpath, path);
		elf_end(copy);
		close(fd);
	}
	err = inflate_and_write(elf, shstrndx, dir, cpath);
	if (err)
		pr_debug("%s: DWARF of %s not cached: %s\n", cpath, path, strerror(-err));
	return NULL;
}
