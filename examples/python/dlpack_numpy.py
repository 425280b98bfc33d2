#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""examples/python/dlpack_numpy.py: the DLPack round trip between cubert (the CPU driver) and
NumPy, without a copy (make check-dlpack-numpy; docs/interop.md).

    python3 examples/python/dlpack_numpy.py build/examples/python/libcubert_dlpack.so

cubert -> NumPy: numpy.from_dlpack of a cubert tensor is a view of cubert's memory (the same
address); a cubert kernel's later write shows in the array. NumPy -> cubert: an array's
__dlpack__ capsule becomes a cubert handle over the array's memory (the same address); a cubert
kernel writes into it; the array's reference goes back once cubert's handle went. Every dtype
both sides take. Prints "skipped: <reason>" (exit 0) without NumPy, "dlpack-numpy: N checks
passed" at the end, exit 1 at the first failure.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import numpy as np
except ImportError as e:
    print("skipped: NumPy is not installed (%s; Debian: apt-get install python3-numpy)" % e)
    sys.exit(0)
if not hasattr(np, "from_dlpack"):
    print("skipped: NumPy %s has no from_dlpack (1.22 or later)" % np.__version__)
    sys.exit(0)

import cubert_dlpack as cd  # noqa: E402

checks = 0


def check(cond, what):
    global checks
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    checks += 1


def main(lib):
    dev = cd.Device(lib)
    check(dev.dlpack_device() == (cd.KDLCPU, 0), "the CPU device is kDLCPU 0")

    # ---- cubert -> NumPy: a view of cubert's memory ----
    n = 256
    src = np.arange(n, dtype=np.uint32)
    t = dev.tensor(src.tobytes(), (16, 16), cd.UINT, 32)
    a = np.from_dlpack(t)
    check(a.dtype == np.uint32 and a.shape == (16, 16), "shape and dtype of the view")
    check(np.array_equal(a.ravel(), src), "the view holds cubert's data")
    check(a.ctypes.data == t.device_address(), "the same address on both sides (cubert -> NumPy)")
    dev.add_u32(t, 5)  # a cubert kernel writes cubert's memory...
    dev.sync()
    check(np.array_equal(a.ravel(), src + 5), "...and NumPy sees it (no copy)")
    t.release()  # the array keeps the memory: the export holds a reference
    check(np.array_equal(a.ravel(), src + 5), "the view outlives cubert's handle")
    del a  # NumPy calls the export's deleter

    # ---- NumPy -> cubert: a cubert handle over NumPy's memory ----
    arr = np.arange(n, dtype=np.uint32)
    refs = sys.getrefcount(arr)
    h = dev.import_capsule(arr.__dlpack__())
    check(h.address == arr.ctypes.data, "the imported tensor's data is the array's")
    check(h.device_address() == arr.ctypes.data, "the same address on both sides (NumPy -> cubert)")
    check(sys.getrefcount(arr) == refs + 1, "the tensor holds the array")
    dev.add_u32(h, 7)  # a cubert kernel writes into NumPy's memory
    dev.sync()
    check(np.array_equal(arr, np.arange(n, dtype=np.uint32) + 7), "NumPy sees the kernel's write")
    h.release()
    dev.sync()  # cubert's last reference went: the deleter ran, once
    check(sys.getrefcount(arr) == refs, "the deleter gave the array back")

    # ---- both ways with a byte kernel: lhs (NumPy) + rhs (cubert) -> out (NumPy) ----
    lhs = np.arange(64, dtype=np.uint8)
    out = np.zeros(64, dtype=np.uint8)
    hl = dev.import_capsule(lhs.__dlpack__())
    ho = dev.import_capsule(out.__dlpack__())
    hr = dev.create(bytes([3] * 64))
    dev.add_u8(hl, hr, ho)
    dev.sync()
    check(np.array_equal(out, (lhs + 3).astype(np.uint8)), "a kernel reads one array, writes another")
    for x in (hl, ho, hr):
        x.release()

    # ---- every dtype both take ----
    dtypes = [(np.int8, cd.INT, 8), (np.int16, cd.INT, 16), (np.int32, cd.INT, 32), (np.int64, cd.INT, 64),
              (np.uint8, cd.UINT, 8), (np.uint16, cd.UINT, 16), (np.uint32, cd.UINT, 32),
              (np.uint64, cd.UINT, 64), (np.float16, cd.FLOAT, 16), (np.float32, cd.FLOAT, 32),
              (np.float64, cd.FLOAT, 64), (np.complex64, cd.COMPLEX, 64), (np.complex128, cd.COMPLEX, 128),
              (np.bool_, cd.BOOL, 8)]
    skipped = []
    for dt, code, bits in dtypes:
        x = (np.arange(24) % 2).astype(dt) if dt is np.bool_ else (np.arange(24) * 3 + 1).astype(dt)
        x = x.reshape(4, 6)
        # NumPy -> cubert
        try:
            cap = x.__dlpack__()
        except (BufferError, TypeError) as e:
            skipped.append("%s to cubert (NumPy %s will not export it: %s)" % (np.dtype(dt).name, np.__version__, e))
            cap = None
        if cap is not None:
            h = dev.import_capsule(cap)
            check(h.address == x.ctypes.data, "%s: the same address" % np.dtype(dt).name)
            check(h.read() == x.tobytes(), "%s: cubert reads NumPy's bytes" % np.dtype(dt).name)
            h.release()
        # cubert -> NumPy
        t = dev.tensor(x.tobytes(), (4, 6), code, bits)
        try:
            y = np.from_dlpack(t)
        except (BufferError, TypeError, RuntimeError) as e:
            skipped.append("%s from cubert (NumPy %s will not import it: %s)" % (np.dtype(dt).name, np.__version__, e))
            t.release()
            continue
        check(y.dtype == x.dtype and y.shape == (4, 6), "%s: dtype and shape" % np.dtype(dt).name)
        check(y.tobytes() == x.tobytes(), "%s: NumPy reads cubert's bytes" % np.dtype(dt).name)
        check(y.ctypes.data == t.device_address(), "%s: the same address" % np.dtype(dt).name)
        t.release()
        del y
    dev.sync()
    dev.release()  # teardown: every deleter has run
    for s in skipped:
        print("note: dtype not exchanged: " + s)
    print("dlpack-numpy: %d checks passed (NumPy %s)" % (checks, np.__version__))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: dlpack_numpy.py path/to/libcubert_dlpack.so")
        sys.exit(2)
    main(sys.argv[1])
