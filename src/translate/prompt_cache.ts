/**
 * The client's prompt-cache intent across protocols (pure). Each provider caches a prompt's prefix
 * its own way: Anthropic only up to the breakpoints a request sets (`cache_control`, each with its
 * lifetime); OpenAI and xAI every prompt by themselves, a `prompt_cache_key` choosing the cache
 * machine and OpenAI's `prompt_cache_retention` how long it keeps (`in_memory`, `24h`); Gemini
 * every prompt by itself (implicit caching). A translation carries the intent to the upstream's
 * mechanism (see `CacheIntent` in `ir.ts`): breakpoints to a Messages upstream (the client's own,
 * or the gateway's for a client whose protocol caches by itself), the key and retention to an
 * OpenAI one. None of it changes an answer, so nothing here is an adaptation: a mechanism the
 * upstream lacks is simply not used (breakpoints to a provider that caches by itself).
 */
import { optionalString } from "../http/json.ts";
import type { CacheIntent, CacheMark, Json, Message } from "./ir.ts";

/**
 * The intent of a Responses or chat request: its protocol caches by itself, with the
 * `prompt_cache_key` and `prompt_cache_retention` it gives (a value of another type is a 400).
 */
export function openAiCacheIntent(body: Json): CacheIntent {
  const key = optionalString(body.prompt_cache_key, "prompt_cache_key");
  const retention = optionalString(body.prompt_cache_retention, "prompt_cache_retention");
  return { implicit: true, ...(key ? { key } : {}), ...(retention ? { retention } : {}) };
}

/**
 * The lifetime of the breakpoints the gateway places for `intent`: an hour (Anthropic's longest)
 * when the client asked OpenAI's extended retention, else Anthropic's default (5 minutes).
 */
export function placedTtl(intent: CacheIntent | undefined): CacheMark["ttl"] {
  return intent?.retention === "24h" ? "1h" : undefined;
}

/**
 * `messages` without their breakpoints: history the gateway keeps and puts in front of a later
 * call (a Messages thread it holds), where the client's breakpoints of that turn no longer stand
 * (clients move theirs forward each turn; Anthropic takes at most four).
 */
export function unmarked(messages: readonly Message[]): Message[] {
  const strip = <T extends { cache?: CacheMark }>({ cache: _dropped, ...part }: T) => part;
  return messages.map((message) =>
    ({
      ...message,
      content: message.content.map((part) =>
        part.type === "tool-result"
          ? { ...strip(part), content: part.content.map(strip) }
          : part.type === "reasoning" || part.type === "hosted-call"
          ? part
          : strip(part)
      ),
    }) as Message
  );
}
