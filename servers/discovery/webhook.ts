/**
 * The `--webhookEndpoint` client: POSTs a generated REST xDS response (JSON) to the webhook at
 * the same path and returns its reply, which replaces the response (reference §1.1). Over TCP
 * (`http://<host>[:<port>]`) or a unix socket (`unix:///<path>`).
 * @module
 */

import type { WebhookTarget } from "./config.ts";

/** Calls the webhook. */
export interface WebhookClient {
  /**
   * POSTs `body` as JSON to `<endpoint><path>` and returns the parsed JSON reply.
   * @throws Error on a network failure, timeout, non-2xx status or a reply that is not a JSON object.
   */
  post(path: string, body: unknown): Promise<Record<string, unknown>>;
  /** Releases the HTTP client. */
  close(): void;
}

/** Creates a webhook client for `target`; `timeoutMs` bounds each call (default 5000). */
export function createWebhookClient(target: WebhookTarget, timeoutMs = 5000): WebhookClient {
  const client = target.kind === "unix"
    ? Deno.createHttpClient({ proxy: { transport: "unix", path: target.path } })
    : undefined;
  const base = target.kind === "unix" ? "http://localhost" : target.url;
  const where = target.kind === "unix" ? `unix://${target.path}` : target.url;
  return {
    async post(path, body) {
      let res: Response;
      try {
        res = await fetch(`${base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
          ...(client ? { client } : {}),
        });
      } catch (e) {
        throw new Error(`webhook ${where}${path}: ${(e as Error).message}`);
      }
      const text = await res.text();
      if (!res.ok) {
        throw new Error(
          `webhook ${where}${path}: status ${res.status}: ${text.slice(0, 200).trim()}`,
        );
      }
      let reply: unknown;
      try {
        reply = JSON.parse(text);
      } catch {
        throw new Error(`webhook ${where}${path}: reply is not JSON`);
      }
      if (!reply || typeof reply !== "object" || Array.isArray(reply)) {
        throw new Error(`webhook ${where}${path}: reply is not a JSON object`);
      }
      return reply as Record<string, unknown>;
    },
    close() {
      client?.close();
    },
  };
}
