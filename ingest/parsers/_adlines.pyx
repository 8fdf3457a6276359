# cython: language_level=3
"""The two hot loops of the `htcondor-history` parser, compiled: where ads end, and the wanted attributes of
one ad. Each gives exactly what the pure-Python reference in `htcondor_history` gives (tests compare both
on the real samples and on random input), about ten times faster; anything unusual is left to the reference.

Hostile input: every read below is at an index the loop has just compared with the length of the bytes object
it reads, so no read leaves it; nothing is written but Python objects.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memchr

cdef enum:
    SLOTS = 256  # open-addressing table of the wanted names (a power of two, at least 4x their number)


cdef unsigned char CLASS[256]  # 2: may start a name (ASCII letter, "_"); 1: may follow (also digit, "."); 0: neither
cdef unsigned char LOWER[256]
for _c in range(256):
    LOWER[_c] = _c + 32 if 65 <= _c <= 90 else _c
    CLASS[_c] = 2 if (97 <= LOWER[_c] <= 122 or _c == 95) else 1 if (48 <= _c <= 57 or _c == 46) else 0


cdef inline bint is_name_start(unsigned char c) noexcept:
    return CLASS[c] == 2


cdef inline bint is_name_char(unsigned char c) noexcept:
    return CLASS[c] != 0


cdef inline unsigned char lower(unsigned char c) noexcept:
    return LOWER[c]


def separator_spans(bytes buffer):
    """The spans of `SEPARATOR.finditer(buffer)`, one at a time (a file of blank lines has as many): each
    "\n" followed by a `***` banner line or a blank line (only spaces, tabs and carriage returns), from that
    newline to the end of that line; with each, the number of newlines before it."""
    cdef const char *data = PyBytes_AS_STRING(buffer)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(buffer)
    cdef Py_ssize_t newline, start, end, i, before = -1
    cdef const char *found
    cdef bint blank
    found = <const char *>memchr(data, b"\n", size)
    while found != NULL:
        newline = found - data
        before += 1
        start = newline + 1
        found = <const char *>memchr(data + start, b"\n", size - start) if start < size else NULL
        end = (found - data) if found != NULL else size
        if end - start >= 3 and data[start] == b"*" and data[start + 1] == b"*" and data[start + 2] == b"*":
            yield newline, end, before
            continue
        blank = True
        for i in range(start, end):
            if data[i] != b" " and data[i] != b"\t" and data[i] != b"\r":
                blank = False
                break
        if blank:
            yield newline, end, before


cdef class Picker:
    """The wanted attributes of one ad: `pick(chunk)` is {lower-case name: raw value text} of the lines naming
    one of `names` (any letter case; the last of a repeated name wins), or None when a line is not exactly
    `Name = value` (a name of ASCII letters, digits, `_` and `.`, not starting with a digit or `.`), which
    the caller then reads line by line to name the line or accept other spacing. `chunk` must be valid UTF-8."""

    cdef list keys  # the lower-case names, as str (the dict keys) and as bytes (compared)
    cdef list raw
    cdef int slot_of[SLOTS]  # index + 1 into keys; 0 for an empty slot
    cdef unsigned int hash_of[SLOTS]

    def __init__(self, names):
        self.keys = []
        self.raw = []
        for i in range(SLOTS):
            self.slot_of[i] = 0
        for name in dict.fromkeys(name.lower() for name in names):
            encoded = name.encode("ascii")
            if not encoded or not is_name_start(encoded[0]) or not all(is_name_char(c) for c in encoded):
                raise ValueError(f"not an attribute name: {name!r}")
            self.keys.append(name)
            self.raw.append(encoded)
            if len(self.keys) * 4 > SLOTS:
                raise ValueError("too many names")
            self._place(encoded, len(self.keys))

    cdef void _place(self, bytes name, int index):
        cdef unsigned int h = hash_name(PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name))
        cdef unsigned int slot = h & (SLOTS - 1)
        while self.slot_of[slot] != 0:
            slot = (slot + 1) & (SLOTS - 1)
        self.slot_of[slot] = index
        self.hash_of[slot] = h

    cdef object _key(self, const char *name, Py_ssize_t length):
        """The key of the wanted name `name[:length]` (any letter case), or None."""
        cdef unsigned int h = hash_name(name, length)
        cdef unsigned int slot = h & (SLOTS - 1)
        cdef bytes candidate
        cdef const char *text
        cdef Py_ssize_t i
        while self.slot_of[slot] != 0:
            if self.hash_of[slot] == h:
                candidate = self.raw[self.slot_of[slot] - 1]
                if PyBytes_GET_SIZE(candidate) == length:
                    text = PyBytes_AS_STRING(candidate)
                    for i in range(length):
                        if lower(name[i]) != text[i]:
                            break
                    else:
                        return self.keys[self.slot_of[slot] - 1]
            slot = (slot + 1) & (SLOTS - 1)
        return None

    def pick(self, bytes chunk):
        cdef const char *data = PyBytes_AS_STRING(chunk)
        cdef Py_ssize_t size = PyBytes_GET_SIZE(chunk)
        cdef Py_ssize_t start = 0, end, name_end
        cdef const char *found
        while size > 0 and data[size - 1] == b"\n":
            size -= 1
        if size == 0:
            return None
        ad = {}
        while True:
            found = <const char *>memchr(data + start, b"\n", size - start)
            end = (found - data) if found != NULL else size
            if start >= end or not is_name_start(data[start]):
                return None
            name_end = start + 1
            while name_end < end and CLASS[<unsigned char>data[name_end]] != 0:
                name_end += 1
            if name_end + 3 > end or data[name_end] != b" " or data[name_end + 1] != b"=" or data[name_end + 2] != b" ":
                return None
            key = self._key(data + start, name_end - start)
            if key is not None:
                ad[key] = PyUnicode_DecodeUTF8(data + name_end + 3, end - name_end - 3, "strict")
            if end >= size:
                return ad
            start = end + 1


cdef inline unsigned int hash_name(const char *name, Py_ssize_t length) noexcept:
    """FNV-1a of the lower-cased name."""
    cdef unsigned int h = 2166136261
    cdef Py_ssize_t i
    for i in range(length):
        h = (h ^ lower(name[i])) * 16777619
    return h
