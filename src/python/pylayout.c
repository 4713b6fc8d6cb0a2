// SPDX-License-Identifier: MIT
/*
 * CPython's layouts per minor version (pylayout.h). The 3.11 and 3.12
 * numbers are offsetof() of the release headers (Include/internal/
 * pycore_frame.h, pycore_runtime.h, pycore_interp.h, cpython/pystate.h,
 * cpython/code.h, cpython/unicodeobject.h), the same in 3.11.2 (Debian)
 * and 3.11.7, and in 3.12.1; ustack_py_proc__find() still checks each
 * against the process before it is used. 3.13+ publish their own
 * (_Py_DebugOffsets); what that struct leaves out (the str object's state
 * bits, the compact str size, the frame owner values, the tag bits of a
 * _PyStackRef) is from each version's headers: the str state bits and the
 * compact str are as in 3.12 up to 3.15 (cpython/unicodeobject.h); the
 * entry shim's owner is 3 in each (3.13 FRAME_OWNED_BY_CSTACK, 3.14 and
 * 3.15 FRAME_OWNED_BY_INTERPRETER: 3.14's FRAME_OWNED_BY_CSTACK, 4, is
 * set by no frame, so 4 stays "not a frame"); f_executable is a
 * _PyStackRef from 3.14 on, whose default build tags the low 2 bits
 * (Py_TAG_BITS 3, internal/pycore_stackref.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "python/pylayout.h"

static void layout_spans(struct ustack_py_layout *l)
{
	uint64_t fr[] = { l->fr_code, l->fr_previous, l->fr_instr, l->fr_owner, l->fr_is_entry };
	uint64_t co[] = { l->ob_type, l->var_ob_size, l->co_filename, l->co_qualname,
			  l->co_linetable, l->co_firstlineno, l->co_firsttraceable };
	uint64_t ts[] = { l->ts_next, l->ts_interp, l->ts_native_tid, l->ts_cframe,
			  l->ts_current_frame };
	size_t m = 0;

	for (size_t i = 0; i < sizeof(fr) / sizeof(fr[0]); i++)
		if (fr[i] != USTACK_PY_NO_FIELD && fr[i] + 8 > m)
			m = fr[i] + 8;
	l->fr_span = m;
	m = 0;
	for (size_t i = 0; i < sizeof(co) / sizeof(co[0]); i++)
		if (co[i] != USTACK_PY_NO_FIELD && co[i] + 8 > m)
			m = co[i] + 8;
	l->co_span = m;
	m = 0;
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		if (ts[i] != USTACK_PY_NO_FIELD && ts[i] + 8 > m)
			m = ts[i] + 8;
	l->ts_span = m;
}

static const struct ustack_py_layout py311 = {
	.minor = 11,
	.rt_interp_head = 40,
	.is_next = 0, .is_threads_head = 16,
	.ts_next = 8, .ts_interp = 16, .ts_native_tid = 160,
	.ts_cframe = 56, .cf_current = 8, .ts_current_frame = USTACK_PY_NO_FIELD,
	.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_owner = 69, .fr_is_entry = 68,
	.fr_code_mask = UINT64_MAX,
	.owner_generator = 1, .owner_cstack = -1,
	.ob_type = 8, .var_ob_size = 16,
	.co_filename = 112, .co_qualname = 128, .co_linetable = 136, .co_firstlineno = 72,
	.co_firsttraceable = 168, .co_code_adaptive = 184,
	.str_length = 16, .str_state = 32, .str_ascii_size = 48, .str_compact_size = 72,
	.bytes_sval = 32,
};

static const struct ustack_py_layout py312 = {
	.minor = 12,
	.rt_interp_head = 40,
	.is_next = 0, .is_threads_head = 72,
	.ts_next = 8, .ts_interp = 16, .ts_native_tid = 144,
	.ts_cframe = 56, .cf_current = 0, .ts_current_frame = USTACK_PY_NO_FIELD,
	.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70,
	.fr_is_entry = USTACK_PY_NO_FIELD, .fr_code_mask = UINT64_MAX,
	.owner_generator = 1, .owner_cstack = 3,
	.ob_type = 8, .var_ob_size = 16,
	.co_filename = 112, .co_qualname = 128, .co_linetable = 136, .co_firstlineno = 68,
	.co_firsttraceable = 176, .co_code_adaptive = 192,
	.str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_compact_size = 56,
	.bytes_sval = 32,
};

int ustack_py_layout__table(int minor, struct ustack_py_layout *out)
{
	if (minor == 11)
		*out = py311;
	else if (minor == 12)
		*out = py312;
	else
		return -ENOTSUP;
	layout_spans(out);
	return 0;
}

static uint64_t dbg_u64(const uint8_t *buf, size_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* Where the fields used here lie inside _Py_DebugOffsets, per version:
 * each group starts with its struct's size, then the fields in the order
 * of that version's internal/pycore_debug_offsets.h (offsetof() of its
 * struct as compiled from the 3.14.10 and 3.15.2 headers). The cookie,
 * version and free_threaded words are at 0, 8, 16 in each. */
struct dbg_pos {
	int minor;
	uint16_t len; /* sizeof(_Py_DebugOffsets) */
	uint16_t rt_size, rt_head, is_size, is_next, is_threads;
	uint16_t ts_size, ts_next, ts_interp, ts_frame, ts_native;
	uint16_t fr_size, fr_previous, fr_exec, fr_instr, fr_owner;
	uint16_t co_size, co_filename, co_qualname, co_linetable, co_firstline, co_adaptive;
	uint16_t ob_size, ob_type, by_size, by_obsize, by_sval;
	uint16_t un_size, un_state, un_length, un_ascii;
};

static const struct dbg_pos dbg_pos[] = {
	{ 13, 584, 24, 40, 48, 64, 72, 152, 168, 176, 184, 200,
	  224, 232, 240, 248, 264, 272, 280, 296, 304, 312, 344,
	  352, 360, 512, 520, 528, 536, 544, 552, 560 },
	/* 3.14: interpreter_state gained threads_main and two generations,
	 * interpreter_frame stackpointer and tlbc_index, code_object co_tlbc,
	 * and a set_object group came before dict_object */
	{ 14, 760, 24, 40, 48, 64, 72, 176, 192, 200, 208, 224,
	  248, 256, 264, 272, 288, 312, 320, 336, 344, 352, 384,
	  400, 408, 592, 600, 608, 616, 624, 632, 640 },
	/* 3.15: thread_state gained base_frame and the last profiled frame
	 * before native_thread_id, and more groups came before pyobject */
	{ 15, 888, 24, 40, 48, 64, 72, 176, 192, 200, 208, 248,
	  312, 320, 328, 336, 352, 376, 384, 400, 408, 416, 448,
	  464, 472, 688, 696, 704, 712, 720, 728, 736 },
};

/* Each field offset must leave 8 bytes inside its struct's stated size,
 * and no struct may claim more than this: a runtime that says otherwise
 * is not one we can read */
#define DO_MAX_STRUCT (1u << 20) /* _PyRuntimeState: 283320 bytes in 3.13.0 */

static int dbg_field(const uint8_t *buf, int size_at, int field_at, uint64_t *out,
		     char *err, size_t errlen)
{
	uint64_t size = dbg_u64(buf, size_at), off = dbg_u64(buf, field_at);

	if (size > DO_MAX_STRUCT || off > size || size - off < 1) {
		snprintf(err, errlen, "_Py_DebugOffsets field at +%d: offset %llu outside its struct (%llu bytes)",
			 field_at, (unsigned long long)off, (unsigned long long)size);
		return -ENOTSUP;
	}
	*out = off;
	return 0;
}

static const struct dbg_pos *dbg_pos_of(uint64_t version)
{
	for (size_t i = 0; i < sizeof(dbg_pos) / sizeof(dbg_pos[0]); i++)
		if ((version >> 16) == (0x300u | (unsigned int)dbg_pos[i].minor))
			return &dbg_pos[i];
	return NULL;
}

/* The fields at @d's positions into @out: 0 or -ENOTSUP */
static int dbg_fields(const uint8_t *buf, const struct dbg_pos *d, struct ustack_py_layout *out,
		      char *err, size_t errlen)
{
	const struct { uint16_t size_at, field_at; size_t where; } f[] = {
#define F(s, a, m) { d->s, d->a, offsetof(struct ustack_py_layout, m) }
		F(rt_size, rt_head, rt_interp_head),
		F(is_size, is_next, is_next), F(is_size, is_threads, is_threads_head),
		F(ts_size, ts_next, ts_next), F(ts_size, ts_interp, ts_interp),
		F(ts_size, ts_frame, ts_current_frame), F(ts_size, ts_native, ts_native_tid),
		F(fr_size, fr_previous, fr_previous), F(fr_size, fr_exec, fr_code),
		F(fr_size, fr_instr, fr_instr), F(fr_size, fr_owner, fr_owner),
		F(co_size, co_filename, co_filename), F(co_size, co_qualname, co_qualname),
		F(co_size, co_linetable, co_linetable), F(co_size, co_firstline, co_firstlineno),
		F(co_size, co_adaptive, co_code_adaptive),
		F(ob_size, ob_type, ob_type),
		F(by_size, by_obsize, var_ob_size), F(by_size, by_sval, bytes_sval),
		F(un_size, un_state, str_state), F(un_size, un_length, str_length),
		F(un_size, un_ascii, str_ascii_size),
#undef F
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint64_t v;
		int e = dbg_field(buf, f[i].size_at, f[i].field_at, &v, err, errlen);

		if (e)
			return e;
		memcpy((char *)out + f[i].where, &v, sizeof(v));
	}
	/* the whole PyASCIIObject must fit what the unicode group states */
	if (out->str_ascii_size > dbg_u64(buf, d->un_size) || out->str_ascii_size < out->str_state + 4) {
		snprintf(err, errlen, "_Py_DebugOffsets: str header of %llu bytes",
			 (unsigned long long)out->str_ascii_size);
		return -ENOTSUP;
	}
	return 0;
}

int ustack_py_layout__from_debug_offsets(const uint8_t *buf, size_t len, uint32_t py_version,
					 struct ustack_py_layout *out, char *err, size_t errlen)
{
	const struct dbg_pos *d;
	uint64_t version;
	int e;

	if (len < 24 || memcmp(buf, "xdebugpy", 8)) {
		snprintf(err, errlen, "_PyRuntime does not start with the cookie \"xdebugpy\"");
		return -ENOTSUP;
	}
	version = dbg_u64(buf, 8);
	if ((version >> 16) != (py_version >> 16)) {
		snprintf(err, errlen, "_Py_DebugOffsets of version 0x%llx, Py_Version 0x%x: not the same release",
			 (unsigned long long)version, py_version);
		return -ENOTSUP;
	}
	/* a version whose struct is not known here may have moved any field:
	 * refused, never read at another version's positions */
	d = dbg_pos_of(version);
	if (!d) {
		snprintf(err, errlen, "_Py_DebugOffsets of CPython %u.%u (0x%llx): this build reads 3.13-3.15",
			 (unsigned int)(version >> 24 & 0xff), (unsigned int)(version >> 16 & 0xff),
			 (unsigned long long)version);
		return -ENOTSUP;
	}
	if (len < d->len) {
		snprintf(err, errlen, "_Py_DebugOffsets of 3.%d: %zu bytes read, %u needed", d->minor,
			 len, (unsigned int)d->len);
		return -ENOTSUP;
	}
	if (dbg_u64(buf, 16)) {
		snprintf(err, errlen, "a free-threaded build (other object layouts): not supported");
		return -ENOTSUP;
	}
	memset(out, 0, sizeof(*out));
	out->minor = d->minor;
	e = dbg_fields(buf, d, out, err, errlen);
	if (e)
		return e;
	/* utf8_length and utf8 follow the ASCII header (cpython/unicodeobject.h) */
	out->str_compact_size = out->str_ascii_size + 16;
	out->ts_cframe = USTACK_PY_NO_FIELD;
	out->cf_current = USTACK_PY_NO_FIELD;
	out->fr_is_entry = USTACK_PY_NO_FIELD;
	out->co_firsttraceable = USTACK_PY_NO_FIELD;
	out->fr_code_mask = d->minor >= 14 ? ~(uint64_t)3 : UINT64_MAX;
	out->owner_generator = 1;
	out->owner_cstack = 3;
	layout_spans(out);
	return 0;
}
