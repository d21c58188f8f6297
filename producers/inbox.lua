-- Atomic bounded append of a batch of turns to an inbox (SPEC §3, §8).
--
-- Every producer appends the (redacted) TurnEvent JSON to an inbox: the operator's
-- through EVALSHA, a tenant's (which may touch only its own keys) as a Redis Function.
-- Admission moves inbox entries into RQ batch jobs (workers/ingest/admission.py). The
-- bound and the drop policy apply here, in one atomic step per batch; duplicates are
-- found at admission (the ingested markers are not a tenant's keys).
--
-- KEYS[1] inbox list   KEYS[2] stats hash   KEYS[3] wake list (admission block-pops it)
-- ARGV[1] max length  ARGV[2] policy (drop_newest | drop_oldest)  ARGV[3] local drops to count
-- then one argument per event: its JSON
--
-- Returns one code per event: 1 enqueued, 2 dropped (drop_newest); followed by the number
-- of older entries evicted (drop_oldest).

local HEAD = 3
local ENQUEUED, DROPPED_NEWEST = 1, 2
-- Bounded in time by construction: one call takes at most this many events (the
-- publisher sends 256), and every loop below runs at most once per event.
local MAX_EVENTS = 4096

local inbox_key, stats_key, wake_key = KEYS[1], KEYS[2], KEYS[3]
local max_len = tonumber(ARGV[1])
local drop_oldest = ARGV[2] == 'drop_oldest'
local dropped_local = tonumber(ARGV[3])

local n = #ARGV - HEAD
if n > MAX_EVENTS then
  return redis.error_reply('ERR at most ' .. MAX_EVENTS .. ' events per call')
end
if not max_len or max_len < 1 or not dropped_local then
  return redis.error_reply('ERR max length and local drops must be numbers')
end
local codes = {}
local enqueued, dropped_newest, dropped_oldest = 0, 0, 0
local length = redis.call('LLEN', inbox_key)
-- Entries accepted in this call, pushed with one RPUSH at the end; `length` counts them.
local pushes, first_push = {}, 1

for i = 1, n do
  if length >= max_len and not drop_oldest then
    dropped_newest = dropped_newest + 1
    codes[i] = DROPPED_NEWEST
  else
    while length >= max_len do
      -- the oldest is at the list's head; once the list is empty, the first of this call
      if not redis.call('LPOP', inbox_key) then
        if first_push > #pushes then break end
        first_push = first_push + 1
      end
      dropped_oldest = dropped_oldest + 1
      length = length - 1
    end
    pushes[#pushes + 1] = ARGV[HEAD + i]
    length = length + 1
    enqueued = enqueued + 1
    codes[i] = ENQUEUED
  end
end

if first_push <= #pushes then
  redis.call('RPUSH', inbox_key, unpack(pushes, first_push, #pushes))
  redis.call('LPUSH', wake_key, '1')
  redis.call('LTRIM', wake_key, 0, 0)
end
redis.call('HINCRBY', stats_key, 'published', n)
if enqueued > 0 then redis.call('HINCRBY', stats_key, 'enqueued', enqueued) end
if dropped_newest > 0 then redis.call('HINCRBY', stats_key, 'dropped_newest', dropped_newest) end
if dropped_oldest > 0 then redis.call('HINCRBY', stats_key, 'dropped_oldest', dropped_oldest) end
if dropped_local > 0 then redis.call('HINCRBY', stats_key, 'dropped_local', dropped_local) end

codes[n + 1] = dropped_oldest
return codes
