-- Atomic bounded enqueue of a batch of RQ jobs (SPEC §3).
--
-- For each event, in one atomic step: skip duplicates (ingested marker set, or a live job
-- hash with the same id), check the queue length, apply the drop policy, write the RQ job
-- hash the way RQ 2.x `Job.save` does, push the id the way `Queue.push_job_id` does, count.
--
-- KEYS[1] queue list (rq:queue:<name>)   KEYS[2] rq:queues   KEYS[3] stats hash
-- KEYS[4] failed registry (rq:failed:<name>)
--
-- ARGV[1] max length  ARGV[2] policy (drop_newest | drop_oldest)  ARGV[3] origin (queue name)
-- ARGV[4] timeout  ARGV[5] result_ttl  ARGV[6] failure_ttl  ARGV[7] retries_left
-- ARGV[8] retry_intervals (JSON)  ARGV[9] enqueued_at (= created_at: the job object is made
-- when the batch is sent)  ARGV[10] job key prefix (rq:job:)  ARGV[11] ingested marker
-- prefix  ARGV[12] description prefix  ARGV[13] local drops to count
-- then two arguments per event: job id, data
--
-- The job hash layout is RQ's (producers/rq_internals.py owns it; its tests read the hash
-- back with RQ's Job.fetch). The retry fields are RQ's Retry(max, interval) of the one
-- retry policy (schemas/defaults.py): a job that fails on a transient error (graph or
-- Redis restarting), or is abandoned by a killed worker, runs again later through RQ's
-- scheduler instead of landing in the failed registry. Permanent errors fail at once.
--
-- Job and marker keys are built here from their prefixes, as RQ's own scripts do; like RQ,
-- this needs a standalone Redis (or Sentinel), not Cluster.
--
-- Returns one code per event: 1 enqueued, 2 dropped (drop_newest), 3 duplicate;
-- followed by the number of older jobs evicted (drop_oldest).

local HEAD = 13
local PER_EVENT = 2
local ENQUEUED, DROPPED_NEWEST, DUPLICATE = 1, 2, 3
-- A job in one of these states is (or was) on its way to the graph: a duplicate.
-- failed / stopped / canceled jobs may be published again.
local LIVE = {queued = true, started = true, deferred = true, scheduled = true, finished = true}

local queue_key, queues_key, stats_key, failed_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local max_len = tonumber(ARGV[1])
local drop_oldest = ARGV[2] == 'drop_oldest'
local origin, timeout, result_ttl, failure_ttl = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local retries, retry_intervals = ARGV[7], ARGV[8]
local enqueued_at, job_prefix, marker_prefix, description_prefix = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local dropped_local = tonumber(ARGV[13])

local n = (#ARGV - HEAD) / PER_EVENT
local codes = {}
local enqueued, dropped_newest, dropped_oldest, duplicates = 0, 0, 0, 0

redis.call('SADD', queues_key, queue_key)
local length = redis.call('LLEN', queue_key)
-- Ids accepted in this call, pushed with one RPUSH at the end; `length` counts them.
local pushes, first_push = {}, 1

for i = 1, n do
  local a = HEAD + (i - 1) * PER_EVENT
  local job_id, data = ARGV[a + 1], ARGV[a + 2]
  local job_key, marker_key = job_prefix .. job_id, marker_prefix .. job_id
  -- one EXISTS for both keys: the common case (a new event) costs a single call
  local status = false
  local seen = redis.call('EXISTS', job_key, marker_key) > 0
  if seen then
    status = redis.call('HGET', job_key, 'status')
    seen = redis.call('EXISTS', marker_key) == 1 or (status and LIVE[status])
  end
  if seen then
    duplicates = duplicates + 1
    codes[i] = DUPLICATE
  elseif length >= max_len and not drop_oldest then
    dropped_newest = dropped_newest + 1
    codes[i] = DROPPED_NEWEST
  else
    while length >= max_len do
      -- the oldest is at the list's head; once the list is empty, the first of this call
      local oldest = redis.call('LPOP', queue_key)
      if not oldest then
        if first_push > #pushes then break end
        oldest = pushes[first_push]
        first_push = first_push + 1
      end
      redis.call('DEL', job_prefix .. oldest)
      dropped_oldest = dropped_oldest + 1
      length = length - 1
    end
    if status then
      -- a failed / stopped / canceled run of the same event: start from a clean hash
      redis.call('DEL', job_key)
      redis.call('ZREM', failed_key, job_id)
    end
    redis.call('HSET', job_key,
      'status', 'queued',
      'created_at', enqueued_at,
      'data', data,
      'origin', origin,
      'description', description_prefix .. job_id .. ')',
      'enqueued_at', enqueued_at,
      'timeout', timeout,
      'result_ttl', result_ttl,
      'failure_ttl', failure_ttl,
      'retries_left', retries,
      'retry_intervals', retry_intervals)
    pushes[#pushes + 1] = job_id
    length = length + 1
    enqueued = enqueued + 1
    codes[i] = ENQUEUED
  end
end

if first_push <= #pushes then
  redis.call('RPUSH', queue_key, unpack(pushes, first_push, #pushes))
end
redis.call('HINCRBY', stats_key, 'published', n)
if enqueued > 0 then redis.call('HINCRBY', stats_key, 'enqueued', enqueued) end
if dropped_newest > 0 then redis.call('HINCRBY', stats_key, 'dropped_newest', dropped_newest) end
if dropped_oldest > 0 then redis.call('HINCRBY', stats_key, 'dropped_oldest', dropped_oldest) end
if duplicates > 0 then redis.call('HINCRBY', stats_key, 'duplicates', duplicates) end
if dropped_local > 0 then redis.call('HINCRBY', stats_key, 'dropped_local', dropped_local) end

codes[n + 1] = dropped_oldest
return codes
