/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type BridgeRequest = PublishRequest | RecallBridgeRequest | FlushRequest | StatusRequest;
export type Name = string;
export type Version = string;
export type Content = string;
/**
 * Idempotency key; default: a stable hash of session, turn index and role.
 */
export type EventId = string;
export type Branch = string | null;
export type Commit = string | null;
export type Dirty = boolean | null;
export type Repository = string | null;
export type Importance = number;
/**
 * ISO 8601 with a timezone; default: when the bridge reads it.
 */
export type OccurredAt = string | null;
export type Kind = "file" | "plan" | "branch" | "issue" | "pull_request" | "commit" | "url" | "other";
export type Value = string;
/**
 * @maxItems 100
 */
export type References = Reference[];
export type Role = "user" | "assistant" | "system" | "tool";
/**
 * A raw scope key (e.g. the workspace folder's path); the bridge hashes it with the installation's salt before anything leaves this machine.
 */
export type SessionId = string;
export type Speaker = string;
/**
 * @maxItems 50
 */
export type Tags = string[];
export type TurnIndex = number;
/**
 * A raw scope key (e.g. the workspace folder's path); the bridge hashes it with the installation's salt before anything leaves this machine.
 */
export type User = string;
/**
 * A raw scope key (e.g. the workspace folder's path); the bridge hashes it with the installation's salt before anything leaves this machine.
 */
export type Workspace = string;
export type Id = (string | number) | null;
export type Op = "publish";
export type ConversationContext = ConversationTurn[] | null;
export type Content1 = string;
export type Role1 = "user" | "assistant" | "system" | "tool";
/**
 * How long to wait (default 750). Out of range (1..60000) it is clamped and named in `clamped`.
 */
export type DeadlineMs = number | null;
/**
 * Recency half-life (default 14). Out of range (0.5..90.0) it is clamped and named in `clamped`.
 */
export type HalfLifeDays = number | null;
export type Id1 = (string | number) | null;
export type IncludeSuperseded = boolean | null;
/**
 * Results wanted (default 5). Out of range (1..50) it is clamped and named in `clamped`.
 */
export type MaxResults = number | null;
/**
 * Token budget of the results (default 1000). Out of range (>= 100) it is clamped and named in `clamped`.
 */
export type MaxTokens = number | null;
export type Op1 = "recall";
export type Query = string;
export type Scopes = ScopeName[] | null;
export type ScopeName = "session" | "workspace" | "user" | "auto";
export type SessionId1 = string | null;
export type User1 = string | null;
export type Workspace1 = string | null;
export type Id2 = (string | number) | null;
export type Op2 = "flush";
/**
 * Seconds to wait; above 30 it is clamped and named in `clamped`.
 */
export type TimeoutS = number;
export type Id3 = (string | number) | null;
export type Op3 = "status";

/**
 * Op ``publish``: validate, hash, check consent, buffer (fire-and-forget).
 */
export interface PublishRequest {
  event: BridgeTurn;
  id?: Id;
  op: Op;
}
/**
 * A finished turn as an editor sends it: ``TurnEvent`` with raw scope keys.
 */
export interface BridgeTurn {
  client: ClientInfo;
  content: Content;
  event_id?: EventId;
  git?: GitInfo | null;
  importance?: Importance;
  occurred_at?: OccurredAt;
  references?: References;
  role: Role;
  session_id: SessionId;
  speaker?: Speaker;
  tags?: Tags;
  turn_index: TurnIndex;
  user: User;
  workspace: Workspace;
}
export interface ClientInfo {
  name: Name;
  version?: Version;
}
/**
 * Optional repository state; paths only when the producer is configured to send them.
 */
export interface GitInfo {
  branch?: Branch;
  commit?: Commit;
  dirty?: Dirty;
  repository?: Repository;
}
/**
 * Something the turn points at: a file, plan, branch or issue.
 */
export interface Reference {
  kind: Kind;
  value: Value;
}
/**
 * Op ``recall``: search the memory; answers within ``deadline_ms`` (fails open).
 */
export interface RecallBridgeRequest {
  conversation_context?: ConversationContext;
  deadline_ms?: DeadlineMs;
  half_life_days?: HalfLifeDays;
  id?: Id1;
  include_superseded?: IncludeSuperseded;
  max_results?: MaxResults;
  max_tokens?: MaxTokens;
  op: Op1;
  query: Query;
  scopes?: Scopes;
  session_id?: SessionId1;
  user?: User1;
  workspace?: Workspace1;
}
export interface ConversationTurn {
  content: Content1;
  role: Role1;
}
/**
 * Op ``flush``: wait (bounded) until buffered events are taken by Redis.
 */
export interface FlushRequest {
  id?: Id2;
  op: Op2;
  timeout_s?: TimeoutS;
}
/**
 * Op ``status``: this bridge's counters and the shared queue's.
 */
export interface StatusRequest {
  id?: Id3;
  op: Op3;
}
