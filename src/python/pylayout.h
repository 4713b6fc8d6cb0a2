/* SPDX-License-Identifier: MIT */
/*
 * Where CPython keeps what the frame reader needs, per minor version: the
 * offsets of the runtime, interpreter, thread state, frame, code, str and
 * bytes objects. 3.11 and 3.12 from tables (their headers, checked against
 * the pyenv and Debian builds of this machine); 3.13, 3.14 and 3.15 from the
 * process's own _PyRuntime.debug_offsets, where they publish them (a
 * struct that grows with each version: where each field lies in it is
 * known per version, and a version not known here is refused).
 */
#ifndef USTACK_PYTHON_PYLAYOUT_H
#define USTACK_PYTHON_PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define USTACK_PY_NO_FIELD UINT64_MAX

struct ustack_py_layout {
	int minor;                       /* 3.<minor> */
	uint64_t rt_interp_head;         /* _PyRuntime.interpreters.head */
	uint64_t is_next, is_threads_head;
	uint64_t ts_next, ts_interp, ts_native_tid;
	/* the current frame: tstate->cframe->current_frame (3.11, 3.12),
	 * or tstate->current_frame (ts_cframe == USTACK_PY_NO_FIELD) */
	uint64_t ts_cframe, cf_current, ts_current_frame;
	uint64_t fr_code, fr_previous, fr_instr, fr_owner;
	/* f_executable is a _PyStackRef (3.14+): its low bits are tags, the
	 * code object's address is the word & fr_code_mask (~0: untagged) */
	uint64_t fr_code_mask;
	uint64_t fr_is_entry;            /* 3.11 only */
	int owner_generator;             /* FRAME_OWNED_BY_GENERATOR */
	/* the entry shim a C-level eval call pushes (3.12, 3.13:
	 * FRAME_OWNED_BY_CSTACK; 3.14+: FRAME_OWNED_BY_INTERPRETER, also the
	 * thread's base frame in 3.15; 3 in each), -1 before 3.12 */
	int owner_cstack;
	uint64_t ob_type, var_ob_size;   /* PyObject.ob_type, PyVarObject.ob_size */
	uint64_t co_filename, co_qualname, co_linetable, co_firstlineno;
	uint64_t co_firsttraceable;      /* USTACK_PY_NO_FIELD: not known (3.13) */
	uint64_t co_code_adaptive;       /* the instructions, inside the object */
	uint64_t str_length, str_state;  /* PyASCIIObject */
	uint64_t str_ascii_size, str_compact_size; /* sizeof PyASCIIObject, PyCompactUnicodeObject */
	uint64_t bytes_sval;             /* PyBytesObject.ob_sval */
	/* bytes the reader fetches at once: the largest offset used + 8 */
	size_t fr_span, co_span, ts_span;
};

/* The table of 3.@minor (11 or 12): 0, or -ENOTSUP (no table). */
int ustack_py_layout__table(int minor, struct ustack_py_layout *out);

/*
 * The layout of 3.13, 3.14 or 3.15 from the _Py_DebugOffsets bytes at the
 * start of _PyRuntime (@len bytes read): 0, or -ENOTSUP with @err saying
 * what does not hold (the cookie, the version word against @py_version or
 * not one of those, a free-threaded build, fewer bytes than that
 * version's struct, an offset outside its struct's size).
 */
int ustack_py_layout__from_debug_offsets(const uint8_t *buf, size_t len, uint32_t py_version,
					 struct ustack_py_layout *out, char *err, size_t errlen);

/* Bytes of _PyRuntime that ustack_py_layout__from_debug_offsets() reads */
#define USTACK_PY_DEBUG_OFFSETS_LEN 888 /* the largest sizeof(_Py_DebugOffsets): 3.15's
					   (3.13: 584, 3.14: 760) */

#endif
