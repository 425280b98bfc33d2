# SPDX-License-Identifier: MIT
"""examples/python/cubert_dlpack.py: cubert's DLPack calls from Python (ctypes), over
libcubert_dlpack.so (examples/python/cubert_dlpack.c; `make dlpack-python`). docs/interop.md.

    dev = Device(lib_path)             # the CPU driver (cuda=True: GPU 0, a CUDA=1 build)
    t = dev.tensor(b"...", shape, dtype)   # a cubert handle with a shape and a DLPack dtype
    numpy.from_dlpack(t)               # t has __dlpack__ / __dlpack_device__ (zero copy)
    h = dev.import_capsule(arr.__dlpack__())   # another library's tensor as a cubert handle
    dev.add_u8(lhs, rhs, out); dev.add_u32(h, 5); dev.sync()

Capsules follow the DLPack protocol: "dltensor" / "dltensor_versioned" while unconsumed (their
destructor then calls the tensor's deleter), renamed "used_dltensor" /
"used_dltensor_versioned" by the consumer that took the tensor.
"""
import ctypes

# cubert_dlpack_stream_kind_t
STREAM_HOST, STREAM_NONE, STREAM_CUBERT, STREAM_NATIVE = 0, 1, 2, 3
# DLPack device types and dtype codes
KDLCPU, KDLCUDA = 1, 2
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL = 0, 1, 2, 4, 5, 6
FLAG_READ_ONLY = 1

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]

# A capsule keeps the pointer to its name, not a copy: the names live here, for good.
_NAMES = {b"dltensor": b"used_dltensor", b"dltensor_versioned": b"used_dltensor_versioned"}
_NAME_BUFS = {k: ctypes.create_string_buffer(k) for k in list(_NAMES) + list(_NAMES.values())}

_lib = None


class CubertError(RuntimeError):
    pass




def _load(path):
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(path)  # CDLL: the GIL is released in calls (a deleter may take it)
    P, U64, I32, U32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int32, ctypes.c_uint32
    sigs = {
        "cdp_last_error": (ctypes.c_char_p, []),
        "cdp_client_create": (ctypes.c_int, [ctypes.c_int, U32, ctypes.POINTER(P)]),
        "cdp_client_release": (None, [P]),
        "cdp_set_stream": (None, [P, U64]),
        "cdp_device": (None, [P, ctypes.POINTER(I32), ctypes.POINTER(I32)]),
        "cdp_create": (ctypes.c_int, [P, P, U64, ctypes.POINTER(P)]),
        "cdp_handle_release": (ctypes.c_int, [P, P]),
        "cdp_handle_size": (U64, [P]),
        "cdp_export": (ctypes.c_int, [P, P, I32, ctypes.POINTER(ctypes.c_int64), ctypes.c_uint8,
                                      ctypes.c_uint8, ctypes.c_int, U32, U64, U32, ctypes.POINTER(P)]),
        "cdp_import": (ctypes.c_int, [P, P, ctypes.c_int, U32, U64, ctypes.POINTER(P),
                                      ctypes.POINTER(U64)]),
        "cdp_managed_delete": (None, [P, ctypes.c_int]),
        "cdp_managed_address": (U64, [P, ctypes.c_int]),
        "cdp_capsule_destructor": (None, [P]),
        "cdp_add_u8": (ctypes.c_int, [P, P, P, P]),
        "cdp_add_u32": (ctypes.c_int, [P, P, U32]),
        "cdp_read": (ctypes.c_int, [P, P, P, U64]),
        "cdp_sync": (ctypes.c_int, [P]),
        "cdp_address": (ctypes.c_int, [P, P, ctypes.POINTER(U64)]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def _check(status, what):
    if status != 0:
        raise CubertError("%s: status %d: %s" % (what, status, _lib.cdp_last_error().decode()))


class Handle:
    """A cubert handle (heap-held by the helper library); release() once."""

    def __init__(self, dev, ptr, address=None):
        self.dev, self.ptr, self.address = dev, ptr, address

    def size(self):
        return _lib.cdp_handle_size(self.ptr)

    def read(self, size=None):
        n = self.size() if size is None else size
        buf = ctypes.create_string_buffer(n)
        _check(_lib.cdp_read(self.dev.client, self.ptr, buf, n), "read")
        return buf.raw

    def device_address(self):
        a = ctypes.c_uint64()
        _check(_lib.cdp_address(self.dev.client, self.ptr, ctypes.byref(a)), "get_resource_async")
        return a.value

    def release(self):
        if self.ptr:
            _check(_lib.cdp_handle_release(self.dev.client, self.ptr), "handle_release")
            self.ptr = None


class Tensor(Handle):
    """A cubert handle with a shape and a DLPack dtype: a DLPack producer."""

    def __init__(self, dev, ptr, shape, code, bits):
        Handle.__init__(self, dev, ptr)
        self.shape, self.code, self.bits = tuple(shape), code, bits

    def __dlpack_device__(self):
        return self.dev.dlpack_device()

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack protocol: `stream` is the consumer's. None: the host (CPU) / the legacy
        default stream (CUDA, DLPack's 1); -1: no ordering; else a CUstream the tensor's
        pending writes are ordered before (no host wait)."""
        if copy:
            raise BufferError("cubert exports without a copy only")
        versioned = 1 if (max_version is not None and max_version[0] >= 1) else 0
        kind, value = STREAM_HOST, 0
        if self.dev.cuda:
            if stream is None:
                kind, value = STREAM_NATIVE, 1
            elif stream == -1:
                kind = STREAM_NONE
            else:
                kind, value = STREAM_NATIVE, int(stream)
        elif stream not in (None, -1):
            raise BufferError("a CPU tensor takes stream None")
        elif stream == -1:
            kind = STREAM_NONE
        managed = ctypes.c_void_p()
        shape = (ctypes.c_int64 * max(1, len(self.shape)))(*self.shape)
        _check(_lib.cdp_export(self.dev.client, self.ptr, len(self.shape), shape, self.code, self.bits,
                               versioned, kind, value, 0, ctypes.byref(managed)), "dlpack export")
        name = _NAME_BUFS[b"dltensor_versioned" if versioned else b"dltensor"]
        return _api.PyCapsule_New(managed.value, ctypes.cast(name, ctypes.c_char_p),
                                  ctypes.cast(_lib.cdp_capsule_destructor, ctypes.c_void_p))


class Device:
    def __init__(self, lib_path, cuda=False, index=0):
        _load(lib_path)
        self.cuda = cuda
        c = ctypes.c_void_p()
        _check(_lib.cdp_client_create(1 if cuda else 0, index, ctypes.byref(c)), "client_create")
        self.client = c

    def release(self):
        if self.client:
            _lib.cdp_client_release(self.client)
            self.client = None

    def set_stream(self, stream):
        _lib.cdp_set_stream(self.client, stream)

    def dlpack_device(self):
        t, i = ctypes.c_int32(), ctypes.c_int32()
        _lib.cdp_device(self.client, ctypes.byref(t), ctypes.byref(i))
        return (t.value, i.value)

    def create(self, data=None, size=None):
        h = ctypes.c_void_p()
        n = len(data) if data is not None else size
        _check(_lib.cdp_create(self.client, data, n, ctypes.byref(h)), "create")
        return Handle(self, h)

    def tensor(self, data, shape, code, bits):
        h = self.create(data)
        return Tensor(self, h.ptr, shape, code, bits)

    def import_capsule(self, capsule, stream_kind=STREAM_HOST, stream=0):
        """Consume a DLPack capsule: the tensor becomes a cubert handle without a copy; the
        capsule is renamed "used_..." (its deleter now runs when cubert's last reference
        goes). On a refusal the capsule stays the caller's."""
        for name, versioned in ((b"dltensor_versioned", 1), (b"dltensor", 0)):
            if _api.PyCapsule_IsValid(capsule, name):
                break
        else:
            raise BufferError("not an unconsumed DLPack capsule")
        managed = _api.PyCapsule_GetPointer(capsule, name)
        h, address = ctypes.c_void_p(), ctypes.c_uint64()
        _check(_lib.cdp_import(self.client, managed, versioned, stream_kind, stream, ctypes.byref(h),
                               ctypes.byref(address)), "dlpack import")
        _api.PyCapsule_SetName(capsule, ctypes.cast(_NAME_BUFS[_NAMES[name]], ctypes.c_char_p))
        return Handle(self, h, address.value)

    def add_u8(self, lhs, rhs, out):
        _check(_lib.cdp_add_u8(self.client, lhs.ptr, rhs.ptr, out.ptr), "launch ck_add_u8")

    def add_u32(self, h, delta):
        _check(_lib.cdp_add_u32(self.client, h.ptr, delta), "launch ck_add_scalar_u32")

    def sync(self):
        _check(_lib.cdp_sync(self.client), "sync")
