-- The operator's inbox: bound, drop policy and counters applied to the entries an RPUSH
-- appended just before, in the same MULTI (producers/bounded_queue.py). Same outcome as
-- inbox.lua (which tenants' producers run as a Redis Function), but the entries' JSON
-- never passes through Lua: converting each argument into Lua and back cost Redis
-- about four times the RPUSH itself.
--
-- KEYS[1] inbox list   KEYS[2] stats hash   KEYS[3] wake list (admission block-pops it)
-- ARGV[1] max length  ARGV[2] policy (drop_newest | drop_oldest)  ARGV[3] local drops to count
-- ARGV[4] entries the RPUSH appended (0: none, the call only counts local drops)
--
-- Returns {enqueued, dropped_newest, dropped_oldest}: drop_newest keeps the call's first
-- entries that fit and trims the rest off the tail (they are this call's: the MULTI is
-- atomic); drop_oldest, when the call appended entries, trims the head down to the bound
-- (the call's own first entries once the older ones are gone), as inbox.lua's one-by-one
-- loop does.
-- No error is raised once the RPUSH has run: every argument has a default.

local inbox_key, stats_key, wake_key = KEYS[1], KEYS[2], KEYS[3]
local max_len = math.max(tonumber(ARGV[1]) or 1, 1)
local drop_oldest = ARGV[2] == 'drop_oldest'
local dropped_local = tonumber(ARGV[3]) or 0
local n = tonumber(ARGV[4]) or 0

local length = redis.call('LLEN', inbox_key)
local enqueued, dropped_newest, dropped_oldest = n, 0, 0
if drop_oldest then
  if n > 0 and length > max_len then
    dropped_oldest = length - max_len
    redis.call('LTRIM', inbox_key, dropped_oldest, -1)
  end
else
  enqueued = math.max(0, math.min(n, max_len - (length - n)))
  dropped_newest = n - enqueued
  if dropped_newest > 0 then
    redis.call('LTRIM', inbox_key, 0, -(dropped_newest + 1))
  end
end

if enqueued > 0 then
  redis.call('LPUSH', wake_key, '1')
  redis.call('LTRIM', wake_key, 0, 0)
end
redis.call('HINCRBY', stats_key, 'published', n)
if enqueued > 0 then redis.call('HINCRBY', stats_key, 'enqueued', enqueued) end
if dropped_newest > 0 then redis.call('HINCRBY', stats_key, 'dropped_newest', dropped_newest) end
if dropped_oldest > 0 then redis.call('HINCRBY', stats_key, 'dropped_oldest', dropped_oldest) end
if dropped_local > 0 then redis.call('HINCRBY', stats_key, 'dropped_local', dropped_local) end

return {enqueued, dropped_newest, dropped_oldest}
