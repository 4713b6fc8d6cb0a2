// SPDX-License-Identifier: MIT
/*
 * Separate debug information: where it is (debugfind.h for the order) and
 * the decoders its containers need (xz, zlib, zstd).
 *
 * liblzma, libzstd, zlib and libdebuginfod are opened with dlopen() at
 * first use rather than linked: each serves one optional source, a host
 * without one loses that source (with a warning) and nothing else, and
 * programs linking libustack.a need no new -l flags.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include "common/crc32.h"
#include "common/cache_dir.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "symbolize/debugfind.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

/* A debug file or MiniDebugInfo larger than this is refused rather than
 * decompressed: the size fields are input, memory is not. */
#define DEBUG_MAX_OUT (1ull << 30)
#define MINIDEBUG_MAX_OUT (256u << 20)

/* ---- optional libraries ------------------------------------------------ */

struct dl_lzma {
	lzma_ret (*stream_decoder)(lzma_stream *, uint64_t, uint32_t);
	lzma_ret (*code)(lzma_stream *, lzma_action);
	void (*end)(lzma_stream *);
};
struct dl_zstd {
	size_t (*decompress)(void *, size_t, const void *, size_t);
	unsigned (*is_error)(size_t);
};
struct dl_zlib {
	int (*init)(z_streamp, const char *, int);
	int (*inflate)(z_streamp, int);
	int (*end)(z_streamp);
};
struct dl_debuginfod {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
	void (*end)(debuginfod_client *);
};

/* Resolve @n symbols of @lib into @fns (an array of function pointers);
 * 1 when all are there. Done once per library (the result is kept). */
static int dl_load(const char *lib, const char *const *names, void **fns, size_t n)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return 0;
	for (size_t i = 0; i < n; i++) {
		fns[i] = dlsym(h, names[i]);
		if (!fns[i])
			return 0;
	}
	return 1;
}

#define DL_GETTER(name, type, lib, ...)                                                        \
	static const type *name(void)                                                         \
	{                                                                                      \
		static const char *const names[] = { __VA_ARGS__ };                            \
		static type fns;                                                               \
		static int state; /* 0 untried, 1 ok, -1 absent */                             \
		_Static_assert(sizeof(fns) == sizeof(names) / sizeof(names[0]) * sizeof(void *), \
			       "symbol list");                                                 \
		if (!state) {                                                                  \
			state = dl_load(lib, names, (void **)&fns,                             \
					sizeof(names) / sizeof(names[0])) ? 1 : -1;            \
			if (state < 0)                                                         \
				pr_warn("%s not found: its debug sources are not used\n", lib); \
		}                                                                              \
		return state > 0 ? &fns : NULL;                                                \
	}

DL_GETTER(dl_lzma, struct dl_lzma, "liblzma.so.5", "lzma_stream_decoder", "lzma_code", "lzma_end")
DL_GETTER(dl_zstd, struct dl_zstd, "libzstd.so.1", "ZSTD_decompress", "ZSTD_isError")
DL_GETTER(dl_zlib, struct dl_zlib, "libz.so.1", "inflateInit_", "inflate", "inflateEnd")
DL_GETTER(dl_debuginfod, struct dl_debuginfod, "libdebuginfod.so.1", "debuginfod_begin",
	  "debuginfod_find_debuginfo", "debuginfod_set_progressfn", "debuginfod_set_user_data",
	  "debuginfod_get_user_data", "debuginfod_end")

/* ---- decoders ------------------------------------------------------------ */

int ustack_xz_decode(const uint8_t *in, size_t in_size, size_t max_out, uint8_t **out,
		     size_t *out_size)
{
	const struct dl_lzma *lz = dl_lzma();
	lzma_stream st = LZMA_STREAM_INIT;
	size_t cap = 0, have = 0;
	uint8_t *buf = NULL;
	lzma_ret r;
	int err = 0;

	*out = NULL;
	*out_size = 0;
	if (!lz)
		return -EOPNOTSUPP;
	/* the decoder's own memory is bounded too (a header may ask for a
	 * huge dictionary) */
	if (lz->stream_decoder(&st, 128u << 20, 0) != LZMA_OK)
		return -ENOMEM;
	st.next_in = in;
	st.avail_in = in_size;
	for (;;) {
		if (have == cap) {
			size_t ncap = cap ? cap * 2 : (in_size < 4096 ? 16384 : in_size * 4);
			uint8_t *nb;

			if (ncap > max_out)
				ncap = max_out;
			if (ncap <= cap) {
				err = -EFBIG;
				break;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap = ncap;
		}
		st.next_out = buf + have;
		st.avail_out = cap - have;
		r = lz->code(&st, LZMA_FINISH);
		have = cap - st.avail_out;
		if (r == LZMA_STREAM_END)
			break;
		if (r == LZMA_OK)
			continue;
		err = r == LZMA_MEM_ERROR || r == LZMA_MEMLIMIT_ERROR ? -EFBIG : -EBADMSG;
		break;
	}
	lz->end(&st);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_size = have;
	return 0;
}

int ustack_chdr_parse(const uint8_t *data, size_t size, struct ustack_chdr *out)
{
	Elf64_Chdr ch;

	if (!data || size < sizeof(ch))
		return -EBADMSG;
	memcpy(&ch, data, sizeof(ch));
	if (ch.ch_type != ELFCOMPRESS_ZLIB && ch.ch_type != ELFCOMPRESS_ZSTD)
		return -EOPNOTSUPP;
	/* alignment is a power of two (0 and 1 both mean none) */
	if (ch.ch_addralign & (ch.ch_addralign - 1))
		return -EBADMSG;
	out->type = ch.ch_type;
	out->size = ch.ch_size;
	out->align = ch.ch_addralign;
	out->hdr_size = sizeof(ch);
	return 0;
}

static int inflate_zlib(const uint8_t *in, size_t n, uint8_t *out, size_t out_size)
{
	const struct dl_zlib *z = dl_zlib();
	z_stream zs;
	int r;

	if (!z)
		return -EOPNOTSUPP;
	memset(&zs, 0, sizeof(zs));
	if (n > UINT_MAX || out_size > UINT_MAX)
		return -EFBIG;
	if (z->init(&zs, ZLIB_VERSION, (int)sizeof(zs)) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)out_size;
	r = z->inflate(&zs, Z_FINISH);
	z->end(&zs);
	/* exactly ch_size bytes, no more, no less */
	return r == Z_STREAM_END && zs.avail_out == 0 ? 0 : -EBADMSG;
}

int ustack_section_decompress(const uint8_t *data, size_t size, size_t max_out, uint8_t **out,
			      size_t *out_size)
{
	struct ustack_chdr ch;
	uint8_t *buf;
	int err = ustack_chdr_parse(data, size, &ch);

	*out = NULL;
	*out_size = 0;
	if (err)
		return err;
	if (ch.size > max_out)
		return -EFBIG;
	buf = malloc(ch.size ? ch.size : 1);
	if (!buf)
		return -ENOMEM;
	if (ch.type == ELFCOMPRESS_ZLIB) {
		err = inflate_zlib(data + ch.hdr_size, size - ch.hdr_size, buf, ch.size);
	} else {
		const struct dl_zstd *zs = dl_zstd();

		if (!zs) {
			err = -EOPNOTSUPP;
		} else {
			size_t r = zs->decompress(buf, ch.size, data + ch.hdr_size, size - ch.hdr_size);

			err = zs->is_error(r) || r != ch.size ? -EBADMSG : 0;
		}
	}
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_size = ch.size;
	return 0;
}

/* ---- decompressed copy of a file with zstd sections ---------------------- */

static int append(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n, size_t align)
{
	size_t pad = align > 1 ? (align - *len % align) % align : 0;

	if (n > SIZE_MAX / 2 || *len + pad + n > DEBUG_MAX_OUT)
		return -EFBIG;
	if (*len + pad + n > *cap) {
		size_t ncap = (*len + pad + n) * 3 / 2;
		uint8_t *nb = realloc(*buf, ncap);

		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	memset(*buf + *len, 0, pad);
	*len += pad;
	if (n)
		memcpy(*buf + *len, p, n);
	*len += n;
	return 0;
}

int ustack_elf_decompress_copy(const struct ustack_elf *elf, size_t max_out, uint8_t **out,
			       size_t *out_size)
{
	size_t size, len, cap, total = 0;
	const uint8_t *data = ustack_elf__data(elf, &size);
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	uint8_t *buf = NULL;
	int err = 0, nzstd = 0;

	*out = NULL;
	*out_size = 0;
	if (size < sizeof(eh))
		return -EBADMSG;
	memcpy(&eh, data, sizeof(eh));
	if (!eh.e_shnum || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
	    (size - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
		return -ENOENT;
	sh = malloc((size_t)eh.e_shnum * sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	memcpy(sh, data + eh.e_shoff, (size_t)eh.e_shnum * sizeof(*sh));
	for (unsigned int i = 1; i < eh.e_shnum; i++) {
		struct ustack_chdr ch;

		if (!(sh[i].sh_flags & SHF_COMPRESSED) || sh[i].sh_type == SHT_NOBITS)
			continue;
		if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset) {
			err = -EBADMSG;
			goto out;
		}
		if (!ustack_chdr_parse(data + sh[i].sh_offset, sh[i].sh_size, &ch) &&
		    ch.type == ELFCOMPRESS_ZSTD)
			nzstd++;
	}
	if (!nzstd) {
		err = -ENOENT;
		goto out;
	}
	cap = size + size / 2;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(buf, data, size);
	len = size;
	for (unsigned int i = 1; i < eh.e_shnum && !err; i++) {
		struct ustack_chdr ch;
		uint8_t *dec;
		size_t dlen;

		if (!(sh[i].sh_flags & SHF_COMPRESSED) || sh[i].sh_type == SHT_NOBITS ||
		    ustack_chdr_parse(data + sh[i].sh_offset, sh[i].sh_size, &ch) ||
		    ch.type != ELFCOMPRESS_ZSTD)
			continue;
		err = ustack_section_decompress(data + sh[i].sh_offset, sh[i].sh_size,
						max_out - total, &dec, &dlen);
		if (err)
			break;
		total += dlen;
		err = append(&buf, &len, &cap, dec, dlen, ch.align ? ch.align : 1);
		free(dec);
		if (err)
			break;
		sh[i].sh_offset = len - dlen;
		sh[i].sh_size = dlen;
		sh[i].sh_addralign = ch.align;
		sh[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
	}
	if (!err)
		err = append(&buf, &len, &cap, sh, (size_t)eh.e_shnum * sizeof(*sh), 8);
	if (err) {
		free(buf);
		goto out;
	}
	eh.e_shoff = len - (size_t)eh.e_shnum * sizeof(*sh);
	memcpy(buf, &eh, sizeof(eh));
	*out = buf;
	*out_size = len;
out:
	free(sh);
	return err;
}

/* ---- the search ------------------------------------------------------------ */

struct find_ctx {
	const struct ustack_debugfind_opts *o;
	const char *debug_dir;
	const uint8_t *build_id;
	size_t len;
	char hex[2 * 64 + 1];
	char *warn;
	size_t warnlen;
	int warned;
};

__attribute__((format(printf, 2, 3)))
static void find_warn(struct find_ctx *c, const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pr_warn("%s\n", line);
	if (c->warn && c->warnlen && !c->warned)
		snprintf(c->warn, c->warnlen, "%s", line);
	c->warned = 1;
}

int ustack_debuglink_name_check(const char *name)
{
	size_t n = strnlen(name, NAME_MAX + 1);

	if (!n || n > NAME_MAX || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EBADMSG;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return -EBADMSG;
	return 0;
}

static int has_data_section(const struct ustack_elf *elf, const char *name)
{
	struct ustack_elf_section s;

	return elf && !ustack_elf__section(elf, name, &s) && s.type != SHT_NOBITS && s.data &&
	       s.size;
}

static int same_build_id(const struct find_ctx *c, const struct ustack_elf *elf)
{
	uint8_t id[64];
	int n = ustack_elf__build_id(elf, id, sizeof(id));

	return n > 0 && (size_t)n == c->len && !memcmp(id, c->build_id, c->len);
}

/* Write @data to <cache>/debug/<build id>.<suffix> (atomically: a reader
 * never sees half a file) and put its path in @path. 0 or -errno. */
static int cache_put(struct find_ctx *c, const char *suffix, const uint8_t *data, size_t n,
		     char *path, size_t pathlen)
{
	char dirbuf[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 32];
	const char *cd = c->o && c->o->cache_dir ? c->o->cache_dir
						 : ustack_cache_dir(dirbuf, sizeof(dirbuf));
	int fd, ok;

	if (!*cd || !c->len)
		return -ENOENT;
	if (snprintf(dir, sizeof(dir), "%s/debug", cd) >= (int)sizeof(dir) ||
	    snprintf(path, pathlen, "%s/%s.%s", dir, c->hex, suffix) >= (int)pathlen)
		return -ENAMETOOLONG;
	mkdir(cd, 0755);
	mkdir(dir, 0755);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ok = 1;
	for (size_t done = 0; ok && done < n;) {
		ssize_t w = write(fd, data + done, n - done);

		if (w <= 0)
			ok = 0;
		else
			done += (size_t)w;
	}
	if (close(fd) || !ok || rename(tmp, path)) {
		unlink(tmp);
		return -EIO;
	}
	ustack_debug_cache_trim(dir, path);
	return 0;
}

/* @elf is the chosen file: when it holds zstd sections, swap it for a
 * decompressed copy (in the cache, else in memory). Keeps @elf otherwise. */
static struct ustack_elf *maybe_decompress(struct find_ctx *c, struct ustack_elf *elf,
					   int owned, struct ustack_debug_found *out)
{
	uint8_t *copy;
	size_t n;
	char path[PATH_MAX];
	struct ustack_elf *ne = NULL;
	int err = ustack_elf_decompress_copy(elf, DEBUG_MAX_OUT, &copy, &n);

	if (err == -ENOENT)
		return elf;
	if (err) {
		find_warn(c, "%s: zstd-compressed sections: %s (DWARF of this file not readable)",
			  ustack_elf__path(elf), strerror(-err));
		return elf;
	}
	if (!cache_put(c, "zstd-dec", copy, n, path, sizeof(path))) {
		ne = ustack_elf__open(path);
		if (ne)
			snprintf(out->read_path, sizeof(out->read_path), "%s", path);
	}
	if (!ne) {
		ne = ustack_elf__open_mem_owned(copy, n, ustack_elf__path(elf));
		if (ne) {
			copy = NULL;
			out->read_path[0] = 0;
		}
	}
	free(copy);
	if (!ne)
		return elf;
	if (owned)
		ustack_elf__close(elf);
	return ne;
}

static int found(struct find_ctx *c, unsigned int source, struct ustack_elf *elf,
		 struct ustack_debug_found *out)
{
	out->source = source;
	snprintf(out->path, sizeof(out->path), "%s", ustack_elf__path(elf));
	snprintf(out->read_path, sizeof(out->read_path), "%s", out->path);
	out->elf = maybe_decompress(c, elf, 1, out);
	return 0;
}

/* 1. / 4. the file itself */
static int try_self(struct find_ctx *c, const struct ustack_elf *image,
		    struct ustack_debug_found *out)
{
	struct ustack_elf *e;

	out->source = USTACK_DEBUG_SRC_SELF;
	snprintf(out->path, sizeof(out->path), "%s", ustack_elf__path(image));
	snprintf(out->read_path, sizeof(out->read_path), "%s", out->path);
	e = maybe_decompress(c, (struct ustack_elf *)image, 0, out);
	out->elf = e == image ? NULL : e;
	return 0;
}

/* 2. the build-ID tree */
static int try_build_id_dir(struct find_ctx *c, struct ustack_debug_found *out)
{
	char path[PATH_MAX];
	struct ustack_elf *e;

	if (c->len < 2 || (c->o && c->o->flags & USTACK_DEBUGFIND_NO_DEBUG_DIR))
		return -ENOENT;
	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", c->debug_dir, c->hex,
		     c->hex + 2) >= (int)sizeof(path))
		return -ENOENT;
	e = ustack_elf__open(path);
	if (!e) {
		if (errno != ENOENT)
			find_warn(c, "%s: %s: not used", path, strerror(errno));
		return -ENOENT;
	}
	if (!same_build_id(c, e) || !(has_data_section(e, ".symtab") ||
				      has_data_section(e, ".debug_info"))) {
		pr_debug("%s: another build ID or no symbols: not used\n", path);
		ustack_elf__close(e);
		return -ENOENT;
	}
	return found(c, USTACK_DEBUG_SRC_BUILD_ID_DIR, e, out);
}

/* 3. .gnu_debuglink */
static int try_debuglink(struct find_ctx *c, const char *image_path, const struct ustack_elf *image,
			 struct ustack_debug_found *out)
{
	char real[PATH_MAX], dir[PATH_MAX], cand[3][PATH_MAX];
	const char *name;
	uint32_t crc;
	char *slash;
	int err, n = 0;

	if (!image || !image_path || image_path[0] != '/')
		return -ENOENT;
	err = ustack_elf__debuglink(image, &name, &crc);
	if (err == -ENOENT)
		return -ENOENT;
	if (err) /* ustack_elf__debuglink() said where and why */
		return -ENOENT;
	if (ustack_debuglink_name_check(name)) {
		find_warn(c, "%s: .gnu_debuglink: not a file name: not used", image_path);
		return -ENOENT;
	}
	/* the directory of the file itself, not of a symlink to it */
	if (!realpath(image_path, real))
		snprintf(real, sizeof(real), "%s", image_path);
	snprintf(dir, sizeof(dir), "%s", real);
	slash = strrchr(dir, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	if (snprintf(cand[n], PATH_MAX, "%s/%s", dir, name) < PATH_MAX)
		n++;
	if (snprintf(cand[n], PATH_MAX, "%s/.debug/%s", dir, name) < PATH_MAX)
		n++;
	if (!(c->o && c->o->flags & USTACK_DEBUGFIND_NO_DEBUG_DIR) &&
	    snprintf(cand[n], PATH_MAX, "%s%s/%s", c->debug_dir, dir, name) < PATH_MAX)
		n++;
	for (int i = 0; i < n; i++) {
		struct ustack_elf *e;
		const uint8_t *data;
		size_t size;
		uint32_t got;
		char rc[PATH_MAX];

		/* the file itself is no debug file for itself (a debuglink
		 * naming the binary's own name in its own directory) */
		if (realpath(cand[i], rc) && !strcmp(rc, real))
			continue;
		e = ustack_elf__open(cand[i]);
		if (!e) {
			if (errno != ENOENT)
				find_warn(c, "%s: debug file of %s: %s: not used", cand[i], image_path,
					  strerror(errno));
			continue;
		}
		data = ustack_elf__data(e, &size);
		got = ustack_crc32(0, data, size);
		if (got != crc) {
			find_warn(c, "%s: CRC 0x%08x, .gnu_debuglink of %s wants 0x%08x: not used",
				  cand[i], got, image_path, crc);
			ustack_elf__close(e);
			continue;
		}
		/* a CRC that matches by chance is not enough when both
		 * carry a build ID */
		if (c->len && ustack_elf__build_id(e, (uint8_t[64]){ 0 }, 64) > 0 &&
		    !same_build_id(c, e)) {
			find_warn(c, "%s: another build ID than %s: not used", cand[i], image_path);
			ustack_elf__close(e);
			continue;
		}
		return found(c, USTACK_DEBUG_SRC_DEBUGLINK, e, out);
	}
	return -ENOENT;
}

/* 5. MiniDebugInfo */
static int try_minidebuginfo(struct find_ctx *c, const struct ustack_elf *image,
			     struct ustack_debug_found *out)
{
	struct ustack_elf_section s;
	uint8_t *dec;
	size_t n;
	char path[PATH_MAX], name[PATH_MAX];
	struct ustack_elf *e = NULL;
	int err;

	if (!image || ustack_elf__section(image, ".gnu_debugdata", &s))
		return -ENOENT;
	if (!s.data || s.type == SHT_NOBITS)
		return -ENOENT;
	err = ustack_xz_decode(s.data, s.size, MINIDEBUG_MAX_OUT, &dec, &n);
	if (err) {
		find_warn(c, "%s: .gnu_debugdata at offset 0x%llx: %s: not used",
			  ustack_elf__path(image), (unsigned long long)s.offset,
			  err == -EBADMSG ? "corrupt xz data" : strerror(-err));
		return -ENOENT;
	}
	snprintf(name, sizeof(name), "%s:.gnu_debugdata", ustack_elf__path(image));
	out->path[0] = out->read_path[0] = 0;
	if (!cache_put(c, "gnu_debugdata", dec, n, path, sizeof(path))) {
		e = ustack_elf__open(path);
		if (e)
			snprintf(out->read_path, sizeof(out->read_path), "%s", path);
	}
	if (!e) {
		e = ustack_elf__open_mem_owned(dec, n, name);
		if (e)
			dec = NULL;
	}
	free(dec);
	if (!e || !has_data_section(e, ".symtab")) {
		find_warn(c, "%s: not an ELF file with a .symtab: not used", name);
		ustack_elf__close(e);
		out->read_path[0] = 0;
		return -ENOENT;
	}
	/* the file as a person would look for it: the section of the image */
	snprintf(out->path, sizeof(out->path), "%s", name);
	out->source = USTACK_DEBUG_SRC_MINIDEBUGINFO;
	out->elf = e;
	return 0;
}

/* 6. debuginfod */
struct dinfo_progress {
	struct timespec start;
	unsigned int timeout_ms;
	const char *hex;
	int announced, timed_out;
};

static unsigned int elapsed_ms(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (unsigned int)((now.tv_sec - t0->tv_sec) * 1000 +
			      (now.tv_nsec - t0->tv_nsec) / 1000000);
}

static int dinfo_progress(debuginfod_client *client, long a, long b)
{
	const struct dl_debuginfod *d = dl_debuginfod();
	struct dinfo_progress *p = d ? d->get_user_data(client) : NULL;

	if (!p)
		return 0;
	/* the library's own timeout counts from the last byte received;
	 * this bounds the whole download */
	if (elapsed_ms(&p->start) > p->timeout_ms) {
		p->timed_out = 1;
		return 1;
	}
	/* @a is not always a byte count (a loop count when the size is
	 * unknown): announce a transfer of known size, or a slow one */
	if (!p->announced && (b > 0 || elapsed_ms(&p->start) > 1000)) {
		p->announced = 1;
		if (b > 0)
			ustack_log(USTACK_WARN, "ustack: debuginfod: downloading debug info of %s (%ld bytes)\n",
				   p->hex, b);
		else
			ustack_log(USTACK_WARN, "ustack: debuginfod: waiting for debug info of %s\n",
				   p->hex);
	}
	return 0;
}

static int try_debuginfod(struct find_ctx *c, struct ustack_debug_found *out)
{
	const char *urls = getenv("DEBUGINFOD_URLS"), *tenv = getenv("DEBUGINFOD_TIMEOUT");
	const struct dl_debuginfod *d;
	struct dinfo_progress p = { .hex = c->hex };
	debuginfod_client *client;
	char *path = NULL;
	struct ustack_elf *e;
	int fd;

	if (!urls || !*urls || !c->len || (c->o && c->o->flags & USTACK_DEBUGFIND_NO_DEBUGINFOD))
		return -ENOENT;
	d = dl_debuginfod();
	if (!d)
		return -ENOENT;
	p.timeout_ms = c->o && c->o->debuginfod_timeout_ms ? c->o->debuginfod_timeout_ms : 0;
	if (!p.timeout_ms && tenv && atoi(tenv) > 0)
		p.timeout_ms = (unsigned int)atoi(tenv) * 1000;
	if (!p.timeout_ms)
		p.timeout_ms = 10000;
	client = d->begin();
	if (!client) {
		find_warn(c, "debuginfod: cannot start a client: not used");
		out->flags |= USTACK_DEBUG_FOUND_DEBUGINFOD_FAILED;
		return -ENOENT;
	}
	clock_gettime(CLOCK_MONOTONIC, &p.start);
	d->set_user_data(client, &p);
	d->set_progressfn(client, dinfo_progress);
	fd = d->find_debuginfo(client, c->build_id, (int)c->len, &path);
	d->end(client);
	if (fd < 0) {
		free(path);
		/* the server does not know it: no warning (a download this
		 * side cancelled also comes back as -ENOENT) */
		if (fd == -ENOENT && !p.timed_out)
			return -ENOENT;
		out->flags |= USTACK_DEBUG_FOUND_DEBUGINFOD_FAILED;
		find_warn(c, "debuginfod: %s: build ID %s: %s after %u ms: not used", urls, c->hex,
			  p.timed_out ? "timed out" : strerror(-fd), elapsed_ms(&p.start));
		return -ENOENT;
	}
	close(fd);
	e = path ? ustack_elf__open(path) : NULL;
	if (!e || !same_build_id(c, e)) {
		find_warn(c, "debuginfod: %s: not an ELF file of build ID %s: not used",
			  path ? path : "?", c->hex);
		ustack_elf__close(e);
		free(path);
		return -ENOENT;
	}
	free(path);
	return found(c, USTACK_DEBUG_SRC_DEBUGINFOD, e, out);
}

/* A found file without .debug_info is no DWARF source: dropped. */
static int keep_if_dwarf(int ret, struct ustack_debug_found *out)
{
	if (ret)
		return ret;
	if (has_data_section(out->elf, ".debug_info") || has_data_section(out->elf, ".zdebug_info"))
		return 0;
	ustack_elf__close(out->elf);
	memset(out, 0, sizeof(*out));
	return -ENOENT;
}

int ustack_debugfind_dwarf(const struct ustack_debugfind_opts *o, unsigned int sym_source,
			   const char *image_path, const struct ustack_elf *image,
			   const uint8_t *build_id, size_t len, struct ustack_debug_found *out)
{
	struct find_ctx c = {
		.o = o && o->sz >= sizeof(*o) ? o : NULL,
		.build_id = build_id,
		.len = build_id && len <= 64 ? len : 0,
	};
	uint32_t flags = c.o ? c.o->flags : 0;

	memset(out, 0, sizeof(*out));
	c.debug_dir = c.o && c.o->debug_dir ? c.o->debug_dir : "/usr/lib/debug";
	ustack_hex(c.build_id, c.len, c.hex);
	/* what ustack_debugfind() tried before it settled on @sym_source, and
	 * found nothing in, is not asked twice (nor warned about twice) */
	if (sym_source == USTACK_DEBUG_SRC_BUILD_ID_DIR && !(flags & USTACK_DEBUGFIND_NO_DEBUGLINK) &&
	    !keep_if_dwarf(try_debuglink(&c, image_path, image, out), out))
		return 0;
	if (sym_source == USTACK_DEBUG_SRC_DEBUGINFOD || sym_source == USTACK_DEBUG_SRC_NONE ||
	    sym_source == USTACK_DEBUG_SRC_DYNSYM)
		return -ENOENT; /* debuginfod was asked already, or it failed */
	if (!keep_if_dwarf(try_debuginfod(&c, out), out))
		return 0;
	return -ENOENT;
}

int ustack_debugfind(const struct ustack_debugfind_opts *o, const char *image_path,
		     const struct ustack_elf *image, const uint8_t *build_id, size_t len,
		     struct ustack_debug_found *out, char *warn, size_t warnlen)
{
	struct find_ctx c = {
		.o = o && o->sz >= sizeof(*o) ? o : NULL,
		.build_id = build_id,
		.len = build_id && len <= 64 ? len : 0,
		.warn = warn,
		.warnlen = warnlen,
	};

	memset(out, 0, sizeof(*out));
	if (warn && warnlen)
		warn[0] = 0;
	c.debug_dir = c.o && c.o->debug_dir ? c.o->debug_dir : "/usr/lib/debug";
	ustack_hex(c.build_id, c.len, c.hex);
	if (has_data_section(image, ".debug_info"))
		return try_self(&c, image, out);
	if (!try_build_id_dir(&c, out))
		return 0;
	if (!try_debuglink(&c, image_path, image, out))
		return 0;
	if (has_data_section(image, ".symtab"))
		return try_self(&c, image, out);
	if (!try_minidebuginfo(&c, image, out))
		return 0;
	if (!try_debuginfod(&c, out))
		return 0;
	return -ENOENT;
}
