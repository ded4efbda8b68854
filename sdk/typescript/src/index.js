// The ESM entry point: the same module as require("@mcpscope/telemetry")
// (src/index.cjs), so both share one sender per process.
import cjs from "./index.cjs";

export const { instrument, toolSchemaHash, canonicalJSON, TOOL_ERROR, Sender, DEFAULTS, MAX_BATCH_ITEMS, MAX_BODY_BYTES, retryAfterMs } = cjs;
