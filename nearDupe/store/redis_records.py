"""Binary records of the Redis index, as Python writes them and the Lua scripts read them.

See the key layout in :mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

from nearDupe.shorttext import Sentences
from nearDupe.store.base import Holder

#: Bytes of a fingerprint or a sentence hash (big-endian).
FP = 8
#: Bytes of a letter count (big-endian).
LETTERS = 4
#: Bytes of a key's length before the key (big-endian).
LENGTH = 4
#: Bytes of a signature record: a flag (1: a signature follows) and 8 bytes big-endian.
RECORD = 1 + FP
#: Bytes of a sentence holder's head: fingerprint, the letters of the page's sentences and of
#: those it is recorded under, key length.
HOLDER = FP + 2 * LETTERS + LENGTH


def signature_record(signature: int | None) -> bytes:
    """A signature as stored before each key (all zero bytes: none)."""
    if signature is None:
        return bytes(RECORD)
    return b"\x01" + signature.to_bytes(8, "big")


def entry(record: bytes, key: str) -> bytes:
    """One page as stored under its fingerprint: signature record, key length, key."""
    return record + _sized(key.encode())


def packed_sentences(sentences: Sentences) -> bytes:
    """A page's sentences as the check-and-add script reads them: 8-byte hash, 4-byte letters,
    smallest hash first."""
    return b"".join(h.to_bytes(8, "big") + n.to_bytes(4, "big") for h, n in sorted(sentences))


def sentence_key(fp: int, key: str) -> bytes:
    """The fingerprint and key of a page as it is stored under its sentences (the check-and-add
    script puts the letter counts between them)."""
    return fp.to_bytes(8, "big") + key.encode()


def sentence_holders(sentence: int, value: bytes) -> list[Holder]:
    """Every page stored under one sentence."""
    out = []
    i = 0
    while i + HOLDER <= len(value):
        n = int.from_bytes(value[i + HOLDER - LENGTH : i + HOLDER], "big")
        fp = int.from_bytes(value[i : i + FP], "big")
        page_letters = int.from_bytes(value[i + FP : i + FP + LETTERS], "big")
        sampled = int.from_bytes(value[i + FP + LETTERS : i + FP + 2 * LETTERS], "big")
        key = value[i + HOLDER : i + HOLDER + n].decode()
        out.append(Holder(sentence, key, fp, page_letters, sampled))
        i += HOLDER + n
    return out


def _sized(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def entries(value: bytes) -> list[tuple[str, int | None]]:
    """(key, signature) of every page in a stored value, oldest first."""
    out = []
    i = 0
    while i + RECORD + LENGTH <= len(value):
        n = int.from_bytes(value[i + RECORD : i + RECORD + LENGTH], "big")
        start = i + RECORD + LENGTH
        signature = int.from_bytes(value[i + 1 : i + RECORD], "big") if value[i] == 1 else None
        out.append((value[start : start + n].decode(), signature))
        i = start + n
    return out
