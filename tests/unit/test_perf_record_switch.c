// SPDX-License-Identifier: MIT
/* The perf record parser's off-CPU parts (src/perf/perf_record.c):
 * PERF_RECORD_SWITCH and _CPU_WIDE, samples with PERF_SAMPLE_RAW (the
 * sched_switch tracepoint's fields) for the events that ask for it, and a
 * tracepoint's format file, on records built byte by byte as the kernel
 * lays them out (include/uapi/linux/perf_event.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#define ID0 0x1234u /* event 0: no raw data */
#define ID1 0x9999u /* event 1: PERF_SAMPLE_RAW */
#include "perf_rb.h"

static void switch_rec(struct rb *r, uint32_t type, uint16_t misc, uint32_t pid, uint32_t tid,
		       uint64_t time, uint32_t cpu)
{
	begin(r, type, misc);
	if (type == PERF_RECORD_SWITCH_CPU_WIDE)
		put_pair(r, 77, 78); /* next_prev_pid, next_prev_tid */
	put_pair(r, pid, tid);   /* sample_id: the task switched */
	put64(r, time);
	put_pair(r, cpu, 0);
	put64(r, ID0);
	finish(r);
}

static void test_switch(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	/* a switch-in, per task */
	switch_rec(&r, PERF_RECORD_SWITCH, 0, 10, 11, 7000000123ull, 1);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	free(copy);
	CHECK_EQ(rec.type, USTACK_PREC_SWITCH);
	CHECK_EQ_U64(rec.time, 7000000123ull);
	CHECK_EQ(rec.sw.pid, 10);
	CHECK_EQ(rec.sw.tid, 11);
	CHECK_EQ(rec.sw.cpu, 1);
	CHECK_EQ(rec.sw.out, 0);
	CHECK_EQ(rec.sw.preempt, 0);
	check_prefixes(&r);

	/* a switch-out while runnable, CPU-wide: the task is the sample_id's,
	 * not next_prev_tid */
	switch_rec(&r, PERF_RECORD_SWITCH_CPU_WIDE,
		   PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, 20, 21,
		   8000000000ull, 0);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	free(copy);
	CHECK_EQ(rec.type, USTACK_PREC_SWITCH);
	CHECK_EQ(rec.sw.tid, 21);
	CHECK_EQ(rec.sw.pid, 20);
	CHECK_EQ(rec.sw.cpu, 0);
	CHECK_EQ(rec.sw.out, 1);
	CHECK_EQ(rec.sw.preempt, 1);
	CHECK_EQ_U64(rec.time, 8000000000ull);
	check_prefixes(&r);

	/* the preempt bit means nothing on a switch-in */
	switch_rec(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, 1, 2, 3, 0);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	free(copy);
	CHECK_EQ(rec.sw.out, 0);
	CHECK_EQ(rec.sw.preempt, 0);

	/* a SWITCH with a body it does not have: forged */
	begin(&r, PERF_RECORD_SWITCH, 0);
	put64(&r, 5);
	put_pair(&r, 1, 2);
	put64(&r, 3);
	put_pair(&r, 0, 0);
	put64(&r, ID0);
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
}

/* A sched_switch sample of event @id: raw fields of @raw_n bytes (with the
 * u32 size before them, padded to u64s as the kernel does). */
static void raw_sample(struct rb *r, uint64_t id, uint32_t raw_n, uint32_t size_field)
{
	uint8_t raw[64];

	begin(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
	put64(r, id);
	put64(r, 0xffffffff81000100ull);   /* ip */
	put_pair(r, 300, 301);
	put64(r, 9000000000ull);           /* time */
	put_pair(r, 1, 0);
	put64(r, 1);                       /* period */
	put64(r, 2);                       /* callchain */
	put64(r, (uint64_t)PERF_CONTEXT_KERNEL);
	put64(r, 0xffffffff81000200ull);
	if (id == ID1) {
		for (uint32_t i = 0; i < sizeof(raw); i++)
			raw[i] = (uint8_t)(0xa0 + i);
		put(r, &size_field, 4);
		put(r, raw, raw_n);
	}
	put64(r, PERF_SAMPLE_REGS_ABI_64); /* bx, bp, sp, ip */
	put64(r, 0xb0b0);
	put64(r, 0x7ffd0100);
	put64(r, 0x7ffd0000);
	put64(r, 0x401230);
	put64(r, 16);                      /* stack copy */
	put64(r, 0x5151515151515151ull);
	put64(r, 0x6262626262626262ull);
	put64(r, 16);
	finish(r);
}

static void test_sample_raw(void)
{
	struct ustack_perf_record rec;
	struct rb r;
	uint8_t *copy;

	parser.raw_events = 1u << 1;
	raw_sample(&r, ID1, 60, 60);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK_EQ(rec.sample.event, 1);
	CHECK_EQ(rec.sample.raw_size, 60);
	CHECK(rec.sample.raw == copy + 8 + 7 * 8 + 2 * 8 + 4);
	CHECK_EQ(rec.sample.raw[0], 0xa0);
	CHECK_EQ(rec.sample.raw[59], 0xa0 + 59);
	/* what follows the raw data is where it should be */
	CHECK_EQ(rec.sample.nr_kips, 1);
	CHECK_EQ_U64(rec.sample.ubx, 0xb0b0);
	CHECK_EQ_U64(rec.sample.uip, 0x401230);
	CHECK_EQ_U64(rec.sample.stack_size, 16);
	CHECK_EQ_U64(ld_u64(rec.sample.stack + 8), 0x6262626262626262ull);
	CHECK_EQ(rec.sample.kernel_mode, 1);
	free(copy);
	check_prefixes(&r);

	/* event 0 has no raw data in the same session */
	raw_sample(&r, ID0, 0, 0);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), 0);
	CHECK(rec.sample.raw == NULL);
	CHECK_EQ(rec.sample.raw_size, 0);
	CHECK_EQ_U64(rec.sample.uip, 0x401230);
	free(copy);

	/* a raw size the kernel never writes (u32 + data not whole u64s) */
	raw_sample(&r, ID1, 60, 56);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
	/* the same with whole u64s in all: read on, everything after it
	 * would sit 4 bytes off */
	raw_sample(&r, ID1, 56, 56);
	r.n += 4;
	finish(&r);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
	/* a raw size past the record */
	raw_sample(&r, ID1, 60, 60 + 512);
	CHECK_EQ(parse(&r, r.n, &rec, &copy), -EBADMSG);
	free(copy);
	parser.raw_events = 0;
}

/* Linux 6.18's, as tracefs prints it */
static const char sched_switch_format[] =
	"name: sched_switch\n"
	"ID: 372\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"prev_comm=%s prev_pid=%d prev_state=%s\", REC->prev_comm\n";

static void test_format_field(void)
{
	uint32_t off = 0, size = 0;

	CHECK_EQ(ustack_perf_format_field(sched_switch_format, "prev_state", &off, &size), 0);
	CHECK_EQ(off, 32);
	CHECK_EQ(size, 8);
	CHECK_EQ(ustack_perf_format_field(sched_switch_format, "prev_pid", &off, &size), 0);
	CHECK_EQ(off, 24);
	CHECK_EQ(size, 4);
	/* an array's name without its brackets; "pid" is no field's whole name */
	CHECK_EQ(ustack_perf_format_field(sched_switch_format, "next_comm", &off, &size), 0);
	CHECK_EQ(off, 40);
	CHECK_EQ(size, 16);
	CHECK_EQ(ustack_perf_format_field(sched_switch_format, "pid", &off, &size), -ENOENT);
	CHECK_EQ(ustack_perf_format_field(sched_switch_format, "prev", &off, &size), -ENOENT);
	CHECK_EQ(ustack_perf_format_field("", "prev_pid", &off, &size), -ENOENT);
	/* malformed: no offset, a size of 0, past 64 KiB */
	CHECK_EQ(ustack_perf_format_field("\tfield:long x;\tsize:8;\n", "x", &off, &size), -EBADMSG);
	CHECK_EQ(ustack_perf_format_field("\tfield:long x;\toffset:8;\tsize:0;\n", "x", &off, &size),
		 -EBADMSG);
	CHECK_EQ(ustack_perf_format_field("\tfield:long x;\toffset:65530;\tsize:8;\n", "x", &off,
					  &size), -EBADMSG);
}

int main(void)
{
	ustack_perf_parser__init(&parser, event_of, NULL);
	RUN(test_switch);
	RUN(test_sample_raw);
	RUN(test_format_field);
	ustack_perf_parser__fini(&parser);
	TEST_EXIT();
}
