// SPDX-License-Identifier: MIT
/* src/symbolize/debugfind.c: the decoders of untrusted containers (xz,
 * zlib and zstd sections, .gnu_debuglink names) against the reference
 * encoders (liblzma, zlib, libzstd), the decompressed copy of an ELF file,
 * and the build-ID lookup over a private debug directory. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lzma.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "test.h"
#include <ustack/ustack.h>
#include "elf/elf_file.h"
#include "symbolize/debugfind.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2 /* glibc 2.36 elf.h predates it */
#endif

static char logbuf[4096];
static int logged(enum ustack_print_level l, const char *fmt, va_list ap)
{
	size_t n = strlen(logbuf);

	if (n < sizeof(logbuf) - 1)
		vsnprintf(logbuf + n, sizeof(logbuf) - n, fmt, ap);
	return 0;
}

static uint8_t plain[20000];

static void fill_plain(void)
{
	/* compressible but not trivial */
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)((i * 7) ^ (i >> 5));
}

static size_t chdr(uint8_t *out, uint32_t type, uint64_t size)
{
	Elf64_Chdr ch = { .ch_type = type, .ch_size = size, .ch_addralign = 1 };

	memcpy(out, &ch, sizeof(ch));
	return sizeof(ch);
}

static void test_debuglink_names(void)
{
	char longname[NAME_MAX + 2];

	CHECK_EQ(ustack_debuglink_name_check("libfoo.so.1.debug"), 0);
	CHECK_EQ(ustack_debuglink_name_check(""), -EBADMSG);
	CHECK_EQ(ustack_debuglink_name_check("."), -EBADMSG);
	CHECK_EQ(ustack_debuglink_name_check(".."), -EBADMSG);
	CHECK_EQ(ustack_debuglink_name_check("../etc/passwd"), -EBADMSG);
	CHECK_EQ(ustack_debuglink_name_check("a/b.debug"), -EBADMSG);
	CHECK_EQ(ustack_debuglink_name_check("a\nb"), -EBADMSG);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	CHECK_EQ(ustack_debuglink_name_check(longname), -EBADMSG);
}

static void test_chdr(void)
{
	uint8_t b[64] = { 0 };
	struct ustack_chdr ch;
	Elf64_Chdr h = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = 77, .ch_addralign = 8 };

	CHECK_EQ(ustack_chdr_parse(b, sizeof(h) - 1, &ch), -EBADMSG);
	CHECK_EQ(ustack_chdr_parse(b, sizeof(b), &ch), -EOPNOTSUPP); /* type 0 */
	memcpy(b, &h, sizeof(h));
	CHECK_EQ(ustack_chdr_parse(b, sizeof(b), &ch), 0);
	CHECK_EQ(ch.type, ELFCOMPRESS_ZLIB);
	CHECK_EQ(ch.size, 77);
	CHECK_EQ(ch.hdr_size, sizeof(Elf64_Chdr));
	h.ch_addralign = 12; /* not a power of two */
	memcpy(b, &h, sizeof(h));
	CHECK_EQ(ustack_chdr_parse(b, sizeof(b), &ch), -EBADMSG);
}

static void test_zlib_section(void)
{
	static uint8_t sec[sizeof(Elf64_Chdr) + 30000];
	uLongf clen = sizeof(sec) - sizeof(Elf64_Chdr);
	size_t h = chdr(sec, ELFCOMPRESS_ZLIB, sizeof(plain)), n;
	uint8_t *out;

	fill_plain();
	CHECK_EQ(compress2(sec + h, &clen, plain, sizeof(plain), 6), Z_OK);
	CHECK_EQ(ustack_section_decompress(sec, h + clen, 1 << 20, &out, &n), 0);
	CHECK_EQ(n, sizeof(plain));
	CHECK(!memcmp(out, plain, n));
	free(out);
	/* the limit is checked before any allocation */
	CHECK_EQ(ustack_section_decompress(sec, h + clen, 1000, &out, &n), -EFBIG);
	/* truncated stream, and a size that lies (either way) */
	CHECK_EQ(ustack_section_decompress(sec, h + clen / 2, 1 << 20, &out, &n), -EBADMSG);
	chdr(sec, ELFCOMPRESS_ZLIB, sizeof(plain) - 1);
	CHECK_EQ(ustack_section_decompress(sec, h + clen, 1 << 20, &out, &n), -EBADMSG);
	chdr(sec, ELFCOMPRESS_ZLIB, sizeof(plain) + 1);
	CHECK_EQ(ustack_section_decompress(sec, h + clen, 1 << 20, &out, &n), -EBADMSG);
	CHECK(out == NULL);
}

static void test_zstd_section(void)
{
	static uint8_t sec[sizeof(Elf64_Chdr) + 30000];
	size_t h = chdr(sec, ELFCOMPRESS_ZSTD, sizeof(plain)), n;
	size_t clen;
	uint8_t *out;

	fill_plain();
	clen = ZSTD_compress(sec + h, sizeof(sec) - h, plain, sizeof(plain), 3);
	CHECK(!ZSTD_isError(clen));
	CHECK_EQ(ustack_section_decompress(sec, h + clen, 1 << 20, &out, &n), 0);
	CHECK_EQ(n, sizeof(plain));
	CHECK(!memcmp(out, plain, n));
	free(out);
	CHECK_EQ(ustack_section_decompress(sec, h + clen - 3, 1 << 20, &out, &n), -EBADMSG);
	chdr(sec, ELFCOMPRESS_ZSTD, sizeof(plain) - 100);
	CHECK_EQ(ustack_section_decompress(sec, h + clen, 1 << 20, &out, &n), -EBADMSG);
	chdr(sec, 3, sizeof(plain));
	CHECK_EQ(ustack_section_decompress(sec, h + clen, 1 << 20, &out, &n), -EOPNOTSUPP);
}

static void test_xz(void)
{
	static uint8_t xz[30000];
	size_t xn = 0, n;
	uint8_t *out;

	fill_plain();
	CHECK_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, plain, sizeof(plain), xz, &xn,
					 sizeof(xz)), LZMA_OK);
	CHECK_EQ(ustack_xz_decode(xz, xn, 1 << 20, &out, &n), 0);
	CHECK_EQ(n, sizeof(plain));
	CHECK(!memcmp(out, plain, n));
	free(out);
	/* bounded output: one byte short of the real size is refused */
	CHECK_EQ(ustack_xz_decode(xz, xn, sizeof(plain) - 1, &out, &n), -EFBIG);
	CHECK_EQ(ustack_xz_decode(xz, xn - 1, 1 << 20, &out, &n), -EBADMSG);
	xz[xn / 2] ^= 0x55;
	CHECK(ustack_xz_decode(xz, xn, 1 << 20, &out, &n) < 0);
	CHECK(out == NULL);
	CHECK_EQ(ustack_xz_decode((const uint8_t *)"not xz at all", 13, 1 << 20, &out, &n), -EBADMSG);
}

/* A minimal ELF64: null section, .shstrtab, .debug_info (zstd-compressed
 * copy of plain[0..len)). Returns its size. */
static size_t make_elf(uint8_t *buf, size_t cap, size_t len)
{
	static const char strtab[] = "\0.shstrtab\0.debug_info";
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[3] = { 0 };
	size_t off = sizeof(eh), h, clen;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_REL;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 1;
	memcpy(buf + off, strtab, sizeof(strtab));
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = off,
			      .sh_size = sizeof(strtab), .sh_addralign = 1 };
	off += sizeof(strtab);
	off = (off + 7) & ~7ul;
	h = chdr(buf + off, ELFCOMPRESS_ZSTD, len);
	clen = ZSTD_compress(buf + off + h, cap - off - h - sizeof(sh), plain, len, 3);
	if (ZSTD_isError(clen))
		return 0;
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = off,
			      .sh_size = h + clen, .sh_flags = SHF_COMPRESSED, .sh_addralign = 8 };
	off += h + clen;
	off = (off + 7) & ~7ul;
	eh.e_shoff = off;
	memcpy(buf + off, sh, sizeof(sh));
	memcpy(buf, &eh, sizeof(eh));
	return off + sizeof(sh);
}

static void test_decompress_copy(void)
{
	static uint8_t img[40000];
	size_t n = 0, size;
	uint8_t *copy;
	struct ustack_elf *e, *c;
	struct ustack_elf_section s;

	fill_plain();
	size = make_elf(img, sizeof(img), sizeof(plain));
	CHECK(size > 0);
	e = ustack_elf__open_mem(img, size, "zstd-test");
	CHECK(e);
	CHECK_EQ(ustack_elf_decompress_copy(e, 1 << 20, &copy, &n), 0);
	c = ustack_elf__open_mem_owned(copy, n, "copy");
	CHECK(c);
	CHECK_EQ(ustack_elf__section(c, ".debug_info", &s), 0);
	CHECK(!(s.flags & SHF_COMPRESSED));
	CHECK_EQ(s.size, sizeof(plain));
	CHECK(!memcmp(s.data, plain, sizeof(plain)));
	CHECK_EQ(ustack_elf__section(c, ".shstrtab", &s), 0);
	ustack_elf__close(c); /* frees copy */
	/* the total output is bounded too */
	CHECK_EQ(ustack_elf_decompress_copy(e, 100, &copy, &n), -EFBIG);
	ustack_elf__close(e);
}

/* The test binary itself (built with -g) as image and as debug file. */
static void test_find_self_and_build_id_dir(void)
{
	char dir[] = "/tmp/ustack-test-debugfind-XXXXXX", path[PATH_MAX + 256], sub[PATH_MAX];
	char hex[129], warn[256];
	uint8_t id[64];
	struct ustack_elf *self = ustack_elf__open("/proc/self/exe");
	struct ustack_debugfind_opts o = { .sz = sizeof(o), .cache_dir = "",
					   .flags = USTACK_DEBUGFIND_NO_DEBUGINFOD };
	struct ustack_debug_found f;
	const uint8_t *data;
	size_t size;
	int n, fd;

	CHECK(self);
	n = ustack_elf__build_id(self, id, sizeof(id));
	if (n < 2)
		SKIP("test binary has no build ID");
	CHECK(mkdtemp(dir));
	o.debug_dir = dir;
	/* 1. the file itself has .debug_info */
	CHECK_EQ(ustack_debugfind(&o, "/proc/self/exe", self, id, n, &f, warn, sizeof(warn)), 0);
	CHECK_EQ(f.source, USTACK_DEBUG_SRC_SELF);
	CHECK(f.elf == NULL);
	/* 2. no image at hand: the build-ID tree, only with the same build ID */
	CHECK_EQ(ustack_debugfind(&o, NULL, NULL, id, n, &f, warn, sizeof(warn)), -ENOENT);
	ustack_hex(id, n, hex);
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, hex);
	mkdir(sub, 0755);
	snprintf(path, sizeof(path), "%s/%s.debug", sub, hex + 2);
	data = ustack_elf__data(self, &size);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, data, size), (ssize_t)size);
	close(fd);
	CHECK_EQ(ustack_debugfind(&o, NULL, NULL, id, n, &f, warn, sizeof(warn)), 0);
	CHECK_EQ(f.source, USTACK_DEBUG_SRC_BUILD_ID_DIR);
	CHECK_STR(f.path, path);
	CHECK(f.elf);
	ustack_elf__close(f.elf);
	id[n - 1] ^= 1; /* another build ID: the same path is not looked at */
	CHECK_EQ(ustack_debugfind(&o, NULL, NULL, id, n, &f, warn, sizeof(warn)), -ENOENT);
	id[n - 1] ^= 1;
	/* a truncated debug file: a warning naming it, nothing used */
	CHECK_EQ(truncate(path, 100), 0);
	logbuf[0] = 0;
	CHECK_EQ(ustack_debugfind(&o, NULL, NULL, id, n, &f, warn, sizeof(warn)), -ENOENT);
	CHECK(strstr(logbuf, path));
	CHECK(strstr(warn, path));
	unlink(path);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	rmdir(sub);
	rmdir(dir);
	ustack_elf__close(self);
}

int main(void)
{
	ustack_set_print(logged);
	RUN(test_debuglink_names);
	RUN(test_chdr);
	RUN(test_zlib_section);
	RUN(test_zstd_section);
	RUN(test_xz);
	RUN(test_decompress_copy);
	RUN(test_find_self_and_build_id_dir);
	TEST_EXIT();
}
