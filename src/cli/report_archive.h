/* SPDX-License-Identifier: MIT */
/* The build-ID directories report gives the symbolizer (opts.buildid_dirs):
 * one function builds the list, in lookup order. */
#ifndef USTACK_CLI_REPORT_ARCHIVE_H
#define USTACK_CLI_REPORT_ARCHIVE_H

#include <limits.h>
#include <stddef.h>

#define REPORT_DIRS_MAX 16

struct report_dirs {
	const char *list[REPORT_DIRS_MAX + 1]; /* NULL-terminated */
	size_t n;
	char archive_dir[PATH_MAX];  /* the extracted archive, "" when none */
	char note[PATH_MAX + 256];   /* what --stats says of the archive, "" when none */
};

/**
 * Build the list: the archive first (@archive, else TRACE.archive when it
 * exists), extracted once into the cache directory.
 * @param archive --archive FILE, or NULL
 * @return 0, or -1 after an error was printed (an --archive that cannot be
 *         used; a damaged TRACE.archive is a warning only)
 */
int report_dirs__build(struct report_dirs *d, const char *trace, const char *archive);

/** Append a directory (--buildid-dir) after the archive. @return 0 or -1 (full) */
int report_dirs__add(struct report_dirs *d, const char *dir);

#endif
