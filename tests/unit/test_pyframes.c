// SPDX-License-Identifier: MIT
/*
 * The CPython frame walk (src/python/) over the images of
 * tests/fuzz/corpus/pyframes/ (written by tests/fuzz/make-corpus-pyframes.py
 * as CPython 3.11 and 3.13 lay out a runtime, an interpreter, thread
 * states, frames, code objects, str and bytes): the frames, names, lines
 * and ENTRY marks the generator put there, and the stops of the broken
 * images; the location-table decoder on tables written by hand after
 * CPython's Objects/locations.md.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "python/pyproc.h"

#include "../fuzz/py_image.h"

static uint64_t at(const uint8_t *p)
{
	uint32_t off;

	memcpy(&off, p, 4);
	return BASE + off;
}

/* The threads of a corpus image, walked: 0 or the walk's error */
static int walk_seed(const char *name, struct image *im, struct ustack_py_thread **th, int *nr)
{
	const char *top = getenv("TOP");
	struct ustack_py_layout lay;
	struct ustack_py_proc *p;
	char path[512], err[256];
	FILE *f;
	int e;

	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/pyframes/%s", top ? top : ".", name);
	f = fopen(path, "rb");
	CHECK(f);
	im->data = malloc(1 << 16);
	im->size = fread(im->data, 1, 1 << 16, f);
	fclose(f);
	CHECK(im->size > 20);
	if (im->data[0] == 0) {
		CHECK_EQ(ustack_py_layout__table(11, &lay), 0);
	} else {
		uint8_t dbg[USTACK_PY_DEBUG_OFFSETS_LEN];

		CHECK_EQ(read_image(im, at(im->data + 4), dbg, sizeof(dbg)), 0);
		CHECK_EQ(ustack_py_layout__from_debug_offsets(dbg, sizeof(dbg), 0x030d00f0, &lay, err,
							       sizeof(err)), 0);
		CHECK_EQ(lay.minor, 13);
	}
	p = ustack_py_proc__new(&lay, 0x030b00f0, at(im->data + 4), at(im->data + 8),
				at(im->data + 12), at(im->data + 16));
	CHECK(p);
	e = ustack_py_proc__threads(p, read_image, im, th, nr, err, sizeof(err));
	ustack_py_proc__free(p);
	return e;
}

struct want { const char *func; int line; uint32_t flags; };

static void check_frames(const struct ustack_py_thread *t, const struct want *w, int n,
			 const char *file)
{
	CHECK_EQ(t->nr, n);
	for (int i = 0; i < n; i++) {
		CHECK_STR(t->frames[i].func, w[i].func);
		CHECK_STR(t->frames[i].file, file);
		CHECK_EQ(t->frames[i].line, w[i].line);
		CHECK_EQ(t->frames[i].flags, w[i].flags);
	}
}

/* lines: units 0-3 line 11, 4-5 line 12, 6 line 15, 7 none (see the
 * generator's table) */
static const struct want w311[] = {
	{ "leaf", 12, 0 }, { "Walker.step.<locals>.<lambda>", 11, USTACK_PY_FRAME_ENTRY },
	{ "gen", 15, USTACK_PY_FRAME_ENTRY }, { "<module>", 0, USTACK_PY_FRAME_ENTRY },
};
static const struct want w313[] = {
	{ "leaf", 12, 0 }, { "Walker.step.<locals>.<lambda>", 11, USTACK_PY_FRAME_ENTRY },
	{ "gen", 15, 0 }, { "<module>", 0, USTACK_PY_FRAME_ENTRY },
};

static void test_pyframes_311(void)
{
	struct ustack_py_thread *th;
	struct image im;
	int nr;

	CHECK_EQ(walk_seed("v311", &im, &th, &nr), 0);
	CHECK_EQ(nr, 2);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(th[i].native_tid, 4242 + i);
		CHECK_EQ(th[i].stop, 0);
		check_frames(&th[i], w311, 4, "/srv/app/m.py");
	}
	ustack_py_threads_free(th, nr);
	free(im.data);
}

static void test_pyframes_313_shims(void)
{
	struct ustack_py_thread *th;
	struct image im;
	int nr;

	CHECK_EQ(walk_seed("v313", &im, &th, &nr), 0);
	CHECK_EQ(nr, 2);
	CHECK_EQ(th[1].native_tid, 4243);
	CHECK_EQ(th[0].stop, 0);
	check_frames(&th[0], w313, 4, "/srv/app/m.py");
	ustack_py_threads_free(th, nr);
	free(im.data);
}

static void test_pyframes_wide_strings(void)
{
	struct ustack_py_thread *th;
	struct image im;
	int nr;

	CHECK_EQ(walk_seed("v311-ucs2", &im, &th, &nr), 0);
	check_frames(&th[0], w311, 4, "/srv/app/m\xc3\xa9.py");
	ustack_py_threads_free(th, nr);
	free(im.data);
	CHECK_EQ(walk_seed("v313-ucs4", &im, &th, &nr), 0);
	check_frames(&th[0], w313, 4, "/srv/app/m\xc3\xa9.py");
	ustack_py_threads_free(th, nr);
	free(im.data);
}

static void test_pyframes_loops(void)
{
	struct ustack_py_thread *th;
	struct image im;
	int nr;

	CHECK_EQ(walk_seed("v311-loop", &im, &th, &nr), 0);
	CHECK_EQ(th[0].stop, -ELOOP);
	check_frames(&th[0], w311, 4, "/srv/app/m.py");
	ustack_py_threads_free(th, nr);
	free(im.data);
	CHECK_EQ(walk_seed("v313-loop", &im, &th, &nr), 0);
	CHECK_EQ(th[0].stop, -ELOOP);
	ustack_py_threads_free(th, nr);
	free(im.data);
	/* a thread list back to its head: each thread state once */
	CHECK_EQ(walk_seed("v311-tsloop", &im, &th, &nr), 0);
	CHECK_EQ(nr, 3);
	CHECK_EQ(th[2].native_tid, 4244);
	ustack_py_threads_free(th, nr);
	free(im.data);
}

static void test_pyframes_cut_table(void)
{
	struct ustack_py_thread *th;
	struct image im;
	int nr;

	CHECK_EQ(walk_seed("v311-cut-table", &im, &th, &nr), 0);
	CHECK_EQ(th[0].nr, 4);
	CHECK_EQ(th[0].frames[0].line, 12);
	CHECK_EQ(th[0].frames[0].flags, 0);
	CHECK_EQ(th[0].frames[2].line, 0);
	CHECK_EQ(th[0].frames[2].flags, USTACK_PY_FRAME_ENTRY | USTACK_PY_FRAME_LINE_UNKNOWN);
	ustack_py_threads_free(th, nr);
	free(im.data);
}

static void test_pyframes_line_table(void)
{
	/* firstlineno 100: a long-form entry back by 3 (svarint 7) over 2
	 * units, then one with no columns, +70 (svarint 140 = 0x0c | 0x40,
	 * 0x02) over 1 unit */
	static const uint8_t t[] = { 0xf1, 0x07, 0x00, 0x01, 0x02, 0xe8, 0x4c, 0x02 };
	int line = -1;

	CHECK_EQ(ustack_py_line_of(t, sizeof(t), 100, 0, &line), 0);
	CHECK_EQ(line, 97);
	CHECK_EQ(ustack_py_line_of(t, sizeof(t), 100, 2, &line), 0);
	CHECK_EQ(line, 97);
	CHECK_EQ(ustack_py_line_of(t, sizeof(t), 100, 4, &line), 0);
	CHECK_EQ(line, 167);
	CHECK_EQ(ustack_py_line_of(t, sizeof(t), 100, 6, &line), -ENOENT);
	CHECK_EQ(ustack_py_line_of(t, sizeof(t), 100, -2, &line), 0);
	CHECK_EQ(line, 100);
	CHECK_EQ(ustack_py_line_of(t, 7, 100, 4, &line), -EBADMSG);
}

static void put64(uint8_t *img, uint64_t off, uint64_t v)
{
	memcpy(img + off, &v, 8);
}

/* One thread state more than USTACK_PY_MAX_THREADS: each of the first
 * read, the rest said by one entry with stop -E2BIG */
static void test_pyframes_many_threads(void)
{
	enum { TS0 = 4096, TSZ = 176, N = USTACK_PY_MAX_THREADS + 1 };
	struct image im = { calloc(1, TS0 + (size_t)N * TSZ), TS0 + (size_t)N * TSZ };
	struct ustack_py_thread *th;
	struct ustack_py_layout lay;
	struct ustack_py_proc *p;
	char err[256];
	int nr;

	CHECK(im.data);
	CHECK_EQ(ustack_py_layout__table(11, &lay), 0);
	put64(im.data, 40, BASE + 64);                /* runtime: the interpreter */
	put64(im.data, 64 + 16, BASE + TS0);          /* its first thread state */
	for (int i = 0; i < N; i++) {
		uint64_t ts = TS0 + (uint64_t)i * TSZ;

		put64(im.data, ts + 8, i + 1 < N ? BASE + ts + TSZ : 0);
		put64(im.data, ts + 16, BASE + 64);
		put64(im.data, ts + 160, 1000 + i);
	}
	p = ustack_py_proc__new(&lay, 0x030b00f0, BASE, 0, 0, 0);
	CHECK(p);
	CHECK_EQ(ustack_py_proc__threads(p, read_image, &im, &th, &nr, err, sizeof(err)), 0);
	ustack_py_proc__free(p);
	CHECK_EQ(nr, USTACK_PY_MAX_THREADS + 1);
	CHECK_EQ(th[USTACK_PY_MAX_THREADS - 1].native_tid, 1000 + USTACK_PY_MAX_THREADS - 1);
	CHECK_EQ(th[USTACK_PY_MAX_THREADS - 1].stop, 0);
	CHECK_EQ(th[USTACK_PY_MAX_THREADS].stop, -E2BIG);
	CHECK_EQ(th[USTACK_PY_MAX_THREADS].nr, 0);
	CHECK_EQ_U64(th[USTACK_PY_MAX_THREADS].tstate, BASE + TS0 + (uint64_t)USTACK_PY_MAX_THREADS * TSZ);
	ustack_py_threads_free(th, nr);
	free(im.data);
}

int main(void)
{
	RUN(test_pyframes_311);
	RUN(test_pyframes_313_shims);
	RUN(test_pyframes_wide_strings);
	RUN(test_pyframes_loops);
	RUN(test_pyframes_cut_table);
	RUN(test_pyframes_line_table);
	RUN(test_pyframes_many_threads);
	TEST_EXIT();
}
