-- Push a recall request on its shard's list only if a replica has a live claim on that
-- shard (issue 24): the client's check and its push in one round trip.
--
-- KEYS[1] the shard's request list
-- ARGV[1] the shard's claims (sorted set: replica -> when its claim runs out, unix ms)
-- ARGV[2] now (unix ms)   ARGV[3] the request JSON   ARGV[4] the list's TTL (seconds)
--
-- The claims key is an argument, not a declared key: Redis takes every declared key as
-- written, and a tenant's credential may only read the claims (schemas/tenants.py). The
-- ZCOUNT below is still checked against the caller's ACL, like every call in here.
-- (Redis Cluster would need both keys in one slot; turngraph runs on one primary.)
--
-- Returns 1 when pushed, 0 when no claim is live (nothing pushed: the client answers
-- "no replica" at once instead of waiting for its deadline).

if redis.call('ZCOUNT', ARGV[1], ARGV[2], '+inf') == 0 then
  return 0
end
redis.call('RPUSH', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
