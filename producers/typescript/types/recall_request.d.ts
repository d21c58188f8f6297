/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type Content = string;
export type Role = "user" | "assistant" | "system" | "tool";
/**
 * @maxItems 20
 */
export type ConversationContext = ConversationTurn[];
export type DeadlineMs = number;
export type HalfLifeDays = number;
export type IncludeSuperseded = boolean;
export type MaxResults = number;
export type MaxTokens = number;
export type Query = string;
export type ReplyTo = string;
export type RequestId = string;
export type SchemaVersion = 1;
export type ScopeName = "session" | "workspace" | "user" | "auto";
export type Scopes = ScopeName[];
export type SentAtMs = number | null;
export type SessionId = string | null;
export type User = string | null;
/**
 * The current session's turns from this turn index on are in the client's window (an editor's transcript since its last compaction): recall leaves them out, with the session's own summaries. None: only the turns of conversation_context are taken as in the window.
 */
export type WindowFromTurn = number | null;
export type Workspace = string | null;

/**
 * A search request pushed by a client; ``reply_to`` is the per-request reply key.
 */
export interface RecallRequest {
  conversation_context?: ConversationContext;
  deadline_ms?: DeadlineMs;
  half_life_days?: HalfLifeDays;
  include_superseded?: IncludeSuperseded;
  max_results?: MaxResults;
  max_tokens?: MaxTokens;
  query: Query;
  reply_to?: ReplyTo;
  request_id?: RequestId;
  schema_version?: SchemaVersion;
  scopes?: Scopes;
  sent_at_ms?: SentAtMs;
  session_id?: SessionId;
  user?: User;
  window_from_turn?: WindowFromTurn;
  workspace?: Workspace;
}
export interface ConversationTurn {
  content: Content;
  role: Role;
}
