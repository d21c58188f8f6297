/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type Name = string;
export type Version = string;
export type Content = string;
export type EventId = string;
export type Branch = string | null;
export type Commit = string | null;
export type Dirty = boolean | null;
export type Repository = string | null;
export type Importance = number;
export type OccurredAt = string;
export type Kind = "file" | "plan" | "branch" | "issue" | "pull_request" | "commit" | "url" | "other";
export type Value = string;
/**
 * @maxItems 100
 */
export type References = Reference[];
export type Role = "user" | "assistant" | "system" | "tool";
export type SchemaVersion = 1;
export type SessionId = string;
export type Speaker = string;
/**
 * @maxItems 50
 */
export type Tags = string[];
export type TurnIndex = number;
export type User = string;
export type Workspace = string;

/**
 * One finished chat turn.
 *
 * ``session_id``, ``workspace`` and ``user`` are scope keys; producers hash them with
 * the installation salt before publishing (see ``producers.scopes``), so no raw
 * workspace path or user name ever reaches Redis.
 */
export interface TurnEvent {
  client: ClientInfo;
  content: Content;
  event_id?: EventId;
  git?: GitInfo | null;
  importance?: Importance;
  occurred_at: OccurredAt;
  references?: References;
  role: Role;
  schema_version?: SchemaVersion;
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
