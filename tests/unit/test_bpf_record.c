// SPDX-License-Identifier: MIT
/* src/bpfload/bpf_record.c: which ring-buffer records the recorder takes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "bpfload/bpf_record.h"
#include "test.h"

static uint64_t buf[(sizeof(struct ub_copy) + 64) / 8];

static struct ub_event *event(uint8_t flags, uint8_t stop, uint32_t ev, uint64_t cookie)
{
	struct ub_event *e = (void *)buf;

	memset(buf, 0, sizeof(buf));
	*e = (struct ub_event){ .type = UB_REC_EVENT, .flags = flags, .stop = stop, .nr = 3,
				.pid = 10, .tid = 11, .event = ev, .cookie = cookie, .kstack = -1 };
	return e;
}

static int check(size_t size, uint32_t nr_events, const char **why)
{
	struct ustack_bpf_rec r;

	return ustack_bpf_record__check(buf, size, nr_events, &r, why);
}

static void test_events(void)
{
	struct ustack_bpf_rec r;
	const char *why = NULL;

	event(UB_EV_NEW_ENTRY | UB_EV_USER, USTACK_STOP_OUTERMOST, 1, 0x300000001);
	CHECK_EQ(ustack_bpf_record__check(buf, sizeof(struct ub_event), 2, &r, &why), 0);
	CHECK((void *)r.event == (void *)buf && !r.stack && !r.copy);
	CHECK_EQ(r.type, UB_REC_EVENT);
	/* a kernel thread's event: no user part at all */
	event(0, 0, 0, 0);
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), 0);
	/* every way of being wrong is -EBADMSG with a reason */
	event(UB_EV_USER, 0, 2, 1);
	CHECK_EQ(check(sizeof(struct ub_event), 2, &why), -EBADMSG);
	CHECK(strstr(why, "event not asked for"));
	event(UB_EV_USER, USTACK_STOP_MAPS_BUSY + 1, 0, 1);
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	CHECK(strstr(why, "stop reason"));
	event(UB_EV_USER, 0, 0, 0);
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	CHECK(strstr(why, "no cookie"));
	event(UB_EV_NEW_ENTRY, 0, 0, 0);
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	event(0x80 | UB_EV_USER, 0, 0, 1);
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	CHECK(strstr(why, "unknown flags"));
	/* an event with args: a struct ub_pevent, 1..UB_MAX_ARGS of them */
	event(UB_EV_ARGS | UB_EV_USER, 0, 0, 1);
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	CHECK(strstr(why, "args cut short"));
	CHECK_EQ(check(sizeof(struct ub_pevent), 1, &why), -EBADMSG); /* nr_args 0 */
	CHECK(strstr(why, "bad number of args"));
	((struct ub_pevent *)buf)->nr_args = UB_MAX_ARGS + 1;
	CHECK_EQ(check(sizeof(struct ub_pevent), 1, &why), -EBADMSG);
	((struct ub_pevent *)buf)->nr_args = UB_MAX_ARGS;
	CHECK_EQ(check(sizeof(struct ub_pevent), 1, &why), 0);
	CHECK_EQ(check(sizeof(struct ub_pevent) - 8, 1, &why), -EBADMSG);
	event(UB_EV_USER, 0, 0, 1);
	CHECK_EQ(check(sizeof(struct ub_event) - 1, 1, &why), -EBADMSG);
	CHECK(strstr(why, "cut short"));
	((uint8_t *)buf)[0] = 9;
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	CHECK(strstr(why, "unknown record type"));
	CHECK_EQ(check(0, 1, &why), -EBADMSG);
	/* an off-CPU interval: its weight in value, said by UB_EV_VALUE */
	event(UB_EV_NEW_ENTRY | UB_EV_USER | UB_EV_VALUE, 0, 0, 1)->value = 10000000;
	CHECK_EQ(ustack_bpf_record__check(buf, sizeof(struct ub_event), 1, &r, &why), 0);
	CHECK_EQ(r.event->value, 10000000);
	event(UB_EV_VALUE, 0, 0, 0)->value = 5; /* no user stack: still weighed */
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), 0);
	event(UB_EV_NEW_ENTRY | UB_EV_USER, 0, 0, 1)->value = 10000000;
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	CHECK(strstr(why, "no value flag"));
	/* the value is the record's last 8 bytes: one short is refused */
	event(UB_EV_VALUE, 0, 0, 0)->value = 5;
	CHECK_EQ(check(sizeof(struct ub_event) - 8, 1, &why), -EBADMSG);
	CHECK(strstr(why, "cut short"));
	/* misaligned: the structs cannot be read in place */
	CHECK_EQ(ustack_bpf_record__check((uint8_t *)buf + 4, 48, 1, &r, &why), -EBADMSG);
}

static void test_stacks(void)
{
	struct ub_stack *s = (void *)buf;
	struct ustack_bpf_rec r;
	const char *why = NULL;

	memset(buf, 0, sizeof(buf));
	s->type = UB_REC_STACK;
	s->id = 7;
	s->nr = 2;
	s->words[0] = 0x1130;
	s->words[1] = 5 | (uint64_t)USTACK_METHOD_CFI << 56;
	s->words[2] = 0x2240;
	s->words[3] = 5 | (uint64_t)USTACK_METHOD_PLT << 56 | 1ull << 62;
	CHECK_EQ(ustack_bpf_record__check(buf, 16 + 32, 1, &r, &why), 0);
	CHECK(r.stack == s);
	/* a capacity class bigger than the frames is fine (16 + 16 * 8) */
	CHECK_EQ(check(16 + 16 * 8, 1, &why), 0);
	CHECK_EQ(check(16 + 31, 1, &why), -EBADMSG);
	CHECK(strstr(why, "shorter than its frames"));
	s->words[3] = 5 | (uint64_t)(USTACK_METHOD_PLT + 1) << 56;
	CHECK_EQ(check(16 + 32, 1, &why), -EBADMSG);
	CHECK(strstr(why, "unwind method"));
	s->words[3] = 5;
	/* the native walk's stop, which places Python frames above a cut */
	s->nstop = USTACK_STOP_MAPS_BUSY;
	CHECK_EQ(check(16 + 32, 1, &why), 0);
	s->nstop = USTACK_STOP_MAPS_BUSY + 1;
	CHECK_EQ(check(16 + 32, 1, &why), -EBADMSG);
	CHECK(strstr(why, "unknown stop"));
	s->nstop = 0;
	s->nr = UB_MAX_FRAMES + 1;
	CHECK_EQ(check(sizeof(buf), 1, &why), -EBADMSG);
	s->nr = 0;
	CHECK_EQ(check(sizeof(buf), 1, &why), -EBADMSG);
	s->nr = 1;
	s->id = 0;
	CHECK_EQ(check(32, 1, &why), -EBADMSG);
	CHECK(strstr(why, "id 0"));
}

static void test_copies(void)
{
	struct ub_copy *c = (void *)buf;
	const char *why = NULL;

	memset(buf, 0, sizeof(buf));
	c->type = UB_REC_COPY;
	c->cookie = 0x500000001;
	c->size = UB_COPY_BYTES;
	CHECK_EQ(check(sizeof(*c), 1, &why), 0);
	c->size = UB_COPY_BYTES + 1;
	CHECK_EQ(check(sizeof(*c), 1, &why), -EBADMSG);
	c->size = 100;
	CHECK_EQ(check(offsetof(struct ub_copy, data) + 99, 1, &why), -EBADMSG);
	CHECK_EQ(check(offsetof(struct ub_copy, data) + 100, 1, &why), 0);
	c->cookie = 0;
	CHECK_EQ(check(sizeof(*c), 1, &why), -EBADMSG);
	/* the Python frames sent with it: as many as a stack record's */
	c->cookie = 0x500000001;
	c->npy = UB_MAX_PY_FRAMES;
	c->pystop = UB_PYSTOP_DEPTH;
	CHECK_EQ(check(sizeof(*c), 1, &why), 0);
	c->npy = UB_MAX_PY_FRAMES + 1;
	CHECK_EQ(check(sizeof(*c), 1, &why), -EBADMSG);
	CHECK(strstr(why, "Python frames"));
	c->npy = 2;
	c->pystop = UB_PYSTOP_NO_THREAD + 1;
	CHECK_EQ(check(sizeof(*c), 1, &why), -EBADMSG);
	CHECK(strstr(why, "unknown stop"));
	/* the Python words lie before the stack bytes: a record cut in them
	 * is short */
	c->pystop = UB_PYSTOP_END;
	CHECK_EQ(check(offsetof(struct ub_copy, py) + 8, 1, &why), -EBADMSG);
}

static void test_kstacks(void)
{
	struct ub_kstack *k = (void *)buf;
	struct ustack_bpf_rec r;
	const char *why = NULL;

	memset(buf, 0, sizeof(buf));
	k->type = UB_REC_KSTACK;
	k->nr = 2;
	k->tid = 11;
	k->seq = 1;
	k->ips[0] = 0xffffffff81000010;
	k->ips[1] = 0xffffffff81000020;
	CHECK_EQ(ustack_bpf_record__check(buf, sizeof(*k), 1, &r, &why), 0);
	CHECK(r.kstack == k && !r.event && !r.stack && !r.copy);
	CHECK_EQ(r.type, UB_REC_KSTACK);
	/* the record may be cut after its frames; not inside them */
	CHECK_EQ(check(16 + 16, 1, &why), 0);
	CHECK_EQ(check(16 + 15, 1, &why), -EBADMSG);
	CHECK(strstr(why, "shorter than its frames"));
	CHECK_EQ(check(15, 1, &why), -EBADMSG);
	CHECK(strstr(why, "cut short"));
	k->nr = UB_MAX_FRAMES;
	CHECK_EQ(check(sizeof(*k), 1, &why), 0);
	k->nr = UB_MAX_FRAMES + 1;
	CHECK_EQ(check(sizeof(buf), 1, &why), -EBADMSG);
	k->nr = 0;
	CHECK_EQ(check(sizeof(*k), 1, &why), -EBADMSG);
	k->nr = 2;
	k->seq = 0;
	CHECK_EQ(check(sizeof(*k), 1, &why), -EBADMSG);
	CHECK(strstr(why, "sequence"));
	/* its event: UB_EV_KSTACK with the seq, and no id in the map */
	event(UB_EV_NEW_ENTRY | UB_EV_USER | UB_EV_KSTACK, 0, 0, 1)->kseq = 5;
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), 0);
	event(UB_EV_KSTACK, 0, 0, 0)->kseq = 5; /* a kernel thread's */
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), 0);
	event(UB_EV_USER | UB_EV_KSTACK, 0, 0, 1); /* no seq */
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	CHECK(strstr(why, "sent whole"));
	event(UB_EV_USER | UB_EV_KSTACK, 0, 0, 1)->kseq = 5;
	((struct ub_event *)buf)->kstack = 3; /* in the map too */
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
	event(UB_EV_USER, 0, 0, 1)->kseq = 5; /* a seq without the flag */
	CHECK_EQ(check(sizeof(struct ub_event), 1, &why), -EBADMSG);
}

int main(void)
{
	RUN(test_events);
	RUN(test_stacks);
	RUN(test_copies);
	RUN(test_kstacks);
	return tests_failed_total_ ? 1 : 0;
}
