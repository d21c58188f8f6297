/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type BridgeRequest =
  | PublishRequest
  | RecallBridgeRequest
  | FlushRequest
  | StatusRequest
  | SummarizeRequest
  | RecapRequest
  | SummaryRequest
  | PromoteRequest
  | ContextRequest;
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
 * The chat's id in the editor (or its s_ id); hashed by the bridge.
 */
export type SessionId = string;
export type Speaker = string;
/**
 * @maxItems 50
 */
export type Tags = string[];
export type TurnIndex = number;
/**
 * The user's name, e.g. the login name (or its u_ id); hashed by the bridge.
 */
export type User = string;
/**
 * The workspace folder's absolute path (or its w_ id); hashed by the bridge.
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
/**
 * The chat's id in the editor (or its s_ id); hashed by the bridge.
 */
export type SessionId1 = string | null;
/**
 * The user's name, e.g. the login name (or its u_ id); hashed by the bridge.
 */
export type User1 = string | null;
/**
 * The workspace folder's absolute path (or its w_ id); hashed by the bridge.
 */
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
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs1 = number | null;
export type Id4 = (string | number) | null;
/**
 * How many recent turns.
 */
export type LastN = number;
export type Op4 = "summarize";
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type SessionId2 = string;
export type BudgetTokens = number;
/**
 * The session in progress: never taken as the previous one.
 */
export type CurrentSessionId = string | null;
/**
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs2 = number | null;
export type Id5 = (string | number) | null;
export type Op5 = "recap";
/**
 * The session to recap; default: the previous session.
 */
export type SessionId3 = string | null;
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type Workspace2 = string;
/**
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs3 = number | null;
export type Id6 = (string | number) | null;
/**
 * A recall result's `memory_id`.
 */
export type MemoryId = string;
export type Op6 = "summary";
/**
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs4 = number | null;
export type Id7 = (string | number) | null;
export type Kind1 = "decision" | "lesson_learned" | "preference" | "procedure" | "task_update" | "terminology";
export type Op7 = "promote";
export type Scope = "workspace" | "user";
/**
 * The chat the memory comes from.
 */
export type SessionId4 = string;
/**
 * The turns it comes from (event ids).
 *
 * @maxItems 50
 */
export type SourceEventIds = string[];
export type Text = string;
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type User2 = string;
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type Workspace3 = string;
export type Id8 = (string | number) | null;
export type Op8 = "context";
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type SessionId5 = string;

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
/**
 * Op ``summarize``: summarize and store the session's last ``last_n`` turns (Final).
 */
export interface SummarizeRequest {
  deadline_ms?: DeadlineMs1;
  id?: Id4;
  last_n?: LastN;
  op: Op4;
  session_id: SessionId2;
}
/**
 * Op ``recap``: a recap of a session within ``budget_tokens``; without ``session_id``
 * the previous session of ``workspace`` (the latest one other than
 * ``current_session_id``).
 */
export interface RecapRequest {
  budget_tokens?: BudgetTokens;
  current_session_id?: CurrentSessionId;
  deadline_ms?: DeadlineMs2;
  id?: Id5;
  op: Op5;
  session_id?: SessionId3;
  workspace: Workspace2;
}
/**
 * Op ``summary``: the full stored summary, decision record or memory behind a recall
 * result's ``memory_id`` (the seed's "show the full summary").
 */
export interface SummaryRequest {
  deadline_ms?: DeadlineMs3;
  id?: Id6;
  memory_id: MemoryId;
  op: Op6;
}
/**
 * Op ``promote``: keep ``text`` as a curated memory of ``kind`` in the workspace or the
 * user scope. Needs consent for the workspace; refused (``REFUSED``) when the text looks
 * like a secret (the redaction rules). Provenance: ``source_event_ids``, else the
 * session's latest turn.
 */
export interface PromoteRequest {
  deadline_ms?: DeadlineMs4;
  id?: Id7;
  kind: Kind1;
  op: Op7;
  scope?: Scope;
  session_id: SessionId4;
  source_event_ids?: SourceEventIds;
  text: Text;
  user: User2;
  workspace: Workspace3;
}
/**
 * Op ``context``: the session's rolling context (last turns verbatim plus a rolling
 * summary of older ones, about 1,100 tokens), as maintenance keeps it.
 */
export interface ContextRequest {
  id?: Id8;
  op: Op8;
  session_id: SessionId5;
}
