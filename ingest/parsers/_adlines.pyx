# cython: language_level=3
"""The hot paths of the `htcondor-history` parser, compiled: where ads end, the wanted attributes of one ad,
and an ordinary job ad read straight to its checked record. Each gives exactly what the pure-Python reference
in `htcondor_history` gives (tests compare both on the real samples and on random input), several times
faster; anything unusual is left to the reference.

Hostile input: every read below is at an index the loop has just compared with the length of the bytes object
it reads, so no read leaves it; nothing is written but Python objects, the maker's per-attribute offsets and
a number's text into a 64-byte buffer (only when it is shorter).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memchr

cdef enum:
    SLOTS = 256  # open-addressing table of the wanted names (a power of two, at least 4x their number)


# FNV-1a, over lower-cased attribute names (`hash_name`, `read_line`)
cdef unsigned int FNV_BASIS = 2166136261U
cdef unsigned int FNV_PRIME = 16777619U
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


def separator_spans(const unsigned char[::1] buffer, Py_ssize_t size):
    """The spans of `SEPARATOR.finditer(buffer, 0, size)`, one at a time (a file of blank lines has as many):
    each "\n" followed by a `***` banner line or a blank line (only spaces, tabs and carriage returns), from that
    newline to the end of that line; with each, the number of newlines before it. `buffer`: bytes or a
    bytearray (held, so not resized, until the spans are read)."""
    cdef const char *data
    cdef Py_ssize_t newline, start, end, i, before = -1
    cdef const char *found
    cdef bint blank
    if not 0 <= size <= buffer.shape[0]:
        raise ValueError(f"size {size} outside the buffer of {buffer.shape[0]} bytes")
    if size == 0:
        return
    data = <const char *>&buffer[0]
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

    cdef object _key(self, const char *name, Py_ssize_t length, unsigned int h):
        """The key of the wanted name `name[:length]` (any letter case; `h`: its `hash_name`), or None."""
        cdef int index = self._index(name, length, h)
        return self.keys[index - 1] if index else None

    cdef int _index(self, const char *name, Py_ssize_t length, unsigned int h) noexcept:
        """1 + the position of the wanted name `name[:length]` (any letter case; `h`: its `hash_name`) in the
        names, or 0."""
        cdef unsigned int slot = h & (SLOTS - 1)
        cdef bytes candidate
        cdef const char *text
        cdef Py_ssize_t i
        while self.slot_of[slot] != 0:
            if self.hash_of[slot] == h:
                candidate = <bytes>self.raw[self.slot_of[slot] - 1]
                if PyBytes_GET_SIZE(candidate) == length:
                    text = PyBytes_AS_STRING(candidate)
                    for i in range(length):
                        if lower(name[i]) != text[i]:
                            break
                    else:
                        return self.slot_of[slot]
            slot = (slot + 1) & (SLOTS - 1)
        return 0

    def pick(self, bytes chunk):
        cdef const char *data = PyBytes_AS_STRING(chunk)
        cdef Py_ssize_t size = PyBytes_GET_SIZE(chunk)
        cdef Py_ssize_t start = 0, end, name_end
        cdef unsigned int h
        while size > 0 and data[size - 1] == b"\n":
            size -= 1
        if size == 0:
            return None
        ad = {}
        while True:
            if not read_line(data, size, start, &end, &name_end, &h):
                return None
            key = self._key(data + start, name_end - start, h)
            if key is not None:
                ad[key] = PyUnicode_DecodeUTF8(data + name_end + 3, end - name_end - 3, "strict")
            if end >= size:
                return ad
            start = end + 1


cdef inline bint read_line(const char *data, Py_ssize_t size, Py_ssize_t start, Py_ssize_t *end, Py_ssize_t *name_end,
                           unsigned int *name_hash) noexcept:
    """Whether the line at `start` (to `end`: its newline, or `size`) is exactly `Name = value`: a name of ASCII
    letters, digits, `_` and `.`, not starting with a digit or `.`, up to `name_end` (its `hash_name` in
    `name_hash`, read in the same pass); the value from name_end + 3. The one definition of a readable line for
    `Picker.pick` and `RecordMaker`."""
    cdef const char *found = <const char *>memchr(data + start, b"\n", size - start)
    cdef Py_ssize_t stop = (found - data) if found != NULL else size
    cdef Py_ssize_t at = start + 1
    cdef unsigned int h
    cdef unsigned char c
    end[0] = stop
    if start >= stop or not is_name_start(data[start]):
        return False
    h = (FNV_BASIS ^ lower(data[start])) * FNV_PRIME
    while at < stop:
        c = <unsigned char>data[at]
        if CLASS[c] == 0:
            break
        h = (h ^ LOWER[c]) * FNV_PRIME
        at += 1
    name_end[0] = at
    name_hash[0] = h
    return at + 3 <= stop and data[at] == b" " and data[at + 1] == b"=" and data[at + 2] == b" "


cdef inline unsigned int hash_name(const char *name, Py_ssize_t length) noexcept:
    """FNV-1a of the lower-cased name (`read_line` computes the same as it reads a name)."""
    cdef unsigned int h = FNV_BASIS
    cdef Py_ssize_t i
    for i in range(length):
        h = (h ^ lower(name[i])) * FNV_PRIME
    return h


# ---------------------------------------------------------------------------------------------------------
# The whole of an ordinary job ad to its record, in one pass and without the {name: value} dict: what
# `htcondor_history.ad_to_record(PICKER.pick(chunk), line, context)` gives, for the ads it can read without
# doubt, with `check_record`'s checks. Anything else (a line that is not exactly `Name = value`, an escaped or
# padded value, a number float() would read differently, an ad ad_to_record rejects, a value near or past a
# bound of check_record, a factory's glidein ad, a startd's run) gets None, and the parser then reads that ad
# the reference way. Tests compare both on the real samples and on random ads built to hit every branch.

cdef extern from "Python.h":
    double PyOS_string_to_double(const char *s, char **endptr, void *overflow_exception) except? -1.0

from libc.math cimport fabs, isfinite, modf, round
from libc.string cimport memcpy
from cpython.datetime cimport datetime_new, import_datetime
from cpython.unicode cimport PyUnicode_DecodeASCII

import datetime as _datetime

import_datetime()
cdef object UTC = _datetime.timezone.utc

# What `RecordMaker` reads, in this order (the enum below gives each its position).
RECORD_ATTRIBUTES = (
    "GlobalJobId", "RemoteWallClockTime", "CompletionDate", "EnteredCurrentStatus", "MachineAttrCpus0",
    "CpusProvisioned", "RequestCpus", "MachineAttrMemory0", "MemoryProvisioned", "RequestMemory",
    "MachineAttrGPUs0", "GPUsProvisioned", "RequestGPUs", "ExitBySignal", "ExitSignal", "ExitCode", "ExitStatus",
    "RemoteUserCpu", "RemoteSysCpu", "x509userproxysubject", "AuthTokenSubject", "x509UserProxyVOName",
    "AuthTokenGroups", "x509UserProxyFirstFQAN", "ProjectName", "Owner", "MachineAttrGLIDEIN_Site0",
    "MATCH_EXP_JOBGLIDEIN_Site", "GLIDEIN_Site", "MachineAttrGLIDEIN_ResourceName0",
    "MATCH_EXP_JOBGLIDEIN_ResourceName", "MATCH_EXP_JOB_GLIDEIN_Schedd", "MATCH_EXP_JOB_GLIDEIN_ClusterId",
    "MATCH_EXP_JOB_GLIDEIN_ProcId", "LastRemoteHost", "RemoteHost",
    # present: not an ordinary job ad (a factory's glidein; a startd's run), left to the reference
    "GlideinEntryName", "GlideinFactory", "BadputCausedByPreemption", "BadputCausedByDraining",
)  # fmt: skip

cdef enum Attribute:
    GLOBAL_JOB_ID, WALL, COMPLETION, ENTERED, MACHINE_CPUS, CPUS_PROVISIONED, REQUEST_CPUS, MACHINE_MEMORY,
    MEMORY_PROVISIONED, REQUEST_MEMORY, MACHINE_GPUS, GPUS_PROVISIONED, REQUEST_GPUS, EXIT_BY_SIGNAL,
    EXIT_SIGNAL, EXIT_CODE, EXIT_STATUS, USER_CPU, SYS_CPU, PROXY_SUBJECT, TOKEN_SUBJECT, PROXY_VO, TOKEN_GROUPS,
    PROXY_FQAN, PROJECT_NAME, OWNER, MACHINE_SITE, MATCH_SITE, GLIDEIN_SITE, MACHINE_RESOURCE, MATCH_RESOURCE,
    PILOT_SCHEDD, PILOT_CLUSTER, PILOT_PROC, LAST_REMOTE_HOST, REMOTE_HOST, ENTRY_NAME, FACTORY,
    BADPUT_PREEMPTION, BADPUT_DRAINING, ATTRIBUTES

cdef enum Reading:  # what a value is, read as a number
    ABSENT, NUMBER, UNDEFINED, NOT_A_FLOAT  # NOT_A_FLOAT: float() surely refuses it (an expression, a string)


class _Unsure(Exception):
    """A value this module does not read exactly as the reference does: the ad goes to the reference."""


cdef inline bint is_space(unsigned char c) noexcept:
    return c <= 32  # all of ASCII's whitespace (str.strip's too) and the other control characters


cdef bint same_letters(const char *text, Py_ssize_t length, const char *lower_word, Py_ssize_t word_length) noexcept:
    cdef Py_ssize_t i
    if length != word_length:
        return False
    for i in range(length):
        if lower(text[i]) != lower_word[i]:
            return False
    return True


cdef bint plain_decimal(const char *text, Py_ssize_t length) noexcept:
    """`[+-]digits[.digits][(e|E)[+-]digits]`, at least one digit before the exponent: what float() and C read
    alike (no spaces, underscores, inf or nan)."""
    cdef Py_ssize_t i = 0, digits = 0
    if i < length and (text[i] == b"-" or text[i] == b"+"):
        i += 1
    while i < length and b"0" <= text[i] <= b"9":
        i += 1
        digits += 1
    if i < length and text[i] == b".":
        i += 1
        while i < length and b"0" <= text[i] <= b"9":
            i += 1
            digits += 1
    if digits == 0:
        return False
    if i < length and (text[i] == b"e" or text[i] == b"E"):
        i += 1
        if i < length and (text[i] == b"-" or text[i] == b"+"):
            i += 1
        digits = 0
        while i < length and b"0" <= text[i] <= b"9":
            i += 1
            digits += 1
        if digits == 0:
            return False
    return i == length


cdef double round_half_even(double x) noexcept:
    """CPython's _PyTime_RoundHalfEven."""
    cdef double rounded = round(x)
    if fabs(x - rounded) == 0.5:
        rounded = 2.0 * round(x / 2.0)
    return rounded


cdef object utc_datetime(double epoch):
    """`datetime.fromtimestamp(epoch, tz=timezone.utc)`, exactly (the same rounding to microseconds: CPython's
    _PyTime_DoubleToDenominator with ROUND_HALF_EVEN), without its two datetimes and the call to
    tzinfo.fromutc: a third of the maker's time went there. For the maker's times only (1995 to tomorrow;
    `utc_from_epoch` below checks the range for other callers)."""
    cdef double whole, micro
    cdef long long seconds, days, era, z, doe, yoe, doy, mp, year, month, day, in_day
    micro = modf(epoch, &whole) * 1e6
    micro = round_half_even(micro)
    if micro >= 1e6:
        micro -= 1e6
        whole += 1.0
    elif micro < 0:
        micro += 1e6
        whole -= 1.0
    seconds = <long long>whole
    days = seconds // 86400 if seconds >= 0 else -((-seconds + 86399) // 86400)
    in_day = seconds - days * 86400
    # days since 1970-01-01 to the civil date (H. Hinnant's civil_from_days, proleptic Gregorian)
    z = days + 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return datetime_new(year, month, day, in_day // 3600, in_day % 3600 // 60, in_day % 60, <int>micro, UTC)


def utc_from_epoch(double epoch):
    """`base.utc_from_epoch` for epochs from 1970 to 9999 (tests compare both); ValueError outside."""
    if not (isfinite(epoch) and 0 <= epoch < 253402300799.0):
        raise ValueError(f"epoch out of the compiled range: {epoch!r}")
    return utc_datetime(epoch)


cdef Picker RECORD_NAMES = Picker(RECORD_ATTRIBUTES)
if len(RECORD_NAMES.keys) != ATTRIBUTES:
    raise ImportError("RECORD_ATTRIBUTES and the Attribute enum disagree")


cdef class RecordMaker:
    """`make(chunk, line)`: the record of an ordinary job ad (`chunk`: its ASCII text), checked, or None to have
    the reference read it (and reject it, if it must). See `htcondor_history.ad_to_record` for what each
    attribute means and `base.check_record` for the checks. One maker per parse: it holds the ad it reads."""

    cdef Py_ssize_t start_of[<int>ATTRIBUTES]  # where each attribute's value starts in the chunk; -1: absent
    cdef Py_ssize_t length_of[<int>ATTRIBUTES]
    cdef const char *data  # the chunk being read (held by `make`'s caller for the call)
    cdef object record, payload, batch, glidein_host
    cdef str site
    cdef double latest_end, earliest_start, max_wall, max_cores, max_memory_mb
    cdef Py_ssize_t max_key, max_site, max_resource, max_vo, max_project, max_person

    def __init__(self, *, record, payload, batch, glidein_host, str site, double latest_end,
                 double earliest_start, double max_wall, int max_cores, double max_memory_mb, int max_key, dict name_limits):
        """`record`: the record class (its fields in `ParsedRecord`'s order); `payload`, `batch`: the two kinds;
        `glidein_host`: the glidein name in a remote host;
        `site`: the site of an ad that names none; the rest: `check_record`'s bounds (epoch seconds for times)."""
        self.record, self.payload, self.batch = record, payload, batch
        self.glidein_host, self.site = glidein_host, site
        self.latest_end, self.earliest_start, self.max_wall = latest_end, earliest_start, max_wall
        self.max_cores, self.max_memory_mb, self.max_key = max_cores, max_memory_mb, max_key
        self.max_site, self.max_resource, self.max_vo = name_limits["site"], name_limits["resource"], name_limits["vo"]
        self.max_project, self.max_person = name_limits["project"], name_limits["person"]

    cdef bint _scan(self, bytes chunk):
        """Find the value of each attribute read (the last of a repeated one); False when a line is not exactly
        `Name = value` (the reference then names the line or reads other spacing)."""
        cdef const char *data = PyBytes_AS_STRING(chunk)
        cdef Py_ssize_t size = PyBytes_GET_SIZE(chunk)
        cdef Py_ssize_t start = 0, end, name_end
        cdef unsigned int h
        cdef int index
        for index in range(ATTRIBUTES):
            self.start_of[index] = -1
        self.data = data
        while size > 0 and data[size - 1] == b"\n":
            size -= 1
        if size == 0:
            return False
        while True:
            if not read_line(data, size, start, &end, &name_end, &h):
                return False
            index = RECORD_NAMES._index(data + start, name_end - start, h)
            if index:
                self.start_of[index - 1] = name_end + 3
                self.length_of[index - 1] = end - name_end - 3
            if end >= size:
                return True
            start = end + 1

    cdef inline bint _has(self, int attribute) noexcept:
        return self.start_of[attribute] >= 0

    cdef str _text(self, int attribute):
        """`unquote` of the value; "" when absent or empty. _Unsure for escapes and padding."""
        cdef Py_ssize_t length = self.length_of[attribute]
        cdef const char *value
        if self.start_of[attribute] < 0 or length == 0:
            return ""
        value = self.data + self.start_of[attribute]
        if memchr(value, b"\\", length) != NULL:
            raise _Unsure()
        if length >= 2 and value[0] == b'"' and value[length - 1] == b'"':
            return PyUnicode_DecodeASCII(value + 1, length - 2, NULL)
        if is_space(value[0]) or is_space(value[length - 1]):
            raise _Unsure()
        if same_letters(value, length, b"undefined", 9) or same_letters(value, length, b"error", 5):
            return ""
        return PyUnicode_DecodeASCII(value, length, NULL)

    cdef str _first_text(self, int first, int second=-1, int third=-1):
        """`text(ad, *names)`: the first of the attributes with a non-empty text."""
        cdef str found = self._text(first)
        if not found and second >= 0:
            found = self._text(second)
            if not found and third >= 0:
                found = self._text(third)
        return found

    cdef Reading _number(self, int attribute, double *number) except *:
        """The value read as float() reads it, with what it is (see Reading); _Unsure when unsure."""
        cdef Py_ssize_t length = self.length_of[attribute]
        cdef const char *value
        cdef char buffer[64]
        if self.start_of[attribute] < 0:
            return ABSENT
        value = self.data + self.start_of[attribute]
        if length == 0:
            return NOT_A_FLOAT
        if length < 64 and plain_decimal(value, length):
            memcpy(buffer, value, length)
            buffer[length] = 0
            number[0] = PyOS_string_to_double(buffer, NULL, NULL)
            return NUMBER
        if same_letters(value, length, b"undefined", 9):
            return UNDEFINED
        # float() reads only digits, signs, points, spaces, underscores, "inf", "infinity" and "nan"
        if value[0] == b"(" or value[0] == b'"' or (CLASS[<unsigned char>value[0]] == 2 and not (
                length >= 3 and (same_letters(value, 3, b"inf", 3) or same_letters(value, 3, b"nan", 3)))):
            return NOT_A_FLOAT
        raise _Unsure()

    cdef bint _first_number(self, double *number, int first, int second=-1, int third=-1) except *:
        """`first_number(ad, *names)`: the first of the attributes holding a finite number; False if none."""
        cdef int attribute
        for attribute in (first, second, third):
            if attribute < 0:
                return False
            if self._number(attribute, number) == NUMBER and isfinite(number[0]):
                return True
        return False

    cdef double _seconds(self, int attribute) except? -1:
        """`number(ad, name) or 0.0`; _Unsure where `number` raises (not a number), which the reference reports."""
        cdef double value
        cdef Reading reading = self._number(attribute, &value)
        if reading == NUMBER:
            if not isfinite(value):
                raise _Unsure()
            return value if value != 0 else 0.0  # -0.0 is false too: `or 0.0` makes it 0.0
        if reading == NOT_A_FLOAT:
            raise _Unsure()
        return 0.0

    cdef bint _is_true(self, int attribute) except *:
        cdef Py_ssize_t length = self.length_of[attribute]
        cdef const char *value
        if self.start_of[attribute] < 0 or length == 0:
            return False
        value = self.data + self.start_of[attribute]
        if is_space(value[0]) or is_space(value[length - 1]):
            raise _Unsure()
        return same_letters(value, length, b"true", 4)

    def make(self, bytes chunk, Py_ssize_t line):
        try:
            return self._make(chunk, line)
        except (_Unsure, UnicodeDecodeError):  # the parser hands it ASCII ads only; anything else is not read here
            return None

    cdef object _make(self, bytes chunk, Py_ssize_t line):
        cdef double wall, completion = 0, entered = 0, end_epoch, number, user_cpu, sys_cpu
        cdef Reading reading
        cdef int attribute
        if not self._scan(chunk):
            return None
        if self._has(ENTRY_NAME) or self._has(FACTORY) or self._has(BADPUT_PREEMPTION) or self._has(BADPUT_DRAINING):
            return None
        global_job_id = self._text(GLOBAL_JOB_ID)
        if not global_job_id:
            return None
        if self._number(WALL, &wall) != NUMBER or not isfinite(wall):
            return None
        for attribute in (COMPLETION, ENTERED):
            reading = self._number(attribute, &number)
            if reading == NOT_A_FLOAT or (reading == NUMBER and not isfinite(number)):
                return None
            if reading == NUMBER:
                if attribute == COMPLETION:
                    completion = number
                else:
                    entered = number
        if completion <= 0 and wall <= 0:
            return None
        end_epoch = completion if completion > 0 else entered
        if end_epoch <= 0:
            return None
        # check_record's bounds, with a second to spare (a record near one is left to the reference, which
        # accepts or rejects it exactly); a wall time >= 0 also gives start <= end
        if not (0 <= wall <= self.max_wall and end_epoch < self.latest_end - 1 and end_epoch - wall > self.earliest_start + 1):
            return None
        end = utc_datetime(end_epoch)  # both within check_record's bounds (above): no overflow
        start = utc_datetime(end_epoch - wall)

        cores = 1
        if self._first_number(&number, MACHINE_CPUS, CPUS_PROVISIONED, REQUEST_CPUS) and number >= 1:
            if number >= self.max_cores + 1:
                return None
            cores = int(number)
        memory = None
        if self._first_number(&number, MACHINE_MEMORY, MEMORY_PROVISIONED, REQUEST_MEMORY) and number > 0:
            if number >= self.max_memory_mb + 1:
                return None
            memory = int(number)
        gpus = 0
        if self._first_number(&number, MACHINE_GPUS, GPUS_PROVISIONED, REQUEST_GPUS) and number > 0:
            if number >= self.max_cores + 1:
                return None
            gpus = int(number)
        exit_code = exit_signal = None
        if self._is_true(EXIT_BY_SIGNAL):
            if self._first_number(&number, EXIT_SIGNAL):
                if not -2147483648.0 <= number < 2147483648.0:
                    return None
                exit_signal = int(number)
            else:
                exit_signal = -1
        elif self._first_number(&number, EXIT_CODE, EXIT_STATUS) and completion > 0:
            if not -2147483648.0 <= number < 2147483648.0:
                return None
            exit_code = int(number)
        user_cpu, sys_cpu = self._seconds(USER_CPU), self._seconds(SYS_CPU)
        if user_cpu < 0 or sys_cpu < 0:
            return None

        vo = self._text(PROXY_VO)
        if not vo:
            groups = self._text(TOKEN_GROUPS)
            vo = groups.split(",")[0].strip().strip("/").split("/")[0] if groups else ""
        resource = self._first_text(MACHINE_RESOURCE, MATCH_RESOURCE)
        schedd, cluster, proc = self._text(PILOT_SCHEDD), self._text(PILOT_CLUSTER), self._text(PILOT_PROC)
        if schedd and cluster and proc:
            pilot_ref = f"{schedd}#{cluster}.{proc}"
        else:
            match = self.glidein_host.search(self._first_text(LAST_REMOTE_HOST, REMOTE_HOST))
            pilot_ref = match.group(1) if match else ""
        if pilot_ref or self._first_text(MACHINE_SITE, MACHINE_RESOURCE):
            kind = self.payload
        else:
            kind = self.batch
            if not resource:
                resource = global_job_id.partition("#")[0]
        site = self._first_text(MACHINE_SITE, MATCH_SITE, GLIDEIN_SITE) or self.site
        person, project = self._first_text(PROXY_SUBJECT, TOKEN_SUBJECT), self._text(PROJECT_NAME)
        if (len(global_job_id) > self.max_key or len(site) > self.max_site or len(resource) > self.max_resource
                or len(vo) > self.max_vo or len(project) > self.max_project or len(person) > self.max_person):
            return None
        return self.record(  # ParsedRecord's fields, in their order
            kind, global_job_id, start, end, wall, line, cores, memory, gpus, user_cpu, sys_cpu, exit_code,
            exit_signal, site, resource, vo, person, project, self._text(PROXY_FQAN), self._text(OWNER), pilot_ref,
        )
