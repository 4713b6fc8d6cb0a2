/* SPDX-License-Identifier: MIT */
/* The trace's archive for report: found (--archive, else TRACE.archive) and
 * extracted; report_lookup.c puts the directory first in the symbolizer's
 * buildid_dirs. */
#ifndef USTACK_CLI_REPORT_ARCHIVE_H
#define USTACK_CLI_REPORT_ARCHIVE_H

#include <limits.h>
#include <stddef.h>

struct report_dirs {
	char archive_dir[PATH_MAX];  /* the extracted archive, "" when none */
	char note[PATH_MAX + 256];   /* what --stats says of the archive, "" when none */
};

/**
 * Find the archive (@archive, else TRACE.archive when it exists) and
 * extract it (once) into the cache directory: d->archive_dir.
 * @param archive --archive FILE, or NULL
 * @return 0, or -1 after an error was printed (an --archive that cannot be
 *         used; a damaged TRACE.archive is a warning only)
 */
int report_dirs__build(struct report_dirs *d, const char *trace, const char *archive);

#endif
