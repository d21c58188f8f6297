/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type Id = (string | number) | null;
export type Op = "context";
/**
 * A raw scope key (e.g. the workspace folder's path); the bridge hashes it with the installation's salt before anything leaves this machine.
 */
export type SessionId = string;

/**
 * Op ``context``: the session's rolling context (last turns verbatim plus a rolling
 * summary of older ones, about 1,100 tokens), as maintenance keeps it.
 */
export interface BridgeContextRequest {
  id?: Id;
  op: Op;
  session_id: SessionId;
}
