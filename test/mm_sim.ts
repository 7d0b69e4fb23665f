/**
 * A stand-in for mini-me (`mm -acp -agent FILE`): an ACP agent, built on the official SDK, that
 * follows mm's client-tools protocol (mini-me's acp-client-tools.md, "Référence : outils du client
 * ACP") on every point a client can see, with a scripted model instead of an LLM.
 *
 * Started with `--agent-sim` first (the launcher `test/agent-sim`), it is instead an ACP agent
 * that is not mm: it ignores mm's client tools, and takes the client's tools the standard way,
 * from the MCP servers that `session/new` (`session/load`, `session/resume`) names in
 * `mcpServers`, as an MCP client (the MCP TypeScript SDK, loaded in that mode only). Its
 * `--asks` argument makes it ask permission before each call in the shape of a real adapter
 * (Claude, gemini-cli, codex-acp, qwen-code), and `--connect` says when it connects.
 *
 * It is a test peer and a demo, not a product. `client.ts` never imports it. Where mini-me's
 * documents (or, in agent mode, the adapters' captured frames) are silent, the choice is marked
 * (guess). Its knobs, the `MM_SIM_*` environment variables, are in test/README.md; a real mm has
 * none of them.
 *
 * @module
 */

import * as acp from "npm:@agentclientprotocol/sdk@2.4.0";
import { loadAll } from "npm:js-yaml@^5.5.0";
import { parseArgs } from "node:util";
// Types only: erased at run time, so mm mode (and `deno task demo`) never fetches the MCP SDK.
import type { Client as McpClient } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
import type { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
import type { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";

// ─── The agent file ──────────────────────────────────────────────────────────

/**
 * The keys of an agent file that this protocol depends on: `yolo`, `bashTool`, `maxOutput`, and those of
 * `acp.clientTools` (acp-client-tools.md, "Configuration"), the timeout in ms; `warnings`: lines
 * for mm's stderr.
 */
export interface AgentConfig {
  yolo: boolean;
  bashTool: boolean;
  maxOutput: number;
  enabled: boolean;
  discovery: "meta" | "request";
  permissions: "auto" | "ask";
  timeoutMs: number;
  warnings: string[];
}

// mm's default maxOutput is in none of its documents (guess): it never cuts host_info's answers.
const DEFAULT_MAX_OUTPUT = 30_000;
const DEFAULT_TIMEOUT_MS = 30_000;
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3.6e6 };

/**
 * Parses a Go duration (`time.ParseDuration`), the form of mm's durations (acp-client-tools.md,
 * "Configuration": `30s`): `500ms`, `1m30s`, `1.5s`, `2h45m`. Returns milliseconds, or `undefined`
 * when the text is not one (`5`).
 */
export function parseDuration(text: string): number | undefined {
  if (/^[-+]?0$/.test(text)) return 0; // Go accepts a bare 0, and no other bare number.
  const sign = text.startsWith("-") ? -1 : 1;
  const rest = text.replace(/^[-+]/, "");
  const part = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  let match;
  while (part.lastIndex < rest.length && (match = part.exec(rest))) {
    total += Number(match[1]) * UNIT_MS[match[2].replace(/[µμ]/, "u")];
  }
  return rest !== "" && part.lastIndex === rest.length ? sign * total : undefined;
}

/** Reads the keys of {@linkcode AgentConfig} from an agent file's YAML text. */
export function readAgentConfig(text: string): AgentConfig {
  // Go's YAML decoding reads the first document; none (an empty file, only comments) is no keys.
  const doc = record(loadAll(text)[0]);
  const tools = record(record(doc.acp).clientTools);
  const { timeout } = tools;
  const parsed = typeof timeout === "string" ? parseDuration(timeout) ?? 0 : 0;
  // A timeout of zero or less would end every call at once: a bad value too; mm's own wording for a
  // bad duration is in none of its documents (guess).
  const bad = timeout !== undefined && timeout !== null && parsed <= 0;
  const shown = JSON.stringify(String(timeout));
  const line = `[acp] config: acp.clientTools.timeout: invalid duration ${shown} (using 30s)`;
  const max = doc.maxOutput;
  return {
    // Only `yolo: false` asks ("auto : … que si yolo vaut false"); without the key, calls run
    // unasked. mm's default is in none of its documents (guess).
    yolo: doc.yolo !== false,
    bashTool: doc.bashTool === true,
    maxOutput: typeof max === "number" && max >= 0 ? Math.floor(max) : DEFAULT_MAX_OUTPUT,
    enabled: tools.enabled !== false,
    discovery: tools.discovery === "request" ? "request" : "meta",
    permissions: tools.permissions === "ask" ? "ask" : "auto",
    timeoutMs: parsed > 0 ? parsed : DEFAULT_TIMEOUT_MS,
    warnings: bad ? [line] : [],
  };
}

// ─── The tool list ───────────────────────────────────────────────────────────

/** A client tool as mm keeps it after validation, with parts of its `inputSchema`. */
export interface ClientTool {
  modelName: string;
  name: string;
  method: string;
  description: string;
  required: string[];
  properties: Record<string, unknown>;
}

/**
 * The name the model sees (acp-client-tools.md, "Description d'un outil"): each character outside
 * `[A-Za-z0-9]` becomes `_`, runs of `_` become one, leading and trailing `_` go, `client_` goes in
 * front (`client_open_buffers`).
 */
export function modelName(name: string): string {
  return `client_${name.replace(/[^A-Za-z0-9]/g, "_").replace(/_+/g, "_").replace(/^_|_$/g, "")}`;
}

/**
 * Validates each entry of a tool list separately (acp-client-tools.md, "Validation d'une liste"):
 * an invalid entry is skipped with a reason, the others are kept, duplicates keep the first, and
 * the tools are sorted by model name. A missing description reads `Tool provided by the editor
 * (<method>).` (acp-client-tools.md, "Description d'un outil").
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
    const { name, method, description } = entry as Record<string, string>;
    const schema = record(goDecoded((entry as Record<string, unknown>).inputSchema));
    const required = schema.required;
    const properties = record(schema.properties);
    // Go reads an empty string as it reads an absent one (guess: mm tests for "").
    const about = description || `Tool provided by the editor (${method}).`;
    const tool = { name, method, description: about, properties, modelName: modelName(name) };
    tools.push({ ...tool, required: Array.isArray(required) ? required.map(String) : [] });
  });
  tools.sort((a, b) => compare(a.modelName, b.modelName));
  return { tools, skipped };
}

/**
 * What Go's `encoding/json` makes of a value decoded into a struct: `null` is the zero struct, and
 * a `null` field is the same as an absent one.
 */
function goDecoded(value: unknown): unknown {
  if (!isRecord(value)) return value ?? {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null));
}

/** The reason for skipping an entry, or `undefined` when it is valid. */
function invalidReason(entry: unknown, kept: ClientTool[]): string | undefined {
  // mm decodes each entry into a Go struct: a value of another JSON type, or a field of the wrong
  // type, fails there. The text after "not a tool description: " is ours (guess); the documents
  // show only the prefix.
  const notATool = "not a tool description:";
  if (!isRecord(entry)) {
    return `${notATool} cannot decode ${jsonType(entry)} into a tool description`;
  }
  for (const field of ["name", "description", "method"]) {
    if (field in entry && typeof entry[field] !== "string") {
      return `${notATool} field ${field} is ${jsonType(entry[field])}, not a string`;
    }
  }
  if ("inputSchema" in entry && !isRecord(entry.inputSchema)) {
    return `${notATool} field inputSchema is ${jsonType(entry.inputSchema)}, not an object`;
  }
  if (!entry.name) return "no name";
  const method = typeof entry.method === "string" ? entry.method : "";
  if (!method.startsWith("_")) {
    return `method ${JSON.stringify(method)} must start with "_" (an ACP extension method)`;
  }
  const schema = record(goDecoded(entry.inputSchema));
  // How mm quotes the type it got is not shown (guess: as JSON).
  if ("type" in schema && schema.type !== "object") {
    return `inputSchema.type must be "object", got ${JSON.stringify(schema.type)}`;
  }
  const name = modelName(entry.name as string);
  return kept.some((t) => t.modelName === name) ? `duplicate tool name "${name}"` : undefined;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

// ─── What the model reads ────────────────────────────────────────────────────

/** What the model read from a call, and whether the call failed. */
export type Outcome = { text: string; failed: boolean };

/**
 * Turns a tool's answer into the text the model reads (acp-client-tools.md, "Réponse"): the `text`
 * of each text block concatenated; another block replaced by `[client tool: non-text content of
 * type <type> skipped]`; `isError: true` wrapped as `[client tool error: <text>]`; any other JSON
 * value as a string (a JSON string without its quotes).
 */
export function resultText(result: unknown): Outcome {
  if (!isRecord(result) || !Array.isArray(result.content)) {
    const text = typeof result === "string" ? result : JSON.stringify(result) ?? "null";
    return { text, failed: false };
  }
  const text = result.content.map((block) => {
    if (isRecord(block) && block.type === "text") return String(block.text ?? "");
    const type = isRecord(block) ? block.type : typeof block;
    return `[client tool: non-text content of type ${type} skipped]`;
  }).join("");
  const failed = result.isError === true;
  return { text: failed ? `[client tool error: ${text}]` : text, failed };
}

/** A JSON-RPC error as Go's ACP SDK prints it: its compact JSON, `data` kept when present. */
function errorJson({ code, message, data }: { code: number; message: string; data?: unknown }) {
  return JSON.stringify(data == null ? { code, message } : { code, message, data });
}

/** A JSON-RPC error as mm's model reads it (acp-client-tools.md, "Erreurs"). */
export const errorText = (error: { code: number; message: string; data?: unknown }) =>
  `[client tool error: ${errorJson(error)}]`;

/** The deadline error of Go's `context`: mm's own timeout, of a call or of the list request. */
const DEADLINE = "context deadline exceeded";
export const DEADLINE_TEXT = `[client tool error: ${DEADLINE}]`;
/** The end of a client tool's call cut short by `session/cancel` (guess: Go's `context` says this). */
export const CANCELLED_TEXT = "[client tool error: context canceled]";

/**
 * Cuts a result to `max` characters, keeping its start and its end (acp-client-tools.md, "Erreurs":
 * "début et fin conservés"). The marker in the middle is a guess; it shrinks to `…` when it leaves
 * no room for both.
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
  return chars.slice(0, head).join("") + marker + chars.slice(chars.length - keep + head).join("");
}

// ─── The scripted model ──────────────────────────────────────────────────────

/** The words of each `host_info` topic, the topic, and how an answer names it. */
const TOPIC_WORDS: [RegExp, string, string?][] = [
  [/\b(operating system|os)\b/i, "os", "operating system"],
  [/\b(cpu|processor)\b/i, "cpu", "CPU"],
  [/\b(memory|ram)\b/i, "memory", "memory"],
  [/\b(uptime|since|up)\b/i, "uptime", "uptime"],
  // Not a topic of host_info: lets a test see the tool's error result.
  [/\bdisk\b/i, "disk"],
];

/** The `_meta` an untidy model puts in its arguments when the question says `_meta`. */
export const MODEL_META = { "org.mini-me/sessionId": "made-up-by-the-model", note: "mine" };

/**
 * The `host_info` calls for a question: one per topic its words name, in their order; none named:
 * `os` and `memory`, unless `byDefault` is false. "without a topic": a call with no arguments,
 * which mm's check stops.
 */
export function plannedCalls(question: string, byDefault = true): Record<string, unknown>[] {
  if (/without a topic/i.test(question)) return [{}];
  const found = TOPIC_WORDS
    .map(([pattern, topic]) => ({ topic, at: question.search(pattern) }))
    .filter(({ at }) => at >= 0)
    .sort((a, b) => a.at - b.at)
    .map(({ topic }) => ({ topic }));
  return found.length > 0 || !byDefault ? found : [{ topic: "os" }, { topic: "memory" }];
}

/** The placeholder of each JSON Schema type but `string` (the stand-in's own choice). */
const PLACEHOLDER = { number: 0, integer: 0, boolean: false, array: [], object: {}, null: null };

/**
 * The arguments the scripted model gives a tool other than `host_info`: for each required property,
 * its first `enum` value, else a placeholder of its `type` (the first but `null` of a list):
 * `"example"` for a string or no known type, `0` for a number or an integer, `false`, `[]`, `{}`,
 * `null`.
 */
export function exampleArgs(tool: Pick<ClientTool, "required" | "properties">) {
  return Object.fromEntries(tool.required.map((name): [string, unknown] => {
    const { enum: values, type } = record(tool.properties[name]);
    if (Array.isArray(values) && values.length > 0) return [name, values[0]];
    const first = String(Array.isArray(type) ? type.find((t) => t !== "null") ?? type[0] : type);
    const known = Object.hasOwn(PLACEHOLDER, first) ? first as keyof typeof PLACEHOLDER : undefined;
    return [name, known ? structuredClone(PLACEHOLDER[known]) : "example"];
  }));
}

/** A call the scripted model decides on: a tool, and its arguments. */
export type PlannedCall = { tool: ClientTool; args: Record<string, unknown> };

/**
 * Whether a tool is the demo's `host_info`: mm's model sees the client's as `client_host_info`; an
 * agent's model (agent mode) sees an MCP tool by its own name.
 */
export const isHostInfo = (tool: ClientTool): boolean =>
  tool.modelName === "client_host_info" || tool.modelName === "host_info";

/**
 * mm's own shell tool, on when the agent file says `bashTool: true`. How mm shows its call to a
 * client — its title `bash: <command>`, its kind `execute`, its `rawInput` `{command}` — is in none
 * of mini-me's documents (guess).
 */
export const BASH: ClientTool = {
  modelName: "bash",
  name: "bash",
  method: "",
  description: "Runs a shell command.",
  required: ["command"],
  properties: { command: { type: "string" } },
};
/** The read-only command the model runs for what host_info cannot say: how big the disk is. */
export const DISK_COMMAND = "df -h .";

/**
 * The calls of a turn: `host_info` ({@linkcode isHostInfo}) for its topics, then, in the order of
 * the question, each other tool whose name or model name the question has as a word, in any case
 * (the stand-in's own rule), with {@linkcode exampleArgs}. A question that says `_meta` makes a
 * model that puts a `_meta` of its own in its arguments, as a model may. `scripted`, by tool name,
 * gives arguments that go over the model's own (`MM_SIM_ARGS`): a wrong type, a value of the
 * user's.
 */
export function planTurn(
  question: string,
  tools: readonly ClientTool[],
  scripted: Record<string, Record<string, unknown>> = {},
  bash = false,
): PlannedCall[] {
  const untidy = question.includes("_meta") ? { _meta: MODEL_META } : {};
  const hostInfo = tools.find(isHostInfo);
  const namedAt = ({ name, modelName }: ClientTool) => {
    const names = [name.trim(), modelName].filter((n) => n !== "" && n !== "client_");
    const any = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
    return question.search(new RegExp(`(?<![A-Za-z0-9_])(?:${any})(?![A-Za-z0-9_])`, "i"));
  };
  const others = tools
    .map((tool) => ({ tool, at: tool === hostInfo ? -1 : namedAt(tool) }))
    .filter(({ at }) => at >= 0)
    .sort((a, b) => a.at - b.at);
  const topics = hostInfo || bash ? plannedCalls(question, others.length === 0) : [];
  const given = (tool: ClientTool) => record(scripted[tool.name]);
  return [
    ...topics.flatMap((args): PlannedCall[] => {
      // With a shell, the disk is asked of the shell, not of host_info, which has no such topic.
      if (bash && args.topic === "disk") return [{ tool: BASH, args: { command: DISK_COMMAND } }];
      return hostInfo ? [{ tool: hostInfo, args: { ...args, ...given(hostInfo), ...untidy } }] : [];
    }),
    ...others.map(({ tool }) => ({
      tool,
      args: { ...exampleArgs(tool), ...given(tool), ...untidy },
    })),
  ];
}

/**
 * `MM_SIM_ARGS`: arguments by tool name, as JSON, that the model gives over its own. A name no
 * offered tool has (a misspelt one) is said on stderr, not dropped in silence.
 */
function scriptedArgs(tools: readonly ClientTool[]): Record<string, Record<string, unknown>> {
  const text = Deno.env.get("MM_SIM_ARGS");
  if (!text) return {};
  let scripted: Record<string, Record<string, unknown>>;
  try {
    scripted = record(JSON.parse(text)) as Record<string, Record<string, unknown>>;
  } catch {
    log(`[mm-sim] MM_SIM_ARGS: not JSON: ${JSON.stringify(text)} (ignored)`);
    return {};
  }
  const offered = tools.map((tool) => tool.name);
  for (const name of Object.keys(scripted).filter((given) => !offered.includes(given))) {
    const names = offered.join(", ") || "none";
    log(
      `[mm-sim] MM_SIM_ARGS names ${JSON.stringify(name)}, a tool not offered (${names}): ignored`,
    );
  }
  return scripted;
}

/** What a result is about: a `host_info` topic, or the name of another tool. */
function labelOf(tool: string, args: Record<string, unknown>): string {
  if (tool === BASH.name) return String(args.command);
  if (modelName(tool) !== "client_host_info") return tool;
  return TOPIC_WORDS.find(([, topic]) => topic === args.topic)?.[2] ?? `"${args.topic ?? "?"}"`;
}

/** A result as the answer quotes it: the tool's name, the model's arguments, what it read. */
export type Result = { tool: string; args: Record<string, unknown>; text: string };

/** The one-paragraph answer the scripted model writes from what it read. */
export function answerFrom(results: Result[]): string {
  const tools = [...new Set(results.map((r) => r.tool))];
  const parts = results.map(({ tool, args, text }) => `${labelOf(tool, args)}: ${text.trimEnd()}`);
  const verb = tools.length > 1 ? "report" : "reports";
  return `Here is what ${tools.join(" and ")} ${verb} about your machine — ${parts.join("; ")}.`;
}

/** Splits an answer at spaces into pieces of about 40 characters, as a model streams. */
export function streamPieces(text: string): string[] {
  const pieces: string[] = [];
  for (const word of text.split(/(?<= )/)) {
    if ((pieces.at(-1)?.length ?? Infinity) + word.length <= 40) pieces[pieces.length - 1] += word;
    else pieces.push(word);
  }
  return pieces;
}

// ─── Sessions, kept across runs ──────────────────────────────────────────────

/** A tool call: its id, its title (`client: <name>`), its kind (default `other`), its arguments. */
export type ToolCall = {
  toolCallId: string;
  title: string;
  toolKind?: acp.ToolKind;
  args: Record<string, unknown>;
};

/** One step of a conversation, as a session file keeps it. */
export type HistoryEntry =
  | { kind: "user" | "agent"; text: string }
  | ToolCall & { kind: "tool"; status: "completed" | "failed"; text: string };

/**
 * A session file, `<state dir>/<session id>.json` (the layout is ours, not mm's): `nextCall`
 * numbers the next `call_<n>`, so that ids never repeat.
 */
export interface SavedSession {
  sessionId: string;
  cwd: string;
  updatedAt?: string;
  nextCall: number;
  history: HistoryEntry[];
}

/** An open session: its saved part, its tools, its turn, and in agent mode its MCP servers. */
type Session = SavedSession & { tools: ClientTool[]; turn?: AbortController; mcp?: McpSide };

/** A session id shaped like mm's: `20261110-224507-1f3a9c2e`. */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").slice(0, 15).replace("T", "-");
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return `${stamp}-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const stateDir = () =>
  Deno.env.get("MM_SIM_STATE_DIR") ?? `${Deno.env.get("TMPDIR") ?? "/tmp"}/mm-sim-sessions`;

function saveSession({ sessionId, cwd, nextCall, history }: Session): void {
  const saved = { sessionId, cwd, updatedAt: new Date().toISOString(), nextCall, history };
  try {
    Deno.mkdirSync(stateDir(), { recursive: true });
    Deno.writeTextFileSync(`${stateDir()}/${sessionId}.json`, JSON.stringify(saved));
  } catch (error) {
    log(`[mm-sim] cannot save session ${sessionId}: ${messageOf(error)}`);
  }
}

/** A saved session, or `undefined` when there is none of that id. */
function readSession(sessionId: string): SavedSession | undefined {
  // Ids become file names: only mm's own shape of id is looked up.
  if (!/^[\w.-]+$/.test(sessionId)) return undefined;
  try {
    const saved = JSON.parse(Deno.readTextFileSync(`${stateDir()}/${sessionId}.json`));
    const valid = typeof saved?.cwd === "string" && Array.isArray(saved.history);
    return valid ? { ...saved, sessionId } : undefined;
  } catch { /* no such file, or not a session's */ }
}

/** Every session of the state folder. */
function savedSessions(): SavedSession[] {
  let names: string[] = [];
  try {
    names = [...Deno.readDirSync(stateDir())].map((e) => e.name).filter((n) => n.endsWith(".json"));
  } catch { /* no folder yet: no session */ }
  return names.flatMap((name) => readSession(name.slice(0, -".json".length)) ?? []);
}

/**
 * A session's title in session/list (guess): its first question, on one line, cut to 60 characters
 * (the last one `…`); none before a question.
 */
export function sessionTitle(history: readonly HistoryEntry[]): string | undefined {
  const texts = history.map((e) => e.kind === "user" ? e.text.replace(/\s+/g, " ").trim() : "");
  const chars = [...texts.find((t) => t !== "") ?? ""];
  if (chars.length === 0) return undefined;
  return chars.length <= 60 ? chars.join("") : `${chars.slice(0, 59).join("").trimEnd()}…`;
}

/**
 * session/list (guess: mini-me's documents do not say that mm has it): the saved sessions of `cwd`
 * (all when it is absent), the most recently saved first. All in one answer: no `nextCursor`, so no
 * cursor to read.
 */
export function listSessions(saved: readonly SavedSession[], cwd?: string | null) {
  const recent = (a: SavedSession, b: SavedSession) =>
    compare(b.updatedAt ?? "", a.updatedAt ?? "") || compare(b.sessionId, a.sessionId);
  return saved.filter((s) => (cwd ?? s.cwd) === s.cwd).sort(recent).map((s): acp.SessionInfo => {
    const title = sessionTitle(s.history);
    const { sessionId, updatedAt } = s;
    return { sessionId, cwd: s.cwd, ...(title && { title }), ...(updatedAt && { updatedAt }) };
  });
}

/** Sends a saved conversation as `session/update` notifications, as session/load does. */
async function replay(client: acp.AgentContext, saved: SavedSession): Promise<void> {
  const update = updater(client, saved.sessionId);
  for (const entry of saved.history) {
    if (entry.kind === "tool") {
      await update({ sessionUpdate: "tool_call", ...pending(entry) });
      await update(finalUpdate(entry.toolCallId, { ...entry, failed: entry.status === "failed" }));
    } else {
      const sessionUpdate = entry.kind === "user" ? "user_message_chunk" : "agent_message_chunk";
      await update({ sessionUpdate, content: text(entry.text) });
    }
  }
}

// ─── The agent ───────────────────────────────────────────────────────────────

/**
 * The agent file and the knobs (`MM_SIM_SESSIONS`: a method it lacks answers -32601); in agent
 * mode, the launcher's arguments and the MCP SDK (mm mode has neither).
 */
interface Settings {
  config: AgentConfig;
  style: "batch" | "stepwise";
  stopReason: acp.StopReason;
  sessionSupport: "full" | "load" | "none";
  agent?: AgentSimOptions & { sdk: McpSdk };
}

/** What the agent keeps for one connection: its sessions, and what the client announced. */
interface AgentState {
  settings: Settings;
  sessions: Map<string, Session>;
  /** The client's `_meta["org.mini-me/tools"]` at initialize, as it came. */
  announced: unknown;
  /** The tools of meta discovery, validated at initialize. */
  metaTools: ClientTool[];
}

/** Builds the agent for one connection: mm, or in agent mode an agent that is not mm. */
function standInAgent(state: AgentState): acp.AgentApp {
  const support = state.settings.sessionSupport;
  /** Fails a request for a session method the stand-in lacks (`MM_SIM_SESSIONS`). */
  const mustOffer = (method: string) => {
    if (support === "full" || (support === "load" && method === "session/load")) return;
    throw acp.RequestError.methodNotFound(method);
  };

  return acp.agent({ name: "mm-sim" })
    .onRequest("initialize", ({ params }) => answerInitialize(state, params))
    .onRequest("session/new", async ({ params: { cwd, mcpServers }, client }) => {
      const sessionId = newSessionId();
      const session: Session = { sessionId, cwd, nextCall: 1, history: [], tools: [] };
      // Kept before it has its tools: stdin that ends meanwhile ends its MCP connections too.
      state.sessions.set(sessionId, session);
      await openTools(state, client, session, mcpServers);
      saveSession(session);
      return { sessionId };
    })
    .onRequest("session/load", async ({ params, client }) => {
      mustOffer("session/load");
      // ACP: a load replays the conversation before it answers.
      await replay(client, await reopen(state, client, params));
      return {};
    })
    .onRequest("session/resume", async ({ params, client }) => {
      mustOffer("session/resume");
      await reopen(state, client, params);
      return {};
    })
    .onRequest("session/list", ({ params }) => {
      mustOffer("session/list");
      return { sessions: listSessions(savedSessions(), params.cwd) };
    })
    .onRequest("session/close", async ({ params }) => {
      // ACP's session/close: the session's turn cancelled and what it holds freed. That mm has it is
      // in none of its documents (guess): advertised, and done, with `MM_SIM_SESSIONS=full`.
      mustOffer("session/close");
      const session = state.sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      session.turn?.abort();
      state.sessions.delete(params.sessionId);
      // In agent mode its MCP connections go with it, and a stdio server it spawned ends.
      await closeMcp(session);
      return {};
    })
    .onRequest("session/prompt", ({ params, client }) => answerPrompt(state, client, params))
    .onNotification("session/cancel", ({ params }) => {
      state.sessions.get(params.sessionId)?.turn?.abort();
    });
}

/**
 * Answers initialize: keeps the tools the client announces, and says what the agent offers. In
 * agent mode the client's `org.mini-me/tools` are not read at all (an agent that is not mm knows
 * nothing of them), and `mcpCapabilities` says which MCP servers it takes.
 */
function answerInitialize(state: AgentState, params: acp.InitializeRequest) {
  const { sessionSupport: support, agent } = state.settings;
  if (!agent) keepClientTools(state, params);
  const full = support === "full"
    ? { sessionCapabilities: { resume: {}, list: {}, close: {} } }
    : {};
  const mcp = agent ? { mcpCapabilities: { http: agent.http } } : {};
  const agentInfo = agent
    ? AGENT_SIM_INFO
    : { name: "mm", title: "mini-me (stand-in)", version: "sim" };
  const agentCapabilities = { loadSession: support !== "none", ...full, ...mcp };
  return { protocolVersion: 1, agentCapabilities, agentInfo, authMethods: [] };
}

/** Keeps the tools the client announces in initialize (acp-client-tools.md, "Mode meta"). */
function keepClientTools(state: AgentState, params: acp.InitializeRequest): void {
  const { config } = state.settings;
  const announced = record(params.clientCapabilities?._meta)["org.mini-me/tools"];
  state.announced = announced;
  if (!config.enabled || config.discovery !== "meta" || announced === undefined) return;
  if (Array.isArray(announced)) {
    state.metaTools = validated(announced);
    log(`[acp] client tools (meta): ${state.metaTools.map((t) => t.modelName).join(", ")}`);
  } else {
    // (acp-client-tools.md, "Mode meta"): `true` gives no tool and this line.
    log(
      `[acp] client tools: "org.mini-me/tools" is not a list of tools; a client that answers _org.mini-me/tools/list needs acp.clientTools.discovery: request`,
    );
  }
}

/** The tools of a session being opened (acp-client-tools.md, "Découverte"). */
function toolsFor(state: AgentState, client: acp.AgentContext, sessionId: string, cwd: string) {
  const { config } = state.settings;
  const { announced } = state;
  const asks = announced !== undefined && announced !== false && announced !== null;
  // (acp-client-tools.md, "Mode request"): the list is asked "pendant qu'il traite session/new,
  // session/load et session/resume, avant d'y répondre", again for each session.
  // (acp-client-tools.md, "Configuration"): `enabled: false` means no list request at all.
  if (config.enabled && config.discovery === "request" && asks) {
    return listTools(client, sessionId, cwd, config.timeoutMs);
  }
  return Promise.resolve(state.metaTools);
}

/** Validates a tool list, and logs each entry it skips. */
function validated(entries: readonly unknown[]): ClientTool[] {
  const { tools, skipped } = validateToolList(entries);
  for (const line of skipped) log(`[acp] client tools: ${line}`);
  return tools;
}

/** Request discovery: `_org.mini-me/tools/list`, bounded by the timeout. */
async function listTools(client: acp.AgentContext, sessionId: string, cwd: string, ms: number) {
  const timeout = AbortSignal.timeout(ms);
  // The wording of these failure lines is ours (guess): the documents say only "une ligne sur
  // stderr" (acp-client-tools.md, "Mode request").
  const failed = (why: string): ClientTool[] => {
    log(`[acp] client tools: session ${sessionId}: ${why}`);
    return [];
  };
  let answer: unknown;
  try {
    const options = { cancellationSignal: timeout, stopWaitingOnCancel: true };
    answer = await client.request<unknown>("_org.mini-me/tools/list", { sessionId, cwd }, options);
  } catch (error) {
    return failed(`list request failed: ${timeout.aborted ? DEADLINE : why(error)}`);
  }
  const list = record(answer).tools;
  if (!Array.isArray(list)) return failed("the list answer has no tools array");
  const tools = validated(list);
  const names = tools.map((t) => t.modelName).join(", ");
  log(`[acp] session ${sessionId} client tools (request): ${names}`);
  return tools;
}

/**
 * Gives a session being opened its tools: mm's client tools (acp-client-tools.md, "Découverte"),
 * or in agent mode those of the MCP servers the client names.
 */
async function openTools(
  state: AgentState,
  client: acp.AgentContext,
  session: Session,
  mcpServers: readonly acp.McpServer[],
): Promise<void> {
  const { agent } = state.settings;
  if (agent) {
    await openMcp(agent, session, mcpServers);
    return;
  }
  session.tools = await toolsFor(state, client, session.sessionId, session.cwd);
}

/** Opens a saved session again, for session/load and session/resume. */
async function reopen(
  state: AgentState,
  client: acp.AgentContext,
  params: { sessionId: string; cwd: string; mcpServers?: acp.McpServer[] },
) {
  const { sessionId, cwd } = params;
  const saved = readSession(sessionId);
  // The error for an unknown session is in none of mini-me's documents (guess).
  const notFound = `Resource not found: session ${sessionId}`;
  if (!saved) throw new acp.RequestError(-32002, notFound, { sessionId });
  // Opened again in this process: the MCP connections of its first opening end first.
  const open = state.sessions.get(sessionId);
  if (open) await closeMcp(open);
  const session: Session = { ...saved, cwd, tools: [] };
  state.sessions.set(sessionId, session);
  await openTools(state, client, session, params.mcpServers ?? []);
  return saved;
}

/** Answers session/prompt: runs one turn of the session, then saves the session. */
async function answerPrompt(
  state: AgentState,
  client: acp.AgentContext,
  params: acp.PromptRequest,
) {
  const session = state.sessions.get(params.sessionId);
  if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
  const exitCode = Deno.env.get("MM_SIM_EXIT_IN_TURN");
  if (exitCode) {
    // Nothing it started outlives it: the stdio MCP servers it spawned end with it.
    killSpawned(state);
    Deno.exit(Number(exitCode));
  }
  const question = params.prompt.map((b) => b.type === "text" ? b.text : "").join(" ");
  session.turn = new AbortController();
  const signal = session.turn.signal;
  // codex-acp names the turn in its permission requests.
  const turnId = crypto.randomUUID();
  const turn: Turn = { ...state.settings, client, session, signal, turnId };
  try {
    const cancelled = await promptTurn(turn, question);
    return { stopReason: cancelled ?? state.settings.stopReason };
  } finally {
    session.turn = undefined;
    saveSession(session);
  }
}

/** Thrown to unwind a turn that session/cancel ended. */
class Cancelled extends Error {}
/** Waits, unless the turn is cancelled first. */
const sleep = (ms: number, signal: AbortSignal) =>
  untilCancelled(new Promise((resolve) => setTimeout(resolve, ms)), signal);

/** Settles as `promise` does, or rejects with {@linkcode Cancelled} once `signal` aborts. */
function untilCancelled<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(new Cancelled());
    const onAbort = () => reject(new Cancelled());
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Sends `session/update` notifications for one session. */
const updater = (client: acp.AgentContext, sessionId: string) => (update: acp.SessionUpdate) =>
  client.notify("session/update", { sessionId, update });

/** A tool call as mm announces it, and as its permission request names it. */
function pending({ toolCallId, title, toolKind, args }: ToolCall): acp.ToolCall {
  return { toolCallId, title, kind: toolKind ?? "other", status: "pending", rawInput: args };
}

/** The end of a tool call, with what the model read. */
function finalUpdate(toolCallId: string, { text: read, failed }: Outcome): acp.SessionUpdate {
  const content: acp.ToolCallContent[] = [{ type: "content", content: text(read) }];
  const status = failed ? "failed" : "completed";
  return { sessionUpdate: "tool_call_update", toolCallId, status, content };
}

/** One turn: the settings, the client's end, the session, the turn's cancel signal and its id. */
type Turn = Settings & {
  client: acp.AgentContext;
  session: Session;
  signal: AbortSignal;
  turnId: string;
};
/** A call of this turn: the tool, the model's arguments, the call's id and title. */
type Call = PlannedCall & ToolCall;

/** Streams a piece of the model's message, and adds it to the session's history. */
async function say(turn: Turn, piece: string): Promise<void> {
  const { client, session } = turn;
  const update = updater(client, session.sessionId);
  await update({ sessionUpdate: "agent_message_chunk", content: text(piece) });
  const last = session.history.at(-1);
  if (last?.kind === "agent") last.text += piece;
  else session.history.push({ kind: "agent", text: piece });
}

/** Announces a tool call of the turn, before it runs (in agent mode, as `--asks` says). */
async function announce(turn: Turn, call: Call): Promise<void> {
  const update = updater(turn.client, turn.session.sessionId);
  if (!turn.agent || !isMcpTool(call.tool)) {
    await update({ sessionUpdate: "tool_call", ...pending(call) });
    return;
  }
  const shape = ASK_SHAPES[turn.agent.asks];
  // gemini-cli announces a call only once it is allowed.
  if (shape.announcesWhenAllowed) return;
  await update({ sessionUpdate: "tool_call", ...shape.toolCall(callNames(turn, call, call.tool)) });
}

/** One prompt turn of the scripted model: `cancelled`, or nothing when it ended normally. */
async function promptTurn(turn: Turn, question: string): Promise<"cancelled" | undefined> {
  const { session, signal } = turn;
  session.history.push({ kind: "user", text: question });
  const tools = session.tools;
  const plan = planTurn(question, tools, scriptedArgs(tools), turn.config.bashTool);
  try {
    await openTurn(turn, plan);
    const calls = plan.map((c) => describeCall(turn, c, `call_${session.nextCall++}`));
    const run = turn.style === "stepwise" ? runStepwise : runBatch;
    const results = await run(turn, calls);
    const answer = calls.length > 0
      ? answerFrom(results) // in the order of the calls, whatever order they came back in
      : noCallAnswer(tools);
    await streamAnswer(turn, answer);
  } catch (error) {
    if (error instanceof Cancelled || signal.aborted) return "cancelled";
    throw error;
  }
}

/**
 * A planned call with its id, title and kind: mm's (`client: <name>`, or its shell's), or in agent
 * mode those of the adapter `--asks` names.
 */
function describeCall(turn: Turn, planned: PlannedCall, plainId: string): Call {
  const { tool, args } = planned;
  if (tool === BASH) {
    return { ...planned, toolCallId: plainId, title: `bash: ${args.command}`, toolKind: "execute" };
  }
  if (!turn.agent || !isMcpTool(tool)) {
    return { ...planned, toolCallId: plainId, title: `client: ${tool.name}` };
  }
  const shape = ASK_SHAPES[turn.agent.asks];
  const toolCallId = shape.id?.(tool.link.name, tool.name, plainId) ?? plainId;
  const shown = shape.toolCall(callNames(turn, { toolCallId, title: "", args }, tool));
  return { ...planned, toolCallId, title: shown.title, toolKind: shown.kind };
}

/** Opens a turn: an empty chunk with `_meta`, the model's thought, a pause, then its plan. */
async function openTurn(turn: Turn, plan: PlannedCall[]): Promise<void> {
  const { session: { sessionId, tools }, signal } = turn;
  const update = updater(turn.client, sessionId);
  // Real agents open with an empty chunk that only carries _meta.
  const meta = { "org.mini-me/model": "scripted" };
  await update({ sessionUpdate: "agent_message_chunk", content: text(""), _meta: meta });
  const offered = tools.map((t) => `${t.modelName} is "${t.description}"`).join("; ");
  const thought = tools.length > 0
    ? `The user asks about the machine; ${offered}. I will make ${plan.length} call(s).`
    : "The user asks about the machine, but I have no tool to look at it.";
  await update({ sessionUpdate: "agent_thought_chunk", content: text(thought) });
  await sleep(Number(Deno.env.get("MM_SIM_THINK_MS") ?? 0), signal);
  const entry = { priority: "medium", status: "pending" } as const;
  const step = (c: PlannedCall) => `${c.tool.modelName} ${JSON.stringify(c.args)}`;
  const entries = plan.map((c) => ({ content: step(c), ...entry }));
  if (plan.length > 0) await update({ sessionUpdate: "plan", entries });
}

/** Runs the calls as an LLM does: a sentence, one call, its result, then the next. */
async function runStepwise(turn: Turn, calls: Call[]): Promise<Result[]> {
  const results: Result[] = [];
  for (const call of calls) {
    const topic = isHostInfo(call.tool) && labelOf("host_info", call.args);
    await say(turn, `Let me ask ${call.tool.name}${topic ? ` about the ${topic}` : ""}. `);
    await announce(turn, call);
    results.push(await runCall(turn, call));
    await sleep(Number(Deno.env.get("MM_SIM_STEP_MS") ?? 0), turn.signal); // a pause between steps
  }
  return results;
}

/** Announces all the calls, then runs them together. */
async function runBatch(turn: Turn, calls: Call[]): Promise<Result[]> {
  // The model asks for all its calls in one response: mm announces them all, then runs them
  // together. The Node demo recorded this order: both 🛠️ lines, both [client] lines, then both
  // │ results.
  for (const call of calls) await announce(turn, call);
  const settled = await Promise.allSettled(calls.map((call) => runCall(turn, call)));
  return settled.map((s) => {
    if (s.status === "rejected") throw s.reason;
    return s.value;
  });
}

/** Runs a call, reports its end and keeps it in the history; returns what the model read. */
async function runCall(turn: Turn, call: Call): Promise<Result> {
  const { session, signal } = turn;
  const update = updater(turn.client, session.sessionId);
  const outcome = await callTool(turn, call).catch((error) => {
    if (!(error instanceof Cancelled)) throw error;
    // mm's own shell is no client tool: its cancel reads as its other errors do (guess).
    if (call.tool === BASH) return { text: `[${BASH.name} error: context canceled]`, failed: true };
    // An MCP tool's call cut short reads in its refusal's form (guess: the adapters differ).
    if (isMcpTool(call.tool)) return { text: `[${call.tool.name} cancelled]`, failed: true };
    return { text: CANCELLED_TEXT, failed: true };
  });
  // (acp-client-tools.md, "Erreurs"): every result, failed or not, is cut to maxOutput and
  // reported as the end of the tool call.
  const read = cutToMaxOutput(outcome.text, turn.config.maxOutput);
  await update(finalUpdate(call.toolCallId, { ...outcome, text: read }));
  const { toolCallId, title, toolKind, args } = call;
  const status = outcome.failed ? "failed" : "completed";
  session.history.push({ kind: "tool", toolCallId, title, toolKind, args, status, text: read });
  if (signal.aborted) throw new Cancelled();
  return { tool: call.tool.name, args, text: read };
}

/** The answer of a turn that called no tool. */
function noCallAnswer(tools: ClientTool[]): string {
  if (tools.length === 0) {
    return "I cannot see your machine: no client tool was offered to me, and I have no shell.";
  }
  const names = tools.map((t) => t.modelName).join(", ");
  return `I called no tool: your question names none of mine (${names}).`;
}

/** Streams the answer in pieces while the turn is not cancelled, then reports the usage. */
async function streamAnswer(turn: Turn, answer: string): Promise<void> {
  const update = updater(turn.client, turn.session.sessionId);
  const pause = Number(Deno.env.get("MM_SIM_STREAM_MS") ?? 0);
  for (const piece of streamPieces(answer)) {
    if (turn.signal.aborted) throw new Cancelled(); // a cancel ends the answer where it is
    await say(turn, piece);
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
  }
  await update({ sessionUpdate: "usage_update", used: 1200 + answer.length, size: 32768 });
}

const PERMISSION_OPTIONS: acp.PermissionOption[] = [
  // The options mm offers are in none of its documents (guess): the usual ACP three.
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/**
 * One call of a client tool (acp-client-tools.md, "Appel d'un outil"), its checks first; or of mm's
 * own shell. Throws {@linkcode Cancelled} when the turn is cancelled.
 */
async function callTool(turn: Turn, call: Call): Promise<Outcome> {
  const { config, client, session: { sessionId }, signal } = turn;
  const { tool, args, toolCallId } = call;
  if (tool === BASH) return await runCommand(turn, call);
  if (isMcpTool(tool)) return await callMcpTool(turn, call, tool);
  const failed = (why: string) => ({ text: `[client tool error: ${why}]`, failed: true });
  // (acp-client-tools.md, "Avant la requête"): no request without the required parameters.
  const missing = tool.required.filter((name) => !(name in args));
  if (missing.length > 0) return failed(`missing required parameters: ${missing.join(", ")}`);
  // (acp-client-tools.md, "Avant la requête"): with `permissions: ask`, or `auto` when `yolo` is
  // false, mm asks first; the title is "client: <name>".
  const asks = config.permissions === "ask" || !config.yolo;
  if (asks && !await permitted(turn, mmPermission(sessionId, call))) {
    return { text: `[${tool.modelName} rejected by user]`, failed: true };
  }
  const busy = { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" } as const;
  if (turn.style === "stepwise") await updater(client, sessionId)(busy);
  const timeout = AbortSignal.timeout(config.timeoutMs);
  try {
    // (acp-client-tools.md, "Requête"): the model's arguments at the top level; a `_meta` the model
    // put there is replaced, not merged.
    const params = { ...args, _meta: { "org.mini-me/sessionId": sessionId } };
    // Aborting sends $/cancel_request: on timeout, and on session/cancel (acp-client-tools.md,
    // "Erreurs").
    const cancellationSignal = AbortSignal.any([signal, timeout]);
    const options = { cancellationSignal, stopWaitingOnCancel: true };
    return resultText(await client.request<unknown>(tool.method, params, options));
  } catch (error) {
    if (signal.aborted) throw new Cancelled();
    return failed(timeout.aborted ? DEADLINE : why(error));
  }
}

/** mm's permission request for a call: the call as announced, and mm's options. */
function mmPermission(sessionId: string, call: Call): acp.RequestPermissionRequest {
  return { sessionId, toolCall: pending(call), options: PERMISSION_OPTIONS };
}

/**
 * Asks the client's permission for a call (`session/request_permission`). An error answer, or any
 * outcome but an allow option, is a refusal, and the turn goes on (guess: the documents list only
 * the refusal's text). Throws {@linkcode Cancelled} when the turn is cancelled meanwhile.
 */
async function permitted(turn: Turn, request: acp.RequestPermissionRequest): Promise<boolean> {
  const { client, signal } = turn;
  const { options } = request;
  const asked = client.request("session/request_permission", request);
  const outcome = (await untilCancelled(asked.catch(() => undefined), signal))?.outcome;
  // A client that cancels answers `cancelled` just after its session/cancel: let that be read
  // first, so that the call ends as a cancelled turn's, not as a refusal, whatever comes first.
  if (outcome?.outcome === "cancelled") await new Promise((done) => setTimeout(done, 0));
  const picked = outcome?.outcome === "selected" ? outcome.optionId : undefined;
  const allowed = !!options.find((o) => o.optionId === picked)?.kind.startsWith("allow");
  if (!allowed && signal.aborted) throw new Cancelled();
  return allowed;
}

/**
 * A command of mm's own shell tool, run by the stand-in itself as mm runs it. mm asks first when
 * `yolo` is false (mini-me's acp.md, "Requêtes session/request_permission envoyées", which
 * acp-client-tools.md names). What the model reads of a refusal, `[bash rejected by user]`, follows
 * the client tools' text (guess).
 */
async function runCommand(turn: Turn, call: Call): Promise<Outcome> {
  if (!turn.config.yolo && !await permitted(turn, mmPermission(turn.session.sessionId, call))) {
    return { text: `[${BASH.name} rejected by user]`, failed: true };
  }
  const [program, ...args] = String(call.args.command).split(" ");
  const { cwd } = turn.session;
  const command = new Deno.Command(program, { args, cwd, stdin: "null", signal: turn.signal });
  try {
    const { success, stdout, stderr } = await command.output();
    if (turn.signal.aborted) throw new Cancelled();
    const said = new TextDecoder().decode(success ? stdout : stderr);
    return { text: success ? said : `[${BASH.name} error: ${said.trim()}]`, failed: !success };
  } catch (error) {
    if (error instanceof Cancelled || turn.signal.aborted) throw new Cancelled();
    return { text: `[${BASH.name} error: ${messageOf(error)}]`, failed: true };
  }
}

// ─── Agent mode: an ACP agent that is not mm ─────────────────────────────────

/** The first argument that makes the stand-in an agent that is not mm (from `test/agent-sim`). */
const AGENT_SIM_FLAG = "--agent-sim";
/** The adapters whose permission requests `--asks` can send (`none` asks nothing, as opencode). */
export const ASK_NAMES = ["none", "claude", "gemini", "codex", "codex2", "qwen"] as const;
/** A value of `--asks`. */
export type AskName = typeof ASK_NAMES[number];
/** When the agent connects to a session's MCP servers (`--connect`). */
export const CONNECT_WHEN = ["eager", "late", "never"] as const;
/** How `initialize` names the agent stand-in. */
const AGENT_SIM_INFO = { name: "agent-sim", title: "ACP agent stand-in", version: "sim" };

/** The agent stand-in's command line, after `--agent-sim`. */
export interface AgentSimOptions {
  /** `mcpCapabilities.http`; false with `--stdio`, so that a client must name a stdio server. */
  http: boolean;
  /** `--asks`: whose permission request it sends before each call of an MCP tool. */
  asks: AskName;
  /**
   * `--connect`: `eager` connects while it handles `session/new`, before answering; `late` answers
   * first and connects a second later, in the background (qwen-code); `never` ignores `mcpServers`
   * (pi-acp, cline).
   */
  connect: typeof CONNECT_WHEN[number];
  /** `--help`: print the usage and exit. */
  help: boolean;
}

/** The agent stand-in's usage line. */
export const AGENT_SIM_USAGE =
  "test/agent-sim [--stdio] [--asks none|claude|gemini|codex|codex2|qwen] [--connect eager|late|never]";

/** Reads the agent stand-in's arguments (after `--agent-sim`); a bad one throws a one-line error. */
export function parseAgentSimArgs(args: string[]): AgentSimOptions {
  const { values } = parseArgs({
    args,
    options: {
      stdio: { type: "boolean", default: false },
      asks: { type: "string", default: "none" },
      connect: { type: "string", default: "eager" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const asks = oneOf("--asks", values.asks, ASK_NAMES);
  const connect = oneOf("--connect", values.connect, CONNECT_WHEN);
  return { http: !values.stdio, asks, connect, help: values.help };
}

/** `value` when it is one of `values`; else an error naming the option and what it takes. */
function oneOf<T extends string>(option: string, value: string, values: readonly T[]): T {
  const known = values.find((v) => v === value);
  if (known !== undefined) return known;
  throw new Error(
    `${option}: unknown value ${JSON.stringify(value)} (one of ${values.join(", ")})`,
  );
}

/** What `--help` prints below the usage line. */
const AGENT_SIM_HELP =
  `An ACP agent stand-in that takes the client's tools from the MCP servers of session/new.
  --stdio          advertise no http: the client must name a stdio MCP server
  --asks SHAPE     ask permission before each MCP call as an adapter does: none (default), claude,
                   gemini, codex (codex-acp 0.16), codex2 (codex-acp 2.6, read-only), qwen
  --connect WHEN   eager (default): before answering session/new; late: a second after, in the
                   background; never: ignore mcpServers
The MM_SIM_* knobs of test/README.md apply.`;

/** Runs the stand-in as an ACP agent that is not mm, lending nothing of mm's. */
async function agentSimMain(args: string[]): Promise<number> {
  let options: AgentSimOptions;
  try {
    options = parseAgentSimArgs(args);
  } catch (error) {
    log(`agent-sim: ${messageOf(error)} (usage: ${AGENT_SIM_USAGE})`);
    return 2;
  }
  if (options.help) {
    console.log(`usage: ${AGENT_SIM_USAGE}\n${AGENT_SIM_HELP}`);
    return 0;
  }
  writePidFile();
  const sdk = await loadMcpSdk();
  // No agent file: mm's defaults (maxOutput) hold.
  const settings = knobSettings(readAgentConfig(""));
  return await serve({ ...settings, agent: { ...options, sdk } });
}

// ─── Agent mode: the MCP servers of a session ────────────────────────────────

/** The MCP SDK's client half, as agent mode uses it. */
interface McpSdk {
  Client: typeof McpClient;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  StdioClientTransport: typeof StdioClientTransport;
}

/** Where the MCP SDK comes from; its version is locked in test/agent_sim.lock. */
const MCP_SDK = "npm:@modelcontextprotocol/sdk@1.32.2";

/** Loads the MCP SDK's client half: in agent mode only. */
async function loadMcpSdk(): Promise<McpSdk> {
  // Specifiers made at run time, on purpose: Deno fetches before a program starts every import it
  // can read in the source, a dynamic one too, so literals would make mm mode (and `deno task
  // demo`) download the MCP SDK it never runs.
  const client = await import(`${MCP_SDK}/client/index.js`);
  const http = await import(`${MCP_SDK}/client/streamableHttp.js`);
  const stdio = await import(`${MCP_SDK}/client/stdio.js`);
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    StdioClientTransport: stdio.StdioClientTransport,
  };
}

/** One MCP server of a session: its name, its transport, its client, and a server it spawned. */
interface McpLink {
  name: string;
  kind: "http" | "stdio";
  client: McpClient;
  stdio?: StdioClientTransport;
}

/** A session's MCP servers: the links made so far, what ends them, and their connecting. */
interface McpSide {
  links: McpLink[];
  ending: AbortController;
  connecting: Promise<void>;
}

/** A tool as an MCP server lists it. */
type McpListedTool = Awaited<ReturnType<McpClient["listTools"]>>["tools"][number];
/** An MCP tool as the scripted model sees it: by its own name, with the server that has it. */
type McpTool = ClientTool & { link: McpLink };
const isMcpTool = (tool: ClientTool): tool is McpTool => "link" in tool;

/** How long `--connect late` waits, once it has answered, before it connects (guess). */
const LATE_CONNECT_MS = 1000;
/** At most this many pages of `tools/list`: a server whose every page has a cursor ends there. */
const MAX_TOOL_PAGES = 100;

/**
 * Opens the MCP side of a session as `--connect` says: each server connected and its tools listed
 * before this returns (`eager`), in the background a second later (`late`: a prompt that comes
 * first finds no tool, as with qwen-code), or not at all (`never`).
 */
async function openMcp(
  agent: AgentSimOptions & { sdk: McpSdk },
  session: Session,
  entries: readonly acp.McpServer[],
): Promise<void> {
  if (agent.connect === "never") return;
  const side: McpSide = { links: [], ending: new AbortController(), connecting: Promise.resolve() };
  session.mcp = side;
  const connectAll = async () => {
    session.tools = await connectServers(agent, side, entries);
  };
  if (agent.connect === "eager") {
    side.connecting = connectAll();
    await side.connecting;
    return;
  }
  const later = sleep(LATE_CONNECT_MS, side.ending.signal).then(connectAll);
  side.connecting = later.catch(() => {}); // the session ended first: nothing to connect
}

/** Connects to every server of a session at once; returns their tools, the first of a name kept. */
async function connectServers(
  agent: AgentSimOptions & { sdk: McpSdk },
  side: McpSide,
  entries: readonly acp.McpServer[],
): Promise<McpTool[]> {
  const failed = (entry: acp.McpServer) => (error: unknown): McpTool[] => {
    // A session that ends meanwhile aborts its connecting: no failure to report.
    if (!side.ending.signal.aborted) {
      log(`[agent-sim] mcp server ${entry.name}: ${messageOf(error)}`);
    }
    return [];
  };
  const listed = await Promise.all(
    entries.map((entry) => connectServer(agent, side, entry).catch(failed(entry))),
  );
  const tools: McpTool[] = [];
  for (const tool of listed.flat()) {
    const first = tools.find((t) => t.name === tool.name);
    if (!first) {
      tools.push(tool);
      continue;
    }
    const owner = first.link.name;
    log(`[agent-sim] mcp server ${tool.link.name}: tool ${tool.name} is ${owner}'s too (not used)`);
  }
  return tools;
}

/** Connects to one server (MCP's `initialize`, `notifications/initialized`) and lists its tools. */
async function connectServer(
  agent: AgentSimOptions & { sdk: McpSdk },
  side: McpSide,
  entry: acp.McpServer,
): Promise<McpTool[]> {
  const { signal } = side.ending;
  signal.throwIfAborted();
  const client = new agent.sdk.Client({
    name: AGENT_SIM_INFO.name,
    version: AGENT_SIM_INFO.version,
  });
  const link: McpLink = { name: entry.name, kind: "http", client };
  const transport = transportFor(agent, entry, link);
  // Kept before it connects: a session that ends meanwhile closes it, and a server it spawned.
  side.links.push(link);
  try {
    await client.connect(transport, { signal });
    const listed = await listServerTools(client, signal);
    const names = listed.map((tool) => tool.name).join(", ");
    log(`[agent-sim] mcp server ${entry.name} (${link.kind}): tools ${names}`);
    return listed.map((tool) => mcpTool(link, tool));
  } catch (error) {
    side.links = side.links.filter((l) => l !== link);
    await client.close().catch(() => {});
    throw error;
  }
}

/** The transport of an entry: ACP v1's `McpServer`, HTTP or stdio. */
function transportFor(
  agent: AgentSimOptions & { sdk: McpSdk },
  entry: acp.McpServer,
  link: McpLink,
) {
  if (!("type" in entry)) {
    const env = Object.fromEntries(
      entry.env.map(({ name, value }): [string, string] => [name, value]),
    );
    const { command, args } = entry;
    // The server's stderr is the agent's: a client shows it as the agent's log.
    link.stdio = new agent.sdk.StdioClientTransport({ command, args, env, stderr: "inherit" });
    link.kind = "stdio";
    return link.stdio;
  }
  if (entry.type !== "http") {
    throw new Error(`a ${entry.type} server, which this agent does not take`);
  }
  if (!agent.http) {
    throw new Error("an http server, but this agent advertised http: false (--stdio)");
  }
  const headers = new Headers();
  for (const { name, value } of entry.headers) headers.append(name, value);
  // The SDK sends requestInit's headers with every request: POST, the GET of an event stream too.
  return new agent.sdk.StreamableHTTPClientTransport(new URL(entry.url), {
    requestInit: { headers },
  });
}

/** A server's tools, page after page. */
async function listServerTools(client: McpClient, signal: AbortSignal): Promise<McpListedTool[]> {
  const tools: McpListedTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const answer = await client.listTools(cursor === undefined ? {} : { cursor }, { signal });
    tools.push(...answer.tools);
    cursor = answer.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}

/** An MCP tool as the scripted model sees it, with the parts of its `inputSchema` it reads. */
function mcpTool(link: McpLink, tool: McpListedTool): McpTool {
  const schema = record(tool.inputSchema);
  const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
  const properties = record(schema.properties);
  const description = tool.description ?? "";
  return {
    modelName: tool.name,
    name: tool.name,
    method: "",
    description,
    required,
    properties,
    link,
  };
}

/**
 * Ends a session's MCP side: its connecting aborted, each connection closed, and a stdio server it
 * spawned ended (the SDK closes its stdin, then sends SIGTERM, then SIGKILL, 2 s apart).
 */
async function closeMcp(session: Session): Promise<void> {
  const side = session.mcp;
  if (!side) return;
  side.ending.abort();
  await side.connecting.catch(() => {});
  await Promise.all(side.links.map((link) => link.client.close().catch(() => {})));
}

/** Ends at once the stdio servers every session spawned, for an exit that cannot wait. */
function killSpawned(state: AgentState): void {
  const links = [...state.sessions.values()].flatMap((session) => session.mcp?.links ?? []);
  for (const link of links) {
    const pid = link.stdio?.pid;
    if (!pid) continue;
    try {
      Deno.kill(pid, "SIGTERM");
    } catch { /* already gone */ }
  }
}

// ─── Agent mode: a call of an MCP tool ───────────────────────────────────────

/**
 * Turns an MCP `tools/call` result into the text the model reads: the text blocks concatenated
 * (the scripted model reads no other kind); `isError: true` as `[tool error: <text>]`.
 */
export function mcpResultText(result: unknown): Outcome {
  const { content, isError } = record(result);
  const blocks = Array.isArray(content) ? content : [];
  const read = blocks.map((b) => isRecord(b) && b.type === "text" ? String(b.text ?? "") : "");
  const failed = isError === true;
  return { text: failed ? `[tool error: ${read.join("")}]` : read.join(""), failed };
}

/**
 * What the model reads of a call that failed without a result: a JSON-RPC error's message (without
 * the `MCP error <code>: ` the SDK puts in front), or a transport's error (the SDK's own timeout is
 * `Request timed out`).
 */
export const mcpErrorText = (error: unknown): string =>
  `[mcp error: ${messageOf(error).replace(/^MCP error -?\d+: /, "")}]`;

/**
 * One call of an MCP tool: the permission asked as `--asks` says (anything but an allow option is
 * a refusal), then `tools/call` on the tool's server. Throws {@linkcode Cancelled} when the turn is
 * cancelled: its signal aborts the request, and the SDK sends `notifications/cancelled`.
 */
async function callMcpTool(turn: Turn, call: Call, tool: McpTool): Promise<Outcome> {
  const { signal } = turn;
  const update = updater(turn.client, turn.session.sessionId);
  const shape = ASK_SHAPES[turn.agent?.asks ?? "none"];
  const names = callNames(turn, call, tool);
  const request = shape.ask?.(names);
  if (request && !await permitted(turn, request)) {
    return { text: `[${tool.name} rejected by user]`, failed: true };
  }
  if (shape.announcesWhenAllowed) {
    await update({ sessionUpdate: "tool_call", ...shape.toolCall(names) });
  } else if (turn.style === "stepwise") {
    const { toolCallId } = call;
    await update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
  }
  try {
    const params = { name: tool.name, arguments: call.args };
    return mcpResultText(await tool.link.client.callTool(params, undefined, { signal }));
  } catch (error) {
    if (signal.aborted) throw new Cancelled();
    return { text: mcpErrorText(error), failed: true };
  }
}

// ─── Agent mode: how each adapter asks ───────────────────────────────────────

/** What an adapter's frames say of one call of an MCP tool. */
interface McpCallNames {
  server: string;
  tool: string;
  description: string;
  args: Record<string, unknown>;
  toolCallId: string;
  sessionId: string;
  turnId: string;
}

/** The names of a call, for {@linkcode ASK_SHAPES}. */
function callNames(turn: Turn, call: ToolCall, tool: McpTool): McpCallNames {
  const { toolCallId, args } = call;
  const { name: server } = tool.link;
  const { sessionId } = turn.session;
  return {
    server,
    tool: tool.name,
    description: tool.description,
    args,
    toolCallId,
    sessionId,
    turnId: turn.turnId,
  };
}

/**
 * How an adapter shows a call of an MCP tool and asks about it, as captured from it
 * (test/data/mcp-permission-requests.jsonl): the call's id made from the stand-in's `call_<n>`,
 * the `tool_call` it announces, and its `session/request_permission` params (none: it asks
 * nothing).
 */
interface AskShape {
  id?: (server: string, tool: string, plain: string) => string;
  toolCall: (c: McpCallNames) => acp.ToolCall;
  /** gemini-cli asks first, and announces the call once it is allowed (guess: not captured). */
  announcesWhenAllowed?: true;
  ask?: (c: McpCallNames) => acp.RequestPermissionRequest;
}

const option = (optionId: string, name: string, kind: acp.PermissionOptionKind) => ({
  optionId,
  name,
  kind,
});
const GEMINI_OPTIONS = [
  option("proceed_always_server", "Allow all server tools for this session", "allow_always"),
  option("proceed_always_tool", "Allow tool for this session", "allow_always"),
  option("proceed_once", "Allow", "allow_once"),
  option("cancel", "Reject", "reject_once"),
];
const CODEX_OPTIONS = [
  option("approved", "Allow", "allow_once"),
  option("approved-for-session", "Allow for this session", "allow_always"),
  option("approved-always", "Allow and don't ask again", "allow_always"),
  option("cancel", "Cancel", "reject_once"),
];
const CODEX2_OPTIONS = [
  option("allow_once", "Allow", "allow_once"),
  option("allow_session", "Allow for this session", "allow_always"),
  option("allow_always", "Always allow", "allow_always"),
  option("cancel", "Cancel", "reject_once"),
];

/** The name the Claude adapter's model (and qwen-code's) gives an MCP tool. */
const claudeName = ({ server, tool }: McpCallNames) => `mcp__${server}__${tool}`;

/** The adapters' shapes, by `--asks` value. */
const ASK_SHAPES: Record<AskName, AskShape> = {
  // opencode asks nothing for an MCP tool; its title and kind here are the stand-in's (guess).
  none: {
    toolCall: ({ server, tool, args, toolCallId }) => {
      return {
        toolCallId,
        title: `${server}/${tool}`,
        kind: "other",
        status: "pending",
        rawInput: args,
      };
    },
  },
  claude: { toolCall: claudeToolCall, ask: claudeAsks },
  gemini: {
    id: (server, tool, plain) => `mcp_${server}_${tool}__${plain}`,
    toolCall: (c) => geminiToolCall(c, "in_progress"),
    announcesWhenAllowed: true,
    ask: (c) => ({
      sessionId: c.sessionId,
      options: GEMINI_OPTIONS,
      toolCall: geminiToolCall(c, "pending"),
    }),
  },
  codex: { toolCall: codexToolCall, ask: codexAsks },
  codex2: {
    toolCall: (c) => {
      const rawInput = { server: c.server, tool: c.tool, arguments: c.args };
      const title = `mcp.${c.server}.${c.tool}`;
      const _meta = { is_mcp_tool_call: true };
      return {
        toolCallId: c.toolCallId,
        title,
        kind: "execute",
        status: "in_progress",
        rawInput,
        _meta,
      };
    },
    ask: (c) => {
      const toolCall = { toolCallId: c.toolCallId, kind: "execute", status: "pending" } as const;
      return {
        sessionId: c.sessionId,
        toolCall,
        _meta: { is_mcp_tool_approval: true },
        options: CODEX2_OPTIONS,
      };
    },
  },
  qwen: { toolCall: qwenToolCall, ask: qwenAsks },
};

/** The Claude adapter's `tool_call`: the model's name for the tool, no arguments yet. */
function claudeToolCall(c: McpCallNames): acp.ToolCall {
  const name = claudeName(c);
  const _meta = { claudeCode: { toolName: name } };
  return {
    toolCallId: c.toolCallId,
    title: name,
    kind: "other",
    status: "pending",
    rawInput: {},
    _meta,
    content: [],
  };
}

/** The Claude adapter's question: the call with its arguments, the server named in `_meta`. */
function claudeAsks(c: McpCallNames): acp.RequestPermissionRequest {
  const name = claudeName(c);
  const _meta = {
    claudeCode: { toolName: name, mcpServer: { name: c.server, source: "dynamic" } },
  };
  const toolCall: acp.ToolCallUpdate = {
    toolCallId: c.toolCallId,
    name,
    status: "pending",
    rawInput: c.args,
    title: name,
    kind: "other",
    content: [],
    _meta,
  };
  // "Host Info" for host_info: the tool's name in words (guess for other tools' names).
  const words = c.tool.split(/[_\W]+/).filter((w) => w !== "");
  const shown = words.map((w) => w[0].toUpperCase() + w.slice(1)).join(" ");
  const options = [
    option("allow-once", "Yes", "allow_once"),
    option("allow-with-updates", `Yes, and don't ask again for ${shown} commands`, "allow_always"),
    option("reject", "No", "reject_once"),
  ];
  return { toolCall, options, sessionId: c.sessionId };
}

/** gemini-cli's call: its title names the server, the arguments are JSON text in `content`. */
function geminiToolCall(c: McpCallNames, status: acp.ToolCallStatus): acp.ToolCall {
  const content: acp.ToolCallContent[] = [{
    type: "content",
    content: text(JSON.stringify(c.args)),
  }];
  const title = `${c.tool} (${c.server} MCP Server)`;
  return { toolCallId: c.toolCallId, status, title, content, locations: [], kind: "other" };
}

/** codex-acp 0.16's `tool_call`: already in progress, the call in `rawInput`, no kind. */
function codexToolCall(c: McpCallNames): acp.ToolCall {
  const rawInput = { server: c.server, tool: c.tool, arguments: c.args };
  return {
    toolCallId: c.toolCallId,
    title: `Tool: ${c.server}/${c.tool}`,
    status: "in_progress",
    rawInput,
  };
}

/** codex-acp 0.16's question: an elicitation of codex's, its server and arguments in `rawInput`. */
function codexAsks(c: McpCallNames): acp.RequestPermissionRequest {
  const message = `Allow the ${c.server} MCP server to run tool "${c.tool}"?`;
  const about = c.description === "" ? "" : `\n\n${c.description}`;
  const display = Object.entries(c.args).map(([name, value]) => ({
    name,
    value,
    display_name: name,
  }));
  const _meta = {
    codex_approval_kind: "mcp_tool_call",
    persist: ["session", "always"],
    ...(c.description === "" ? {} : { tool_description: c.description }),
    tool_params: c.args,
    tool_params_display: display,
  };
  const requested_schema = { type: "object", properties: {} };
  const request = { mode: "form", _meta, message, requested_schema };
  const id = `mcp_tool_call_approval_${c.toolCallId}`;
  const rawInput = { turn_id: c.turnId, server_name: c.server, id, request };
  const shown = text(`${message}\n\nServer: ${c.server}${about}`);
  const toolCall: acp.ToolCallUpdate = {
    toolCallId: c.toolCallId,
    status: "pending",
    title: "Approve MCP tool call",
    content: [{ type: "content", content: shown }],
    rawInput,
  };
  return { sessionId: c.sessionId, toolCall, options: CODEX_OPTIONS };
}

/** qwen-code's `tool_call`: a placeholder sent while the model prepares the call. */
function qwenToolCall(c: McpCallNames): acp.ToolCall {
  const _meta = { toolName: "tool_call", provenance: "builtin", phase: "preparing" };
  return {
    toolCallId: c.toolCallId,
    title: "ToolCall",
    kind: "other",
    status: "pending",
    rawInput: {},
    _meta,
    content: [],
  };
}

/** qwen-code's question: the arguments' JSON as its title, the tool's name in `_meta`. */
function qwenAsks(c: McpCallNames): acp.RequestPermissionRequest {
  const options = [
    option("proceed_always_project", `Always Allow in project: ${c.tool}`, "allow_always"),
    option("proceed_always_user", `Always Allow for user: ${c.tool}`, "allow_always"),
    option("proceed_once", "Allow", "allow_once"),
    option("cancel", "Reject", "reject_once"),
  ];
  const toolCall: acp.ToolCallUpdate = {
    toolCallId: c.toolCallId,
    status: "pending",
    title: JSON.stringify(c.args),
    content: [],
    locations: [],
    kind: "other",
    rawInput: c.args,
    _meta: { toolName: claudeName(c) },
  };
  return { sessionId: c.sessionId, options, toolCall };
}

// ─── Helpers ─────────────────────────────────────────────────────────────────

/** Whether a JSON value is an object (not an array, not null); the tests read frames with it too. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
/** A JSON value's fields: its own when it is an object, else none. */
export const record = (value: unknown): Record<string, unknown> => isRecord(value) ? value : {};
const compare = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0;
const messageOf = (error: unknown) => error instanceof Error ? error.message : String(error);
/** An error as mm prints it: a JSON-RPC error as its compact JSON, any other as its message. */
const why = (error: unknown) =>
  error instanceof acp.RequestError ? errorJson(error) : messageOf(error);
const log = (line: string) => console.error(line);
const text = (text: string) => ({ type: "text" as const, text });
const STOP_REASONS = ["end_turn", "max_tokens", "max_turn_requests", "refusal"] as const;

/** Reads a knob that takes one of a few values, warning about any other. */
function knob<T extends string>(name: string, values: readonly T[]): T {
  const value = Deno.env.get(name) ?? values[0];
  if ((values as readonly string[]).includes(value)) return value as T;
  log(`[mm-sim] ${name}: unknown value ${JSON.stringify(value)} (using ${values[0]})`);
  return values[0];
}

/** Runs the stand-in on stdio: as `mm -acp -agent FILE`, or as an agent that is not mm. */
async function main(args: string[]): Promise<number> {
  if (args[0] === AGENT_SIM_FLAG) return await agentSimMain(args.slice(1));
  const agentAt = args.indexOf("-agent");
  if (!args.includes("-acp") || agentAt < 0 || !args[agentAt + 1]) {
    log("usage: mm_sim.ts -acp -agent FILE");
    return 2;
  }
  writePidFile();
  const file = args[agentAt + 1];
  const config = await Deno.readTextFile(file).then(readAgentConfig).catch((error) => {
    log(`mm: cannot load agent ${file}: ${messageOf(error)}`);
  });
  if (!config) return 1;
  for (const line of config.warnings) log(line);
  return await serve(knobSettings(config));
}

/** `MM_SIM_PID_FILE`: where a test reads the stand-in's process id. */
function writePidFile(): void {
  const pidFile = Deno.env.get("MM_SIM_PID_FILE");
  if (pidFile) Deno.writeTextFileSync(pidFile, String(Deno.pid));
}

/** The settings of the knobs both modes read, with the agent file's keys. */
function knobSettings(config: AgentConfig): Settings {
  // `default` names the batch order too.
  const model = knob("MM_SIM_MODEL", ["batch", "stepwise", "default"]);
  return {
    config,
    style: model === "stepwise" ? "stepwise" : "batch",
    stopReason: knob("MM_SIM_STOP_REASON", STOP_REASONS),
    sessionSupport: knob("MM_SIM_SESSIONS", ["full", "load", "none"]),
  };
}

/**
 * Serves one ACP connection on stdio until stdin ends, then ends what the sessions hold (their MCP
 * connections, the stdio servers they spawned).
 */
async function serve(settings: Settings): Promise<number> {
  const state: AgentState = { settings, sessions: new Map(), announced: undefined, metaTools: [] };
  if (settings.agent) {
    // A client that ends the agent with SIGTERM ends the stdio servers it spawned too, which the
    // signal's default (an exit on the spot) would leave running.
    Deno.addSignalListener("SIGTERM", () => {
      killSpawned(state);
      Deno.exit(143);
    });
  }
  const agent = standInAgent(state);
  const connection = agent.connect(acp.ndJsonStream(Deno.stdout.writable, Deno.stdin.readable));
  await connection.closed;
  await Promise.all([...state.sessions.values()].map(closeMcp));
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
