/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type Id = (string | number) | null;
export type Op = "context";
/**
 * A scope key as the editor knows it (hashed by the bridge with the installation's salt before anything leaves this machine), or its id as `turngraph scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.
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
