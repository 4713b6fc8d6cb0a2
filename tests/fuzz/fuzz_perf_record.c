// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the perf ring-record parser (src/perf/perf_record.c).
 * The input is a run of records as they leave a ring buffer, each cut at
 * its header's size (a size that does not fit makes the rest one record),
 * parsed one after the other by one parser, in the session's sample_type
 * layout. Each record is parsed from an exactly-sized heap copy so that any
 * read past its end is caught. Sample ids 0x1234 and 0x9999 (and a few
 * others) are events 0..4, event 3 (0xdeadbeef) with PERF_SAMPLE_RAW,
 * event 4 (0xfeedface) a probe's, with every general-purpose register;
 * tests/fuzz/make-corpus-perf_record.py writes the seed corpus.
 * Invariants after a successful parse: every pointer and length lies inside
 * the record (and a name ends before its sample_id), the callchain holds no
 * context marker and no more ips than fit, the time is the one the sorter
 * saw; errors are only -ENOENT (other record types) and -EBADMSG.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "perf/perf_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint64_t ids[] = { 1, 0x1234, 0x9999, 0xdeadbeef, 0xfeedface }; /* sorted */

static int event_of(void *ctx, uint64_t id)
{
	size_t i = ustack_count_le_u64(ids, ARRAY_SIZE(ids), sizeof(ids[0]), 0, id);

	(void)ctx;
	return i && ids[i - 1] == id ? (int)i - 1 : -1;
}

static int ours(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_SAMPLE: case PERF_RECORD_COMM: case PERF_RECORD_MMAP2:
	case PERF_RECORD_FORK: case PERF_RECORD_EXIT: case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: case USTACK_PERF_RECORD_CALLCHAIN_DEFERRED:
	case PERF_RECORD_SWITCH: case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_THROTTLE: case PERF_RECORD_UNTHROTTLE:
		return 1;
	}
	return 0;
}

/* [p, p + n) inside [lo, hi) */
static int inside(const void *p, uint64_t n, const uint8_t *lo, const uint8_t *hi)
{
	const uint8_t *q = p;

	return q >= lo && q <= hi && n <= (uint64_t)(hi - q);
}

static void check(const struct ustack_perf_parser *p, const uint8_t *r, uint32_t len, int ret,
		  const struct ustack_perf_record *rec)
{
	const struct perf_event_header *h = (const void *)r;
	const uint8_t *end = r + len, *names_end = len >= 40 ? end - 32 : r;
	uint64_t t = ustack_perf_record__time(r, len);

	if (ret == -ENOENT) {
		if (len < 8 || ours(h->type))
			abort();
		return;
	}
	if (ret == -EBADMSG)
		return;
	if (ret != 0 || len < 8 || len % 8 || !ours(h->type))
		abort();
	switch (rec->type) {
	case USTACK_PREC_SAMPLE: {
		const struct ustack_perf_sample *s = &rec->sample;

		if (h->type != PERF_RECORD_SAMPLE || rec->time != t || t != ld_u64(r + 32))
			abort();
		if (s->event < 0 || s->event >= (int)ARRAY_SIZE(ids) || s->pid != ld_u32(r + 24) ||
		    s->tid != ld_u32(r + 28))
			abort();
		/* header, 7 fixed fields, abi, stack size */
		if (s->nr_kips > (len - 8 - 7 * 8 - 16) / 8 || (s->nr_kips && s->kips != p->kips))
			abort();
		for (uint32_t i = 0; i < s->nr_kips; i++)
			if (s->kips[i] >= (uint64_t)-4095)
				abort();
		if (s->stack ? !inside(s->stack, s->stack_size, r + 8, end) : s->stack_size)
			abort();
		/* raw data only for event 3, inside, whole u64s with its size */
		if (s->raw ? s->event != 3 || !inside(s->raw, s->raw_size, r + 8, end) ||
			     (4 + (uint64_t)s->raw_size) % 8 || ld_u32(s->raw - 4) != s->raw_size
			   : s->raw_size)
			abort();
		if (s->kernel_mode != ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL))
			abort();
		/* every register only for event 4, and the four the unwinder
		 * takes are among them */
		if (s->has_gpregs ? s->event != 4 || !s->has_uregs ||
				    s->uip != s->gpregs[USTACK_PERF_IP] ||
				    s->usp != s->gpregs[USTACK_PERF_SP] ||
				    s->ubp != s->gpregs[USTACK_PERF_BP] ||
				    s->ubx != s->gpregs[USTACK_PERF_BX]
				  : s->event == 4 && s->has_uregs)
			abort();
		break;
	}
	case USTACK_PREC_THROTTLE:
		/* time, id, stream_id, sample_id */
		if ((h->type != PERF_RECORD_THROTTLE && h->type != PERF_RECORD_UNTHROTTLE) ||
		    len != 8 + 24 + 32 || rec->time != t ||
		    rec->throttle.on != (h->type == PERF_RECORD_THROTTLE) ||
		    rec->throttle.event != event_of(NULL, ld_u64(r + 16)))
			abort();
		break;
	case USTACK_PREC_COMM:
		if (h->type != PERF_RECORD_COMM || rec->time != t || !rec->comm.comm ||
		    !memchr(rec->comm.comm, 0, sizeof(p->comm)) ||
		    !memchr(r + 16, 0, (size_t)(names_end - r - 16)) ||
		    strncmp(rec->comm.comm, (const char *)r + 16, sizeof(p->comm) - 1))
			abort();
		break;
	case USTACK_PREC_MMAP2: {
		const char *f = rec->mmap2.filename;

		if (h->type != PERF_RECORD_MMAP2 || rec->time != t || !f ||
		    !inside(f, 1, r + 8 + 64, names_end) ||
		    !memchr(f, 0, (size_t)(names_end - (const uint8_t *)f)) ||
		    rec->mmap2.build_id_size > 20 ||
		    (rec->mmap2.build_id_size && !(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)))
			abort();
		break;
	}
	case USTACK_PREC_FORK:
	case USTACK_PREC_EXIT:
		if (h->type != (rec->type == USTACK_PREC_FORK ? PERF_RECORD_FORK : PERF_RECORD_EXIT) ||
		    len < 8 + 24 + 32 || rec->time != ld_u64(r + 24))
			abort();
		break;
	case USTACK_PREC_DEFERRED: {
		/* header, cookie, nr, ips[nr], sample_id (32): at most that many
		 * pcs, none of them a context marker, pid/tid/cpu from the
		 * sample_id */
		uint64_t v = ld_u64(end - 32);

		if (h->type != USTACK_PERF_RECORD_CALLCHAIN_DEFERRED || rec->time != t || len < 8 + 16 + 32 ||
		    rec->deferred.nr > (len - 8 - 16 - 32) / 8 ||
		    (rec->deferred.nr && rec->deferred.ips != p->kips) ||
		    rec->deferred.pid != (uint32_t)v || rec->deferred.tid != (uint32_t)(v >> 32) ||
		    rec->deferred.cpu != ld_u32(end - 16))
			abort();
		for (uint32_t i = 0; i < rec->deferred.nr; i++)
			if (ustack_callchain_is_marker(rec->deferred.ips[i]))
				abort();
		break;
	}
	case USTACK_PREC_SWITCH: {
		/* header, [next_prev_pid/tid], sample_id: nothing else */
		uint64_t v = ld_u64(end - 32);

		if ((h->type != PERF_RECORD_SWITCH && h->type != PERF_RECORD_SWITCH_CPU_WIDE) ||
		    len != 8 + 32 + (h->type == PERF_RECORD_SWITCH_CPU_WIDE ? 8u : 0u) ||
		    rec->time != t || rec->sw.pid != (uint32_t)v || rec->sw.tid != (uint32_t)(v >> 32) ||
		    rec->sw.cpu != ld_u32(end - 16) ||
		    rec->sw.out != !!(h->misc & PERF_RECORD_MISC_SWITCH_OUT) ||
		    (rec->sw.preempt && !rec->sw.out))
			abort();
		break;
	}
	case USTACK_PREC_LOST:
		if ((h->type != PERF_RECORD_LOST && h->type != PERF_RECORD_LOST_SAMPLES) ||
		    rec->time != t || len < 8 + 8 + 32 || rec->lost.cpu != ld_u32(end - 16))
			abort();
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ustack_perf_parser p;
	size_t pos = 0;

	ustack_perf_parser__init(&p, event_of, NULL);
	p.raw_events = 1u << 3;
	p.regs_events = 1u << 4;
	while (pos < size) {
		struct ustack_perf_record rec;
		size_t left = size - pos, len = left;
		uint8_t *r;
		int ret;

		if (left >= 8) {
			uint16_t hs = ld_u16(data + pos + 6);

			if (hs >= 8 && hs <= left)
				len = hs;
		}
		if (len > UINT32_MAX)
			break;
		r = malloc(len);
		if (!r)
			break;
		memcpy(r, data + pos, len);
		ret = ustack_perf_record__parse(&p, r, (uint32_t)len, &rec);
		check(&p, r, (uint32_t)len, ret, &rec);
		free(r);
		pos += len;
	}
	ustack_perf_parser__fini(&p);
	return 0;
}
