// SPDX-License-Identifier: MIT
/*
 * The ustar writer and reader (src/archive/tar.c): members written are
 * read back with the same names (long names split into prefix + name),
 * sizes, data offsets and bytes; the header is what POSIX lays out (magic,
 * octal size, checksum as the unsigned sum with the checksum field as
 * spaces, computed here independently); and every damaged archive is
 * refused with the offset of the damage: a flipped header byte (checksum),
 * a size past the end, a size that is not octal, bad magic, no end marker.
 */

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/tar.h"
#include "test.h"

#define LONG_NAME ".build-id/ab/cdef0123456789abcdef0123456789abcdef01/" \
	"elf-00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static uint8_t data1[513], arch[8192];
static size_t arch_len;

static void build(void)
{
	int fd = memfd_create("tar", 0), src = memfd_create("src", 0);
	struct stat st;

	CHECK(fd >= 0 && src >= 0);
	for (size_t i = 0; i < sizeof(data1); i++)
		data1[i] = (uint8_t)(i * 7 + 1);
	CHECK_EQ(write(src, data1, sizeof(data1)), (long)sizeof(data1));
	CHECK_EQ(ustack_tar__write_member(fd, "short/a", src, NULL, sizeof(data1)), 0);
	CHECK_EQ(ustack_tar__write_member(fd, LONG_NAME, -1, "hello", 5), 0);
	CHECK_EQ(ustack_tar__write_member(fd, "empty", -1, NULL, 0), 0);
	/* the file is shorter than the size asked for */
	CHECK_EQ(ustack_tar__write_member(fd, "x", src, NULL, sizeof(data1) + 1), -EIO);
	close(fd);
	fd = memfd_create("tar", 0);
	CHECK_EQ(ustack_tar__write_member(fd, "short/a", src, NULL, sizeof(data1)), 0);
	CHECK_EQ(ustack_tar__write_member(fd, LONG_NAME, -1, "hello", 5), 0);
	CHECK_EQ(ustack_tar__write_member(fd, "empty", -1, NULL, 0), 0);
	CHECK_EQ(ustack_tar__write_end(fd), 0);
	CHECK(!fstat(fd, &st));
	/* 3 headers, 2 + 1 + 0 data blocks, 2 end blocks */
	CHECK_EQ(st.st_size, 8 * 512);
	CHECK_EQ(pread(fd, arch, sizeof(arch), 0), 8 * 512);
	arch_len = 8 * 512;
	close(fd);
	close(src);
}

static unsigned int ref_sum(const uint8_t *h)
{
	unsigned int s = 0;

	for (int i = 0; i < 512; i++)
		s += (i >= 148 && i < 156) ? 32 : h[i];
	return s;
}

static void test_layout(void)
{
	char want[16];

	build();
	CHECK(!memcmp(arch + 257, "ustar\0" "00", 8));
	CHECK(!memcmp(arch + 124, "00000001001", 12)); /* 513 in octal */
	CHECK_EQ(arch[156], '0');
	snprintf(want, sizeof(want), "%06o", ref_sum(arch));
	CHECK(!memcmp(arch + 148, want, 6));
	/* the long name: prefix holds the directories, name the file */
	CHECK(!memcmp(arch + 3 * 512 + 345, ".build-id/ab/cdef", 17));
	CHECK(!memcmp(arch + 3 * 512, "elf-0011", 8));
	CHECK(!memcmp(arch + 512, data1, 512));
	CHECK_EQ(arch[2 * 512], data1[512]);
	CHECK_EQ(arch[2 * 512 + 1], 0);
}

static void test_roundtrip(void)
{
	struct ustack_tar_reader r;
	struct ustack_tar_member m;
	uint8_t buf[513];

	build();
	ustack_tar_reader__init_mem(&r, arch, arch_len);
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 1);
	CHECK_STR(m.name, "short/a");
	CHECK_EQ(m.type, '0');
	CHECK_EQ(m.size, 513);
	CHECK_EQ(m.header_off, 0);
	CHECK_EQ(m.data_off, 512);
	CHECK_EQ(ustack_tar_reader__pread(&r, &m, buf, 513, 0), 0);
	CHECK(!memcmp(buf, data1, 513));
	CHECK_EQ(ustack_tar_reader__pread(&r, &m, buf, 2, 512), -EINVAL);
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 1);
	CHECK_STR(m.name, LONG_NAME);
	CHECK_EQ(m.header_off, 3 * 512);
	CHECK_EQ(ustack_tar_reader__pread(&r, &m, buf, 5, 0), 0);
	CHECK(!memcmp(buf, "hello", 5));
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 1);
	CHECK_STR(m.name, "empty");
	CHECK_EQ(m.size, 0);
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 0);
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 0);
}

static void test_roundtrip_fd(void)
{
	struct ustack_tar_reader r;
	struct ustack_tar_member m;
	int fd = memfd_create("t", 0);
	uint8_t buf[5];

	build();
	CHECK_EQ(write(fd, arch, arch_len), (long)arch_len);
	ustack_tar_reader__init_fd(&r, fd, arch_len);
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 1);
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 1);
	CHECK_EQ(ustack_tar_reader__pread(&r, &m, buf, 5, 0), 0);
	CHECK(!memcmp(buf, "hello", 5));
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 1);
	CHECK_EQ(ustack_tar_reader__next(&r, &m), 0);
	close(fd);
}

/* the first member of a damaged copy: -EBADMSG at @off, or 1 */
static int first(uint8_t *a, size_t len, uint64_t *off)
{
	struct ustack_tar_reader r;
	struct ustack_tar_member m;
	int rc;

	ustack_tar_reader__init_mem(&r, a, len);
	while ((rc = ustack_tar_reader__next(&r, &m)) == 1)
		;
	*off = r.err_off;
	return rc;
}

static void test_rejects(void)
{
	static uint8_t a[8192];
	uint64_t off;

	build();
	/* any flipped byte of the second header: its checksum */
	for (int i = 0; i < 512; i++) {
		if (i >= 148 && i < 156)
			continue;
		memcpy(a, arch, arch_len);
		a[3 * 512 + i] ^= 0x01;
		CHECK_EQ(first(a, arch_len, &off), -EBADMSG);
		CHECK_EQ(off, 3 * 512);
	}
	/* a size past the end, checksum made right */
	memcpy(a, arch, arch_len);
	memcpy(a + 124, "77777777777", 11);
	snprintf((char *)a + 148, 8, "%06o", ref_sum(a));
	CHECK_EQ(first(a, arch_len, &off), -EBADMSG);
	CHECK_EQ(off, 0);
	/* 8 in a size field */
	memcpy(a, arch, arch_len);
	a[124 + 10] = '8';
	snprintf((char *)a + 148, 8, "%06o", ref_sum(a));
	CHECK_EQ(first(a, arch_len, &off), -EBADMSG);
	/* base-256 size (GNU's extension): refused */
	memcpy(a, arch, arch_len);
	a[124] = 0x80;
	snprintf((char *)a + 148, 8, "%06o", ref_sum(a));
	CHECK_EQ(first(a, arch_len, &off), -EBADMSG);
	/* magic */
	memcpy(a, arch, arch_len);
	memcpy(a + 257, "USTAR", 5);
	snprintf((char *)a + 148, 8, "%06o", ref_sum(a));
	CHECK_EQ(first(a, arch_len, &off), -EBADMSG);
	/* cut before the end marker, inside data, mid-header */
	CHECK_EQ(first(arch, 6 * 512, &off), -EBADMSG);
	CHECK_EQ(off, 6 * 512);
	CHECK_EQ(first(arch, 4 * 512 + 3, &off), -EBADMSG);
	CHECK_EQ(first(arch, 2 * 512 + 100, &off), -EBADMSG);
	CHECK_EQ(first(arch, 511, &off), -EBADMSG);
	CHECK_EQ(first(arch, 0, &off), -EBADMSG);
	/* the undamaged one, as a control */
	CHECK_EQ(first(arch, arch_len, &off), 0);
}

static void test_names_that_do_not_fit(void)
{
	char name[300];
	int fd = memfd_create("t", 0);

	memset(name, 'a', sizeof(name));
	name[101] = 0; /* no '/': cannot be split */
	CHECK_EQ(ustack_tar__write_member(fd, name, -1, "", 0), -ENAMETOOLONG);
	name[101] = 'a';
	name[256] = 0;
	CHECK_EQ(ustack_tar__write_member(fd, name, -1, "", 0), -ENAMETOOLONG);
	CHECK_EQ(ustack_tar__write_member(fd, "", -1, "", 0), -ENAMETOOLONG);
	close(fd);
}

int main(void)
{
	RUN(test_layout);
	RUN(test_roundtrip);
	RUN(test_roundtrip_fd);
	RUN(test_rejects);
	RUN(test_names_that_do_not_fit);
	TEST_EXIT();
}
