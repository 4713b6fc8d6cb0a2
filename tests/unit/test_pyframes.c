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
		uint32_t version = im->data[0] == 3 ? 0x030e0af0 : 0x030d00f0;

		CHECK_EQ(read_image(im, at(im->data + 4), dbg, sizeof(dbg)), 0);
		CHECK_EQ(ustack_py_layout__from_debug_offsets(dbg, sizeof(dbg), version, &lay, err,
							       sizeof(err)), 0);
		CHECK_EQ(lay.minor, im->data[0] == 3 ? 14 : 13);
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

/* 3.14: the layout from its own _Py_DebugOffsets, each f_executable
 * tagged (bit 0 set: the walk masks it off), the same frames as 3.13's */
static void test_pyframes_314_tagged(void)
{
	struct ustack_py_thread *th;
	struct image im;
	int nr;

	CHECK_EQ(walk_seed("v314", &im, &th, &nr), 0);
	CHECK_EQ(nr, 2);
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

/* A _Py_DebugOffsets of 3.14's shape: each group's size, then the fields
 * used here at the positions of 3.14.10's internal/pycore_debug_offsets.h
 * (offsetof() as compiled from it), each value distinct */
static void dbg_314(uint8_t *b, uint64_t version)
{
	static const uint16_t sizes[] = { 24, 48, 176, 248, 312, 400, 592, 616 };

	memset(b, 0, USTACK_PY_DEBUG_OFFSETS_LEN);
	memcpy(b, "xdebugpy", 8);
	put64(b, 8, version);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		put64(b, sizes[i], 8000);
	put64(b, 40, 640);                                 /* interpreters.head */
	put64(b, 64, 10); put64(b, 72, 7344);              /* next, threads.head */
	put64(b, 192, 8); put64(b, 200, 16); put64(b, 208, 72); put64(b, 224, 152);
	put64(b, 256, 8); put64(b, 264, 0); put64(b, 272, 56); put64(b, 288, 74);
	put64(b, 320, 112); put64(b, 336, 128); put64(b, 344, 136); put64(b, 352, 68);
	put64(b, 384, 208);
	put64(b, 408, 8);                                  /* ob_type */
	put64(b, 600, 16); put64(b, 608, 32);              /* bytes */
	put64(b, 624, 32); put64(b, 632, 16); put64(b, 640, 40); /* str */
}

static void test_pyframes_debug_offsets_314(void)
{
	uint8_t b[USTACK_PY_DEBUG_OFFSETS_LEN];
	struct ustack_py_layout l;
	char err[256];

	dbg_314(b, 0x030e0af0);
	CHECK_EQ(ustack_py_layout__from_debug_offsets(b, sizeof(b), 0x030e0af0, &l, err, sizeof(err)), 0);
	CHECK_EQ(l.minor, 14);
	CHECK_EQ(l.rt_interp_head, 640);
	CHECK_EQ(l.is_next, 10);
	CHECK_EQ(l.is_threads_head, 7344);
	CHECK_EQ(l.ts_next, 8);
	CHECK_EQ(l.ts_current_frame, 72);
	CHECK_EQ(l.ts_native_tid, 152);
	CHECK_EQ(l.fr_previous, 8);
	CHECK_EQ(l.fr_code, 0);
	CHECK_EQ(l.fr_instr, 56);
	CHECK_EQ(l.fr_owner, 74);
	CHECK_EQ(l.co_filename, 112);
	CHECK_EQ(l.co_qualname, 128);
	CHECK_EQ(l.co_firstlineno, 68);
	CHECK_EQ(l.co_code_adaptive, 208);
	CHECK_EQ(l.bytes_sval, 32);
	CHECK_EQ(l.str_ascii_size, 40);
	CHECK_EQ(l.str_compact_size, 56);
	CHECK_EQ(l.fr_code_mask, ~(uint64_t)3); /* a tagged _PyStackRef */
	CHECK_EQ(l.owner_cstack, 3);
	CHECK_EQ(l.ts_cframe, USTACK_PY_NO_FIELD);
	/* 3.13's layout is the table's own: untagged */
	CHECK_EQ(ustack_py_layout__table(12, &l), 0);
	CHECK_EQ(l.fr_code_mask, UINT64_MAX);
}

/* A version this build has no positions for, or one that is not the
 * process's Py_Version, or fewer bytes than its struct: refused, saying
 * which, never read at another version's positions */
static void test_pyframes_debug_offsets_refused(void)
{
	uint8_t b[USTACK_PY_DEBUG_OFFSETS_LEN];
	struct ustack_py_layout l;
	char err[256];

	dbg_314(b, 0x031000a1);
	CHECK_EQ(ustack_py_layout__from_debug_offsets(b, sizeof(b), 0x031000a1, &l, err, sizeof(err)),
		 -ENOTSUP);
	CHECK(strstr(err, "CPython 3.16 (0x31000a1): this build reads 3.13-3.15"));
	dbg_314(b, 0x030e0af0);
	CHECK_EQ(ustack_py_layout__from_debug_offsets(b, sizeof(b), 0x030f02f0, &l, err, sizeof(err)),
		 -ENOTSUP);
	CHECK(strstr(err, "not the same release"));
	CHECK_EQ(ustack_py_layout__from_debug_offsets(b, 700, 0x030e0af0, &l, err, sizeof(err)), -ENOTSUP);
	CHECK(strstr(err, "700 bytes read, 760 needed"));
	put64(b, 16, 1);
	CHECK_EQ(ustack_py_layout__from_debug_offsets(b, sizeof(b), 0x030e0af0, &l, err, sizeof(err)),
		 -ENOTSUP);
	CHECK(strstr(err, "free-threaded"));
}

/* The cold part: the function most of the hot part's rel32 jumps reach
 * inside (a tail call reaches only a start) */
static void test_pyframes_eval_cold(void)
{
	static const uint64_t starts[] = { 0x1000, 0x2000, 0x3000, 0x5000, 0x9000 };
	uint8_t code[64];
	uint64_t lo, hi;
	int32_t rel;

	memset(code, 0x90, sizeof(code));
	/* hot part at 0x5000: 4 jumps into 0x2000's function, 3 jmps to
	 * 0x3000's start (tail calls), a jcc inside itself */
	for (int i = 0; i < 4; i++) {
		code[6 * i] = 0x0f;
		code[6 * i + 1] = 0x84;
		rel = (int32_t)(0x2010 + 0x40 * i - (0x5000 + 6 * i + 6));
		memcpy(code + 6 * i + 2, &rel, 4);
	}
	for (int i = 0; i < 3; i++) {
		code[24 + 5 * i] = 0xe9;
		rel = (int32_t)(0x3000 - (0x5000 + 24 + 5 * i + 5));
		memcpy(code + 24 + 5 * i + 1, &rel, 4);
	}
	CHECK_EQ(ustack_py_eval_cold(code, sizeof(code), 0x5000, starts, 5, &lo, &hi), 0);
	CHECK_EQ(lo, 0x2000);
	CHECK_EQ(hi, 0x3000);
	/* three jumps are not enough to call it the cold part */
	code[18] = 0x90;
	CHECK_EQ(ustack_py_eval_cold(code, sizeof(code), 0x5000, starts, 5, &lo, &hi), -ENOENT);
	CHECK_EQ(lo, 0);
	/* tail calls alone (jumps to a function's start) are no cold part */
	memset(code, 0x90, sizeof(code));
	for (int i = 0; i < 5; i++) {
		code[5 * i] = 0xe9;
		rel = (int32_t)(0x3000 - (0x5000 + 5 * i + 5));
		memcpy(code + 5 * i + 1, &rel, 4);
	}
	CHECK_EQ(ustack_py_eval_cold(code, sizeof(code), 0x5000, starts, 5, &lo, &hi), -ENOENT);
	/* a table out of order is refused, not searched */
	{
		static const uint64_t bad[] = { 0x1000, 0x3000, 0x2000 };

		CHECK_EQ(ustack_py_eval_cold(code, sizeof(code), 0x5000, bad, 3, &lo, &hi), -EBADMSG);
	}
}

int main(void)
{
	RUN(test_pyframes_311);
	RUN(test_pyframes_313_shims);
	RUN(test_pyframes_314_tagged);
	RUN(test_pyframes_wide_strings);
	RUN(test_pyframes_loops);
	RUN(test_pyframes_cut_table);
	RUN(test_pyframes_line_table);
	RUN(test_pyframes_many_threads);
	RUN(test_pyframes_debug_offsets_314);
	RUN(test_pyframes_debug_offsets_refused);
	RUN(test_pyframes_eval_cold);
	TEST_EXIT();
}
