/**
 * A stand-in for mini-me (`mm -acp -agent FILE`): an ACP agent, built on the
 * official SDK, that follows mm's client-tools protocol (mini-me's
 * acp-client-tools.md, "Référence : outils du client ACP") on every point a
 * client can see, with a scripted model instead of an LLM.
 *
 * It is a test peer and a demo, not a product. `client.ts` never imports it.
 * Where mini-me's documents are silent, the choice is marked (guess).
 *
 * Knobs, read from the environment (a real mm has none of them; see
 * test/README.md):
 * - `MM_SIM_MODEL`: `batch` (default: all calls announced, then run together)
 *   or `stepwise` (one call at a time, as an LLM does);
 * - `MM_SIM_THINK_MS`: the model "thinks" this long before it acts, so a test
 *   can cancel a turn that is under way;
 * - `MM_SIM_STOP_REASON`: the stop reason of a turn that is not cancelled
 *   (default `end_turn`);
 * - `MM_SIM_EXIT_IN_TURN`: exit with this code as soon as the prompt arrives;
 * - `MM_SIM_PID_FILE`: write the process id there, so a test can check that
 *   no mm outlives the client;
 * - `MM_SIM_STATE_DIR`: where sessions are kept for `session/load` and
 *   `session/resume` (default `$TMPDIR/mm-sim-sessions`, `/tmp` without TMPDIR).
 *
 * @module
 */

import * as acp from "@agentclientprotocol/sdk";
import { load as parseYaml } from "js-yaml";

// ─── The agent file ──────────────────────────────────────────────────────────

/** The keys of an agent file that this protocol depends on. */
export interface AgentConfig {
  /** `yolo`: with `permissions: auto`, `false` makes mm ask before each call. */
  yolo: boolean;
  /** `maxOutput`: each tool result is cut to this many characters. */
  maxOutput: number;
  /** `acp.clientTools.enabled` (acp-client-tools.md, "Configuration"; default `true`). */
  enabled: boolean;
  /** `acp.clientTools.discovery`: `meta` (default) or `request`. */
  discovery: "meta" | "request";
  /** `acp.clientTools.permissions`: `auto` (default) or `ask`. */
  permissions: "auto" | "ask";
  /** `acp.clientTools.timeout` in milliseconds (default `30s`). */
  timeoutMs: number;
  /** Lines for mm's stderr about values it could not use. */
  warnings: string[];
}

/**
 * mm's default `maxOutput` is in none of mini-me's documents (guess): large
 * enough never to cut a `host_info` answer.
 */
const DEFAULT_MAX_OUTPUT = 30_000;
const DEFAULT_TIMEOUT_MS = 30_000;

const DURATION_UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  "μs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration (`time.ParseDuration`), the form of mm's durations
 * (acp-client-tools.md, "Configuration": `30s`): `500ms`, `1m30s`, `1.5s`,
 * `2h45m`. Returns milliseconds, or `undefined` when the text is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(parseDuration("1m30s"), 90_000);
 * assert.equal(parseDuration("5"), undefined);
 * ```
 */
export function parseDuration(text: string): number | undefined {
  if (/^[-+]?0$/.test(text)) return 0; // Go accepts a bare 0, and no other bare number.
  const sign = text.startsWith("-") ? -1 : 1;
  const rest = text.replace(/^[-+]/, "");
  const part = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  let match;
  while (part.lastIndex < rest.length && (match = part.exec(rest))) {
    total += Number(match[1]) * DURATION_UNIT_MS[match[2]];
  }
  return rest !== "" && part.lastIndex === rest.length ? sign * total : undefined;
}

/** Reads the keys of {@linkcode AgentConfig} from an agent file's YAML text. */
export function readAgentConfig(text: string): AgentConfig {
  // Go's YAML decoding reads an empty document (or only comments) as no keys;
  // js-yaml refuses it.
  const doc = record(/^\s*(#[^\n]*\s*)*$/.test(text) ? null : parseYaml(text));
  const tools = record(record(doc.acp).clientTools);
  const warnings: string[] = [];
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  if (tools.timeout !== undefined && tools.timeout !== null) {
    const parsed = typeof tools.timeout === "string" ? parseDuration(tools.timeout) : undefined;
    // A timeout of zero or less would end every call at once: read as a bad value (guess).
    if (parsed !== undefined && parsed > 0) timeoutMs = parsed;
    else {
      // mm's own wording for a bad duration is in none of its documents (guess).
      warnings.push(
        `[acp] config: acp.clientTools.timeout: invalid duration ${
          JSON.stringify(String(tools.timeout))
        } (using 30s)`,
      );
    }
  }
  return {
    yolo: doc.yolo !== false,
    maxOutput: typeof doc.maxOutput === "number" && doc.maxOutput >= 0
      ? Math.floor(doc.maxOutput)
      : DEFAULT_MAX_OUTPUT,
    enabled: tools.enabled !== false,
    discovery: tools.discovery === "request" ? "request" : "meta",
    permissions: tools.permissions === "ask" ? "ask" : "auto",
    timeoutMs,
    warnings,
  };
}

// ─── Validation d'une liste ──────────────────────────────────────────────────

/** A client tool as mm keeps it after validation. */
export interface ClientTool {
  /** The name the model sees: `client_<normalised name>`. */
  modelName: string;
  /** The name the client gave. */
  name: string;
  /** The extension method mm calls. */
  method: string;
  /** What the model reads (absent: `Tool provided by the editor (<method>).`). */
  description: string;
  /** The `required` of `inputSchema`, checked before every call. */
  required: string[];
}

/**
 * The name the model sees (acp-client-tools.md, "Description d'un outil"):
 * every character outside `[A-Za-z0-9]` becomes `_`, runs of `_` become one,
 * leading and trailing `_` go, and `client_` is put in front.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(modelName("open buffers"), "client_open_buffers");
 * ```
 */
export function modelName(name: string): string {
  return `client_${name.replace(/[^A-Za-z0-9]/g, "_").replace(/_+/g, "_").replace(/^_|_$/g, "")}`;
}

/**
 * Validates each entry of a tool list separately (acp-client-tools.md,
 * "Validation d'une liste"): an invalid entry is skipped with a reason, the
 * others are kept, duplicates keep the first, and the tools are sorted by
 * model name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const { tools, skipped } = validateToolList([{ name: "a", method: "_x/a" }, { name: "b" }]);
 * assert.deepEqual(tools.map((t) => t.modelName), ["client_a"]);
 * assert.deepEqual(skipped, ['entry 1 skipped: method "" must start with "_" (an ACP extension method)']);
 * ```
 */
export function validateToolList(
  entries: readonly unknown[],
): { tools: ClientTool[]; skipped: string[] } {
  const tools: ClientTool[] = [];
  const skipped: string[] = [];
  entries.forEach((raw, index) => {
    const entry = goDecoded(raw);
    const reason = invalidReason(entry, tools);
    if (reason) {
      skipped.push(`entry ${index} skipped: ${reason}`);
      return;
    }
    const e = entry as Record<string, unknown>;
    const schema = goDecoded(e.inputSchema) as Record<string, unknown>;
    tools.push({
      modelName: modelName(e.name as string),
      name: e.name as string,
      method: e.method as string,
      description: typeof e.description === "string"
        ? e.description
        : `Tool provided by the editor (${e.method}).`,
      required: Array.isArray(schema.required) ? schema.required.map(String) : [],
    });
  });
  tools.sort((a, b) => a.modelName < b.modelName ? -1 : a.modelName > b.modelName ? 1 : 0);
  return { tools, skipped };
}

/**
 * What Go's `encoding/json` makes of a value decoded into a struct: `null`
 * is the zero struct, and a `null` field is the same as an absent one.
 */
function goDecoded(value: unknown): unknown {
  if (value === null || value === undefined) return {};
  if (!isRecord(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null));
}

/** The reason for skipping an entry, or `undefined` when it is valid. */
function invalidReason(entry: unknown, kept: ClientTool[]): string | undefined {
  // mm decodes each entry into a Go struct: a value of another JSON type, or
  // a field of the wrong type, fails there. The text after "not a tool
  // description: " is ours (guess); the documents show only the prefix.
  if (!isRecord(entry)) {
    return `not a tool description: cannot decode ${jsonType(entry)} into a tool description`;
  }
  for (const field of ["name", "description", "method"]) {
    if (field in entry && typeof entry[field] !== "string") {
      return `not a tool description: field ${field} is ${jsonType(entry[field])}, not a string`;
    }
  }
  if ("inputSchema" in entry && !isRecord(entry.inputSchema)) {
    return `not a tool description: field inputSchema is ${
      jsonType(entry.inputSchema)
    }, not an object`;
  }
  if (!entry.name) return "no name";
  const method = typeof entry.method === "string" ? entry.method : "";
  if (!method.startsWith("_")) {
    return `method ${JSON.stringify(method)} must start with "_" (an ACP extension method)`;
  }
  const schema = goDecoded(entry.inputSchema) as Record<string, unknown>;
  if ("type" in schema && schema.type !== "object") {
    // How mm quotes the type it got is not shown (guess: as JSON).
    return `inputSchema.type must be "object", got ${JSON.stringify(schema.type)}`;
  }
  const name = modelName(entry.name as string);
  if (kept.some((tool) => tool.modelName === name)) {
    return `duplicate tool name "${name}"`;
  }
  return undefined;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

// ─── What the model reads ────────────────────────────────────────────────────

/**
 * Turns a tool's answer into the text the model reads (acp-client-tools.md,
 * "Réponse"): the `text` of each text block concatenated; another block
 * replaced by `[client tool: non-text content of type <type> skipped]`;
 * `isError: true` wrapped as `[client tool error: <text>]`; any other JSON
 * value as a string (a JSON string without its quotes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.deepEqual(resultText("plain"), { text: "plain", failed: false });
 * ```
 */
export function resultText(result: unknown): { text: string; failed: boolean } {
  if (isRecord(result) && Array.isArray(result.content)) {
    const text = result.content.map((block) =>
      isRecord(block) && block.type === "text"
        ? String(block.text ?? "")
        : `[client tool: non-text content of type ${
          isRecord(block) ? block.type : typeof block
        } skipped]`
    ).join("");
    return result.isError === true
      ? { text: `[client tool error: ${text}]`, failed: true }
      : { text, failed: false };
  }
  return {
    text: typeof result === "string" ? result : JSON.stringify(result) ?? "null",
    failed: false,
  };
}

/**
 * A JSON-RPC error as mm's model reads it (acp-client-tools.md, "Erreurs"):
 * Go's ACP SDK prints an error as its compact JSON, `data` kept when present.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(
 *   errorText({ code: -32601, message: "Method not found" }),
 *   '[client tool error: {"code":-32601,"message":"Method not found"}]',
 * );
 * ```
 */
export function errorText(error: { code: number; message: string; data?: unknown }): string {
  const { code, message, data } = error;
  return `[client tool error: ${
    JSON.stringify(
      data === undefined || data === null ? { code, message } : { code, message, data },
    )
  }]`;
}

/** What the model reads after mm's own timeout: the deadline error of Go's `context`. */
export const DEADLINE_TEXT = "[client tool error: context deadline exceeded]";
/**
 * The final text of a call cut short by `session/cancel` (guess: the
 * documents say only that the turn ends cancelled; Go's `context` says this).
 */
export const CANCELLED_TEXT = "[client tool error: context canceled]";

/**
 * Cuts a result to `max` characters, keeping its start and its end
 * (acp-client-tools.md, "Erreurs": "début et fin conservés"). The result is
 * never longer than `max`. The marker in the middle is a guess: the
 * documents do not show mm's. When the full marker leaves no room for both
 * ends, it shrinks to `…`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(cutToMaxOutput("abcdefghij", 5), "ab…ij");
 * ```
 */
export function cutToMaxOutput(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  if (max <= 0) return "";
  const full = `\n[… ${chars.length - max} characters cut …]\n`;
  const marker = [...full].length + 2 <= max ? full : "…";
  const keep = max - [...marker].length;
  if (keep <= 0) return marker;
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  return chars.slice(0, head).join("") + marker +
    (tail > 0 ? chars.slice(chars.length - tail).join("") : "");
}

// ─── The scripted model ──────────────────────────────────────────────────────

const TOPIC_WORDS: [RegExp, string][] = [
  [/\b(operating system|os)\b/i, "os"],
  [/\b(cpu|processor)\b/i, "cpu"],
  [/\b(memory|ram)\b/i, "memory"],
  [/\b(uptime|since|up)\b/i, "uptime"],
  // Not a topic of host_info: lets a test see the tool's error result.
  [/\bdisk\b/i, "disk"],
];

/** The `_meta` an untidy model puts in its arguments when the question says `_meta`. */
export const MODEL_META = { "org.mini-me/sessionId": "made-up-by-the-model", note: "mine" };

/**
 * The calls the scripted model makes for a question: one per topic its
 * words name, in the order of the question; `os` and `memory` when it names
 * none. "without a topic" makes a call with no arguments, which mm's
 * required-parameter check stops. A question that says `_meta` makes a
 * model that puts a `_meta` of its own in its arguments, as a model may.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.deepEqual(plannedCalls("How much RAM?"), [{ topic: "memory" }]);
 * ```
 */
export function plannedCalls(question: string): Record<string, unknown>[] {
  const untidy = question.includes("_meta") ? { _meta: MODEL_META } : {};
  if (/without a topic/i.test(question)) return [{ ...untidy }];
  const found = TOPIC_WORDS
    .map(([pattern, topic]) => ({ topic, at: question.search(pattern) }))
    .filter(({ at }) => at >= 0)
    .sort((a, b) => a.at - b.at)
    .map(({ topic }) => ({ topic, ...untidy }));
  return found.length > 0 ? found : [{ topic: "os", ...untidy }, { topic: "memory", ...untidy }];
}

const TOPIC_LABEL: Record<string, string> = {
  os: "operating system",
  cpu: "CPU",
  memory: "memory",
  uptime: "uptime",
};

function labelOf(args: Record<string, unknown>): string {
  return TOPIC_LABEL[String(args.topic)] ?? `"${args.topic ?? "?"}"`;
}

/** The one-paragraph answer the scripted model writes from what it read. */
export function answerFrom(
  results: { args: Record<string, unknown>; text: string }[],
): string {
  const parts = results.map(({ args, text }) => `${labelOf(args)}: ${text}`);
  return `Here is what host_info reports about your machine — ${parts.join("; ")}.`;
}

/** Splits an answer at spaces into pieces of about 40 characters, as a model streams. */
export function streamPieces(text: string): string[] {
  const pieces: string[] = [];
  for (const word of text.split(/(?<= )/)) {
    if (pieces.length > 0 && pieces[pieces.length - 1].length + word.length <= 40) {
      pieces[pieces.length - 1] += word;
    } else pieces.push(word);
  }
  return pieces;
}

// ─── Sessions, kept across runs ──────────────────────────────────────────────

/** One step of a conversation, as a session file keeps it. */
export type HistoryEntry =
  | { kind: "user" | "agent"; text: string }
  | {
    kind: "tool";
    toolCallId: string;
    title: string;
    args: Record<string, unknown>;
    status: "completed" | "failed";
    text: string;
  };

/** A session file: `<state dir>/<session id>.json` (the layout is ours, not mm's). */
export interface SavedSession {
  /** The session id. */
  sessionId: string;
  /** The cwd of its last session/new, load or resume. */
  cwd: string;
  /** The number of the next `call_<n>`, so tool call ids never repeat in a session. */
  nextCall: number;
  /** The conversation. */
  history: HistoryEntry[];
}

interface Session extends SavedSession {
  tools: ClientTool[];
  turn?: AbortController;
}

/** A session id shaped like mm's: `20261110-224507-1f3a9c2e`. */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").slice(0, 15).replace("T", "-");
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return `${stamp}-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function stateDir(): string {
  return Deno.env.get("MM_SIM_STATE_DIR") ??
    `${Deno.env.get("TMPDIR") ?? "/tmp"}/mm-sim-sessions`;
}

function saveSession(session: Session): void {
  const { sessionId, cwd, nextCall, history } = session;
  try {
    Deno.mkdirSync(stateDir(), { recursive: true });
    Deno.writeTextFileSync(
      `${stateDir()}/${sessionId}.json`,
      JSON.stringify({ sessionId, cwd, nextCall, history } satisfies SavedSession),
    );
  } catch (error) {
    log(`[mm-sim] cannot save session ${sessionId}: ${messageOf(error)}`);
  }
}

/** Reads a saved session, or fails the request the way ACP names an unknown session. */
function loadSession(sessionId: string): SavedSession {
  try {
    // Ids become file names: only mm's own shape of id is looked up.
    if (!/^[\w.-]+$/.test(sessionId)) throw new Error("not an id");
    return JSON.parse(Deno.readTextFileSync(`${stateDir()}/${sessionId}.json`));
  } catch {
    throw new acp.RequestError(-32002, `Resource not found: session ${sessionId}`, {
      sessionId,
    });
  }
}

/** Sends a saved conversation as `session/update` notifications, as session/load does. */
async function replay(client: acp.AgentContext, saved: SavedSession): Promise<void> {
  const update = (u: acp.SessionUpdate) =>
    client.notify("session/update", { sessionId: saved.sessionId, update: u });
  for (const entry of saved.history) {
    if (entry.kind === "tool") {
      await update({
        sessionUpdate: "tool_call",
        toolCallId: entry.toolCallId,
        title: entry.title,
        kind: "other",
        status: "pending",
        rawInput: entry.args,
      });
      await update(finalUpdate(entry.toolCallId, entry.text, entry.status === "failed"));
    } else {
      await update({
        sessionUpdate: entry.kind === "user" ? "user_message_chunk" : "agent_message_chunk",
        content: { type: "text", text: entry.text },
      });
    }
  }
}

// ─── The agent ───────────────────────────────────────────────────────────────

function log(line: string): void {
  console.error(line);
}

/** How the scripted model orders its steps (`MM_SIM_MODEL`). */
export type ModelStyle = "batch" | "stepwise";

/** Builds the agent for one connection. */
function mmAgent(config: AgentConfig, style: ModelStyle, stopReason: acp.StopReason): acp.AgentApp {
  const sessions = new Map<string, Session>();
  let metaTools: ClientTool[] = [];
  let announced: unknown;

  /** The tools of a session being opened (acp-client-tools.md, "Découverte"). */
  const toolsFor = (client: acp.AgentContext, sessionId: string, cwd: string) => {
    const asks = announced !== undefined && announced !== false && announced !== null;
    // (acp-client-tools.md, "Mode request"): the list is asked "pendant qu'il
    // traite session/new, session/load et session/resume, avant d'y répondre",
    // again for each session. (acp-client-tools.md, "Configuration"):
    // `enabled: false` means no list request at all.
    if (config.enabled && config.discovery === "request" && asks) {
      return listTools(client, sessionId, cwd, config.timeoutMs);
    }
    return Promise.resolve(metaTools);
  };

  return acp.agent({ name: "mm-sim" })
    .onRequest("initialize", ({ params }) => {
      announced = record(params.clientCapabilities?._meta)["org.mini-me/tools"];
      if (config.enabled && config.discovery === "meta" && announced !== undefined) {
        if (Array.isArray(announced)) {
          metaTools = validated(announced);
          log(`[acp] client tools (meta): ${metaTools.map((t) => t.modelName).join(", ")}`);
        } else {
          // (acp-client-tools.md, "Mode meta"): `true` gives no tool and this line.
          log(
            `[acp] client tools: "org.mini-me/tools" is not a list of tools; a client that answers _org.mini-me/tools/list needs acp.clientTools.discovery: request`,
          );
        }
      }
      return {
        protocolVersion: 1,
        agentCapabilities: { loadSession: true, sessionCapabilities: { resume: {} } },
        agentInfo: { name: "mm", title: "mini-me (stand-in)", version: "sim" },
        authMethods: [],
      };
    })
    .onRequest("session/new", async ({ params, client }) => {
      const sessionId = newSessionId();
      const tools = await toolsFor(client, sessionId, params.cwd);
      const session: Session = { sessionId, cwd: params.cwd, nextCall: 1, history: [], tools };
      sessions.set(sessionId, session);
      saveSession(session);
      return { sessionId };
    })
    .onRequest("session/load", async ({ params, client }) => {
      const saved = loadSession(params.sessionId);
      const tools = await toolsFor(client, saved.sessionId, params.cwd);
      sessions.set(saved.sessionId, { ...saved, cwd: params.cwd, tools });
      // ACP: a load replays the conversation before it answers.
      await replay(client, saved);
      return {};
    })
    .onRequest("session/resume", async ({ params, client }) => {
      const saved = loadSession(params.sessionId);
      const tools = await toolsFor(client, saved.sessionId, params.cwd);
      sessions.set(saved.sessionId, { ...saved, cwd: params.cwd, tools });
      return {};
    })
    .onRequest("session/prompt", async ({ params, client }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      const exitCode = Deno.env.get("MM_SIM_EXIT_IN_TURN");
      if (exitCode) Deno.exit(Number(exitCode));
      const turn = new AbortController();
      session.turn = turn;
      try {
        return await promptTurn({
          config,
          style,
          client,
          session,
          question: params.prompt.map((b) => b.type === "text" ? b.text : "").join(" "),
          signal: turn.signal,
        }) ?? { stopReason };
      } finally {
        session.turn = undefined;
        saveSession(session);
      }
    })
    .onNotification("session/cancel", ({ params }) => {
      sessions.get(params.sessionId)?.turn?.abort();
    });
}

function validated(entries: readonly unknown[]): ClientTool[] {
  const { tools, skipped } = validateToolList(entries);
  for (const line of skipped) log(`[acp] client tools: ${line}`);
  return tools;
}

/** Request discovery: `_org.mini-me/tools/list`, bounded by the timeout. */
async function listTools(
  client: acp.AgentContext,
  sessionId: string,
  cwd: string,
  timeoutMs: number,
): Promise<ClientTool[]> {
  const timeout = AbortSignal.timeout(timeoutMs);
  // The wording of these failure lines is ours (guess): the documents say
  // only "une ligne sur stderr" (acp-client-tools.md, "Mode request").
  const failed = (why: string) => {
    log(`[acp] client tools: session ${sessionId}: ${why}`);
    return [];
  };
  let answer: unknown;
  try {
    answer = await client.request<unknown>("_org.mini-me/tools/list", { sessionId, cwd }, {
      cancellationSignal: timeout,
      stopWaitingOnCancel: true,
    });
  } catch (error) {
    return failed(
      `list request failed: ${
        timeout.aborted
          ? "context deadline exceeded"
          : error instanceof acp.RequestError
          ? JSON.stringify(
            error.data == null ? { code: error.code, message: error.message } : {
              code: error.code,
              message: error.message,
              data: error.data,
            },
          )
          : messageOf(error)
      }`,
    );
  }
  const list = record(answer).tools;
  if (!Array.isArray(list)) return failed("the list answer has no tools array");
  const tools = validated(list);
  log(
    `[acp] session ${sessionId} client tools (request): ${
      tools.map((t) => t.modelName).join(", ")
    }`,
  );
  return tools;
}

class Cancelled extends Error {}

/** Waits, unless the turn is cancelled first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return untilCancelled(new Promise((resolve) => setTimeout(resolve, ms)), signal);
}

/** Settles as `promise` does, or rejects with {@linkcode Cancelled} once `signal` aborts. */
function untilCancelled<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(new Cancelled());
    const onAbort = () => reject(new Cancelled());
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function finalUpdate(toolCallId: string, text: string, failed: boolean): acp.SessionUpdate {
  return {
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: failed ? "failed" : "completed",
    content: [{ type: "content", content: { type: "text", text } }],
  };
}

interface Turn {
  config: AgentConfig;
  style: ModelStyle;
  client: acp.AgentContext;
  session: Session;
  question: string;
  signal: AbortSignal;
}

/**
 * One prompt turn of the scripted model. Returns `cancelled`, or nothing
 * when the turn ended normally (the caller picks the stop reason).
 */
async function promptTurn(turn: Turn): Promise<acp.PromptResponse | undefined> {
  const { config, style, client, session, question, signal } = turn;
  const update = (u: acp.SessionUpdate) =>
    client.notify("session/update", { sessionId: session.sessionId, update: u });
  const say = async (text: string) => {
    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
    const last = session.history.at(-1);
    if (last?.kind === "agent") last.text += text;
    else session.history.push({ kind: "agent", text });
  };
  session.history.push({ kind: "user", text: question });
  const tool = session.tools.find((t) => t.modelName === "client_host_info");
  const calls = plannedCalls(question);
  const results: { args: Record<string, unknown>; text: string }[] = [];

  /** Announces a call (unless already announced), runs it and reports what the model read. */
  const run = async (args: Record<string, unknown>, toolCallId: string, announce: boolean) => {
    const title = `client: ${tool!.name}`;
    if (announce) {
      await update({
        sessionUpdate: "tool_call",
        toolCallId,
        title,
        kind: "other",
        status: "pending",
        rawInput: args,
      });
    }
    let outcome: { text: string; failed: boolean };
    let cancelled = false;
    try {
      outcome = await callTool(turn, tool!, toolCallId, args, style === "stepwise");
    } catch (error) {
      if (!(error instanceof Cancelled)) throw error;
      outcome = { text: CANCELLED_TEXT, failed: true };
      cancelled = true;
    }
    // (acp-client-tools.md, "Erreurs"): every result, failed or not, is cut
    // to maxOutput and reported as the end of the tool call.
    const text = cutToMaxOutput(outcome.text, config.maxOutput);
    await update(finalUpdate(toolCallId, text, outcome.failed));
    session.history.push({
      kind: "tool",
      toolCallId,
      title,
      args,
      status: outcome.failed ? "failed" : "completed",
      text,
    });
    if (cancelled) throw new Cancelled();
    results.push({ args, text });
  };

  try {
    // Real agents open with an empty chunk that only carries _meta.
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "" },
      _meta: { "org.mini-me/model": "scripted" },
    });
    await update({
      sessionUpdate: "agent_thought_chunk",
      content: {
        type: "text",
        text: tool
          ? `The user asks about the machine; ${tool.modelName} is "${tool.description}". I will call it ${calls.length} time(s).`
          : "The user asks about the machine, but I have no tool to look at it.",
      },
    });
    await sleep(Number(Deno.env.get("MM_SIM_THINK_MS") ?? 0), signal);
    let answer: string;
    if (tool) {
      await update({
        sessionUpdate: "plan",
        entries: calls.map((args) => ({
          content: `client_host_info ${JSON.stringify(args)}`,
          priority: "medium",
          status: "pending",
        })),
      });
      const ids = calls.map(() => `call_${session.nextCall++}`);
      if (style === "stepwise") {
        // As an LLM does: a sentence, one call, its result, then the next.
        for (const [i, args] of calls.entries()) {
          await say(`Let me ask host_info about the ${labelOf(args)}. `);
          await run(args, ids[i], true);
        }
      } else {
        // The model asks for all its calls in one response: mm announces them
        // all, then runs them together. The Node demo's recorded output shows
        // exactly this order: both 🛠️ lines, both [client] lines, then both
        // │ results.
        for (const [i, args] of calls.entries()) {
          await update({
            sessionUpdate: "tool_call",
            toolCallId: ids[i],
            title: `client: ${tool.name}`,
            kind: "other",
            status: "pending",
            rawInput: args,
          });
        }
        const settled = await Promise.allSettled(calls.map((args, i) => run(args, ids[i], false)));
        const failure = settled.find((s) => s.status === "rejected");
        if (failure) throw failure.reason;
        // Results in the order of the question, whatever order they came back in.
        results.sort((a, b) => calls.indexOf(a.args) - calls.indexOf(b.args));
      }
      answer = answerFrom(results);
    } else {
      answer = "I cannot see your machine: no client tool was offered to me, and I have no shell.";
    }
    for (const piece of streamPieces(answer)) {
      if (signal.aborted) throw new Cancelled();
      await say(piece);
    }
    await update({ sessionUpdate: "usage_update", used: 1200 + answer.length, size: 32768 });
    return undefined;
  } catch (error) {
    if (error instanceof Cancelled || signal.aborted) return { stopReason: "cancelled" };
    throw error;
  }
}

const PERMISSION_OPTIONS: acp.PermissionOption[] = [
  // The options mm offers are in none of its documents (guess): the usual ACP three.
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/**
 * One call of a client tool (acp-client-tools.md, "Appel d'un outil"): the
 * required-parameter check, the permission when the file asks for one, then
 * the extension request with the model's arguments at the top level of
 * `params`. Throws {@linkcode Cancelled} when the turn is cancelled.
 */
async function callTool(
  turn: Turn,
  tool: ClientTool,
  toolCallId: string,
  args: Record<string, unknown>,
  reportProgress: boolean,
): Promise<{ text: string; failed: boolean }> {
  const { config, client, session, signal } = turn;
  // (acp-client-tools.md, "Avant la requête"): no request without the required parameters.
  const missing = tool.required.filter((name) => !(name in args));
  if (missing.length > 0) {
    return {
      text: `[client tool error: missing required parameters: ${missing.join(", ")}]`,
      failed: true,
    };
  }
  // (acp-client-tools.md, "Avant la requête"): with `permissions: ask`, or
  // `auto` when `yolo` is false, mm asks first; the title is "client: <name>".
  if (config.permissions === "ask" || !config.yolo) {
    const asked = client.request("session/request_permission", {
      sessionId: session.sessionId,
      toolCall: {
        toolCallId,
        title: `client: ${tool.name}`,
        kind: "other",
        status: "pending",
        rawInput: args,
      },
      options: PERMISSION_OPTIONS,
    });
    // An error answer, or any outcome but an allow option, is a refusal, and
    // the turn goes on (guess: the documents list only the refusal's text).
    const answer = await untilCancelled(asked.catch(() => undefined), signal);
    const outcome = answer?.outcome;
    const chosen = outcome?.outcome === "selected"
      ? PERMISSION_OPTIONS.find((o) => o.optionId === outcome.optionId)
      : undefined;
    if (!chosen?.kind.startsWith("allow")) {
      if (signal.aborted) throw new Cancelled();
      return { text: `[${tool.modelName} rejected by user]`, failed: true };
    }
  }
  if (reportProgress) {
    await client.notify("session/update", {
      sessionId: session.sessionId,
      update: { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" },
    });
  }
  const timeout = AbortSignal.timeout(config.timeoutMs);
  try {
    // (acp-client-tools.md, "Requête"): the model's arguments at the top
    // level; a `_meta` the model put there is replaced, not merged.
    const result = await client.request<unknown>(
      tool.method,
      { ...args, _meta: { "org.mini-me/sessionId": session.sessionId } },
      // Aborting sends $/cancel_request: on timeout, and on session/cancel
      // (acp-client-tools.md, "Erreurs").
      { cancellationSignal: AbortSignal.any([signal, timeout]), stopWaitingOnCancel: true },
    );
    return resultText(result);
  } catch (error) {
    if (signal.aborted) throw new Cancelled();
    if (timeout.aborted) return { text: DEADLINE_TEXT, failed: true };
    if (error instanceof acp.RequestError) return { text: errorText(error), failed: true };
    return { text: `[client tool error: ${messageOf(error)}]`, failed: true };
  }
}

// ─── Helpers ─────────────────────────────────────────────────────────────────

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const STOP_REASONS = ["end_turn", "max_tokens", "max_turn_requests", "refusal"] as const;

/** Reads a knob that takes one of a few values, warning about any other. */
function knob<T extends string>(name: string, values: readonly T[]): T {
  const value = Deno.env.get(name) ?? values[0];
  if ((values as readonly string[]).includes(value)) return value as T;
  log(`[mm-sim] ${name}: unknown value ${JSON.stringify(value)} (using ${values[0]})`);
  return values[0];
}

/** Runs the stand-in on stdio, as `mm -acp -agent FILE`. */
async function main(args: string[]): Promise<number> {
  const agentAt = args.indexOf("-agent");
  if (!args.includes("-acp") || agentAt < 0 || !args[agentAt + 1]) {
    log("usage: mm_sim.ts -acp -agent FILE");
    return 2;
  }
  const pidFile = Deno.env.get("MM_SIM_PID_FILE");
  if (pidFile) Deno.writeTextFileSync(pidFile, String(Deno.pid));
  let config: AgentConfig;
  try {
    config = readAgentConfig(await Deno.readTextFile(args[agentAt + 1]));
  } catch (error) {
    log(`mm: cannot load agent ${args[agentAt + 1]}: ${messageOf(error)}`);
    return 1;
  }
  for (const line of config.warnings) log(line);
  // `default` names the batch order too.
  const style = Deno.env.get("MM_SIM_MODEL") === "default"
    ? "batch"
    : knob<ModelStyle>("MM_SIM_MODEL", ["batch", "stepwise"]);
  const agent = mmAgent(config, style, knob("MM_SIM_STOP_REASON", STOP_REASONS));
  const connection = agent.connect(acp.ndJsonStream(Deno.stdout.writable, Deno.stdin.readable));
  await connection.closed;
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
