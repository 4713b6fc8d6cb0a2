// SPDX-License-Identifier: MIT
/*
 * Public SFrame API over an ELF file: maps the file, finds .sframe and
 * exposes the decoder's functions and rows with plain public structs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ustack/sframe.h>
#include "common/compiler.h"
#include "common/opts.h"
#include "elf/elf_file.h"
#include "sframe/sframe.h"

/* The public enums are the internal row values, so rows copy through. */
_Static_assert((int)USTACK_SFRAME_REG_FP == (int)USTACK_CFA_FP &&
	       (int)USTACK_SFRAME_REG_SP == (int)USTACK_CFA_SP, "reg values");
_Static_assert((int)USTACK_SFRAME_RULE_SAME == (int)USTACK_RULE_SAME &&
	       (int)USTACK_SFRAME_RULE_OFFSET == (int)USTACK_RULE_OFFSET &&
	       (int)USTACK_SFRAME_RULE_UNDEFINED == (int)USTACK_RULE_UNDEFINED, "rule values");
_Static_assert((int)USTACK_SFRAME_ROW_OUTERMOST == (int)USTACK_ROW_OUTERMOST &&
	       (int)USTACK_SFRAME_ROW_NEEDS_FALLBACK == (int)USTACK_ROW_NEEDS_FALLBACK &&
	       (int)USTACK_SFRAME_ROW_SIGNAL == (int)USTACK_ROW_SIGNAL, "flag values");

struct ustack_sframe_file {
	struct ustack_elf *elf;
	struct ustack_elf_section sec;
	struct ustack_sframe sf;
};

int ustack_sframe_error__format(const struct ustack_sframe_error *err, char *buf, size_t len)
{
	const char *reason = err->reason ? err->reason : strerror(-err->err);
	char where[96];
	size_t n = 0;

	where[0] = 0;
	/* "FDE 3 FRE 7 at offset 0x1a4: reason"; each part is optional. */
	if (err->fde >= 0)
		n += snprintf(where + n, sizeof(where) - n, " FDE %lld", (long long)err->fde);
	if (err->fre >= 0 && n < sizeof(where))
		n += snprintf(where + n, sizeof(where) - n, " FRE %lld", (long long)err->fre);
	if (err->offset != UINT64_MAX && n < sizeof(where))
		snprintf(where + n, sizeof(where) - n, " at offset 0x%llx",
			 (unsigned long long)err->offset);
	if (!where[0])
		return snprintf(buf, len, "%s", reason);
	return snprintf(buf, len, "%s: %s", where + 1, reason);
}

static void msg(char *buf, size_t len, const char *fmt, const char *a)
{
	if (buf && len)
		snprintf(buf, len, fmt, a);
}

USTACK_API struct ustack_sframe_file *
ustack_sframe_file__open_opts(const char *path, const struct ustack_sframe_file_opts *opts)
{
	struct ustack_sframe_file *f;
	struct ustack_sframe_error e;
	char *errbuf;
	size_t errlen;
	int ret;

	if (!path || !OPTS_VALID(opts, struct ustack_sframe_file_opts)) {
		errno = EINVAL;
		return NULL;
	}
	errbuf = OPTS_GET(opts, errbuf, NULL);
	errlen = OPTS_GET(opts, errbuf_sz, 0);
	f = calloc(1, sizeof(*f));
	if (!f) {
		msg(errbuf, errlen, "%s", strerror(ENOMEM));
		return NULL;
	}
	f->elf = ustack_elf__open(path);
	if (!f->elf) {
		ret = -errno;
		msg(errbuf, errlen, "%s", strerror(-ret));
		goto fail;
	}
	ret = ustack_elf__section(f->elf, ".sframe", &f->sec);
	if (ret == -ENOENT || (!ret && !f->sec.data)) {
		msg(errbuf, errlen, "%s", "no .sframe section");
		ret = -ENODATA;
		goto fail;
	}
	if (ret) {
		msg(errbuf, errlen, "%s", ".sframe: section header points outside the file");
		goto fail;
	}
	ret = ustack_sframe__init_err(&f->sf, f->sec.data, f->sec.size, f->sec.addr, &e);
	if (ret) {
		char text[160];

		ustack_sframe_error__format(&e, text, sizeof(text));
		msg(errbuf, errlen, ".sframe: %s", text);
		goto fail;
	}
	return f;
fail:
	ustack_elf__close(f->elf);
	free(f);
	errno = -ret;
	return NULL;
}

USTACK_API struct ustack_sframe_file *ustack_sframe_file__open(const char *path)
{
	return ustack_sframe_file__open_opts(path, NULL);
}

/* 0.1's entry point, kept for binaries built against it */
USTACK_API struct ustack_sframe_file *ustack_sframe_file__open_ex(const char *path, char *errbuf,
								  size_t errlen)
{
	struct ustack_sframe_file_opts o = { .sz = sizeof(o), .errbuf = errbuf,
					     .errbuf_sz = errlen };

	return ustack_sframe_file__open_opts(path, &o);
}

USTACK_API void ustack_sframe_file__close(struct ustack_sframe_file *f)
{
	if (!f)
		return;
	ustack_elf__close(f->elf);
	free(f);
}

USTACK_API unsigned int ustack_sframe_file__version(const struct ustack_sframe_file *f)
{
	return f->sf.version;
}

USTACK_API unsigned int ustack_sframe_file__flags(const struct ustack_sframe_file *f)
{
	return f->sf.flags;
}

USTACK_API unsigned int ustack_sframe_file__nr_funcs(const struct ustack_sframe_file *f)
{
	return f->sf.nr_fdes;
}

USTACK_API int ustack_sframe_file__header(const struct ustack_sframe_file *f,
					  struct ustack_sframe_header *hdr)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->version = f->sf.version;
	hdr->flags = f->sf.flags;
	hdr->abi = f->sf.abi;
	hdr->fixed_fp_offset = f->sf.fixed_fp;
	hdr->fixed_ra_offset = f->sf.fixed_ra;
	hdr->auxhdr_len = f->sf.auxhdr_len;
	hdr->nr_fdes = f->sf.nr_fdes;
	hdr->nr_fres = f->sf.nr_fres;
	hdr->fre_len = f->sf.fre_len;
	hdr->section_addr = f->sec.addr;
	hdr->section_size = f->sec.size;
	hdr->section_offset = f->sec.offset;
	return 0;
}

USTACK_API int ustack_sframe_file__func(const struct ustack_sframe_file *f, unsigned int i,
					struct ustack_sframe_func *out)
{
	struct ustack_sframe_fde fde;
	int ret = ustack_sframe__fde(&f->sf, i, &fde);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->start = fde.start;
	out->size = fde.size;
	out->nr_rows = fde.nr_fres;
	out->pc_type = fde.pc_type;
	out->rep_size = fde.rep_size;
	out->fre_type = fde.fre_type;
	out->fde_type = fde.fde_type;
	out->info = fde.info;
	out->info2 = fde.info2;
	out->signal = fde.signal;
	out->offset = fde.offset;
	return 0;
}

static void row_out(const struct ustack_row *r, struct ustack_sframe_row *out)
{
	out->start = r->start;
	out->end = r->end;
	out->cfa_reg = r->cfa_reg;
	out->cfa_off = r->cfa_off;
	out->ra_rule = r->ra_rule;
	out->ra_off = r->ra_off;
	out->fp_rule = r->fp_rule;
	out->fp_off = r->fp_off;
	out->flags = r->flags;
}

USTACK_API int ustack_sframe_file__func_row(const struct ustack_sframe_file *f, unsigned int i,
					    unsigned int j, struct ustack_sframe_row *out)
{
	struct ustack_sframe_fde fde;
	struct ustack_sframe_fre fre;
	int ret = ustack_sframe__fde(&f->sf, i, &fde);

	if (ret)
		return ret;
	ret = ustack_sframe__fde_row(&f->sf, &fde, j, &fre);
	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	row_out(&fre.row, out);
	if (fde.pc_type == USTACK_SFRAME_PC_INC) {
		out->start += fde.start;
		out->end += fde.start;
	}
	out->start_off = fre.start_off;
	out->offset = fre.offset;
	out->info = fre.info;
	out->nr_words = fre.nr_words;
	out->word_size = fre.word_size;
	for (unsigned int k = 0; k < fre.nr_words && k < ARRAY_SIZE(out->words); k++)
		out->words[k] = fre.words[k];
	return 0;
}

USTACK_API int ustack_sframe_file__lookup(const struct ustack_sframe_file *f, uint64_t addr,
					  struct ustack_sframe_row *out)
{
	struct ustack_row r;
	int ret = ustack_sframe__find_row(&f->sf, addr, &r);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	row_out(&r, out);
	return 0;
}

USTACK_API int ustack_sframe_file__validate(const struct ustack_sframe_file *f, char *buf,
					    size_t len)
{
	struct ustack_sframe_error e;
	int ret = ustack_sframe__validate(&f->sf, &e);

	if (ret && buf && len)
		ustack_sframe_error__format(&e, buf, len);
	return ret;
}
