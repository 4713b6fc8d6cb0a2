// SPDX-License-Identifier: MIT
/* The perf ring-record parser (src/perf/perf_record.c) on records built
 * byte by byte the way the kernel lays them out for the session's
 * sample_type (include/uapi/linux/perf_event.h): every field lands where it
 * should, and every record cut short at any length is refused. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#define ID0 0x1234u /* sample id of event 0 */
#define ID1 0x9999u /* sample id of event 1 */
#include "perf_rb.h"

/* sample_id_all: pid/tid, time, cpu/res, identifier */
static void end_with_id(struct rb *r, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu)
{
	put_pair(r, pid, tid);
	put64(r, time);
	put_pair(r, cpu, 0);
	put64(r, ID0);
}

/* A sample's fields up to the callchain (perf_events.c's sample_type):
 * id, ip, pid/tid, time, cpu/res, period. */
static void sample_head(struct rb *r, uint16_t misc, uint64_t id, uint64_t ip, uint32_t pid,
			uint32_t tid, uint64_t time, uint32_t cpu)
{
	begin(r, PERF_RECORD_SAMPLE, misc);
	put64(r, id);
	put64(r, ip);
	put_pair(r, pid, tid);
	put64(r, time);
	put_pair(r, cpu, 0);
	put64(r, 1); /* period */
}

/* The user registers, in mask bit order: bx, bp, sp, ip. */
static void put_uregs(struct rb *r)
{
	put64(r, PERF_SAMPLE_REGS_ABI_64);
	put64(r, 0xb0b0);
	put64(r, 0x7ffd0100);
	put64(r, 0x7ffd0000);
	put64(r, 0x401230);
}

static void user_sample(struct rb *r, uint64_t id, uint64_t dyn)
{
	sample_head(r, PERF_RECORD_MISC_USER, id, 0x401234, 100, 101, 5000000001ull, 3);
	put64(r, 4);                     /* callchain: nr */
	put64(r, (uint64_t)PERF_CONTEXT_KERNEL);
	put64(r, 0xffffffff81000010ull);
	put64(r, 0xffffffff81000020ull);
	put64(r, (uint64_t)PERF_CONTEXT_USER);
	put_uregs(r);
	put64(r, 64);                    /* stack size */
	for (int i = 0; i < 8; i++)
		put64(r, 0x1111111111111111ull * (i + 1));
	put64(r, dyn);                   /* dyn_size */
	finish(r);
}

static void test_sample_user(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	user_sample(&r, ID1, 40);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.type, USTACK_PREC_SAMPLE);
	CHECK_EQ_U64(rec.time, 5000000001ull);
	CHECK_EQ_U64(ustack_perf_record__time(copy, r.n), 5000000001ull);
	CHECK_EQ(rec.sample.event, 1);
	CHECK_EQ(rec.sample.pid, 100);
	CHECK_EQ(rec.sample.tid, 101);
	CHECK_EQ(rec.sample.cpu, 3);
	CHECK_EQ(rec.sample.kernel_mode, 0);
	CHECK_EQ_U64(rec.sample.ip, 0x401234);
	CHECK_EQ(rec.sample.nr_kips, 2); /* the context markers are dropped */
	CHECK_EQ_U64(rec.sample.kips[0], 0xffffffff81000010ull);
	CHECK_EQ_U64(rec.sample.kips[1], 0xffffffff81000020ull);
	CHECK_EQ(rec.sample.has_uregs, 1);
	CHECK_EQ_U64(rec.sample.ubp, 0x7ffd0100);
	CHECK_EQ_U64(rec.sample.ubx, 0xb0b0);
	CHECK_EQ_U64(rec.sample.usp, 0x7ffd0000);
	CHECK_EQ_U64(rec.sample.uip, 0x401230);
	CHECK_EQ_U64(rec.sample.stack_size, 40);
	CHECK(rec.sample.stack == copy + 8 + 8 * 7 + 8 * 4 + 8 * 5 + 8);
	CHECK_EQ_U64(ld_u64(rec.sample.stack), 0x1111111111111111ull);
	free(copy);
	check_prefixes(&r);

	/* dyn_size larger than the copy: clamped to the copy */
	user_sample(&r, ID0, 4096);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.sample.event, 0);
	CHECK_EQ_U64(rec.sample.stack_size, 64);
	free(copy);

	/* a sample id no event of the session has */
	user_sample(&r, 0x4242, 40);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
}

static void test_sample_kernel_thread(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	sample_head(&r, PERF_RECORD_MISC_KERNEL, ID0, 0xffffffff81000100ull, 0, 0, 77, 1);
	put64(&r, 2);
	put64(&r, (uint64_t)PERF_CONTEXT_KERNEL);
	put64(&r, 0xffffffff81000100ull);
	put64(&r, PERF_SAMPLE_REGS_ABI_NONE); /* no user registers ... */
	put64(&r, 0);                         /* ... and no stack copy */
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.sample.kernel_mode, 1);
	CHECK_EQ(rec.sample.has_uregs, 0);
	CHECK(rec.sample.stack == NULL);
	CHECK_EQ_U64(rec.sample.stack_size, 0);
	CHECK_EQ(rec.sample.nr_kips, 1);
	CHECK_EQ_U64(rec.time, 77);
	free(copy);
	check_prefixes(&r);

	/* a callchain longer than the record */
	sample_head(&r, PERF_RECORD_MISC_KERNEL, ID0, 1, 0, 0, 77, 1);
	put64(&r, 1ull << 60);
	put64(&r, PERF_SAMPLE_REGS_ABI_NONE);
	put64(&r, 0);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
}

static void test_comm(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	begin(&r, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	put_pair(&r, 200, 201);
	put_str(&r, "worker");
	end_with_id(&r, 200, 201, 123456789, 2);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.type, USTACK_PREC_COMM);
	CHECK_EQ(rec.comm.pid, 200);
	CHECK_EQ(rec.comm.tid, 201);
	CHECK_STR(rec.comm.comm, "worker");
	CHECK_EQ(rec.comm.exec, 1);
	CHECK_EQ_U64(rec.time, 123456789);
	free(copy);
	check_prefixes(&r);

	/* a name that runs into the sample_id is not a name */
	begin(&r, PERF_RECORD_COMM, 0);
	put_pair(&r, 200, 201);
	memcpy(r.b + r.n, "12345678", 8);
	r.n += 8;
	end_with_id(&r, 200, 201, 1, 2);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
}

static void mmap2(struct rb *r, int with_build_id)
{
	begin(r, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER |
	      (with_build_id ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	put_pair(r, 300, 301);
	put64(r, 0x7f0000001000ull); /* addr */
	put64(r, 0x5000);            /* len */
	put64(r, 0x2000);            /* pgoff */
	if (with_build_id) {
		r->b[r->n] = 20;     /* build_id_size, reserved */
		for (int i = 0; i < 20; i++)
			r->b[r->n + 4 + i] = (uint8_t)(0xa0 + i);
		r->n += 24;
	} else {
		put_pair(r, 8, 1);   /* maj, min */
		put64(r, 4242);      /* ino */
		put64(r, 7);         /* ino_generation */
	}
	put_pair(r, 5, 2);           /* prot, flags */
	put_str(r, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	end_with_id(r, 300, 301, 999, 1);
	finish(r);
}

static void test_mmap2(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	mmap2(&r, 0);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.type, USTACK_PREC_MMAP2);
	CHECK_EQ(rec.mmap2.pid, 300);
	CHECK_EQ(rec.mmap2.tid, 301);
	CHECK_EQ_U64(rec.mmap2.start, 0x7f0000001000ull);
	CHECK_EQ_U64(rec.mmap2.len, 0x5000);
	CHECK_EQ_U64(rec.mmap2.pgoff, 0x2000);
	CHECK_EQ(rec.mmap2.maj, 8);
	CHECK_EQ(rec.mmap2.min, 1);
	CHECK_EQ_U64(rec.mmap2.ino, 4242);
	CHECK_EQ(rec.mmap2.build_id_size, 0);
	CHECK_EQ(rec.mmap2.prot, 5);
	CHECK_EQ(rec.mmap2.flags, 2);
	CHECK_STR(rec.mmap2.filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK((const uint8_t *)rec.mmap2.filename > copy &&
	      (const uint8_t *)rec.mmap2.filename < copy + r.n);
	CHECK_EQ_U64(rec.time, 999);
	free(copy);
	check_prefixes(&r);

	mmap2(&r, 1);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.mmap2.build_id_size, 20);
	CHECK_EQ(rec.mmap2.build_id[0], 0xa0);
	CHECK_EQ(rec.mmap2.build_id[19], 0xa0 + 19);
	CHECK_EQ(rec.mmap2.maj, 0);
	CHECK_EQ_U64(rec.mmap2.ino, 0);
	CHECK_STR(rec.mmap2.filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	free(copy);
	check_prefixes(&r);

	/* a build ID size over 20 is no build ID */
	mmap2(&r, 1);
	r.b[8 + 8 + 24] = 21;
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.mmap2.build_id_size, 0);
	free(copy);
}

static void test_fork_exit(void)
{
	static const uint32_t types[] = { PERF_RECORD_FORK, PERF_RECORD_EXIT };

	for (int i = 0; i < 2; i++) {
		struct ustack_perf_record rec;
		struct rb r;
		uint8_t *copy;

		begin(&r, types[i], 0);
		put_pair(&r, 400, 399); /* pid, ppid */
		put_pair(&r, 402, 401); /* tid, ptid */
		put64(&r, 31337);       /* time */
		end_with_id(&r, 400, 402, 31337, 0);
		finish(&r);
		CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
		CHECK_EQ(rec.type, i ? USTACK_PREC_EXIT : USTACK_PREC_FORK);
		CHECK_EQ(rec.task.pid, 400);
		CHECK_EQ(rec.task.ppid, 399);
		CHECK_EQ(rec.task.tid, 402);
		CHECK_EQ(rec.task.ptid, 401);
		CHECK_EQ_U64(rec.time, 31337);
		free(copy);
		check_prefixes(&r);
	}
}

static void test_lost(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	begin(&r, PERF_RECORD_LOST, 0);
	put64(&r, ID0);
	put64(&r, 17);
	end_with_id(&r, 0, 0, 555, 6);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.type, USTACK_PREC_LOST);
	CHECK_EQ_U64(rec.lost.lost, 17);
	CHECK_EQ(rec.lost.cpu, 6);
	CHECK_EQ_U64(rec.time, 555);
	free(copy);
	check_prefixes(&r);

	begin(&r, PERF_RECORD_LOST_SAMPLES, 0);
	put64(&r, 3);
	end_with_id(&r, 0, 0, 556, 7);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.type, USTACK_PREC_LOST);
	CHECK_EQ_U64(rec.lost.lost, 3);
	CHECK_EQ(rec.lost.cpu, 7);
	CHECK_EQ_U64(rec.time, 556);
	free(copy);
	check_prefixes(&r);
}

/* Linux 6.19+ deferred user callchains: a sample whose callchain ends with
 * PERF_CONTEXT_USER_DEFERRED + cookie (kernel ips kept, the cookie taken),
 * one with immediate user ips (not kept as kernel ips), and the
 * CALLCHAIN_DEFERRED record {cookie, nr, ips[]} + sample_id */
static void test_deferred_callchain(void)
{
	const uint64_t cookie = 0x0000000500000002ull;
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	sample_head(&r, PERF_RECORD_MISC_USER, ID0, 0x401234, 100, 101, 900, 1);
	put64(&r, 5);
	put64(&r, (uint64_t)PERF_CONTEXT_KERNEL);
	put64(&r, 0xffffffff81000010ull);
	put64(&r, 0xffffffff81000020ull);
	put64(&r, USTACK_PERF_CONTEXT_USER_DEFERRED);
	put64(&r, cookie);
	put_uregs(&r);
	put64(&r, 0);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.sample.nr_kips, 2);
	CHECK_EQ_U64(rec.sample.kips[1], 0xffffffff81000020ull);
	CHECK_EQ(rec.sample.has_kcookie, 1);
	CHECK_EQ_U64(rec.sample.kcookie, cookie);
	free(copy);
	check_prefixes(&r);

	/* the marker as the last entry: its cookie is missing */
	sample_head(&r, PERF_RECORD_MISC_USER, ID0, 0x401234, 100, 101, 900, 1);
	put64(&r, 1);
	put64(&r, USTACK_PERF_CONTEXT_USER_DEFERRED);
	put64(&r, PERF_SAMPLE_REGS_ABI_NONE);
	put64(&r, 0);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);

	/* immediate user ips after PERF_CONTEXT_USER are not kernel ips */
	sample_head(&r, PERF_RECORD_MISC_KERNEL, ID0, 0xffffffff81000010ull, 100, 101, 900, 1);
	put64(&r, 5);
	put64(&r, (uint64_t)PERF_CONTEXT_KERNEL);
	put64(&r, 0xffffffff81000010ull);
	put64(&r, (uint64_t)PERF_CONTEXT_USER);
	put64(&r, 0x401230);
	put64(&r, 0x401500);
	put64(&r, PERF_SAMPLE_REGS_ABI_NONE);
	put64(&r, 0);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.sample.nr_kips, 1);
	CHECK_EQ(rec.sample.has_kcookie, 0);
	free(copy);

	/* PERF_RECORD_CALLCHAIN_DEFERRED */
	begin(&r, USTACK_PERF_RECORD_CALLCHAIN_DEFERRED, PERF_RECORD_MISC_USER);
	put64(&r, cookie);
	put64(&r, 3);
	put64(&r, 0x401230);
	put64(&r, 0x401500);
	put64(&r, 0x401600);
	end_with_id(&r, 100, 101, 950, 1);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.type, USTACK_PREC_DEFERRED);
	CHECK_EQ_U64(rec.deferred.cookie, cookie);
	CHECK_EQ(rec.deferred.nr, 3);
	CHECK_EQ_U64(rec.deferred.ips[0], 0x401230);
	CHECK_EQ_U64(rec.deferred.ips[2], 0x401600);
	CHECK_EQ(rec.deferred.pid, 100);
	CHECK_EQ(rec.deferred.tid, 101);
	CHECK_EQ(rec.deferred.cpu, 1);
	CHECK_EQ_U64(rec.time, 950);
	free(copy);
	check_prefixes(&r);

	/* nr larger than the record */
	begin(&r, USTACK_PERF_RECORD_CALLCHAIN_DEFERRED, PERF_RECORD_MISC_USER);
	put64(&r, cookie);
	put64(&r, 1000);
	put64(&r, 0x401230);
	end_with_id(&r, 100, 101, 950, 1);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
}

/* A probe's sample (event 1 in regs_events): the 17 general-purpose
 * registers in perf's mask order, the unwinder's four taken from them. */
static void test_sample_gpregs(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	parser.regs_events = 1u << 1;
	sample_head(&r, PERF_RECORD_MISC_USER, ID1, 0x401234, 100, 101, 6000000000ull, 1);
	put64(&r, 0); /* no callchain */
	put64(&r, PERF_SAMPLE_REGS_ABI_64);
	for (int i = 0; i < USTACK_PERF_NR_GPREGS; i++)
		put64(&r, 0x1000 + i);
	put64(&r, 16);
	put64(&r, 0xaaaa);
	put64(&r, 0xbbbb);
	put64(&r, 16);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.sample.has_gpregs, 1);
	CHECK_EQ_U64(rec.sample.gpregs[USTACK_PERF_AX], 0x1000);
	CHECK_EQ_U64(rec.sample.gpregs[USTACK_PERF_DI], 0x1005);
	CHECK_EQ_U64(rec.sample.gpregs[USTACK_PERF_R8], 0x1009);
	CHECK_EQ_U64(rec.sample.gpregs[USTACK_PERF_R15], 0x1010);
	CHECK_EQ_U64(rec.sample.ubx, 0x1001);
	CHECK_EQ_U64(rec.sample.ubp, 0x1006);
	CHECK_EQ_U64(rec.sample.usp, 0x1007);
	CHECK_EQ_U64(rec.sample.uip, 0x1008);
	CHECK_EQ_U64(rec.sample.stack_size, 16);
	CHECK_EQ_U64(ld_u64(rec.sample.stack), 0xaaaa);
	free(copy);
	check_prefixes(&r);
	/* event 0 keeps the four-register layout */
	user_sample(&r, ID0, 40);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	free(copy);
	CHECK_EQ(rec.sample.has_gpregs, 0);
	CHECK_EQ_U64(rec.sample.uip, 0x401230);
	parser.regs_events = 0;
}

/* THROTTLE and UNTHROTTLE: time, id, stream_id, then the sample_id. */
static void test_throttle(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	begin(&r, PERF_RECORD_THROTTLE, 0);
	put64(&r, 7000000000ull);
	put64(&r, ID1);
	put64(&r, ID1);
	end_with_id(&r, 0, 0, 7000000000ull, 1);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	free(copy);
	CHECK_EQ(rec.type, USTACK_PREC_THROTTLE);
	CHECK_EQ(rec.throttle.event, 1);
	CHECK_EQ(rec.throttle.on, 1);
	CHECK_EQ_U64(rec.time, 7000000000ull);
	check_prefixes(&r);
	r.b[0] = PERF_RECORD_UNTHROTTLE;
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	free(copy);
	CHECK_EQ(rec.throttle.on, 0);
	/* an id no event has: parsed, its event unknown */
	memcpy(r.b + 16, &(uint64_t){ 0x4242 }, 8);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	free(copy);
	CHECK_EQ(rec.throttle.event, -1);
}

static void test_other_types(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	/* PERF_RECORD_READ: not ours, skipped, however short */
	begin(&r, PERF_RECORD_READ, 0);
	put64(&r, 1);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -ENOENT);
	free(copy);
	CHECK_EQ(parse(&r, 8, &rec, &copy), -ENOENT);
	free(copy);
	/* shorter than a header */
	CHECK_EQ(parse(&r, 7, &rec, &copy), -EBADMSG);
	free(copy);
	CHECK_EQ_U64(ustack_perf_record__time(r.b, 7), 0);
}

int main(void)
{
	ustack_perf_parser__init(&parser, event_of, NULL);
	RUN(test_sample_user);
	RUN(test_sample_kernel_thread);
	RUN(test_comm);
	RUN(test_mmap2);
	RUN(test_fork_exit);
	RUN(test_lost);
	RUN(test_other_types);
	RUN(test_sample_gpregs);
	RUN(test_throttle);
	RUN(test_deferred_callchain);
	ustack_perf_parser__fini(&parser);
	TEST_EXIT();
}
