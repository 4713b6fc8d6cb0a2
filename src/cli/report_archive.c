// SPDX-License-Identifier: MIT
/* report: the archive beside a trace (or --archive), extracted for the
 * symbolizer (report_archive.h). The archive API is the
 * library's internal one (src/archive/archive.h): the CLI is its only user. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "archive/archive.h"
#include "cli/cli.h"
#include "cli/report_archive.h"
#include "common/cache_dir.h"

int report_dirs__build(struct report_dirs *d, const char *trace, const char *archive)
{
	char beside[PATH_MAX], cbuf[PATH_MAX], err[PATH_MAX + 256];
	struct ustack_archive_stats st;
	const char *root;
	struct stat sb;
	int given = archive != NULL, n;

	memset(d, 0, sizeof(*d));
	if (!archive) {
		if (snprintf(beside, sizeof(beside), "%s%s", trace, USTACK_ARCHIVE_SUFFIX) >=
			    (int)sizeof(beside) ||
		    stat(beside, &sb))
			return 0;
		archive = beside;
	}
	root = ustack_cache_dir(cbuf, sizeof(cbuf));
	if (!root || !*root) {
		cli_error("%s: not used: no cache directory to extract it into (USTACK_CACHE_DIR is "
			  "empty and there is no HOME)", archive);
		return given ? -1 : 0;
	}
	if (ustack_archive__extract(archive, root, d->archive_dir, sizeof(d->archive_dir), &st, err,
				    sizeof(err))) {
		cli_error("%s%s", err, given ? "" : " (archive not used)");
		d->archive_dir[0] = 0;
		return given ? -1 : 0;
	}
	n = snprintf(d->note, sizeof(d->note),
		     "%s (%" PRIu64 " files, %" PRIu64 " bytes, %" PRIu64 " members rejected) in %s",
		     archive, st.files, st.bytes, st.rejected, d->archive_dir);
	/* long paths: the note is cut, and says so */
	if (n < 0 || (size_t)n >= sizeof(d->note))
		memcpy(d->note + sizeof(d->note) - 4, "...", 4);
	return 0;
}
