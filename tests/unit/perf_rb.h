/* SPDX-License-Identifier: MIT */
/*
 * perf ring records built byte by byte as the kernel lays them out
 * (include/uapi/linux/perf_event.h), and the parser run on an exact-size
 * copy of them: shared by test_perf_record.c and test_perf_record_switch.c.
 * The includer defines ID0 and ID1, the sample ids of events 0 and 1.
 */
#ifndef USTACK_TESTS_PERF_RB_H
#define USTACK_TESTS_PERF_RB_H

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf_record.h"
#include "test.h"

struct rb {
	uint8_t b[1024];
	uint32_t n;
};

static inline void put(struct rb *r, const void *p, uint32_t n)
{
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static inline void put64(struct rb *r, uint64_t v)
{
	put(r, &v, 8);
}

static inline void put_pair(struct rb *r, uint32_t lo, uint32_t hi)
{
	put64(r, (uint64_t)hi << 32 | lo);
}

/* NUL-terminated, padded with NULs to a multiple of 8 (as the kernel does) */
static inline void put_str(struct rb *r, const char *s)
{
	size_t n = (strlen(s) + 1 + 7) & ~(size_t)7;

	memset(r->b + r->n, 0, n);
	memcpy(r->b + r->n, s, strlen(s));
	r->n += n;
}

static inline void begin(struct rb *r, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc };

	memset(r, 0, sizeof(*r));
	put(r, &h, sizeof(h));
}

/* the header's size: the record as built so far */
static inline void finish(struct rb *r)
{
	uint16_t size = (uint16_t)r->n;

	memcpy(r->b + 6, &size, 2);
}

static inline int event_of(void *ctx, uint64_t id)
{
	(void)ctx;
	return id == ID0 ? 0 : id == ID1 ? 1 : -1;
}

static struct ustack_perf_parser parser;

/* Parse from an exactly-sized heap copy, so that ASan sees any over-read. */
static inline int parse(const struct rb *r, uint32_t len, struct ustack_perf_record *out,
			uint8_t **copy)
{
	*copy = malloc(len ? len : 1);
	memcpy(*copy, r->b, len);
	return ustack_perf_record__parse(&parser, *copy, len, out);
}

/* Every strict prefix of the record is refused (and read within bounds). */
static inline void check_prefixes(const struct rb *r)
{
	for (uint32_t len = 0; len < r->n; len++) {
		struct ustack_perf_record rec;
		uint8_t *copy;
		int ret = parse(r, len, &rec, &copy);

		free(copy);
		if (ret != -EBADMSG)
			printf("  prefix of %u of %u bytes: %d\n", len, r->n, ret);
		CHECK_EQ(ret, -EBADMSG);
	}
}

#endif
