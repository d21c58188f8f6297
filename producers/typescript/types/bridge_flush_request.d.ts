/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type Id = (string | number) | null;
export type Op = "flush";
/**
 * Seconds to wait; above 30 it is clamped and named in `clamped`.
 */
export type TimeoutS = number;

/**
 * Op ``flush``: wait (bounded) until buffered events are taken by Redis.
 */
export interface BridgeFlushRequest {
  id?: Id;
  op: Op;
  timeout_s?: TimeoutS;
}
