/* SPDX-License-Identifier: MIT */
/*
 * The recorder's capture of the files its stacks ran through: each file,
 * read from the descriptor the recorder kept of the process's own mapping
 * (never a host path), is hashed and copied into the build-ID cache by one
 * thread, so that the event path only hands over a descriptor. Results go
 * back to the recorder's thread, which alone writes the trace
 * (FILE_CONTENT records).
 */
#ifndef USTACK_RECORD_CAPTURE_H
#define USTACK_RECORD_CAPTURE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "bidcache/bidcache.h"

struct rec_capture;

/* A file to capture. The capture owns the descriptors from submit on. */
struct rec_capture_req {
	uint64_t file_id;
	uint32_t pid;     /* the process it was mapped by (messages) */
	int fd;           /* the file, O_RDONLY */
	int root_fd;      /* O_PATH of /proc/PID/root when that is not ours, else -1:
			     where its separate debug file is looked for */
	char path[256];   /* as the process named it (messages, debuglink's dir) */
};

struct rec_capture_res {
	uint64_t file_id;
	uint32_t pid;
	int err;          /* 0, or the -errno of reading or storing */
	struct ustack_bidcache_stored stored;
	int debug_stored; /* its separate debug file went into the cache */
	uint8_t build_id[20];
	uint32_t build_id_size;
	char path[256];
};

struct rec_capture_stats {
	uint64_t submitted, done;
	uint64_t new_files, cached_files; /* stored now / there already */
	uint64_t bytes;                   /* written into the cache */
	uint64_t too_big, conflicts, errors, debug_files;
	uint64_t abandoned;               /* left in the queue by a second stop */
	double cpu_seconds;               /* of the capture thread */
};

/**
 * Start the capture thread over an open, writable cache (kept by the
 * capture, closed by __free).
 * @param max_size larger files are hashed only (TOO_BIG)
 * @return the capture, or NULL with errno
 */
struct rec_capture *rec_capture__new(struct ustack_bidcache *cache, uint64_t max_size);

/** Queue @req (its descriptors are the capture's now, also on failure). 0 or -ENOMEM. */
int rec_capture__submit(struct rec_capture *c, const struct rec_capture_req *req);

/** A finished capture, without waiting. @return 1 (one in *res), 0 (none now) */
int rec_capture__take(struct rec_capture *c, struct rec_capture_res *res);

/**
 * Wait until every queued file is done. After ~1 s says on the log what it
 * waits for. A change of *@stop from its value at the call (a further
 * Ctrl-C) abandons the files not started (counted in abandoned).
 */
void rec_capture__wait(struct rec_capture *c, volatile sig_atomic_t *stop);

void rec_capture__stats(struct rec_capture *c, struct rec_capture_stats *st);

/** Stop the thread (files not started are abandoned), close the cache. NULL: no-op. */
void rec_capture__free(struct rec_capture *c);

/** The cache (for the trim at the end). */
struct ustack_bidcache *rec_capture__cache(struct rec_capture *c);

#endif
