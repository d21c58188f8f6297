/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

/**
 * How long to wait for a maintenance worker (default 30000); out of range (100..120000) it is clamped and named in `clamped`.
 */
export type DeadlineMs = number | null;
export type Id = (string | number) | null;
/**
 * A recall result's `memory_id`.
 */
export type MemoryId = string;
export type Op = "summary";

/**
 * Op ``summary``: the full stored summary, decision record or memory behind a recall
 * result's ``memory_id`` (the seed's "show the full summary").
 */
export interface BridgeSummaryRequest {
  deadline_ms?: DeadlineMs;
  id?: Id;
  memory_id: MemoryId;
  op: Op;
}
