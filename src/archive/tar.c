// SPDX-License-Identifier: MIT
/* ustar writer and checked reader (tar.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "archive/tar.h"

#define OFF_NAME 0
#define OFF_MODE 100
#define OFF_UID 108
#define OFF_GID 116
#define OFF_SIZE 124
#define OFF_MTIME 136
#define OFF_CHKSUM 148
#define OFF_TYPE 156
#define OFF_LINK 157
#define OFF_MAGIC 257
#define OFF_VERSION 263
#define OFF_UNAME 265
#define OFF_GNAME 297
#define OFF_PREFIX 345
#define LEN_NAME 100
#define LEN_PREFIX 155

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* @len - 1 octal digits and a NUL, as POSIX asks for numeric fields */
static int put_octal(uint8_t *field, size_t len, uint64_t v)
{
	field[len - 1] = 0;
	for (size_t i = len - 1; i-- > 0;) {
		field[i] = (uint8_t)('0' + (v & 7));
		v >>= 3;
	}
	return v ? -EOVERFLOW : 0;
}

static unsigned int header_sum(const uint8_t *h)
{
	unsigned int sum = 0;

	for (size_t i = 0; i < USTACK_TAR_BLOCK; i++)
		sum += (i >= OFF_CHKSUM && i < OFF_CHKSUM + 8) ? ' ' : h[i];
	return sum;
}

/* name -> prefix + name at the last '/' that makes both fit */
static int put_name(uint8_t *h, const char *name)
{
	size_t len = strlen(name);
	const char *slash;

	if (!len || len >= USTACK_TAR_NAME_MAX)
		return -ENAMETOOLONG;
	if (len <= LEN_NAME) {
		memcpy(h + OFF_NAME, name, len);
		return 0;
	}
	for (slash = name + len - 1; slash > name; slash--) {
		size_t pre = (size_t)(slash - name), rest = len - pre - 1;

		if (*slash != '/')
			continue;
		if (rest > LEN_NAME || !rest)
			return -ENAMETOOLONG;
		if (pre <= LEN_PREFIX) {
			memcpy(h + OFF_PREFIX, name, pre);
			memcpy(h + OFF_NAME, slash + 1, rest);
			return 0;
		}
	}
	return -ENAMETOOLONG;
}

static int make_header(uint8_t *h, const char *name, uint64_t size)
{
	int err;

	memset(h, 0, USTACK_TAR_BLOCK);
	err = put_name(h, name);
	if (err)
		return err;
	/* fixed owner and time: one trace's archive is the same bytes wherever
	 * and whenever it is written */
	put_octal(h + OFF_MODE, 8, 0644);
	put_octal(h + OFF_UID, 8, 0);
	put_octal(h + OFF_GID, 8, 0);
	if (put_octal(h + OFF_SIZE, 12, size))
		return -EFBIG;
	put_octal(h + OFF_MTIME, 12, 0);
	h[OFF_TYPE] = '0';
	memcpy(h + OFF_MAGIC, "ustar", 6);
	memcpy(h + OFF_VERSION, "00", 2);
	memcpy(h + OFF_UNAME, "root", 4);
	memcpy(h + OFF_GNAME, "root", 4);
	put_octal(h + OFF_CHKSUM, 7, header_sum(h));
	h[OFF_CHKSUM + 7] = ' ';
	return 0;
}

static int copy_data(int out_fd, int in_fd, const void *data, uint64_t size)
{
	static const uint8_t zeros[USTACK_TAR_BLOCK];
	uint8_t buf[1 << 16];
	uint64_t done = 0;
	int err;

	while (done < size) {
		size_t want = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
		const void *p = buf;
		ssize_t n;

		if (in_fd < 0) {
			p = (const uint8_t *)data + done;
			n = (ssize_t)want;
		} else {
			n = pread(in_fd, buf, want, (off_t)done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			if (!n)
				return -EIO;
		}
		err = write_all(out_fd, p, (size_t)n);
		if (err)
			return err;
		done += (uint64_t)n;
	}
	if (size % USTACK_TAR_BLOCK)
		return write_all(out_fd, zeros, USTACK_TAR_BLOCK - size % USTACK_TAR_BLOCK);
	return 0;
}

int ustack_tar__write_member(int out_fd, const char *name, int in_fd, const void *data,
			     uint64_t size)
{
	uint8_t h[USTACK_TAR_BLOCK];
	int err;

	if (!name || (in_fd < 0 && size && !data))
		return -EINVAL;
	err = make_header(h, name, size);
	if (err)
		return err;
	err = write_all(out_fd, h, sizeof(h));
	return err ? err : copy_data(out_fd, in_fd, data, size);
}

int ustack_tar__write_end(int out_fd)
{
	static const uint8_t zeros[2 * USTACK_TAR_BLOCK];

	return write_all(out_fd, zeros, sizeof(zeros));
}

/* ---- reader ------------------------------------------------------------- */

void ustack_tar_reader__init_mem(struct ustack_tar_reader *r, const void *data, uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->mem = data;
	r->size = size;
}

void ustack_tar_reader__init_fd(struct ustack_tar_reader *r, int fd, uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->size = size;
}

static int read_at(const struct ustack_tar_reader *r, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	if (off > r->size || len > r->size - off)
		return -EINVAL;
	if (r->mem) {
		memcpy(buf, r->mem + off, len);
		return 0;
	}
	while (got < len) {
		ssize_t n = pread(r->fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

static int fail(struct ustack_tar_reader *r, uint64_t off, const char *why)
{
	r->err_off = off;
	r->err = why;
	r->done = 1;
	return -EBADMSG;
}

/* An octal field: optional leading spaces, digits, then NUL or spaces to
 * its end (what POSIX and GNU tar write). Base-256 and anything else: -1. */
static int get_octal(const uint8_t *f, size_t len, uint64_t *out)
{
	size_t i = 0, digits = 0;
	uint64_t v = 0;

	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
		if (v >> 61)
			return -1;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	if (!digits)
		return -1;
	for (; i < len; i++)
		if (f[i] && f[i] != ' ')
			return -1;
	*out = v;
	return 0;
}

static int is_zero(const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return 0;
	return 1;
}

/* name[100] may fill its field without a NUL; a NUL inside is its end */
static size_t field_len(const uint8_t *f, size_t len)
{
	const uint8_t *z = memchr(f, 0, len);

	return z ? (size_t)(z - f) : len;
}

static void get_name(const uint8_t *h, char *out)
{
	size_t pre = field_len(h + OFF_PREFIX, LEN_PREFIX);
	size_t nl = field_len(h + OFF_NAME, LEN_NAME), at = 0;

	if (pre) {
		memcpy(out, h + OFF_PREFIX, pre);
		out[pre] = '/';
		at = pre + 1;
	}
	memcpy(out + at, h + OFF_NAME, nl);
	out[at + nl] = 0;
}

static int check_header(struct ustack_tar_reader *r, const uint8_t *h, struct ustack_tar_member *m)
{
	uint64_t sum, size, off = r->off;

	if (memcmp(h + OFF_MAGIC, "ustar\0" "00", 8) && memcmp(h + OFF_MAGIC, "ustar  \0", 8))
		return fail(r, off, "not a ustar header (magic)");
	if (get_octal(h + OFF_CHKSUM, 8, &sum) || sum != header_sum(h))
		return fail(r, off, "header checksum mismatch");
	if (get_octal(h + OFF_SIZE, 12, &size))
		return fail(r, off, "size field is not octal");
	if (size > r->size - off - USTACK_TAR_BLOCK)
		return fail(r, off, "member data past the end of the archive");
	memset(m, 0, sizeof(*m));
	get_name(h, m->name);
	m->type = h[OFF_TYPE] ? (char)h[OFF_TYPE] : '0';
	m->size = size;
	m->header_off = off;
	m->data_off = off + USTACK_TAR_BLOCK;
	return 0;
}

int ustack_tar_reader__next(struct ustack_tar_reader *r, struct ustack_tar_member *m)
{
	uint8_t h[USTACK_TAR_BLOCK];
	uint64_t padded;
	int err;

	if (r->done)
		return r->err ? -EBADMSG : 0;
	if (r->off > r->size || r->size - r->off < USTACK_TAR_BLOCK)
		return fail(r, r->off, "no end-of-archive marker");
	err = read_at(r, h, sizeof(h), r->off);
	if (err)
		return err;
	if (is_zero(h, sizeof(h))) {
		r->done = 1;
		return 0;
	}
	err = check_header(r, h, m);
	if (err)
		return err;
	/* size <= r->size - data_off: no overflow; the padding may be
	 * missing only where the next header check will say so */
	padded = (m->size + USTACK_TAR_BLOCK - 1) / USTACK_TAR_BLOCK * USTACK_TAR_BLOCK;
	r->off = m->data_off + padded;
	return 1;
}

int ustack_tar_reader__pread(const struct ustack_tar_reader *r, const struct ustack_tar_member *m,
			     void *buf, size_t len, uint64_t off)
{
	if (off > m->size || len > m->size - off)
		return -EINVAL;
	return read_at(r, buf, len, m->data_off + off);
}
