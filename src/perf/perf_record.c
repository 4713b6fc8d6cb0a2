// SPDX-License-Identifier: MIT
/* Parser of perf ring-buffer records (perf_record.h). */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "perf/perf_record.h"

/* sample_id_all trailer: pid/tid, time, cpu, identifier */
#define SAMPLE_ID_SIZE 32u

void ustack_perf_parser__init(struct ustack_perf_parser *p, ustack_perf_event_of_id_fn event_of_id,
			      void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->event_of_id = event_of_id;
	p->ctx = ctx;
}

void ustack_perf_parser__fini(struct ustack_perf_parser *p)
{
	free(p->kips);
	p->kips = NULL;
	p->cap_kips = 0;
}

/* Where the time is: first field of a sample after IDENTIFIER, IP, TID;
 * for other records inside the trailing sample_id (TID, TIME, CPU,
 * IDENTIFIER). */
int64_t ustack_perf_record__time_offset(uint32_t type, uint32_t len)
{
	/* a sample: header, identifier, ip, pid/tid, then time */
	if (type == PERF_RECORD_SAMPLE)
		return len >= 8 + 8 * 4 ? 8 + 8 + 8 + 8 : -1;
	/* sample_id: pid/tid (8), time (8), cpu (8), identifier (8) at the end */
	return len >= 8 + 32 ? (int64_t)len - 24 : -1;
}

/* Time of a record; 0 when it has none (sorted first). */
uint64_t ustack_perf_record__time(const uint8_t *r, uint32_t len)
{
	const struct perf_event_header *h = (const void *)r;
	int64_t off;

	if (len < sizeof(*h))
		return 0;
	off = ustack_perf_record__time_offset(h->type, len);
	return off < 0 ? 0 : ld_u64(r + off);
}

/* A bounds-checked cursor over one record. */
struct cur {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t take64(struct cur *c)
{
	uint64_t v;

	if (c->end - c->p < 8) {
		c->bad = 1;
		return 0;
	}
	v = ld_u64(c->p);
	c->p += 8;
	return v;
}

static const uint8_t *take(struct cur *c, uint64_t n)
{
	const uint8_t *p = c->p;

	if ((uint64_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	return p;
}

static int grow_kips(struct ustack_perf_parser *p, uint64_t need)
{
	uint64_t n = p->cap_kips ? p->cap_kips : 64;
	uint64_t *q;

	if (need <= p->cap_kips)
		return 0;
	while (n < need)
		n *= 2;
	if (n > UINT32_MAX)
		return -ENOMEM;
	q = realloc(p->kips, n * sizeof(*q));
	if (!q)
		return -ENOMEM;
	p->kips = q;
	p->cap_kips = (uint32_t)n;
	return 0;
}

static int parse_sample(struct ustack_perf_parser *p, const uint8_t *r, uint32_t len,
			struct ustack_perf_record *out)
{
	const struct perf_event_header *h = (const void *)r;
	struct ustack_perf_sample *sm = &out->sample;
	struct cur c = { r + sizeof(*h), r + len, 0 };
	uint64_t v, nr, abi, size;

	out->type = USTACK_PREC_SAMPLE;
	v = take64(&c);
	sm->event = c.bad ? -1 : p->event_of_id(p->ctx, v);
	sm->ip = take64(&c);
	v = take64(&c);
	sm->pid = (uint32_t)v;
	sm->tid = (uint32_t)(v >> 32);
	out->time = take64(&c);
	sm->cpu = (uint32_t)take64(&c);
	take64(&c); /* period */
	nr = take64(&c);
	if (c.bad || nr > (uint64_t)(c.end - c.p) / 8 || sm->event < 0)
		return -EBADMSG;
	if (grow_kips(p, nr))
		return -ENOMEM;
	sm->nr_kips = 0;
	for (uint64_t i = 0, in_user = 0; i < nr; i++) {
		uint64_t ip = take64(&c);

		if (ip == USTACK_PERF_CONTEXT_USER_DEFERRED) {
			/* the user part comes later, in a CALLCHAIN_DEFERRED
			 * record with this cookie */
			if (++i == nr)
				return -EBADMSG;
			sm->kcookie = take64(&c);
			sm->has_kcookie = 1;
			continue;
		}
		if (ustack_callchain_is_marker(ip)) {
			/* PERF_CONTEXT_KERNEL / _USER markers; user ips (a
			 * deferral the kernel could not make) are not kept */
			in_user = ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (!in_user)
			p->kips[sm->nr_kips++] = ip;
	}
	sm->kips = p->kips;
	if (sm->event < 64 && (p->raw_events >> sm->event & 1)) {
		/* u32 size, then size bytes: the kernel pads the two to whole
		 * u64s, so anything else was cut or forged */
		const uint8_t *q = take(&c, 4);
		uint32_t n = q ? ld_u32(q) : 0;

		if (!q || (4 + (uint64_t)n) % 8 || !(sm->raw = take(&c, n)))
			return -EBADMSG;
		sm->raw_size = n;
	}
	abi = take64(&c);
	sm->has_uregs = abi != PERF_SAMPLE_REGS_ABI_NONE;
	if (sm->has_uregs && sm->event < 64 && (p->regs_events >> sm->event & 1)) {
		/* a probe's: every general-purpose register, in mask bit order */
		for (int i = 0; i < USTACK_PERF_NR_GPREGS; i++)
			sm->gpregs[i] = take64(&c);
		sm->has_gpregs = 1;
		sm->ubx = sm->gpregs[USTACK_PERF_BX];
		sm->ubp = sm->gpregs[USTACK_PERF_BP];
		sm->usp = sm->gpregs[USTACK_PERF_SP];
		sm->uip = sm->gpregs[USTACK_PERF_IP];
	} else if (sm->has_uregs) {
		/* registers in mask bit order: bx, bp, sp, ip */
		sm->ubx = take64(&c);
		sm->ubp = take64(&c);
		sm->usp = take64(&c);
		sm->uip = take64(&c);
	}
	size = take64(&c);
	sm->stack = NULL;
	sm->stack_size = 0;
	if (size) {
		const uint8_t *data = take(&c, size);
		uint64_t dyn = take64(&c);

		sm->stack = data;
		sm->stack_size = dyn <= size ? dyn : size;
	}
	if (c.bad)
		return -EBADMSG;
	sm->kernel_mode = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	return 0;
}

static int parse_comm(struct ustack_perf_parser *p, const struct perf_event_header *h,
		      struct cur c, struct ustack_perf_record *out)
{
	const char *name;
	size_t max;
	uint64_t v;

	out->type = USTACK_PREC_COMM;
	v = take64(&c);
	out->comm.pid = (uint32_t)v;
	out->comm.tid = (uint32_t)(v >> 32);
	name = (const char *)c.p;
	max = c.end - c.p;
	if (c.bad || !memchr(name, 0, max))
		return -EBADMSG;
	snprintf(p->comm, sizeof(p->comm), "%s", name);
	out->comm.comm = p->comm;
	out->comm.exec = !!(h->misc & PERF_RECORD_MISC_COMM_EXEC);
	return 0;
}

static int parse_mmap2(const struct perf_event_header *h, struct cur c,
		       struct ustack_perf_record *out)
{
	const char *name;
	const uint8_t *q;
	uint64_t v;

	out->type = USTACK_PREC_MMAP2;
	v = take64(&c);
	out->mmap2.pid = (uint32_t)v;
	out->mmap2.tid = (uint32_t)(v >> 32);
	out->mmap2.start = take64(&c);
	out->mmap2.len = take64(&c);
	out->mmap2.pgoff = take64(&c);
	q = take(&c, 24);
	if (c.bad)
		return -EBADMSG;
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		/* u8 build_id_size, u8 __reserved_1, u16 __reserved_2, u8 build_id[20] */
		out->mmap2.build_id_size = q[0] <= 20 ? q[0] : 0;
		memcpy(out->mmap2.build_id, q + 4, 20);
	} else {
		out->mmap2.maj = ld_u32(q);
		out->mmap2.min = ld_u32(q + 4);
		out->mmap2.ino = ld_u64(q + 8);
	}
	v = take64(&c);
	out->mmap2.prot = (uint32_t)v;
	out->mmap2.flags = (uint32_t)(v >> 32);
	name = (const char *)c.p;
	if (c.bad || !memchr(name, 0, c.end - c.p))
		return -EBADMSG;
	out->mmap2.filename = name;
	return 0;
}

/* PERF_RECORD_FORK and PERF_RECORD_EXIT */
static int parse_task(const struct perf_event_header *h, struct cur c,
		      struct ustack_perf_record *out)
{
	uint64_t v;

	out->type = h->type == PERF_RECORD_FORK ? USTACK_PREC_FORK : USTACK_PREC_EXIT;
	v = take64(&c);
	out->task.pid = (uint32_t)v;
	out->task.ppid = (uint32_t)(v >> 32);
	v = take64(&c);
	out->task.tid = (uint32_t)v;
	out->task.ptid = (uint32_t)(v >> 32);
	out->time = take64(&c);
	return c.bad ? -EBADMSG : 0;
}

static int parse_deferred(struct ustack_perf_parser *p, const uint8_t *r, uint32_t len,
			  struct cur c, struct ustack_perf_record *out)
{
	/* cookie, nr, ips[nr]; sample_id: pid/tid at len - 32, cpu at len - 16 */
	uint64_t nr, v;

	out->type = USTACK_PREC_DEFERRED;
	out->deferred.cookie = take64(&c);
	nr = take64(&c);
	if (c.bad || nr > (uint64_t)(c.end - c.p) / 8)
		return -EBADMSG;
	if (grow_kips(p, nr ? nr : 1))
		return -ENOMEM;
	out->deferred.nr = 0;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = take64(&c);

		if (!ustack_callchain_is_marker(ip))
			p->kips[out->deferred.nr++] = ip;
	}
	out->deferred.ips = p->kips;
	v = ld_u64(r + len - SAMPLE_ID_SIZE);
	out->deferred.pid = (uint32_t)v;
	out->deferred.tid = (uint32_t)(v >> 32);
	out->deferred.cpu = ld_u32(r + len - 16);
	return c.bad ? -EBADMSG : 0;
}

/* PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES */
static int parse_lost(const struct perf_event_header *h, const uint8_t *r, uint32_t len,
		      struct cur c, struct ustack_perf_record *out)
{
	out->type = USTACK_PREC_LOST;
	if (h->type == PERF_RECORD_LOST)
		take64(&c); /* id */
	out->lost.lost = take64(&c);
	out->lost.cpu = ld_u32(r + len - 16); /* sample_id: ... cpu at len - 16 */
	return c.bad ? -EBADMSG : 0;
}

/* PERF_RECORD_SWITCH (header, sample_id) and PERF_RECORD_SWITCH_CPU_WIDE
 * (next_prev_pid, next_prev_tid, sample_id): the task is the sample_id's,
 * the one switched in or out */
static int parse_switch(const struct perf_event_header *h, const uint8_t *r, uint32_t len,
			struct cur c, struct ustack_perf_record *out)
{
	uint64_t v = ld_u64(r + len - SAMPLE_ID_SIZE);

	out->type = USTACK_PREC_SWITCH;
	if (h->type == PERF_RECORD_SWITCH_CPU_WIDE)
		take64(&c);
	if (c.bad || c.p != c.end)
		return -EBADMSG;
	out->sw.pid = (uint32_t)v;
	out->sw.tid = (uint32_t)(v >> 32);
	out->sw.cpu = ld_u32(r + len - 16);
	out->sw.out = !!(h->misc & PERF_RECORD_MISC_SWITCH_OUT);
	out->sw.preempt = out->sw.out && (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	return 0;
}

/* PERF_RECORD_THROTTLE and _UNTHROTTLE: time, id, stream_id (the event's
 * id, then the sample_id) */
static int parse_throttle(struct ustack_perf_parser *p, const struct perf_event_header *h,
			  struct cur c, struct ustack_perf_record *out)
{
	uint64_t id;

	out->type = USTACK_PREC_THROTTLE;
	take64(&c);
	id = take64(&c);
	take64(&c);
	if (c.bad || c.p != c.end)
		return -EBADMSG;
	out->throttle.event = p->event_of_id(p->ctx, id);
	out->throttle.on = h->type == PERF_RECORD_THROTTLE;
	return 0;
}

int ustack_perf_record__parse(struct ustack_perf_parser *p, const uint8_t *r, uint32_t len,
			      struct ustack_perf_record *out)
{
	const struct perf_event_header *h = (const void *)r;
	struct cur c;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*h))
		return -EBADMSG;
	switch (h->type) {
	case PERF_RECORD_SAMPLE: case PERF_RECORD_COMM: case PERF_RECORD_MMAP2:
	case PERF_RECORD_FORK: case PERF_RECORD_EXIT: case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: case USTACK_PERF_RECORD_CALLCHAIN_DEFERRED:
	case PERF_RECORD_SWITCH: case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_THROTTLE: case PERF_RECORD_UNTHROTTLE:
		break;
	default:
		return -ENOENT; /* not ours: skip */
	}
	/* The kernel writes whole u64s: a record of another length was cut. */
	if (len % 8)
		return -EBADMSG;
	out->time = ustack_perf_record__time(r, len);
	if (h->type == PERF_RECORD_SAMPLE)
		return parse_sample(p, r, len, out);
	/* Every other record ends with the sample_id (sample_id_all): without
	 * it the time would come from the record's own fields. Those end
	 * where the sample_id begins. */
	if (len < sizeof(*h) + SAMPLE_ID_SIZE)
		return -EBADMSG;
	c = (struct cur){ r + sizeof(*h), r + len - SAMPLE_ID_SIZE, 0 };
	switch (h->type) {
	case PERF_RECORD_COMM:
		return parse_comm(p, h, c, out);
	case PERF_RECORD_MMAP2:
		return parse_mmap2(h, c, out);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return parse_task(h, c, out);
	case USTACK_PERF_RECORD_CALLCHAIN_DEFERRED:
		return parse_deferred(p, r, len, c, out);
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return parse_switch(h, r, len, c, out);
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		return parse_throttle(p, h, c, out);
	default: /* PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES */
		return parse_lost(h, r, len, c, out);
	}
}

/* "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;": the name
 * is the last word before ';', after any array suffix is cut */
static int field_line(const char *line, size_t n, const char *field, uint32_t *off,
		      uint32_t *size)
{
	char buf[256], *semi, *name, *br;
	unsigned long o, sz;
	const char *q;

	if (n >= sizeof(buf))
		return -ENOENT;
	memcpy(buf, line, n);
	buf[n] = 0;
	if (!(q = strstr(buf, "field:")) || !(semi = strchr(q, ';')))
		return -ENOENT;
	*semi = 0;
	if ((br = strchr(q, '[')))
		*br = 0;
	name = strrchr(q, ' ');
	if (!name || strcmp(name + 1, field))
		return -ENOENT;
	q = semi + 1;
	if (!(q = strstr(q, "offset:")) || sscanf(q, "offset:%lu;", &o) != 1 ||
	    !(q = strstr(q, "size:")) || sscanf(q, "size:%lu;", &sz) != 1 ||
	    o > 65536 || sz > 65536 - o || !sz)
		return -EBADMSG;
	*off = (uint32_t)o;
	*size = (uint32_t)sz;
	return 0;
}

int ustack_perf_format_field(const char *text, const char *field, uint32_t *off, uint32_t *size)
{
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);
		int ret = field_line(text, n, field, off, size);

		if (ret != -ENOENT)
			return ret;
		text += n + (nl != NULL);
	}
	return -ENOENT;
}
