// SPDX-License-Identifier: MIT
/*
 * Python frames in a recording, user space's half (the kernel's:
 * py_walk() in src/bpf/record.bpf.c). See python_rec.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/clock.h"
#include "common/grow.h"
#include "common/log.h"
#include "python/pyframes.h"
#include "python/pyplace.h"
#include "python/pyproc.h"
#include "record/python_rec.h"
#include "record/rec.h"

#define PY_METHOD 7 /* "unknown" in the format: a frame no unwinder found */
#define PY_RETRY_MIN_NS 10000000ull   /* interpreter not started: look again in 10 ms */
#define PY_RETRY_MAX_NS 1000000000ull /* ... doubling up to 1 s */
#define PY_SETTLE_NS 300000000ull     /* a refusal stands from 300 ms after the first look */
#define PY_SETTLE_CPU_NS 20000000ull  /* ... once the process ran 20 ms meanwhile */

enum py_state { PY_UNKNOWN, PY_RETRY, PY_FOUND, PY_REFUSED, PY_NONE };

struct py_proc {
	uint32_t pid;
	int state;
	int counted; /* in python_found (kept across exec: one process) */
	uint64_t due, wait;
	uint64_t first; /* first look (ns) */
	uint64_t first_cpu; /* the main thread's time on a CPU then (ns, schedstat) */
	uint64_t looked;    /* last look (ns) */
	int last_e;         /* what the last look found: 0 or -errno */
	uint64_t found; /* when the kernel was told (CLOCK_MONOTONIC ns, as event times) */
	/* a refusal while the process may still be loading its libraries
	 * (pyenv's python3.X is a stub until ld.so maps libpython3.X.so):
	 * said if it still holds PY_SETTLE_NS after the first look */
	char refusal[200];
	struct ustack_py_proc *proc;
	/* _PyEval_EvalFrameDefault as trace frames name it: file id, offsets */
	uint64_t eval_file, eval_lo, eval_hi;
	uint64_t eval_clo, eval_chi; /* its cold part (0, 0: none, or not in that file) */
	int eval_known;
	struct ustack_u64map *codes; /* word0 (address | fingerprint) -> index in rec_py.codes */
};

struct py_code_ent {
	uint64_t id;        /* PYFUNC id, 0: unknown function */
	struct ustack_py_code c;
};

struct rec_py {
	struct py_proc *procs;
	size_t nr, cap;
	struct ustack_u64map *of_pid;   /* pid -> index in procs */
	struct py_code_ent *codes;
	size_t nr_codes, cap_codes;
	uint64_t next_id;
};

static int vm_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(uintptr_t)ctx;
	struct iovec l = { buf, len }, rv = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &l, 1, &rv, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

struct rec_py *rec_py__new(void)
{
	struct rec_py *py = calloc(1, sizeof(*py));

	if (!py)
		return NULL;
	py->of_pid = ustack_u64map__new();
	if (!py->of_pid) {
		rec_py__free(py);
		return NULL;
	}
	return py;
}

void rec_py__free(struct rec_py *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->nr; i++) {
		ustack_py_proc__free(py->procs[i].proc);
		ustack_u64map__free(py->procs[i].codes);
	}
	for (size_t i = 0; i < py->nr_codes; i++)
		ustack_py_code__release(&py->codes[i].c);
	ustack_u64map__free(py->of_pid);
	free(py->procs);
	free(py->codes);
	free(py);
}

static struct py_proc *proc_of(struct rec_py *py, uint32_t pid, int create)
{
	uint64_t i;
	void *p;

	if (ustack_u64map__get(py->of_pid, pid, &i))
		return &py->procs[i];
	if (!create)
		return NULL;
	p = py->procs;
	if (ustack_grow(&p, &py->cap, py->nr + 1, sizeof(*py->procs), 16))
		return NULL;
	py->procs = p;
	if (ustack_u64map__put(py->of_pid, pid, py->nr))
		return NULL;
	memset(&py->procs[py->nr], 0, sizeof(py->procs[0]));
	py->procs[py->nr].pid = pid;
	return &py->procs[py->nr++];
}

static void fill_conf(const struct ustack_py_proc *p, struct ub_pyconf *c)
{
	const struct ustack_py_layout *l = &p->lay;

	memset(c, 0, sizeof(*c));
	c->runtime = p->runtime;
	c->flags = (l->ts_cframe != USTACK_PY_NO_FIELD ? UB_PYC_CFRAME : 0) |
		   (l->fr_is_entry != USTACK_PY_NO_FIELD ? UB_PYC_IS_ENTRY : 0) |
		   (l->owner_cstack >= 0 ? UB_PYC_CSTACK : 0) |
		   (l->fr_code_mask != UINT64_MAX ? UB_PYC_TAGGED : 0);
	c->owner_cstack = l->owner_cstack >= 0 ? (uint32_t)l->owner_cstack : 0xff;
	c->rt_interp_head = (uint32_t)l->rt_interp_head;
	c->is_next = (uint32_t)l->is_next;
	c->is_threads_head = (uint32_t)l->is_threads_head;
	c->ts_next = (uint32_t)l->ts_next;
	c->ts_native_tid = (uint32_t)l->ts_native_tid;
	c->ts_cframe = c->flags & UB_PYC_CFRAME ? (uint32_t)l->ts_cframe : 0;
	c->cf_current = (uint32_t)l->cf_current;
	c->ts_current_frame = c->flags & UB_PYC_CFRAME ? 0 : (uint32_t)l->ts_current_frame;
	c->fr_code = (uint32_t)l->fr_code;
	c->fr_previous = (uint32_t)l->fr_previous;
	c->fr_instr = (uint32_t)l->fr_instr;
	c->fr_owner = (uint32_t)l->fr_owner;
	c->fr_is_entry = c->flags & UB_PYC_IS_ENTRY ? (uint32_t)l->fr_is_entry : 0;
	c->fr_span = (uint32_t)l->fr_span;
	c->co_firstlineno = (uint32_t)l->co_firstlineno;
}

/* The frame offsets the kernel reads must fit its one read of a frame,
 * and a tagged f_executable have the tag bits the kernel masks */
static int conf_fits(const struct ustack_py_layout *l, const struct ub_pyconf *c)
{
	if (l->fr_code_mask != UINT64_MAX && l->fr_code_mask != ~(uint64_t)3)
		return 0;
	return c->fr_span >= 8 && c->fr_span <= UB_PY_FR_SPAN && c->fr_code + 8 <= c->fr_span &&
	       c->fr_previous + 8 <= c->fr_span && c->fr_instr + 8 <= c->fr_span &&
	       c->fr_owner < c->fr_span && c->fr_is_entry < c->fr_span;
}

/* ns the main thread of @pid ran (/proc/PID/schedstat); 0: unknown */
static uint64_t cpu_ns(uint32_t pid)
{
	char path[64];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/schedstat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* A refusal may be of a process still loading its libraries: it stands
 * once PY_SETTLE_NS passed and the process ran PY_SETTLE_CPU_NS since
 * the first look (a process descheduled or held at its exec on a loaded
 * machine may stay a stub without _PyRuntime for seconds) */
static int settled(const struct py_proc *pp, int e)
{
	uint64_t cpu;

	if (ustack_mono_ns() - pp->first < PY_SETTLE_NS)
		return 0;
	/* nothing of CPython mapped (-ENOENT): not a stub waiting for its
	 * libpython, and most processes of a machine are such; waiting for
	 * their CPU time kept 10,000 short-lived children of record_scale
	 * looked at again and again (each look reads /proc/PID/maps) */
	if (e == -ENOENT)
		return 1;
	cpu = cpu_ns(pp->pid);
	return !cpu || cpu - pp->first_cpu >= PY_SETTLE_CPU_NS;
}

static void look(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf, struct py_proc *pp)
{
	char err[256];
	struct ub_pyconf c;
	int e;

	pp->looked = ustack_mono_ns();
	if (!pp->first) {
		pp->first = ustack_mono_ns();
		pp->first_cpu = cpu_ns(pp->pid);
	}
	e = ustack_py_proc__find((pid_t)pp->pid, NULL, vm_read, (void *)(uintptr_t)pp->pid,
				 &pp->proc, err, sizeof(err));
	pr_debug("pid %u: CPython looked for: %s\n", pp->pid, e ? err : "found");
	/* its CPython is there, not started yet: a refusal of what it mapped
	 * before (pyenv's stub before its libpython) no longer stands, and
	 * must not be taken for its last word when it starts after
	 * PY_SETTLE_NS (a loaded machine: every event of a pyenv Python went
	 * without its frames) */
	if (e == -EAGAIN)
		pp->refusal[0] = 0;
	pp->last_e = e;
	if (e && e != -EAGAIN && !settled(pp, e)) {
		/* a process just started or exec'd may be between mappings */
		if (e == -ENOTSUP)
			snprintf(pp->refusal, sizeof(pp->refusal), "%.190s", err);
		e = -EAGAIN;
	} else if (e && e != -ENOTSUP && pp->refusal[0]) {
		/* gone before its refusal settled: the last one stands */
		snprintf(err, sizeof(err), "%s", pp->refusal);
		e = -ENOTSUP;
	}
	if (e == -EAGAIN) {
		/* not started yet (or between interpreters): look again */
		pp->wait = pp->wait ? pp->wait * 2 : PY_RETRY_MIN_NS;
		if (pp->wait > PY_RETRY_MAX_NS)
			pp->wait = PY_RETRY_MAX_NS;
		pp->due = ustack_mono_ns() + pp->wait;
		pp->state = PY_RETRY;
		return;
	}
	if (e == -ENOENT || (e && e != -ENOTSUP)) {
		pp->state = PY_NONE; /* no CPython, or gone */
		return;
	}
	if (!e) {
		fill_conf(pp->proc, &c);
		if (!conf_fits(&pp->proc->lay, &c)) {
			snprintf(err, sizeof(err), "%s: a frame's fields lie beyond the %d bytes the "
				 "kernel reads", ustack_py_proc__describe(pp->proc), UB_PY_FR_SPAN);
			e = -ENOTSUP;
		} else if ((e = ustack_bpf__set_python(bpf, pp->pid, &c))) {
			snprintf(err, sizeof(err), "%s: pyprocs: %s", ustack_py_proc__describe(pp->proc),
				 strerror(-e));
			e = -ENOTSUP;
		}
	}
	if (e) {
		ustack_py_proc__free(pp->proc);
		pp->proc = NULL;
		pp->state = PY_REFUSED;
		r->st.python_refused++;
		snprintf(r->st.python_refused_why, sizeof(r->st.python_refused_why), "%.190s", err);
		pr_warn("pid %u: Python frames not recorded: %s\n", pp->pid, err);
		return;
	}
	pp->state = PY_FOUND;
	pp->found = ustack_mono_ns();
	pp->eval_known = 0;
	/* a process, once: the exec that brought the interpreter may be
	 * handled after a look already found it (then found again) */
	if (!pp->counted) {
		pp->counted = 1;
		r->st.python_found++;
	}
	pr_debug("pid %u: %s: Python frames recorded\n", pp->pid, ustack_py_proc__describe(pp->proc));
}

void rec_py__seen(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf, uint32_t pid)
{
	struct py_proc *pp;

	if (!py)
		return;
	pp = proc_of(py, pid, 1);
	if (pp && pp->state == PY_UNKNOWN)
		look(r, py, bpf, pp);
}

void rec_py__event(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf, uint32_t pid,
		   uint64_t time)
{
	struct py_proc *pp = py ? proc_of(py, pid, 0) : NULL;

	/* it runs: its interpreter may have started since the last look,
	 * which the doubling wait would see up to a second late */
	if (pp && pp->state == PY_RETRY && pp->last_e != -ENOENT &&
	    ustack_mono_ns() >= pp->looked + PY_RETRY_MIN_NS)
		look(r, py, bpf, pp);

	/* walked before the kernel knew where its frames are: an interpreter
	 * still starting, or one found after this event */
	if (pp && ((pp->state == PY_RETRY && pp->last_e != -ENOENT) ||
		   (pp->state == PY_FOUND && time < pp->found)))
		r->st.python_early++;
}

void rec_py__exec(struct rec_py *py, struct ustack_bpf *bpf, uint32_t pid)
{
	struct py_proc *pp = py ? proc_of(py, pid, 0) : NULL;

	if (!pp)
		return;
	pr_debug("pid %u: exec, CPython looked for anew\n", pid);
	if (pp->state == PY_FOUND)
		ustack_bpf__set_python(bpf, pid, NULL);
	ustack_py_proc__free(pp->proc);
	pp->proc = NULL;
	/* the code objects of the old program: its addresses mean new ones now */
	ustack_u64map__free(pp->codes);
	pp->codes = NULL;
	pp->state = PY_UNKNOWN;
	pp->wait = 0;
	pp->first = 0;
	pp->refusal[0] = 0;
}

void rec_py__end(struct rec *r, struct rec_py *py)
{
	for (size_t i = 0; py && i < py->nr; i++) {
		struct py_proc *pp = &py->procs[i];

		/* refused while it might still have been starting, and the
		 * recording ended before that settled: the refusal stands */
		if (pp->state != PY_RETRY || !pp->refusal[0])
			continue;
		pp->state = PY_REFUSED;
		r->st.python_refused++;
		snprintf(r->st.python_refused_why, sizeof(r->st.python_refused_why), "%s",
			 pp->refusal);
		pr_warn("pid %u: Python frames not recorded: %s\n", pp->pid, pp->refusal);
	}
}

uint64_t rec_py__retry(struct rec *r, struct rec_py *py, struct ustack_bpf *bpf)
{
	uint64_t now, next = 0;

	if (!py)
		return 0;
	now = ustack_mono_ns();
	for (size_t i = 0; i < py->nr; i++) {
		struct py_proc *pp = &py->procs[i];

		if (pp->state == PY_RETRY && pp->due <= now)
			look(r, py, bpf, pp);
		if (pp->state == PY_RETRY && (!next || pp->due < next))
			next = pp->due;
	}
	return next;
}

/* _PyEval_EvalFrameDefault as the trace names frames: (file id, offsets) */
static int eval_where(struct rec *r, struct py_proc *pp)
{
	const struct pm_vma *v;
	struct pm_file *f;
	uint64_t lo, hi;

	if (pp->eval_known)
		return pp->eval_known > 0;
	pp->eval_known = -1;
	ustack_py_proc__eval_range(pp->proc, &lo, &hi);
	if (lo >= hi || !(v = ustack_recmaps__find(r->rm, pp->pid, lo)) || v->file < 0 ||
	    !(f = ustack_recmaps__file(r->rm, v->file)) || hi > v->end)
		return 0;
	pp->eval_file = f->id;
	pp->eval_lo = lo - v->start + v->pgoff;
	pp->eval_hi = hi - v->start + v->pgoff;
	pp->eval_clo = pp->eval_chi = 0;
	ustack_py_proc__eval_cold_range(pp->proc, &lo, &hi);
	if (lo < hi && (v = ustack_recmaps__find(r->rm, pp->pid, lo)) && v->file >= 0 &&
	    (f = ustack_recmaps__file(r->rm, v->file)) && f->id == pp->eval_file && hi <= v->end) {
		pp->eval_clo = lo - v->start + v->pgoff;
		pp->eval_chi = hi - v->start + v->pgoff;
	}
	pp->eval_known = 1;
	return 1;
}

/* The PYFUNC id of the code object in @word0 (0: unknown function) */
static struct py_code_ent *code_of(struct rec *r, struct rec_py *py, struct py_proc *pp,
				   uint64_t word0)
{
	struct ustack_trace_pyfunc f;
	struct py_code_ent *ce;
	uint64_t i;
	void *p;
	int e;

	if (!pp->codes && !(pp->codes = ustack_u64map__new()))
		return NULL;
	if (ustack_u64map__get(pp->codes, word0, &i))
		return &py->codes[i];
	p = py->codes;
	if (ustack_grow(&p, &py->cap_codes, py->nr_codes + 1, sizeof(*py->codes), 64))
		return NULL;
	py->codes = p;
	ce = &py->codes[py->nr_codes];
	e = ustack_py_proc__read_code(pp->proc, vm_read, (void *)(uintptr_t)pp->pid,
				      word0 & UB_PY_ADDR_MASK, &ce->c);
	r->st.python_code_read++;
	/* the address may hold another code object by now: the kernel's
	 * fingerprint says whether it is the one the frame ran */
	if (!e && (uint64_t)(ce->c.firstlineno & 0xffff) != word0 >> UB_PY_FP_SHIFT)
		e = ce->c.err = -ESTALE;
	ce->id = 0;
	if (e) {
		pr_debug("pid %u: code object at 0x%llx (fingerprint 0x%llx): %s\n", pp->pid,
			 (unsigned long long)(word0 & UB_PY_ADDR_MASK),
			 (unsigned long long)(word0 >> UB_PY_FP_SHIFT), strerror(-e));
		r->st.python_code_unreadable++;
	} else {
		f = (struct ustack_trace_pyfunc){
			.id = ++py->next_id, .pid = pp->pid,
			.first_line = ce->c.firstlineno > 0 ? (uint32_t)ce->c.firstlineno : 0,
			.name = ce->c.func[0] ? ce->c.func : "?", .file = ce->c.file[0] ? ce->c.file : "?",
		};
		e = ustack_trace_writer__add_pyfunc(r->w, &f);
		if (e && !r->werr)
			r->werr = e;
		if (!e)
			ce->id = f.id;
	}
	if (ustack_u64map__put(pp->codes, word0, py->nr_codes)) {
		ustack_py_code__release(&ce->c);
		return NULL;
	}
	py->nr_codes++;
	return ce;
}

struct py_fr {
	uint64_t w0, w1; /* the trace words */
	uint8_t entry;
};

/* The Python frames of @pw as trace words (frames not started dropped) */
static int py_words(struct rec *r, struct rec_py *py, const struct rec_py_words *pw,
		    struct py_fr *out)
{
	struct py_proc *pp = proc_of(py, pw->pid, 0);
	const uint64_t *w = pw->words;
	int m = 0;

	for (uint32_t j = 0; j < pw->npy; j++) {
		uint64_t w0 = w[2 * j], w1 = w[2 * j + 1], id = 0;
		int line = 0, owner = (int)(w1 >> UB_PY_OWNER_SHIFT & 0xff);
		struct py_code_ent *ce = pp && pp->state == PY_FOUND ? code_of(r, py, pp, w0) : NULL;

		if (ce && ce->id) {
			int e = ustack_py_code__line(pp->proc, &ce->c, w1 & UB_PY_ADDR_MASK,
						     owner == pp->proc->lay.owner_generator, &line);

			if (e == -ENOENT)
				continue; /* pushed, not started: CPython's own walks skip it */
			id = ce->id;
		}
		out[m].w0 = ustack_trace_py_offset(id, line > 0 ? (uint32_t)line : 0);
		out[m].w1 = RECMAPS_PY_FILE_ID | (uint64_t)PY_METHOD << 56 |
			    (uint64_t)USTACK_TRACE_FRAME_EXACT_PC << 62;
		out[m++].entry = !!(w1 & UB_PY_ENTRY);
	}
	return m;
}

/* The trace words of @n native frames with @m Python frames @fr placed
 * by @idx into @out; those beyond a cut native walk after its last frame */
static uint32_t interleave(const uint64_t *native, uint32_t n, const struct py_fr *fr, int m,
			   const int *idx, uint64_t *out)
{
	uint32_t o = 0;
	int j = 0;

	for (uint32_t i = 0; i < n; i++) {
		for (; j < m && idx[j] == (int)i; j++) {
			out[o++] = fr[j].w0;
			out[o++] = fr[j].w1;
		}
		out[o++] = native[2 * i];
		out[o++] = native[2 * i + 1];
	}
	for (; j < m && idx[j] == USTACK_PY_PLACE_BEYOND; j++) {
		out[o++] = fr[j].w0;
		out[o++] = fr[j].w1;
	}
	return o / 2;
}

uint32_t rec_py__frames(struct rec *r, struct rec_py *py, const struct rec_py_words *pw,
			const uint64_t *native, uint32_t n, int native_cut, uint64_t *out)
{
	struct py_proc *pp = proc_of(py, pw->pid, 0);
	struct py_fr fr[UB_MAX_FRAMES];
	uint8_t is_eval[UB_MAX_FRAMES], entry[UB_MAX_FRAMES];
	int idx[UB_MAX_FRAMES], m;
	char why[160];

	if (n > UB_MAX_FRAMES || pw->npy > UB_MAX_FRAMES - n) {
		/* the callers' bound, kept here too: no room in fr[], @out */
		n = n > UB_MAX_FRAMES ? UB_MAX_FRAMES : n;
		m = 1; /* counted as not placed */
		goto native_only;
	}
	m = py_words(r, py, pw, fr);
	if (!pp || pp->state != PY_FOUND || !eval_where(r, pp) || m <= 0)
		goto native_only;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t off = native[2 * i] - ((native[2 * i + 1] >> 62) & 1 ? 0 : 1);

		is_eval[i] = (native[2 * i + 1] & USTACK_TRACE_WORD_FILE_ID_MASK) == pp->eval_file &&
			     ((off >= pp->eval_lo && off < pp->eval_hi) ||
			      (off >= pp->eval_clo && off < pp->eval_chi));
	}
	for (int k = 0; k < m; k++)
		entry[k] = fr[k].entry;
	if (ustack_py_place_runs(is_eval, (int)n, entry, m, native_cut, idx, why, sizeof(why))) {
		pr_debug("pid %u: %s\n", pw->pid, why);
		goto native_only;
	}
	if (idx[m - 1] == USTACK_PY_PLACE_BEYOND)
		r->st.python_beyond_cut++;
	r->st.python_frames += (uint64_t)m;
	/* each run above (inner to) the native frame that runs it, as a
	 * snapshot prints them */
	return interleave(native, n, fr, m, idx, out);
native_only:
	if (m > 0)
		r->st.python_not_placed++;
	memcpy(out, native, 2u * n * sizeof(*out));
	return n;
}
