/* SPDX-License-Identifier: MIT */
/*
 * The small part of POSIX ustar (pax's base format, IEEE 1003.1-2001
 * "ustar Interchange Format") that ustack's archives use: regular files
 * only, written with fixed owner, mode and time so that the same inputs
 * give the same bytes; read from untrusted input with every field checked.
 *
 * A header is one 512-byte block: name[100] mode[8] uid[8] gid[8] size[12]
 * mtime[12] chksum[8] typeflag[1] linkname[100] magic[6] version[2]
 * uname[32] gname[32] devmajor[8] devminor[8] prefix[155], then the data
 * padded to 512 bytes; the archive ends with two zero blocks. The full
 * name is prefix + "/" + name when prefix is not empty.
 */
#ifndef USTACK_ARCHIVE_TAR_H
#define USTACK_ARCHIVE_TAR_H

#include <stddef.h>
#include <stdint.h>

#define USTACK_TAR_BLOCK 512u
/* prefix (155) + '/' + name (100) */
#define USTACK_TAR_NAME_MAX 256u

/**
 * Append a regular file member: header, then @size bytes read from @in_fd
 * (pread from offset 0), then the padding.
 * @param out_fd where to write (at its current position)
 * @param name the member's name (split at a '/' into prefix and name)
 * @param in_fd the file's content; -1 with @data for bytes in memory
 * @param data the content when @in_fd is -1
 * @param size its size: the file must hold that many bytes
 * @return 0, -ENAMETOOLONG (name does not fit), -EIO (the file was shorter),
 *         -errno of a read or write
 */
int ustack_tar__write_member(int out_fd, const char *name, int in_fd, const void *data,
			     uint64_t size);

/** Append the end of archive (two zero blocks). @return 0 or -errno */
int ustack_tar__write_end(int out_fd);

/* A member as read (ustack_tar_reader__next()) */
struct ustack_tar_member {
	char name[USTACK_TAR_NAME_MAX]; /* prefix/name, NUL-terminated */
	char type;                      /* typeflag; '\0' is stored as '0' */
	uint64_t size;                  /* data bytes */
	uint64_t header_off;            /* offset of its header block */
	uint64_t data_off;              /* offset of its data */
};

/* Reads from memory (mem != NULL) or from a file with pread. */
struct ustack_tar_reader {
	int fd;
	const uint8_t *mem;
	uint64_t size;  /* of the archive */
	uint64_t off;   /* next header */
	int done;
	/* on an error: where and why (static text) */
	uint64_t err_off;
	const char *err;
};

void ustack_tar_reader__init_mem(struct ustack_tar_reader *r, const void *data, uint64_t size);
void ustack_tar_reader__init_fd(struct ustack_tar_reader *r, int fd, uint64_t size);

/**
 * The next member. Structure errors end the walk: the archive cannot be
 * read past a header that is not one.
 * @return 1 and @m filled, 0 at the end marker, -EBADMSG (r->err, r->err_off:
 *         bad checksum, bad magic, a number field that is not octal, data
 *         past the end of the archive, no end marker), -errno of a read
 */
int ustack_tar_reader__next(struct ustack_tar_reader *r, struct ustack_tar_member *m);

/**
 * Read @len bytes of a member's data at @off (relative to its data).
 * @return 0, -EINVAL (outside the member), -errno, -EIO (short read)
 */
int ustack_tar_reader__pread(const struct ustack_tar_reader *r, const struct ustack_tar_member *m,
			     void *buf, size_t len, uint64_t off);

#endif
