// SPDX-License-Identifier: MIT
/*
 * The deferred engine driven by hand-written event sequences: exact cookie
 * values, unwind counts and callback sequences. The cookie oracle is the
 * kernel's own representation (union unwind_task_id: u32 cpu + 1, then u32
 * counter, on little endian) and its counter recurrence, written out here
 * independently of the engine.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "deferred/deferred.h"

#include "test.h"

/* ---- fakes --------------------------------------------------------------- */

static int nr_unwinds;
static int unwind_ret;  /* < 0: the fake unwind fails with this */

/* Frames derived from the sample: frame i has pc = ip + i, sp = sp + 8 i, so
 * a delivered stack says which sample it was unwound from. */
static int fake_unwind(void *ctx, const struct ustack_deferred_sample *s,
		       struct ustack_frame *frames, uint32_t max, uint32_t *stop)
{
	uint32_t n = 3;

	nr_unwinds++;
	if (unwind_ret < 0)
		return unwind_ret;
	if (n > max)
		n = max;
	for (uint32_t i = 0; i < n; i++) {
		frames[i].pc = s->ip + i;
		frames[i].sp = s->sp + 8 * i;
		frames[i].method = i ? USTACK_METHOD_SFRAME : USTACK_METHOD_REGS;
		frames[i].flags = 0;
	}
	*stop = USTACK_STOP_OUTERMOST;
	return (int)n;
}

struct cb_rec {
	int who;                /* consumer number (its ctx) */
	uint64_t cookie;
	uint32_t pid, tid, cpu;
	uint64_t time, close_time;
	uint32_t nr, reason, nr_requests;
	int err;
	uint64_t pc0;
};

static struct cb_rec recs[64];
static int nr_recs;
static struct ustack_deferred_consumer *cancel_in_cb;  /* cancel this from a callback */
static struct ustack_deferred *cb_engine;
static int cb_request_rc;

static void record_cb(struct ustack_deferred_consumer *c, uint64_t cookie,
		      const struct ustack_deferred_task *task, uint32_t cpu, uint64_t time,
		      const struct ustack_deferred_stack *st)
{
	struct cb_rec *r;

	if (nr_recs >= (int)ARRAY_SIZE(recs))
		abort();
	r = &recs[nr_recs++];
	r->who = (int)(intptr_t)c->ctx;
	r->cookie = cookie;
	r->pid = task->pid;
	r->tid = task->tid;
	r->cpu = cpu;
	r->time = time;
	r->close_time = st->close_time;
	r->nr = st->nr;
	r->reason = st->close_reason;
	r->nr_requests = st->nr_requests;
	r->err = st->err;
	r->pc0 = st->nr ? st->frames[0].pc : 0;
	if (st->nr && !st->frames)
		abort();
	if (cancel_in_cb) {
		ustack_deferred__cancel(cb_engine, cancel_in_cb);
		cancel_in_cb = NULL;
	}
	if (cb_engine) {
		struct ustack_deferred_sample s = { .pid = 1, .tid = 1, .ip = 1, .sp = 1,
						    .flags = USTACK_DEFERRED_KERNEL };
		uint64_t ck;

		cb_request_rc = ustack_deferred__request(cb_engine, c, &s, &ck);
	}
}

static struct ustack_deferred *engine(uint32_t nr_cpus, uint32_t max_tasks)
{
	struct ustack_deferred_opts o = { .sz = sizeof(o), .nr_cpus = nr_cpus,
					  .max_tasks = max_tasks, .unwind = fake_unwind };

	nr_unwinds = 0;
	unwind_ret = 0;
	nr_recs = 0;
	cancel_in_cb = NULL;
	cb_engine = NULL;
	memset(recs, 0, sizeof(recs));
	return ustack_deferred__new(&o);
}

static struct ustack_deferred_sample ks(uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t time,
					uint64_t ip, uint64_t sp, uint64_t bp)
{
	struct ustack_deferred_sample s = { .pid = pid, .tid = tid, .cpu = cpu, .time = time,
					    .flags = USTACK_DEFERRED_KERNEL,
					    .ip = ip, .sp = sp, .bp = bp };
	return s;
}

static struct ustack_deferred_sample us(uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t time,
					uint64_t ip, uint64_t sp, uint64_t bp)
{
	struct ustack_deferred_sample s = ks(pid, tid, cpu, time, ip, sp, bp);

	s.flags = 0;
	return s;
}

/* Request and return the cookie; a wrong return code fails the test. */
static uint64_t REQ(struct ustack_deferred *d, struct ustack_deferred_consumer *c,
		    struct ustack_deferred_sample s, int want_rc)
{
	uint64_t ck = 0xdead;

	CHECK_EQ(ustack_deferred__request(d, c, &s, &ck), want_rc);
	return ck;
}

/* The kernel's representation of the cookie, independent of the engine. */
union kernel_task_id {
	struct {
		uint32_t cpu;   /* smp_processor_id() + 1 */
		uint32_t cnt;
	};
	uint64_t id;
};

static uint64_t kernel_cookie(uint32_t cpu, uint32_t cnt)
{
	union kernel_task_id u = { .cpu = cpu + 1, .cnt = cnt };

	return u.id;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_cookie_layout_kernel(void)
{
	struct ustack_deferred *d = engine(8, 0);
	struct ustack_deferred_consumer c;
	uint32_t kctr[8] = { 0 };  /* the kernel's unwind_ctx_ctr, per CPU */
	uint64_t ck;

#if __BYTE_ORDER != __LITTLE_ENDIAN
	SKIP("the kernel's union layout is checked on little-endian only");
#endif
	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	/* Literal values first: the kernel's first cookie on CPU 0 and CPU 5. */
	CHECK_EQ_U64(USTACK_DEFERRED_COOKIE(3, 0), 0x0000000300000001ull);
	CHECK_EQ_U64(USTACK_DEFERRED_COOKIE(0xffffffffu, 7), 0xffffffff00000008ull);
	CHECK_EQ(USTACK_DEFERRED_COOKIE_CPU(0x0000000500000006ull), 5);
	CHECK_EQ(USTACK_DEFERRED_COOKIE_CNT(0x0000000500000006ull), 5);
	/* Then a sequence of new entries against the kernel's recurrence
	 * cnt = (ctr + 2) | 1; ctr = cnt, one task per entry so nothing joins. */
	for (uint32_t i = 0; i < 40; i++) {
		uint32_t cpu = (i * 3) % 8;
		uint32_t cnt = (kctr[cpu] + 2) | 1;

		kctr[cpu] = cnt;
		ck = REQ(d, &c, ks(10 + i, 10 + i, cpu, 100 + i, 0x401000, 0x7ffc0000, 0), 0);
		CHECK_EQ_U64(ck, kernel_cookie(cpu, cnt));
		CHECK(ck != 0);
		CHECK(USTACK_DEFERRED_COOKIE_CNT(ck) & 1);
	}
	ck = REQ(d, &c, ks(99, 99, 0, 1000, 0x401000, 0x7ffc0000, 0), 0);
	CHECK_EQ_U64(ck, 0x0000000300000000ull + 2 * 0x100000000ull * 5 + 1); /* 6th on CPU 0: cnt 13 */
	ustack_deferred__free(d);
}

static void test_one_entry_one_unwind(void)
{
	struct ustack_deferred *d = engine(4, 0);
	struct ustack_deferred_consumer c;
	struct ustack_deferred_stats st;
	uint64_t a, b, e;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	a = REQ(d, &c, ks(7, 7, 2, 100, 0x401234, 0x7ffd1000, 0x7ffd1040), 0);
	b = REQ(d, &c, ks(7, 7, 2, 110, 0x401234, 0x7ffd1000, 0x7ffd1040), 1);
	e = REQ(d, &c, ks(7, 7, 2, 120, 0x401234, 0x7ffd1000, 0x7ffd1040), 1);
	CHECK_EQ_U64(a, 0x0000000300000003ull);
	CHECK_EQ_U64(b, a);
	CHECK_EQ_U64(e, a);
	CHECK_EQ(nr_unwinds, 1);
	CHECK_EQ(nr_recs, 0);           /* nothing before the task returns to user */
	ustack_deferred__user_mode(d, 7, 2, 130);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ_U64(recs[0].cookie, a);
	CHECK_EQ(recs[0].pid, 7);
	CHECK_EQ(recs[0].tid, 7);
	CHECK_EQ(recs[0].cpu, 2);
	CHECK_EQ(recs[0].time, 100);    /* first request */
	CHECK_EQ(recs[0].close_time, 130);
	CHECK_EQ(recs[0].reason, USTACK_DEFERRED_CLOSE_USER_MODE);
	CHECK_EQ(recs[0].nr_requests, 3);
	CHECK_EQ(recs[0].err, 0);
	CHECK_EQ(recs[0].nr, 3);
	CHECK_EQ_U64(recs[0].pc0, 0x401234);
	ustack_deferred__stats(d, &st);
	CHECK_EQ(st.requests, 3);
	CHECK_EQ(st.unwinds, 1);
	CHECK_EQ(st.shared, 2);
	CHECK_EQ(st.callbacks, 1);
	CHECK_EQ(st.open, 0);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 1);           /* delivered exactly once */
	ustack_deferred__free(d);
}

static void test_user_sample_splits(void)
{
	struct ustack_deferred *d = engine(2, 0);
	struct ustack_deferred_consumer c;
	uint64_t c1, c2, c3;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	c1 = REQ(d, &c, ks(5, 5, 0, 10, 0x1000, 0x8000, 0), 0);
	CHECK_EQ(REQ(d, &c, ks(5, 5, 0, 11, 0x1000, 0x8000, 0), 1), c1);
	/* A user-mode sample: the task left the kernel. It closes the entry
	 * (delivered before the new cookie is handed out) and has its own. */
	c2 = REQ(d, &c, us(5, 5, 0, 12, 0x2000, 0x8100, 0), 0);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ_U64(recs[0].cookie, c1);
	CHECK_EQ(recs[0].reason, USTACK_DEFERRED_CLOSE_USER_MODE);
	CHECK_EQ(recs[0].close_time, 12);
	/* Same user regs as the first entry, but a new kernel entry. */
	c3 = REQ(d, &c, ks(5, 5, 0, 13, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(c1, 0x0000000300000001ull);
	CHECK_EQ_U64(c2, 0x0000000500000001ull);
	CHECK_EQ_U64(c3, 0x0000000700000001ull);
	CHECK_EQ(nr_unwinds, 3);
	/* The user-mode sample's stack went out at the start of the next call. */
	CHECK_EQ(nr_recs, 2);
	CHECK_EQ_U64(recs[1].cookie, c2);
	CHECK_EQ(recs[1].reason, USTACK_DEFERRED_CLOSE_USER_SAMPLE);
	CHECK_EQ_U64(recs[1].pc0, 0x2000);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 3);
	CHECK_EQ_U64(recs[2].cookie, c3);
	CHECK_EQ(recs[2].reason, USTACK_DEFERRED_CLOSE_FLUSH);
	CHECK_EQ(recs[2].close_time, 13);
	ustack_deferred__free(d);
}

static void test_user_mode_notification(void)
{
	struct ustack_deferred *d = engine(2, 0);
	struct ustack_deferred_consumer c;
	uint64_t c1, c2;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	c1 = REQ(d, &c, ks(5, 5, 0, 100, 0x1000, 0x8000, 0), 0);
	ustack_deferred__user_mode(d, 6, 0, 105);       /* another task: nothing */
	ustack_deferred__user_mode(d, 5, 1, 90);        /* older than the entry: ignored */
	CHECK_EQ(nr_recs, 0);
	CHECK_EQ(REQ(d, &c, ks(5, 5, 0, 120, 0x1000, 0x8000, 0), 1), c1);
	/* Dated between the two samples, arriving late: the two were not one
	 * kernel entry, so the shared stack is withheld. */
	ustack_deferred__user_mode(d, 5, 1, 110);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ_U64(recs[0].cookie, c1);
	CHECK_EQ(recs[0].err, -ESTALE);
	CHECK_EQ(recs[0].nr, 0);
	c2 = REQ(d, &c, ks(5, 5, 0, 130, 0x1000, 0x8000, 0), 0);
	CHECK(c2 != c1);
	ustack_deferred__user_mode(d, 5, 0, 140);
	CHECK_EQ(nr_recs, 2);
	CHECK_EQ(recs[1].err, 0);
	CHECK_EQ(recs[1].close_time, 140);
	struct ustack_deferred_stats st;
	ustack_deferred__stats(d, &st);
	CHECK_EQ(st.dropped_misordered, 1);
	CHECK_EQ(st.dropped_after_lost, 0);
	ustack_deferred__free(d);
}

static void test_different_regs_split(void)
{
	struct ustack_deferred *d = engine(1, 0);
	struct ustack_deferred_consumer c;
	uint64_t ck[5];
	struct ustack_deferred_sample s;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	ck[0] = REQ(d, &c, ks(9, 9, 0, 1, 0x1000, 0x8000, 0x8100), 0);
	ck[1] = REQ(d, &c, ks(9, 9, 0, 2, 0x1004, 0x8000, 0x8100), 0);  /* ip */
	ck[2] = REQ(d, &c, ks(9, 9, 0, 3, 0x1004, 0x7ff8, 0x8100), 0);  /* sp */
	ck[3] = REQ(d, &c, ks(9, 9, 0, 4, 0x1004, 0x7ff8, 0x8200), 0);  /* bp */
	s = ks(9, 9, 0, 5, 0x1004, 0x7ff8, 0x8200);
	s.tag = 0xabcdef;                                               /* tag */
	ck[4] = REQ(d, &c, s, 0);
	s.time = 6;
	CHECK_EQ_U64(REQ(d, &c, s, 1), ck[4]);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_U64(ck[i], kernel_cookie(0, 3 + 2 * i));
	CHECK_EQ(nr_unwinds, 5);
	CHECK_EQ(nr_recs, 4);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ_U64(recs[i].cookie, ck[i]);
		CHECK_EQ(recs[i].reason, USTACK_DEFERRED_CLOSE_NEW_ENTRY);
		CHECK_EQ(recs[i].close_time, i + 2);
	}
	CHECK_EQ_U64(recs[0].pc0, 0x1000);
	CHECK_EQ_U64(recs[1].pc0, 0x1004);
	ustack_deferred__free(d);
}

static void test_two_consumers(void)
{
	struct ustack_deferred *d = engine(2, 0);
	struct ustack_deferred_consumer a, b;
	struct ustack_deferred_stats st;
	uint64_t c1, c2;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &a, record_cb, (void *)1), 0);
	CHECK_EQ(ustack_deferred__init_consumer(d, &b, record_cb, (void *)2), 0);
	/* Entry 1: both ask for the same sample, a asks again later. */
	c1 = REQ(d, &a, ks(3, 4, 1, 50, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &b, ks(3, 4, 1, 50, 0x1000, 0x8000, 0), 1), c1);
	CHECK_EQ_U64(REQ(d, &a, ks(3, 4, 0, 60, 0x1000, 0x8000, 0), 1), c1);
	/* Entry 2: only b asks. */
	c2 = REQ(d, &b, ks(3, 4, 0, 70, 0x2000, 0x8000, 0), 0);
	CHECK_EQ(nr_unwinds, 2);
	CHECK_EQ(nr_recs, 2);
	CHECK_EQ(recs[0].who, 1);
	CHECK_EQ(recs[1].who, 2);
	CHECK_EQ_U64(recs[0].cookie, c1);
	CHECK_EQ_U64(recs[1].cookie, c1);
	CHECK_EQ(recs[0].nr_requests, 3);
	ustack_deferred__task_exit(d, 4);
	CHECK_EQ(nr_recs, 3);
	CHECK_EQ(recs[2].who, 2);
	CHECK_EQ_U64(recs[2].cookie, c2);
	CHECK_EQ(recs[2].reason, USTACK_DEFERRED_CLOSE_EXIT);
	CHECK_EQ(recs[2].close_time, 70);
	ustack_deferred__stats(d, &st);
	CHECK_EQ(st.requests, 4);
	CHECK_EQ(st.unwinds, 2);
	CHECK_EQ(st.shared, 2);
	CHECK_EQ(st.callbacks, 3);
	ustack_deferred__free(d);
}

static void test_user_sample_two_consumers(void)
{
	struct ustack_deferred *d = engine(2, 0);
	struct ustack_deferred_consumer a, b;
	uint64_t c1;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &a, record_cb, (void *)1), 0);
	CHECK_EQ(ustack_deferred__init_consumer(d, &b, record_cb, (void *)2), 0);
	c1 = REQ(d, &a, us(3, 3, 1, 50, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &b, us(3, 3, 1, 50, 0x1000, 0x8000, 0), 1), c1);
	CHECK_EQ(nr_recs, 0);
	/* A later user-mode sample of the same task is a new context. */
	CHECK(REQ(d, &a, us(3, 3, 1, 51, 0x1000, 0x8000, 0), 0) != c1);
	CHECK_EQ(nr_unwinds, 2);
	CHECK_EQ(nr_recs, 2);
	CHECK_EQ(recs[0].who, 1);
	CHECK_EQ(recs[1].who, 2);
	CHECK_EQ_U64(recs[1].cookie, c1);
	CHECK_EQ(recs[1].reason, USTACK_DEFERRED_CLOSE_USER_SAMPLE);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 3);
	ustack_deferred__free(d);
}

static void test_cancel(void)
{
	struct ustack_deferred *d = engine(2, 0);
	struct ustack_deferred_consumer a, b, e;
	uint64_t c1, c2;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &a, record_cb, (void *)1), 0);
	CHECK_EQ(ustack_deferred__init_consumer(d, &b, record_cb, (void *)2), 0);
	c1 = REQ(d, &a, ks(3, 3, 0, 10, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &b, ks(3, 3, 0, 10, 0x1000, 0x8000, 0), 1), c1);
	/* b goes: no callback, not even for the request it already made. */
	ustack_deferred__cancel(d, &b);
	CHECK_EQ(b.idx, -1);
	ustack_deferred__cancel(d, &b);                 /* twice: no-op */
	CHECK_EQ(REQ(d, &b, ks(3, 3, 0, 11, 0x1000, 0x8000, 0), -EINVAL), 0);
	/* A new consumer takes b's slot and must not inherit its request. */
	CHECK_EQ(ustack_deferred__init_consumer(d, &e, record_cb, (void *)3), 0);
	CHECK_EQ(e.idx, 1);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ(recs[0].who, 1);
	CHECK_EQ_U64(recs[0].cookie, c1);

	/* Cancel from inside a callback: e is cancelled by a's callback and
	 * must not be called for the cookie they share. */
	c2 = REQ(d, &a, ks(3, 3, 0, 20, 0x2000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &e, ks(3, 3, 0, 20, 0x2000, 0x8000, 0), 1), c2);
	cancel_in_cb = &e;
	cb_engine = d;
	ustack_deferred__flush(d);
	cb_engine = NULL;
	CHECK_EQ(nr_recs, 2);
	CHECK_EQ(recs[1].who, 1);
	CHECK_EQ(cb_request_rc, -EDEADLK);             /* no requests from callbacks */
	CHECK_EQ(e.idx, -1);
	ustack_deferred__free(d);
}

static void test_migration(void)
{
	struct ustack_deferred *d = engine(4, 0);
	struct ustack_deferred_consumer c;
	uint64_t c1, c2;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	/* Inside one kernel entry the task moves from CPU 0 to CPU 1 and on to
	 * CPU 3: the cookie stays the one made on CPU 0. */
	c1 = REQ(d, &c, ks(8, 8, 0, 100, 0x1000, 0x8000, 0x9000), 0);
	CHECK_EQ_U64(REQ(d, &c, ks(8, 8, 1, 110, 0x1000, 0x8000, 0x9000), 1), c1);
	CHECK_EQ_U64(REQ(d, &c, ks(8, 8, 3, 120, 0x1000, 0x8000, 0x9000), 1), c1);
	CHECK_EQ_U64(c1, kernel_cookie(0, 3));
	CHECK_EQ(nr_unwinds, 1);
	/* CPU 1's counter did not move: its first cookie is still cnt 3. */
	c2 = REQ(d, &c, ks(9, 9, 1, 130, 0x1000, 0x8000, 0x9000), 0);
	CHECK_EQ_U64(c2, kernel_cookie(1, 3));
	ustack_deferred__user_mode(d, 8, 3, 140);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ_U64(recs[0].cookie, c1);
	CHECK_EQ(recs[0].cpu, 0);                       /* the cookie's CPU */
	CHECK_EQ(recs[0].nr_requests, 3);
	/* Back on CPU 0 after returning to user: a new entry, cnt 5. */
	CHECK_EQ_U64(REQ(d, &c, ks(8, 8, 0, 150, 0x1000, 0x8000, 0x9000), 0), kernel_cookie(0, 5));
	ustack_deferred__free(d);
}

static void test_tid_reuse(void)
{
	struct ustack_deferred *d = engine(2, 0);
	struct ustack_deferred_consumer c;
	uint64_t c1, c2, c3, c4;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	/* Exit notification: the next task with that tid starts afresh, even
	 * with identical registers (same binary, same syscall site). */
	c1 = REQ(d, &c, ks(100, 100, 0, 10, 0x1000, 0x8000, 0), 0);
	ustack_deferred__task_exit(d, 100);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ(recs[0].reason, USTACK_DEFERRED_CLOSE_EXIT);
	c2 = REQ(d, &c, ks(100, 100, 0, 20, 0x1000, 0x8000, 0), 0);
	CHECK(c2 != c1);
	/* No exit seen (lost), but the pid changed: a new task. */
	c3 = REQ(d, &c, ks(200, 100, 0, 30, 0x1000, 0x8000, 0), 0);
	CHECK(c3 != c2);
	CHECK_EQ(nr_recs, 2);
	CHECK_EQ_U64(recs[1].cookie, c2);
	CHECK_EQ(recs[1].pid, 100);
	CHECK_EQ(recs[1].reason, USTACK_DEFERRED_CLOSE_TID_REUSE);
	/* Time going backwards for a tid: never merged. */
	c4 = REQ(d, &c, ks(200, 100, 1, 25, 0x1000, 0x8000, 0), 0);
	CHECK(c4 != c3);
	CHECK_EQ_U64(c4, kernel_cookie(1, 3));
	CHECK_EQ(nr_recs, 3);
	CHECK_EQ_U64(recs[2].cookie, c3);
	CHECK_EQ(recs[2].reason, USTACK_DEFERRED_CLOSE_REORDER);
	CHECK_EQ(recs[2].pid, 200);
	CHECK_EQ(nr_unwinds, 4);
	ustack_deferred__free(d);
}

static void test_lost_records(void)
{
	struct ustack_deferred *d = engine(2, 0);
	struct ustack_deferred_consumer c;
	struct ustack_deferred_stats st;
	uint64_t ca, cb, cc, ca2;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	/* Task A: entry on CPU 0 with samples at 10 and 20, both before the
	 * last record CPU 0 delivered before its gap (at 20). */
	/* Task B on CPU 1: samples at 15 and 25; 25 is after CPU 0's last
	 * record, so B may have run (in user mode, lost) on CPU 0 in between.
	 * Task C on CPU 1, one sample at 22: also after the gap started.
	 * Fed merged by time, as the recorder does. */
	ca = REQ(d, &c, ks(1, 1, 0, 10, 0x1000, 0x8000, 0), 0);
	cb = REQ(d, &c, ks(2, 2, 1, 15, 0x2000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &c, ks(1, 1, 0, 20, 0x1000, 0x8000, 0), 1), ca);
	cc = REQ(d, &c, ks(3, 3, 1, 22, 0x3000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &c, ks(2, 2, 1, 25, 0x2000, 0x8000, 0), 1), cb);
	ustack_deferred__lost(d, 0, 30);
	CHECK_EQ(nr_recs, 3);
	/* LRU order: A (last 20), C (22), B (25). */
	CHECK_EQ_U64(recs[0].cookie, ca);
	CHECK_EQ(recs[0].err, 0);
	CHECK_EQ(recs[0].nr, 3);
	CHECK_EQ(recs[0].reason, USTACK_DEFERRED_CLOSE_LOST);
	CHECK_EQ_U64(recs[1].cookie, cc);
	CHECK_EQ(recs[1].err, -ENODATA);
	CHECK_EQ(recs[1].nr, 0);
	CHECK_EQ_U64(recs[2].cookie, cb);
	CHECK_EQ(recs[2].err, -ENODATA);
	CHECK_EQ(recs[2].nr, 0);
	CHECK_EQ(recs[2].close_time, 30);
	/* After the loss, identical registers do not rejoin the old entries. */
	ca2 = REQ(d, &c, ks(1, 1, 0, 40, 0x1000, 0x8000, 0), 0);
	CHECK(ca2 != ca);
	CHECK_EQ(REQ(d, &c, ks(2, 2, 1, 41, 0x2000, 0x8000, 0), 0) != cb, 1);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 5);
	CHECK_EQ(recs[3].err, 0);
	CHECK_EQ(recs[4].err, 0);
	ustack_deferred__stats(d, &st);
	CHECK_EQ(st.dropped_after_lost, 2);
	CHECK_EQ(st.unwinds, 5);

	/* A loss on an unknown CPU withholds every open entry. */
	ca = REQ(d, &c, ks(1, 1, 0, 50, 0x1000, 0x8000, 0), 0);
	ustack_deferred__lost(d, 77, 60);
	CHECK_EQ(nr_recs, 6);
	CHECK_EQ(recs[5].err, -ENODATA);
	ustack_deferred__free(d);
}

static void test_counter_wrap(void)
{
	struct ustack_deferred *d = engine(3, 0);
	struct ustack_deferred_consumer c;
	uint64_t ck;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	CHECK_EQ(ustack_deferred__set_counter(d, 2, 0xfffffffdu), 0);
	CHECK_EQ(ustack_deferred__set_counter(d, 3, 0), -EINVAL);
	ck = REQ(d, &c, ks(1, 1, 2, 1, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(ck, 0xffffffff00000003ull);
	ck = REQ(d, &c, ks(2, 2, 2, 2, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(ck, 0x0000000100000003ull);       /* wraps to 1, never 0 */
	ck = REQ(d, &c, ks(3, 3, 2, 3, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(ck, 0x0000000300000003ull);
	/* An even value set from outside is made odd. */
	CHECK_EQ(ustack_deferred__set_counter(d, 2, 0xfffffffeu), 0);
	ck = REQ(d, &c, ks(4, 4, 2, 4, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(ck, 0x0000000100000003ull);
	ustack_deferred__free(d);
}

static void test_per_cpu_counters(void)
{
	struct ustack_deferred *d = engine(3, 0);
	struct ustack_deferred_consumer c;
	static const uint32_t cpus[] = { 0, 1, 0, 2, 0, 1 };
	static const uint64_t want[] = {
		0x0000000300000001ull, 0x0000000300000002ull, 0x0000000500000001ull,
		0x0000000300000003ull, 0x0000000700000001ull, 0x0000000500000002ull,
	};

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	for (uint32_t i = 0; i < ARRAY_SIZE(cpus); i++)
		CHECK_EQ_U64(REQ(d, &c, ks(1, 1, cpus[i], i, 0x1000 + i, 0x8000, 0), 0), want[i]);
	ustack_deferred__free(d);
}

static void test_flush_and_eviction(void)
{
	struct ustack_deferred *d = engine(1, 2);
	struct ustack_deferred_consumer c;
	struct ustack_deferred_stats st;
	uint64_t c1, c2, c3;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	c1 = REQ(d, &c, ks(1, 1, 0, 1, 0x1000, 0x8000, 0), 0);
	c2 = REQ(d, &c, ks(2, 2, 0, 2, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &c, ks(1, 1, 0, 3, 0x1000, 0x8000, 0), 1), c1); /* 1 is recent now */
	/* A third task with two entries tracked: the least recently seen (2) goes. */
	c3 = REQ(d, &c, ks(3, 3, 0, 4, 0x1000, 0x8000, 0), 0);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ_U64(recs[0].cookie, c2);
	CHECK_EQ(recs[0].reason, USTACK_DEFERRED_CLOSE_EVICTED);
	CHECK_EQ(recs[0].err, 0);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 3);
	CHECK_EQ_U64(recs[1].cookie, c1);
	CHECK_EQ(recs[1].close_time, 3);
	CHECK_EQ_U64(recs[2].cookie, c3);
	ustack_deferred__stats(d, &st);
	CHECK_EQ(st.evicted, 1);
	CHECK_EQ(st.open, 0);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 3);
	/* After a flush, the same task and registers start a new entry. */
	CHECK(REQ(d, &c, ks(1, 1, 0, 5, 0x1000, 0x8000, 0), 0) != c1);
	ustack_deferred__free(d);   /* pending entry discarded, no callback */
	CHECK_EQ(nr_recs, 3);
}

static void test_unwind_error(void)
{
	struct ustack_deferred *d = engine(1, 0);
	struct ustack_deferred_consumer c;
	struct ustack_deferred_stats st;
	uint64_t c1;

	CHECK(d);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, (void *)1), 0);
	unwind_ret = -EFAULT;
	c1 = REQ(d, &c, ks(1, 1, 0, 1, 0x1000, 0x8000, 0), 0);
	CHECK_EQ_U64(REQ(d, &c, ks(1, 1, 0, 2, 0x1000, 0x8000, 0), 1), c1);  /* not retried */
	CHECK_EQ(nr_unwinds, 1);
	ustack_deferred__flush(d);
	CHECK_EQ(nr_recs, 1);
	CHECK_EQ(recs[0].err, -EFAULT);
	CHECK_EQ(recs[0].nr, 0);
	ustack_deferred__stats(d, &st);
	CHECK_EQ(st.unwind_errors, 1);
	ustack_deferred__free(d);
}

static void test_bad_arguments(void)
{
	struct ustack_deferred_opts o = { .sz = sizeof(o), .nr_cpus = 1, .unwind = fake_unwind };
	struct {
		struct ustack_deferred_opts o;
		uint64_t future;
	} big = { .o = o, .future = 1 };
	struct ustack_deferred_consumer c, many[USTACK_DEFERRED_MAX_CONSUMERS];
	struct ustack_deferred_sample s = ks(1, 1, 0, 1, 0x1000, 0x8000, 0);
	struct ustack_deferred *d;
	uint64_t ck = 5;

	errno = 0;
	CHECK(!ustack_deferred__new(NULL));
	CHECK_EQ(errno, EINVAL);
	o.nr_cpus = 0;
	CHECK(!ustack_deferred__new(&o));
	o.nr_cpus = 1;
	o.unwind = NULL;
	CHECK(!ustack_deferred__new(&o));
	big.o.sz = sizeof(big);
	errno = 0;
	CHECK(!ustack_deferred__new(&big.o));          /* unknown non-zero field */
	CHECK_EQ(errno, EINVAL);
	big.future = 0;
	d = ustack_deferred__new(&big.o);
	CHECK(d);
	ustack_deferred__free(d);
	ustack_deferred__free(NULL);

	d = engine(1, 0);
	CHECK(d);
	c.idx = -1;
	CHECK_EQ(ustack_deferred__request(d, &c, &s, &ck), -EINVAL);   /* not registered */
	CHECK_EQ_U64(ck, 0);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, NULL, NULL), -EINVAL);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, NULL), 0);
	CHECK_EQ(ustack_deferred__init_consumer(d, &c, record_cb, NULL), -EALREADY);
	for (int i = 0; i < USTACK_DEFERRED_MAX_CONSUMERS - 1; i++)
		CHECK_EQ(ustack_deferred__init_consumer(d, &many[i], record_cb, NULL), 0);
	CHECK_EQ(ustack_deferred__init_consumer(d, &many[USTACK_DEFERRED_MAX_CONSUMERS - 1],
						record_cb, NULL), -EBUSY);
	s.cpu = 1;
	ck = 5;
	CHECK_EQ(ustack_deferred__request(d, &c, &s, &ck), -EINVAL);   /* cpu >= nr_cpus */
	CHECK_EQ_U64(ck, 0);
	s = ks(1, 1, 0, 1, 0, 0, 0);
	CHECK_EQ(ustack_deferred__request(d, &c, &s, &ck), -EINVAL);   /* no user regs */
	CHECK_EQ(ustack_deferred__request(d, &c, NULL, &ck), -EINVAL);
	CHECK_EQ(nr_unwinds, 0);
	ustack_deferred__free(d);
	CHECK_EQ(c.idx, -1);
}

int main(void)
{
	RUN(test_cookie_layout_kernel);
	RUN(test_one_entry_one_unwind);
	RUN(test_user_sample_splits);
	RUN(test_user_mode_notification);
	RUN(test_different_regs_split);
	RUN(test_two_consumers);
	RUN(test_user_sample_two_consumers);
	RUN(test_cancel);
	RUN(test_migration);
	RUN(test_tid_reuse);
	RUN(test_lost_records);
	RUN(test_counter_wrap);
	RUN(test_per_cpu_counters);
	RUN(test_flush_and_eviction);
	RUN(test_unwind_error);
	RUN(test_bad_arguments);
	TEST_EXIT();
}
