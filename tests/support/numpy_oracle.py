"""The NumPy side of nuvec's test oracle (see numpy_oracle.h).

One process serves a whole test binary: it reads requests on stdin and answers
on stdout until stdin closes. Every frame is a short ASCII header line followed
by an exact number of raw bytes, so array payloads may hold any byte.

  startup  child -> parent   NUVEC-ORACLE 1 <numpy version>\\n
  request  parent -> child   CALL <n_inputs> <code bytes>\\n <code>
                             then per input an array frame
  answer   child -> parent   OK <n_outputs>\\n then per output an array frame
                             or ERROR <text bytes>\\n <utf-8 text>
  array frame                <dtype> <ndim> <dim>... <data bytes>\\n <data>

Data is little-endian, C order. The child reads a whole request before it
writes anything and the parent writes a whole request before it reads, so
neither side can block the other however large the arrays are.
"""

import linecache
import math
import os
import traceback

import numpy as np

PROTOCOL_VERSION = 1
MAX_HEADER = 4096
CODE_FILENAME = "<numpy oracle code>"

# The closed set of dtypes the C++ side knows. bfloat16 is absent: NumPy has no
# such type, so it is widened to float32 on arrival.
DTYPES = {
    "bool": np.dtype(np.bool_),
    "uint8": np.dtype("<u1"),
    "uint16": np.dtype("<u2"),
    "uint32": np.dtype("<u4"),
    "uint64": np.dtype("<u8"),
    "int8": np.dtype("<i1"),
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "float16": np.dtype("<f2"),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
    "complex64": np.dtype("<c8"),
}
INPUT_SIZES = {name: dt.itemsize for name, dt in DTYPES.items()}
INPUT_SIZES["bfloat16"] = 2


class OracleError(Exception):
    """A request the oracle cannot serve; reported back, not fatal."""


def read_exact(stream, n):
    """Reads exactly n bytes into a writable buffer (None at end of input)."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            return None
        got += k
    return buf


def read_header(stream):
    line = stream.readline(MAX_HEADER)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise SystemExit("numpy_oracle.py: malformed header line %r" % line[:80])
    return line.decode("ascii").split()


def read_array(stream):
    """Reads one array frame; returns (array or None, problem or None)."""
    fields = read_header(stream)
    if fields is None or len(fields) < 3:
        raise SystemExit("numpy_oracle.py: truncated array header %r" % fields)
    name, ndim = fields[0], int(fields[1])
    if len(fields) != ndim + 3:
        raise SystemExit("numpy_oracle.py: bad array header %r" % fields)
    shape = tuple(int(d) for d in fields[2:2 + ndim])
    nbytes = int(fields[-1])
    data = read_exact(stream, nbytes)
    if data is None:
        raise SystemExit("numpy_oracle.py: end of input inside an array")
    if name not in INPUT_SIZES:
        return None, "unknown input dtype %r" % name
    if any(d < 0 for d in shape) or nbytes != math.prod(shape) * INPUT_SIZES[name]:
        return None, "input %s%s does not match its %d data bytes" % (name, list(shape), nbytes)
    if name == "bfloat16":
        # bfloat16 is the high half of a float32, so widening is exact.
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).reshape(shape), None
    return np.frombuffer(data, dtype=DTYPES[name]).reshape(shape), None


def result_name(dt):
    """Maps a NumPy dtype to the C++ side's closed set, or None."""
    if dt.kind == "b":
        return "bool"
    if dt.kind in "iu" and dt.itemsize in (1, 2, 4, 8):
        return ("int" if dt.kind == "i" else "uint") + str(8 * dt.itemsize)
    if dt.kind == "f" and dt.itemsize in (2, 4, 8):
        return "float" + str(8 * dt.itemsize)
    if dt.kind == "c" and dt.itemsize == 8:
        return "complex64"
    return None


def encode_output(index, value):
    """Turns one result into (header bytes, uint8 data) or raises OracleError."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # a ragged list and the like
        raise OracleError("output %d (%s) is not an array: %s" % (index, type(value).__name__, exc))
    if arr.dtype.kind == "c" and arr.dtype.itemsize == 16:
        arr = arr.astype(np.complex64)  # the C++ side has complex64 only
    name = result_name(arr.dtype)
    if name is None:
        raise OracleError("output %d has dtype %s, which the oracle cannot return (%s)"
                          % (index, arr.dtype, type(value).__name__))
    target = np.dtype(np.bool_) if name == "bool" else DTYPES[name]
    arr = np.asarray(arr, dtype=target, order="C")
    data = arr.reshape(-1).view(np.uint8)
    header = "%s %d %s%d\n" % (name, arr.ndim, "".join("%d " % d for d in arr.shape), data.nbytes)
    return header.encode("ascii"), data


_compiled = {}


def compile_code(code):
    """Compiles `code` as an expression, else as statements; cached per text."""
    hit = _compiled.get(code)
    if hit is None:
        try:
            is_expr, compiled = True, compile(code, CODE_FILENAME, "eval")
        except SyntaxError:
            is_expr, compiled = False, None
        if compiled is None:  # outside the handler, so errors are not chained
            compiled = compile(code, CODE_FILENAME, "exec")
        hit = _compiled[code] = (is_expr, compiled)
    return hit


def evaluate(code, inputs):
    if len(inputs) > 26:
        raise OracleError("at most 26 inputs (a..z); got %d" % len(inputs))
    # Registering the source lets tracebacks quote the failing line.
    linecache.cache[CODE_FILENAME] = (len(code), None, code.splitlines(True), CODE_FILENAME)
    is_expr, compiled = compile_code(code)
    scope = {"np": np, "__name__": "__numpy_oracle__"}
    for i, arr in enumerate(inputs):
        scope[chr(ord("a") + i)] = arr
    # Tests probe inf/nan edge cases on purpose; NumPy's warnings would be noise.
    with np.errstate(all="ignore"):
        if is_expr:
            result = eval(compiled, scope)
        else:
            exec(compiled, scope)
            if "out" not in scope:
                raise OracleError("the statements did not assign `out`")
            result = scope["out"]
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    return [encode_output(i, v) for i, v in enumerate(values)]


def serve(inp, out):
    out.write(("NUVEC-ORACLE %d %s\n" % (PROTOCOL_VERSION, np.__version__)).encode("ascii"))
    out.flush()
    while True:
        fields = read_header(inp)
        if fields is None:
            return  # the parent closed our stdin: done
        if len(fields) != 3 or fields[0] != "CALL":
            raise SystemExit("numpy_oracle.py: expected a CALL header, got %r" % fields)
        n_inputs, code_bytes = int(fields[1]), int(fields[2])
        raw = read_exact(inp, code_bytes)
        if raw is None:
            raise SystemExit("numpy_oracle.py: end of input inside code")
        inputs, problems = [], []
        for i in range(n_inputs):  # always consume every frame to stay in step
            arr, problem = read_array(inp)
            inputs.append(arr)
            if problem:
                problems.append("input %d: %s" % (i, problem))
        try:
            if problems:
                raise OracleError("; ".join(problems))
            outputs = evaluate(raw.decode("utf-8"), inputs)
        except OracleError as exc:
            message = "OracleError: %s\n" % exc
        except BaseException:  # SystemExit from user code is a user error too
            message = traceback.format_exc()
        else:
            out.write(b"OK %d\n" % len(outputs))
            for header, data in outputs:
                out.write(header)
                out.write(memoryview(data))
            out.flush()
            continue
        text = message.encode("utf-8", "replace")
        out.write(b"ERROR %d\n" % len(text))
        out.write(text)
        out.flush()


def main():
    # Keep the protocol on private descriptors; fd 0 and 1 (and so input() and
    # print(), even from C code) go to /dev/null and stderr instead.
    inp = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    try:
        serve(inp, out)
    except BrokenPipeError:
        pass  # the parent went away; nothing left to tell it


if __name__ == "__main__":
    main()
