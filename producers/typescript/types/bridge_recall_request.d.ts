/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type ConversationContext = ConversationTurn[] | null;
export type Content = string;
export type Role = "user" | "assistant" | "system" | "tool";
/**
 * How long to wait (default 750). Out of range (1..60000) it is clamped and named in `clamped`.
 */
export type DeadlineMs = number | null;
/**
 * Recency half-life (default 14). Out of range (0.5..90.0) it is clamped and named in `clamped`.
 */
export type HalfLifeDays = number | null;
export type Id = (string | number) | null;
export type IncludeSuperseded = boolean | null;
/**
 * Results wanted (default 5). Out of range (1..50) it is clamped and named in `clamped`.
 */
export type MaxResults = number | null;
/**
 * Token budget of the results (default 1000). Out of range (>= 100) it is clamped and named in `clamped`.
 */
export type MaxTokens = number | null;
export type Op = "recall";
export type Query = string;
export type Scopes = ScopeName[] | null;
export type ScopeName = "session" | "workspace" | "user" | "auto";
/**
 * The chat's id in the editor (or its s_ id); hashed by the bridge.
 */
export type SessionId = string | null;
/**
 * The user's name, e.g. the login name (or its u_ id); hashed by the bridge.
 */
export type User = string | null;
/**
 * The workspace folder's absolute path (or its w_ id); hashed by the bridge.
 */
export type Workspace = string | null;

/**
 * Op ``recall``: search the memory; answers within ``deadline_ms`` (fails open).
 */
export interface BridgeRecallRequest {
  conversation_context?: ConversationContext;
  deadline_ms?: DeadlineMs;
  half_life_days?: HalfLifeDays;
  id?: Id;
  include_superseded?: IncludeSuperseded;
  max_results?: MaxResults;
  max_tokens?: MaxTokens;
  op: Op;
  query: Query;
  scopes?: Scopes;
  session_id?: SessionId;
  user?: User;
  workspace?: Workspace;
}
export interface ConversationTurn {
  content: Content;
  role: Role;
}
