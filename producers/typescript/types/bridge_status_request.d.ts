/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type Id = (string | number) | null;
export type Op = "status";

/**
 * Op ``status``: this bridge's counters and the shared queue's.
 */
export interface BridgeStatusRequest {
  id?: Id;
  op: Op;
}
