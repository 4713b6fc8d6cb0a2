// SPDX-License-Identifier: MIT
/* src/common/grow.h: ustack_ring_grow() keeps a wrapped ring's order. */
#include <stdlib.h>

#include "common/grow.h"
#include "test.h"

static void test_ring_grow(void)
{
	size_t cap = 0, head = 0, len = 0;
	int *ring = NULL, next = 0, first = 0;

	/* push 1000, popping one every third push: the ring wraps and grows */
	for (int i = 0; i < 1000; i++) {
		CHECK_EQ(ustack_ring_grow((void **)&ring, &cap, &head, len, sizeof(*ring), 4), 0);
		CHECK(len < cap);
		ring[(head + len) % cap] = next++;
		len++;
		if (i % 3 == 2) {
			CHECK_EQ(ring[head], first);
			first++;
			head = (head + 1) % cap;
			len--;
		}
	}
	for (size_t i = 0; i < len; i++)
		CHECK_EQ(ring[(head + i) % cap], first + (int)i);
	CHECK_EQ(first + (int)len, next);
	/* room already there: nothing moves */
	{
		int *before = ring;
		size_t c = cap;

		if (len < cap) {
			CHECK_EQ(ustack_ring_grow((void **)&ring, &cap, &head, len, sizeof(*ring), 4), 0);
			CHECK(ring == before && cap == c);
		}
	}
	free(ring);
}

int main(void)
{
	RUN(test_ring_grow);
	return tests_failed_total_ ? 1 : 0;
}
