// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the archive's member reader and name validator
 * (src/archive/tar.c, ustack_archive_name__parse()) over arbitrary bytes
 * taken as a ustar archive. Whatever the input:
 *  - no crash; the walk ends (each member moves the offset forward);
 *  - every member's header and data lie inside the input, 512-aligned;
 *  - a name the validator accepts has only the cache's forms: it formats
 *    back to exactly itself, holds no "..", no "//", no leading '/', and
 *    its sha256 / build ID are the hex in the name;
 *  - reading a member's data at its last byte works, one past fails.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive.h"
#include "archive/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *name)
{
	struct ustack_archive_name n;
	char back[USTACK_TAR_NAME_MAX];

	if (ustack_archive_name__parse(name, &n))
		return;
	if (ustack_archive_name__format(&n, back, sizeof(back)) || strcmp(back, name))
		abort();
	if (strstr(name, "..") || strstr(name, "//") || name[0] == '/' ||
	    (n.kind == USTACK_BIDCACHE_DEBUG && !n.build_id_size) ||
	    (!n.build_id_size && !n.has_sha256) || n.build_id_size == 1)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_tar_reader r;
	struct ustack_tar_member m;
	uint64_t last = 0;
	uint8_t b;
	int rc;

	ustack_tar_reader__init_mem(&r, data, size);
	while ((rc = ustack_tar_reader__next(&r, &m)) == 1) {
		if (m.header_off % USTACK_TAR_BLOCK || m.header_off < last ||
		    m.data_off != m.header_off + USTACK_TAR_BLOCK || m.data_off > size ||
		    m.size > size - m.data_off || strlen(m.name) >= USTACK_TAR_NAME_MAX)
			abort();
		last = m.data_off;
		if (m.size && ustack_tar_reader__pread(&r, &m, &b, 1, m.size - 1))
			abort();
		if (!ustack_tar_reader__pread(&r, &m, &b, 1, m.size))
			abort();
		check_name(m.name);
	}
	if (rc != 0 && rc != -EBADMSG)
		abort();
	if (rc == -EBADMSG && (!r.err || r.err_off > size))
		abort();
	/* the input itself as one name, too */
	if (size < USTACK_TAR_NAME_MAX) {
		char name[USTACK_TAR_NAME_MAX];

		memcpy(name, data, size);
		name[size] = 0;
		check_name(name);
	}
	return 0;
}
