// SPDX-License-Identifier: MIT
/* Concurrent inserts into one stackmap. Also built with ThreadSanitizer by
 * tests/integration/stackmap_tsan.sh (so keep it self-contained: only the
 * stackmap and common sources are linked there). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ustack/stackmap.h>

#include "test.h"

#define NTHREADS 4

/* stack k: its words are a function of k, so any stored copy can be checked
 * against k alone (k itself is the first word) */
static uint32_t stack_len(uint64_t k)
{
	return 2 + (uint32_t)(k % 23);
}

static void make_stack(uint64_t *w, uint64_t k)
{
	uint32_t nr = stack_len(k);

	w[0] = k;
	for (uint32_t j = 1; j < nr; j++)
		w[j] = 0x7f12345000ull + (k * 2654435761u + j * 40503u) % 0x100000;
}

static int stack_ok(const uint64_t *ips, uint32_t nr)
{
	uint64_t w[32];

	if (nr != stack_len(ips[0]))
		return 0;
	make_stack(w, ips[0]);
	return !memcmp(w, ips, nr * sizeof(uint64_t));
}

struct worker {
	pthread_t th;
	struct ustack_stackmap *map;
	pthread_barrier_t *bar;
	int t;
	uint64_t first, count; /* stacks first .. first+count-1 */
	int rounds;
	uint32_t *ids;         /* count: id seen for each stack */
	uint64_t calls, ok, news, drops, bad;
	volatile int *stop_flag;
};

static void *insert_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t st[32];

	pthread_barrier_wait(w->bar);
	for (int r = 0; r < w->rounds; r++) {
		for (uint64_t i = 0; i < w->count; i++) {
			/* round 0 in the same order everywhere: every thread
			 * races for the same new stacks at the same time */
			uint64_t k = w->first + (r ? (i * 7 + (uint64_t)w->t * 13) % w->count : i);
			uint32_t id;
			int ret;

			make_stack(st, k);
			ret = ustack_stackmap__insert(w->map, st, stack_len(k), &id);
			w->calls++;
			if (ret == -ENOSPC) {
				w->drops++;
				continue;
			}
			if (ret < 0) {
				w->bad++;
				continue;
			}
			w->ok++;
			w->news += ret == 1;
			if (w->ids[k - w->first] == USTACK_STACKMAP_NO_ID)
				w->ids[k - w->first] = id;
			else if (w->ids[k - w->first] != id)
				w->bad++;  /* a second id for one stack */
		}
	}
	return NULL;
}

static void run_workers(struct worker *w, int n)
{
	for (int i = 0; i < n; i++)
		pthread_create(&w[i].th, NULL, insert_worker, &w[i]);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
}

static uint64_t sum_refs(struct ustack_stackmap *m, uint64_t *entries, int *bad)
{
	struct ustack_stackmap_stats st;
	uint64_t total = 0, found = 0;

	ustack_stackmap__stats(m, &st, sizeof(st));
	for (uint32_t id = 0; id < st.capacity; id++) {
		const uint64_t *ips;
		uint32_t nr;
		uint64_t ref;

		if (ustack_stackmap__lookup(m, id, &ips, &nr, &ref))
			continue;
		if (!stack_ok(ips, nr))
			(*bad)++;
		total += ref;
		found++;
	}
	*entries = found;
	return total;
}

static void test_concurrent_same_stacks(void)
{
	enum { NSTACK = 1500, ROUNDS = 6 };
	struct ustack_stackmap_opts o = { .sz = sizeof(o), .capacity = 4096 };
	struct ustack_stackmap *m = ustack_stackmap__new(&o);
	struct worker w[NTHREADS];
	pthread_barrier_t bar;
	struct ustack_stackmap_stats st;
	uint64_t calls = 0, news = 0, entries, refs;
	int bad = 0;

	CHECK(m);
	pthread_barrier_init(&bar, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .map = m, .bar = &bar, .t = i, .first = 0,
					.count = NSTACK, .rounds = ROUNDS };
		w[i].ids = malloc(NSTACK * sizeof(uint32_t));
		memset(w[i].ids, 0xff, NSTACK * sizeof(uint32_t));
	}
	run_workers(w, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		CHECK_EQ(w[i].bad, 0);
		CHECK_EQ(w[i].drops, 0);
		calls += w[i].calls;
		news += w[i].news;
	}
	/* every thread saw the same id for each stack, and ids are distinct */
	{
		uint8_t *seen = calloc(o.capacity, 1);

		for (int k = 0; k < NSTACK; k++) {
			const uint64_t *ips;
			uint32_t nr;

			for (int i = 1; i < NTHREADS; i++)
				CHECK_EQ(w[i].ids[k], w[0].ids[k]);
			CHECK(w[0].ids[k] < o.capacity);
			CHECK(!seen[w[0].ids[k]]);
			seen[w[0].ids[k]] = 1;
			CHECK_EQ(ustack_stackmap__lookup(m, w[0].ids[k], &ips, &nr, NULL), 0);
			CHECK_EQ_U64(ips[0], k);
			CHECK(stack_ok(ips, nr));
		}
		free(seen);
	}
	/* "new" was said exactly once per stack: no duplicates under races */
	CHECK_EQ(news, NSTACK);
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.entries, NSTACK);
	CHECK_EQ(st.successes, calls);
	CHECK_EQ(st.drops, 0);
	refs = sum_refs(m, &entries, &bad);
	CHECK_EQ(bad, 0);
	CHECK_EQ(entries, NSTACK);
	CHECK_EQ(refs, calls);
	printf("  %llu inserts, %llu pool entries lost to races\n",
	       (unsigned long long)calls, (unsigned long long)st.wasted);
	for (int i = 0; i < NTHREADS; i++)
		free(w[i].ids);
	pthread_barrier_destroy(&bar);
	ustack_stackmap__free(m);
}

static void test_concurrent_exhaustion(void)
{
	/* 256 entries, 4 x 400 stacks overlapping by half: 1000 distinct */
	enum { PER = 400, ROUNDS = 4 };
	struct ustack_stackmap_opts o = { .sz = sizeof(o), .capacity = 256 };
	struct ustack_stackmap *m = ustack_stackmap__new(&o);
	struct worker w[NTHREADS];
	pthread_barrier_t bar;
	struct ustack_stackmap_stats st;
	uint64_t calls = 0, ok = 0, drops = 0, news = 0, entries, refs;
	int bad = 0;

	CHECK(m);
	pthread_barrier_init(&bar, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .map = m, .bar = &bar, .t = i,
					.first = (uint64_t)i * PER / 2, .count = PER,
					.rounds = ROUNDS };
		w[i].ids = malloc(PER * sizeof(uint32_t));
		memset(w[i].ids, 0xff, PER * sizeof(uint32_t));
	}
	run_workers(w, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		CHECK_EQ(w[i].bad, 0);
		calls += w[i].calls;
		ok += w[i].ok;
		drops += w[i].drops;
		news += w[i].news;
	}
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK(drops > 0);
	CHECK_EQ(ok + drops, calls);
	CHECK_EQ(st.successes, ok);
	CHECK_EQ(st.drops, drops);
	CHECK(st.entries <= 256);
	CHECK_EQ(st.entries, news);
	refs = sum_refs(m, &entries, &bad);
	CHECK_EQ(bad, 0);  /* every stored stack is intact */
	CHECK_EQ(entries, st.entries);
	CHECK_EQ(refs, ok);
	/* ids handed out name the stack they were handed out for */
	for (int i = 0; i < NTHREADS; i++)
		for (int k = 0; k < PER; k++) {
			const uint64_t *ips;

			if (w[i].ids[k] == USTACK_STACKMAP_NO_ID)
				continue;
			CHECK_EQ(ustack_stackmap__lookup(m, w[i].ids[k], &ips, NULL, NULL), 0);
			CHECK_EQ_U64(ips[0], w[i].first + k);
		}
	for (int i = 0; i < NTHREADS; i++)
		free(w[i].ids);
	pthread_barrier_destroy(&bar);
	ustack_stackmap__free(m);
}

struct loop_arg {
	struct ustack_stackmap *map;
	int t;
	int started; /* set (atomically) after the thread's first insert */
	uint64_t ok, other;
};

static void *loop_until_stopped(void *arg)
{
	struct loop_arg *a = arg;
	uint64_t st[32];

	for (uint64_t i = 0;; i++) {
		uint64_t k = (i * 31 + (uint64_t)a->t) % 3000;
		uint32_t id;
		int ret;

		make_stack(st, k);
		ret = ustack_stackmap__insert(a->map, st, stack_len(k), &id);
		if (ret == -EAGAIN)
			break;
		if (ret >= 0)
			a->ok++;
		else
			a->other++;
		if (i == 0)
			__atomic_store_n(&a->started, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Stop while inserts run: once stop returns nothing is in flight, so the
 * counters and the stored references agree exactly; reset then works. */
static void test_stop_drains_then_reset(void)
{
	struct ustack_stackmap_opts o = { .sz = sizeof(o), .capacity = 4096 };
	struct ustack_stackmap *m = ustack_stackmap__new(&o);
	struct loop_arg a[NTHREADS];
	pthread_t th[NTHREADS];
	struct ustack_stackmap_stats st;
	uint64_t entries, refs, ok = 0;
	int bad = 0;
	struct timespec ts = { 0, 1000 * 1000 };
	int all = 0;

	CHECK(m);
	for (int i = 0; i < NTHREADS; i++) {
		a[i] = (struct loop_arg){ .map = m, .t = i };
		pthread_create(&th[i], NULL, loop_until_stopped, &a[i]);
	}
	/* stop while every thread is inserting: wait until each has done an
	 * insert (a fixed delay may pass before a thread ever runs on a
	 * loaded machine); at most 60 s */
	for (int tries = 0; tries < 60000 && !all; tries++) {
		all = 1;
		for (int i = 0; i < NTHREADS; i++)
			all &= __atomic_load_n(&a[i].started, __ATOMIC_ACQUIRE);
		if (!all)
			nanosleep(&ts, NULL);
	}
	CHECK(all);
	CHECK_EQ(ustack_stackmap__reset(m), -EBUSY);  /* still active */
	CHECK_EQ(ustack_stackmap__stop(m), 0);
	/* threads may still be looping, but only to be refused */
	ustack_stackmap__stats(m, &st, sizeof(st));
	refs = sum_refs(m, &entries, &bad);
	CHECK_EQ(bad, 0);
	CHECK_EQ(refs, st.successes);
	CHECK_EQ(entries, st.entries);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(a[i].other, 0);
		ok += a[i].ok;
	}
	CHECK(ok > 0);
	CHECK_EQ(ok, st.successes);
	CHECK_EQ(ustack_stackmap__reset(m), 0);
	ustack_stackmap__stats(m, &st, sizeof(st));
	CHECK_EQ(st.entries, 0);
	CHECK_EQ(st.successes, 0);
	CHECK_EQ(ustack_stackmap__lookup(m, 0, NULL, NULL, NULL), -ENOENT);
	CHECK_EQ(ustack_stackmap__start(m), 0);
	{
		uint64_t s[32];
		uint32_t id;

		make_stack(s, 5);
		CHECK_EQ(ustack_stackmap__insert(m, s, stack_len(5), &id), 1);
		CHECK_EQ(id, 0);
	}
	ustack_stackmap__free(m);
}

struct exp_arg {
	struct ustack_stackmap *map;
	volatile int *done;
	int snapshots, bad, max_stacks;
};

static void *export_loop(void *arg)
{
	struct exp_arg *a = arg;

	/* at least one snapshot even when this thread is scheduled late (a
	 * loaded machine): the point is that every snapshot is valid */
	while (!__atomic_load_n(a->done, __ATOMIC_ACQUIRE) || a->snapshots == 0) {
		struct ustack_stackmap_bin *bin;
		void *buf;
		size_t size;
		int n = ustack_stackmap__export_bin(a->map, &buf, &size);

		if (n < 0) {
			a->bad++;
			break;
		}
		bin = ustack_stackmap_bin__open(buf, size, NULL);
		if (!bin || ustack_stackmap_bin__nr_stacks(bin) != (size_t)n)
			a->bad++;
		for (size_t i = 0; bin && i < ustack_stackmap_bin__nr_stacks(bin); i++) {
			struct ustack_stackmap_bin_entry e;

			if (ustack_stackmap_bin__entry(bin, i, &e) || !e.ref_count ||
			    !stack_ok(e.ips, e.nr))
				a->bad++;
		}
		ustack_stackmap_bin__free(bin);
		free(buf);
		if (n > a->max_stacks)
			a->max_stacks = n;
		a->snapshots++;
	}
	return NULL;
}

/* Snapshots taken while inserts run are valid files whose every stack is
 * intact (never a half-written one). */
static void test_export_during_inserts(void)
{
	struct ustack_stackmap_opts o = { .sz = sizeof(o), .capacity = 4096 };
	struct ustack_stackmap *m = ustack_stackmap__new(&o);
	struct worker w[2];
	pthread_barrier_t bar;
	pthread_t ex;
	volatile int done = 0;
	struct exp_arg ea = { .map = m, .done = &done };

	CHECK(m);
	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct worker){ .map = m, .bar = &bar, .t = i,
					.first = (uint64_t)i * 1000, .count = 1500, .rounds = 3 };
		w[i].ids = malloc(1500 * sizeof(uint32_t));
		memset(w[i].ids, 0xff, 1500 * sizeof(uint32_t));
	}
	pthread_create(&ex, NULL, export_loop, &ea);
	run_workers(w, 2);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_join(ex, NULL);
	CHECK_EQ(ea.bad, 0);
	CHECK(ea.snapshots > 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(w[i].bad, 0);
		free(w[i].ids);
	}
	{
		void *buf;
		size_t size;

		/* quiescent now: the export is complete */
		CHECK_EQ(ustack_stackmap__export_bin(m, &buf, &size), 2500);
		free(buf);
	}
	pthread_barrier_destroy(&bar);
	ustack_stackmap__free(m);
}

int main(void)
{
	RUN(test_concurrent_same_stacks);
	RUN(test_concurrent_exhaustion);
	RUN(test_stop_drains_then_reset);
	RUN(test_export_during_inserts);
	TEST_EXIT();
}
