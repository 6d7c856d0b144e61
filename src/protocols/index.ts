/** The four wire protocols by id (the registry the text pipeline plans with). */
import type { ProtocolId } from "../translate/ir.ts";
import type { WireProtocol } from "./wire.ts";
import { chat } from "./chat/index.ts";
import { generate } from "./generate/index.ts";
import { messages } from "./messages/index.ts";
import { responses } from "./responses/index.ts";

export const PROTOCOLS: Record<ProtocolId, WireProtocol> = { responses, messages, generate, chat };
