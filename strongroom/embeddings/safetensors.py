"""The tensors of a safetensors file (an 8-byte little-endian header length, a JSON header
naming each tensor's dtype, shape and byte offsets, then the data), read with numpy: the
offline providers need nothing more than this of the `safetensors` package."""

from __future__ import annotations

import json
import struct

from strongroom.lazy import numpy as np

DTYPES = {"F32": "<f4", "F16": "<f2"}


def read_tensors(raw: bytes) -> dict[str, np.ndarray]:
    """Each float32 or float16 tensor of `raw`, by name, as a read-only view of `raw` (copy
    what must outlive it); tensors of other dtypes are left out."""
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    body = memoryview(raw)[8 + length :]
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] not in DTYPES:
            continue
        start, end = meta["data_offsets"]
        data = np.frombuffer(body[start:end], dtype=DTYPES[meta["dtype"]])
        tensors[name] = data.reshape(meta["shape"])
    return tensors
