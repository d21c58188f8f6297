/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */
export type { BridgeErrorReply } from "./bridge_error_reply";
export type { BridgeFlushReply } from "./bridge_flush_reply";
export type { BridgeFlushRequest } from "./bridge_flush_request";
export type { BridgePublishReply } from "./bridge_publish_reply";
export type { BridgePublishRequest } from "./bridge_publish_request";
export type { BridgeRecallReply } from "./bridge_recall_reply";
export type { BridgeRecallRequest } from "./bridge_recall_request";
export type { BridgeRequest } from "./bridge_request";
export type { BridgeStatusReply } from "./bridge_status_reply";
export type { BridgeStatusRequest } from "./bridge_status_request";
export type { RecallRequest } from "./recall_request";
export type { RecallResponse } from "./recall_response";
export type { TurnEvent } from "./turn_event";
