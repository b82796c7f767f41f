#!/usr/bin/python3
"""Writes the fuzzers' seed corpus (fuzz/corpus/<parser>/): small valid files of each format, built with NumPy and
struct from the formats' descriptions. Run from anywhere: /usr/bin/python3 fuzz/make_corpus.py"""
import gzip
import io
import json
import os
import struct

import numpy as np

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(parser, name, data):
    os.makedirs(os.path.join(root, parser), exist_ok=True)
    with open(os.path.join(root, parser, name), "wb") as f:
        f.write(data)


def npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


# IDX: big-endian header and data.
def idx(code, dims, data):
    return bytes([0, 0, code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data


put("idx", "u8", idx(8, [2, 3], bytes(range(6))))
put("idx", "i16", idx(0x0B, [3], struct.pack(">3h", 1, -2, 3)))
put("idx", "f64.gz", gzip.compress(idx(0x0E, [2], struct.pack(">2d", 0.5, -1.0))))

# npy: C and Fortran order, both byte orders, several dtypes.
x = np.arange(6, dtype=np.float32).reshape(2, 3)
put("npy", "f32", npy(x))
put("npy", "f64_be_fortran", npy(np.asfortranarray(x.astype(">f8"))))
put("npy", "bool", npy(np.array([True, False])))
put("npy", "c64_scalar", npy(np.complex64(1 + 2j)))
put("npy", "i16_empty", npy(np.zeros((0, 2), np.int16)))

# npz: stored and deflated.
for fn in ("savez", "savez_compressed"):
    buf = io.BytesIO()
    getattr(np, fn)(buf, a=x, b=np.array([1, 2], np.uint8))
    put("npz", fn, buf.getvalue())


# safetensors: u64 header length, JSON header, data buffer.
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


put("safetensors", "mixed", safetensors({"w": ("F32", [2, 3], x.tobytes()), "m": ("BOOL", [2], b"\x01\x00"),
                                         "e": ("I64", [0], b"")}, {"format": "pt"}))
put("safetensors", "bf16", safetensors({"h": ("BF16", [4], b"\x80\x3f" * 4), "d": ("F64", [], struct.pack("<d", 2))}))


# GGUF v3: metadata of several types, tensors F32, F16 and Q4_0, Q4_K.
def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors, version=3):
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, payload in kvs:
        out += s(key) + struct.pack("<I", vtype) + payload
    offset, blobs = 0, []
    for name, dims, ttype, raw in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        blobs.append(raw + b"\0" * ((32 - len(raw) % 32) % 32))
        offset += len(blobs[-1])
    out += b"\0" * ((32 - len(out) % 32) % 32)
    return out + b"".join(blobs)


kvs = [("general.name", 8, s("seed")), ("n", 4, struct.pack("<I", 7)), ("f", 6, struct.pack("<f", 0.5)),
       ("ids", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, -2, 3)),
       ("tokens", 9, struct.pack("<IQ", 8, 2) + s("a") + s("b")),
       ("nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 0, 1) + b"\x05")]
q4_0 = np.float16(0.5).tobytes() + bytes(range(16))
q4_k = np.float16(1).tobytes() + np.float16(0.5).tobytes() + bytes(range(12)) + bytes(range(128))
put("gguf", "mixed", gguf(kvs, [("a", [3, 2], 0, x.tobytes()), ("h", [4], 1, np.ones(4, np.float16).tobytes()),
                                ("q.weight", [32, 1], 2, q4_0), ("k.weight", [256], 12, q4_k)]))
put("gguf", "v2_empty", gguf([], [], version=2))
