// SPDX-License-Identifier: MIT
/*
 * Exports of the stackmap: text (the seed's stack_map form), the counters
 * (stack_map_stat form) and the 'FSMB' v2 binary layout (stack_map_bin).
 * Exports walk the pool in id order and take only PUBLISHED entries, so
 * output is deterministic for a quiescent map; while inserts run they give
 * a snapshot that may miss the newest stacks, never a torn one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "stackmap/stackmap_internal.h"

/* Calls fn for every published entry in id order, under the export lock
 * (so a reset cannot clear the pool under us). Stops at fn's first
 * non-zero return and passes it on. */
typedef int (*smap_visit_fn)(void *ctx, uint32_t id, const uint64_t *ips,
			     uint32_t nr, uint64_t ref);

static int smap_visit(struct ustack_stackmap *map, smap_visit_fn fn, void *ctx)
{
	uint64_t n;
	int ret = 0;

	pthread_rwlock_rdlock(&map->export_lock);
	n = smap_nr_elts(map);
	for (uint64_t i = 0; i < n && !ret; i++) {
		const struct smap_elt *e = &map->elts[i];
		const struct smap_rec *r;

		if (atomic_load_explicit(&e->state, memory_order_acquire) !=
		    SMAP_ELT_PUBLISHED)
			continue;
		r = smap_rec_at(map, e->off);
		ret = fn(ctx, (uint32_t)i, r->ips, r->nr,
			 atomic_load_explicit(&r->ref, memory_order_relaxed));
	}
	pthread_rwlock_unlock(&map->export_lock);
	return ret;
}

struct smap_text_ctx {
	FILE *f;
	int count;
};

static int smap_text_one(void *ctx, uint32_t id, const uint64_t *ips,
			 uint32_t nr, uint64_t ref)
{
	struct smap_text_ctx *c = ctx;

	if (fprintf(c->f, "stack_id %" PRIu32 " [ref %" PRIu64 ", depth %" PRIu32 "]\n",
		    id, ref, nr) < 0)
		return -EIO;
	for (uint32_t i = 0; i < nr; i++)
		if (fprintf(c->f, "  [%" PRIu32 "] 0x%" PRIx64 "\n", i, ips[i]) < 0)
			return -EIO;
	if (fputc('\n', c->f) == EOF)
		return -EIO;
	c->count++;
	return 0;
}

USTACK_API int ustack_stackmap__write_text(struct ustack_stackmap *map, FILE *f)
{
	struct smap_text_ctx c = { .f = f };
	int ret;

	if (!map || !f)
		return -EINVAL;
	ret = smap_visit(map, smap_text_one, &c);
	if (ret)
		return ret;
	return ferror(f) ? -EIO : c.count;
}

USTACK_API int ustack_stackmap__write_stats(const struct ustack_stackmap *map,
					    FILE *f)
{
	struct ustack_stackmap_stats st;

	if (!map || !f || ustack_stackmap__stats(map, &st, sizeof(st)))
		return -EINVAL;
	fprintf(f, "entries: %" PRIu64 " / %" PRIu64 "\n", st.entries, st.capacity);
	fprintf(f, "table_size: %" PRIu64 "\n", st.table_size);
	fprintf(f, "successes: %" PRIu64 "\n", st.successes);
	fprintf(f, "drops: %" PRIu64 "\n", st.drops);
	if (st.successes + st.drops > 0)
		fprintf(f, "success_rate: %" PRIu64 "%%\n",
			st.successes * 100 / (st.successes + st.drops));
	/* ours, beyond the seed's file */
	fprintf(f, "truncated: %" PRIu64 "\n", st.truncated);
	fprintf(f, "wasted: %" PRIu64 "\n", st.wasted);
	fprintf(f, "words: %" PRIu64 " / %" PRIu64 "\n", st.words_used, st.words_capacity);
	return ferror(f) ? -EIO : 0;
}

/* ---- binary ------------------------------------------------------------- */

struct smap_bin_ctx {
	uint8_t *buf;
	size_t off, cap;
	uint32_t count;
};

static void smap_put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static int smap_bin_one(void *ctx, uint32_t id, const uint64_t *ips,
			uint32_t nr, uint64_t ref)
{
	struct smap_bin_ctx *c = ctx;
	size_t need = USTACK_STACKMAP_BIN_ENTRY_SIZE + (size_t)nr * 8;

	/* the size bound was taken before the walk; stacks published since
	 * then may not fit and are left out of this snapshot */
	if (!in_bounds(c->off, need, c->cap))
		return 1;
	smap_put_u32(c->buf + c->off, id);
	smap_put_u32(c->buf + c->off + 4, nr);
	/* the format has 32 bits for the count: saturate, don't wrap */
	smap_put_u32(c->buf + c->off + 8, ref > UINT32_MAX ? UINT32_MAX : (uint32_t)ref);
	smap_put_u32(c->buf + c->off + 12, 0);
	memcpy(c->buf + c->off + USTACK_STACKMAP_BIN_ENTRY_SIZE, ips, (size_t)nr * 8);
	c->off += need;
	c->count++;
	return 0;
}

USTACK_API int ustack_stackmap__export_bin(struct ustack_stackmap *map,
					   void **buf, size_t *size)
{
	struct smap_bin_ctx c = { 0 };
	uint64_t words;

	if (!map || !buf || !size)
		return -EINVAL;
	/* upper bound: every entry handed out so far (+ all arena words); the
	 * counters only grow, so later publications are covered unless they
	 * happen after this load (then they are skipped) */
	words = atomic_load_explicit(&map->next_word, memory_order_acquire);
	if (words > map->arena_words)
		words = map->arena_words;
	c.cap = USTACK_STACKMAP_BIN_HDR_SIZE +
		(size_t)smap_nr_elts(map) * USTACK_STACKMAP_BIN_ENTRY_SIZE +
		(size_t)words * 8;
	c.buf = malloc(c.cap);
	if (!c.buf)
		return -ENOMEM;
	c.off = USTACK_STACKMAP_BIN_HDR_SIZE;
	smap_visit(map, smap_bin_one, &c);
	smap_put_u32(c.buf, USTACK_STACKMAP_BIN_MAGIC);
	smap_put_u32(c.buf + 4, USTACK_STACKMAP_BIN_VERSION);
	smap_put_u32(c.buf + 8, c.count);
	smap_put_u32(c.buf + 12, 0);
	*buf = c.buf;
	*size = c.off;
	return (int)c.count;
}

USTACK_API int ustack_stackmap__write_bin(struct ustack_stackmap *map, FILE *f)
{
	void *buf;
	size_t size;
	int n;

	if (!f)
		return -EINVAL;
	n = ustack_stackmap__export_bin(map, &buf, &size);
	if (n < 0)
		return n;
	if (fwrite(buf, 1, size, f) != size)
		n = -EIO;
	free(buf);
	return n;
}
