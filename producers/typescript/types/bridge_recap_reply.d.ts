/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type BridgeRecapReply = RecapReply | ErrorReply;
/**
 * Options that were out of range, clamped into it.
 */
export type Clamped = {
  [k: string]: Clamped1;
} | null;
export type Requested = number;
export type Used = number;
export type Id = (string | number) | null;
export type BudgetTokens = number;
export type Chunks = number;
export type SchemaVersion = 1;
export type FirstTurn = number;
export type LastTurn = number;
export type Score = number;
export type SourceEventIds = string[];
export type Text = string;
export type Tokens = number;
export type Sections = RecapSection[];
export type SessionEnd = string;
export type SessionId = string;
export type SessionStart = string;
export type Text1 = string;
export type Tokens1 = number;
export type Turns = number;
export type User = string;
export type Workspace = string;
/**
 * The (hashed) session recapped.
 */
export type SessionId1 = string;
export type Success = true;
export type Text2 = string;
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
export type Id1 = (string | number) | null;
/**
 * flush: events still buffered.
 */
export type Pending = number | null;
export type Remediation = string;
export type Success1 = false;
export type UserMessage = string;

export interface RecapReply {
  clamped?: Clamped;
  id?: Id;
  recap: SessionRecap;
  session_id: SessionId1;
  success?: Success;
  text: Text2;
}
/**
 * An option outside its range: what was asked and what was used.
 */
export interface Clamped1 {
  requested: Requested;
  used: Used;
}
export interface SessionRecap {
  budget_tokens: BudgetTokens;
  chunks: Chunks;
  schema_version?: SchemaVersion;
  sections: Sections;
  session_end: SessionEnd;
  session_id: SessionId;
  session_start: SessionStart;
  text: Text1;
  tokens: Tokens1;
  turns: Turns;
  user: User;
  workspace: Workspace;
}
export interface RecapSection {
  first_turn: FirstTurn;
  last_turn: LastTurn;
  score: Score;
  source_event_ids: SourceEventIds;
  text: Text;
  tokens: Tokens;
}
/**
 * Any failure: the seed bridge's contract (never chat text or secrets).
 */
export interface ErrorReply {
  clamped?: Clamped2;
  confirmation_token?: ConfirmationToken;
  error_code: ErrorCode;
  event_id?: EventId;
  id?: Id1;
  pending?: Pending;
  remediation: Remediation;
  success?: Success1;
  user_message: UserMessage;
}
