"""The ChaCha8 keystream of rand_chacha's ``ChaCha8Rng``, vectorised over seeds.

``ChaCha8Rng::from_seed(seed)`` is ChaCha with 8 rounds, the 32-byte seed as
key, a 64-bit block counter starting at 0 (state words 12–13) and stream 0
(words 14–15). Its output is the keystream read as little-endian u32 words,
block after block; ``gen::<u64>()`` takes two consecutive words, low first.
The DRG draws whole u64s from a fresh generator, so words stay paired.
"""

from __future__ import annotations

import numpy as np

_CONSTANTS = np.frombuffer(b"expand 32-byte k", dtype="<u4")
ROUNDS = 8


def _rotl(x: np.ndarray, n: int) -> np.ndarray:
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


def _quarter(s: list[np.ndarray], a: int, b: int, c: int, d: int) -> None:
    s[a] = s[a] + s[b]
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = s[c] + s[d]
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = s[a] + s[b]
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = s[c] + s[d]
    s[b] = _rotl(s[b] ^ s[c], 7)


def chacha8_words(seeds: np.ndarray, num_words: int) -> np.ndarray:
    """The first ``num_words`` keystream words for each seed.

    ``seeds`` is ``(n, 32)`` uint8; the result is ``(n, num_words)`` uint32.
    """
    seeds = np.ascontiguousarray(seeds, dtype=np.uint8)
    n = seeds.shape[0]
    key = seeds.view("<u4").reshape(n, 8).astype(np.uint32)
    blocks = -(-num_words // 16)
    out = np.empty((n, blocks * 16), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for block in range(blocks):
            init = [np.full(n, c, dtype=np.uint32) for c in _CONSTANTS]
            init += [key[:, i].copy() for i in range(8)]
            init += [
                np.full(n, block & 0xFFFFFFFF, dtype=np.uint32),
                np.full(n, block >> 32, dtype=np.uint32),
                np.zeros(n, dtype=np.uint32),
                np.zeros(n, dtype=np.uint32),
            ]
            s = list(init)
            for _ in range(ROUNDS // 2):
                _quarter(s, 0, 4, 8, 12)
                _quarter(s, 1, 5, 9, 13)
                _quarter(s, 2, 6, 10, 14)
                _quarter(s, 3, 7, 11, 15)
                _quarter(s, 0, 5, 10, 15)
                _quarter(s, 1, 6, 11, 12)
                _quarter(s, 2, 7, 8, 13)
                _quarter(s, 3, 4, 9, 14)
            for i in range(16):
                out[:, block * 16 + i] = s[i] + init[i]
    return out[:, :num_words]


def chacha8_u64s(seeds: np.ndarray, count: int) -> np.ndarray:
    """``count`` successive ``gen::<u64>()`` draws per seed: ``(n, count)`` uint64."""
    words = chacha8_words(seeds, 2 * count).astype(np.uint64)
    return words[:, 0::2] | (words[:, 1::2] << np.uint64(32))


def chacha20_keystream(key: bytes, nonce: bytes, offset: int, length: int) -> bytes:
    """``length`` bytes of the ChaCha20 keystream (RFC 8439: 20 rounds, a 32-bit
    block counter from 0 in word 12, a 96-bit nonce in words 13–15) from byte
    ``offset`` on, as a stream cipher seeked to ``offset`` XORs them; the blocks
    it spans are made at once, one lane each."""
    if len(key) != 32 or len(nonce) != 12:
        raise ValueError("ChaCha20 takes a 32-byte key and a 12-byte nonce")
    if length <= 0:
        return b""
    first, last = offset // 64, (offset + length - 1) // 64
    if last >= 1 << 32:
        raise ValueError("past the end of a ChaCha20 keystream (2^32 blocks)")
    counters = np.arange(first, last + 1, dtype=np.uint64).astype(np.uint32)
    n = len(counters)
    key_words = np.frombuffer(key, dtype="<u4").astype(np.uint32)
    nonce_words = np.frombuffer(nonce, dtype="<u4").astype(np.uint32)
    init = [np.full(n, c, dtype=np.uint32) for c in _CONSTANTS]
    init += [np.full(n, w, dtype=np.uint32) for w in key_words]
    init += [counters] + [np.full(n, w, dtype=np.uint32) for w in nonce_words]
    s = list(init)
    with np.errstate(over="ignore"):
        for _ in range(10):  # 20 rounds: a column round and a diagonal round each
            _quarter(s, 0, 4, 8, 12)
            _quarter(s, 1, 5, 9, 13)
            _quarter(s, 2, 6, 10, 14)
            _quarter(s, 3, 7, 11, 15)
            _quarter(s, 0, 5, 10, 15)
            _quarter(s, 1, 6, 11, 12)
            _quarter(s, 2, 7, 8, 13)
            _quarter(s, 3, 4, 9, 14)
        words = np.stack([s[i] + init[i] for i in range(16)], axis=1)
    stream = words.astype("<u4").tobytes()
    start = offset - first * 64
    return stream[start : start + length]
