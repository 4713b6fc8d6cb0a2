// SPDX-License-Identifier: MIT
/*
 * ustack_u64map (src/common/hashmap.c): values after growth, key 0 and
 * UINT64_MAX, forced collisions with deletion across the table's wrap,
 * reserve (no reallocation), iteration, clear, and a long random sequence
 * of operations checked against a plain array.
 */
#include <errno.h>

#include "common/hashmap.h" /* ustack_u64map_home(): to build colliding keys */
#include "test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void test_empty(void)
{
	struct ustack_u64map *m = ustack_u64map__new();
	uint64_t v = 7;
	size_t it = 0;

	CHECK(m);
	CHECK_EQ(ustack_u64map__count(m), 0);
	CHECK_EQ(ustack_u64map__get(m, 0, &v), 0);
	CHECK_EQ(ustack_u64map__get(m, 42, &v), 0);
	CHECK_EQ(v, 7);
	CHECK_EQ(ustack_u64map__delete(m, 42, NULL), 0);
	CHECK_EQ(ustack_u64map__next(m, &it, NULL, NULL), 0);
	ustack_u64map__clear(m);
	ustack_u64map__free(m);
	ustack_u64map__free(NULL);
	CHECK_EQ(ustack_u64map__put(NULL, 1, 1), -EINVAL);
	CHECK_EQ(ustack_u64map__get(NULL, 1, NULL), 0);
}

static void test_put_get_overwrite(void)
{
	struct ustack_u64map *m = ustack_u64map__new();
	uint64_t v;

	CHECK(m);
	CHECK_EQ(ustack_u64map__put(m, 0, 100), 0);
	CHECK_EQ(ustack_u64map__put(m, UINT64_MAX, 200), 0);
	CHECK_EQ(ustack_u64map__put(m, 1, 300), 0);
	CHECK_EQ(ustack_u64map__count(m), 3);
	CHECK(ustack_u64map__get(m, 0, &v));
	CHECK_EQ_U64(v, 100);
	CHECK(ustack_u64map__get(m, UINT64_MAX, &v));
	CHECK_EQ_U64(v, 200);
	CHECK(ustack_u64map__get(m, 1, &v));
	CHECK_EQ_U64(v, 300);
	CHECK(!ustack_u64map__get(m, 2, &v));
	/* overwrite keeps the count */
	CHECK_EQ(ustack_u64map__put(m, 0, UINT64_MAX), 0);
	CHECK_EQ(ustack_u64map__put(m, 1, 0), 0);
	CHECK_EQ(ustack_u64map__count(m), 3);
	CHECK(ustack_u64map__get(m, 0, &v));
	CHECK_EQ_U64(v, UINT64_MAX);
	CHECK(ustack_u64map__get(m, 1, &v));
	CHECK_EQ_U64(v, 0);
	/* delete hands back the value */
	CHECK_EQ(ustack_u64map__delete(m, 0, &v), 1);
	CHECK_EQ_U64(v, UINT64_MAX);
	CHECK_EQ(ustack_u64map__delete(m, 0, &v), 0);
	CHECK(!ustack_u64map__get(m, 0, NULL));
	CHECK_EQ(ustack_u64map__delete(m, UINT64_MAX, &v), 1);
	CHECK_EQ_U64(v, 200);
	CHECK_EQ(ustack_u64map__count(m), 1);
	/* pointers as values */
	CHECK_EQ(ustack_u64map__put(m, 4242, (uintptr_t)&v), 0);
	CHECK(ustack_u64map__get(m, 4242, &v));
	CHECK((uint64_t *)(uintptr_t)v == &v);
	ustack_u64map__free(m);
}

static void test_slot_counters(void)
{
	struct ustack_u64map *m = ustack_u64map__new();
	uint64_t *p, v;
	int isnew = -1;

	CHECK(m);
	for (uint64_t k = 0; k < 10; k++)
		for (uint64_t r = 0; r <= k; r++) {
			p = ustack_u64map__slot(m, k * 1000, &isnew);
			CHECK(p);
			CHECK_EQ(isnew, r == 0);
			if (isnew)
				CHECK_EQ_U64(*p, 0);
			(*p)++;
		}
	CHECK_EQ(ustack_u64map__count(m), 10);
	for (uint64_t k = 0; k < 10; k++) {
		CHECK(ustack_u64map__get(m, k * 1000, &v));
		CHECK_EQ_U64(v, k + 1);
	}
	ustack_u64map__free(m);
}

/* 200000 keys through many doublings; every value read back. */
static void test_growth(void)
{
	struct ustack_u64map *m = ustack_u64map__new();
	const uint64_t n = 200000;
	uint64_t v;

	CHECK(m);
	for (uint64_t i = 0; i < n; i++) {
		CHECK_EQ(ustack_u64map__put(m, i * 0x10000, ~i), 0);
		CHECK_EQ(ustack_u64map__count(m), i + 1);
	}
	for (uint64_t i = 0; i < n; i++) {
		CHECK(ustack_u64map__get(m, i * 0x10000, &v));
		CHECK_EQ_U64(v, ~i);
		CHECK(!ustack_u64map__get(m, i * 0x10000 + 1, NULL));
	}
	/* delete every other key: the rest still found after backward shifts */
	for (uint64_t i = 0; i < n; i += 2)
		CHECK_EQ(ustack_u64map__delete(m, i * 0x10000, NULL), 1);
	CHECK_EQ(ustack_u64map__count(m), n / 2);
	for (uint64_t i = 0; i < n; i++) {
		int found = ustack_u64map__get(m, i * 0x10000, &v);

		CHECK_EQ(found, (int)(i & 1));
		if (found)
			CHECK_EQ_U64(v, ~i);
	}
	ustack_u64map__free(m);
}

/*
 * Keys that share one home slot, and keys whose homes are the last slots
 * of the table (their runs wrap to slot 0), in a map that cannot grow
 * during the test (reserved). Deleting from the middle of a run must keep
 * every other key reachable.
 */
static void test_collisions(void)
{
	enum { CAP = 128, NSAME = 12, NWRAP = 12 };
	uint64_t same[NSAME], wrap[NWRAP], v;
	size_t ns = 0, nw = 0;
	struct ustack_u64map *m = ustack_u64map__new();

	CHECK(m);
	CHECK_EQ(ustack_u64map__reserve(m, CAP / 2), 0);
	for (uint64_t k = 1; ns < NSAME || nw < NWRAP; k++) {
		size_t h = ustack_u64map_home(k, CAP - 1);

		if (h == 5 && ns < NSAME)
			same[ns++] = k;
		else if (h >= CAP - 3 && nw < NWRAP)
			wrap[nw++] = k;
	}
	for (size_t i = 0; i < NSAME; i++)
		CHECK_EQ(ustack_u64map__put(m, same[i], 1000 + i), 0);
	for (size_t i = 0; i < NWRAP; i++)
		CHECK_EQ(ustack_u64map__put(m, wrap[i], 2000 + i), 0);
	CHECK_EQ(ustack_u64map__count(m), NSAME + NWRAP);
	/* remove from the middle and the front of both runs */
	CHECK_EQ(ustack_u64map__delete(m, same[5], NULL), 1);
	CHECK_EQ(ustack_u64map__delete(m, same[0], NULL), 1);
	CHECK_EQ(ustack_u64map__delete(m, wrap[2], NULL), 1);
	CHECK_EQ(ustack_u64map__delete(m, wrap[0], NULL), 1);
	for (size_t i = 0; i < NSAME; i++) {
		int gone = i == 5 || i == 0;

		CHECK_EQ(ustack_u64map__get(m, same[i], &v), !gone);
		if (!gone)
			CHECK_EQ_U64(v, 1000 + i);
	}
	for (size_t i = 0; i < NWRAP; i++) {
		int gone = i == 2 || i == 0;

		CHECK_EQ(ustack_u64map__get(m, wrap[i], &v), !gone);
		if (!gone)
			CHECK_EQ_U64(v, 2000 + i);
	}
	/* re-insert: found once, no duplicate */
	CHECK_EQ(ustack_u64map__put(m, same[5], 77), 0);
	CHECK_EQ(ustack_u64map__count(m), NSAME + NWRAP - 3);
	CHECK(ustack_u64map__get(m, same[5], &v));
	CHECK_EQ_U64(v, 77);
	ustack_u64map__free(m);
}

/* After reserve(n), n insertions do not move the table. */
static void test_reserve(void)
{
	struct ustack_u64map *m = ustack_u64map__new();
	uint64_t *first, *again;

	CHECK(m);
	CHECK_EQ(ustack_u64map__reserve(m, 1000), 0);
	first = ustack_u64map__slot(m, 1, NULL);
	CHECK(first);
	*first = 11;
	for (uint64_t k = 2; k <= 1000; k++)
		CHECK_EQ(ustack_u64map__put(m, k, k), 0);
	again = ustack_u64map__slot(m, 1, NULL);
	CHECK(again == first);
	CHECK_EQ_U64(*again, 11);
	/* the 1001st key may grow it; all values survive */
	CHECK_EQ(ustack_u64map__put(m, 5000, 5), 0);
	for (uint64_t k = 2; k <= 1000; k++) {
		uint64_t v;

		CHECK(ustack_u64map__get(m, k, &v));
		CHECK_EQ_U64(v, k);
	}
	ustack_u64map__free(m);
}

static void test_iterate_and_clear(void)
{
	struct ustack_u64map *m = ustack_u64map__new();
	uint64_t k, v, ksum = 0, vsum = 0, want_k = 0, want_v = 0;
	size_t it = 0, seen = 0;
	int zero_seen = 0;

	CHECK(m);
	for (uint64_t i = 0; i < 1000; i++) {
		CHECK_EQ(ustack_u64map__put(m, i * 7, i * 3 + 1), 0);
		want_k += i * 7;
		want_v += i * 3 + 1;
	}
	while (ustack_u64map__next(m, &it, &k, &v)) {
		CHECK_EQ_U64(v, k / 7 * 3 + 1);
		zero_seen += k == 0;
		ksum += k;
		vsum += v;
		seen++;
	}
	CHECK_EQ(seen, 1000);
	CHECK_EQ(zero_seen, 1);
	CHECK_EQ_U64(ksum, want_k);
	CHECK_EQ_U64(vsum, want_v);
	CHECK_EQ(ustack_u64map__next(m, &it, &k, &v), 0); /* stays done */

	ustack_u64map__clear(m);
	CHECK_EQ(ustack_u64map__count(m), 0);
	CHECK(!ustack_u64map__get(m, 0, NULL));
	CHECK(!ustack_u64map__get(m, 7, NULL));
	it = 0;
	CHECK_EQ(ustack_u64map__next(m, &it, NULL, NULL), 0);
	CHECK_EQ(ustack_u64map__put(m, 7, 8), 0);
	CHECK(ustack_u64map__get(m, 7, &v));
	CHECK_EQ_U64(v, 8);
	CHECK_EQ(ustack_u64map__count(m), 1);
	/* a large table cleared with few keys in it shrinks: still correct */
	for (uint64_t i = 0; i < 100000; i++)
		CHECK_EQ(ustack_u64map__put(m, i, i), 0);
	ustack_u64map__clear(m);
	for (int round = 0; round < 3; round++) {
		for (uint64_t i = 0; i < 5; i++)
			CHECK_EQ(ustack_u64map__put(m, i * 1000003, i + round), 0);
		CHECK_EQ(ustack_u64map__count(m), 5);
		for (uint64_t i = 0; i < 5; i++) {
			CHECK(ustack_u64map__get(m, i * 1000003, &v));
			CHECK_EQ_U64(v, i + round);
		}
		CHECK(!ustack_u64map__get(m, 99999, NULL));
		ustack_u64map__clear(m);
		CHECK_EQ(ustack_u64map__count(m), 0);
	}
	ustack_u64map__free(m);
}

/* Random put/delete/slot/get over a small key space, against an array. */
static void test_random_model(void)
{
	enum { NKEYS = 2048, OPS = 400000 };
	static uint64_t model[NKEYS];
	static uint8_t present[NKEYS];
	struct ustack_u64map *m = ustack_u64map__new();
	size_t count = 0, it = 0;
	uint64_t k, v;

	CHECK(m);
	memset(present, 0, sizeof(present));
	for (int op = 0; op < OPS; op++) {
		uint64_t r = rnd(), key = r % NKEYS, val = rnd();
		int found;

		switch ((r >> 32) % 4) {
		case 0:
			CHECK_EQ(ustack_u64map__put(m, key, val), 0);
			count += !present[key];
			present[key] = 1;
			model[key] = val;
			break;
		case 1:
			found = ustack_u64map__delete(m, key, &v);
			CHECK_EQ(found, present[key]);
			if (found)
				CHECK_EQ_U64(v, model[key]);
			count -= present[key];
			present[key] = 0;
			break;
		case 2: {
			int isnew;
			uint64_t *p = ustack_u64map__slot(m, key, &isnew);

			CHECK(p);
			CHECK_EQ(isnew, !present[key]);
			if (isnew)
				model[key] = 0;
			CHECK_EQ_U64(*p, model[key]);
			*p = ++model[key];
			count += !present[key];
			present[key] = 1;
			break;
		}
		default:
			found = ustack_u64map__get(m, key, &v);
			CHECK_EQ(found, present[key]);
			if (found)
				CHECK_EQ_U64(v, model[key]);
		}
		CHECK_EQ(ustack_u64map__count(m), count);
	}
	for (k = 0; k < NKEYS; k++) {
		CHECK_EQ(ustack_u64map__get(m, k, &v), present[k]);
		if (present[k])
			CHECK_EQ_U64(v, model[k]);
	}
	while (ustack_u64map__next(m, &it, &k, &v)) {
		CHECK(k < NKEYS && present[k]);
		CHECK_EQ_U64(v, model[k]);
		present[k] = 0; /* each key once */
		count--;
	}
	CHECK_EQ(count, 0);
	ustack_u64map__free(m);
}

int main(void)
{
	RUN(test_empty);
	RUN(test_put_get_overwrite);
	RUN(test_slot_counters);
	RUN(test_growth);
	RUN(test_collisions);
	RUN(test_reserve);
	RUN(test_iterate_and_clear);
	RUN(test_random_model);
	TEST_EXIT();
}
