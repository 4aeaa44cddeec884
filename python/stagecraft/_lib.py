"""stagecraft._lib: libstagecraft through ctypes (include/stagecraft.h,
docs/embed.md). Nothing here runs a process: the package's load, figures,
export, check, compare and plan are calls of the C library in this one.

The library is the one inside the package (`pip install ./python` builds it
into the wheel, stagecraft/_bin/libstagecraft.so); $STAGECRAFT_LIB, the one
beside $STAGECRAFT (build/libstagecraft.so beside build/stagecraft), the
source tree's build/, else the system's (ldconfig) stand in.

A Context is one stagecraft_open: a Lua state with the sandbox and the
limits of the command line. The library keeps per-process state while a
call runs (stagecraft.h: one thread at a time), so every call here holds
one lock.
"""
import ctypes
import ctypes.util
import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
LOCK = threading.RLock()
_cache = {}

_c = ctypes.c_void_p
_s = ctypes.c_char_p
_TEXT = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]


class ExportOptions(ctypes.Structure):
    _fields_ = [("torch", ctypes.c_char_p), ("torchtitan", ctypes.c_int)]


class PlanSettings(ctypes.Structure):
    _fields_ = [("devices", ctypes.c_int), ("microbatches", ctypes.c_int),
                ("cap", ctypes.c_char_p), ("costs", ctypes.c_char_p),
                ("layers", ctypes.c_char_p), ("framework", ctypes.c_char_p),
                ("time_limit", ctypes.c_double),
                ("defs", ctypes.POINTER(ctypes.c_char_p))]


_SIGS = {
    "stagecraft_version": (_s, []),
    "stagecraft_open": (_c, []),
    "stagecraft_close": (None, [_c]),
    "stagecraft_errmsg": (_s, [_c]),
    "stagecraft_search_time": (ctypes.c_int, [_c, ctypes.c_double]),
    "stagecraft_load": (ctypes.c_int, [_c, _s, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.POINTER(_c)]),
    "stagecraft_program_free": (None, [_c]),
    "stagecraft_check": (ctypes.c_int, [_c]),
    "stagecraft_comm": (ctypes.c_int, [_c, _s]),
    "stagecraft_figures_json": (ctypes.c_int, [_c] + _TEXT),
    "stagecraft_digest": (ctypes.c_int, [_c, ctypes.c_char_p]),
    "stagecraft_export_as": (ctypes.c_int, [_c, _s, ctypes.POINTER(ExportOptions)] + _TEXT),
    "stagecraft_compare_json": (ctypes.c_int, [_c, ctypes.POINTER(ctypes.c_char_p),
                                               ctypes.POINTER(ctypes.c_char_p)] + _TEXT),
    "stagecraft_plan_json": (ctypes.c_int, [_c, ctypes.POINTER(PlanSettings)] + _TEXT),
    "stagecraft_plan_option": (_s, [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
}


def candidates(path=None):
    """Where the library is looked for, in order."""
    out = [path] if path else []
    if os.environ.get("STAGECRAFT_LIB"):
        out.append(os.environ["STAGECRAFT_LIB"])
    out.append(os.path.join(_HERE, "_bin", "libstagecraft.so"))
    exe = os.environ.get("STAGECRAFT")
    if exe:
        out.append(os.path.join(os.path.dirname(os.path.abspath(exe)), "libstagecraft.so"))
    out.append(os.path.join(_HERE, "..", "..", "build", "libstagecraft.so"))
    return out


def library(path=None, error=Exception):
    """The loaded libstagecraft (a ctypes.CDLL with its signatures set)."""
    key = path or ""
    with LOCK:
        if key in _cache:
            return _cache[key]
        tried = [p for p in candidates(path) if p]
        if path:  # this one or none
            tried = tried[:1]
            found = path if os.path.isfile(path) else None
        else:
            found = next((p for p in tried if os.path.isfile(p)), None) or \
                ctypes.util.find_library("stagecraft")
        if not found:
            raise error("libstagecraft not found: install the package with `pip install "
                        "./python` (it builds the library into it), or set "
                        "STAGECRAFT_LIB=/path/to/libstagecraft.so (tried " +
                        ", ".join(f"'{p}'" for p in tried) + ")", 2)
        try:
            lib = ctypes.CDLL(found)
            for name, (res, args) in _SIGS.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
        except (OSError, AttributeError) as e:
            raise error(f"libstagecraft at '{found}' cannot be used: {e}", 2)
        _cache[key] = lib
        return lib


def strings(items):
    """A NULL-terminated char *[] of items (kept alive by the array)."""
    arr = (ctypes.c_char_p * (len(items) + 1))()
    for i, s in enumerate(items):
        arr[i] = s.encode()
    arr[len(items)] = None
    return arr


class Context:
    """One stagecraft_open, closed (with its programs) when collected."""

    def __init__(self, lib, error):
        self.lib, self.error = lib, error
        self.handle = lib.stagecraft_open()
        if not self.handle:
            raise error("out of memory", 4)

    def check(self, rc):
        """Raises error(message, code) for a failed call."""
        if rc:
            raise self.error(self.lib.stagecraft_errmsg(self.handle).decode("utf-8", "replace"), rc)

    def __del__(self):
        h, self.handle = getattr(self, "handle", None), None
        if h:
            with LOCK:
                self.lib.stagecraft_close(h)


def text_call(ctx, fn, *args, keep_on=()):
    """fn(*args, &text, &len) under the lock: the text, or error. A code in
    keep_on returns (text, code) for the caller to judge."""
    t, n = ctypes.c_char_p(), ctypes.c_size_t()
    rc = fn(*args, ctypes.byref(t), ctypes.byref(n))
    text = ctypes.string_at(t, n.value).decode("utf-8") if t.value is not None and (
        not rc or rc in keep_on) else None
    if rc and rc not in keep_on:
        ctx.check(rc)
    return (text, rc) if keep_on else text
