"""Binary records of the Redis index, as Python writes them and the Lua scripts read them.

See the key layout in :mod:`nearDupe.store.redis`.
"""

from __future__ import annotations

from nearDupe.shorttext import Sentences
from nearDupe.store.base import TAIL_BYTES, Holder, Sketch

#: Bytes of a fingerprint or a sentence hash (big-endian).
FP = 8
#: Bytes of a letter count (big-endian).
LETTERS = 4
#: Bytes of a key's length before the key (big-endian).
LENGTH = 4
#: Bytes of a signature record: a flag (1: a signature follows) and 8 bytes big-endian.
RECORD = 1 + FP
#: Bytes of a sentence holder's head: fingerprint, the letters of the page's sentences and of
#: its sketched ones, the number of sketch tails (then the tails, key length and key).
HOLDER = FP + 2 * LETTERS + 1
#: Bytes of a sketch tail.
TAIL = TAIL_BYTES


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


def sentence_entry(fp: int, sketch: Sketch, key: str) -> bytes:
    """A page as stored under each sentence it is recorded under: fingerprint, sketch, key."""
    head = fp.to_bytes(FP, "big") + sketch.letters.to_bytes(LETTERS, "big")
    count = len(sketch.tails) // TAIL
    head += sketch.sketched.to_bytes(LETTERS, "big") + count.to_bytes(1, "big")
    return head + sketch.tails + _sized(key.encode())


def sentence_holders(sentence: int, value: bytes) -> list[Holder]:
    """Every page stored under one sentence."""
    out = []
    i = 0
    while i + HOLDER <= len(value):
        fp = int.from_bytes(value[i : i + FP], "big")
        page_letters = int.from_bytes(value[i + FP : i + FP + LETTERS], "big")
        sketched = int.from_bytes(value[i + FP + LETTERS : i + FP + 2 * LETTERS], "big")
        tails_end = i + HOLDER + TAIL * value[i + HOLDER - 1]
        n = int.from_bytes(value[tails_end : tails_end + LENGTH], "big")
        key = value[tails_end + LENGTH : tails_end + LENGTH + n].decode()
        sketch = Sketch(page_letters, sketched, value[i + HOLDER : tails_end])
        out.append(Holder(sentence, key, fp, sketch))
        i = tails_end + LENGTH + n
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
