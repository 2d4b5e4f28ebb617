"""The few Lua scripts of the Redis index: each touches one bucket (one slot), none scans.

The Hamming work and the rules (nearDupe.store.base) run on the crawlers; these scripts only
append or remove a record in one string so that it keeps its exact size (APPEND grows a
string's allocation greedily: 150 appends of 6 bytes cost 2,096 B instead of 1,072).
"""

from __future__ import annotations

import re

from nearDupe.store.redis_records import FP, LENGTH, PAGE_HEAD

#: Names the scripts use for Python's constants, written in as literals (whole words).
_CONSTANTS = {"FP": str(FP), "LENGTH": str(LENGTH), "PAGE_HEAD": str(PAGE_HEAD)}
_NAMED = re.compile(r"\b(" + "|".join(_CONSTANTS) + r")\b")


def _fill(script: str) -> str:
    """A script with the constants' values in place of their names."""
    return _NAMED.sub(lambda m: _CONSTANTS[m.group(1)], script)


# Where the record at byte i of a bucket ends: fixed records of `size` bytes, or (size 0)
# page records, whose key length sits at the end of their head.
_RECORDS = """
local function record_end(v, i, size)
  if size > 0 then return i + size - 1 end
  local a, b = string.byte(v, i + PAGE_HEAD - LENGTH, i + PAGE_HEAD - 1)
  return i + PAGE_HEAD - 1 + a * 256 + b
end

local function find(v, rec, size)
  local i = 1
  while i <= #v do
    local e = record_end(v, i, size)
    if string.sub(v, i, e) == rec then return i, e end
    i = e + 1
  end
  return nil
end
"""

# KEYS: bucket, its lease.  ARGV: token, record size, records.  If the lease is still this
# token's: append each record not already there (one SET: exact size), end the lease, 1.
# Else 0 (the lease expired and may be another crawler's: nothing written).
LUA_COMMIT = _fill(
    _RECORDS
    + """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local size = tonumber(ARGV[2])
if #ARGV > 2 then
  local v = redis.call('GET', KEYS[1]) or ''
  local added = v
  for j = 3, #ARGV do
    if not find(v, ARGV[j], size) then added = added .. ARGV[j] end
  end
  if #added > #v then redis.call('SET', KEYS[1], added) end
end
redis.call('DEL', KEYS[2])
return 1
"""
)

# KEYS: page bucket.  ARGV: page record.  Appends it unless there already (a retried call);
# returns {its ordinal among the records of its fingerprint, 1 if appended}.
LUA_ADD_PAGE = _fill(
    _RECORDS
    + """
local v, rec = redis.call('GET', KEYS[1]) or '', ARGV[1]
local fp, nth, i = string.sub(rec, 1, FP), 0, 1
while i <= #v do
  local e = record_end(v, i, 0)
  if string.sub(v, i, e) == rec then return {nth, 0} end
  if string.sub(v, i, i + FP - 1) == fp then nth = nth + 1 end
  i = e + 1
end
redis.call('SET', KEYS[1], v .. rec)
return {nth, 1}
"""
)

# KEYS: bucket.  ARGV: record, record size (0: page records).  Removes the record if there
# (undoing the writes of a crawl whose lease expired); returns 1 if it was.
LUA_REMOVE = _fill(
    _RECORDS
    + """
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local i, e = find(v, ARGV[1], tonumber(ARGV[2]))
if not i then return 0 end
redis.call('SET', KEYS[1], string.sub(v, 1, i - 1) .. string.sub(v, e + 1))
return 1
"""
)

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
