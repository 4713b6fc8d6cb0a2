// SPDX-License-Identifier: MIT
/* Single-threaded behaviour of the stackmap: ids, depth limit, exhaustion,
 * the reset rule, and the exports checked byte for byte against layouts
 * written out here from the format description (docs/stackmap.md). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <ustack/stackmap.h>

#include "stackmap/stackmap_internal.h"
#include "test.h"

static struct ustack_stackmap *new_map(uint32_t cap, uint32_t depth, uint64_t words)
{
	struct ustack_stackmap_opts o = { .sz = sizeof(o), .capacity = cap,
					  .max_depth = depth, .arena_words = words,
					  .seed = 42 };
	return ustack_stackmap__new(&o);
}

/* stack k: k in the first word so content can be checked from the words */
static void make_stack(uint64_t *w, uint32_t nr, uint64_t k)
{
	for (uint32_t j = 0; j < nr; j++)
		w[j] = j ? 0x7f0000000000ull + k * 0x1000 + j * 8 : k;
}

static void test_ids_dense_and_stable(void)
{
	struct ustack_stackmap *m = new_map(64, 0, 0);
	uint64_t a[3] = { 1, 2, 3 }, b[3] = { 1, 2, 4 }, c[2] = { 1, 2 };
	uint32_t id = 99, nr;
	const uint64_t *ips;
	uint64_t ref;
	struct ustack_stackmap_stats st;

	CHECK(m);
	CHECK_EQ(ustack_stackmap__insert(m, a, 3, &id), 1);
	CHECK_EQ(id, 0);
	CHECK_EQ(ustack_stackmap__insert(m, b, 3, &id), 1);
	CHECK_EQ(id, 1);
	CHECK_EQ(ustack_stackmap__insert(m, c, 2, &id), 1);  /* prefix of a: distinct */
	CHECK_EQ(id, 2);
	CHECK_EQ(ustack_stackmap__insert(m, a, 3, &id), 0);
	CHECK_EQ(id, 0);
	CHECK_EQ(ustack_stackmap__insert(m, a, 3, &id), 0);
	CHECK_EQ(id, 0);
	CHECK_EQ(ustack_stackmap__lookup(m, 0, &ips, &nr, &ref), 0);
	CHECK_EQ(nr, 3);
	CHECK_EQ(ref, 3);
	CHECK(ips != a);
	CHECK_EQ_U64(ips[2], 3);
	CHECK_EQ(ustack_stackmap__lookup(m, 2, &ips, &nr, &ref), 0);
	CHECK_EQ(nr, 2);
	CHECK_EQ(ref, 1);
	CHECK_EQ(ustack_stackmap__lookup(m, 3, NULL, NULL, NULL), -ENOENT);
	CHECK_EQ(ustack_stackmap__lookup(m, USTACK_STACKMAP_NO_ID, NULL, NULL, NULL), -ENOENT);
	CHECK_EQ(ustack_stackmap__stats(m, &st, sizeof(st)), 0);
	CHECK_EQ(st.entries, 3);
	CHECK_EQ(st.successes, 5);
	CHECK_EQ(st.drops, 0);
	CHECK_EQ(st.capacity, 64);
	CHECK_EQ(st.table_size, 128);
	CHECK_EQ(st.words_used, 8 + 3 * 3);  /* words + a 3-word header each */
	ustack_stackmap__free(m);
}

static void test_bad_args(void)
{
	struct ustack_stackmap *m = new_map(16, 0, 0);
	uint64_t a[1] = { 5 };
	uint32_t id;
	struct ustack_stackmap_opts o = { .sz = 4 };
	struct { struct ustack_stackmap_opts o; uint64_t future; } big = {
		.o = { .sz = sizeof(big) }, .future = 1 };

	CHECK(m);
	CHECK_EQ(ustack_stackmap__insert(m, a, 0, &id), -EINVAL);
	CHECK_EQ(ustack_stackmap__insert(m, NULL, 1, &id), -EINVAL);
	CHECK_EQ(ustack_stackmap__insert(m, a, 1, NULL), -EINVAL);
	CHECK_EQ(ustack_stackmap__insert(NULL, a, 1, &id), -EINVAL);
	ustack_stackmap__free(m);
	ustack_stackmap__free(NULL);

	errno = 0;
	CHECK(!ustack_stackmap__new(&o));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(!ustack_stackmap__new(&big.o));
	CHECK_EQ(errno, EINVAL);
	big.future = 0;  /* unknown trailing fields are fine when zero */
	m = ustack_stackmap__new(&big.o);
	CHECK(m);
	ustack_stackmap__free(m);
	o.sz = sizeof(o);
	o.capacity = USTACK_STACKMAP_MAX_CAPACITY + 1;
	CHECK(!ustack_stackmap__new(&o));
	m = ustack_stackmap__new(NULL);
	CHECK(m);
	{
		struct ustack_stackmap_stats st;

		CHECK_EQ(ustack_stackmap__stats(m, &st, sizeof(st)), 0);
		CHECK_EQ(st.capacity, USTACK_STACKMAP_DEF_CAPACITY);
		CHECK_EQ(st.max_depth, USTACK_STACKMAP_DEF_MAX_DEPTH);
		CHECK_EQ(st.words_capacity,
			 (uint64_t)USTACK_STACKMAP_DEF_CAPACITY * USTACK_STACKMAP_DEF_AVG_WORDS);
	}
	ustack_stackmap__free(m);
	o.capacity = 100;  /* rounded up to a power of two */
	m = ustack_stackmap__new(&o);
	CHECK(m);
	{
		struct ustack_stackmap_stats st;

		ustack_stackmap__stats(m, &st, sizeof(st));
		CHECK_EQ(st.capacity, 128);
		CHECK_EQ(st.table_size, 256);
	}
	ustack_stackmap__free(m);
}

static void test_depth_limit(void)
{
	struct ustack_stackmap *m = new_map(16, 8, 0);
	uint64_t w[12], w2[12];
	uint32_t id, id2, nr;
	const uint64_t *ips;
	struct ustack_stackmap_stats st;

	CHECK(m);
	make_stack(w, 12, 7);
	memcpy(w2, w, sizeof(w));
	w2[10] = 0xdead;  /* differs only past the limit */
	CHECK_EQ(ustack_stackmap__insert(m, w, 12, &id), 1);
	CHECK_EQ(ustack_stackmap__lookup(m, id, &ips, &nr, NULL), 0);
	CHECK_EQ(nr, 8);  /* the innermost 8 words are kept */
	CHECK(!memcmp(ips, w, 8 * sizeof(uint64_t)));
	CHECK_EQ(ustack_stackmap__insert(m, w2, 12, &id2), 0);
	CHECK_EQ(id2, id);
	CHECK_EQ(ustack_stackmap__insert(m, w, 8, &id2), 0);  /* exactly the kept part */
	CHECK_EQ(id2, id);
	CHECK_EQ(ustack_stackmap__insert(m, w, 7, &id2), 1);
	CHECK(id2 != id);
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.truncated, 2);
	CHECK_EQ(st.successes, 4);
	ustack_stackmap__free(m);
}

static void test_pool_exhaustion(void)
{
	struct ustack_stackmap *m = new_map(16, 0, 0);
	uint64_t w[4];
	uint32_t id;
	struct ustack_stackmap_stats st;

	CHECK(m);
	for (uint64_t k = 0; k < 16; k++) {
		make_stack(w, 4, k);
		CHECK_EQ(ustack_stackmap__insert(m, w, 4, &id), 1);
		CHECK_EQ(id, k);
	}
	make_stack(w, 4, 100);
	CHECK_EQ(ustack_stackmap__insert(m, w, 4, &id), -ENOSPC);
	CHECK_EQ(ustack_stackmap__insert(m, w, 4, &id), -ENOSPC);
	for (uint64_t k = 0; k < 16; k++) {  /* everything stored still hits */
		const uint64_t *ips;

		make_stack(w, 4, k);
		CHECK_EQ(ustack_stackmap__insert(m, w, 4, &id), 0);
		CHECK_EQ(id, k);
		CHECK_EQ(ustack_stackmap__lookup(m, id, &ips, NULL, NULL), 0);
		CHECK_EQ_U64(ips[0], k);
	}
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.entries, 16);
	CHECK_EQ(st.drops, 2);
	CHECK_EQ(st.successes, 32);
	CHECK_EQ(st.wasted, 0);
	ustack_stackmap__free(m);

	/* arena exhaustion: 20 words; a stack takes its words + 3 */
	m = new_map(16, 0, 20);
	CHECK(m);
	make_stack(w, 4, 1);
	CHECK_EQ(ustack_stackmap__insert(m, w, 4, &id), 1);
	make_stack(w, 4, 2);
	CHECK_EQ(ustack_stackmap__insert(m, w, 4, &id), 1);
	make_stack(w, 4, 3);
	CHECK_EQ(ustack_stackmap__insert(m, w, 4, &id), -ENOSPC);
	CHECK_EQ(ustack_stackmap__insert(m, w, 2, &id), 1);  /* 2 + 3 words still fit */
	CHECK_EQ(id, 2);
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.entries, 3);
	CHECK_EQ(st.drops, 1);
	CHECK_EQ(st.words_used, 19);
	ustack_stackmap__free(m);
}

static void test_many_stacks_spread(void)
{
	/* 12000 stacks in 16384 entries / 32768 slots, structured like real
	 * stacks (same high bits everywhere): a weak hash would run into the
	 * probe bound and drop */
	struct ustack_stackmap *m = new_map(16384, 0, 0);
	uint64_t w[40];
	uint32_t id;
	struct ustack_stackmap_stats st;

	CHECK(m);
	for (uint64_t k = 0; k < 12000; k++) {
		make_stack(w, 40, k);
		w[39] = 0x401000 + (k % 7) * 16;
		CHECK_EQ(ustack_stackmap__insert(m, w, 40, &id), 1);
		CHECK_EQ(id, k);
	}
	/* same frames, pairs swapped: different stacks, must not merge */
	make_stack(w, 40, 5);
	w[39] = 0x401000 + 5 * 16;
	{
		uint64_t t0 = w[2], t1 = w[3];

		w[2] = w[4]; w[3] = w[5]; w[4] = t0; w[5] = t1;
	}
	CHECK_EQ(ustack_stackmap__insert(m, w, 40, &id), 1);
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.drops, 0);
	CHECK_EQ(st.entries, 12001);
	ustack_stackmap__free(m);
}

/* How far the stored stacks sit from their hash's home slot (linear
 * probing): a hash that spreads badly piles stacks into runs long before
 * the probe bound makes it drop them. */
static void displacement(const struct ustack_stackmap *m, double *mean, uint32_t *max)
{
	uint64_t sum = 0, n = 0;

	*max = 0;
	for (uint32_t i = 0; i <= m->table_mask; i++) {
		uint64_t w = m->table[i];
		const struct smap_rec *r;
		uint32_t d;

		if (!w)
			continue;
		r = smap_rec_at(m, (uint32_t)w - 1);
		d = (i - (uint32_t)r->hash) & m->table_mask;
		sum += d;
		n++;
		if (d > *max)
			*max = d;
	}
	*mean = n ? (double)sum / (double)n : 0;
}

/* /proc/cpuinfo, not cpuid: an oracle apart from the code under test */
static int cpuinfo_has(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192], pat[64];
	int found = 0;

	if (!f)
		return -1;
	snprintf(pat, sizeof(pat), " %s ", flag);
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			line[strcspn(line, "\n")] = ' ';
			found = strstr(line, pat) != NULL;
		}
	fclose(f);
	return found;
}

/* The 4800 stacks of 32 words that differ in one word (150 values at each
 * position), inserted in order: each must return @want with ids from *next. */
static void one_word_stacks(struct ustack_stackmap *m, int want, uint32_t *next)
{
	uint64_t w[32];
	uint32_t id;

	for (uint32_t pos = 0; pos < 32; pos++)
		for (uint64_t v = 1; v <= 150; v++) {
			for (uint32_t j = 0; j < 32; j++)
				w[j] = 0x401000 + j * 16;
			w[pos] = v;
			CHECK_EQ(ustack_stackmap__insert(m, w, 32, &id), want);
			CHECK_EQ(id, (*next)++);
		}
}

/* Both hashes (AES rounds where the CPU has AES-NI, the multiply hash
 * otherwise) on stack shapes that defeat weak hashes: one word varying at
 * each position in turn, small (offset, file id) pairs, stacks that are
 * prefixes of each other or zero-padded, and swapped frames. Every stack
 * must get its own id, and the table must stay close to the ideal spread
 * (linear probing at load 0.3: mean displacement about 0.2). */
static void test_hash_spread_both_ways(void)
{
#if defined(__x86_64__)
	int aes = cpuinfo_has("aes") == 1 && cpuinfo_has("sse4_1") == 1;
#else
	int aes = 0;
#endif
	for (int use_aes = 0; use_aes <= 1; use_aes++) {
		struct ustack_stackmap *m = new_map(16384, 64, 0);
		uint64_t w[64];
		uint32_t id, next = 0, max;
		double mean;
		struct ustack_stackmap_stats st;

		CHECK(m);
		if (!m)
			return;
		if (use_aes) {
			/* the map picked AES-NI by itself iff the CPU has it */
			CHECK_EQ(m->aes, aes);
			if (!aes) {
				ustack_stackmap__free(m);
				continue;
			}
		} else {
			m->aes = 0;  /* before any insert: fixed for the map's life */
		}
		/* 32 words, all equal but one, which takes 150 values at each
		 * of the 32 positions: 4800 stacks */
		one_word_stacks(m, 1, &next);
		/* (file offset, file id) pairs with small values: 3000 stacks */
		for (uint64_t k = 0; k < 3000; k++) {
			for (uint32_t j = 0; j < 24; j += 2) {
				w[j] = 0x1000 + ((k >> (j / 2)) & 7) * 0x40 + j;
				w[j + 1] = 1 + (j / 2) % 3;
			}
			w[0] = 0x2000 + k;
			CHECK_EQ(ustack_stackmap__insert(m, w, 24, &id), 1);
			CHECK_EQ(id, next++);
		}
		/* prefixes of one stack, and the stack padded with zero words:
		 * 63 + 20 stacks */
		for (uint32_t j = 0; j < 64; j++)
			w[j] = j < 44 ? 0x7f0000001000ull + j * 0x10 : 0;
		for (uint32_t nr = 1; nr <= 63; nr++) {
			CHECK_EQ(ustack_stackmap__insert(m, w, nr, &id), 1);
			CHECK_EQ(id, next++);
		}
		CHECK_EQ(ustack_stackmap__insert(m, w, 64, &id), 1);
		CHECK_EQ(id, next++);
		/* swapped neighbours in a 40-word stack: each a new stack */
		for (uint32_t j = 0; j + 2 < 40; j += 2) {
			for (uint32_t i = 0; i < 40; i++)
				w[i] = 0x55550000 + i;
			w[j] = 0x55550000 + j + 2;
			w[j + 2] = 0x55550000 + j;
			CHECK_EQ(ustack_stackmap__insert(m, w, 40, &id), 1);
			CHECK_EQ(id, next++);
		}
		/* a second pass finds every stack under its id */
		next = 0;
		one_word_stacks(m, 0, &next);
		ustack_stackmap__stats(m, &st, sizeof(st));
		CHECK_EQ(st.drops, 0);
		CHECK_EQ(st.entries, 4800 + 3000 + 64 + 19);
		CHECK_EQ(st.successes, 4800 * 2 + 3000 + 64 + 19);
		displacement(m, &mean, &max);
		printf("  %s hash: mean displacement %.3f, max %u\n",
		       use_aes ? "AES" : "multiply", mean, max);
		CHECK(mean < 0.5);
		CHECK(max < 24);
		ustack_stackmap__free(m);
	}
}

static void test_stop_reset_rule(void)
{
	struct ustack_stackmap *m = new_map(16, 0, 0);
	uint64_t a[2] = { 10, 11 }, b[2] = { 20, 21 };
	uint32_t id;
	struct ustack_stackmap_stats st;

	CHECK(m);
	CHECK_EQ(ustack_stackmap__insert(m, a, 2, &id), 1);
	CHECK_EQ(ustack_stackmap__insert(m, b, 2, &id), 1);
	CHECK_EQ(id, 1);
	CHECK_EQ(ustack_stackmap__reset(m), -EBUSY);  /* active */
	CHECK_EQ(ustack_stackmap__lookup(m, 1, NULL, NULL, NULL), 0);
	CHECK_EQ(ustack_stackmap__stop(m), 0);
	CHECK_EQ(ustack_stackmap__stop(m), 0);  /* idempotent */
	CHECK_EQ(ustack_stackmap__insert(m, a, 2, &id), -EAGAIN);
	CHECK_EQ(ustack_stackmap__lookup(m, 1, NULL, NULL, NULL), 0);  /* still readable */
	CHECK_EQ(ustack_stackmap__reset(m), 0);
	CHECK_EQ(ustack_stackmap__lookup(m, 0, NULL, NULL, NULL), -ENOENT);
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.entries, 0);
	CHECK_EQ(st.successes, 0);
	CHECK_EQ(st.words_used, 0);
	CHECK_EQ(ustack_stackmap__insert(m, b, 2, &id), -EAGAIN);  /* still stopped */
	CHECK_EQ(ustack_stackmap__start(m), 0);
	CHECK_EQ(ustack_stackmap__start(m), 0);
	CHECK_EQ(ustack_stackmap__insert(m, b, 2, &id), 1);
	CHECK_EQ(id, 0);  /* ids restart */
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.successes, 1);
	ustack_stackmap__free(m);
}

static char *text_of(struct ustack_stackmap *m, int *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*n = ustack_stackmap__write_text(m, f);
	fclose(f);
	return buf;
}

static void test_text_export(void)
{
	struct ustack_stackmap *m = new_map(16, 0, 0);
	uint64_t a[2] = { 0xffffffff81000010ull, 0x401234 }, b[1] = { 0x10 };
	uint32_t id;
	int n;
	char *s, *buf = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(m);
	ustack_stackmap__insert(m, a, 2, &id);
	ustack_stackmap__insert(m, b, 1, &id);
	ustack_stackmap__insert(m, a, 2, &id);
	s = text_of(m, &n);
	CHECK_EQ(n, 2);
	CHECK_STR(s, "stack_id 0 [ref 2, depth 2]\n"
		     "  [0] 0xffffffff81000010\n"
		     "  [1] 0x401234\n"
		     "\n"
		     "stack_id 1 [ref 1, depth 1]\n"
		     "  [0] 0x10\n"
		     "\n");
	free(s);
	ustack_stackmap__insert(m, b, 1, &id);
	uint64_t c[1] = { 7 };
	CHECK_EQ(ustack_stackmap__insert(m, c, 1, &id), 1);
	CHECK_EQ(ustack_stackmap__insert(m, c, 1, &id), 0);
	f = open_memstream(&buf, &len);
	CHECK_EQ(ustack_stackmap__write_stats(m, f), 0);
	fclose(f);
	CHECK_STR(buf, "entries: 3 / 16\n"
		       "table_size: 32\n"
		       "successes: 6\n"
		       "drops: 0\n"
		       "success_rate: 100%\n"
		       "truncated: 0\n"
		       "wasted: 0\n"
		       "words: 13 / 512\n");
	free(buf);
	ustack_stackmap__free(m);
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void test_bin_export_layout(void)
{
	struct ustack_stackmap *m = new_map(16, 0, 0);
	uint64_t a[2] = { 0x1111, 0x2222 }, b[1] = { 0x3333 };
	uint8_t want[16 + 16 + 16 + 16 + 8];
	void *buf;
	size_t size;
	uint32_t id;

	CHECK(m);
	ustack_stackmap__insert(m, a, 2, &id);
	ustack_stackmap__insert(m, a, 2, &id);
	ustack_stackmap__insert(m, a, 2, &id);
	ustack_stackmap__insert(m, b, 1, &id);
	/* header: magic, version, nr_stacks, reserved; then per stack:
	 * stack_id, nr, ref_count, reserved, ips[nr] - all native endian */
	put32(want + 0, 0x464D5342);
	put32(want + 4, 2);
	put32(want + 8, 2);
	put32(want + 12, 0);
	put32(want + 16, 0); put32(want + 20, 2); put32(want + 24, 3); put32(want + 28, 0);
	put64(want + 32, 0x1111); put64(want + 40, 0x2222);
	put32(want + 48, 1); put32(want + 52, 1); put32(want + 56, 1); put32(want + 60, 0);
	put64(want + 64, 0x3333);
	CHECK_EQ(ustack_stackmap__export_bin(m, &buf, &size), 2);
	CHECK_EQ(size, sizeof(want));
	CHECK(!memcmp(buf, want, sizeof(want)));
	/* the magic reads "BSMF" in a little-endian file, as the kernel's */
	CHECK(!memcmp(buf, "BSMF", 4));
	free(buf);
	ustack_stackmap__free(m);

	/* empty map: header only */
	m = new_map(16, 0, 0);
	CHECK_EQ(ustack_stackmap__export_bin(m, &buf, &size), 0);
	CHECK_EQ(size, 16);
	CHECK_EQ(((uint32_t *)buf)[2], 0);
	free(buf);
	ustack_stackmap__free(m);
}

static void test_bin_roundtrip(void)
{
	struct ustack_stackmap *m = new_map(256, 16, 0);
	struct ustack_stackmap_bin *bin;
	struct ustack_stackmap_bin_entry e;
	uint64_t w[20];
	void *buf;
	size_t size;
	uint32_t id;
	char *path = NULL;
	FILE *f;

	CHECK(m);
	for (uint64_t k = 0; k < 200; k++) {
		make_stack(w, 1 + k % 20, k);
		CHECK(ustack_stackmap__insert(m, w, 1 + k % 20, &id) >= 0);
		if (k % 3 == 0)
			ustack_stackmap__insert(m, w, 1 + k % 20, &id);
	}
	CHECK_EQ(ustack_stackmap__export_bin(m, &buf, &size), 200);
	bin = ustack_stackmap_bin__open(buf, size, NULL);
	CHECK(bin);
	CHECK_EQ(ustack_stackmap_bin__nr_stacks(bin), 200);
	CHECK_EQ(ustack_stackmap_bin__swapped(bin), 0);
	for (size_t i = 0; i < 200; i++) {
		const uint64_t *ips;
		uint32_t nr;
		uint64_t ref;

		CHECK_EQ(ustack_stackmap_bin__entry(bin, i, &e), 0);
		CHECK_EQ(ustack_stackmap__lookup(m, e.stack_id, &ips, &nr, &ref), 0);
		CHECK_EQ(e.nr, nr);
		CHECK_EQ(e.ref_count, ref);
		CHECK(!memcmp(e.ips, ips, nr * 8));
		CHECK_EQ(nr, (i % 20 + 1 > 16 ? 16 : i % 20 + 1));
		CHECK_EQ(ref, i % 3 == 0 ? 2 : 1);
	}
	CHECK_EQ(ustack_stackmap_bin__entry(bin, 200, &e), -ENOENT);
	CHECK_EQ(ustack_stackmap_bin__find(bin, 123, &e), 0);
	CHECK_EQ(e.stack_id, 123);
	CHECK_EQ_U64(e.ips[0], 123);
	CHECK_EQ(ustack_stackmap_bin__find(bin, 200, &e), -ENOENT);
	ustack_stackmap_bin__free(bin);

	/* write_bin to a stream gives the same bytes */
	{
		char *sbuf = NULL;
		size_t slen = 0;

		f = open_memstream(&sbuf, &slen);
		CHECK_EQ(ustack_stackmap__write_bin(m, f), 200);
		fclose(f);
		CHECK_EQ(slen, size);
		CHECK(!memcmp(sbuf, buf, size));
		free(sbuf);
	}
	(void)path;

	/* the other byte order: swap every field by hand */
	{
		uint8_t *s = malloc(size);
		size_t off = 16;

		memcpy(s, buf, size);
		for (size_t i = 0; i < 16; i += 4)
			put32(s + i, __builtin_bswap32(*(uint32_t *)((uint8_t *)buf + i)));
		while (off < size) {
			uint32_t nr = *(uint32_t *)((uint8_t *)buf + off + 4);

			for (size_t i = 0; i < 16; i += 4)
				put32(s + off + i, __builtin_bswap32(*(uint32_t *)((uint8_t *)buf + off + i)));
			off += 16;
			for (uint32_t k = 0; k < nr; k++, off += 8)
				put64(s + off, __builtin_bswap64(*(uint64_t *)((uint8_t *)buf + off)));
		}
		bin = ustack_stackmap_bin__open(s, size, NULL);
		CHECK(bin);
		CHECK_EQ(ustack_stackmap_bin__swapped(bin), 1);
		CHECK_EQ(ustack_stackmap_bin__find(bin, 77, &e), 0);
		CHECK_EQ_U64(e.ips[0], 77);
		CHECK_EQ(e.nr, 77 % 20 + 1 > 16 ? 16 : 77 % 20 + 1);
		CHECK_EQ_U64(e.ips[1], 0x7f0000000000ull + 77 * 0x1000 + 8);
		ustack_stackmap_bin__free(bin);
		free(s);
	}
	free(buf);
	ustack_stackmap__free(m);
}

/* Feeds a hand-made corrupt buffer and checks the reason and its offset. */
static int bad_bin(const uint8_t *data, size_t size, const char *want)
{
	char err[256] = "";
	struct ustack_stackmap_bin_opts o = { .sz = sizeof(o), .errbuf = err,
					      .errbuf_sz = sizeof(err) };
	struct ustack_stackmap_bin *b;

	errno = 0;
	b = ustack_stackmap_bin__open(data, size, &o);
	if (b) {
		ustack_stackmap_bin__free(b);
		printf("  accepted, wanted \"%s\"\n", want);
		return 0;
	}
	if (errno != EBADMSG || !strstr(err, want)) {
		printf("  errno %d, message \"%s\", wanted \"%s\"\n", errno, err, want);
		return 0;
	}
	return 1;
}

static int quiet_print(enum ustack_print_level l, const char *fmt, va_list ap)
{
	return 0;
}

static void test_bin_reader_rejects(void)
{
	uint8_t b[64];
	ustack_print_fn_t old = ustack_set_print(quiet_print);

	memset(b, 0, sizeof(b));
	put32(b, 0x464D5342);
	put32(b + 4, 2);
	CHECK(bad_bin(b, 15, "offset 0: file of 15 bytes is shorter"));
	CHECK(bad_bin((const uint8_t *)"FSMB\2\0\0\0\0\0\0\0\0\0\0\0", 16, "offset 0: bad magic"));
	put32(b + 4, 1);
	CHECK(bad_bin(b, 16, "offset 4: unsupported version 1"));
	put32(b + 4, 2);
	put32(b + 8, 4);  /* 4 stacks cannot fit in 48 bytes (4 x 16 = 64) */
	CHECK(bad_bin(b, 64, "offset 8: nr_stacks 4 cannot fit"));
	put32(b + 8, 1);
	put32(b + 16, 9);
	put32(b + 20, 3);  /* 3 words = 24 bytes, 16 left in a 48-byte file */
	CHECK(bad_bin(b, 48, "offset 20: entry 0: nr 3 needs 24 bytes, 16 left"));
	put32(b + 20, 0xffffffff);
	CHECK(bad_bin(b, 48, "offset 20: entry 0: nr 4294967295 needs"));
	put32(b + 20, 2);
	CHECK(bad_bin(b, 56, "offset 48: 8 bytes after the last of 1 stacks"));
	put32(b + 8, 2);
	CHECK(bad_bin(b, 56, "offset 48: entry 1: header needs 16 bytes, 8 left"));
	put32(b + 48, 9);
	put32(b + 52, 0);
	CHECK(bad_bin(b, 64, "offset 48: entry 1: stack_id 9 already used by entry 0"));
	/* the same file with a distinct id is fine, and so is an empty one */
	put32(b + 48, 10);
	{
		struct ustack_stackmap_bin *bin = ustack_stackmap_bin__open(b, 64, NULL);
		struct ustack_stackmap_bin_entry e;

		CHECK(bin);
		CHECK_EQ(ustack_stackmap_bin__nr_stacks(bin), 2);
		CHECK_EQ(ustack_stackmap_bin__find(bin, 10, &e), 0);
		CHECK_EQ(e.nr, 0);
		CHECK_EQ(e.offset, 48);
		ustack_stackmap_bin__free(bin);
		put32(b + 8, 0);
		bin = ustack_stackmap_bin__open(b, 16, NULL);
		CHECK(bin);
		CHECK_EQ(ustack_stackmap_bin__nr_stacks(bin), 0);
		ustack_stackmap_bin__free(bin);
	}
	ustack_set_print(old);
}

/* Inserts from a signal handler that interrupts inserts on the same
 * thread: counters must still add up (the per-thread counters rely on
 * single-instruction updates). */
static volatile sig_atomic_t sig_inserts, sig_fail;
static struct ustack_stackmap *sig_map;

static void on_prof(int sig)
{
	uint64_t w[6];
	uint32_t id;

	make_stack(w, 6, 1000 + sig_inserts % 50);
	if (ustack_stackmap__insert(sig_map, w, 6, &id) < 0)
		sig_fail = 1;
	sig_inserts++;
}

static void test_signal_nested_inserts(void)
{
	struct sigaction sa = { .sa_handler = on_prof };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct ustack_stackmap_stats st;
	uint64_t w[6], main_inserts = 0, refs = 0;
	uint32_t id, nr = 0;

	sig_map = new_map(1024, 0, 0);
	CHECK(sig_map);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	struct timespec t0, t1, c0, c1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	t1 = t0;
	c1 = c0;
	/* the timer ticks with the scheduler clock (every few ms) and counts
	 * this process's CPU time: bound by CPU time (10 s; 300 signals take
	 * 1.2 s at HZ=250, 3 s at HZ=100), not by a count of signals, nor by
	 * wall time, which a loaded machine stretches; the wall bound only
	 * stops a process that gets no CPU at all */
	while (sig_inserts < 300 && c1.tv_sec - c0.tv_sec < 10 && t1.tv_sec - t0.tv_sec < 120) {
		make_stack(w, 6, main_inserts % 100);
		CHECK(ustack_stackmap__insert(sig_map, w, 6, &id) >= 0);
		main_inserts++;
		if (!(main_inserts & 1023)) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	signal(SIGPROF, SIG_DFL);
	if (sig_inserts < 300)
		SKIP("only %d profiling signals arrived", (int)sig_inserts);
	CHECK(!sig_fail);
	ustack_stackmap__stats(sig_map, &st, sizeof(st));
	CHECK_EQ(st.successes, main_inserts + sig_inserts);
	CHECK_EQ(st.entries, 150);
	for (uint32_t i = 0; i < 150; i++) {
		uint64_t ref;

		CHECK_EQ(ustack_stackmap__lookup(sig_map, i, NULL, &nr, &ref), 0);
		refs += ref;
	}
	CHECK_EQ(refs, st.successes);
	ustack_stackmap__free(sig_map);
}

int main(void)
{
	RUN(test_ids_dense_and_stable);
	RUN(test_bad_args);
	RUN(test_depth_limit);
	RUN(test_pool_exhaustion);
	RUN(test_many_stacks_spread);
	RUN(test_hash_spread_both_ways);
	RUN(test_stop_reset_rule);
	RUN(test_text_export);
	RUN(test_bin_export_layout);
	RUN(test_bin_roundtrip);
	RUN(test_bin_reader_rejects);
	RUN(test_signal_nested_inserts);
	TEST_EXIT();
}
