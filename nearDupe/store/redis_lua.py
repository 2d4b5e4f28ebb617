"""The Lua scripts of the Redis index: one call per node and phase, none scans.

The Hamming work and the rules (nearDupe.store.base) run on the crawlers, which read the
buckets with plain commands; these scripts take and end leases, check that buckets have not
grown, and write records, for all of one check's keys on one node (the flag
``allow-cross-slot-keys`` of Redis 7 lets a script reach keys of several slots on its node;
KEYS[1] only routes it).  A bucket keeps its exact size: APPEND grows a string's allocation
greedily (to twice its bytes), so the commit copies it after appending (COPY allocates the
bytes exactly) and renames the copy back; a bucket's bytes never enter Lua.
"""

from __future__ import annotations

import re

from nearDupe.store.redis_layout import LEASE, WRITING
from nearDupe.store.redis_records import LENGTH, PAGE_HEAD, STORED_FP, WRITER

#: Each key's length as a lease's or a commit's caller read it (-1: not checked), packed
#: together into one argument (Python's ``struct`` writes it, Lua's ``struct`` reads it as
#: SPEC): one argument a key fewer, each costs the crawler ~2 us to encode.
SPEC_PACKED = ">i"
SPEC = ">i4"

#: Names the scripts use for Python's constants, written in as literals (whole words).
_CONSTANTS = {
    "STORED_FP": str(STORED_FP),
    "WRITER": str(WRITER),
    "LENGTH": str(LENGTH),
    "PAGE_HEAD": str(PAGE_HEAD),
    "LEASE": f"'{LEASE}'",
    "SPEC": f"'{SPEC}'",
    "WRITING": f"'{WRITING}'",
}
_NAMED = re.compile(r"\b(" + "|".join(_CONSTANTS) + r")\b")


def _fill(script: str) -> str:
    """A script with the constants' values in place of their names."""
    return _NAMED.sub(lambda m: _CONSTANTS[m.group(1)], script)


_CROSS_SLOT = "#!lua flags=allow-cross-slot-keys\n"

# Where the page record at byte i of a page bucket ends (its key length sits at the end of
# its head); and where the page record starting with `id` (fingerprint and writer) is,
# walking the records only if a plain C search finds those bytes somewhere (walking a page
# bucket of 10^7 pages' index, ~38 records, cost the commit more).
_RECORDS = """
local function record_end(v, i)
  local a, b = string.byte(v, i + PAGE_HEAD - LENGTH, i + PAGE_HEAD - 1)
  return i + PAGE_HEAD - 1 + a * 256 + b
end

local function find_page(v, id)
  if not string.find(v, id, 1, true) then return false end
  local i = 1
  while i <= #v do
    if string.sub(v, i, i + #id - 1) == id then return i end
    i = record_end(v, i) + 1
  end
  return false
end
"""

# Whether a key of ARGV[first..] has another length than the caller read (packed in `spec`
# as SPEC); and the value of each of those keys, appended to `out`.
_GROWN = """
local function grown(spec, first)
  local at, seen = 1
  for i = first, #ARGV do
    seen, at = struct.unpack(SPEC, spec, at)
    if redis.call('STRLEN', ARGV[i]) ~= seen then return true end
  end
  return false
end

local function values(out, first)
  for j = first, #ARGV do out[#out + 1] = redis.call('GET', ARGV[j]) or '' end
  return out
end
"""

# ARGV: token, lease ms, the length of each key as the caller read it (packed as SPEC), then
# the keys.  If no key's lease is another token's: lease them all and return {1} if each key
# still has that length (buckets only grow), else {1, value of each key}; else take none
# (ending those this call took) and return {0}, or {0, 1, value of each key} if a key grew
# (the caller decides again at once, without waiting for the lease: what was written is
# most often its copy).
LUA_ACQUIRE = _fill(
    _CROSS_SLOT
    + _GROWN
    + """
local token, ms, spec = ARGV[1], ARGV[2], ARGV[3]
for i = 4, #ARGV do
  if not redis.call('SET', ARGV[i] .. LEASE, token, 'NX', 'PX', ms)
      and redis.call('GET', ARGV[i] .. LEASE) ~= token then
    for j = 4, i - 1 do redis.call('DEL', ARGV[j] .. LEASE) end
    if grown(spec, 4) then return values({0, 1}, 4) end
    return {0}
  end
end
if grown(spec, 4) then return values({1}, 4) end
return {1}
"""
)

# ARGV: the length of each key as the caller read it (packed as SPEC), then the keys (all
# on one node).  Returns {} if each still has that length, else the value of each key: what
# a check waiting for leases on an earlier node learns of these (no lease taken).
LUA_GROWN = _fill(
    _CROSS_SLOT
    + _GROWN
    + """
if grown(ARGV[1], 2) then return values({}, 2) end
return {}
"""
)

# ARGV: token, page bucket ('' for none), page record, the counter to raise if the page
# record is appended ('' for none: on another node), '1' if an earlier attempt of this call
# may have appended the page record, each key's length as the caller read it (-1: not
# checked; -2 - length: a key this attempt leased, comparing that length, so not measured
# again while this token's lease on it lives: no other crawler writes to it) packed as SPEC,
# '1' if one MGET may read every key's lease (a single Redis; a cluster's node refuses a
# command over several slots, and a single Redis sees leases only from crawlers of an older
# version), then per key: key, the records to append to it (one string; the caller leaves
# out those its read found there).  If no key is leased by another token and each checked
# one still has that length (buckets only grow, under their lease if one is taken): append
# the page record (on a retry, unless a record with its fingerprint and writer is there:
# this call's, from an attempt whose reply was lost), then each key's records, end this
# token's leases and return {1, 1 if the page record was appended now}.  Else write
# nothing: {0}.
#
# A bucket grows by APPEND, then COPY to a key of its slot and RENAME back: APPEND leaves
# the string twice as big as its bytes (a greedy allocation), COPY makes it exact.  A bucket
# never enters Lua, which hashes every byte of a string it makes: GET, concatenate and SET
# cost 5.5 us for a bucket of 1.4 KB and 110 us for one of 42 KB (10^8 pages' page bucket),
# these three 2.5 and 8 us.
LUA_COMMIT = _fill(
    _CROSS_SLOT
    + _RECORDS
    + """
local token, spec = ARGV[1], ARGV[6]
local n = (#ARGV - 7) / 2
local keys, records, leases, held, mine = {}, {}, {}, {}, {}
for j = 1, n do keys[j], records[j] = ARGV[6 + 2 * j], ARGV[7 + 2 * j] end
for j = 1, n do leases[j] = keys[j] .. LEASE end
if ARGV[7] == '1' then
  if n > 0 then held = redis.call('MGET', unpack(leases)) end
else
  for j = 1, n do held[j] = redis.call('GET', leases[j]) end
end
local at, seen = 1
for j = 1, n do
  seen, at = struct.unpack(SPEC, spec, at)
  local leased = seen <= -2
  if leased then seen = -2 - seen end
  if held[j] then
    if held[j] ~= token then return {0} end
    mine[#mine + 1] = leases[j]
  end
  if not (leased and held[j]) and seen >= 0 and redis.call('STRLEN', keys[j]) ~= seen then
    return {0}
  end
end
local function append(key, rec)
  redis.call('APPEND', key, rec)
  redis.call('COPY', key, key .. WRITING, 'REPLACE')
  redis.call('RENAME', key .. WRITING, key)
end
-- A key of a slot on the move (resharding) fails the script where it is first touched
-- (a missing key there, as the copies' are, is another node's): every key written is
-- touched before the first write, so that the script writes all or nothing.
if ARGV[4] ~= '' then redis.call('EXISTS', ARGV[4]) end
if ARGV[2] ~= '' then redis.call('EXISTS', ARGV[2] .. WRITING) end
for j = 1, n do
  if #records[j] > 0 then redis.call('EXISTS', keys[j] .. WRITING) end
end
local added = 0
if ARGV[2] ~= '' then
  local rec = ARGV[3]
  if ARGV[5] ~= '1' or not find_page(redis.call('GET', ARGV[2]) or '',
                                     string.sub(rec, 1, STORED_FP + WRITER)) then
    append(ARGV[2], rec)
    added = 1
    if ARGV[4] ~= '' then redis.call('INCR', ARGV[4]) end
  end
end
for j = 1, n do
  if #records[j] > 0 then append(keys[j], records[j]) end
end
for _, lease in ipairs(mine) do redis.call('DEL', lease) end
return {1, added}
"""
)

# ARGV: key, value, key, value, ...  Sets them (a bulk load into an empty index).
LUA_SET = (
    _CROSS_SLOT
    + """
for i = 1, #ARGV, 2 do redis.call('SET', ARGV[i], ARGV[i + 1]) end
return #ARGV / 2
"""
)

# ARGV: token, then keys (all on one node).  Ends this token's leases on them, leaving any
# other token's (one taken after this token's expired); returns how many it ended.
LUA_RELEASE = _fill(
    _CROSS_SLOT
    + """
local ended = 0
for i = 2, #ARGV do
  local lease = ARGV[i] .. LEASE
  if redis.call('GET', lease) == ARGV[1] then
    redis.call('DEL', lease)
    ended = ended + 1
  end
end
return ended
"""
)

# KEYS: page bucket.  ARGV: a page record's fingerprint and writer (its first bytes).
# Removes that record if it is there (undoing the write of a check whose lease expired);
# returns 1 if it was.
LUA_REMOVE = _fill(
    _RECORDS
    + """
local v = redis.call('GET', KEYS[1]) or ''
local i = find_page(v, ARGV[1])
if not i then return 0 end
redis.call('SET', KEYS[1], string.sub(v, 1, i - 1) .. string.sub(v, record_end(v, i) + 1))
return 1
"""
)

# KEYS: header, layout, counter.  ARGV: header, layout, each written if missing.  Returns both
# as stored; 1 if pages were found without a header (written while Redis lost it: re-headed);
# and 1 if this call wrote the header.  An index that has both is only read (no write, which
# a Redis out of memory would refuse), and a script writes whole or not at all: its first
# write is the one Redis may refuse.
LUA_HANDSHAKE = """
local headless, created = 0, 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  headless = redis.call('EXISTS', KEYS[3])
  redis.call('SET', KEYS[1], ARGV[1])
  created = 1
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], ARGV[2])
end
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]), headless, created}
"""
