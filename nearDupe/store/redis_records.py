"""Binary records of the Redis index, as Python writes them and the Lua scripts read them.

See the key layout in :mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

from nearDupe.shorttext import Sentences, letters

#: Bytes of a fingerprint or a sentence hash (big-endian).
FP = 8
#: Bytes of a letter count (big-endian).
LETTERS = 4
#: Bytes of a key's length before the key (big-endian).
LENGTH = 4
#: Bytes of a signature record: a flag (1: a signature follows) and 8 bytes big-endian.
RECORD = 1 + FP
#: Bytes of a sentence holder's head: fingerprint, the page's sentence letters, key length.
HOLDER = FP + LETTERS + LENGTH


def signature_record(signature: int | None) -> bytes:
    """A signature as stored before each key (all zero bytes: none)."""
    if signature is None:
        return bytes(RECORD)
    return b"\x01" + signature.to_bytes(8, "big")


def entry(record: bytes, key: str) -> bytes:
    """One page as stored under its fingerprint: signature record, key length, key."""
    return record + _sized(key.encode())


def packed_sentences(sentences: Sentences) -> bytes:
    """A page's sentences as the check-and-add script reads them: 8-byte hash, 4-byte letters."""
    return b"".join(h.to_bytes(8, "big") + n.to_bytes(4, "big") for h, n in sentences)


def sentence_entry(fp: int, sentences: Sentences, key: str) -> bytes:
    """One page as stored under each of its sentences: fingerprint, sentence letters, key."""
    data = key.encode()
    return fp.to_bytes(8, "big") + letters(sentences).to_bytes(4, "big") + _sized(data)


def sentence_entries(value: bytes) -> list[tuple[str, int, int]]:
    """(key, fingerprint, sentence letters) of every page stored under one sentence."""
    out = []
    i = 0
    while i + HOLDER <= len(value):
        n = int.from_bytes(value[i + FP + LETTERS : i + HOLDER], "big")
        fp = int.from_bytes(value[i : i + FP], "big")
        page_letters = int.from_bytes(value[i + FP : i + FP + LETTERS], "big")
        out.append((value[i + HOLDER : i + HOLDER + n].decode(), fp, page_letters))
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
