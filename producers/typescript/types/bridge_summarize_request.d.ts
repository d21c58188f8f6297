/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

/**
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs = number | null;
export type Id = (string | number) | null;
/**
 * How many recent turns.
 */
export type LastN = number;
export type Op = "summarize";
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
 */
export type SessionId = string;

/**
 * Op ``summarize``: summarize and store the session's last ``last_n`` turns (Final).
 */
export interface BridgeSummarizeRequest {
  deadline_ms?: DeadlineMs;
  id?: Id;
  last_n?: LastN;
  op: Op;
  session_id: SessionId;
}
