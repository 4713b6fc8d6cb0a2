/* SPDX-License-Identifier: MIT */
/*
 * Where the image of a file id is (the file that was mapped): the order of
 * issue 28, first hit wins.
 *   1. each given build-ID cache (opts.buildid_dirs: an extracted archive,
 *      --buildid-dir), in order;
 *   2. ustack's build-ID cache (ustack_cache_dir(), as the recorder fills it);
 *   3. perf's ($PERF_BUILDID_DIR, else $HOME/.debug);
 *   4. symfs + the recorded path (when a symfs is given), else the recorded
 *      path;
 *   5. <debug_dir>/.build-id/xx/rest.
 * Steps 2 and 3 are skipped with USTACK_SYMBOLIZER_NO_BUILDID_CACHE, step 5
 * with USTACK_SYMBOLIZER_NO_DEBUG_DIR.
 *
 * What is checked: in the caches ustack writes (1, 2) an entry named by
 * content (elf-<sha256>, .content-id) is what its name says (bidcache.h:
 * only ustack writes there, atomically); their perf name (elf), taken when
 * the content is not known, has its build ID checked. Everything else
 * (perf's cache, paths, the debug directory) has its build ID checked and,
 * when the content is known, its size and SHA-256: a file with the right
 * build ID and other bytes is refused, since a build ID is only a claim
 * the file makes about itself. A file is hashed once per lookup object
 * (keyed by device, inode, size, mtime and ctime).
 */
#ifndef USTACK_SYMBOLIZE_IMAGE_LOOKUP_H
#define USTACK_SYMBOLIZE_IMAGE_LOOKUP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct ustack_elf;
struct ustack_bidcache;
struct ustack_image_lookup;

/* What the file id stands for. */
struct ustack_image_want {
	const char *path;           /* recorded path ("" or "[vdso]": no path) */
	const uint8_t *build_id;    /* recorded build ID */
	size_t build_id_size;       /* 0: none recorded */
	const uint8_t *sha256;      /* recorded content (32 bytes); NULL: not known */
	uint64_t size;              /* its size, when @sha256 */
};

/* Why a file was not used */
enum ustack_image_refusal_reason {
	USTACK_IMAGE_REFUSED_BUILD_ID = 1, /* another build ID (or none) */
	USTACK_IMAGE_REFUSED_CONTENT = 2,  /* the build ID, but other bytes */
};

#define USTACK_IMAGE_REFUSALS_MAX 8

struct ustack_image_refusal {
	unsigned int reason;  /* enum ustack_image_refusal_reason */
	unsigned int source;  /* enum ustack_image_source of the place */
	char *path;           /* the file refused (malloc'd) */
};

struct ustack_image_found {
	struct ustack_elf *elf;      /* the image; the caller closes it */
	unsigned int source;         /* enum ustack_image_source */
	unsigned int dir_index;      /* USTACK_IMAGE_SRC_GIVEN_DIR: which one */
	/* the cache that served it (its captured debug file is looked for
	 * there: ustack_image_lookup__cached_debug()); NULL for other sources */
	const struct ustack_bidcache *cache;
	int cache_foreign;           /* that cache is perf's */
	unsigned int nrefused;
	struct ustack_image_refusal refused[USTACK_IMAGE_REFUSALS_MAX];
};

/**
 * @param dirs NULL-terminated given caches (NULL: none); each must exist
 * @param symfs directory prefixed to recorded paths, NULL: none
 * @param debug_dir as the symbolizer's (not NULL)
 * @param flags USTACK_SYMBOLIZER_* (NO_BUILDID_CACHE, NO_DEBUG_DIR)
 * @return the object, or NULL with errno (a given cache or the symfs that
 *         cannot be opened: its errno, after a warning naming it; ENOMEM)
 */
struct ustack_image_lookup *ustack_image_lookup__new(const char *const *dirs, const char *symfs,
						     const char *debug_dir, uint32_t flags);
void ustack_image_lookup__free(struct ustack_image_lookup *l);

/**
 * Look for the image of @w in the order above.
 * @param out filled (refusals too) whatever the result; release with
 *        ustack_image_found__release()
 * @return 0 (out->elf set), -ENOENT (nothing usable; out->nrefused says
 *         whether something was there but refused)
 */
int ustack_image_lookup__find(struct ustack_image_lookup *l, const struct ustack_image_want *w,
			      struct ustack_image_found *out);

/**
 * The separate debug file captured beside the image @found came from
 * (a cache): debug-<image sha256> when the content is known and the cache
 * is ustack's kind, else the perf name "debug", its build ID checked.
 * @param path receives the file's path
 * @return 0 (*debug opened: the caller closes it), -ENOENT
 */
int ustack_image_lookup__cached_debug(struct ustack_image_lookup *l,
				      const struct ustack_image_want *w,
				      const struct ustack_image_found *found,
				      struct ustack_elf **debug, char *path, size_t size);

/** Free the refusals' paths (not the image). */
void ustack_image_found__release(struct ustack_image_found *f);

#endif
