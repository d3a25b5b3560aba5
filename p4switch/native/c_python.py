"""The module's CPython entry point: one packet in, its outputs out as Python objects.

A second translation unit (Python.h defines names the emitted code may use)
compiled into the same shared object.  ``process(W, data, port, now_us)``
runs ``sw_process_w`` and builds the ``(port, frame, instance_type)``
tuples itself: a ctypes call converts its arguments through libffi and
every word read back from native memory is a Python operation, which cost
more than the pipeline.  It returns ``(outputs, flags)``; ``flags`` says
what the switch's stats need to know (``FLAG_*`` and the three counts).
When the compiler cannot build it (no Python headers) the module is built
without it and the switch reads the outputs through ctypes.
"""

from __future__ import annotations

import sysconfig

#: the Python module the shared object is loaded as
MODULE_NAME = "p4mcc_native"

FLAG_FAULT = 1  # a run-time fault in ingress: no output
FLAG_PARSER_ERROR = 2
FLAG_DIGESTS = 4  # digests wait in native memory (res[3] of them)
FLAG_EGRESS_FAULT = 8  # a fault in some replica's egress: the outputs before it
DROPPED_SHIFT, REPLICAS_SHIFT, SHARED_SHIFT = 8, 24, 40  # 16 bits each
COUNT_MAX = 0xFFFF  # a group with more replicas runs through ctypes

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
typedef uint64_t u64;
typedef int64_t i64;
/* the first members of sw_t (cgen.py): results, then inputs */
typedef struct { u64 res[8]; u64 in[24]; } sw_head;
int sw_process_w(void *W, const uint8_t *data);
int sw_outmax(void);

static PyObject *py_process(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 || !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "process(W: int, data: bytes, port: int, now_us: int)");
        return NULL;
    }
    sw_head *W = (sw_head *)PyLong_AsVoidPtr(args[0]);
    u64 port = PyLong_AsUnsignedLongLongMask(args[2]), now_us = PyLong_AsUnsignedLongLongMask(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (!W) { PyErr_SetString(PyExc_ValueError, "no switch"); return NULL; }
    const uint8_t *data = (const uint8_t *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t len = PyBytes_GET_SIZE(args[1]);
    W->in[5] = now_us; W->in[6] = (u64)len; W->in[13] = port;
    int st = sw_process_w(W, data);
    u64 flags = 0, n = 0, done = 0, dropped = 0, shared = 0;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    if (st & 2) flags |= FLAG_PARSER_ERROR;
    if (st & 1) { flags |= FLAG_FAULT; goto finish; }
    if (W->res[3]) flags |= FLAG_DIGESTS;
    n = W->res[4];
    if (!n) { dropped = 1; goto finish; }
    done = W->res[5];
    if (W->res[1]) flags |= n << REPLICAS_SHIFT;
    if (done < n) flags |= FLAG_EGRESS_FAULT;
    {
        u64 off = W->res[0];
        const uint8_t *payload = data + (off < (u64)len ? off : (u64)len);
        Py_ssize_t plen = off < (u64)len ? len - (Py_ssize_t)off : 0;
        const uint8_t *obuf = (const uint8_t *)W->in[10];
        const i64 *lens = (const i64 *)W->in[11];
        const u64 *itypes = (const u64 *)W->in[12], *truncs = (const u64 *)W->in[14], *oports = (const u64 *)W->in[16];
        i64 om = sw_outmax();
        PyObject *last = NULL; const uint8_t *last_h = NULL; i64 last_L = -1;
        for (u64 i = 0; i < done; i++) {
            i64 L = lens[i];
            if (L < 0) { dropped++; continue; }
            const uint8_t *h = obuf + (i64)i * om;
            if (last && L == last_L && memcmp(h, last_h, (size_t)L) == 0) {
                shared++;  /* replicas with equal headers share one frame, as the interpreter's do */
            } else {
                PyObject *pkt = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)L + plen);
                if (!pkt) goto fail;
                memcpy(PyBytes_AS_STRING(pkt), h, (size_t)L);
                memcpy(PyBytes_AS_STRING(pkt) + L, payload, (size_t)plen);
                Py_XDECREF(last);
                last = pkt; last_h = h; last_L = L;
            }
            PyObject *frame;
            u64 tr = truncs ? truncs[i] : 0;
            if (tr && (Py_ssize_t)tr < PyBytes_GET_SIZE(last)) {
                frame = PyBytes_FromStringAndSize(PyBytes_AS_STRING(last), (Py_ssize_t)tr);
                if (!frame) goto fail;
            } else {
                Py_INCREF(last); frame = last;
            }
            PyObject *t = PyTuple_New(3);
            PyObject *p = PyLong_FromUnsignedLongLong(oports[i]), *it = PyLong_FromUnsignedLongLong(itypes[i]);
            if (!t || !p || !it) { Py_XDECREF(t); Py_XDECREF(p); Py_XDECREF(it); Py_DECREF(frame); goto fail; }
            PyTuple_SET_ITEM(t, 0, p); PyTuple_SET_ITEM(t, 1, frame); PyTuple_SET_ITEM(t, 2, it);
            int bad = PyList_Append(out, t);
            Py_DECREF(t);
            if (bad) goto fail;
        }
        Py_XDECREF(last);
        goto finish;
    fail:
        Py_XDECREF(last);
        Py_DECREF(out);
        return NULL;
    }
finish:
    flags |= (dropped << DROPPED_SHIFT) | (shared << SHARED_SHIFT);
    {
        PyObject *f = PyLong_FromUnsignedLongLong(flags), *r = f ? PyTuple_New(2) : NULL;
        if (!r) { Py_XDECREF(f); Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(r, 0, out); PyTuple_SET_ITEM(r, 1, f);
        return r;
    }
}

static PyMethodDef methods[] = {
    {"process", (PyCFunction)(void (*)(void))py_process, METH_FASTCALL, "one packet through the pipeline"},
    {NULL, NULL, 0, NULL}
};
static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "MODULE_NAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_MODULE_NAME(void) { return PyModule_Create(&moddef); }
"""


def source() -> str:
    """The entry point's C text, with this module's names and flags."""
    defs = "".join(f"#define {k} {v}\n" for k, v in (
        ("FLAG_FAULT", FLAG_FAULT), ("FLAG_PARSER_ERROR", FLAG_PARSER_ERROR), ("FLAG_DIGESTS", FLAG_DIGESTS),
        ("FLAG_EGRESS_FAULT", FLAG_EGRESS_FAULT), ("DROPPED_SHIFT", DROPPED_SHIFT),
        ("REPLICAS_SHIFT", REPLICAS_SHIFT), ("SHARED_SHIFT", SHARED_SHIFT)))
    return SOURCE.replace("MODULE_NAME", MODULE_NAME).replace("#include <string.h>\n", "#include <string.h>\n" + defs, 1)


def include_flags() -> tuple[str, ...]:
    """The compiler flags that find Python.h (none when the headers are not installed)."""
    inc = sysconfig.get_paths().get("include")
    return (f"-I{inc}",) if inc else ()
