/**
 * Test-only dependencies: the official clients our users run, kept out of deno.json's imports so
 * the server never resolves them.
 */
export { default as OpenAI, toFile } from "npm:openai@^7.55.0";
// The SDK's Responses WebSocket (its transport-neutral base: see tests/helpers/responses_ws.ts).
export { ResponsesWSBase } from "npm:openai@^7.55.0/resources/responses/ws-base";
export { default as Anthropic } from "npm:@anthropic-ai/sdk@^1.11.0";
export { GoogleGenAI, Modality } from "npm:@google/genai@^3.1.0";
// The Vercel AI SDK and its OpenAI provider (the Responses model), as an app built on it calls us.
export { generateText, jsonSchema, stepCountIs, streamText, tool } from "npm:ai@^7.0.173";
export { createOpenAI } from "npm:@ai-sdk/openai@^4.0.118";
