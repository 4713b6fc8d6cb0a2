// SPDX-License-Identifier: MIT
/*
 * Test driver for the build-ID cache (src/bidcache/bidcache.h), for
 * tests/integration/bidcache_perf.sh; not a CLI command.
 *   bidcache_tool store ROOT FILE BUILDID_HEX   store FILE as ELF; prints
 *                                               "<flags> <sha256 hex>"
 *   bidcache_tool find-foreign ROOT BUILDID_HEX find the perf name "elf" in a
 *                                               cache perf wrote; prints the path
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bidcache/bidcache.h"

static int parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s);

	if (n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return (int)(n / 2);
}

static int do_store(const char *root, const char *file, const char *hex)
{
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_WRITE);
	struct ustack_bidcache_stored st;
	uint8_t bid[32];
	int n = parse_hex(hex, bid, sizeof(bid)), fd, err;

	if (!c || n < 0) {
		fprintf(stderr, "bidcache_tool: %s: %s\n", root, c ? "bad build ID" : strerror(errno));
		return 1;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(file);
		return 1;
	}
	err = ustack_bidcache__store(c, fd, bid, (size_t)n, USTACK_BIDCACHE_ELF, NULL,
				     USTACK_BIDCACHE_FILE_MAX_MB << 20, &st);
	close(fd);
	ustack_bidcache__close(c);
	if (err) {
		fprintf(stderr, "bidcache_tool: store %s: %s\n", file, strerror(-err));
		return 1;
	}
	printf("%u ", st.flags);
	for (int i = 0; i < USTACK_SHA256_SIZE; i++)
		printf("%02x", st.sha256[i]);
	printf("\n");
	return 0;
}

static int do_find_foreign(const char *root, const char *hex)
{
	struct ustack_bidcache *c = ustack_bidcache__open(root, USTACK_BIDCACHE_FOREIGN);
	uint8_t bid[32];
	char path[4096];
	int n = parse_hex(hex, bid, sizeof(bid)), err;

	if (!c || n < 0) {
		fprintf(stderr, "bidcache_tool: %s: %s\n", root, c ? "bad build ID" : strerror(errno));
		return 1;
	}
	err = ustack_bidcache__find(c, bid, (size_t)n, USTACK_BIDCACHE_ELF, NULL, path, sizeof(path));
	ustack_bidcache__close(c);
	if (err) {
		fprintf(stderr, "bidcache_tool: find %s: %s\n", hex, strerror(-err));
		return 1;
	}
	printf("%s\n", path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "store"))
		return do_store(argv[2], argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "find-foreign"))
		return do_find_foreign(argv[2], argv[3]);
	fprintf(stderr, "usage: bidcache_tool store ROOT FILE BUILDID_HEX | find-foreign ROOT BUILDID_HEX\n");
	return 2;
}
