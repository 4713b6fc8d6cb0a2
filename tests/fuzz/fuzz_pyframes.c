// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the CPython frame walk (src/python/pywalk.c) over a
 * memory image made of the input, served at a fixed base address: the
 * runtime, interpreters, thread states, frames, code objects, str and
 * bytes objects are whatever the input holds there. Header (20 bytes):
 *   u8  layout (% 4): 0 3.11's table, 1 3.12's, 2 3.13 from the
 *       _Py_DebugOffsets the image holds at the runtime (as a 3.13 process
 *       does), 3 the same at the version that struct states (3.14, 3.15,
 *       or one refused)
 *   u8  pad[3]
 *   u32 offset of _PyRuntime, of PyCode_Type, PyUnicode_Type, PyBytes_Type
 *       from the start of the input (0xffffffff: the type is not checked)
 * Whatever the input: no crash, no read outside it, no hang (the walk's
 * bounds), every thread's stop one of the reasons pyframes.h names, every
 * name NUL-terminated within its buffer. The location-table decoder is fed
 * the input too, the recorder's reader of one code object, and the finder
 * of the eval function's cold part (its code the input's bytes).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/ustack.h>
#include "python/pyproc.h"

#include "py_image.h"

static uint64_t type_at(const uint8_t *hdr)
{
	uint32_t off;

	memcpy(&off, hdr, 4);
	return off == 0xffffffffu ? 0 : BASE + off;
}

static void check_threads(const struct ustack_py_thread *th, int nr)
{
	for (int i = 0; i < nr; i++) {
		int s = th[i].stop;

		if (th[i].nr < 0 || th[i].nr > USTACK_PY_MAX_FRAMES ||
		    (s && s != -ELOOP && s != -E2BIG && s != -EFAULT && s != -EBADMSG))
			abort();
		for (int j = 0; j < th[i].nr; j++)
			if (!memchr(th[i].frames[j].func, 0, USTACK_PY_NAME_MAX) ||
			    !memchr(th[i].frames[j].file, 0, USTACK_PY_FILE_MAX))
				abort();
	}
}

/* The recorder's reader of one code object (ustack_py_proc__read_code),
 * at every 64th offset of the image, and the line of an instruction
 * pointer the input names: a clean error or NUL-terminated names */
static void check_code(const struct ustack_py_proc *p, struct image *im, const uint8_t *data,
		       size_t size)
{
	struct ustack_py_code c;
	int e, line;

	for (size_t off = 0; off < size && off < 64 * 64; off += 64) {
		e = ustack_py_proc__read_code(p, read_image, im, BASE + off, &c);
		if (e && e != -EFAULT && e != -EBADMSG)
			abort();
		if (!e && (!memchr(c.func, 0, sizeof(c.func)) || !memchr(c.file, 0, sizeof(c.file))))
			abort();
		e = ustack_py_code__line(p, &c, BASE + data[3] * 2ull + off, data[2] & 1, &line);
		if (e && e != -ENOENT && e != -EBADMSG)
			abort();
		ustack_py_code__release(&c);
	}
}

/* The cold-part finder (pyeval_cold.c) over the input as the hot part's
 * code, the FDE starts increasing steps its first bytes say: a range from
 * one start to the next, or none */
static void check_cold(const uint8_t *data, size_t size)
{
	uint64_t starts[16], acc = BASE - 0x2000, lo, hi;
	int e;

	for (int i = 0; i < 16; i++)
		starts[i] = acc += 1 + (uint64_t)data[i] * 64;
	e = ustack_py_eval_cold(data + 20, size - 20, BASE, starts, 16, &lo, &hi);
	if (e && (e != -ENOENT || lo || hi))
		abort();
	if (!e) {
		int k = 0;

		while (k < 15 && starts[k] != lo)
			k++;
		if (k == 15 || starts[k + 1] != hi)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = { (uint8_t *)data, size }; /* only read */
	struct ustack_py_layout lay;
	struct ustack_py_thread *th;
	struct ustack_py_proc *p;
	uint64_t runtime;
	char err[256];
	int nr, e, line;

	ustack_set_print(NULL);
	if (size < 20)
		return 0;
	ustack_py_line_of(data + 20, size - 20, data[1], (int64_t)data[2] * 2 - 2, &line);
	runtime = type_at(data + 4);
	check_cold(data, size);
	if (data[0] % 4 < 2) {
		if (ustack_py_layout__table(11 + data[0] % 4, &lay))
			abort();
	} else {
		uint8_t dbg[USTACK_PY_DEBUG_OFFSETS_LEN];
		uint32_t version = 0x030d00f0;

		if (!runtime || read_image(&im, runtime, dbg, sizeof(dbg)))
			return 0;
		if (data[0] % 4 == 3)
			memcpy(&version, dbg + 8, 4); /* the struct's own */
		if (ustack_py_layout__from_debug_offsets(dbg, sizeof(dbg), version, &lay, err, sizeof(err)))
			return 0;
	}
	p = ustack_py_proc__new(&lay, 0x03000000 | (uint32_t)lay.minor << 16, runtime ? runtime : BASE,
				type_at(data + 8), type_at(data + 12), type_at(data + 16));
	if (!p)
		return 0;
	e = ustack_py_proc__threads(p, read_image, &im, &th, &nr, err, sizeof(err));
	if (e && (e != -EFAULT || th || nr))
		abort();
	if (!e)
		check_threads(th, nr);
	ustack_py_threads_free(th, nr);
	check_code(p, &im, data, size);
	ustack_py_proc__free(p);
	return 0;
}
