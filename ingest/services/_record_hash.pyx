# cython: language_level=3
"""`loader.record_hash`, compiled: the same SHA-1 of the same text, the reprs of a record's values joined by
"\\x1f", written straight into one buffer. The reprs a record is made of (str, float, int, None, a UTC
datetime, a record kind) are written here as Python writes them; any other value (another time zone, a
subclass, a dict of extras) is written by repr() itself. Tests compare both digests on random records.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.datetime cimport (
    PyDateTime_CheckExact,
    PyDateTime_DATE_GET_FOLD,
    PyDateTime_DATE_GET_HOUR,
    PyDateTime_DATE_GET_MICROSECOND,
    PyDateTime_DATE_GET_MINUTE,
    PyDateTime_DATE_GET_SECOND,
    PyDateTime_DATE_GET_TZINFO,
    PyDateTime_GET_DAY,
    PyDateTime_GET_MONTH,
    PyDateTime_GET_YEAR,
    import_datetime,
)
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.long cimport PyLong_CheckExact
from cpython.ref cimport PyObject
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.unicode cimport PyUnicode_CheckExact, PyUnicode_DATA, PyUnicode_GET_LENGTH

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
from libc.string cimport memcpy

cdef extern from "Python.h":
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags, int *type) except NULL
    const char *PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t *size) except NULL
    long long PyLong_AsLongLongAndOverflow(object value, int *overflow) except? -1
    int Py_DTSF_ADD_DOT_0

import hashlib
from datetime import timezone

import_datetime()
cdef object UTC = timezone.utc
cdef object SHA1 = hashlib.sha1


cdef struct Text:
    char *data
    Py_ssize_t size
    Py_ssize_t capacity
    bint owned  # data is PyMem-allocated (else the caller's stack buffer)


cdef int put(Text *text, const char *part, Py_ssize_t length) except -1:
    cdef char *grown
    cdef Py_ssize_t capacity
    if text.size + length > text.capacity:
        capacity = max(2 * text.capacity, text.size + length)
        if text.owned:
            grown = <char *>PyMem_Realloc(text.data, capacity)
        else:
            grown = <char *>PyMem_Malloc(capacity)
            if grown != NULL:
                memcpy(grown, text.data, text.size)
        if grown == NULL:
            raise MemoryError()
        text.data, text.capacity, text.owned = grown, capacity, True
    memcpy(text.data + text.size, part, length)
    text.size += length
    return 0


cdef int put_decimal(Text *text, long long value) except -1:
    """repr() of an int that fits in 64 bits."""
    cdef char digits[24]
    cdef int at = 24
    cdef unsigned long long magnitude = <unsigned long long>(-(value + 1)) + 1 if value < 0 else <unsigned long long>value
    while True:
        at -= 1
        digits[at] = <char>(48 + magnitude % 10)
        magnitude //= 10
        if magnitude == 0:
            break
    if value < 0:
        at -= 1
        digits[at] = b"-"
    return put(text, digits + at, 24 - at)


cdef int put_plain_str(Text *text, object value) except -1:
    """repr() of a str; written here when it is printable ASCII without quotes or backslashes ('...')."""
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(value), i
    cdef const unsigned char *data
    cdef unsigned char c
    cdef object written_by_repr
    cdef const char *utf8
    if PyUnicode_IS_COMPACT_ASCII(value):
        data = <const unsigned char *>PyUnicode_DATA(value)
        for i in range(length):
            c = data[i]
            if c < 32 or c > 126 or c == 39 or c == 92:  # a control character, DEL, ' or \\
                break
        else:
            put(text, "'", 1)
            put(text, <const char *>data, length)
            return put(text, "'", 1)
    written_by_repr = repr(value)  # held while its UTF-8 is copied
    utf8 = PyUnicode_AsUTF8AndSize(written_by_repr, &length)
    return put(text, utf8, length)


cdef int put_repr(Text *text, object value) except -1:
    """repr(value), UTF-8 encoded, as `"\\x1f".join(map(repr, ...)).encode()` has it."""
    cdef Py_ssize_t length
    cdef const char *utf8
    cdef char *digits
    cdef int overflow = 0
    cdef long long integer
    cdef object written_by_repr
    if value is None:
        return put(text, "None", 4)
    if PyUnicode_CheckExact(value):
        return put_plain_str(text, value)
    if PyFloat_CheckExact(value):  # float.__repr__ is exactly this call
        digits = PyOS_double_to_string(PyFloat_AS_DOUBLE(value), b"r", 0, Py_DTSF_ADD_DOT_0, NULL)
        try:
            put(text, digits, len(digits))
        finally:
            PyMem_Free(digits)
        return 0
    if PyLong_CheckExact(value):
        integer = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            return put_decimal(text, integer)
    elif PyDateTime_CheckExact(value) and PyDateTime_DATE_GET_TZINFO(value) == <PyObject *>UTC and not PyDateTime_DATE_GET_FOLD(value):
        return put_utc_datetime(text, value)
    written_by_repr = repr(value)
    utf8 = PyUnicode_AsUTF8AndSize(written_by_repr, &length)
    return put(text, utf8, length)


cdef int put_utc_datetime(Text *text, object value) except -1:
    """datetime.__repr__ of a UTC datetime: seconds and microseconds only when not zero."""
    cdef int second = PyDateTime_DATE_GET_SECOND(value), micro = PyDateTime_DATE_GET_MICROSECOND(value)
    put(text, "datetime.datetime(", 18)
    put_decimal(text, PyDateTime_GET_YEAR(value))
    put(text, ", ", 2)
    put_decimal(text, PyDateTime_GET_MONTH(value))
    put(text, ", ", 2)
    put_decimal(text, PyDateTime_GET_DAY(value))
    put(text, ", ", 2)
    put_decimal(text, PyDateTime_DATE_GET_HOUR(value))
    put(text, ", ", 2)
    put_decimal(text, PyDateTime_DATE_GET_MINUTE(value))
    if second or micro:
        put(text, ", ", 2)
        put_decimal(text, second)
        if micro:
            put(text, ", ", 2)
            put_decimal(text, micro)
    return put(text, ", tzinfo=datetime.timezone.utc)", 31)


cdef class RecordHasher:
    """`hasher(record)`: `loader.record_hash(record)`. `values(record)` and `pilot_values(pilot)` give the
    values hashed (attrgetters); `kinds`, the record kinds, whose reprs are written from a cache."""

    cdef object values, pilot_values
    cdef tuple kinds, kind_reprs

    def __init__(self, values, pilot_values, kinds):
        self.values, self.pilot_values = values, pilot_values
        self.kinds = tuple(kinds)
        self.kind_reprs = tuple(repr(kind).encode("utf-8") for kind in self.kinds)

    cdef int _put_all(self, Text *text, tuple values, bint first) except -1:
        cdef Py_ssize_t index
        cdef object value, kind
        cdef bytes cached
        for value in values:
            if not first:
                put(text, "\x1f", 1)
            first = False
            for index in range(len(self.kinds)):
                kind = self.kinds[index]
                if value is kind:
                    cached = self.kind_reprs[index]
                    put(text, cached, len(cached))
                    break
            else:
                put_repr(text, value)
        return 0

    def __call__(self, record):
        cdef char local[2048]
        cdef Text text
        text.data, text.size, text.capacity, text.owned = local, 0, sizeof(local), False
        try:
            self._put_all(&text, self.values(record), True)
            if record.pilot is not None:
                self._put_all(&text, self.pilot_values(record.pilot), False)
            if record.extra:
                put(&text, "\x1f", 1)
                put_repr(&text, record.extra)
            return SHA1(PyBytes_FromStringAndSize(text.data, text.size), usedforsecurity=False).hexdigest()
        finally:
            if text.owned:
                PyMem_Free(text.data)
