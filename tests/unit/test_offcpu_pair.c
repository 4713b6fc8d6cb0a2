// SPDX-License-Identifier: MIT
/* Off-CPU pairing (src/record/offcpu_pair.c): a switch-out is paired only
 * with the same thread's next switch-in, of the same process, after it,
 * with nothing lost between; everything else is dropped (unpaired), never
 * paired with the wrong half. */
#include <errno.h>

#include "record/offcpu_pair.h"
#include "test.h"

static struct rec_offcpu_out dropped[16];
static int nr_dropped;

static void on_drop(void *ctx, const struct rec_offcpu_out *o)
{
	(void)ctx;
	if (nr_dropped < 16)
		dropped[nr_dropped] = *o;
	nr_dropped++;
}

static struct rec_offcpu_out out_of(uint32_t pid, uint32_t tid, uint64_t time, uint64_t cookie)
{
	return (struct rec_offcpu_out){ .pid = pid, .tid = tid, .cpu = 1, .time = time,
					.event = 2, .kstack_id = 7, .cookie = cookie };
}

static struct rec_offcpu_pair *fresh(void)
{
	nr_dropped = 0;
	return rec_offcpu__new(on_drop, NULL);
}

static void test_pair(void)
{
	struct rec_offcpu_pair *p = fresh();
	struct rec_offcpu_out o = out_of(10, 11, 1000, 0x301), got;

	CHECK(p);
	/* asleep when the recording started: its first switch-in is no interval */
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 500, &got), 0);
	CHECK_EQ(rec_offcpu__switch_out(p, &o), 0);
	CHECK_EQ(rec_offcpu__held(p), 1);
	/* another thread's switch-in takes nothing */
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 12, 1500, &got), 0);
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 4000, &got), 1);
	CHECK_EQ_U64(got.time, 1000);
	CHECK_EQ_U64(got.cookie, 0x301);
	CHECK_EQ(got.kstack_id, 7);
	CHECK_EQ(got.event, 2);
	CHECK_EQ(rec_offcpu__held(p), 0);
	/* paired once only */
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 5000, &got), 0);
	CHECK_EQ(nr_dropped, 0);
	rec_offcpu__free(p);
}

static void test_lost(void)
{
	struct rec_offcpu_pair *p = fresh();
	struct rec_offcpu_out a = out_of(10, 11, 1000, 1), b = out_of(10, 12, 3000, 2), got;

	CHECK_EQ(rec_offcpu__switch_out(p, &a), 0);
	CHECK_EQ(rec_offcpu__switch_out(p, &b), 0);
	/* lost before 2000: 11's switch-in may be gone with a later
	 * switch-out; 12 switched out after the loss */
	rec_offcpu__lost(p, 2000);
	CHECK_EQ(nr_dropped, 1);
	CHECK_EQ(dropped[0].tid, 11);
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 6000, &got), 0);
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 12, 6000, &got), 1);
	CHECK_EQ_U64(got.time, 3000);
	rec_offcpu__free(p);
}

static void test_exit_and_reuse(void)
{
	struct rec_offcpu_pair *p = fresh();
	struct rec_offcpu_out a = out_of(10, 11, 1000, 1), b = out_of(20, 11, 3000, 2), got;

	/* exits (its switch-in lost without a LOST record, say) */
	CHECK_EQ(rec_offcpu__switch_out(p, &a), 0);
	rec_offcpu__task_exit(p, 11);
	CHECK_EQ(nr_dropped, 1);
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 2000, &got), 0);
	/* its id given to a thread of another process, whose exit was not seen */
	CHECK_EQ(rec_offcpu__switch_out(p, &b), 0);
	CHECK_EQ(rec_offcpu__switch_in(p, 30, 11, 4000, &got), 0);
	CHECK_EQ(nr_dropped, 2);
	CHECK_EQ(dropped[1].pid, 20);
	CHECK_EQ(rec_offcpu__held(p), 0);
	rec_offcpu__free(p);
}

static void test_order(void)
{
	struct rec_offcpu_pair *p = fresh();
	struct rec_offcpu_out a = out_of(10, 11, 1000, 1), b = out_of(10, 11, 2000, 2);
	struct rec_offcpu_out late = out_of(10, 11, 2500, 3), got;

	/* two switch-outs without the switch-in between: the first dropped */
	CHECK_EQ(rec_offcpu__switch_out(p, &a), 0);
	CHECK_EQ(rec_offcpu__switch_out(p, &b), 0);
	CHECK_EQ(nr_dropped, 1);
	CHECK_EQ_U64(dropped[0].cookie, 1);
	/* a switch-in older than the switch-out held is not its own */
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 1500, &got), 0);
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 3000, &got), 1);
	CHECK_EQ_U64(got.cookie, 2);
	/* a switch-out that comes after its own switch-in (3000) is refused,
	 * not paired with the next one */
	CHECK_EQ(rec_offcpu__switch_out(p, &late), -ESTALE);
	CHECK_EQ(rec_offcpu__switch_in(p, 10, 11, 9000, &got), 0);
	/* the end: whatever is held is dropped */
	late.time = 9500;
	CHECK_EQ(rec_offcpu__switch_out(p, &late), 0);
	rec_offcpu__flush(p);
	CHECK_EQ(nr_dropped, 2);
	CHECK_EQ_U64(dropped[1].time, 9500);
	rec_offcpu__free(p);
}

static void test_many_threads(void)
{
	struct rec_offcpu_pair *p = fresh();
	struct rec_offcpu_out got;

	/* grown past the first allocation, threads exiting in between: every
	 * thread gets its own switch-out back */
	for (uint32_t t = 1; t <= 300; t++) {
		struct rec_offcpu_out o = out_of(1, t, 100 + t, t);

		CHECK_EQ(rec_offcpu__switch_out(p, &o), 0);
	}
	for (uint32_t t = 1; t <= 300; t += 3)
		rec_offcpu__task_exit(p, t);
	CHECK_EQ(nr_dropped, 100);
	for (uint32_t t = 1; t <= 300; t++) {
		int r = rec_offcpu__switch_in(p, 1, t, 1000, &got);

		CHECK_EQ(r, t % 3 != 1);
		if (r)
			CHECK_EQ_U64(got.cookie, t);
	}
	CHECK_EQ(rec_offcpu__held(p), 0);
	rec_offcpu__free(p);
}

int main(void)
{
	RUN(test_pair);
	RUN(test_lost);
	RUN(test_exit_and_reuse);
	RUN(test_order);
	RUN(test_many_threads);
	TEST_EXIT();
}
