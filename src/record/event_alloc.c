// SPDX-License-Identifier: MIT
/*
 * Allocation profiling (record --alloc): "alloc" is every allocation the
 * byte sampling kept, weighing the bytes it stands for; "free" the free of
 * such an allocation (its address only, no stacks), so that a report can
 * tell what is still allocated at any time.
 *
 * The sampling is a Poisson process over the bytes allocated, as
 * tcmalloc's and jemalloc's heap profilers do: the kernel keeps an
 * allocation when the bytes allocated since the last one kept pass a
 * threshold drawn from an exponential distribution of mean M. An
 * allocation of s bytes is then kept with probability 1 - exp(-s/M), and
 * weighing it s / (1 - exp(-s/M)) makes every sum of weights an unbiased
 * estimate of the bytes allocated there (and weight / s of the number of
 * allocations). docs/cli/record.md gives the error.
 */
#include <string.h>

#include "common/opts.h"
#include "record/event.h"

/* 1 - exp(-x) for x >= 0, to double precision, without libm (the static
 * library's users link no -lm): the series where 1 - exp(-x) would cancel,
 * else exp(-x) = 2^-k exp(-r) with r in [0, ln 2). */
static double one_minus_exp_neg(double x)
{
	const double ln2 = 0.69314718055994530942;
	double term = 1, sum = 1, r;
	int k;

	if (x > 40)
		return 1;
	if (x < 0x1p-10) /* x - x^2/2 + x^3/6: the next term is below 2^-42 x */
		return x * (1 - x / 2 * (1 - x / 3));
	k = (int)(x / ln2);
	r = x - k * ln2;
	for (int i = 1; i < 25; i++) { /* r < 0.7: 0.7^25/25! is far below 2^-53 */
		term *= -r / i;
		sum += term;
	}
	while (k--)
		sum *= 0.5;
	return 1 - sum;
}

uint64_t rec_alloc_weight(uint64_t size, uint64_t mean)
{
	double p;

	if (mean <= 1 || !size)
		return size;
	p = one_minus_exp_neg((double)size / (double)mean);
	if (!(p > 0))
		return size;
	return (uint64_t)((double)size / p + 0.5);
}

static int alloc_parse(const char *spec, struct rec_event *ev, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (!strcmp(spec, "alloc"))
		ev->alloc = REC_ALLOC_ALLOC;
	else if (!strcmp(spec, "free"))
		ev->alloc = REC_ALLOC_FREE;
	else
		return 0;
	return 1;
}

static void alloc_describe(const struct rec_event *ev, const struct ustack_record_opts *o,
			   struct ustack_trace_event_desc *d)
{
	(void)o;
	if (ev->alloc == REC_ALLOC_FREE) {
		d->type = USTACK_TRACE_EV_FREE;
		d->flags = USTACK_TRACE_EV_UNIT_COUNT;
		return;
	}
	d->type = USTACK_TRACE_EV_ALLOC;
	d->flags = USTACK_TRACE_EV_UNIT_BYTES;
	d->period = ev->alloc_mean;
}

/* @raw: the allocation's size */
static void alloc_weigh(const struct rec_event *ev, uint64_t raw, struct ustack_trace_event *out)
{
	if (ev->alloc != REC_ALLOC_ALLOC)
		return;
	out->value = rec_alloc_weight(raw, ev->alloc_mean);
	out->flags |= USTACK_TRACE_EVENT_HAS_VALUE;
}

const struct rec_event_kind rec_event_alloc = {
	.name = "alloc",
	.help = "alloc, free (record --alloc)",
	.attach = REC_ATTACH_ALLOC,
	.parse = alloc_parse,
	.describe = alloc_describe,
	.weigh = alloc_weigh,
};
