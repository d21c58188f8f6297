/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type BridgePublishReply = PublishReply | ErrorReply;
/**
 * False when this bridge's local buffer was full.
 */
export type Buffered = boolean;
export type Dropped = "local_buffer_full" | null;
export type EventId = string;
export type Id = (string | number) | null;
export type Success = true;
/**
 * Options that were out of range, clamped into it.
 */
export type Clamped = {
  [k: string]: Clamped1;
} | null;
export type Requested = number;
export type Used = number;
/**
 * MCP forget, where the client cannot ask its user: send it back as `confirm` once the user has agreed.
 */
export type ConfirmationToken = string | null;
/**
 * Every ``error_code`` a reply can carry: the bridge, the MCP tools, recall and distill
 * workers (one enum; prints as its value, ``DEADLINE_EXCEEDED``).
 *
 * ``NOT_AVAILABLE``: the operation exists in the protocol but not in this version;
 * ``CONFIRMATION_REQUIRED``: a destructive MCP tool (forget) the user has not confirmed;
 * ``NOT_FOUND``: a distill op found nothing to work on (no turns, no such memory);
 * ``REFUSED``: promote refused content that looks like a secret;
 * ``UNAUTHORIZED``: the local endpoint's token was missing or wrong.
 */
export type ErrorCode =
  | "INVALID_JSON"
  | "INVALID_ENCODING"
  | "INVALID_REQUEST"
  | "UNKNOWN_OP"
  | "CONSENT_REQUIRED"
  | "BACKEND_UNAVAILABLE"
  | "DEADLINE_EXCEEDED"
  | "NOT_AVAILABLE"
  | "CONFIRMATION_REQUIRED"
  | "NOT_FOUND"
  | "REFUSED"
  | "UNAUTHORIZED"
  | "INTERNAL_ERROR";
/**
 * publish (and MCP remember): the turn kept but not delivered yet.
 */
export type EventId1 = string | null;
export type Id1 = (string | number) | null;
/**
 * flush: events still buffered.
 */
export type Pending = number | null;
export type Remediation = string;
export type Success1 = false;
export type UserMessage = string;

export interface PublishReply {
  buffered: Buffered;
  dropped?: Dropped;
  event_id: EventId;
  id?: Id;
  success?: Success;
}
/**
 * Any failure: the seed bridge's contract (never chat text or secrets).
 */
export interface ErrorReply {
  clamped?: Clamped;
  confirmation_token?: ConfirmationToken;
  error_code: ErrorCode;
  event_id?: EventId1;
  id?: Id1;
  pending?: Pending;
  remediation: Remediation;
  success?: Success1;
  user_message: UserMessage;
}
/**
 * An option outside its range: what was asked and what was used.
 */
export interface Clamped1 {
  requested: Requested;
  used: Used;
}
