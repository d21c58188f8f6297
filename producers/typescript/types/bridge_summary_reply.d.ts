/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */

export type BridgeSummaryReply = SummaryReply | ErrorReply;
/**
 * Options that were out of range, clamped into it.
 */
export type Clamped = {
  [k: string]: Clamped1;
} | null;
export type Requested = number;
export type Used = number;
export type Id = (string | number) | null;
export type Kind = "summary" | "decision_record" | "memory";
export type CurrentDecision = string | null;
export type DecisionEventIds = string[];
export type Decisions = string[];
/**
 * @maxItems 50
 */
export type Entities = string[];
export type Id1 = string;
export type Narrative = string;
export type NextSteps = string[];
export type OpenQuestions = string[];
export type PlanId = string | null;
export type Rationale = string[];
/**
 * @maxItems 10
 */
export type Branches = string[];
/**
 * @maxItems 30
 */
export type Files = string[];
/**
 * @maxItems 20
 */
export type Issues = string[];
/**
 * @maxItems 10
 */
export type Plans = string[];
export type SchemaVersion = 1;
/**
 * @minItems 1
 */
export type SourceEventIds = [string, ...string[]];
export type Status = "Final";
/**
 * @minItems 1
 */
export type SummaryIds = [string, ...string[]];
export type SessionEnd = string;
export type SessionStart = string;
export type Topic = string;
export type TopicId = string;
export type User = string;
export type Workspace = string;
export type Success = true;
/**
 * what was worked on and why
 *
 * @minItems 1
 * @maxItems 3
 */
export type Context = [string, ...string[]];
/**
 * @maxItems 5
 */
export type Decisions1 = string[];
/**
 * @maxItems 5
 */
export type NextSteps1 = string[];
/**
 * @maxItems 5
 */
export type OpenQuestions1 = string[];
/**
 * @maxItems 3
 */
export type Rationale1 = string[];
/**
 * short title of the focus
 */
export type Topic1 = string;
export type CreatedAt = string;
export type DecisionEventIds1 = string[];
/**
 * @maxItems 50
 */
export type Entities1 = string[];
export type FirstTurn = number;
export type Id2 = string;
export type LastTurn = number;
export type SummaryMethod = "llm" | "extractive";
export type PlanId1 = string | null;
export type SchemaVersion1 = 1;
export type SessionId = string;
/**
 * @minItems 1
 */
export type SourceEventIds1 = [string, ...string[]];
/**
 * A summary's life: Draft when made, Final when its segment is closed, Superseded once
 * compaction folded it into a decision record (kept for audit, never deleted).
 */
export type SummaryStatus = "Draft" | "Final" | "Superseded";
export type TopicId1 = string;
export type User1 = string;
export type Workspace1 = string;
/**
 * The full stored text.
 */
export type Text = string;
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
export type Id3 = (string | number) | null;
/**
 * flush: events still buffered.
 */
export type Pending = number | null;
export type Remediation = string;
export type Success1 = false;
export type UserMessage = string;

export interface SummaryReply {
  clamped?: Clamped;
  id?: Id;
  kind: Kind;
  record?: DecisionRecord | null;
  success?: Success;
  summary?: ConversationSummary | null;
  text: Text;
}
/**
 * An option outside its range: what was asked and what was used.
 */
export interface Clamped1 {
  requested: Requested;
  used: Used;
}
/**
 * The compacted memory of one topic in one workspace: the union of its summaries'
 * decisions and rationale, what is still open, and a short narrative of how it got here.
 *
 * ``decisions`` is chronological; ``current_decision`` is the latest one (the record is
 * "Final": the committed state of the topic). Deterministic in the set of summaries it
 * merges: compaction may run twice, or on two workers, and write the same record.
 */
export interface DecisionRecord {
  current_decision?: CurrentDecision;
  decision_event_ids?: DecisionEventIds;
  decisions?: Decisions;
  entities?: Entities;
  id: Id1;
  narrative: Narrative;
  next_steps?: NextSteps;
  open_questions?: OpenQuestions;
  plan_id?: PlanId;
  rationale?: Rationale;
  references?: SummaryReferences;
  schema_version?: SchemaVersion;
  source_event_ids: SourceEventIds;
  status?: Status;
  summary_ids: SummaryIds;
  time_scope: TimeScope;
  topic: Topic;
  topic_id: TopicId;
  user: User;
  workspace: Workspace;
}
/**
 * What the segment points at (seed: Files, Plans, Branches, Issues).
 */
export interface SummaryReferences {
  branches?: Branches;
  files?: Files;
  issues?: Issues;
  plans?: Plans;
}
export interface TimeScope {
  session_end: SessionEnd;
  session_start: SessionStart;
}
/**
 * One summarized segment of a session (turns ``first_turn`` … ``last_turn``).
 */
export interface ConversationSummary {
  content: SummaryContent;
  created_at: CreatedAt;
  decision_event_ids?: DecisionEventIds1;
  entities?: Entities1;
  first_turn: FirstTurn;
  id: Id2;
  last_turn: LastTurn;
  method: SummaryMethod;
  plan_id?: PlanId1;
  references?: SummaryReferences1;
  schema_version?: SchemaVersion1;
  session_id: SessionId;
  source_event_ids: SourceEventIds1;
  status?: SummaryStatus;
  time_scope: TimeScope;
  topic_id: TopicId1;
  user: User1;
  workspace: Workspace1;
}
/**
 * The sections a summarizer writes (an LLM answers exactly this, as JSON).
 */
export interface SummaryContent {
  context: Context;
  decisions?: Decisions1;
  next_steps?: NextSteps1;
  open_questions?: OpenQuestions1;
  rationale?: Rationale1;
  topic: Topic1;
}
/**
 * What the segment points at (seed: Files, Plans, Branches, Issues).
 */
export interface SummaryReferences1 {
  branches?: Branches;
  files?: Files;
  issues?: Issues;
  plans?: Plans;
}
/**
 * Any failure: the seed bridge's contract (never chat text or secrets).
 */
export interface ErrorReply {
  clamped?: Clamped2;
  confirmation_token?: ConfirmationToken;
  error_code: ErrorCode;
  event_id?: EventId;
  id?: Id3;
  pending?: Pending;
  remediation: Remediation;
  success?: Success1;
  user_message: UserMessage;
}
