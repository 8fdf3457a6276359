# cython: language_level=3
"""A batch of parsed records as PostgreSQL binary COPY data, written straight from the records: the bytes that
`RecordLoader._values` rows give through psycopg's binary `write_row` (header, one row per record in
`loader.STAGE_COLUMNS` order, trailer), without the row tuples and without psycopg's formatter. Tests compare
both byte for byte on random batches.

What it writes (the column types of `STAGE_COLUMNS`, checked against the table when the writer is made):
varchar as UTF-8, int4 and int8 as big-endian integers, float8 as big-endian IEEE doubles, timestamptz as
microseconds since 2000-01-01 UTC, bool as one byte, None as NULL. Anything else (a time not in UTC or naive,
an integer outside its column's range, a number that is neither int nor float, a value that is not text where
text goes) makes `rows()` give None for the whole batch, which then goes the psycopg way and fails or passes
exactly as it would have.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.datetime cimport (
    PyDateTime_CheckExact,
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
from cpython.dict cimport PyDict_GetItem
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.long cimport PyLong_Check
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject, PyObject_GetAttr
from cpython.unicode cimport PyUnicode_Check, PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t *size) except NULL
    long long PyLong_AsLongLongAndOverflow(object value, int *overflow) except? -1
    object PyUnicode_Substring(object unicode, Py_ssize_t start, Py_ssize_t end)

from datetime import timezone

import_datetime()
cdef object UTC = timezone.utc

# PostgreSQL's type oids
cdef enum:
    BOOL = 16
    INT8 = 20
    INT4 = 23
    FLOAT8 = 701
    VARCHAR = 1043
    TIMESTAMPTZ = 1184

# The column types `rows()` writes, in loader.STAGE_COLUMNS order (the writer is off when the table's differ).
COLUMN_TYPES = (
    VARCHAR, VARCHAR, VARCHAR, VARCHAR, INT8, VARCHAR, INT4, INT8, INT8, INT8, INT8, INT8, VARCHAR, VARCHAR,
    VARCHAR, TIMESTAMPTZ, TIMESTAMPTZ, FLOAT8, INT4, INT4, INT4, FLOAT8, FLOAT8, INT4, INT4, BOOL, TIMESTAMPTZ,
    TIMESTAMPTZ,
)  # fmt: skip
cdef bytes SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"  # signature, flags, no header extension
cdef bytes TRAILER = b"\xff\xff"
# 2000-01-01 (PostgreSQL's epoch) as days since 0000-03-01 of the proleptic Gregorian calendar (`civil_days`)
cdef int64_t PG_EPOCH_DAYS = 730425


class Unwritable(Exception):
    """A value `rows()` does not write exactly as psycopg would: the batch goes the psycopg way."""


cdef struct Out:
    char *data
    Py_ssize_t size
    Py_ssize_t capacity


cdef int grow(Out *out, Py_ssize_t more) except -1:
    cdef Py_ssize_t capacity
    cdef char *grown
    if out.size + more <= out.capacity:
        return 0
    capacity = max(2 * out.capacity, out.size + more)
    grown = <char *>PyMem_Realloc(out.data, capacity)
    if grown == NULL:
        raise MemoryError()
    out.data, out.capacity = grown, capacity
    return 0


cdef inline int put(Out *out, const char *part, Py_ssize_t length) except -1:
    grow(out, length)
    memcpy(out.data + out.size, part, length)
    out.size += length
    return 0


cdef inline int put_u16(Out *out, uint64_t value) except -1:
    cdef char b[2]
    b[0], b[1] = <char>(value >> 8), <char>value
    return put(out, b, 2)


cdef inline int put_u32(Out *out, uint64_t value) except -1:
    cdef char b[4]
    b[0], b[1], b[2], b[3] = <char>(value >> 24), <char>(value >> 16), <char>(value >> 8), <char>value
    return put(out, b, 4)


cdef inline int put_u64(Out *out, uint64_t value) except -1:
    cdef char b[8]
    cdef int i
    for i in range(8):
        b[i] = <char>(value >> (56 - 8 * i))
    return put(out, b, 8)


cdef inline int put_null(Out *out) except -1:
    return put_u32(out, 0xFFFFFFFF)  # length -1


cdef int put_text(Out *out, object value, Py_ssize_t limit) except -1:
    """A varchar: the UTF-8 of the first `limit` characters of a str (`value[:limit]`, as `_values` cuts it), or of
    all of it with limit -1, where None is NULL."""
    cdef Py_ssize_t length
    cdef const char *utf8
    if value is None and limit < 0:
        return put_null(out)
    if not PyUnicode_Check(value):
        raise Unwritable()
    if 0 <= limit < PyUnicode_GET_LENGTH(value):
        value = PyUnicode_Substring(value, 0, limit)
    utf8 = PyUnicode_AsUTF8AndSize(value, &length)  # a str with lone surrogates raises, as str.encode does
    if length > 0x7FFFFFFF:
        raise Unwritable()
    put_u32(out, <uint64_t>length)
    return put(out, utf8, length)


cdef int put_integer(Out *out, object value, bint wide) except -1:
    """An int8 (`wide`) or int4; None as NULL. bool is an int, as for psycopg."""
    cdef int overflow = 0
    cdef long long number
    if value is None:
        return put_null(out)
    if not PyLong_Check(value):
        raise Unwritable()
    number = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow:
        raise Unwritable()
    if wide:
        put_u32(out, 8)
        return put_u64(out, <uint64_t>number)
    if not -2147483648 <= number <= 2147483647:
        raise Unwritable()
    put_u32(out, 4)
    return put_u32(out, <uint32_t>number)


cdef int put_float(Out *out, object value) except -1:
    """A float8 from a float or an int (as float(int)); None as NULL."""
    cdef double number
    cdef uint64_t bits
    if value is None:
        return put_null(out)
    if PyFloat_CheckExact(value):
        number = PyFloat_AS_DOUBLE(value)
    elif PyLong_Check(value):
        number = float(value)  # OverflowError past a double, as psycopg's
    else:
        raise Unwritable()
    memcpy(&bits, &number, 8)
    put_u32(out, 8)
    return put_u64(out, bits)


cdef inline int64_t civil_days(int64_t year, int64_t month, int64_t day) noexcept:
    """Days since 0000-03-01 of the proleptic Gregorian calendar (H. Hinnant's days_from_civil, shifted)."""
    cdef int64_t y = year - 1 if month <= 2 else year
    cdef int64_t era = y // 400  # years >= 1 only: no negative division
    cdef int64_t yoe = y - era * 400
    cdef int64_t doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe


cdef int put_time(Out *out, object value) except -1:
    """A timestamptz from a datetime in UTC (timezone.utc itself); None as NULL."""
    cdef int64_t micros
    if value is None:
        return put_null(out)
    if not PyDateTime_CheckExact(value) or PyDateTime_DATE_GET_TZINFO(value) != <PyObject *>UTC:
        raise Unwritable()
    micros = (civil_days(PyDateTime_GET_YEAR(value), PyDateTime_GET_MONTH(value), PyDateTime_GET_DAY(value))
              - PG_EPOCH_DAYS) * 86400
    micros = (micros + PyDateTime_DATE_GET_HOUR(value) * 3600 + PyDateTime_DATE_GET_MINUTE(value) * 60
              + PyDateTime_DATE_GET_SECOND(value)) * 1000000 + PyDateTime_DATE_GET_MICROSECOND(value)
    put_u32(out, 8)
    return put_u64(out, <uint64_t>micros)


cdef inline object dimension_id(dict ids, object name):
    """`ids.get(name)`, as `_values` reads it (names are str)."""
    cdef PyObject *found
    if not PyUnicode_Check(name):
        raise Unwritable()
    found = PyDict_GetItem(ids, name)
    return <object>found if found != NULL else None


# the record attributes read, interned once
cdef object KIND = "kind", NATURAL_KEY = "natural_key", LINE = "line", SITE = "site", RESOURCE = "resource", VO = "vo"
cdef object PERSON = "person", PROJECT = "project", FQAN = "fqan", LOCAL_USER = "local_user", PILOT_REF = "pilot_ref"
cdef object START = "start", END = "end", WALL = "wall_seconds", CORES = "cores", MEMORY = "memory_mb", GPUS = "gpus"
cdef object USER_CPU = "cpu_user_seconds", SYS_CPU = "cpu_sys_seconds", EXIT_CODE = "exit_code", EXIT_SIGNAL = "exit_signal"


cdef class CopyRows:
    """`rows(latest, ids, now)`: the binary COPY data of a batch (see the module), or None to write it the psycopg
    way. `latest`: (record, file, digest) triples; `ids`: {"site": {name: id}, "resource": ..., "vo": ...,
    "person": ..., "project": ...}; `now`: the rows' created and updated."""

    cdef object source_format, bundle_id

    def __init__(self, source_format, bundle_id):
        self.source_format, self.bundle_id = source_format, bundle_id

    def rows(self, latest, dict ids, now):
        cdef Out out
        cdef dict sites = ids["site"], resources = ids["resource"], vos = ids["vo"], people = ids["person"]
        cdef dict projects = ids["project"]
        cdef object record, line
        out.data, out.size, out.capacity = <char *>PyMem_Malloc(65536), 0, 65536
        if out.data == NULL:
            raise MemoryError()
        try:
            put(&out, SIGNATURE, len(SIGNATURE))
            for record, filename, digest in latest:
                put_u16(&out, 28)
                put_text(&out, PyObject_GetAttr(record, KIND), -1)
                put_text(&out, PyObject_GetAttr(record, NATURAL_KEY), -1)
                put_text(&out, digest, -1)
                put_text(&out, self.source_format, -1)
                put_integer(&out, self.bundle_id, True)
                put_text(&out, filename, 500)
                line = PyObject_GetAttr(record, LINE)
                put_integer(&out, line if line else None, False)
                put_integer(&out, dimension_id(sites, PyObject_GetAttr(record, SITE)), True)
                put_integer(&out, dimension_id(resources, PyObject_GetAttr(record, RESOURCE)), True)
                put_integer(&out, dimension_id(vos, PyObject_GetAttr(record, VO)), True)
                put_integer(&out, dimension_id(people, PyObject_GetAttr(record, PERSON)), True)
                put_integer(&out, dimension_id(projects, PyObject_GetAttr(record, PROJECT)), True)
                put_text(&out, PyObject_GetAttr(record, FQAN), 500)
                put_text(&out, PyObject_GetAttr(record, LOCAL_USER), 200)
                put_text(&out, PyObject_GetAttr(record, PILOT_REF), 500)
                put_time(&out, PyObject_GetAttr(record, START))
                put_time(&out, PyObject_GetAttr(record, END))
                put_float(&out, PyObject_GetAttr(record, WALL))
                put_integer(&out, PyObject_GetAttr(record, CORES), False)
                put_integer(&out, PyObject_GetAttr(record, MEMORY), False)
                put_integer(&out, PyObject_GetAttr(record, GPUS), False)
                put_float(&out, PyObject_GetAttr(record, USER_CPU))
                put_float(&out, PyObject_GetAttr(record, SYS_CPU))
                put_integer(&out, PyObject_GetAttr(record, EXIT_CODE), False)
                put_integer(&out, PyObject_GetAttr(record, EXIT_SIGNAL), False)
                put_u32(&out, 1)
                put(&out, b"\x00", 1)  # void: False
                put_time(&out, now)
                put_time(&out, now)
            put(&out, TRAILER, 2)
            return PyBytes_FromStringAndSize(out.data, out.size)
        except (Unwritable, OverflowError, UnicodeEncodeError):
            return None
        finally:
            PyMem_Free(out.data)
