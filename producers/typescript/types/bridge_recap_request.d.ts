/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type BudgetTokens = number;
/**
 * The session in progress: never taken as the previous one.
 */
export type CurrentSessionId = string | null;
/**
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs = number | null;
export type Id = (string | number) | null;
export type Op = "recap";
/**
 * The session to recap; default: the previous session.
 */
export type SessionId = string | null;
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type Workspace = string;

/**
 * Op ``recap``: a recap of a session within ``budget_tokens``; without ``session_id``
 * the previous session of ``workspace`` (the latest one other than
 * ``current_session_id``).
 */
export interface BridgeRecapRequest {
  budget_tokens?: BudgetTokens;
  current_session_id?: CurrentSessionId;
  deadline_ms?: DeadlineMs;
  id?: Id;
  op: Op;
  session_id?: SessionId;
  workspace: Workspace;
}
