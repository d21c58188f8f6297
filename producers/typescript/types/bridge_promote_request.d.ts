/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

/**
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs = number | null;
export type Id = (string | number) | null;
export type Kind = "decision" | "lesson_learned" | "preference" | "procedure" | "task_update" | "terminology";
export type Op = "promote";
export type Scope = "workspace" | "user";
/**
 * The chat the memory comes from.
 */
export type SessionId = string;
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
export type User = string;
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type Workspace = string;

/**
 * Op ``promote``: keep ``text`` as a curated memory of ``kind`` in the workspace or the
 * user scope. Needs consent for the workspace; refused (``REFUSED``) when the text looks
 * like a secret (the redaction rules). Provenance: ``source_event_ids``, else the
 * session's latest turn.
 */
export interface BridgePromoteRequest {
  deadline_ms?: DeadlineMs;
  id?: Id;
  kind: Kind;
  op: Op;
  scope?: Scope;
  session_id: SessionId;
  source_event_ids?: SourceEventIds;
  text: Text;
  user: User;
  workspace: Workspace;
}
