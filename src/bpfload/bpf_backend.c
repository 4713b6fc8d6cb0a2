// SPDX-License-Identifier: MIT
/*
 * User-space half of the BPF backend: the skeleton, the tables and the ring
 * buffer.
 *
 * Tables: a file's rows (ustack_modtab__rows(), the spans find_row answers)
 * are turned into struct ub_row in *file offset* space (so the kernel side
 * needs no segment arithmetic: offset = pc - vm_start + vm_pgoff * page),
 * with explicit gap rows where no span covers, and copied into an array map
 * of their own (mmap'd), which becomes an inner map of `tables`, laid out in
 * 4 KiB chunks under directories (src/bpf/rows_layout.h). The budget
 * (table_bytes) counts the bytes of those maps; a table that does not fit
 * evicts the oldest loaded tables first (their files' frames then stop with
 * "not-loaded" until the file is mapped again), one bigger than the whole
 * budget is refused. Neither can produce a wrong frame.
 *
 * Writes to `tables` (a hash of maps) are slow: the kernel waits for an RCU
 * grace period on every update and delete of a map-in-map (10-50 ms each,
 * measured on 6.x), which made a python3 import burst block the reader for
 * half a second. So every write to `files` and `tables` goes, in order,
 * through a queue that one writer thread applies. ustack_bpf__set_file_fd()
 * queues the whole load: the writer opens the file in a module cache of
 * its own (the recorder's is not shared across threads), compiles its
 * rows, fills the inner map, then writes the maps. A walk that meets
 * a file whose entry is still queued stops with "not-loaded" and the stack
 * comes as a COPY record, as for any table not loaded yet.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/grow.h"
#include "common/dl_syms.h"
#include "common/log.h"
#include "elf/elf_file.h"
#include "bpfload/bpf_backend.h"
#include "bpfload/btf_scan.h"
#include "perf/perf_record.h"
#include "bpf/rows_layout.h"
#include "bpf/alloc_draw.h"

/* libbpf (and the libelf it loads) opened by the first ustack_bpf__open():
 * commands that never load the BPF program do not load it either. The
 * calls below, the skeleton's included, go through this table. */
#define LIBBPF_FNS(X)                                                                          \
	X(libbpf_set_print) X(libbpf_num_possible_cpus) X(bpf_object__open_skeleton)          \
	X(bpf_object__load_skeleton) X(bpf_object__attach_skeleton)                           \
	X(bpf_object__detach_skeleton) X(bpf_object__destroy_skeleton) X(bpf_map__fd)         \
	X(bpf_map__set_max_entries) X(bpf_map__set_map_flags) X(bpf_map_update_elem)          \
	X(bpf_map_lookup_elem)                                                               \
	X(bpf_map_delete_elem) X(bpf_map_create) X(bpf_program__attach)                       \
	X(bpf_obj_get_info_by_fd) X(bpf_program__fd)                                         \
	X(bpf_program__attach_tracepoint_opts) X(bpf_program__attach_perf_event)              \
	X(bpf_program__attach_kprobe_opts) X(bpf_program__set_autoload)                      \
	X(bpf_link__destroy) X(ring_buffer__new) X(ring_buffer__free) X(ring_buffer__epoll_fd) \
	X(ring_buffer__consume) X(btf__find_by_name_kind) X(btf__free) X(btf__load_vmlinux_btf)   \
	X(btf__type_by_id) X(bpf_program__attach_uprobe_opts) X(bpf_object__find_program_by_name) \
	X(bpf_enable_stats) X(bpf_map_get_next_key) X(bpf_object__next_program)              \
	X(bpf_program__name) X(bpf_program__autoload) X(bpf_program__set_log_level)           \
	X(bpf_program__set_log_buf)
DL_SYMS_STRUCT(libbpf, LIBBPF_FNS)
DL_SYMS_LOAD(libbpf_load, libbpf, LIBBPF_FNS, "libbpf.so.1")
#define libbpf_set_print (libbpf.libbpf_set_print)
#define libbpf_num_possible_cpus (libbpf.libbpf_num_possible_cpus)
#define bpf_object__open_skeleton (libbpf.bpf_object__open_skeleton)
#define bpf_object__load_skeleton (libbpf.bpf_object__load_skeleton)
#define bpf_object__attach_skeleton (libbpf.bpf_object__attach_skeleton)
#define bpf_object__detach_skeleton (libbpf.bpf_object__detach_skeleton)
#define bpf_object__destroy_skeleton (libbpf.bpf_object__destroy_skeleton)
#define bpf_map__fd (libbpf.bpf_map__fd)
#define bpf_map__set_max_entries (libbpf.bpf_map__set_max_entries)
#define bpf_map__set_map_flags (libbpf.bpf_map__set_map_flags)
#define bpf_map_update_elem (libbpf.bpf_map_update_elem)
#define bpf_map_lookup_elem (libbpf.bpf_map_lookup_elem)
#define bpf_map_delete_elem (libbpf.bpf_map_delete_elem)
#define bpf_map_create (libbpf.bpf_map_create)
#define bpf_program__attach (libbpf.bpf_program__attach)
#define bpf_obj_get_info_by_fd (libbpf.bpf_obj_get_info_by_fd)
#define bpf_program__fd (libbpf.bpf_program__fd)
#define bpf_program__attach_tracepoint_opts (libbpf.bpf_program__attach_tracepoint_opts)
#define bpf_program__attach_perf_event (libbpf.bpf_program__attach_perf_event)
#define bpf_program__attach_kprobe_opts (libbpf.bpf_program__attach_kprobe_opts)
#define bpf_program__set_autoload (libbpf.bpf_program__set_autoload)
#define bpf_program__attach_uprobe_opts (libbpf.bpf_program__attach_uprobe_opts)
#define bpf_object__find_program_by_name (libbpf.bpf_object__find_program_by_name)
#define bpf_map_get_next_key (libbpf.bpf_map_get_next_key)
#define bpf_link__destroy (libbpf.bpf_link__destroy)
#define ring_buffer__new (libbpf.ring_buffer__new)
#define ring_buffer__free (libbpf.ring_buffer__free)
#define ring_buffer__epoll_fd (libbpf.ring_buffer__epoll_fd)
#define ring_buffer__consume (libbpf.ring_buffer__consume)
#define btf__find_by_name_kind (libbpf.btf__find_by_name_kind)
#define btf__free (libbpf.btf__free)
#define btf__load_vmlinux_btf (libbpf.btf__load_vmlinux_btf)
#define btf__type_by_id (libbpf.btf__type_by_id)
#define bpf_enable_stats (libbpf.bpf_enable_stats)
#define bpf_object__next_program (libbpf.bpf_object__next_program)
#define bpf_program__name (libbpf.bpf_program__name)
#define bpf_program__autoload (libbpf.bpf_program__autoload)
#define bpf_program__set_log_level (libbpf.bpf_program__set_log_level)
#define bpf_program__set_log_buf (libbpf.bpf_program__set_log_buf)

#include "record.skel.h"
#include <ustack/ustack.h>

#define DEFAULT_TABLE_BYTES (256ull << 20)
#define DEFAULT_RING_BYTES (16u << 20)

struct loaded {
	struct ub_file_key key; /* its file's entry in the files map */
	uint32_t table_id;
	uint32_t rows;
	uint64_t bytes; /* of its inner map (the budget's unit) */
};

/* A write to the kernel's maps, applied by the writer thread in order. */
struct map_op {
	/* OP_BUILD: build the rows first, from the file open at @fd */
	enum { OP_SET, OP_EVICT, OP_BUILD } kind;
	struct ub_file_key key;
	struct ub_file_val val; /* OP_SET: the files entry (after tables[table_id] = fd) */
	uint32_t table_id;
	int fd; /* OP_SET with a table: the inner map, closed once in; OP_BUILD: the file */
};

struct ustack_bpf {
	struct ustack_record_bpf *skel;
	uint32_t targets_max; /* entries of `targets` */
	void *elf_copy; /* the object libbpf reads on 7.x kernels (skel_open) */
	char *vstats;   /* USTACK_BPF_VERIFIER_STATS: the programs' verifier logs */
	struct ring_buffer *ring;
	int epfd; /* the ring's epoll fd and the fds of ustack_bpf__watch_fd */
	/* one per perf event fd (record -p: per thread and CPU, thousands for
	 * a process of thousands of threads), tracepoint and follower */
	struct bpf_link **links;
	size_t nr_links, cap_links;
	int nr_cpus;
	int no_tables; /* USTACK_BPF_NO_TABLES: a test knob, below */
	uint64_t table_bytes, max_table_bytes, table_rows;
	uint32_t next_table;
	/* loaded tables, oldest first (eviction order) */
	struct loaded *fifo;
	size_t fifo_head, fifo_len, fifo_cap;
	/* poll */
	ustack_bpf_record_fn fn;
	void *fn_ctx;
	uint64_t ring_bytes, kstack_bytes;
	uint64_t evicted, refused, load_ns;
	int warned_budget;
	/* the writer: ops[] (a ring, under lock), fifo and the counters above
	 * are shared with it */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* an op queued, the queue empty, stop */
	pthread_t writer;
	int writer_started, writer_busy, stopping;
	struct ustack_modcache *wmc; /* the writer's own module cache */
	uint64_t loaded;
	int warned_load;
	/* system-call events through kprobes (syscall_route) */
	int syscall_kprobes;
	int no_tracepoints;     /* its tracepoint programs not loaded (opts) */
	int offcpu; /* the off-CPU program is loaded */
	struct bpf_link *sched_link; /* and attached */
	uint32_t nr_probes; /* the probe programs are loaded, the probes map this long */
	/* uprobe links, apart: detached at the end of the recording */
	struct bpf_link **plinks;
	size_t nr_plinks, cap_plinks;
	int alloc_on;       /* the allocation programs are loaded (record --alloc) */
	int stats_fd;       /* BPF_ENABLE_STATS: run times counted while open (-1) */
	int stats_errno;    /* why not (0: on, or no probe) */
	struct map_op *ops;
	size_t ops_head, ops_len, ops_cap;
};

/* libbpf's messages: kept for the one-line error, printed with -v only */
static char last_libbpf_msg[512];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[480], *all = NULL;
	va_list aq;

	if (level == LIBBPF_DEBUG)
		return 0;
	va_copy(aq, ap);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	if (buf[0] && strncmp(buf, "libbpf: prog '", 14) && strstr(buf, "failed"))
		snprintf(last_libbpf_msg, sizeof(last_libbpf_msg), "%s", buf);
	/* the whole message for the debug log: a verifier log is many lines */
	if (vasprintf(&all, fmt, aq) < 0)
		all = NULL;
	va_end(aq);
	ustack_log(USTACK_DEBUG, "ustack: %s%s", all ? all : buf, all ? "" : "\n");
	free(all);
	return 0;
}

/* Whether this process holds a capability that lets it load BPF
 * programs: CAP_BPF (39) or CAP_SYS_ADMIN (21), in CapEff */
static int bpf_privileged(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return geteuid() == 0;
	return !!(d[0].effective & (1u << 21)) || !!(d[1].effective & (1u << (39 - 32)));
}

void ustack_bpf__load_why(int ret, int has_btf, int privileged, const char *libbpf_msg,
			  char *err, size_t errlen)
{
	const char *sep = libbpf_msg && *libbpf_msg ? ": " : "";

	if (!libbpf_msg)
		libbpf_msg = "";
	if (!has_btf)
		snprintf(err, errlen, "BPF backend: the kernel has no BTF (/sys/kernel/btf/vmlinux); "
			 "CO-RE programs cannot be loaded");
	else if (ret == -EPERM || (ret == -EACCES && !privileged))
		snprintf(err, errlen, "BPF backend: not permitted to load BPF programs (need root, or "
			 "CAP_BPF and CAP_PERFMON)");
	else if (ret == -EACCES)
		/* with the capabilities, EACCES is the verifier's: a program
		 * it cannot prove safe on this kernel (its log: -v) */
		snprintf(err, errlen, "BPF backend: the kernel's verifier rejected the program "
			 "(run with -v for its log)%s%s", sep, libbpf_msg);
	else if (ret == -EINVAL || ret == -E2BIG || ret == -ENOSPC)
		snprintf(err, errlen, "BPF backend: the kernel rejected the program (%s)%s%s",
			 strerror(-ret), sep, libbpf_msg);
	else
		snprintf(err, errlen, "BPF backend: loading the program failed: %s%s%s",
			 strerror(-ret), sep, libbpf_msg);
}

/* Why loading failed, in one line. */
static void load_error(int ret, char *err, size_t errlen)
{
	ustack_bpf__load_why(ret, !access("/sys/kernel/btf/vmlinux", R_OK),
			     ret == -EACCES ? bpf_privileged() : 1, last_libbpf_msg, err, errlen);
}

/*
 * The task-work kfunc the deferred walks use changed between kernels:
 *   6.18: bpf_task_work_schedule_resume_impl(task, tw, map, cb, void *aux__prog)
 *   7.x:  bpf_task_work_schedule_resume(task, tw, map, cb), the program's
 *         aux implicit (KF_IMPLICIT_ARGS); the _impl name is still in BTF,
 *         with `struct bpf_prog_aux *aux` (libbpf refuses the program's
 *         void * declaration), and has no address the verifier could call.
 * The program declares both, weak, and calls the one that resolved. On a
 * 7.x kernel the _impl extern is renamed in a copy of the object before it
 * is opened (shortened by one letter in place: the string tables keep
 * their offsets), so that it resolves to nothing and its call is dead code.
 */
static const char tw_impl[] = "bpf_task_work_schedule_resume_impl";
static const char tw_plain[] = "bpf_task_work_schedule_resume";

/* What the running kernel's BTF says about it. */
struct kernel_facts {
	int tw_implicit;       /* the task-work kfunc's implicit-argument form */
	int tw_any;            /* a task-work kfunc, either form (6.18+) */
	int tp_sys_faultable;  /* system-call tracepoint programs run preemptibly */
};

static void kernel_facts(struct kernel_facts *f)
{
	/* 7.x runs system-call tracepoint programs through
	 * trace_call_bpf_faultable(), under migrate_disable() only */
	struct ustack_btf_func fn[] = { { .name = tw_plain }, { .name = "trace_call_bpf_faultable" },
					{ .name = tw_impl } };
	struct btf *kbtf;
	const struct btf_type *t;
	int id, ret;

	memset(f, 0, sizeof(*f));
	/* libbpf's parse of the file costs 50-100 ms, and the skeleton's
	 * load parses it again: a walk of the raw file is enough */
	ret = ustack_btf_scan_file("/sys/kernel/btf/vmlinux", fn, ARRAY_SIZE(fn));
	if (!ret) {
		f->tw_implicit = fn[0].found && fn[0].nr_params == 4;
		f->tp_sys_faultable = fn[1].found;
		f->tw_any = fn[0].found || fn[2].found;
		return;
	}
	pr_debug("BPF backend: /sys/kernel/btf/vmlinux: %s; asking libbpf\n",
		 ret == -EBADMSG ? "a form the BTF scan does not know" : strerror(-ret));
	kbtf = btf__load_vmlinux_btf();
	if (!kbtf)
		return;
	id = btf__find_by_name_kind(kbtf, tw_plain, BTF_KIND_FUNC);
	if (id > 0 && (t = btf__type_by_id(kbtf, btf__type_by_id(kbtf, id)->type)) &&
	    btf_is_func_proto(t) && btf_vlen(t) == 4)
		f->tw_implicit = 1;
	f->tp_sys_faultable = btf__find_by_name_kind(kbtf, fn[1].name, BTF_KIND_FUNC) > 0;
	f->tw_any = id > 0 || btf__find_by_name_kind(kbtf, tw_impl, BTF_KIND_FUNC) > 0;
	btf__free(kbtf);
}

/* A copy of the object's ELF with the _impl extern's name cut by its last
 * letter (a name no kernel has), or NULL */
static void *elf_renamed(const void *elf, size_t sz)
{
	uint8_t *copy = malloc(sz);
	size_t n = sizeof(tw_impl); /* with its NUL */
	int found = 0;

	if (!copy)
		return NULL;
	memcpy(copy, elf, sz);
	for (size_t i = 0; i + n <= sz; i++)
		if (!memcmp(copy + i, tw_impl, n) && (i == 0 || copy[i - 1] == 0)) {
			copy[i + n - 2] = 0;
			found = 1;
		}
	if (!found) {
		free(copy);
		return NULL;
	}
	ustack_log(USTACK_DEBUG, "ustack: BPF backend: %s() with the program's aux implicit "
		   "(7.x)\n", tw_plain);
	return copy;
}

/* ustack_record_bpf__open(), from the renamed copy on a 7.x kernel */
static struct ustack_record_bpf *skel_open(void **elf_copy, int tw_implicit)
{
	struct ustack_record_bpf *obj;
	int err;

	*elf_copy = NULL;
	if (!tw_implicit)
		return ustack_record_bpf__open();
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return NULL;
	err = ustack_record_bpf__create_skeleton(obj);
	if (!err) {
		/* libbpf reads the object from this buffer: kept until destroy */
		*elf_copy = elf_renamed(obj->skeleton->data, obj->skeleton->data_sz);
		if (*elf_copy)
			obj->skeleton->data = *elf_copy;
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	}
	if (err) {
		ustack_record_bpf__destroy(obj);
		free(*elf_copy);
		*elf_copy = NULL;
		errno = err < 0 ? -err : EINVAL;
		return NULL;
	}
	return obj;
}

/*
 * System-call events (syscalls:sys_enter_NAME / sys_exit_NAME) go through a
 * kprobe / kretprobe on the call's function where the kernel runs
 * system-call tracepoint programs preemptibly (7.x): there, while a task
 * is preempted inside the program, the kernel skips the program for every
 * other task on that CPU (bpf_prog->active), and a thread can lose all of
 * its events. A kprobe's program runs with preemption off. The user
 * registers are the same at both places, and nothing between the
 * tracepoint and the function's entry changes them.
 * USTACK_BPF_SYSCALLS=kprobe|tracepoint overrides (tests, debugging).
 */
static int syscall_route(int faultable)
{
	const char *e = getenv("USTACK_BPF_SYSCALLS");

	if (e && !strcmp(e, "kprobe"))
		return 1;
	if (e && !strcmp(e, "tracepoint"))
		return 0;
	return faultable;
}

/* A test or debugging knob (USTACK_BPF_*) is on when set to something
 * other than "" or "0": the same rule for each. */
static int knob_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

/* A debugging and benchmark knob: USTACK_BPF_VERIFIER_STATS=1 prints, for
 * each program loaded, the kernel verifier's statistics (BPF_LOG_STATS:
 * its time, instructions processed and states), which say what a
 * program costs to load on this kernel (docs/PERFORMANCE.md, "record:
 * start-up") */
#define VSTATS_BYTES 4096

static void verifier_stats_on(struct ustack_bpf *b)
{
	struct bpf_program *p = NULL;
	size_t n = 0;

	if (!knob_on("USTACK_BPF_VERIFIER_STATS"))
		return;
	while ((p = bpf_object__next_program(b->skel->obj, p)))
		n++;
	b->vstats = calloc(n ? n : 1, VSTATS_BYTES);
	if (!b->vstats)
		return;
	n = 0;
	while ((p = bpf_object__next_program(b->skel->obj, p))) {
		bpf_program__set_log_buf(p, b->vstats + n++ * VSTATS_BYTES, VSTATS_BYTES);
		bpf_program__set_log_level(p, 4); /* BPF_LOG_STATS */
	}
}

static void verifier_stats_print(struct ustack_bpf *b)
{
	struct bpf_program *p = NULL;
	size_t n = 0;

	if (!b->vstats)
		return;
	while ((p = bpf_object__next_program(b->skel->obj, p))) {
		char *log = b->vstats + n++ * VSTATS_BYTES, *line, *save = NULL;

		log[VSTATS_BYTES - 1] = 0;
		if (!bpf_program__autoload(p))
			continue;
		for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			pr_warn("BPF backend: verifier: %s: %s\n", bpf_program__name(p), line);
	}
	free(b->vstats);
	b->vstats = NULL;
}

/* How the largest maps are allocated. The kernel stack map has one entry
 * where no event takes a kernel stack. Preallocated, the kernel builds
 * every element of max_entries at its creation: 25-35 ms of a bpf
 * record's start-up on 6.18 for deferreds (65,536 walks kept for task
 * work), ustack_sample's alone: one element without sampling. Elements
 * allocated as they are added instead (BPF_F_NO_PREALLOC: the BPF memory
 * allocator; kernels before it let a perf_event program use only
 * preallocated hash maps) where the kernel has the task-work kfunc, so
 * 6.18+: older kernels load what they always did. An add that finds no
 * element walks the sample at once, as a busy one does. Not targets: an
 * add there that failed (the allocator's per-CPU cache empty in the fork
 * tracepoint) would leave a child untraced without a word; the one .ci/run
 * with it non-preallocated lost a reused pid's whole call in offcpu
 * reuse/bpf, as such a child would (the likeliest cause, not proven). */
static void maps_alloc(struct ustack_bpf *b, const struct ustack_bpf_opts *o,
		       const struct kernel_facts *kf)
{
	int sampling = !(o->sz >= offsetof(struct ustack_bpf_opts, no_sampling) +
				   sizeof(o->no_sampling) && o->no_sampling);

	if (!sampling)
		bpf_map__set_max_entries(b->skel->maps.deferreds, 1);
	if (o->sz >= offsetof(struct ustack_bpf_opts, no_kernel_stacks) +
			     sizeof(o->no_kernel_stacks) &&
	    o->no_kernel_stacks)
		bpf_map__set_max_entries(b->skel->maps.kstacks, 1);
	/* a test knob: a kernel stack map of one entry, where every kernel
	 * stack but the first is sent whole (UB_REC_KSTACK) */
	else if (knob_on("USTACK_BPF_KSTACK_ONE"))
		bpf_map__set_max_entries(b->skel->maps.kstacks, 1);
	/* a test knob: room for N processes in `targets` (the recorded ones
	 * and every process they start while they live) */
	b->targets_max = UB_TARGETS_MAX;
	if (getenv("USTACK_BPF_TARGETS_MAX") && atoi(getenv("USTACK_BPF_TARGETS_MAX")) > 0)
		b->targets_max = (uint32_t)atoi(getenv("USTACK_BPF_TARGETS_MAX"));
	bpf_map__set_max_entries(b->skel->maps.targets, b->targets_max);
	if (!kf->tw_any)
		return;
	bpf_map__set_map_flags(b->skel->maps.deferreds, BPF_F_NO_PREALLOC);
}

/* The off-CPU program's rodata; loaded (verified) only where it is used. */
static void offcpu_opts(struct ustack_bpf *b, const struct ustack_bpf_opts *o)
{
	uint32_t sleep = UB_NO_EVENT, preempt = UB_NO_EVENT;

	if (o->sz >= offsetof(struct ustack_bpf_opts, offcpu_min_ns) + sizeof(o->offcpu_min_ns) &&
	    o->offcpu_sleep_event != o->offcpu_preempt_event) {
		sleep = o->offcpu_sleep_event;
		preempt = o->offcpu_preempt_event;
		b->skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
	}
	b->skel->rodata->offcpu_sleep_event = sleep;
	b->skel->rodata->offcpu_preempt_event = preempt;
	b->offcpu = sleep != UB_NO_EVENT || preempt != UB_NO_EVENT;
	bpf_program__set_autoload(b->skel->progs.ustack_offcpu, b->offcpu);
}

/* The probe programs and their map; loaded (verified) only where used. */
static void probe_opts(struct ustack_bpf *b, const struct ustack_bpf_opts *o)
{
	if (o->sz >= offsetof(struct ustack_bpf_opts, nr_probes) + sizeof(o->nr_probes))
		b->nr_probes = o->nr_probes;
	bpf_program__set_autoload(b->skel->progs.ustack_uprobe, b->nr_probes > 0);
	bpf_program__set_autoload(b->skel->progs.ustack_uretprobe, b->nr_probes > 0);
	if (b->nr_probes)
		bpf_map__set_max_entries(b->skel->maps.probes, b->nr_probes);
}

/* The kernel counts a program's run time and runs only while BPF stats
 * are on (kernel.bpf_stats_enabled, or an fd of BPF_ENABLE_STATS, which
 * keeps them on until it is closed: nothing left behind when ustack is
 * killed). Probe recordings turn them on for their cost per hit; it costs
 * every BPF program of the machine two clock reads per run meanwhile. */
static void probe_stats_on(struct ustack_bpf *b)
{
	if (!b->nr_probes && !b->alloc_on)
		return;
	b->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (b->stats_fd < 0) {
		b->stats_errno = errno ? errno : -b->stats_fd;
		b->stats_fd = -1;
		pr_debug("BPF backend: BPF_ENABLE_STATS: %s: the probes' in-kernel time per hit "
			 "is not measured (probe_run_ns 0)\n", strerror(b->stats_errno));
	}
}


/* The allocation programs' rodata and live map; loaded only with --alloc. */
static void alloc_opts(struct ustack_bpf *b, const struct ustack_bpf_opts *o)
{
	ub_u64 lnm[UB_ALLOC_LN_N + 1];
	int on = o->sz >= offsetof(struct ustack_bpf_opts, alloc_live_max) +
				  sizeof(o->alloc_live_max) &&
		 o->alloc_event != o->free_event && o->alloc_event != UB_NO_EVENT;

	b->skel->rodata->alloc_event = on ? o->alloc_event : UB_NO_EVENT;
	b->skel->rodata->free_event = on ? o->free_event : UB_NO_EVENT;
	b->skel->rodata->alloc_mean = on ? o->alloc_mean : 1;
	ub_alloc_lnm_fill(lnm);
	for (size_t i = 0; i <= UB_ALLOC_LN_N; i++)
		b->skel->rodata->alloc_lnm[i] = lnm[i];
	bpf_map__set_max_entries(b->skel->maps.alloc_live,
				 on && o->alloc_live_max ? o->alloc_live_max : 1);
	bpf_program__set_autoload(b->skel->progs.ustack_alloc_enter, on);
	bpf_program__set_autoload(b->skel->progs.ustack_alloc_ret, on);
	bpf_program__set_autoload(b->skel->progs.ustack_alloc_free, on);
	bpf_program__set_autoload(b->skel->progs.ustack_alloc_hit, on);
	b->alloc_on = on;
}

struct ustack_bpf *ustack_bpf__open(const struct ustack_bpf_opts *o, char *err, size_t errlen)
{
	struct ustack_bpf *b = calloc(1, sizeof(*b));
	uint32_t ring = o->ring_bytes ? o->ring_bytes : DEFAULT_RING_BYTES;
	struct kernel_facts kf;
	int ret;

	err[0] = 0;
	last_libbpf_msg[0] = 0;
	if (!b) {
		snprintf(err, errlen, "BPF backend: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (libbpf_load()) {
		snprintf(err, errlen, "BPF backend: libbpf.so.1 not found (or too old)");
		free(b);
		errno = ENOSYS;
		return NULL;
	}
	b->stats_fd = -1;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	libbpf_set_print(libbpf_print);
	b->nr_cpus = libbpf_num_possible_cpus();
	b->max_table_bytes = o->table_bytes ? o->table_bytes : DEFAULT_TABLE_BYTES;
	kernel_facts(&kf);
	b->skel = skel_open(&b->elf_copy, kf.tw_implicit);
	if (!b->skel) {
		ret = -errno;
		load_error(ret, err, errlen);
		goto fail;
	}
	b->syscall_kprobes = syscall_route(kf.tp_sys_faultable);
	b->skel->rodata->tp_preemptible = kf.tp_sys_faultable;
	/* each program is verified only where it is used */
	if (o->sz >= offsetof(struct ustack_bpf_opts, no_sampling) + sizeof(o->no_sampling)) {
		b->no_tracepoints = o->no_tracepoints;
		bpf_program__set_autoload(b->skel->progs.ustack_tp, !o->no_tracepoints);
		bpf_program__set_autoload(b->skel->progs.ustack_sample, !o->no_sampling);
	}
	bpf_program__set_autoload(b->skel->progs.ustack_kp, b->syscall_kprobes && !b->no_tracepoints);
	maps_alloc(b, o, &kf);
	offcpu_opts(b, o);
	probe_opts(b, o);
	alloc_opts(b, o);
	if (o->sz >= offsetof(struct ustack_bpf_opts, probe_rate_max) + sizeof(o->probe_rate_max))
		b->skel->rodata->probe_rate_max = o->probe_rate_max;
	b->skel->rodata->trace_all = !!o->trace_all;
	b->skel->rodata->self_tgid = o->self_tgid;
	b->skel->rodata->sample_event = o->sample_event;
	/* the reader is woken when an eighth of the ring is used, and polls
	 * with a timeout (a wakeup per event cost a CPU-bound program 7% at
	 * 999 Hz: the reader's context switches on its CPUs) */
	b->skel->rodata->wake_bytes = ring / 8;
	b->skel->rodata->copy_limit = ring / 2;
	/* a test knob: every walk that would send a copy keeps its partial
	 * stack, as under a ring half full */
	if (knob_on("USTACK_BPF_NO_COPIES"))
		b->skel->rodata->copy_limit = 1;
	/* a test and debugging knob: every sample walked in task context */
	b->skel->rodata->use_vcache = !knob_on("USTACK_BPF_NO_VMA_CACHE");
	/* a test knob: no file is given to the kernel, so that every walk
	 * stops at its first frame (not-loaded) and ends in a stack copy,
	 * unwound in user space */
	b->no_tables = knob_on("USTACK_BPF_NO_TABLES");
	bpf_map__set_max_entries(b->skel->maps.rb, ring);
	verifier_stats_on(b);
	/* attached explicitly, when and where needed */
	ret = ustack_record_bpf__load(b->skel);
	verifier_stats_print(b);
	if (ret) {
		load_error(ret, err, errlen);
		goto fail;
	}
	probe_stats_on(b);
	return b;
fail:
	ustack_bpf__close(b);
	errno = -ret;
	return NULL;
}

void ustack_bpf__close(struct ustack_bpf *b)
{
	if (!b)
		return;
	if (b->writer_started) {
		pthread_mutex_lock(&b->lock);
		b->stopping = 1;
		pthread_cond_broadcast(&b->cond);
		pthread_mutex_unlock(&b->lock);
		pthread_join(b->writer, NULL);
	}
	for (size_t i = 0; i < b->ops_len; i++) {
		struct map_op *op = &b->ops[(b->ops_head + i) % b->ops_cap];

		if (op->kind != OP_EVICT && op->fd >= 0)
			close(op->fd);
	}
	free(b->ops);
	ustack_modcache__free(b->wmc);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
	for (size_t i = 0; i < b->nr_links; i++)
		bpf_link__destroy(b->links[i]);
	bpf_link__destroy(b->sched_link);
	free(b->links);
	ustack_bpf__detach_probes(b);
	free(b->plinks);
	if (b->stats_fd >= 0)
		close(b->stats_fd);
	ring_buffer__free(b->ring);
	if (b->epfd > 0)
		close(b->epfd);
	ustack_record_bpf__destroy(b->skel);
	free(b->elf_copy);
	free(b->fifo);
	free(b);
}

int ustack_bpf__set_python(struct ustack_bpf *b, uint32_t tgid, const struct ub_pyconf *c)
{
	int fd = bpf_map__fd(b->skel->maps.pyprocs);

	if (!c)
		return bpf_map_delete_elem(fd, &tgid) && errno != ENOENT ? -errno : 0;
	/* before the entry: an event that sees the entry also looks it up */
	if (b->skel->bss)
		__atomic_store_n(&b->skel->bss->py_any, 1, __ATOMIC_SEQ_CST);
	return bpf_map_update_elem(fd, &tgid, c, BPF_ANY) ? -errno : 0;
}

int ustack_bpf__add_target(struct ustack_bpf *b, uint32_t tgid, int armed)
{
	uint8_t st = armed ? UB_TARGET_ARMED : UB_TARGET_ACTIVE;

	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.targets), &tgid, &st, BPF_ANY))
		return -errno;
	/* after the write: the program's memo of targets' answers
	 * (record.bpf.c, traced()) holds under one generation */
	if (b->skel->bss)
		__atomic_add_fetch(&b->skel->bss->targets_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int add_link(struct ustack_bpf *b, struct bpf_link *l, const char *what, char *err,
		    size_t errlen)
{
	int ret = -errno;

	if (!l) {
		snprintf(err, errlen, "BPF backend: attaching to %s: %s", what, strerror(-ret));
		return ret;
	}
	/* no fixed limit: a fixed 512 failed record -p of a process of 256
	 * threads on 2 CPUs ("more than 512 attachments") */
	if (ustack_grow((void **)&b->links, &b->cap_links, b->nr_links + 1, sizeof(*b->links), 64)) {
		bpf_link__destroy(l);
		snprintf(err, errlen, "BPF backend: attaching to %s: out of memory", what);
		return -ENOMEM;
	}
	b->links[b->nr_links++] = l;
	return 0;
}

int ustack_bpf__attach_uprobe(struct ustack_bpf *b, const char *prog, int retprobe, int pid,
			      const char *path, uint64_t offset, uint64_t ref_ctr_offset,
			      uint64_t cookie, char *err, size_t errlen)
{
	struct bpf_program *p = bpf_object__find_program_by_name(b->skel->obj, prog);
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = !!retprobe, .ref_ctr_offset = ref_ctr_offset,
		    .bpf_cookie = cookie);
	char what[PATH_MAX + 64];
	struct bpf_link *l;
	int ret;

	if (!p) {
		snprintf(err, errlen, "BPF backend: no program %s in the object", prog);
		return -ENOENT;
	}
	snprintf(what, sizeof(what), "%s %s+%#llx", retprobe ? "uretprobe" : "uprobe", path,
		 (unsigned long long)offset);
	l = bpf_program__attach_uprobe_opts(p, pid, path, (size_t)offset, &uo);
	if (!l) {
		ret = -errno;
		snprintf(err, errlen, "BPF backend: attaching to %s: %s", what, strerror(-ret));
		return ret;
	}
	if (ustack_grow((void **)&b->plinks, &b->cap_plinks, b->nr_plinks + 1, sizeof(*b->plinks),
			16)) {
		bpf_link__destroy(l);
		snprintf(err, errlen, "BPF backend: attaching to %s: out of memory", what);
		return -ENOMEM;
	}
	b->plinks[b->nr_plinks++] = l;
	return 0;
}

void ustack_bpf__detach_probes(struct ustack_bpf *b)
{
	for (size_t i = 0; i < b->nr_plinks; i++)
		bpf_link__destroy(b->plinks[i]);
	b->nr_plinks = 0;
}

int ustack_bpf__set_probe(struct ustack_bpf *b, uint32_t idx, const struct ub_probe *p)
{
	if (idx >= b->nr_probes)
		return -ERANGE;
	return bpf_map_update_elem(bpf_map__fd(b->skel->maps.probes), &idx, p, BPF_ANY) ? -errno : 0;
}

int ustack_bpf__attach_follow(struct ustack_bpf *b, char *err, size_t errlen)
{
	int ret = add_link(b, bpf_program__attach(b->skel->progs.ustack_fork), "sched_process_fork",
			   err, errlen);

	if (!ret)
		ret = add_link(b, bpf_program__attach(b->skel->progs.ustack_exec),
			       "sched_process_exec", err, errlen);
	if (!ret)
		ret = add_link(b, bpf_program__attach(b->skel->progs.ustack_exit),
			       "sched_process_exit", err, errlen);
	return ret;
}

/* syscalls:sys_enter_NAME as a kprobe on __x64_sys_NAME, sys_exit_NAME as
 * a kretprobe on it. 0 attached, 1 not possible (no such function: the
 * tracepoint is used), -errno. */
static int attach_syscall_kprobe(struct ustack_bpf *b, const char *name, uint32_t event,
				 char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_kprobe_opts, ko, .bpf_cookie = event);
	const char *call;
	char fn[160];
	struct bpf_link *l;

	if (!strncmp(name, "sys_enter_", 10))
		call = name + 10;
	else if (!strncmp(name, "sys_exit_", 9)) {
		call = name + 9;
		ko.retprobe = true;
	} else
		return 1;
	snprintf(fn, sizeof(fn), "__x64_sys_%s", call);
	l = bpf_program__attach_kprobe_opts(b->skel->progs.ustack_kp, fn, &ko);
	if (!l) {
		pr_debug("BPF backend: kprobe on %s: %s\n", fn, strerror(errno));
		return 1;
	}
	pr_debug("BPF backend: syscalls:%s through a %s on %s\n", name,
		 ko.retprobe ? "kretprobe" : "kprobe", fn);
	return add_link(b, l, fn, err, errlen);
}

int ustack_bpf__attach_tracepoint(struct ustack_bpf *b, const char *sys, const char *name,
				  uint32_t event, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_tracepoint_opts, to, .bpf_cookie = event);
	char what[256];
	int ret;

	snprintf(what, sizeof(what), "tracepoint %s:%s", sys, name);
	if (b->no_tracepoints) {
		snprintf(err, errlen, "BPF backend: %s: opened without tracepoint events", what);
		return -ENOENT;
	}
	if (b->syscall_kprobes && (event & UB_TP_SYSCALL)) {
		ret = attach_syscall_kprobe(b, name, event, err, errlen);

		if (ret <= 0)
			return ret;
		pr_warn("BPF backend: %s: no kprobe on its system call's function; on this "
			"kernel its events can be skipped while another task is preempted in "
			"the program (counted)\n", what);
	}
	/* the process-following work at these two hits is ustack_tp's while
	 * it records them (UB_TPC_EXEC, UB_TPC_EXIT in record_abi.h) */
	if (!strcmp(sys, "sched") && !strcmp(name, "sched_process_exec"))
		to.bpf_cookie |= UB_TPC_EXEC;
	if (!strcmp(sys, "sched") && !strcmp(name, "sched_process_exit"))
		to.bpf_cookie |= UB_TPC_EXIT;
	ret = add_link(b, bpf_program__attach_tracepoint_opts(b->skel->progs.ustack_tp, sys, name, &to),
		       what, err, errlen);
	if (!ret && (to.bpf_cookie & UB_TPC_EXIT))
		__atomic_store_n(&b->skel->bss->exit_by_tp, 1, __ATOMIC_SEQ_CST);
	return ret;
}

int ustack_bpf__attach_sched(struct ustack_bpf *b, char *err, size_t errlen)
{
	if (!b->offcpu) {
		snprintf(err, errlen, "BPF backend: sched_switch: no off-CPU event was given");
		return -ENOENT;
	}
	if (b->sched_link)
		return 0;
	b->sched_link = bpf_program__attach(b->skel->progs.ustack_offcpu);
	if (!b->sched_link) {
		int ret = -errno;

		snprintf(err, errlen, "BPF backend: attaching to tp_btf/sched_switch: %s",
			 strerror(-ret));
		return ret;
	}
	return 0;
}

void ustack_bpf__detach_sched(struct ustack_bpf *b)
{
	bpf_link__destroy(b->sched_link);
	b->sched_link = NULL;
}

int ustack_bpf__attach_perf(struct ustack_bpf *b, int fd, char *err, size_t errlen)
{
	return add_link(b, bpf_program__attach_perf_event(b->skel->progs.ustack_sample, fd),
			"a perf event", err, errlen);
}

/* ---- tables ------------------------------------------------------------------- */

int ustack_bpf__has_file(struct ustack_bpf *b, uint64_t dev, uint64_t ino)
{
	struct ub_file_key k = { .dev = dev, .ino = ino };
	struct ub_file_val v;
	int queued = 0;

	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->ops_len && !queued; i++) {
		const struct map_op *op = &b->ops[(b->ops_head + i) % b->ops_cap];

		queued = op->kind != OP_EVICT && op->key.dev == dev && op->key.ino == ino;
	}
	pthread_mutex_unlock(&b->lock);
	return queued || !bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.files), &k, &v);
}

/* ---- the writer: every write to files and tables, in order --------------------- */

/* Take back the budget of a table that never made it in (under lock). */
static void unaccount(struct ustack_bpf *b, uint32_t table_id)
{
	for (size_t i = 0; i < b->fifo_len; i++) {
		struct loaded *l = &b->fifo[(b->fifo_head + i) % b->fifo_cap];

		if (l->table_id == table_id) {
			b->table_bytes -= l->bytes;
			b->table_rows -= l->rows;
			l->bytes = 0; /* evicting it deletes nothing */
			l->rows = 0;
			break;
		}
	}
	b->refused++;
}

static int prepare_set(struct ustack_bpf *b, struct ustack_modtab *m, struct map_op *op);

/* OP_BUILD: the file's tables, from the writer's own cache, then OP_SET. */
static void build_op(struct ustack_bpf *b, struct map_op *op);

/* After a write to `files`: walks kept as hot stacks under the old entries
 * are not taken again (record.bpf.c, hot_take). */
static void files_changed(struct ustack_bpf *b)
{
	if (b->skel->bss)
		__atomic_add_fetch(&b->skel->bss->files_gen, 1, __ATOMIC_SEQ_CST);
}

static void apply_op(struct ustack_bpf *b, struct map_op *op)
{
	int files = bpf_map__fd(b->skel->maps.files), tables = bpf_map__fd(b->skel->maps.tables);
	struct ub_file_val v;
	int ret = 0;

	if (op->kind == OP_BUILD) {
		build_op(b, op);
		return;
	}
	if (op->kind == OP_EVICT) {
		if (!bpf_map_lookup_elem(files, &op->key, &v) && v.table_id == op->table_id) {
			v.flags &= ~UB_FILE_TABLE;
			v.table_id = 0;
			bpf_map_update_elem(files, &op->key, &v, BPF_ANY);
			files_changed(b);
		}
		bpf_map_delete_elem(tables, &op->table_id);
		return;
	}
	if (op->fd >= 0) {
		ret = bpf_map_update_elem(tables, &op->table_id, &op->fd, BPF_ANY) ? -errno : 0;
		close(op->fd); /* the outer map holds it now */
		op->fd = -1;
	}
	if (!ret && bpf_map_update_elem(files, &op->key, &op->val, BPF_ANY)) {
		ret = -errno;
		if (op->val.flags & UB_FILE_TABLE)
			bpf_map_delete_elem(tables, &op->table_id); /* nothing names it */
	} else if (!ret) {
		files_changed(b);
	}
	if (ret) {
		pthread_mutex_lock(&b->lock);
		if (op->val.flags & UB_FILE_TABLE)
			unaccount(b, op->table_id);
		else
			b->refused++;
		pthread_mutex_unlock(&b->lock);
		pr_debug("BPF tables: file %llu not given to the kernel: %s\n",
			 (unsigned long long)op->val.file_id, strerror(-ret));
	}
}

static void *writer_main(void *arg)
{
	struct ustack_bpf *b = arg;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct map_op op;
		uint64_t t0;

		while (!b->ops_len && !b->stopping)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stopping)
			break;
		op = b->ops[b->ops_head]; /* stays queued (has_file) until applied */
		b->writer_busy = 1;
		pthread_mutex_unlock(&b->lock);
		t0 = ustack_mono_ns();
		apply_op(b, &op);
		pthread_mutex_lock(&b->lock);
		b->load_ns += ustack_mono_ns() - t0;
		b->ops_head = (b->ops_head + 1) % b->ops_cap;
		b->ops_len--;
		b->writer_busy = 0;
		if (!b->ops_len)
			pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* Queue @op (under lock); without a writer thread, apply it now. */
static int queue_op(struct ustack_bpf *b, const struct map_op *op)
{
	if (!b->writer_started) {
		if (pthread_create(&b->writer, NULL, writer_main, b)) {
			struct map_op now = *op;

			pthread_mutex_unlock(&b->lock);
			apply_op(b, &now);
			pthread_mutex_lock(&b->lock);
			return 0;
		}
		b->writer_started = 1;
	}
	if (ustack_ring_grow((void **)&b->ops, &b->ops_cap, &b->ops_head, b->ops_len,
			     sizeof(*b->ops), 64))
		return -ENOMEM;
	b->ops[(b->ops_head + b->ops_len) % b->ops_cap] = *op;
	b->ops_len++;
	pthread_cond_broadcast(&b->cond);
	return 0;
}

void ustack_bpf__sync(struct ustack_bpf *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->ops_len && b->writer_started)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

/* Row flags of a span; FALLBACK where the kernel's form cannot say it. */
static int to_row(const struct ustack_row_span *s, struct ub_row *r)
{
	const struct ustack_row *u = &s->row;

	memset(r, 0, sizeof(*r));
	if (s->bad) {
		r->method = UB_ROW_BAD;
		return 0;
	}
	r->method = s->method;
	r->cfa_off = u->cfa_off;
	if (u->cfa_reg == USTACK_CFA_FP)
		r->flags |= UB_RF_CFA_FP;
	else if (u->cfa_reg == USTACK_CFA_BX)
		r->flags |= UB_RF_CFA_BX;
	else if (u->cfa_reg != USTACK_CFA_SP)
		r->flags |= UB_RF_FALLBACK;
	if (u->bx_rule == USTACK_BX_SAME) {
		r->flags |= UB_RF_BX_SAME;
	} else if (u->bx_rule == USTACK_BX_OFFSET && u->bx_off >= INT16_MIN && u->bx_off <= INT16_MAX) {
		r->flags |= UB_RF_BX_SAVED;
		r->bx_off = (int16_t)u->bx_off;
	}
	if (u->fp_rule == USTACK_RULE_OFFSET) {
		r->flags |= UB_RF_FP_SAVED;
		r->fp_off = u->fp_off;
	} else if (u->fp_rule != USTACK_RULE_SAME) {
		r->flags |= UB_RF_FALLBACK;
	}
	if ((u->flags & USTACK_ROW_OUTERMOST) || u->ra_rule == USTACK_RULE_UNDEFINED)
		r->flags |= UB_RF_OUTERMOST;
	else if (u->ra_rule != USTACK_RULE_OFFSET || u->ra_off != -8)
		r->flags |= UB_RF_FALLBACK;
	if (u->flags & USTACK_ROW_NEEDS_FALLBACK)
		r->flags |= UB_RF_FALLBACK;
	if (u->flags & USTACK_ROW_SIGNAL)
		r->flags |= UB_RF_SIGNAL;
	return 0;
}

static int same_rule(const struct ub_row *a, const struct ub_row *b)
{
	return a->method == b->method && a->flags == b->flags && a->cfa_off == b->cfa_off &&
	       a->fp_off == b->fp_off && a->bx_off == b->bx_off;
}

/*
 * The kernel rows of @m: spans moved to file offsets, gaps explicit,
 * neighbours with the same rule merged; base and limit: the offsets covered.
 */
static int build_rows(struct ustack_modtab *m, struct ub_row **out, uint32_t *nr, uint64_t *base,
		      uint64_t *limit)
{
	struct ustack_elf *elf = ustack_modtab__elf(m);
	struct ustack_row_span *sp = NULL;
	struct ub_row *rows = NULL, r;
	size_t ns = 0, n = 0, cap = 0;
	uint64_t end = 0;
	int ret = ustack_modtab__rows(m, &sp, &ns);

	if (ret)
		return ret;
	*base = *limit = 0;
	for (size_t i = 0; i < ns; i++) {
		uint64_t off;

		if (ustack_elf__vaddr_to_offset(elf, sp[i].row.start, &off) ||
		    sp[i].row.end <= sp[i].row.start)
			continue;
		if (n && off < end)
			continue; /* not monotonic in offsets (odd layout): skip */
		if (!n)
			*base = off;
		if (off - *base >= UINT32_MAX)
			break; /* the rest is too far from the first row */
		if (n + 2 > cap) {
			size_t c = cap ? 2 * cap : 1024;
			struct ub_row *g = realloc(rows, c * sizeof(*g));

			if (!g) {
				ret = -ENOMEM;
				goto out;
			}
			rows = g;
			cap = c;
		}
		if (n && off > end) {
			/* nothing covers [end, off) */
			memset(&rows[n], 0, sizeof(rows[n]));
			rows[n].start = (uint32_t)(end - *base);
			rows[n].method = UB_ROW_GAP;
			n++;
		}
		to_row(&sp[i], &r);
		r.start = (uint32_t)(off - *base);
		if (!(n && off == end && same_rule(&rows[n - 1], &r)))
			rows[n++] = r;
		end = off + (sp[i].row.end - sp[i].row.start);
	}
	if (n >= UB_MAX_ROWS) {
		ret = -E2BIG;
		goto out;
	}
	*limit = end;
	*out = rows;
	*nr = (uint32_t)n;
	rows = NULL;
out:
	free(rows);
	free(sp);
	return ret;
}

/* Drop the oldest table (its file's entry loses UB_FILE_TABLE); under lock. */
static void evict_oldest(struct ustack_bpf *b)
{
	struct loaded *l = &b->fifo[b->fifo_head];
	struct map_op op = { .kind = OP_EVICT, .key = l->key, .table_id = l->table_id, .fd = -1 };

	/* out of memory for the op: the kernel keeps the table past the
	 * budget (its rows stay right), the budget forgets it */
	queue_op(b, &op);
	b->table_bytes -= l->bytes;
	b->table_rows -= l->rows;
	b->fifo_head = (b->fifo_head + 1) % b->fifo_cap;
	b->fifo_len--;
	b->evicted++;
}

static int fifo_push(struct ustack_bpf *b, struct loaded l)
{
	if (ustack_ring_grow((void **)&b->fifo, &b->fifo_cap, &b->fifo_head, b->fifo_len,
			     sizeof(*b->fifo), 64))
		return -ENOMEM;
	b->fifo[(b->fifo_head + b->fifo_len) % b->fifo_cap] = l;
	b->fifo_len++;
	return 0;
}

/* Bytes of the inner map of @nr rows (rows_layout.h). */
static uint64_t rows_map_bytes(uint32_t nr)
{
	uint32_t levels, groups, chunks;

	return (uint64_t)ub_rows_shape(nr, &levels, &groups, &chunks) * UB_CHUNK_BYTES;
}

/* An array map holding @rows in the layout of rows_layout.h (chunks and
 * their directories), filled through mmap. fd or -errno. */
static int rows_map(const struct ub_row *rows, uint32_t nr)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	size_t len = rows_map_bytes(nr);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ustack_rows", sizeof(uint32_t), UB_CHUNK_BYTES,
				(uint32_t)(len / UB_CHUNK_BYTES), &mo);
	void *p;

	if (fd < 0)
		return -errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;

		close(fd);
		return -e;
	}
	ub_rows_layout(rows, nr, p); /* a new map is zeroed */
	munmap(p, len);
	return fd;
}

/*
 * The rows of @m into a new inner map (op->fd) and op->val, the budget
 * taken (evicting the oldest tables, queued), for the OP_SET @op.
 * enum ustack_bpf_load or -errno. Main thread or writer.
 */
static int prepare_set(struct ustack_bpf *b, struct ustack_modtab *m, struct map_op *op)
{
	struct ub_row *rows = NULL;
	uint64_t need = 0;
	int ret;

	op->kind = OP_SET;
	op->fd = -1;
	if (!m) {
		op->val.flags = UB_FILE_NO_TABLE;
		return USTACK_BPF_NO_TABLE;
	}
	ret = build_rows(m, &rows, &op->val.nr_rows, &op->val.base, &op->val.limit);
	if (ret)
		return ret;
	if (!op->val.nr_rows) {
		op->val.flags = UB_FILE_NO_TABLE;
		free(rows);
		return USTACK_BPF_NO_TABLE;
	}
	need = rows_map_bytes(op->val.nr_rows);
	op->val.levels = 0;
	{
		uint32_t groups, chunks;

		ub_rows_shape(op->val.nr_rows, &op->val.levels, &groups, &chunks);
	}
	if (need > b->max_table_bytes) {
		ret = -ENOSPC;
		goto out;
	}
	op->fd = rows_map(rows, op->val.nr_rows);
	if (op->fd < 0) {
		ret = op->fd;
		op->fd = -1;
		goto out;
	}
	pthread_mutex_lock(&b->lock);
	op->val.table_id = op->table_id = ++b->next_table;
	if (!op->val.table_id)
		op->val.table_id = op->table_id = ++b->next_table;
	op->val.flags = UB_FILE_TABLE;
	while (b->table_bytes + need > b->max_table_bytes && b->fifo_len) {
		if (!b->warned_budget++)
			pr_warn("BPF tables: budget of %llu MiB full: evicting the oldest tables "
				"(their frames stop with 'not-loaded')\n",
				(unsigned long long)(b->max_table_bytes >> 20));
		evict_oldest(b);
	}
	ret = fifo_push(b, (struct loaded){ .key = op->key, .table_id = op->table_id,
					    .rows = op->val.nr_rows,
					    .bytes = need });
	if (!ret) {
		b->table_bytes += need;
		b->table_rows += op->val.nr_rows;
		b->loaded++;
		ret = USTACK_BPF_LOADED;
	}
	pthread_mutex_unlock(&b->lock);
	if (ret < 0) {
		close(op->fd);
		op->fd = -1;
	}
out:
	if (ret == -ENOSPC) {
		pthread_mutex_lock(&b->lock);
		b->refused++;
		pthread_mutex_unlock(&b->lock);
	}
	free(rows);
	return ret;
}

static void build_op(struct ustack_bpf *b, struct map_op *op)
{
	struct map_op set = { .key = op->key, .val = { .file_id = op->val.file_id } };
	struct ustack_modtab *m = NULL;
	char path[64];
	int ret;

	if (!b->wmc)
		b->wmc = ustack_modcache__new(8, USTACK_MODCACHE_COMPILE_CFI);
	char name[512];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", op->fd);
	if (b->wmc)
		m = ustack_modcache__get(b->wmc, path);
	n = readlink(path, name, sizeof(name) - 1);
	name[n > 0 ? n : 0] = 0;
	close(op->fd);
	op->fd = -1;
	ret = prepare_set(b, m, &set);
	ustack_modtab__put(m);
	if (ret >= 0) {
		apply_op(b, &set);
	} else {
		pthread_mutex_lock(&b->lock);
		n = b->warned_load++;
		pthread_mutex_unlock(&b->lock);
		if (!n)
			pr_warn("%s: unwind table not given to the kernel: %s (its frames are "
				"unwound from a stack copy instead)\n", name, strerror(-ret));
	}
}

int ustack_bpf__set_file(struct ustack_bpf *b, uint64_t dev, uint64_t ino, uint64_t file_id,
			 struct ustack_modtab *m)
{
	struct map_op op = { .key = { .dev = dev, .ino = ino }, .val = { .file_id = file_id } };
	uint64_t t0 = ustack_mono_ns();
	int ret;

	if (b->no_tables)
		return 0;
	ret = prepare_set(b, m, &op);

	pthread_mutex_lock(&b->lock);
	if (ret >= 0 && queue_op(b, &op)) {
		if (op.val.flags & UB_FILE_TABLE)
			unaccount(b, op.table_id);
		if (op.fd >= 0)
			close(op.fd);
		ret = -ENOMEM;
	}
	b->load_ns += ustack_mono_ns() - t0;
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int ustack_bpf__set_file_fd(struct ustack_bpf *b, uint64_t dev, uint64_t ino, uint64_t file_id,
			    int fd)
{
	struct map_op op = { .kind = OP_BUILD, .key = { .dev = dev, .ino = ino },
			     .val = { .file_id = file_id }, .fd = fd };
	int ret;

	if (b->no_tables) {
		close(fd);
		return 0;
	}
	pthread_mutex_lock(&b->lock);
	ret = queue_op(b, &op);
	pthread_mutex_unlock(&b->lock);
	if (ret)
		close(fd);
	return ret ? ret : USTACK_BPF_LOADED;
}

/* ---- ring buffer ------------------------------------------------------------------ */

static int ring_cb(void *ctx, void *data, size_t size)
{
	struct ustack_bpf *b = ctx;

	b->ring_bytes += size + 8; /* BPF_RINGBUF_HDR_SZ */
	return b->fn(b->fn_ctx, data, size);
}

static int ring_open(struct ustack_bpf *b)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if (b->ring)
		return 0;
	b->ring = ring_buffer__new(bpf_map__fd(b->skel->maps.rb), ring_cb, b, NULL);
	if (!b->ring)
		return -errno;
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return -errno;
	b->epfd = fd;
	ev.data.fd = ring_buffer__epoll_fd(b->ring);
	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev))
		return -errno;
	return 0;
}

int ustack_bpf__watch_fd(struct ustack_bpf *b, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	int ret = ring_open(b);

	if (ret)
		return ret;
	return epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int ustack_bpf__poll_fd(struct ustack_bpf *b)
{
	int ret = ring_open(b);

	return ret ? ret : b->epfd;
}

int ustack_bpf__poll(struct ustack_bpf *b, int timeout_ms, ustack_bpf_record_fn fn, void *ctx)
{
	struct epoll_event evs[8];
	int ret = ring_open(b);

	if (ret)
		return ret;
	b->fn = fn;
	b->fn_ctx = ctx;
	if (timeout_ms && epoll_wait(b->epfd, evs, 8, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	ret = ring_buffer__consume(b->ring);
	return ret == -EINTR ? 0 : ret;
}

int ustack_bpf__kstack(struct ustack_bpf *b, int32_t id, uint64_t *ips, uint32_t max)
{
	uint64_t buf[UB_MAX_FRAMES];
	uint32_t n = 0, key = (uint32_t)id;

	if (id < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.kstacks), &key, buf))
		return -errno;
	/* the stack map keeps perf's PERF_CONTEXT_KERNEL marker at the top */
	for (uint32_t i = 0; i < UB_MAX_FRAMES && n < max && buf[i]; i++)
		if (!ustack_callchain_is_marker(buf[i]))
			ips[n++] = buf[i];
	b->kstack_bytes += sizeof(buf);
	return (int)n;
}

int ustack_bpf__alloc_purge(struct ustack_bpf *b, const uint32_t *tgids, size_t n)
{
	int fd = bpf_map__fd(b->skel->maps.alloc_live), removed = 0;
	struct ub_alloc_key k, *dead = NULL;
	size_t nr = 0, cap = 0;
	const void *prev = NULL;

	/* the keys first, then the deletes: a key deleted under
	 * bpf_map_get_next_key() sends the walk back to the first bucket */
	while (!bpf_map_get_next_key(fd, prev, &k)) {
		for (size_t i = 0; i < n; i++) {
			if (k.tgid != tgids[i])
				continue;
			if (ustack_grow((void **)&dead, &cap, nr + 1, sizeof(*dead), 256))
				goto out;
			dead[nr++] = k;
			break;
		}
		prev = &k;
	}
out:
	for (size_t i = 0; i < nr; i++)
		removed += !bpf_map_delete_elem(fd, &dead[i]);
	free(dead);
	return removed;
}

uint32_t ustack_bpf__targets_max(const struct ustack_bpf *b)
{
	return b->targets_max;
}

uint64_t ustack_bpf__counter(struct ustack_bpf *b, unsigned int c)
{
	uint64_t *vals = calloc((size_t)b->nr_cpus, sizeof(*vals)), sum = 0;

	if (vals && !bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.counters), &c, vals))
		for (int i = 0; i < b->nr_cpus; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

/* The probe programs' own run time and runs (counted while stats are on):
 * the uprobe events' and the allocator's (those not loaded have no fd) */
static void probe_prog_stats(struct ustack_bpf *b, struct ustack_bpf_stats *st)
{
	struct bpf_program *progs[] = { b->skel->progs.ustack_uprobe,
					 b->skel->progs.ustack_uretprobe,
					 b->skel->progs.ustack_alloc_enter,
					 b->skel->progs.ustack_alloc_ret,
					 b->skel->progs.ustack_alloc_free,
					 b->skel->progs.ustack_alloc_hit };

	st->probe_stats_errno = b->stats_errno;
	if (!b->nr_probes && !b->alloc_on)
		return;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len)) {
			st->probe_run_ns += info.run_time_ns;
			st->probe_runs += info.run_cnt;
			st->skipped += info.recursion_misses;
		}
	}
}

void ustack_bpf__stats(struct ustack_bpf *b, struct ustack_bpf_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned int c = 0; c < UB_NR_COUNTERS; c++)
		st->c[c] = ustack_bpf__counter(b, c);
	st->ring_bytes = b->ring_bytes;
	st->kstack_bytes = b->kstack_bytes;
	pthread_mutex_lock(&b->lock);
	st->tables = b->fifo_len;
	st->table_bytes = b->table_bytes;
	st->rows = b->table_rows;
	st->tables_evicted = b->evicted;
	st->tables_refused = b->refused;
	st->load_ns = b->load_ns;
	st->tables_loaded = b->loaded;
	pthread_mutex_unlock(&b->lock);
	{
		struct bpf_program *progs[] = { b->skel->progs.ustack_tp, b->skel->progs.ustack_sample,
						 b->skel->progs.ustack_kp,
						 b->skel->progs.ustack_offcpu };

		for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
			struct bpf_prog_info info;
			__u32 len = sizeof(info);

			memset(&info, 0, sizeof(info));
			if (!bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
				st->skipped += info.recursion_misses;
		}
	}
	probe_prog_stats(b, st);
}

