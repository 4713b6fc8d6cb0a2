// SPDX-License-Identifier: MIT
/*
 * The recorder's side of the capture (capture.h): which files (those the
 * trace writer defines: a recorded stack ran through them), their
 * descriptors from the mapping picture, the FILE_CONTENT records written
 * back on the recorder's thread, the cache trimmed at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/cache_dir.h"
#include "common/log.h"
#include "record/capture.h"
#include "record/rec.h"

void rec_capture_setup(struct rec *r)
{
	const struct ustack_record_opts *o = r->o;
	uint64_t max = o->capture_max_size ? o->capture_max_size : USTACK_BIDCACHE_FILE_MAX_MB << 20;
	struct ustack_bidcache *cache;
	struct rlimit rl = { 0 };
	char buf[4096];
	const char *dir;
	unsigned int cap;

	if (o->no_capture)
		return;
	dir = ustack_cache_dir(buf, sizeof(buf));
	cache = *dir ? ustack_bidcache__open(dir, USTACK_BIDCACHE_WRITE) : NULL;
	if (!cache) {
		/* said once the recording runs: a recording that cannot start
		 * fails with its own one line */
		snprintf(r->cap_warn, sizeof(r->cap_warn), "build-ID cache %s: cannot open it "
			 "for writing (%s): recording without capturing the files\n",
			 *dir ? dir : "(none: no $HOME)", strerror(*dir ? errno : ENOENT));
		return;
	}
	r->cap = rec_capture__new(cache, max);
	if (!r->cap) {
		pr_warn("capture thread: %s: recording without capturing the files\n",
			strerror(errno));
		ustack_bidcache__close(cache);
		return;
	}
	/* half of what the process may open: the perf events and the
	 * tables need the rest (-p opens one event per thread and CPU) */
	getrlimit(RLIMIT_NOFILE, &rl);
	cap = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 2000000 ? 1000000
								       : (unsigned int)(rl.rlim_cur / 2);
	ustack_recmaps__pin_files(r->rm, cap ? cap : 1);
	r->cap_since = (int64_t)time(NULL) - 1;
}

void rec_capture_started(struct rec *r)
{
	if (r->cap_warn[0])
		pr_warn("%s", r->cap_warn);
	r->cap_warn[0] = 0;
}

/* The file of @fm opened at its recorded path, when that is the very file
 * the process mapped: same device and inode as its mapping records (a
 * file with that path and inode number on that device now is that file,
 * whose inode the mapping still held when it was recorded). For processes
 * that exited before the recorder read their first mapping (a short
 * command): without a /proc/PID/map_files entry this is all there is. A
 * container's file at the host's path is another inode (or the same file,
 * bind-mounted); an unlinked file is refused (its path names nothing, or a
 * newer file). -1 when it is not. */
static int open_same_file(const struct ustack_file_map *fm)
{
	struct stat st;
	int fd;

	if (fm->kind != USTACK_VMA_FILE || (fm->flags & USTACK_VMA_DELETED) || !fm->path ||
	    fm->path[0] != '/' || !fm->inode)
		return -1;
	fd = open(fm->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != fm->inode ||
	    major(st.st_dev) != fm->dev_major || minor(st.st_dev) != fm->dev_minor) {
		close(fd);
		return -1;
	}
	return fd;
}

void rec_capture_file(struct rec *r, uint64_t file_id)
{
	struct rec_capture_req q = { .file_id = file_id };
	struct ustack_file_map fm;

	if (!r->cap)
		return;
	switch (ustack_recmaps__take_pin(r->rm, file_id, &q.fd, &q.root_fd, &q.pid)) {
	case RECMAPS_PIN_HELD:
		break;
	case RECMAPS_PIN_NONE:
	case RECMAPS_PIN_GONE:
		if (!ustack_recmaps__file_map(r->rm, file_id, &fm) &&
		    (q.fd = open_same_file(&fm)) >= 0) {
			q.root_fd = -1;
			r->cap_by_path++;
			break;
		}
		r->cap_gone++;
		return;
	case RECMAPS_PIN_CAPPED:
		r->cap_fd_cap++;
		return;
	case RECMAPS_PIN_ERROR:
		r->cap_errors++;
		return;
	default: /* asked before, or not a file (vDSO) */
		return;
	}
	if (!ustack_recmaps__file_map(r->rm, file_id, &fm) && fm.path)
		snprintf(q.path, sizeof(q.path), "%s", fm.path);
	if (rec_capture__submit(r->cap, &q))
		r->cap_errors++;
}

static void warn_conflict(const struct rec_capture_res *res)
{
	char hex[2 * sizeof(res->build_id) + 1] = "";

	for (uint32_t i = 0; i < res->build_id_size; i++)
		snprintf(hex + 2 * i, 3, "%02x", res->build_id[i]);
	pr_warn("%s (pid %u): build ID %s: the build-ID cache holds other content under "
		"that build ID; this file is kept by its hash only\n", res->path, res->pid,
		hex[0] ? hex : "-");
}

void rec_capture_drain(struct rec *r)
{
	struct rec_capture_res res;

	if (!r->cap)
		return;
	while (rec_capture__take(r->cap, &res) == 1) {
		struct ustack_trace_file_content fc = { .file_id = res.file_id,
							.algo = USTACK_TRACE_HASH_SHA256 };
		int ret;

		if (res.err) {
			pr_debug("%s (pid %u): not captured: %s\n", res.path, res.pid,
				 strerror(-res.err));
			continue;
		}
		if (res.stored.flags & USTACK_BIDCACHE_STORED_CONFLICT)
			warn_conflict(&res);
		if (res.stored.flags & USTACK_BIDCACHE_STORED_TOO_BIG)
			fc.flags |= USTACK_TRACE_CONTENT_TOO_BIG;
		else
			fc.flags |= USTACK_TRACE_CONTENT_CACHED;
		if (res.debug_stored)
			fc.flags |= USTACK_TRACE_CONTENT_DEBUG;
		memcpy(fc.hash, res.stored.sha256, sizeof(fc.hash));
		fc.size = res.stored.size;
		ret = r->w ? ustack_trace_writer__add_file_content(r->w, &fc) : -EINVAL;
		if (ret == -EINVAL)
			r->cap_write_errors++; /* its FILE_MAP never made it out */
		else if (ret && !r->werr)
			r->werr = ret;
	}
}

void rec_capture_finish(struct rec *r)
{
	struct rec_capture_stats cs;
	int64_t removed;

	if (!r->cap)
		return;
	rec_capture__wait(r->cap, r->o->stop);
	rec_capture_drain(r);
	/* a cache this recording did not grow is as it was: no scan */
	rec_capture__stats(r->cap, &cs);
	if (!cs.new_files && !cs.debug_files)
		return;
	removed = ustack_bidcache__trim(rec_capture__cache(r->cap), ustack_bidcache_budget(),
					r->cap_since);
	if (removed < 0)
		pr_warn("build-ID cache %s: trimming it: %s\n",
			ustack_bidcache__root(rec_capture__cache(r->cap)), strerror((int)-removed));
}

void rec_capture_stats(const struct rec *r, struct ustack_record_stats *st)
{
	struct rec_capture_stats cs;

	st->capture = r->cap != NULL;
	if (!r->cap)
		return;
	rec_capture__stats(r->cap, &cs);
	st->capture_new = cs.new_files;
	st->capture_cached = cs.cached_files;
	st->capture_bytes = cs.bytes;
	st->capture_too_big = cs.too_big;
	st->capture_conflicts = cs.conflicts;
	st->capture_gone = r->cap_gone;
	st->capture_by_path = r->cap_by_path;
	st->capture_fd_cap = r->cap_fd_cap;
	st->capture_errors = r->cap_errors + r->cap_write_errors + cs.errors + cs.abandoned;
	st->capture_debug = cs.debug_files;
	st->capture_seconds = cs.cpu_seconds;
}

void rec_capture_free(struct rec *r)
{
	rec_capture__free(r->cap);
	r->cap = NULL;
}
