// SPDX-License-Identifier: MIT
/*
 * Where the probe events attach (rec.h, rec_probes_resolve): each uprobe,
 * uretprobe and usdt event resolved once per process it is for (a -p
 * process inside its own mount namespace; -a and a command in ustack's),
 * and --alloc's malloc family found in the allocator each process maps.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/opts.h"
#include "elf/elf_file.h"
#include "preload/alloc_hit.h"
#include "probe/probe_internal.h"
#include "record/event.h"
#include "record/core.h"
#include "record/rec.h"

static const struct {
	const char *name;
	uint32_t fn;
	int ret;      /* a return probe too (the pointer returned) */
	int required; /* an allocator without it is not one */
} alloc_fns[] = {
	{ "malloc", REC_AF_MALLOC, 1, 1 },
	{ "calloc", REC_AF_CALLOC, 1, 0 },
	{ "realloc", REC_AF_REALLOC, 1, 0 },
	{ "free", REC_AF_FREE, 0, 1 },
	{ "posix_memalign", REC_AF_POSIX_MEMALIGN, 1, 0 },
	{ "aligned_alloc", REC_AF_ALIGNED_ALLOC, 1, 0 },
	{ "memalign", REC_AF_MEMALIGN, 1, 0 },
	{ "valloc", REC_AF_VALLOC, 1, 0 },
	{ "pvalloc", REC_AF_PVALLOC, 1, 0 },
};

static int same_place(const struct rec_probe *a, const struct rec_probe *b)
{
	return a->event == b->event && a->pid == b->pid && a->t.kind == b->t.kind &&
	       a->t.dev == b->t.dev && a->t.ino == b->t.ino && a->t.offset == b->t.offset;
}

/* one place more, unless the event has it already for that process (two
 * names of one function: malloc's aliases, a wildcard and an exact name) */
static int add_probe(struct rec *r, const struct ustack_probe_target *t, int event,
		     uint32_t alloc_fn, pid_t pid)
{
	struct rec_probe p = { .t = *t, .event = event, .alloc_fn = alloc_fn, .pid = pid };
	struct rec_probe *v;

	for (size_t i = 0; i < r->probes.nr; i++)
		if (same_place(&r->probes.v[i], &p))
			return 0;
	v = realloc(r->probes.v, (r->probes.nr + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->probes.v = v;
	v[r->probes.nr++] = p;
	return 0;
}

/* the processes probes are resolved for: (resolve pid, rec_probe.pid) */
static int nr_targets(const struct rec *r)
{
	return r->o->nr_pids > 0 ? r->o->nr_pids : 1;
}

static void target(const struct rec *r, int k, pid_t *in, pid_t *for_pid)
{
	if (r->o->nr_pids > 0) {
		*in = *for_pid = r->o->pids[k];
		return;
	}
	*in = 0;
	*for_pid = r->o->system_wide ? -1 : 0;
}

static int resolve_spec(struct rec *r, int event, const struct ustack_probe_spec *spec,
			uint32_t alloc_fn, pid_t in, pid_t for_pid, char *err, size_t errlen)
{
	struct ustack_probe_target *v;
	size_t nr;
	int ret = ustack_probe_resolve(spec, in, &v, &nr, err, errlen);

	for (size_t i = 0; !ret && i < nr; i++)
		ret = add_probe(r, &v[i], event, alloc_fn, for_pid);
	free(v);
	return ret;
}

/* the message: "event NAME (pid N): what" */
static void probe_err(struct rec *r, const char *name, pid_t in, const char *err)
{
	char msg[PATH_MAX + 400], where[32] = "";

	if (in > 0)
		snprintf(where, sizeof(where), " (pid %d)", (int)in);
	snprintf(msg, sizeof(msg), "event %s%s: %s", name, where, err);
	rec_set_err(r, "%s%s", msg, "");
}

static int uprobe_event(struct rec *r, int i)
{
	struct ustack_probe_spec spec;
	char err[PATH_MAX + 256];
	int ret = ustack_probe_parse(r->events[i].perf.name, &spec, err, sizeof(err));

	if (ret <= 0) {
		if (ret)
			rec_set_err(r, "%s%s", err, "");
		else
			rec_set_err(r, "not a probe name: %s%s", r->events[i].perf.name, "");
		return ret ? ret : -EINVAL;
	}
	for (int k = 0; k < nr_targets(r); k++) {
		pid_t in, for_pid;

		target(r, k, &in, &for_pid);
		ret = resolve_spec(r, i, &spec, 0, in, for_pid, err, sizeof(err));
		if (ret) {
			probe_err(r, r->events[i].perf.name, in, err);
			return ret;
		}
	}
	return 0;
}

static int jemalloc_or_tcmalloc(const char *base, const char *unused)
{
	(void)unused;
	return (!strncmp(base, "libjemalloc.so", 14) || !strncmp(base, "libtcmalloc", 11)) &&
	       strstr(base, ".so");
}

/* an allocator LD_PRELOADed into ustack's environment (a command started
 * from here inherits it): its path, else "" */
static void preloaded_allocator(char *out, size_t sz)
{
	const char *pre = getenv("LD_PRELOAD");
	char buf[PATH_MAX * 2];

	out[0] = 0;
	if (!pre || strlen(pre) >= sizeof(buf))
		return;
	strcpy(buf, pre);
	for (char *save, *tok = strtok_r(buf, " :", &save); tok; tok = strtok_r(NULL, " :", &save)) {
		const char *b = strrchr(tok, '/');

		if (tok[0] == '/' && jemalloc_or_tcmalloc(b + 1, NULL) && strlen(tok) < sz) {
			strcpy(out, tok);
			return;
		}
	}
}

static int is_malloc(void *ctx, const struct ustack_elf_symbol *sym)
{
	(void)ctx;
	return !strcmp(sym->name, "malloc") || !strncmp(sym->name, "malloc@", 7);
}

/* 1 when the ELF file @path defines malloc itself (an allocator linked
 * into the executable): the program's calls go there, and, exported, the
 * libraries' too (the executable comes first in symbol lookup), never to
 * libc's nor to an LD_PRELOADed library's; 0 when not, or unreadable */
static int exe_defines_malloc(const char *path)
{
	struct ustack_elf *elf = ustack_elf__open(path);
	int ret = elf ? ustack_elf__for_each_func(elf, is_malloc, NULL) : 0;

	ustack_elf__close(elf);
	return ret == 1;
}

/* the executable of the target (@in, else the command): its path in
 * @path, 0; -ENOENT under -a (no one executable) */
static int target_exe(const struct rec *r, pid_t in, char *path, size_t sz)
{
	char link[32];
	ssize_t n;

	if (in > 0) {
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)in);
		n = readlink(link, path, sz - 1);
		if (n <= 0)
			return -ENOENT;
		path[n] = 0;
		return 0;
	}
	if (r->o->system_wide || !r->o->argv || !r->o->argv[0])
		return -ENOENT;
	return rec_find_command(r->o->argv[0], path, sz) ? -ENOENT : 0;
}

/* the allocator of @in (0: a command started from here, or -a): the
 * executable when it defines malloc, else a jemalloc or tcmalloc mapped or
 * preloaded, else libc */
static int find_allocator(const struct rec *r, pid_t in, char *path, size_t sz, char *err,
			  size_t errlen)
{
	char root[32] = "", exe[PATH_MAX], link[32];

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)in);
	if (!target_exe(r, in, exe, sizeof(exe))) {
		/* -p: the file the process runs, whatever its name says */
		if (exe_defines_malloc(in > 0 ? link : exe)) {
			if (strlen(exe) >= sz) {
				snprintf(err, errlen, "%s: path too long", exe);
				return -ENAMETOOLONG;
			}
			strcpy(path, exe);
			return 0;
		}
	}
	if (in > 0) {
		int ret = ustack_lib_find_mapped("", jemalloc_or_tcmalloc, in, path, sz);

		if (ret != -ENOENT) {
			if (ret)
				snprintf(err, errlen, "/proc/%d/maps: %s", (int)in, strerror(-ret));
			return ret;
		}
		snprintf(root, sizeof(root), "/proc/%d/root", (int)in);
	} else {
		preloaded_allocator(path, sz);
		if (path[0])
			return 0;
	}
	return ustack_lib_find("libc", in, root, path, sz, err, errlen);
}

static int alloc_for(struct rec *r, int i, pid_t in, pid_t for_pid, char *err, size_t errlen)
{
	struct ustack_probe_spec spec = { .kind = USTACK_PROBE_UPROBE };
	int ret = find_allocator(r, in, spec.path, sizeof(spec.path), err, errlen);

	for (size_t f = 0; !ret && f < sizeof(alloc_fns) / sizeof(alloc_fns[0]); f++) {
		snprintf(spec.symbol, sizeof(spec.symbol), "%s", alloc_fns[f].name);
		for (int ret_probe = 0; !ret && ret_probe <= alloc_fns[f].ret; ret_probe++) {
			spec.kind = ret_probe ? USTACK_PROBE_URETPROBE : USTACK_PROBE_UPROBE;
			ret = resolve_spec(r, i, &spec, alloc_fns[f].fn, in, for_pid, err, errlen);
			/* an allocator may lack the old ones (valloc, pvalloc) */
			if (ret == -ENOENT && !alloc_fns[f].required)
				ret = 0;
		}
	}
	return ret;
}

/* ---- --alloc-via=preload ---------------------------------------------------------- */

/* @path's first bytes: 1 an ELF file without PT_INTERP (static), 0 one with
 * it or a script (its interpreter is: a #! line names a dynamic program in
 * practice), -errno when unreadable */
static int command_is_static(const char *path)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 1;

	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return 0;
	}
	for (unsigned int i = 0; i < eh.e_phnum && i < 4096; i++) {
		Elf64_Phdr ph;

		if (eh.e_phentsize < sizeof(ph) ||
		    pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
			    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP) {
			ret = 0;
			break;
		}
	}
	close(fd);
	return ret;
}

/* Debian's multiarch directory for this target (make install
 * LIBDIR=/usr/lib/x86_64-linux-gnu, as a Debian package installs it) */
#if defined(__x86_64__)
#define PRELOAD_MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define PRELOAD_MULTIARCH "aarch64-linux-gnu"
#else
#define PRELOAD_MULTIARCH "unknown"
#endif

/* Where libustack-alloc.so may be, from the directory of the running
 * program: beside it (the build tree), else LIBDIR/ustack/ of make install
 * for LIBDIR = PREFIX/lib, PREFIX/lib/<multiarch> (Debian) or
 * PREFIX/lib64 (Fedora), PREFIX being the program's parent directory */
static const char *const preload_dirs[] = {
	"", "/../lib/ustack", "/../lib/" PRELOAD_MULTIARCH "/ustack", "/../lib64/ustack",
};

/* libustack-alloc.so: the one the options name, else the first of
 * preload_dirs[] that has it. ustack runs as root and puts this file into
 * the command: not one that others than its owner may write. */
static int find_preload(const struct ustack_record_opts *o, char *out, size_t sz, char *err,
			size_t errlen)
{
	const char *given = OPTS_GET(o, alloc_preload, (const char *)NULL);
	char exe[PATH_MAX] = "", *dir = exe;
	ssize_t n;
	struct stat st;

	out[0] = 0;
	if (given && *given) {
		if (snprintf(out, sz, "%s", given) >= (int)sz) {
			snprintf(err, errlen, "%s: path too long", given);
			return -ENAMETOOLONG;
		}
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0) {
			snprintf(err, errlen, "/proc/self/exe: %s", strerror(errno));
			return -ENOENT;
		}
		exe[n] = 0;
		dir = dirname(exe);
		for (size_t i = 0; i < sizeof(preload_dirs) / sizeof(preload_dirs[0]); i++) {
			snprintf(out, sz, "%s%s/%s", dir, preload_dirs[i], USTACK_ALLOC_PRELOAD_NAME);
			if (!access(out, F_OK))
				break;
		}
	}
	if (stat(out, &st)) {
		int e = errno;

		if (given && *given)
			snprintf(err, errlen, "%s: %s", out, strerror(e));
		else
			snprintf(err, errlen, "%s not found beside ustack (%s) nor in "
				 "%s/../{lib,lib/%s,lib64}/ustack/", USTACK_ALLOC_PRELOAD_NAME,
				 dir, dir, PRELOAD_MULTIARCH);
		return -e;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 022) ||
	    (st.st_uid != 0 && st.st_uid != geteuid())) {
		snprintf(err, errlen, "%s: not a regular file owned by root (or you), "
			 "writable by its owner alone: not preloaded", out);
		return -EPERM;
	}
	if (out[0] != '/') {
		if (!realpath(out, exe)) {
			int e = errno;

			snprintf(err, errlen, "%s: %s", out, strerror(e));
			return -e;
		}
		snprintf(out, sz, "%s", exe);
	}
	return 0;
}

/* the command's environment: ustack's, LD_PRELOAD with @lib first (an
 * allocator already there stays, after it: the preload's malloc calls
 * the next one), the sampling's mean and table size */
static int preload_env(struct rec *r, const char *lib, uint64_t mean)
{
	extern char **environ;
	const char *old = getenv("LD_PRELOAD");
	uint32_t live = OPTS_GET(r->o, alloc_live_max, 0);
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return -ENOMEM;
	r->probes.child_env = env;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strncmp(environ[i], "USTACK_ALLOC_MEAN=", 18) &&
		    strncmp(environ[i], "USTACK_ALLOC_LIVE_MAX=", 22))
			env[k++] = environ[i]; /* borrowed */
	if (asprintf(&r->probes.env_own[0], "LD_PRELOAD=%s%s%s", lib, old && *old ? ":" : "",
		     old ? old : "") < 0)
		r->probes.env_own[0] = NULL;
	if (asprintf(&r->probes.env_own[1], "USTACK_ALLOC_MEAN=%llu", (unsigned long long)mean) < 0)
		r->probes.env_own[1] = NULL;
	if (asprintf(&r->probes.env_own[2], "USTACK_ALLOC_LIVE_MAX=%u",
		     live ? live : (unsigned int)REC_ALLOC_LIVE_DEFAULT) < 0)
		r->probes.env_own[2] = NULL;
	for (int j = 0; j < 3; j++) {
		if (!r->probes.env_own[j])
			return -ENOMEM;
		env[k++] = r->probes.env_own[j];
	}
	return 0;
}

/* How --alloc sees a command's allocations; @err says why not preload
 * where it was asked for (negative return) or where auto chose uprobes
 * (the line printed). */
static int choose_via(struct rec *r, char *lib, size_t sz, char *err, size_t errlen)
{
	const struct ustack_record_opts *o = r->o;
	unsigned int via = OPTS_GET(o, alloc_via, USTACK_ALLOC_VIA_AUTO);
	char exe[PATH_MAX] = "";
	int ret;

	if (via == USTACK_ALLOC_VIA_UPROBES)
		return USTACK_ALLOC_VIA_UPROBES;
	if (via != USTACK_ALLOC_VIA_AUTO && via != USTACK_ALLOC_VIA_PRELOAD) {
		snprintf(err, errlen, "record --alloc-via: %u is no way (1 uprobes, 2 preload)", via);
		return -EINVAL;
	}
	if (o->nr_pids > 0 || o->system_wide || !o->argv || !o->argv[0]) {
		if (via == USTACK_ALLOC_VIA_AUTO)
			return USTACK_ALLOC_VIA_UPROBES;
		snprintf(err, errlen, "record --alloc-via=preload: only for a command ustack "
			 "starts (-- CMD), not -p or -a (use --alloc-via=uprobes)");
		return -EINVAL;
	}
	ret = rec_find_command(o->argv[0], exe, sizeof(exe)) ? 0 : command_is_static(exe);
	if (ret == 1) {
		snprintf(err, errlen, "%s is statically linked: LD_PRELOAD cannot load into it",
			 exe);
		ret = -ENOEXEC;
	} else if (exe[0] && exe_defines_malloc(exe)) {
		snprintf(err, errlen, "%s defines malloc itself: an LD_PRELOADed malloc never "
			 "runs in its place", exe);
		ret = -ENOEXEC;
	} else {
		ret = find_preload(o, lib, sz, err, errlen);
	}
	if (!ret)
		return USTACK_ALLOC_VIA_PRELOAD;
	if (via == USTACK_ALLOC_VIA_PRELOAD)
		return ret;
	pr_warn("record --alloc: %s; the allocator's functions get uprobes instead (every "
		"call traps into the kernel)\n", err);
	return USTACK_ALLOC_VIA_UPROBES;
}

static const struct {
	const char *sym;
	uint32_t fn;
} preload_fns[] = {
	{ USTACK_ALLOC_HIT_SYM, REC_AF_HIT },
	{ USTACK_FREE_HIT_SYM, REC_AF_HIT_FREE },
	{ USTACK_ALLOC_TALLY_SYM, REC_AF_HIT_TALLY },
};

/* the preload's three functions, attached for every process (-1): the
 * command's children, which inherit LD_PRELOAD, are recorded as the
 * command is (the kernel program keeps the traced ones) */
static int preload_probes(struct rec *r, int i, const char *lib, char *err, size_t errlen)
{
	struct ustack_probe_spec spec = { .kind = USTACK_PROBE_UPROBE };
	int ret = 0;

	snprintf(spec.path, sizeof(spec.path), "%s", lib);
	for (size_t f = 0; !ret && f < sizeof(preload_fns) / sizeof(preload_fns[0]); f++) {
		snprintf(spec.symbol, sizeof(spec.symbol), "%s", preload_fns[f].sym);
		ret = resolve_spec(r, i, &spec, preload_fns[f].fn, 0, -1, err, errlen);
	}
	if (!ret)
		ret = preload_env(r, lib, r->events[i].alloc_mean);
	return ret;
}

static int alloc_event(struct rec *r, int i)
{
	char err[PATH_MAX * 2 + 256], lib[PATH_MAX];
	int via = choose_via(r, lib, sizeof(lib), err, sizeof(err));

	if (via < 0) {
		rec_set_err(r, "%s%s",
			    OPTS_GET(r->o, alloc_via, 0) == USTACK_ALLOC_VIA_PRELOAD &&
					    strncmp(err, "record --alloc-via", 18)
				    ? "record --alloc-via=preload: "
				    : "",
			    err);
		return via;
	}
	r->probes.alloc_via = (unsigned int)via;
	if (via == USTACK_ALLOC_VIA_PRELOAD) {
		int ret = preload_probes(r, i, lib, err, sizeof(err));

		if (ret)
			probe_err(r, "alloc", 0, err);
		return ret;
	}

	for (int k = 0; k < nr_targets(r); k++) {
		pid_t in, for_pid;
		int ret;

		target(r, k, &in, &for_pid);
		ret = alloc_for(r, i, in, for_pid, err, sizeof(err));
		if (ret) {
			probe_err(r, "alloc", in, err);
			return ret;
		}
	}
	return 0;
}

int rec_probes_resolve(struct rec *r)
{
	for (int i = 0; i < r->nr_events; i++) {
		enum rec_attach a = r->events[i].kind->attach;
		int ret = 0;

		if (a == REC_ATTACH_UPROBE)
			ret = uprobe_event(r, i);
		else if (a == REC_ATTACH_ALLOC && r->events[i].alloc == REC_ALLOC_ALLOC)
			ret = alloc_event(r, i);
		if (ret) {
			rec_probes_free(r);
			return ret;
		}
	}
	return 0;
}

void rec_probes_free(struct rec *r)
{
	free(r->probes.v);
	r->probes.v = NULL;
	r->probes.nr = 0;
	/* the array borrows environ's strings, and owns the three added */
	free(r->probes.child_env);
	r->probes.child_env = NULL;
	for (int j = 0; j < 3; j++) {
		free(r->probes.env_own[j]);
		r->probes.env_own[j] = NULL;
	}
}
