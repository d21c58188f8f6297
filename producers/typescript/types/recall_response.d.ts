/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type Degraded = string[];
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
 * The results rendered as a <memory> block, ready to put in a prompt and framed as optional background context; empty when there are no results.
 */
export type MemoryBlock = string;
export type Remediation = string | null;
export type RequestId = string;
export type ResultCount = number;
export type CreatedAt = string;
export type Kind = string;
/**
 * The memory's id: ask for the full stored summary or record with it (the bridge's `summary` op).
 */
export type MemoryId = string | null;
export type Scope = "session" | "workspace" | "user";
/**
 * For a question: above 1 for what settles it (a decision, confirmation or stated preference), below 1 for a turn that only asks.
 */
export type AnswerMultiplier = number;
export type ContextBoost = number;
export type FinalScore = number;
export type GraphScore = number;
export type LexicalScore = number;
export type RecencyMultiplier = number;
/**
 * Below 1 for an assistant turn when the question is about the user (first person singular).
 */
export type RoleMultiplier = number;
export type ScopeMultiplier = number;
export type SemanticScore = number;
/**
 * Above 1 when the query names the person who said it.
 */
export type SpeakerMultiplier = number;
export type StatusMultiplier = number;
export type SourceCreatedAt = string | null;
/**
 * @minItems 1
 */
export type SourceEventIds = [string, ...string[]];
export type Status = string;
export type Text = string;
export type Tokens = number;
export type Topic = string | null;
export type Results = RecallResult[];
export type SchemaVersion = 1;
export type Success = boolean;
export type TookMs = number;
export type TotalTokens = number;
export type UserMessage = string | null;

export interface RecallResponse {
  degraded?: Degraded;
  error_code?: ErrorCode | null;
  memory_block?: MemoryBlock;
  remediation?: Remediation;
  request_id: RequestId;
  result_count?: ResultCount;
  results?: Results;
  schema_version?: SchemaVersion;
  success: Success;
  took_ms?: TookMs;
  total_tokens?: TotalTokens;
  user_message?: UserMessage;
}
export interface RecallResult {
  created_at: CreatedAt;
  kind?: Kind;
  memory_id?: MemoryId;
  scope: Scope;
  score: ScoreBreakdown;
  source_created_at?: SourceCreatedAt;
  source_event_ids: SourceEventIds;
  status?: Status;
  text: Text;
  tokens: Tokens;
  topic?: Topic;
}
export interface ScoreBreakdown {
  answer_multiplier?: AnswerMultiplier;
  context_boost?: ContextBoost;
  final_score: FinalScore;
  graph_score?: GraphScore;
  lexical_score?: LexicalScore;
  recency_multiplier: RecencyMultiplier;
  role_multiplier?: RoleMultiplier;
  scope_multiplier?: ScopeMultiplier;
  semantic_score: SemanticScore;
  speaker_multiplier?: SpeakerMultiplier;
  status_multiplier: StatusMultiplier;
}
