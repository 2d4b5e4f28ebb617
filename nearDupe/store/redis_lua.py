"""The Lua scripts of the Redis index: atomic check-and-add, query, handshake, bulk load.

They decode the records of :mod:`nearDupe.store.redis_records`; the rules they repeat (the
confirmation bound, the shared-sentence copy rule) are written in Python in
:mod:`nearDupe.store.base`, and the contract tests run both backends on the same cases.
"""

from __future__ import annotations

import re

from nearDupe.shorttext import SENTENCE_PAGE_LETTERS
from nearDupe.store.base import (
    NO_CONFIRMATION,
    SAMPLE_SENTENCES,
    SENTENCE_CONTAINED,
    SENTENCE_HOLDERS,
)
from nearDupe.store.redis_records import FP, HOLDER, LENGTH, LETTERS, RECORD, TAIL

#: Names the scripts use for Python's constants, written in as literals (whole words).
_CONSTANTS = {
    "NO_CONFIRMATION": str(NO_CONFIRMATION),
    "SENTENCE_CONTAINED": repr(SENTENCE_CONTAINED),
    "SENTENCE_HOLDERS": str(SENTENCE_HOLDERS),
    "SAMPLE_SENTENCES": str(SAMPLE_SENTENCES),
    "SENTENCE_PAGE_LETTERS": str(SENTENCE_PAGE_LETTERS),
    "RECORD": str(RECORD),
    "LENGTH": str(LENGTH),
    "FP": str(FP),
    "LETTERS": str(LETTERS),
    "HOLDER": str(HOLDER),
    "TAIL": str(TAIL),
}
_NAMED = re.compile(r"\b(" + "|".join(_CONSTANTS) + r")\b")


def _fill(script: str) -> str:
    """A script with the constants' values in place of their names."""
    return _NAMED.sub(lambda m: _CONSTANTS[m.group(1)], script)


LUA_COMMON = """
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local byte = string.byte

local function popcount(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  x = x + rshift(x, 16)
  return band(x, 0x3F)
end

local function halves(s, i)
  local a, b, c, d, e, f, g, h = byte(s, i, i + 7)
  return ((a * 256 + b) * 256 + c) * 256 + d, ((e * 256 + f) * 256 + g) * 256 + h
end

local function uint32(s, i)
  local a, b, c, d = byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end


-- Whether a candidate at distance d is confirmed: d plus the distance of two signature
-- records (a flag byte, 0 for none, then 8 bytes) is at most ck.
local function confirms(record, sig, d, ck)
  if ck >= NO_CONFIRMATION or byte(sig, 1) == 0 or byte(record, 1) == 0 then
    return true
  end
  local shi, slo = halves(record, 2)
  local qhi, qlo = halves(sig, 2)
  return d + popcount(bxor(shi, qhi)) + popcount(bxor(slo, qlo)) <= ck
end

-- The key of the first page in a stored value (entries: record, 4-byte length, key) whose
-- signature record confirms sig at distance d, or nil.
local function confirmed_key(value, sig, d, ck)
  local i = 1
  while i + RECORD + LENGTH - 1 <= #value do
    local n = uint32(value, i + RECORD)
    if confirms(string.sub(value, i, i + RECORD - 1), sig, d, ck) then
      return string.sub(value, i + RECORD + LENGTH, i + RECORD + LENGTH - 1 + n)
    end
    i = i + RECORD + LENGTH + n
  end
  return nil
end

-- Every distinct fingerprint within k of fp in the buckets KEYS[first..]: {fp, hi, lo, d}.
local function near(first, fp, k)
  local qhi, qlo = halves(fp, 1)
  local seen, out = {}, {}
  for t = first, #KEYS do
    local s = redis.call('GET', KEYS[t])
    if s then
      for i = 1, #s, 8 do
        local hi, lo = halves(s, i)
        local d = popcount(bxor(hi, qhi))
        if d <= k then
          d = d + popcount(bxor(lo, qlo))
          local found = string.sub(s, i, i + 7)
          if d <= k and not seen[found] then
            seen[found] = true
            out[#out + 1] = {found, hi, lo, d}
          end
        end
      end
    end
  end
  return out
end
"""

# KEYS: keys hash, counter, sentences hash, one bucket per table.
# ARGV: fp (8 bytes), k, key, retried (0/1), signature record (9 bytes), confirm_k, entry,
# sentences (8-byte hash and 4-byte letters each, smallest hash first), sentence share, the
# page as its sentences hold it (redis_records.sentence_entry).
# Returns nil when the page was recorded, else {fp (8 bytes), distance, stored key} or, for a
# match by sentences, {fp, -1, stored key, share}.
LUA_CHECK_AND_ADD = (
    LUA_COMMON
    + """
if redis.call('EXISTS', KEYS[4]) == 0 then
  return redis.error_reply('NO_HEADER')
end
local fp, k, key, retried = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local sig, ck, entry = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local sentences, share, sentence_entry = ARGV[8], tonumber(ARGV[9]), ARGV[10]
local found = near(5, fp, k)
table.sort(found, function(a, b)
  if a[4] ~= b[4] then return a[4] < b[4] end
  if a[2] ~= b[2] then return a[2] < b[2] end
  return a[3] < b[3]
end)
for _, m in ipairs(found) do
  local stored = confirmed_key(redis.call('HGET', KEYS[1], m[1]) or '', sig, m[4], ck)
  if stored then
    if m[4] == 0 and retried == '1' and stored == key then
      return nil
    end
    return {m[1], m[4], stored}
  end
end
-- The stored page whose sketch finds the largest share of both pages' sentence letters (see
-- nearDupe.store.base.shared_sentences).
local total, mine, holders = 0, {}, {}
for i = 1, #sentences, FP + LETTERS do
  local n, tail = uint32(sentences, i + FP), string.sub(sentences, i + FP - TAIL, i + FP - 1)
  total = total + n
  mine[tail] = math.max(n, mine[tail] or 0)
end
local seen, best, best_share, single = {}, nil, -1, math.min(1, 2 * share)
for i = 1, #sentences, FP + LETTERS do
  local h = string.sub(sentences, i, i + FP - 1)
  local value = redis.call('HGET', KEYS[3], h) or ''
  local j, held = 1, 0
  while j + HOLDER - 1 <= #value do
    local tails_end = j + HOLDER + TAIL * byte(value, j + HOLDER - 1)
    local len = uint32(value, tails_end)
    local page = string.sub(value, j, j + FP - 1)
      .. string.sub(value, tails_end + LENGTH, tails_end + LENGTH - 1 + len)
    if not seen[page] then
      seen[page] = true
      local common, count, met = 0, 0, {}
      for t = j + HOLDER, tails_end - 1, TAIL do
        local tail = string.sub(value, t, t + TAIL - 1)
        if mine[tail] and not met[tail] then
          met[tail] = true
          common, count = common + mine[tail], count + 1
        end
      end
      if count > 0 then
        local of_stored = math.min(1, common / uint32(value, j + FP + LETTERS))
        local of_query = math.min(1, of_stored * uint32(value, j + FP) / total)
        local s = math.min(of_query, of_stored)
        local needed = share
        if count == 1 then
          needed = single
        end
        if s >= needed and math.max(of_query, of_stored) >= SENTENCE_CONTAINED
            and s > best_share then
          best, best_share = page, s
        end
      end
    end
    held = held + 1
    j = tails_end + LENGTH + len
  end
  holders[#holders + 1] = {h, value, held}
end
if best then
  return {string.sub(best, 1, FP), -1, string.sub(best, FP + 1), tostring(best_share)}
end
-- Recorded under every sentence of a short page, the SAMPLE_SENTENCES smallest hashes of a
-- longer one (nearDupe.store.base.recorded); never under one held by SENTENCE_HOLDERS pages.
local recorded = 0
for _, h in ipairs(holders) do
  local room = total < SENTENCE_PAGE_LETTERS or recorded < SAMPLE_SENTENCES
  if h[3] < SENTENCE_HOLDERS and room then
    recorded = recorded + 1
    redis.call('HSET', KEYS[3], h[1], h[2] .. sentence_entry)
  end
end
local pages = redis.call('HGET', KEYS[1], fp)
if not pages then
  for t = 5, #KEYS do
    redis.call('APPEND', KEYS[t], fp)
  end
  pages = ''
end
redis.call('HSET', KEYS[1], fp, pages .. entry)
redis.call('INCR', KEYS[2])
return nil
"""
)

# KEYS: keys hash, one bucket per table.  ARGV: fp (8 bytes), k, signature record, confirm_k.
# Returns {fp, distance, key, fp, distance, key, ...} for every stored fp within k whose
# signature confirms (unordered).
LUA_QUERY = (
    LUA_COMMON
    + """
local out = {}
for _, m in ipairs(near(2, ARGV[1], tonumber(ARGV[2]))) do
  local stored = confirmed_key(redis.call('HGET', KEYS[1], m[1]) or '', ARGV[3], m[4],
                               tonumber(ARGV[4]))
  if stored then
    out[#out + 1] = m[1]
    out[#out + 1] = m[4]
    out[#out + 1] = stored
  end
end
return out
"""
)

# KEYS: header, layout, counter.  ARGV: header JSON, layout JSON.
# KEYS: header, layout, counter.  ARGV: header, layout.  Returns both as stored, and 1 if
# pages were found without a header (written while Redis lost it: re-headed, see _reheaded).
LUA_HANDSHAKE = """
local headless = 0
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  headless = 1
end
redis.call('SET', KEYS[1], ARGV[1], 'NX')
redis.call('SET', KEYS[2], ARGV[2], 'NX')
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]), headless}
"""

# KEYS: keys hash, counter.  ARGV: fp, entry, fp, entry, ... (entry: see the key layout).
# First entry per fingerprint wins and
# only new fingerprints are counted, so a retried chunk does not count twice.
LUA_ADD_KEYS = """
local added = 0
for i = 1, #ARGV, 2 do
  added = added + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
end
return redis.call('INCRBY', KEYS[2], added)
"""

# KEYS: buckets.  ARGV: packed records for each bucket, in the same order.
LUA_APPEND = """
for i = 1, #KEYS do
  redis.call('APPEND', KEYS[i], ARGV[i])
end
return #KEYS
"""

LUA_CHECK_AND_ADD = _fill(LUA_CHECK_AND_ADD)
LUA_QUERY = _fill(LUA_QUERY)
LUA_HANDSHAKE = _fill(LUA_HANDSHAKE)
LUA_ADD_KEYS = _fill(LUA_ADD_KEYS)
LUA_APPEND = _fill(LUA_APPEND)
