// SPDX-License-Identifier: MIT
/* report_lookup.h: the lookup options of the commands that read traces. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out_names.h"
#include "cli/report_lookup.h"
#include "symbolize/symbolize_internal.h"
#include "trace/trace.h"

const char report_lookup_usage[] =
	"      --symfs DIR      look for the recorded paths under DIR (a copy of the\n"
	"                       recording host's or container's root; perf's option)\n"
	"      --buildid-dir DIR  a build-ID cache to look in first (repeatable, in\n"
	"                       order; an extracted archive, another host's cache)\n"
	"      --no-buildid-cache  do not look in ustack's or perf's build-ID caches\n";

/* value of option argv[*i] ("--opt VALUE" or "--opt=VALUE"), NULL: not it,
 * "" after an error */
static const char *value_of(const char *cmd, int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t l = strlen(name);

	if (!strncmp(a, name, l) && a[l] == '=')
		return a + l + 1;
	if (strcmp(a, name))
		return NULL;
	if (*i + 1 >= argc) {
		cli_error("%s: %s needs a value", cmd, a);
		return "";
	}
	return argv[++*i];
}

int report_lookup__option(struct report_lookup *lk, const char *cmd, int argc, char **argv,
			  int *i)
{
	const char *v;

	if (!strcmp(argv[*i], "--no-buildid-cache")) {
		lk->no_buildid_cache = 1;
		return 1;
	}
	if ((v = value_of(cmd, argc, argv, i, "--symfs"))) {
		if (!*v)
			return -1;
		lk->symfs = v;
		return 1;
	}
	if (!(v = value_of(cmd, argc, argv, i, "--buildid-dir")))
		return 0;
	if (!*v)
		return -1;
	if (lk->ngiven == REPORT_BUILDID_DIRS_MAX) {
		cli_error("%s: at most %d --buildid-dir", cmd, REPORT_BUILDID_DIRS_MAX);
		return -1;
	}
	lk->given[lk->ngiven++] = v;
	return 1;
}

int report_lookup__argv(const struct report_lookup *lk, char **argv, int argc)
{
	for (int i = 0; i < lk->ngiven; i++) {
		argv[argc++] = "--buildid-dir";
		argv[argc++] = (char *)lk->given[i];
	}
	if (lk->symfs) {
		argv[argc++] = "--symfs";
		argv[argc++] = (char *)lk->symfs;
	}
	if (lk->no_buildid_cache)
		argv[argc++] = "--no-buildid-cache";
	return argc;
}

/*
 * The build-ID caches looked in before ustack's and perf's, in order. The
 * one place that builds the list: the trace's archive (--archive, or found
 * beside the trace) goes first here, labelled "archive", then each
 * --buildid-dir.
 */
static int buildid_dirs(struct report_lookup *lk, const char *trace)
{
	(void)trace; /* its archive was found and extracted by report_dirs__build() */
	lk->ndirs = 0;
	if (lk->archive_dir) {
		lk->labels[lk->ndirs] = "archive";
		lk->dirs[lk->ndirs++] = lk->archive_dir;
	}
	for (int i = 0; i < lk->ngiven; i++) {
		lk->labels[lk->ndirs] = "buildid-dir";
		lk->dirs[lk->ndirs++] = lk->given[i];
	}
	lk->dirs[lk->ndirs] = NULL;
	return 0;
}

int report_lookup__apply(struct report_lookup *lk, struct ustack_symbolizer_opts *so,
			 const char *trace)
{
	if (buildid_dirs(lk, trace))
		return -1;
	so->buildid_dirs = lk->ndirs ? lk->dirs : NULL;
	so->symfs = lk->symfs;
	if (lk->no_buildid_cache)
		so->flags |= USTACK_SYMBOLIZER_NO_BUILDID_CACHE;
	return 0;
}

void report_lookup__content(struct report_lookup *lk, struct ustack_symbolizer *sym,
			    const struct ustack_trace_file_content *c)
{
	int err;

	if (!sym || c->algo != USTACK_TRACE_HASH_SHA256)
		return; /* a hash this reader does not know checks nothing */
	err = ustack_symbolizer__set_file_content(sym, c->file_id, c->hash, c->size);
	if (err == -EBUSY)
		lk->content_late++;
	else if (err == -EEXIST)
		lk->content_conflict++;
}

int report_lookup__preload(struct report_lookup *lk, struct ustack_symbolizer *sym,
			   const char *trace)
{
	struct ustack_trace_reader_opts ro = { .sz = sizeof(ro),
					       .max_type = USTACK_TRACE_RECORD_TYPE_MAX };
	struct ustack_trace_reader *r;
	struct ustack_trace_record rec;
	int ret;

	if (!sym)
		return 0;
	if (!(r = ustack_trace_reader__open(trace, &ro)))
		return -errno;
	/* the damage, if any, is the main pass's to report */
	ustack_trace_reader__skim(r, 1u << USTACK_TRACE_FILE_MAP | 1u << USTACK_TRACE_FILE_CONTENT);
	while ((ret = ustack_trace_reader__next(r, &rec, sizeof(rec))) == 1) {
		if (rec.type == USTACK_TRACE_FILE_MAP)
			ret = ustack_symbolizer__add_file(sym, &rec.file_map);
		else if (rec.type == USTACK_TRACE_FILE_CONTENT)
			report_lookup__content(lk, sym, &rec.file_content);
		if (ret == -ENOMEM)
			break;
	}
	ustack_trace_reader__close(r);
	return ret == -ENOMEM ? ret : 0;
}

void report_lookup__finish(const struct report_lookup *lk)
{
	if (lk->content_late)
		cli_error("warning: %" PRIu64 " file content records came after their file's "
			  "first frame: those files were not checked against them",
			  lk->content_late);
	if (lk->content_conflict)
		cli_error("warning: %" PRIu64 " file content records contradict an earlier one for "
			  "the same file id: the first was kept", lk->content_conflict);
}

/* the place an image or a refused file was found in */
static void put_place(FILE *out, const struct report_lookup *lk, unsigned int source,
		      unsigned int idx)
{
	if (source == USTACK_IMAGE_SRC_GIVEN_DIR && lk && idx < (unsigned int)lk->ndirs) {
		fprintf(out, "%s ", lk->labels[idx]);
		out_name_put(out, OUT_NAME_LINE, lk->dirs[idx]);
	} else {
		fputs(ustack_image_source_name(source), out);
	}
}

void report_lookup__stats(FILE *out, const struct report_lookup *lk,
			  struct ustack_symbolizer *sym, uint64_t file_id, const char *rec_path)
{
	const char *path = NULL;
	unsigned int idx = 0, source;
	int src = ustack_symbolizer__file_image_source(sym, file_id, &path, &idx), why;

	fputs("image: ", out);
	if (rec_path) {
		fprintf(out, "file %" PRIu64 " ", file_id);
		out_name_put(out, OUT_NAME_LINE, rec_path);
		fputs(": ", out);
	}
	put_place(out, lk, (unsigned int)src, idx);
	if (path) {
		fputs(rec_path ? " (" : " ", out);
		out_name_put(out, OUT_NAME_LINE, path);
		fputs(rec_path ? ")" : "", out);
	}
	fputc('\n', out);
	for (unsigned int i = 0; (why = ustack_symbolizer__file_refusal(sym, file_id, i, &path,
									   &source)); i++) {
		fputs("refused: ", out);
		if (rec_path) {
			fprintf(out, "file %" PRIu64 " ", file_id);
			out_name_put(out, OUT_NAME_LINE, rec_path);
			fputs(": ", out);
		}
		out_name_put(out, OUT_NAME_LINE, path);
		fputs(" (", out);
		/* a refused file's given directory is not known by index: its
		 * path says which */
		put_place(out, NULL, source, 0);
		fprintf(out, "): %s\n", why == 2 ? "content differs" : "build ID differs");
	}
}
