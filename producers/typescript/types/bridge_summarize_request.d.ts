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
 * A raw scope key (e.g. the workspace folder's path); the bridge hashes it with the installation's salt before anything leaves this machine.
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
