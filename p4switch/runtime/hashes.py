"""Hash algorithms of v1model's ``HashAlgorithm``, computed as BMv2 does.

Each function takes the input bytes (BMv2 serialises the field list MSB
first and pads the last byte with zero bits) and returns an unsigned int.
``crc16`` is CRC-16/ARC (poly 0x8005, reflected, init 0), ``crc32`` the
IEEE CRC-32, ``crc16_custom``/``crc32_custom`` default to the same
parameters (BMv2 lets the control plane change them), ``csum16`` is the
Internet checksum (ones' complement of the ones' complement sum), ``xor16``
XORs 16-bit words (the tail zero padded), ``identity`` is the first 8 bytes
as a big-endian integer.
"""

from __future__ import annotations

import random as _random
from dataclasses import dataclass
from typing import Callable


def _reflect(value: int, nbits: int) -> int:
    r = 0
    for _ in range(nbits):
        r = (r << 1) | (value & 1)
        value >>= 1
    return r


@dataclass(frozen=True)
class CrcConfig:
    """Parameters of a table-driven CRC (the Rocksoft model BMv2 uses)."""

    width: int
    poly: int
    init: int
    xor_out: int
    reflect_in: bool
    reflect_out: bool


def _make_table(cfg: CrcConfig) -> list[int]:
    top = 1 << (cfg.width - 1)
    m = (1 << cfg.width) - 1
    table = []
    for dividend in range(256):
        rem = (dividend << (cfg.width - 8)) & m
        for _ in range(8):
            rem = ((rem << 1) ^ cfg.poly) & m if rem & top else (rem << 1) & m
        table.append(rem)
    return table


_REFLECT8 = [_reflect(i, 8) for i in range(256)]


def make_crc(cfg: CrcConfig) -> Callable[[bytes], int]:
    """Build a CRC function for ``cfg`` (table computed once)."""
    table = _make_table(cfg)
    shift = cfg.width - 8
    m = (1 << cfg.width) - 1
    refl = _REFLECT8

    def crc(data: bytes) -> int:
        rem = cfg.init
        if cfg.reflect_in:
            for b in data:
                rem = table[refl[b] ^ (rem >> shift)] ^ ((rem << 8) & m)
        else:
            for b in data:
                rem = table[b ^ (rem >> shift)] ^ ((rem << 8) & m)
        if cfg.reflect_out:
            rem = _reflect(rem, cfg.width)
        return rem ^ cfg.xor_out

    return crc


CRC16 = CrcConfig(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32 = CrcConfig(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
CRC8 = CrcConfig(8, 0x07, 0x00, 0x00, False, False)
CRC64 = CrcConfig(64, 0x1B, 0, 0, True, True)

crc16 = make_crc(CRC16)
crc32 = make_crc(CRC32)
_crc8 = make_crc(CRC8)
_crc64 = make_crc(CRC64)


def _crc16_ccitt(data: bytes) -> int:
    # BMv2's crcCCITT: poly 0x1021, init 0xFFFF, not reflected.
    return _ccitt(data)


_ccitt = make_crc(CrcConfig(16, 0x1021, 0xFFFF, 0x0000, False, False))


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071) of ``data`` zero-padded to even length."""
    if len(data) & 1:
        data = data + b"\x00"
    # The ones' complement sum of the 16-bit words is the number they spell
    # modulo 0xFFFF (2**16 is 1 modulo 0xFFFF), except that a non-zero sum
    # folds to 0xFFFF, never to 0.
    n = int.from_bytes(data, "big")
    s = n % 0xFFFF
    if s == 0 and n:
        s = 0xFFFF
    return (~s) & 0xFFFF


def csum16_bits(value: int, width: int) -> int:
    """``csum16`` of a ``width``-bit value serialised as ``bits_to_bytes``
    does, without building the bytes: zero bits appended up to a whole
    16-bit word leave the ones' complement sum as it is on the bytes."""
    n = (value & ((1 << width) - 1)) << (-width & 15)
    s = n % 0xFFFF
    if s == 0 and n:
        s = 0xFFFF
    return (~s) & 0xFFFF


def xor16(data: bytes) -> int:
    """XOR of the big-endian 16-bit words of ``data`` (tail zero padded)."""
    r = 0
    n = len(data)
    for i in range(0, n - 1, 2):
        r ^= (data[i] << 8) | data[i + 1]
    if n & 1:
        r ^= data[-1] << 8
    return r


def identity(data: bytes) -> int:
    """The first (up to) 8 bytes of ``data`` as a big-endian integer."""
    return int.from_bytes(data[:8], "big")


class RandomHash:
    """The ``random`` algorithm: a uniformly random value per call (seeded)."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = _random.Random(seed)

    def __call__(self, data: bytes) -> int:
        return self._rng.getrandbits(64)


class RoundRobin:
    """BMv2's ``round_robin``: 0, 1, 2, ... regardless of input."""

    def __init__(self) -> None:
        self._i = 0

    def __call__(self, data: bytes) -> int:
        i = self._i
        self._i += 1
        return i


ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc32": crc32,
    "crc16_custom": crc16,
    "crc32_custom": crc32,
    "crc8_custom": _crc8,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
    "crcCCITT": _crc16_ccitt,
}


def algorithm(name: str, seed: int = 0) -> Callable[[bytes], int]:
    """The hash function for a ``HashAlgorithm`` member name.

    Stateful algorithms (``random``, ``round_robin``) get a fresh instance so
    each extern call site keeps its own state, as BMv2 does.
    """
    if name == "random":
        return RandomHash(seed)
    if name == "round_robin":
        return RoundRobin()
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unsupported hash algorithm {name!r}") from None
