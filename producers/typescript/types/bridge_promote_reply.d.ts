/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type BridgePromoteReply = PromoteReply | ErrorReply;
/**
 * Options that were out of range, clamped into it.
 */
export type Clamped = {
  [k: string]: Clamped1;
} | null;
export type Requested = number;
export type Used = number;
export type Id = (string | number) | null;
export type CreatedAt = string;
export type Id1 = string;
/**
 * The kinds a memory can be promoted as (the seed's list), plus ownership context.
 */
export type PromotionKind =
  "decision" | "lesson_learned" | "preference" | "procedure" | "task_update" | "terminology" | "ownership_context";
export type MemoryOrigin = "promotion" | "directive" | "system";
export type SchemaVersion = 1;
export type Scope = "session" | "workspace" | "user";
export type SessionId = string | null;
/**
 * @minItems 1
 */
export type SourceEventIds = [string, ...string[]];
export type Text = string;
export type User = string;
export type Workspace = string | null;
export type Success = true;
export type Text1 = string;
/**
 * Options that were out of range, clamped into it.
 */
export type Clamped2 = {
  [k: string]: Clamped1;
} | null;
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
export type EventId = string | null;
export type Id2 = (string | number) | null;
/**
 * flush: events still buffered.
 */
export type Pending = number | null;
export type Remediation = string;
export type Success1 = false;
export type UserMessage = string;

export interface PromoteReply {
  clamped?: Clamped;
  id?: Id;
  memory: PromotedMemory;
  success?: Success;
  text: Text1;
}
/**
 * An option outside its range: what was asked and what was used.
 */
export interface Clamped1 {
  requested: Requested;
  used: Used;
}
export interface PromotedMemory {
  created_at: CreatedAt;
  id: Id1;
  kind: PromotionKind;
  origin: MemoryOrigin;
  schema_version?: SchemaVersion;
  scope: Scope;
  session_id?: SessionId;
  source_event_ids: SourceEventIds;
  text: Text;
  user: User;
  workspace?: Workspace;
}
/**
 * Any failure: the seed bridge's contract (never chat text or secrets).
 */
export interface ErrorReply {
  clamped?: Clamped2;
  confirmation_token?: ConfirmationToken;
  error_code: ErrorCode;
  event_id?: EventId;
  id?: Id2;
  pending?: Pending;
  remediation: Remediation;
  success?: Success1;
  user_message: UserMessage;
}
