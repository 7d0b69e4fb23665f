/**
 * A stand-in for mini-me (`mm -acp -agent FILE`): an ACP agent, built on the
 * official SDK, that follows mm's client-tools protocol (seed
 * `000_1061b47c48e08683.txt`, "Référence : outils du client ACP") on every
 * point a client can see, with a scripted model instead of an LLM.
 *
 * It is a test peer and a demo, not a product. `client.ts` never imports it.
 *
 * Knobs for tests, read from the environment (a real mm has none of them):
 * - `MM_SIM_THINK_MS`: the model "thinks" this long before it acts, so a test
 *   can cancel a turn that is under way;
 * - `MM_SIM_EXIT_IN_TURN`: exit with this code as soon as the prompt arrives;
 * - `MM_SIM_PID_FILE`: write the process id there, so a test can check that
 *   no mm outlives the client.
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
  /** `acp.clientTools.enabled` (seed "Configuration", default `true`). */
  enabled: boolean;
  /** `acp.clientTools.discovery`: `meta` (default) or `request`. */
  discovery: "meta" | "request";
  /** `acp.clientTools.permissions`: `auto` (default) or `ask`. */
  permissions: "auto" | "ask";
  /** `acp.clientTools.timeout` in milliseconds (default `30s`). */
  timeoutMs: number;
}

/**
 * mm's default `maxOutput` is not in the seeds; this is our guess, large
 * enough never to cut a `host_info` answer.
 */
const DEFAULT_MAX_OUTPUT = 30_000;

/** Parses a Go-style duration as mm's configuration writes them: `30s`, `500ms`, `2m`. */
export function parseDuration(text: unknown, fallbackMs: number): number {
  if (typeof text === "number") return text * 1000;
  const match = typeof text === "string" ? text.match(/^(\d+(?:\.\d+)?)(ms|s|m)$/) : null;
  if (!match) return fallbackMs;
  const scale = { ms: 1, s: 1000, m: 60_000 }[match[2] as "ms" | "s" | "m"];
  return Number(match[1]) * scale;
}

/** Reads the keys of {@linkcode AgentConfig} from an agent file's YAML text. */
export function readAgentConfig(text: string): AgentConfig {
  const doc = record(parseYaml(text));
  const tools = record(record(doc.acp).clientTools);
  return {
    yolo: doc.yolo !== false,
    maxOutput: typeof doc.maxOutput === "number" ? doc.maxOutput : DEFAULT_MAX_OUTPUT,
    enabled: tools.enabled !== false,
    discovery: tools.discovery === "request" ? "request" : "meta",
    permissions: tools.permissions === "ask" ? "ask" : "auto",
    timeoutMs: parseDuration(tools.timeout, 30_000),
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
  /** What the model reads (seed: default `Tool provided by the editor (<method>).`). */
  description: string;
  /** The `required` of `inputSchema`, checked before every call. */
  required: string[];
}

/**
 * The name the model sees (seed "Description d'un outil"): every character
 * outside `[A-Za-z0-9]` becomes `_`, runs of `_` become one, leading and
 * trailing `_` go, and `client_` is put in front.
 *
 * @example
 * ```ts
 * modelName("open buffers"); // "client_open_buffers"
 * ```
 */
export function modelName(name: string): string {
  return `client_${name.replace(/[^A-Za-z0-9]/g, "_").replace(/_+/g, "_").replace(/^_|_$/g, "")}`;
}

/**
 * Validates each entry of a tool list separately (seed "Validation d'une
 * liste"): an invalid entry is skipped with a reason, the others are kept,
 * duplicates keep the first, and the tools are sorted by model name.
 */
export function validateToolList(
  entries: readonly unknown[],
): { tools: ClientTool[]; skipped: string[] } {
  const tools: ClientTool[] = [];
  const skipped: string[] = [];
  entries.forEach((entry, index) => {
    const reason = invalidReason(entry, tools);
    if (reason) {
      skipped.push(`entry ${index} skipped: ${reason}`);
      return;
    }
    const e = entry as Record<string, unknown>;
    const schema = record(e.inputSchema);
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

/** The seed's reason for skipping an entry, or `undefined` when it is valid. */
function invalidReason(entry: unknown, kept: ClientTool[]): string | undefined {
  // mm decodes each entry into a Go struct: a value of another JSON type, or
  // a field of the wrong type, fails there ("not a tool description: …").
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
  const schema = record(entry.inputSchema);
  if ("type" in schema && schema.type !== "object") {
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
 * Turns a tool's answer into the text the model reads (seed "Réponse"): the
 * `text` of each text block concatenated; another block replaced by
 * `[client tool: non-text content of type <type> skipped]`; `isError: true`
 * wrapped as `[client tool error: <text>]`; any other JSON value as a string
 * (a JSON string without its quotes).
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
    text: typeof result === "string" ? result : JSON.stringify(result),
    failed: false,
  };
}

/**
 * Cuts a result to `max` characters, keeping its start and its end (seed
 * "Erreurs": "début et fin conservés"). The marker in the middle is our
 * guess; the seeds do not show mm's.
 */
export function cutToMaxOutput(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const marker = `\n[… ${chars.length - max} characters cut …]\n`;
  const keep = Math.max(0, max - marker.length);
  const head = Math.ceil(keep / 2);
  return chars.slice(0, head).join("") + marker +
    chars.slice(chars.length - (keep - head)).join("");
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

/**
 * The calls the scripted model makes for a question: one per topic its
 * words name, in the order of the question; `os` and `memory` when it names
 * none. "without a topic" makes a call with no arguments, which mm's
 * required-parameter check stops.
 */
export function plannedCalls(question: string): Record<string, unknown>[] {
  if (/without a topic/i.test(question)) return [{}];
  const found = TOPIC_WORDS
    .map(([pattern, topic]) => ({ topic, at: question.search(pattern) }))
    .filter(({ at }) => at >= 0)
    .sort((a, b) => a.at - b.at)
    .map(({ topic }) => ({ topic }));
  return found.length > 0 ? found : [{ topic: "os" }, { topic: "memory" }];
}

const TOPIC_LABEL: Record<string, string> = {
  os: "operating system",
  cpu: "CPU",
  memory: "memory",
  uptime: "uptime",
};

/** The one-paragraph answer the scripted model writes from what it read. */
export function answerFrom(
  results: { args: Record<string, unknown>; text: string }[],
): string {
  const parts = results.map(({ args, text }) => {
    const label = TOPIC_LABEL[String(args.topic)] ?? `"${args.topic ?? "?"}"`;
    return `${label}: ${text}`;
  });
  return `Here is what host_info reports about your machine — ${parts.join("; ")}.`;
}

// ─── The agent ───────────────────────────────────────────────────────────────

function log(line: string): void {
  console.error(line);
}

/** A session id shaped like mm's: `20261110-224507-1f3a9c2e`. */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").slice(0, 15).replace(
    "T",
    "-",
  );
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return `${stamp}-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

interface Session {
  tools: ClientTool[];
  turn?: AbortController;
}

/** Builds the agent for one connection. */
function mmAgent(config: AgentConfig): acp.AgentApp {
  const sessions = new Map<string, Session>();
  let metaTools: ClientTool[] = [];
  let announced: unknown;

  return acp.agent({ name: "mm-sim" })
    .onRequest("initialize", ({ params }) => {
      announced = record(params.clientCapabilities?._meta)["org.mini-me/tools"];
      if (
        config.enabled && config.discovery === "meta" && announced !== undefined
      ) {
        if (Array.isArray(announced)) {
          metaTools = validated(announced);
          log(
            `[acp] client tools (meta): ${metaTools.map((t) => t.modelName).join(", ")}`,
          );
        } else {
          log(
            `[acp] client tools: "org.mini-me/tools" is not a list of tools; a client that answers _org.mini-me/tools/list needs acp.clientTools.discovery: request`,
          );
        }
      }
      return {
        protocolVersion: 1,
        agentCapabilities: { loadSession: false },
        agentInfo: { name: "mm", title: "mini-me (stand-in)", version: "sim" },
        authMethods: [],
      };
    })
    .onRequest("session/new", async ({ params, client }) => {
      const sessionId = newSessionId();
      const asks = announced !== undefined && announced !== false &&
        announced !== null;
      let tools = metaTools;
      if (config.enabled && config.discovery === "request" && asks) {
        // Seed: the list is asked while session/new is handled, before it is answered.
        tools = await listTools(
          client,
          sessionId,
          params.cwd,
          config.timeoutMs,
        );
      }
      sessions.set(sessionId, { tools });
      return { sessionId };
    })
    .onRequest("session/prompt", async ({ params, client }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
      const exitCode = Deno.env.get("MM_SIM_EXIT_IN_TURN");
      if (exitCode) Deno.exit(Number(exitCode));
      const turn = new AbortController();
      session.turn = turn;
      try {
        return await promptTurn(
          config,
          client,
          params,
          session.tools,
          turn.signal,
        );
      } finally {
        session.turn = undefined;
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
  try {
    const answer = await client.request<unknown>("_org.mini-me/tools/list", {
      sessionId,
      cwd,
    }, {
      cancellationSignal: AbortSignal.timeout(timeoutMs),
      stopWaitingOnCancel: true,
    });
    const list = record(answer).tools;
    if (!Array.isArray(list)) {
      log(
        `[acp] client tools: session ${sessionId}: the list answer has no tools array`,
      );
      return [];
    }
    const tools = validated(list);
    log(
      `[acp] session ${sessionId} client tools (request): ${
        tools.map((t) => t.modelName).join(", ")
      }`,
    );
    return tools;
  } catch (error) {
    log(
      `[acp] client tools: session ${sessionId}: list request failed: ${describeError(error)}`,
    );
    return [];
  }
}

function describeError(error: unknown): string {
  if (error instanceof acp.RequestError && error.code === -32800) {
    return "context deadline exceeded";
  }
  if (error instanceof acp.RequestError) {
    return JSON.stringify({ code: error.code, message: error.message });
  }
  return error instanceof Error ? error.message : String(error);
}

class Cancelled extends Error {}

/** Waits, unless the turn is cancelled first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Cancelled());
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new Cancelled());
    }, { once: true });
  });
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

/** One prompt turn of the scripted model. */
async function promptTurn(
  config: AgentConfig,
  client: acp.AgentContext,
  params: acp.PromptRequest,
  tools: ClientTool[],
  signal: AbortSignal,
): Promise<acp.PromptResponse> {
  const sessionId = params.sessionId;
  const update = (u: acp.SessionUpdate) =>
    client.notify("session/update", { sessionId, update: u });
  const question = params.prompt.map((b) => b.type === "text" ? b.text : "")
    .join(" ");
  const tool = tools.find((t) => t.modelName === "client_host_info");
  const calls = plannedCalls(question);
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
          ? `The user asks about the machine; I will call client_host_info ${calls.length} time(s).`
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
      // The model asks for all its calls in one response: mm announces them
      // all, then runs them together. The Node demo's recorded output (seed
      // 004) shows exactly this order: both 🛠️ lines, both [client] lines,
      // then both │ results.
      const ids = calls.map((_, i) => `call_${i + 1}`);
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
      const results = await Promise.all(
        calls.map(async (args, i) => {
          const { text, failed } = await callTool(
            config,
            client,
            sessionId,
            tool,
            ids[i],
            args,
            signal,
          );
          const cut = cutToMaxOutput(text, config.maxOutput);
          await update({
            sessionUpdate: "tool_call_update",
            toolCallId: ids[i],
            status: failed ? "failed" : "completed",
            content: [{
              type: "content",
              content: { type: "text", text: cut },
            }],
          });
          return { args, text: cut };
        }),
      );
      if (signal.aborted) throw new Cancelled();
      answer = answerFrom(results);
    } else {
      answer = "I cannot see your machine: no client tool was offered to me, and I have no shell.";
    }
    for (const piece of streamPieces(answer)) {
      if (signal.aborted) throw new Cancelled();
      await update({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: piece },
      });
    }
    await update({
      sessionUpdate: "usage_update",
      used: 1200 + answer.length,
      size: 32768,
    });
    return { stopReason: "end_turn" };
  } catch (error) {
    if (error instanceof Cancelled || signal.aborted) {
      return { stopReason: "cancelled" };
    }
    throw error;
  }
}

/**
 * One call of a client tool (seed "Appel d'un outil"): the required-parameter
 * check, the permission when the file asks for one, then the extension
 * request with the model's arguments at the top level of `params`.
 */
async function callTool(
  config: AgentConfig,
  client: acp.AgentContext,
  sessionId: string,
  tool: ClientTool,
  toolCallId: string,
  args: Record<string, unknown>,
  turn: AbortSignal,
): Promise<{ text: string; failed: boolean }> {
  const missing = tool.required.filter((name) => !(name in args));
  if (missing.length > 0) {
    return {
      text: `[client tool error: missing required parameters: ${missing.join(", ")}]`,
      failed: true,
    };
  }
  if (config.permissions === "ask" || !config.yolo) {
    // The options mm offers are not in the seeds; these are the usual ACP three.
    const answer = await client.request("session/request_permission", {
      sessionId,
      toolCall: {
        toolCallId,
        title: `client: ${tool.name}`,
        kind: "other",
        status: "pending",
        rawInput: args,
      },
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        {
          optionId: "allow-always",
          name: "Always allow",
          kind: "allow_always",
        },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    }, { cancellationSignal: turn });
    const outcome = answer.outcome;
    if (
      outcome.outcome !== "selected" || !outcome.optionId.startsWith("allow")
    ) {
      if (turn.aborted) throw new Cancelled();
      return { text: `[${tool.modelName} rejected by user]`, failed: true };
    }
  }
  const timeout = AbortSignal.timeout(config.timeoutMs);
  try {
    // Seed "Requête": a _meta the model put in its arguments is replaced.
    const result = await client.request<unknown>(
      tool.method,
      { ...args, _meta: { "org.mini-me/sessionId": sessionId } },
      // Aborting sends $/cancel_request: on timeout, and on session/cancel.
      {
        cancellationSignal: AbortSignal.any([turn, timeout]),
        stopWaitingOnCancel: true,
      },
    );
    return resultText(result);
  } catch (error) {
    if (turn.aborted) throw new Cancelled();
    if (timeout.aborted) {
      return {
        text: "[client tool error: context deadline exceeded]",
        failed: true,
      };
    }
    return {
      text: `[client tool error: ${describeError(error)}]`,
      failed: true,
    };
  }
}

// ─── Helpers ─────────────────────────────────────────────────────────────────

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
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
    log(
      `mm: cannot load agent ${args[agentAt + 1]}: ${
        error instanceof Error ? error.message : error
      }`,
    );
    return 1;
  }
  const connection = mmAgent(config).connect(
    acp.ndJsonStream(Deno.stdout.writable, Deno.stdin.readable),
  );
  await connection.closed;
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
