// SPDX-License-Identifier: MIT
/*
 * CPython's layouts per minor version (pylayout.h). The 3.11 and 3.12
 * numbers are offsetof() of the release headers (Include/internal/
 * pycore_frame.h, pycore_runtime.h, pycore_interp.h, cpython/pystate.h,
 * cpython/code.h, cpython/unicodeobject.h), the same in 3.11.2 (Debian)
 * and 3.11.7, and in 3.12.1; ustack_py_proc__find() still checks each
 * against the process before it is used. 3.13 publishes its own
 * (_Py_DebugOffsets); what that struct leaves out (the str object's state
 * bits, the compact str size, the frame owner values) is as in 3.12.
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
	.fr_is_entry = USTACK_PY_NO_FIELD,
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

/* The offsets of _Py_DebugOffsets (3.13) used here: each group starts
 * with its struct's size, then the fields in the order of pycore_runtime.h */
enum {
	DO_VERSION = 8, DO_FREE_THREADED = 16,
	DO_RT_SIZE = 24, DO_RT_HEAD = 40,
	DO_IS_SIZE = 48, DO_IS_NEXT = 64, DO_IS_THREADS = 72,
	DO_TS_SIZE = 152, DO_TS_NEXT = 168, DO_TS_INTERP = 176, DO_TS_FRAME = 184,
	DO_TS_NATIVE = 200,
	DO_FR_SIZE = 224, DO_FR_PREVIOUS = 232, DO_FR_EXEC = 240, DO_FR_INSTR = 248,
	DO_FR_OWNER = 264,
	DO_CO_SIZE = 272, DO_CO_FILENAME = 280, DO_CO_QUALNAME = 296, DO_CO_LINETABLE = 304,
	DO_CO_FIRSTLINE = 312, DO_CO_ADAPTIVE = 344,
	DO_OB_SIZE = 352, DO_OB_TYPE = 360,
	DO_BY_SIZE = 512, DO_BY_OBSIZE = 520, DO_BY_SVAL = 528,
	DO_UN_SIZE = 536, DO_UN_STATE = 544, DO_UN_LENGTH = 552, DO_UN_ASCII = 560,
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

int ustack_py_layout__from_debug_offsets(const uint8_t *buf, size_t len, uint32_t py_version,
					 struct ustack_py_layout *out, char *err, size_t errlen)
{
	static const struct { int size_at, field_at; size_t where; } f[] = {
#define F(s, d, m) { s, d, offsetof(struct ustack_py_layout, m) }
		F(DO_RT_SIZE, DO_RT_HEAD, rt_interp_head),
		F(DO_IS_SIZE, DO_IS_NEXT, is_next), F(DO_IS_SIZE, DO_IS_THREADS, is_threads_head),
		F(DO_TS_SIZE, DO_TS_NEXT, ts_next), F(DO_TS_SIZE, DO_TS_INTERP, ts_interp),
		F(DO_TS_SIZE, DO_TS_FRAME, ts_current_frame), F(DO_TS_SIZE, DO_TS_NATIVE, ts_native_tid),
		F(DO_FR_SIZE, DO_FR_PREVIOUS, fr_previous), F(DO_FR_SIZE, DO_FR_EXEC, fr_code),
		F(DO_FR_SIZE, DO_FR_INSTR, fr_instr), F(DO_FR_SIZE, DO_FR_OWNER, fr_owner),
		F(DO_CO_SIZE, DO_CO_FILENAME, co_filename), F(DO_CO_SIZE, DO_CO_QUALNAME, co_qualname),
		F(DO_CO_SIZE, DO_CO_LINETABLE, co_linetable),
		F(DO_CO_SIZE, DO_CO_FIRSTLINE, co_firstlineno),
		F(DO_CO_SIZE, DO_CO_ADAPTIVE, co_code_adaptive),
		F(DO_OB_SIZE, DO_OB_TYPE, ob_type),
		F(DO_BY_SIZE, DO_BY_OBSIZE, var_ob_size), F(DO_BY_SIZE, DO_BY_SVAL, bytes_sval),
		F(DO_UN_SIZE, DO_UN_STATE, str_state), F(DO_UN_SIZE, DO_UN_LENGTH, str_length),
		F(DO_UN_SIZE, DO_UN_ASCII, str_ascii_size),
#undef F
	};
	uint64_t version;
	int err_;

	if (len < USTACK_PY_DEBUG_OFFSETS_LEN || memcmp(buf, "xdebugpy", 8)) {
		snprintf(err, errlen, "_PyRuntime does not start with the cookie \"xdebugpy\"");
		return -ENOTSUP;
	}
	version = dbg_u64(buf, DO_VERSION);
	if ((version >> 16) != (py_version >> 16) || (version >> 16) != 0x30d) {
		snprintf(err, errlen, "_Py_DebugOffsets of version 0x%llx, Py_Version 0x%x (3.13 read this way)",
			 (unsigned long long)version, py_version);
		return -ENOTSUP;
	}
	if (dbg_u64(buf, DO_FREE_THREADED)) {
		snprintf(err, errlen, "a free-threaded build (other object layouts): not supported");
		return -ENOTSUP;
	}
	memset(out, 0, sizeof(*out));
	out->minor = 13;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint64_t v;

		err_ = dbg_field(buf, f[i].size_at, f[i].field_at, &v, err, errlen);
		if (err_)
			return err_;
		memcpy((char *)out + f[i].where, &v, sizeof(v));
	}
	/* the whole PyASCIIObject must fit what the unicode group states */
	if (out->str_ascii_size > dbg_u64(buf, DO_UN_SIZE) || out->str_ascii_size < out->str_state + 4) {
		snprintf(err, errlen, "_Py_DebugOffsets: str header of %llu bytes",
			 (unsigned long long)out->str_ascii_size);
		return -ENOTSUP;
	}
	/* utf8_length and utf8 follow the ASCII header (cpython/unicodeobject.h) */
	out->str_compact_size = out->str_ascii_size + 16;
	out->ts_cframe = USTACK_PY_NO_FIELD;
	out->cf_current = USTACK_PY_NO_FIELD;
	out->fr_is_entry = USTACK_PY_NO_FIELD;
	out->co_firsttraceable = USTACK_PY_NO_FIELD;
	out->owner_generator = 1;
	out->owner_cstack = 3;
	layout_spans(out);
	return 0;
}
