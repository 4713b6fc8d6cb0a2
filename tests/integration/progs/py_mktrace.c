// SPDX-License-Identifier: MIT
/*
 * Writes a trace of Python frames for tests/integration/report_python.sh
 * with the library's public trace writer (format 1.5), as the recorder of
 * a CPython process run with -X perf would:
 *
 *   pid 50 "python3"; native frames in /nonexistent/python3.11 (file id
 *   0x2a, not on this host: they stay unnamed, which keeps the expected
 *   output free of any symbol layout); Python frames under file id 0x99
 *   (FILE_MAP kind 10); JIT frames (file id 0) named by JITSYMs: two
 *   "py::" -X perf trampolines and one other JIT symbol.
 *
 * Stacks, innermost first (N: native, P: Python function@line, J: JIT):
 *   0 (3 events): N 0x1000, P helper@33, J py::helper, N 0x2000,
 *                 P Walker.step@12, J py::Walker.step, N 0x2000,
 *                 P <module>@5, N 0x3000
 *   1 (2 events): N 0x1000, J JS:other, N 0x3000          (no Python)
 *   2 (1 event):  P 9@4 (no PYFUNC 9), P Walker.step@0 (line unknown),
 *                 N 0x2000, N 0x3000
 * PYFUNC helper (id 3) is written after the stacks that name it, as the
 * format allows.
 *
 * usage: py_mktrace FILE
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ustack/procmaps.h>
#include <ustack/trace.h>

#define F_NAT 0x2a
#define F_PY 0x99
#define PID 50

#define NAT(off) { (off), F_NAT, USTACK_METHOD_CFI, 0 }
#define PY(id, line) { (uint64_t)(id) << USTACK_TRACE_PY_LINE_BITS | (line), F_PY, USTACK_METHOD_REGS, \
		       USTACK_TRACE_FRAME_EXACT_PC }
#define JIT(addr) { (addr), 0, USTACK_METHOD_FP, 0 }

static const struct ustack_trace_frame s0[] = {
	{ 0x1000, F_NAT, USTACK_METHOD_REGS, USTACK_TRACE_FRAME_EXACT_PC },
	PY(3, 33), JIT(0x7010), NAT(0x2000), PY(1, 12), JIT(0x7110), NAT(0x2000), PY(2, 5),
	NAT(0x3000),
};
static const struct ustack_trace_frame s1[] = {
	{ 0x1000, F_NAT, USTACK_METHOD_REGS, USTACK_TRACE_FRAME_EXACT_PC },
	JIT(0x7210), NAT(0x3000),
};
static const struct ustack_trace_frame s2[] = {
	PY(9, 4), PY(1, 0), NAT(0x2000), NAT(0x3000),
};

static int get_stack(void *ctx, uint32_t kind, uint32_t id, struct ustack_trace_stack *st)
{
	(void)ctx;
	if (kind != USTACK_TRACE_USTACK || id > 2)
		return -ENOENT;
	st->frames = id == 0 ? s0 : id == 1 ? s1 : s2;
	st->nr = id == 0 ? sizeof(s0) / sizeof(s0[0]) : id == 1 ? 3 : 4;
	return 0;
}

static int get_file_map(void *ctx, uint64_t id, struct ustack_file_map *fm)
{
	(void)ctx;
	if (id == F_NAT) {
		fm->kind = USTACK_VMA_FILE;
		fm->path = "/nonexistent/python3.11";
		fm->map_start = 0x400000;
	} else if (id == F_PY) {
		fm->kind = USTACK_TRACE_FILE_KIND_PYTHON;
		fm->path = "[python]";
	} else {
		return -ENOENT;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct ustack_trace_header h = {
		.clock_id = 1, .hostname = "h", .release = "6.18", .machine = "x86_64",
		.cmdline = "ustack record -- python3 -X perf walk.py", .version = "test",
	};
	static const struct ustack_trace_event_desc d = { .id = 0, .type = USTACK_TRACE_EV_SAMPLE,
							  .flags = USTACK_TRACE_EV_FREQ,
							  .period = 999, .name = "cpu-clock" };
	static const struct ustack_trace_pyfunc f1 = { 1, PID, 10, "Walker.step",
						       "/srv/app/walk.py" };
	static const struct ustack_trace_pyfunc f2 = { 2, PID, 1, "<module>", "/srv/app/main.py" };
	static const struct ustack_trace_pyfunc f3 = { 3, PID, 30, "helper", "/srv/app/walk.py" };
	static const struct ustack_trace_jitsym j[] = {
		{ PID, 0x7000, 0x100, "py::helper:/srv/app/walk.py" },
		{ PID, 0x7100, 0x100, "py::Walker.step:/srv/app/walk.py" },
		{ PID, 0x7200, 0x100, "JS:other" },
	};
	static const uint32_t stacks[] = { 0, 0, 1, 0, 1, 2 };
	struct ustack_trace_writer_opts o = { .sz = sizeof(o), .get_stack = get_stack,
					      .get_file_map = get_file_map };
	struct ustack_trace_thread th = { 1, PID, PID, 0, "python3" };
	struct ustack_trace_writer *w;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: py_mktrace FILE\n");
		return 2;
	}
	w = ustack_trace_writer__open(argv[1], &h, &o);
	if (!w) {
		perror(argv[1]);
		return 1;
	}
	err = ustack_trace_writer__add_event_desc(w, &d);
	err = err ?: ustack_trace_writer__add_thread(w, &th);
	err = err ?: ustack_trace_writer__add_pyfunc(w, &f1);
	err = err ?: ustack_trace_writer__add_pyfunc(w, &f2);
	for (uint32_t i = 0; !err && i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		uint64_t t = 1000000 * (i + 1), cookie = (uint64_t)(2 * i + 1) << 32 | 1;
		struct ustack_trace_event e = { .time = t, .pid = PID, .tid = PID,
						.kstack_id = USTACK_TRACE_NO_STACK,
						.cookie = cookie };
		struct ustack_trace_user_stack u = { .time = t + 10, .pid = PID, .tid = PID,
						     .cookie = cookie, .stack_id = stacks[i] };

		err = ustack_trace_writer__add_event(w, &e);
		err = err ?: ustack_trace_writer__add_user_stack(w, &u);
	}
	err = err ?: ustack_trace_writer__add_pyfunc(w, &f3);
	for (size_t i = 0; !err && i < sizeof(j) / sizeof(j[0]); i++)
		err = ustack_trace_writer__add_jitsym(w, &j[i]);
	if (err) {
		fprintf(stderr, "py_mktrace: %s\n", strerror(-err));
		ustack_trace_writer__close(w);
		return 1;
	}
	return ustack_trace_writer__close(w) ? 1 : 0;
}
