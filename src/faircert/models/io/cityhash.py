"""CityHash64 (version 1.0.2), the hash CatBoost gives a category: its low 32 bits, per value's text.

CatBoost's tables of target statistics and its one-hot splits are keyed by these hashes, so reading a
category as CatBoost does needs the same function, bit for bit (tests compare it with the hashes
CatBoost itself writes for training categories of every length class).
"""

from __future__ import annotations

M64 = (1 << 64) - 1
K0, K1, K2, K3 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F, 0xC949D7C7509E6557
K_MUL = 0x9DDFEA08EB382D69


def _f64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 8], "little")


def _f32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i : i + 4], "little")


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & M64


def _mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int) -> int:
    a = ((u ^ v) * K_MUL) & M64
    a ^= a >> 47
    b = ((v ^ a) * K_MUL) & M64
    b ^= b >> 47
    return (b * K_MUL) & M64


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n > 8:
        a, b = _f64(s, 0), _f64(s, n - 8)
        return _len16(a, _rot((b + n) & M64, n)) ^ b
    if n >= 4:
        return _len16((n + (_f32(s, 0) << 3)) & M64, _f32(s, n - 4))
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_mix(((y * K2) ^ (z * K3)) & M64) * K2) & M64
    return K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    a = (_f64(s, 0) * K1) & M64
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * K2) & M64
    d = (_f64(s, n - 16) * K0) & M64
    return _len16(
        (_rot((a - b) & M64, 43) + _rot(c, 30) + d) & M64,
        (a + _rot(b ^ K3, 20) - c + n) & M64,
    )


def _len33to64(s: bytes) -> int:
    n = len(s)
    z = _f64(s, 24)
    a = (_f64(s, 0) + (n + _f64(s, n - 16)) * K0) & M64
    b = _rot((a + z) & M64, 52)
    c = _rot(a, 37)
    a = (a + _f64(s, 8)) & M64
    c = (c + _rot(a, 7)) & M64
    a = (a + _f64(s, 16)) & M64
    vf, vs = (a + z) & M64, (b + _rot(a, 31) + c) & M64
    a = (_f64(s, 16) + _f64(s, n - 32)) & M64
    z = _f64(s, n - 8)
    b = _rot((a + z) & M64, 52)
    c = _rot(a, 37)
    a = (a + _f64(s, n - 24)) & M64
    c = (c + _rot(a, 7)) & M64
    a = (a + _f64(s, n - 16)) & M64
    wf, ws = (a + z) & M64, (b + _rot(a, 31) + c) & M64
    r = _mix(((vf + ws) * K2 + (wf + vs) * K0) & M64)
    return (_mix((r * K0 + vs) & M64) * K2) & M64


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & M64
    b = _rot((b + a + z) & M64, 21)
    c = a
    a = (a + x + y) & M64
    b = (b + _rot(a, 44)) & M64
    return (a + z) & M64, (b + c) & M64


def cityhash64(s: bytes) -> int:
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    x = _f64(s, 0)
    y = _f64(s, n - 16) ^ K1
    z = _f64(s, n - 56) ^ K0
    v = _weak32(s, n - 64, n, y)
    w = _weak32(s, n - 32, (n * K1) & M64, K0)
    z = (z + _mix(v[1]) * K1) & M64
    x = (_rot((z + x) & M64, 39) * K1) & M64
    y = (_rot(y, 33) * K1) & M64
    left, i = (n - 1) & ~63, 0
    while True:
        x = (_rot((x + y + v[0] + _f64(s, i + 16)) & M64, 37) * K1) & M64
        y = (_rot((y + v[1] + _f64(s, i + 48)) & M64, 42) * K1) & M64
        x ^= w[1]
        y ^= v[0]
        z = _rot(z ^ w[0], 33)
        v = _weak32(s, i, (v[1] * K1) & M64, (x + w[0]) & M64)
        w = _weak32(s, i + 32, (z + w[1]) & M64, y)
        z, x = x, z
        i += 64
        left -= 64
        if left == 0:
            break
    return _len16(
        (_len16(v[0], w[0]) + _mix(y) * K1 + z) & M64,
        (_len16(v[1], w[1]) + x) & M64,
    )


def category_hash(value: str) -> int:
    """CatBoost's hash of a category: the low 32 bits of CityHash64 of its UTF-8 text."""
    return cityhash64(value.encode("utf-8")) & 0xFFFFFFFF
