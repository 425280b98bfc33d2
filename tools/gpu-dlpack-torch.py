#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/gpu-dlpack-torch.py: DLPack round trips between cubert's CUDA device and PyTorch on a
GPU, without a copy and without a host wait between the two (docs/interop.md). Run by
`bash tools/gpu-run.sh` (step dlpack-torch); by hand, after `make CUDA=1 dlpack-python`:

    python3 tools/gpu-dlpack-torch.py build/cuda/examples/python/libcubert_dlpack.so

What it checks, on a torch stream that is not the default one (so that ordering matters):
  1. cubert -> torch: a cubert kernel writes a cubert tensor (64 MiB, so it takes a while),
     torch.from_dlpack takes it at once (__dlpack__(stream=torch's stream): cubert makes that
     stream wait for its kernel, no host wait) and reads it: the kernel's result, at the same
     device address.
  2. torch -> cubert: torch writes a tensor on its stream; cubert adopts it (__dlpack__(stream=-1),
     then cubert's stream waits for torch's: NATIVE import) at the same address; a cubert kernel
     reads it into a cubert buffer and writes into the torch tensor itself; torch reads both
     after stream ordering only.
  3. every dtype cubert takes that this torch has, both ways, both capsule forms
     (DLManagedTensor: to_dlpack; DLManagedTensorVersioned: __dlpack__(max_version=(1, 0)) when
     this torch has it).
Prints "skipped: <reason>" (exit 0) without torch or a GPU; "dlpack-torch: N checks passed" at
the end; exit 1 at the first failure.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "python"))

try:
    import torch
    import torch.utils.dlpack
except ImportError as e:
    print("skipped: PyTorch is not installed (%s)" % e)
    sys.exit(0)
if not torch.cuda.is_available():
    print("skipped: torch.cuda.is_available() is False")
    sys.exit(0)

import cubert_dlpack as cd  # noqa: E402

checks = 0


def check(cond, what):
    global checks
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    checks += 1


def stream_ptr(s):
    # DLPack's number for torch's stream: 1 is the legacy default stream (cuda_stream 0)
    return s.cuda_stream if s.cuda_stream != 0 else 1


def as_bytes(t):
    return t.contiguous().view(-1).view(torch.uint8)


def take_from_torch(dev, t, s, versioned):
    """A torch tensor into cubert, ordered after torch's stream `s` (no host wait)."""
    if versioned:
        cap = t.__dlpack__(stream=-1, max_version=(1, 0))  # -1: torch orders nothing
    else:
        cap = torch.utils.dlpack.to_dlpack(t)
    return dev.import_capsule(cap, cd.STREAM_NATIVE, stream_ptr(s))


def has_versioned_dlpack():
    try:
        torch.zeros(1, device="cuda").__dlpack__(stream=-1, max_version=(1, 0))
        return True
    except TypeError:
        return False


def main(lib):
    dev = cd.Device(lib, cuda=True)
    check(dev.dlpack_device() == (cd.KDLCUDA, torch.cuda.current_device()),
          "the CUDA device is kDLCUDA with its ordinal")
    s = torch.cuda.Stream()
    versioned_ok = has_versioned_dlpack()

    # ---- 1. cubert -> torch after stream ordering only ----
    n = 64 << 20
    t = dev.tensor(bytes(n), (n,), cd.UINT, 8)
    ones = dev.create(bytes([1]) * n)
    for _ in range(3):  # three passes of 64 MiB: long enough to catch a missing wait
        dev.add_u8(t, ones, t)  # enqueued on cubert's stream
    with torch.cuda.stream(s):
        t0 = time.perf_counter()
        y = torch.from_dlpack(t)  # t.__dlpack__(stream=s): s waits for the kernels
        took = time.perf_counter() - t0
        total = int(y.to(torch.int64).sum().item())  # read on s
    check(y.data_ptr() == t.device_address(), "cubert -> torch: the same device address")
    check(total == 3 * n, "cubert -> torch: torch read the kernels' result (%d, want %d)" % (total, 3 * n))
    print("note: torch.from_dlpack returned in %.3f ms while cubert's kernels ran" % (took * 1e3))
    t.release()
    del y

    # ---- 2. torch -> cubert and back ----
    with torch.cuda.stream(s):
        a = torch.arange(1 << 20, dtype=torch.int32, device="cuda")
        a.add_(1000)  # torch's write, on s
    h = take_from_torch(dev, a, s, False)
    check(h.address == a.data_ptr(), "torch -> cubert: the same device address")
    check(h.device_address() == a.data_ptr(), "torch -> cubert: cubert's resource is torch's memory")
    zeros = dev.create(bytes(a.numel() * 4))  # uploaded: fresh GPU memory is not zeroed
    out = dev.create(size=a.numel() * 4)
    dev.add_u8(h, zeros, out)  # cubert reads torch's write (its stream waited for s)
    got = out.read()
    want = (torch.arange(1 << 20, dtype=torch.int32) + 1000).numpy().tobytes()
    check(got == want, "torch -> cubert: cubert read torch's write")
    dev.add_u32(h, 7)  # cubert writes into torch's memory...
    back = cd.Tensor(dev, h.ptr, (a.numel(),), cd.INT, 32)
    with torch.cuda.stream(s):
        v = torch.from_dlpack(back)  # ...s waits for it, no host wait
        ok = bool(torch.equal(v, a)) and bool(torch.equal(a.cpu(), torch.arange(1 << 20, dtype=torch.int32) + 1007))
    check(v.data_ptr() == a.data_ptr(), "torch -> cubert -> torch: the same device address")
    check(ok, "torch sees cubert's kernel's write into its tensor")
    del v
    h.ptr = None  # `back` took the handle: torch's deleter of v's capsule released the export
    back.release()
    zeros.release()
    out.release()
    ones.release()

    # ---- 3. every dtype ----
    dtypes = [("int8", cd.INT, 8), ("int16", cd.INT, 16), ("int32", cd.INT, 32), ("int64", cd.INT, 64),
              ("uint8", cd.UINT, 8), ("uint16", cd.UINT, 16), ("uint32", cd.UINT, 32),
              ("uint64", cd.UINT, 64), ("float16", cd.FLOAT, 16), ("bfloat16", cd.BFLOAT, 16),
              ("float32", cd.FLOAT, 32), ("float64", cd.FLOAT, 64), ("complex64", cd.COMPLEX, 64),
              ("complex128", cd.COMPLEX, 128), ("bool", cd.BOOL, 8)]
    skipped = []
    m = 4096
    for name, code, bits in dtypes:
        dt = getattr(torch, name, None)
        if dt is None:
            skipped.append("%s (this torch has no torch.%s)" % (name, name))
            continue
        w = bits // 8
        for versioned in ((False, True) if versioned_ok else (False,)):
            form = "versioned" if versioned else "unversioned"
            # torch -> cubert: torch writes on s, a cubert kernel reads after ordering
            try:
                with torch.cuda.stream(s):
                    x = torch.zeros(m, dtype=dt, device="cuda")
                    xb = as_bytes(x)
                    xb.copy_(torch.arange(m * w, device="cuda").remainder(251).to(torch.uint8))
                    if dt == torch.bool:
                        xb.remainder_(2)  # bool bytes stay 0 or 1
                h = take_from_torch(dev, x, s, versioned)
            except (BufferError, RuntimeError, TypeError) as e:
                skipped.append("%s %s to cubert (%s)" % (name, form, e))
                continue
            check(h.address == x.data_ptr(), "%s %s: torch -> cubert address" % (name, form))
            o = dev.tensor(bytes(m * w), (m,), code, bits)
            z = dev.create(bytes(m * w))
            dev.add_u8(h, z, o)  # o = x's bytes, written by a cubert kernel
            with torch.cuda.stream(s):
                try:
                    y = torch.from_dlpack(o)  # ordered after the kernel
                except (BufferError, RuntimeError, TypeError) as e:
                    skipped.append("%s %s from cubert (%s)" % (name, form, e))
                    y = None
                if y is not None:
                    same = bool(torch.equal(as_bytes(y), as_bytes(x)))
            if y is not None:
                check(y.dtype == dt, "%s %s: cubert -> torch dtype" % (name, form))
                check(y.data_ptr() == o.device_address(), "%s %s: cubert -> torch address" % (name, form))
                check(same, "%s %s: the bytes went through a cubert kernel both ways" % (name, form))
                del y
            h.release()
            o.release()
            z.release()
    torch.cuda.synchronize()
    dev.sync()
    dev.release()  # teardown: every deleter ran
    for sk in skipped:
        print("note: not exchanged: " + sk)
    print("dlpack-torch: %d checks passed (torch %s)" % (checks, torch.__version__))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: gpu-dlpack-torch.py path/to/libcubert_dlpack.so (make CUDA=1 dlpack-python)")
        sys.exit(2)
    main(sys.argv[1])
