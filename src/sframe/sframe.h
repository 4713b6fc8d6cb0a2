/* SPDX-License-Identifier: MIT */
/*
 * SFrame v1/v2/v3 decoder: an in-place view over a .sframe section (from a
 * file or a loaded PT_GNU_SFRAME segment). Nothing is copied or allocated;
 * every byte is bounds-checked when it is read, so a section can be used
 * straight from an untrusted file. ustack_sframe__find_row() is
 * async-signal-safe (no allocation, no locks, no logging): the in-process
 * backtrace calls it from signal handlers.
 *
 * Errors: -EBADMSG for corrupt bytes, -ENOTSUP for a version or ABI this
 * decoder does not handle, -ENOENT when no row covers an address.
 */
#ifndef USTACK_SFRAME_SFRAME_H
#define USTACK_SFRAME_SFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/unwind_row.h"

#define USTACK_SFRAME_MAGIC 0xdee2

/* Section-wide flags (preamble). */
#define USTACK_SFRAME_F_FDE_SORTED 0x1
#define USTACK_SFRAME_F_FRAME_POINTER 0x2 /* v1/v2 only */
#define USTACK_SFRAME_F_FDE_FUNC_START_PCREL 0x4

/* ABI/arch identifiers (header). */
#define USTACK_SFRAME_ABI_AARCH64_BE 1
#define USTACK_SFRAME_ABI_AARCH64_LE 2
#define USTACK_SFRAME_ABI_AMD64_LE 3
#define USTACK_SFRAME_ABI_S390X_BE 4

/* How FRE start offsets are matched against a pc. */
#define USTACK_SFRAME_PC_INC 0
#define USTACK_SFRAME_PC_MASK 1

/* v3 FDE types (info2): how the FRE data words are read. */
#define USTACK_SFRAME_FDE_DEFAULT 0
#define USTACK_SFRAME_FDE_FLEX 1

/* Size of the fixed header (the auxiliary header follows it). */
#define USTACK_SFRAME_HDR_SIZE 28
/* A FRE carries at most 15 data words (4-bit count). */
#define USTACK_SFRAME_MAX_WORDS 15

struct ustack_sframe {
	const uint8_t *data;
	uint64_t size;
	uint64_t sec_addr;  /* address of data[0] in the caller's address space */
	uint8_t version;
	uint8_t flags;
	uint8_t abi;
	int8_t fixed_fp;    /* 0: FP offsets, if any, are in the FREs */
	int8_t fixed_ra;    /* 0: RA offsets, if any, are in the FREs */
	uint8_t auxhdr_len;
	uint8_t fde_size;   /* 17 (v1), 20 (v2), 16 (v3) */
	uint32_t nr_fdes;
	uint32_t nr_fres;
	uint32_t fre_len;
	uint64_t fde_base;  /* byte offset of the FDE array in data */
	uint64_t fre_base;  /* byte offset of the FRE sub-section in data */
};

/* One function descriptor, decoded. */
struct ustack_sframe_fde {
	uint64_t start;     /* function start (caller's address space) */
	uint32_t size;      /* bytes */
	uint32_t nr_fres;
	uint64_t offset;    /* byte offset of the FDE in the section */
	uint64_t fres;      /* byte offset of its first FRE in the section */
	uint8_t info;       /* raw info byte */
	uint8_t info2;      /* v3 only, else 0 */
	uint8_t rep_size;   /* PCMASK repetition block size */
	uint8_t pc_type;    /* USTACK_SFRAME_PC_INC / _MASK */
	uint8_t fre_type;   /* 0, 1, 2: FRE start offsets of 1, 2, 4 bytes */
	uint8_t fde_type;   /* USTACK_SFRAME_FDE_DEFAULT / _FLEX */
	uint8_t signal;     /* v3: signal trampoline */
};

/* One frame row entry, decoded (raw words plus the row they mean). */
struct ustack_sframe_fre {
	uint32_t start_off; /* from the function start (or repetition block) */
	uint64_t offset;    /* byte offset of the FRE in the section */
	uint32_t len;       /* bytes taken by the FRE */
	uint8_t info;       /* raw info byte */
	uint8_t nr_words;
	uint8_t word_size;  /* 1, 2 or 4 */
	int32_t words[USTACK_SFRAME_MAX_WORDS];
	struct ustack_row row; /* start/end relative to the function start */
};

/* Where validation (or a failing lookup) found a problem. */
struct ustack_sframe_error {
	int err;            /* negative errno */
	int64_t fde;        /* FDE index, -1 when about the header */
	int64_t fre;        /* FRE index inside the FDE, -1 when none */
	uint64_t offset;    /* byte offset in the section, UINT64_MAX if unknown */
	const char *reason; /* static text */
};

/**
 * Check the header of the section in @data and set up @sf to read it.
 * @param sec_addr address of data[0] in the address space used for lookups
 * @return 0, -EBADMSG (corrupt), -ENOTSUP (unsupported version/ABI)
 */
int ustack_sframe__init(struct ustack_sframe *sf, const void *data, size_t size,
			uint64_t sec_addr);
/** The same, saying what was wrong in @err (may be NULL). */
int ustack_sframe__init_err(struct ustack_sframe *sf, const void *data, size_t size,
			    uint64_t sec_addr, struct ustack_sframe_error *err);

static inline uint32_t ustack_sframe__nr_fdes(const struct ustack_sframe *sf)
{
	return sf->nr_fdes;
}

/**
 * Decode FDE @i (and, for v3, its attribute block).
 * @return 0, -ERANGE (i out of range), -EBADMSG
 */
int ustack_sframe__fde(const struct ustack_sframe *sf, uint32_t i, struct ustack_sframe_fde *fde);

/**
 * Decode the FRE at byte offset *@pos of @fde's FREs and advance *@pos.
 * Start *@pos at fde->fres. Checks bounds and the data-word encoding only
 * (ordering is checked by the callers that walk several FREs).
 * @return 0 or -EBADMSG
 */
int ustack_sframe__fre_next(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
			    uint64_t *pos, struct ustack_sframe_fre *fre);

/**
 * Row @j of function @i (walks the FREs before it: O(j)). row.start/end are
 * absolute for PCINC, offsets inside the repetition block for PCMASK.
 * @return 0, -ERANGE, -EBADMSG
 */
int ustack_sframe__fde_row(const struct ustack_sframe *sf, const struct ustack_sframe_fde *fde,
			   uint32_t j, struct ustack_sframe_fre *fre);

/**
 * Row covering @addr. O(log n) over the FDEs (sort order checked on the
 * way), then linear over the function's FREs. Async-signal-safe.
 * @return 0, -ENOENT (no function covers addr, or addr precedes its first
 *         row), -EBADMSG (corrupt bytes met)
 */
int ustack_sframe__find_row(const struct ustack_sframe *sf, uint64_t addr, struct ustack_row *row);

/**
 * Walk every FDE and FRE and check everything: bounds, sort order, FRE
 * starts increasing and inside their function, encodings, FRE count.
 * @return 0 or the first error (also described in @err, may be NULL)
 */
int ustack_sframe__validate(const struct ustack_sframe *sf, struct ustack_sframe_error *err);

/* Receives rows in increasing address order, never overlapping; a
 * non-zero return stops the walk and is passed back. */
typedef int (*ustack_sframe_row_fn)(void *ctx, const struct ustack_row *row);

/**
 * Every row of the section exactly as ustack_sframe__find_row() answers
 * it (absolute start/end): each function over the part of it that the
 * lookup reaches, a PCMASK function once per repetition block. Validates
 * the whole section first, so a damaged section gives no row at all. No
 * allocation (a cold path all the same: it reads every FRE twice).
 * @return 0, validation's error (in @err, may be NULL), -ENOTSUP with
 *         @err set for a section not flagged sorted whose functions do not
 *         follow each other in address order (no linker makes one), or
 *         fn()'s non-zero return
 */
int ustack_sframe__rows(const struct ustack_sframe *sf, ustack_sframe_row_fn fn, void *ctx,
			struct ustack_sframe_error *err);

/** Format @err as "FDE 3 FRE 7 at offset 0x1a4: reason" into @buf. */
int ustack_sframe_error__format(const struct ustack_sframe_error *err, char *buf, size_t len);

#endif
