"""FFTW wisdom on disk as plain bytes: a framed, checksummed file, never a pickle.

Why not pickle: the wisdom file lives in the user cache (``$MEANFIELD_CACHE``), and
``pickle.load`` runs whatever a pickle's ``__reduce__`` names, so a file placed there would
run its payload at the first FFT plan. ``pyfftw.export_wisdom()`` is a tuple of byte
strings (double, single, long double: FFTW's own text format), so nothing richer is needed.

The format (all integers little-endian unsigned 32-bit)::

    MAGIC | count | (length | bytes) * count | sha256 of everything before it

A file that does not parse exactly (wrong magic, a length past the end, trailing bytes,
a digest mismatch, a part that is not FFTW wisdom text) is refused as a whole: the caller
ignores it with one warning and writes a good one in its place.
"""
from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

MAGIC = b"MEANFIELD-FFTW-WISDOM\x001\n"
FILENAME = "fftw-wisdom.bin"
# A wisdom string of a few hundred plans is tens of kB; far more is not wisdom.
MAX_BYTES = 1 << 24
_U32 = struct.Struct("<I")


class BadWisdom(ValueError):
    """A wisdom file that is not one this module wrote (corrupt, truncated or foreign)."""


def encode(parts: tuple[bytes, ...]) -> bytes:
    """The file's bytes for the wisdom ``parts`` (``pyfftw.export_wisdom()``)."""
    body = bytearray(MAGIC)
    body += _U32.pack(len(parts))
    for p in parts:
        if not isinstance(p, bytes):
            raise TypeError(f"wisdom parts are bytes, got {type(p).__name__}")
        body += _U32.pack(len(p)) + p
    return bytes(body) + hashlib.sha256(body).digest()


def decode(data: bytes) -> tuple[bytes, ...]:
    """The wisdom parts of a file's ``data``; ``BadWisdom`` unless it parses exactly."""
    if len(data) > MAX_BYTES:
        raise BadWisdom(f"{len(data)} bytes, more than wisdom can be")
    if not data.startswith(MAGIC):
        raise BadWisdom("not a meanfield wisdom file (its first bytes differ)")
    body, digest = data[:-32], data[-32:]
    if len(data) < len(MAGIC) + 4 + 32 or hashlib.sha256(body).digest() != digest:
        raise BadWisdom("its checksum does not match (truncated or altered)")
    pos = len(MAGIC)
    (count,) = _U32.unpack_from(body, pos)
    pos += 4
    parts = []
    for _ in range(count):
        if pos + 4 > len(body):
            raise BadWisdom("a part's length runs past the end")
        (n,) = _U32.unpack_from(body, pos)
        pos += 4
        if pos + n > len(body):
            raise BadWisdom("a part runs past the end")
        part = bytes(body[pos:pos + n])
        pos += n
        # FFTW's wisdom is text "(fftw-3.x fftw_wisdom ...)", or empty when nothing planned.
        if part and not part.startswith(b"(fftw-"):
            raise BadWisdom("a part is not FFTW wisdom text")
        parts.append(part)
    if pos != len(body):
        raise BadWisdom("bytes after the last part")
    return tuple(parts)


def read(path: Path) -> tuple[bytes, ...]:
    """The wisdom in ``path``; ``FileNotFoundError`` if absent, ``BadWisdom`` if bad."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    return decode(data)


def write(path: Path, parts: tuple[bytes, ...]) -> None:
    """Write ``parts`` to ``path`` atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(encode(parts))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
