// SPDX-License-Identifier: MIT
/*
 * The kernel's own deferred user callchains (Linux 6.19+), consumed by the
 * copy backend: a sample whose callchain ends with
 * PERF_CONTEXT_USER_DEFERRED carries the kernel's cookie; the user part
 * comes later in a PERF_RECORD_CALLCHAIN_DEFERRED {cookie, nr, ips[]}
 * written on the task's way back to user space. Records are matched to
 * samples by tid, then cookie (docs/deferred.md, "The kernel's deferred
 * callchains").
 *
 * The kernel unwinds with frame pointers only (7.2: CONFIG_UNWIND_USER,
 * no SFrame). Its step from frame i to i + 1 is right only where frame i's
 * function keeps rbp as its frame pointer at that pc, which ustack's own
 * tables say: the row is CFA = rbp + 16, return address at CFA - 8, caller's
 * rbp at CFA - 16. The kernel's frames are trusted up to the first frame
 * where that does not hold (that frame's pc is still right, its caller is
 * not); beyond it ustack's own unwind is used. The trusted frames are
 * compared with ustack's own unwind of the same entry (the copy backend
 * still copies the stack): equal frames are written with the method
 * kernel-fp, and where ustack's unwind stopped early (the stack copy too
 * short) the kernel's trusted frames continue the stack. A disagreement
 * keeps ustack's stack and is counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/unwind_row.h"
#include "record/kfp.h"
#include "record/rec.h"

struct kfp_task {
	uint32_t tid, pid;
	uint64_t cookie;   /* ustack's cookie of the entry the kernel cookie belongs to */
	uint64_t kcookie;  /* the kernel's */
	int have_k;        /* its CALLCHAIN_DEFERRED came */
	uint32_t nk;
	uint64_t kips[MAX_USER_FRAMES];
	/* ustack's stack of that entry, when it was closed before the
	 * kernel's record came: written when the record comes, or at the
	 * task's next entry, exit or the end */
	int pending;
	struct ustack_trace_user_stack pu;
	uint32_t nown, nr_requests;
	struct ustack_frame own[MAX_USER_FRAMES];
	/* a CALLCHAIN_DEFERRED read before its sample: the sample went to
	 * another CPU's buffer and was still being written when the reader
	 * passed it (seen in a VM whose virtual CPU stalled). Kept for the
	 * sample of that cookie. */
	int have_early;
	uint64_t early_cookie;
	uint32_t early_nk;
	uint64_t early_ips[MAX_USER_FRAMES];
};

struct rec_kfp {
	struct ustack_u64map *by_tid; /* tid -> struct kfp_task * */
	struct ustack_frame out[MAX_USER_FRAMES];
};

struct rec_kfp *rec_kfp_new(void)
{
	struct rec_kfp *kfp = calloc(1, sizeof(*kfp));

	if (!kfp)
		return NULL;
	kfp->by_tid = ustack_u64map__new();
	if (!kfp->by_tid) {
		free(kfp);
		return NULL;
	}
	return kfp;
}

void rec_kfp_free(struct rec_kfp *kfp)
{
	size_t it = 0;
	uint64_t k, v;

	if (!kfp)
		return;
	while (ustack_u64map__next(kfp->by_tid, &it, &k, &v))
		free((void *)(uintptr_t)v);
	ustack_u64map__free(kfp->by_tid);
	free(kfp);
}

static struct kfp_task *task_of(struct rec *r, struct rec_kfp *kfp, uint32_t tid, int create)
{
	uint64_t v;
	struct kfp_task *t;

	if (ustack_u64map__get(kfp->by_tid, tid, &v))
		return (struct kfp_task *)(uintptr_t)v;
	if (!create)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	if (ustack_u64map__put(kfp->by_tid, tid, (uint64_t)(uintptr_t)t)) {
		free(t);
		return NULL;
	}
	return t;
}

/* The kernel's step from frame @i (pc @pc) to its caller used rbp: right
 * when the function keeps rbp as frame pointer at that pc. */
static int fp_step_ok(struct rec *r, uint64_t pc, int exact)
{
	struct ustack_row row;
	unsigned int method = 0;

	if (ustack_recmaps__find_row(r->rm, exact ? pc : pc - 1, &row, &method))
		return 0;
	if (method != USTACK_METHOD_SFRAME && method != USTACK_METHOD_CFI)
		return 0; /* PLT stubs: no frame */
	if (row.flags & (USTACK_ROW_OUTERMOST | USTACK_ROW_NEEDS_FALLBACK | USTACK_ROW_SIGNAL))
		return 0;
	return row.cfa_reg == USTACK_CFA_FP && row.cfa_off == 16 &&
	       row.ra_rule == USTACK_RULE_OFFSET && row.ra_off == -8 &&
	       row.fp_rule == USTACK_RULE_OFFSET && row.fp_off == -16;
}

/* snprintf at *n in buf, never past its end */
#define APPEND(buf, n, ...)                                                              \
	do {                                                                              \
		if (*(n) < sizeof(buf))                                                   \
			*(n) += (size_t)snprintf((buf) + *(n), sizeof(buf) - *(n), __VA_ARGS__); \
	} while (0)

static void log_stacks(const char *what, const struct kfp_task *t,
		       const struct ustack_trace_user_stack *u, const struct ustack_frame *own,
		       uint32_t nown, uint32_t trusted)
{
	char buf[600];
	size_t n = 0;

	APPEND(buf, &n, "tid %u cookie 0x%llx: %u trusted kernel frames:", u->tid,
	       (unsigned long long)t->kcookie, trusted);
	for (uint32_t i = 0; i < t->nk && i < 8; i++)
		APPEND(buf, &n, " %llx", (unsigned long long)t->kips[i]);
	APPEND(buf, &n, "; ustack's:");
	for (uint32_t i = 0; i < nown && i < 8; i++)
		APPEND(buf, &n, " %llx(%s)", (unsigned long long)own[i].pc,
		       ustack_method_name(own[i].method));
	ustack_log(USTACK_DEBUG, "ustack: kernel callchain %s, %s\n", what, buf);
}

/* Write the entry's user stack: ustack's own frames, combined with the
 * kernel's trusted frames when they came (t->have_k). */
static void kfp_write(struct rec *r, struct rec_kfp *kfp, struct kfp_task *t,
		      struct ustack_trace_user_stack *u,
		      const struct ustack_frame *own, uint32_t nown, uint32_t nr_requests,
		      int have_k)
{
	struct ustack_frame *out = kfp->out;
	uint32_t n = nown, trusted = 0, m, from_k = 0;
	int agree = 1;

	if (!have_k) {
		r->st.kfp_missing++;
		rec_write_user_stack(r, u, own, nown, nr_requests);
		return;
	}
	if (t->nk && nown && t->kips[0] != own[0].pc) {
		/* not the sample's stack: the registers the task went back to
		 * user space with are not those it had at the sample (the
		 * sample was taken inside execve(); a signal frame set up) */
		r->st.kfp_moved++;
		log_stacks("is of other registers", t, u, own, nown, 0);
		rec_write_user_stack(r, u, own, nown, nr_requests);
		return;
	}
	if (t->nk) {
		ustack_recmaps__set_pid(r->rm, u->pid);
		trusted = 1;
		while (trusted < t->nk && fp_step_ok(r, t->kips[trusted - 1], trusted == 1))
			trusted++;
	}
	m = trusted < nown ? trusted : nown;
	for (uint32_t i = 0; i < m && agree; i++)
		agree = own[i].pc == t->kips[i];
	if (!agree || !trusted) {
		if (!agree) {
			r->st.kfp_disagree++;
			log_stacks("differs", t, u, own, nown, trusted);
		}
		rec_write_user_stack(r, u, own, nown, nr_requests);
		return;
	}
	/* ustack's frames go further than the kernel's trusted ones: its
	 * walk stopped, or went wrong, at a frame without frame pointers */
	if (trusted < nown)
		r->st.kfp_untrusted++;
	memcpy(out, own, nown * sizeof(*out));
	for (uint32_t i = 0; i < m; i++) {
		out[i].method = USTACK_METHOD_KERNEL_FP;
		from_k++;
	}
	/* ustack's unwind stopped short of where the kernel's trusted frames
	 * go (a stack copy too short): they continue the stack */
	if (trusted > nown && u->stop_reason != USTACK_STOP_OUTERMOST) {
		for (uint32_t i = nown; i < trusted; i++, n++) {
			out[n] = (struct ustack_frame){ .pc = t->kips[i], .method = USTACK_METHOD_KERNEL_FP };
			from_k++;
		}
		r->st.kfp_extended++;
		u->stop_reason = trusted == t->nk ? USTACK_STOP_OUTERMOST : USTACK_STOP_NO_INFO;
	}
	if (!nown) /* frame 0 is the exact pc */
		out[0].flags |= USTACK_FRAME_EXACT_PC;
	r->st.kfp_stacks++;
	if (from_k == n) {
		r->st.kfp_whole++;
		log_stacks("used whole", t, u, own, nown, trusted);
	}
	rec_write_user_stack(r, u, out, n, nr_requests);
}

static void flush_pending(struct rec *r, struct rec_kfp *kfp, struct kfp_task *t)
{
	if (!t->pending)
		return;
	t->pending = 0;
	kfp_write(r, kfp, t, &t->pu, t->own, t->nown, t->nr_requests, t->have_k && t->kcookie &&
		  t->cookie == t->pu.cookie);
}

void rec_kfp_sample(struct rec *r, struct rec_kfp *kfp, const struct ustack_perf_sample *s,
		    uint64_t cookie)
{
	struct kfp_task *t = task_of(r, kfp, s->tid, 1);

	r->st.kfp_requests++;
	if (!t)
		return;
	if (t->cookie == cookie && t->pid == s->pid) {
		/* another event of the same entry: the kernel gives it the
		 * same cookie (one unwind per entry) */
		if (t->kcookie != s->kcookie)
			r->st.kfp_cookie_mismatch++;
		return;
	}
	flush_pending(r, kfp, t);
	t->pid = s->pid;
	t->cookie = cookie;
	t->kcookie = s->kcookie;
	t->have_k = 0;
	t->nk = 0;
	r->st.kfp_entries++;
	if (t->have_early && t->early_cookie == s->kcookie) {
		memcpy(t->kips, t->early_ips, t->early_nk * sizeof(*t->kips));
		t->nk = t->early_nk;
		t->have_k = 1;
		t->have_early = 0;
		r->st.kfp_matched++;
	}
}

void rec_kfp_deferred(struct rec *r, struct rec_kfp *kfp, const struct ustack_perf_record *rec)
{
	struct kfp_task *t = task_of(r, kfp, rec->deferred.tid, 1);
	uint32_t n = rec->deferred.nr;

	r->st.kfp_records++;
	if (n > MAX_USER_FRAMES)
		n = MAX_USER_FRAMES;
	if (!t)
		return;
	if (t->kcookie != rec->deferred.cookie) {
		/* its sample may still come (or it is a second consumer's
		 * copy of an older entry's: then no sample takes it) */
		t->have_early = 1;
		t->early_cookie = rec->deferred.cookie;
		t->early_nk = n;
		memcpy(t->early_ips, rec->deferred.ips, n * sizeof(*t->early_ips));
		return;
	}
	if (t->have_k)
		return; /* a second consumer's copy */
	r->st.kfp_matched++;
	memcpy(t->kips, rec->deferred.ips, n * sizeof(*t->kips));
	t->nk = n;
	t->have_k = 1;
	flush_pending(r, kfp, t);
}

int rec_kfp_user_stack(struct rec *r, struct rec_kfp *kfp, uint64_t cookie,
		       const struct ustack_deferred_task *task,
		       struct ustack_trace_user_stack *u, const struct ustack_deferred_stack *stack)
{
	struct kfp_task *t = task_of(r, kfp, task->tid, 0);
	uint32_t n = stack->nr < MAX_USER_FRAMES ? stack->nr : MAX_USER_FRAMES;

	if (!t || t->cookie != cookie || t->pid != task->pid)
		return 0; /* no kernel cookie for this entry: the usual path */
	if (t->have_k) {
		kfp_write(r, kfp, t, u, stack->frames, n, stack->nr_requests, 1);
		return 1;
	}
	/* the kernel's record is still to come: wait for it */
	flush_pending(r, kfp, t);
	t->pending = 1;
	t->pu = *u;
	t->nown = n;
	t->nr_requests = stack->nr_requests;
	memcpy(t->own, stack->frames, n * sizeof(*t->own));
	return 1;
}

void rec_kfp_exec(struct rec *r, struct rec_kfp *kfp, uint32_t tid)
{
	struct kfp_task *t;

	if (!kfp || !(t = task_of(r, kfp, tid, 0)))
		return;
	/* A sample taken before (or in) execve() gets its deferred callchain
	 * on the way back to user space: of the new image, not the sample's.
	 * Whatever comes for an entry still waiting is not taken. */
	if (!t->have_k)
		t->kcookie = 0;
	flush_pending(r, kfp, t);
}

void rec_kfp_exit(struct rec *r, struct rec_kfp *kfp, uint32_t tid)
{
	struct kfp_task *t;
	uint64_t v;

	if (!kfp || !(t = task_of(r, kfp, tid, 0)))
		return;
	flush_pending(r, kfp, t);
	ustack_u64map__delete(kfp->by_tid, tid, &v);
	free(t);
}

void rec_kfp_finish(struct rec *r, struct rec_kfp *kfp)
{
	size_t it = 0;
	uint64_t k, v;

	if (!kfp)
		return;
	while (ustack_u64map__next(kfp->by_tid, &it, &k, &v))
		flush_pending(r, kfp, (struct kfp_task *)(uintptr_t)v);
}
