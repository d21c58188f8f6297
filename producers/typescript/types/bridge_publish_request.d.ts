/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

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

/**
 * Op ``publish``: validate, hash, check consent, buffer (fire-and-forget).
 */
export interface BridgePublishRequest {
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
