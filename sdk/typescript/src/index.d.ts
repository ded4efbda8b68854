/** An item of POST /v1/ingest (wire version 1). */
export interface TelemetryItem {
  id: string;
  timestamp: string;
  /** Absent for stateless HTTP requests: the service derives the session (docs/sessions.md). */
  session_id?: string;
  method: string;
  name?: string;
  duration_ms?: number;
  status: "ok" | "error";
  error_type?: string;
  error_message?: string;
  client_name?: string;
  client_version?: string;
  server_version?: string;
  user_id?: string;
  attributes?: Record<string, string>;
  /** The MCP protocol version the request followed ("2025-11-25", "2026-07-28"). */
  protocol_version?: string;
  /** Why an error item failed (docs/sdks.md "Error kinds"). */
  error_kind?: "tool_error" | "exception" | "invalid_params" | "unknown_tool" | "method_not_found" | "timeout" | "cancelled" | "auth" | "internal" | "other";
  /** Size in bytes of the result as JSON. */
  response_bytes?: number;
  /** tools/call: HMAC-SHA256 of the canonical arguments under a key that never leaves the process, 32 hex characters. */
  args_hash?: string;
}

export interface InstrumentOptions {
  /** Ingest key (ik_...). Default: the TELEMETRY_KEY environment variable; without one nothing is recorded. */
  key?: string;
  /** The service's base address, without /v1. Default: TELEMETRY_ENDPOINT, else the service's public base address (http://127.0.0.1:8080 for a default installation). */
  endpoint?: string;
  /** Environment to read TELEMETRY_KEY and TELEMETRY_ENDPOINT from. Default: process.env. */
  env?: Record<string, string | undefined>;
  /** Send the arguments of tools/call as attributes arg.<name> (at most 32, each cut to 256 characters). Default false. */
  recordArguments?: boolean;
  /** Called with a copy of a call's arguments when recordArguments is set; returns what to send (null or undefined: nothing). */
  redact?: (args: Record<string, unknown>, info: { tool: string; request: unknown }) => Record<string, unknown> | null | undefined;
  /** Key of args_hash (HMAC-SHA256). Default: a random key per process, so equal calls hash equal within the process. Give the same secret to every replica of a server whose sessions span processes. */
  argsHashKey?: string | Uint8Array;
  /** The server's version. Default: the version in the server's serverInfo. */
  serverVersion?: string;
  /** Names the user of a request (user_id). Gets the JSON-RPC request and the transport's extra (authInfo; requestInfo or request over HTTP). */
  userId?: (request: unknown, extra: unknown) => string | undefined;
  /** Extra attributes of a request; same arguments as userId. */
  attributes?: (request: unknown, extra: unknown) => Record<string, string> | undefined;
  /** Most items waiting to be sent; beyond it items are dropped and counted. Default 10000. */
  maxQueue?: number;
  /** Longest an item waits before it is sent, in ms. Default 1000. */
  flushIntervalMs?: number;
  /** Items per request, at most 1000 (bodies are also kept under 1 MiB). Default 1000. */
  batchSize?: number;
  /** Retries of a failed request (network error, 429, 5xx). Default 5. */
  maxRetries?: number;
  /** First backoff after a failure, doubled every attempt, with jitter. Default 250 ms. */
  retryBaseDelayMs?: number;
  /** Cap of every wait, Retry-After included. Default 60000 ms. */
  maxRetryDelayMs?: number;
  /** Timeout of one request. Default 30000 ms. */
  timeoutMs?: number;
  /** Report each distinct tools/list answer to POST /v1/ingest/inventory (names and schema hashes). Default true. */
  inventory?: boolean;
  /** Send each tool's description, input and output schemas and annotations with the inventory, so the service grades tool changes (a definition over 64 KiB, or past 1 MiB for the whole list, is sent by hash only). Default true. */
  inventorySchemas?: boolean;
  /** Longest close() waits for the service, retries included; then what is left is dropped with one warning. Default 2000 ms. */
  shutdownTimeoutMs?: number;
  /** Longest the flush when the process is about to exit (beforeExit: a stdio server whose client closed stdin) waits; a refused connection is not retried then. Default 500 ms (at most shutdownTimeoutMs): official clients send SIGTERM 2 s after closing stdin. */
  exitTimeoutMs?: number;
  /** gzip request bodies. Default true. */
  gzip?: boolean;
  /** The fetch to send with. Default: globalThis.fetch. */
  fetch?: typeof fetch;
  /** Receives failures (a dropped batch, a missing key); never called from inside a request. Default: a refused key, a missing key and telemetry dropped at shutdown are printed once as process warnings, nothing else. */
  onError?: (err: unknown) => void;
}

export interface TelemetryStats {
  /** Items queued since the start. */
  queued: number;
  /** Items in batches the service answered 2xx. */
  sent: number;
  /** Items the service reported accepted. */
  accepted: number;
  /** Items dropped because the queue was full or the sender closed. */
  dropped: number;
  /** Items in batches given up after the retries or refused (4xx). */
  failed: number;
  requests: number;
  retries: number;
  queueLength: number;
}

export interface TelemetryHandle {
  readonly endpoint: string | undefined;
  /** Sends everything queued; never rejects. */
  flush(): Promise<void>;
  /** Flushes within shutdownTimeoutMs and stops the process's sender for this endpoint and key; a later instrument() starts a new one. */
  close(): Promise<void>;
  stats(): TelemetryStats;
}

/** Instruments an McpServer or Server of @modelcontextprotocol/sdk 1.x or @modelcontextprotocol/server 2.x. Calling it twice on one server returns the first handle; every server of the process shares one sender per endpoint and key (the first call's options configure it). */
export function instrument(server: object, options?: InstrumentOptions): TelemetryHandle;

/** A tool's schema_hash: SHA-256 (hex) of the canonical JSON of {description, inputSchema, annotations}. */
export function toolSchemaHash(tool: { description?: string; inputSchema?: unknown; annotations?: unknown }): string;

/** JSON with object keys sorted recursively and no whitespace. */
export function canonicalJSON(value: unknown): string;

export declare const TOOL_ERROR: "tool_error";
export declare const MAX_BATCH_ITEMS: 1000;
export declare const MAX_BODY_BYTES: number;
export declare const DEFAULTS: Readonly<Required<Pick<InstrumentOptions, "endpoint" | "maxQueue" | "flushIntervalMs" | "batchSize" | "maxRetries" | "retryBaseDelayMs" | "maxRetryDelayMs" | "timeoutMs" | "shutdownTimeoutMs" | "exitTimeoutMs">>>;

export declare class Sender {
  constructor(options: InstrumentOptions & { endpoint: string; key: string });
  add(item: TelemetryItem): boolean;
  flush(): Promise<void>;
  close(): Promise<void>;
  readonly stats: Omit<TelemetryStats, "queueLength">;
}

/** Milliseconds a Retry-After header value (seconds or HTTP date) asks to wait. */
export function retryAfterMs(value: string | null | undefined): number | undefined;
