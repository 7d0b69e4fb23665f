#!/usr/bin/env -S deno run --allow-run --allow-read --allow-env=MM_BIN,NO_COLOR --allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime
/**
 * An ACP client that lends mini-me (`mm -acp`) one tool of its own,
 * `host_info`, asks it a question and shows the conversation.
 *
 * The file reads in the order of the exchange: the tool, announcing it, the
 * list, the call, permissions, everything else; then what the user sees, the
 * JSON-RPC framing, the command line and the run itself.
 *
 * @example
 * ```sh
 * deno run -A client.ts "How much memory is free on my machine?"
 * deno run -A client.ts --request "Which CPU does my machine have?"
 * ```
 *
 * @module
 */

import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { load as parseYaml, YAMLException } from "js-yaml";

/** The client's version, sent as `clientInfo.version` and printed by `--version`. */
export const VERSION = "0.1.0";

// ─── 1. The tool ─────────────────────────────────────────────────────────────

/** The facts `host_info` can report. */
export const TOPICS = ["os", "cpu", "memory", "uptime"] as const;

/** One of {@linkcode TOPICS}. */
export type Topic = typeof TOPICS[number];

/**
 * A tool description as mini-me reads it (seed "Description d'un outil"):
 * the name the model sees as `client_<name>`, the ACP extension method mm
 * calls, and the JSON Schema of the arguments.
 */
export interface ToolDescription {
  /** Unique in the list; the model sees `client_<name>`. */
  name: string;
  /** What the model reads to decide when to call the tool. */
  description: string;
  /** The extension method mm sends; must start with `_`. */
  method: string;
  /** JSON Schema of the arguments; its `type` must be `"object"`. */
  inputSchema: { type: "object"; [key: string]: unknown };
}

/** The one tool this client lends to mm. */
export const HOST_INFO_TOOL: ToolDescription = {
  name: "host_info",
  description:
    "Facts about the machine the user's client runs on: its operating system, CPU, memory or uptime. Call it once per topic.",
  method: "_demo.minime/host_info",
  inputSchema: {
    type: "object",
    properties: {
      topic: {
        type: "string",
        enum: [...TOPICS],
        description: "Which fact to report.",
      },
    },
    required: ["topic"],
  },
};

/** Every tool the client offers; the permission policy allows exactly these. */
export const OFFERED_TOOLS: readonly ToolDescription[] = [HOST_INFO_TOOL];

/** The result of a tool call, in the MCP `tools/call` shape mm accepts. */
export interface ToolResult {
  /** What the model reads: the text of each block, concatenated. */
  content: { type: "text"; text: string }[];
  /** `true` when the call failed; the model reads `[client tool error: …]`. */
  isError?: boolean;
}

/** The `--allow-sys` names each topic needs. */
export const SYS_PERMISSIONS: Readonly<Record<Topic, readonly string[]>> = {
  os: ["osRelease", "hostname"],
  cpu: ["cpus", "loadavg"],
  memory: ["systemMemoryInfo"],
  uptime: ["osUptime"],
};

const GIB = 1024 ** 3;

/**
 * The display name of a `Deno.build.os` value.
 *
 * @example
 * ```ts
 * osName("darwin"); // "macOS"
 * ```
 */
export function osName(os: string): string {
  const known: Record<string, string> = {
    linux: "Linux",
    darwin: "macOS",
    windows: "Windows",
  };
  return known[os] ?? os.charAt(0).toUpperCase() + os.slice(1);
}

/** A size in bytes as GiB with one decimal: `15.8 GiB`. */
export function gib(bytes: number): string {
  return `${(bytes / GIB).toFixed(1)} GiB`;
}

/**
 * The `uptime` text for a number of seconds up, as of `now`.
 *
 * @example
 * ```ts
 * describeUptime(274_320, new Date("2026-11-30T12:13:00Z"));
 * // "up 3 days, 4 hours, 12 minutes (since 2026-11-27 08:01 UTC)"
 * ```
 */
export function describeUptime(seconds: number, now: Date): string {
  const minutesUp = Math.floor(seconds / 60);
  const days = Math.floor(minutesUp / 1440);
  const hours = Math.floor((minutesUp % 1440) / 60);
  const minutes = minutesUp % 60;
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const parts = [];
  if (days > 0) parts.push(unit(days, "day"));
  if (days > 0 || hours > 0) parts.push(unit(hours, "hour"));
  parts.push(unit(minutes, "minute"));
  const since = new Date(now.getTime() - seconds * 1000).toISOString();
  return `up ${parts.join(", ")} (since ${since.slice(0, 10)} ${since.slice(11, 16)} UTC)`;
}

/** Reads one topic from the machine, with Deno's own APIs where it has them. */
const READ_TOPIC: Record<Topic, () => string> = {
  os: () =>
    `${
      osName(Deno.build.os)
    } ${Deno.osRelease()} (${Deno.build.os}/${Deno.build.arch}), host name ${Deno.hostname()}`,
  cpu: () => {
    // Deno has no API for the CPU model; node:os has.
    const model = cpus()[0]?.model.trim() || "unknown CPU";
    const load = Deno.loadavg().map((n) => n.toFixed(2)).join(" ");
    return `${navigator.hardwareConcurrency} × ${model} (${Deno.build.arch}), load average ${load}`;
  },
  memory: () => {
    const { available, total } = Deno.systemMemoryInfo();
    return `${gib(available)} free of ${gib(total)}`;
  },
  uptime: () => describeUptime(Deno.osUptime(), new Date()),
};

function isTopic(value: string): value is Topic {
  return (TOPICS as readonly string[]).includes(value);
}

function textResult(text: string, isError = false): ToolResult {
  const result: ToolResult = { content: [{ type: "text", text }] };
  if (isError) result.isError = true;
  return result;
}

/**
 * Runs `host_info` for the model's `topic` argument. A bad call is an error
 * result the model can act on, never an exception.
 *
 * @example
 * ```ts
 * hostInfo("disk").content[0].text;
 * // 'unknown topic "disk"; use one of: os, cpu, memory, uptime'
 * ```
 */
export function hostInfo(topic: unknown): ToolResult {
  const choices = `use one of: ${TOPICS.join(", ")}`;
  if (typeof topic !== "string") {
    return textResult(`missing parameter "topic"; ${choices}`, true);
  }
  if (!isTopic(topic)) {
    return textResult(
      `unknown topic ${JSON.stringify(topic)}; ${choices}`,
      true,
    );
  }
  try {
    return textResult(READ_TOPIC[topic]());
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) {
      const names = SYS_PERMISSIONS[topic].join(",");
      return textResult(
        `host_info needs --allow-sys=${names} to report ${topic}`,
        true,
      );
    }
    return textResult(
      `host_info could not read ${topic}: ${errorText(error)}`,
      true,
    );
  }
}

// ─── 2. Announcing it ────────────────────────────────────────────────────────

/** How mm learns the tool list (seed "Découverte"). */
export type Discovery = "meta" | "request";

/**
 * The `initialize` params: the tool list in `_meta["org.mini-me/tools"]`
 * (`meta`), or `true` to say "ask me for it" (`request`). Capabilities are a
 * contract, so no file system and no terminal: the client implements neither.
 */
export function initializeParams(
  discovery: Discovery,
): Record<string, unknown> {
  return {
    protocolVersion: 1,
    clientInfo: { name: "host-info-client", version: VERSION },
    clientCapabilities: {
      fs: { readTextFile: false, writeTextFile: false },
      terminal: false,
      _meta: {
        "org.mini-me/tools": discovery === "meta" ? [...OFFERED_TOOLS] : true,
      },
    },
  };
}

// ─── 3. The list ─────────────────────────────────────────────────────────────

/** The answer to `_org.mini-me/tools/list`, for any session. */
export function toolList(): { tools: ToolDescription[] } {
  return { tools: [...OFFERED_TOOLS] };
}

// ─── 4. The call ─────────────────────────────────────────────────────────────

/** What a tool call request carries: the model's arguments and its session. */
export interface ToolCall {
  /** The model's arguments, without `_meta`. */
  args: unknown;
  /** From `params._meta["org.mini-me/sessionId"]`, `?` when absent. */
  sessionId: string;
}

/**
 * Splits the params of a tool call: the model's arguments are at the top
 * level, the session in `_meta["org.mini-me/sessionId"]` (seed "Requête").
 */
export function readToolCall(params: unknown): ToolCall {
  if (!isObject(params)) return { args: params ?? {}, sessionId: "?" };
  const { _meta, ...args } = params;
  const sessionId = isObject(_meta) ? _meta["org.mini-me/sessionId"] : undefined;
  return { args, sessionId: typeof sessionId === "string" ? sessionId : "?" };
}

/** Answers `_demo.minime/host_info`: logs the call, then runs the tool. */
function answerHostInfo(params: unknown): ToolResult {
  const { args, sessionId } = readToolCall(params);
  log(`host_info ${JSON.stringify(args)} (session ${sessionId})`);
  return hostInfo(isObject(args) ? args.topic : undefined);
}

// ─── 5. Permissions ──────────────────────────────────────────────────────────

/** The answer to `session/request_permission`. */
export type PermissionOutcome =
  | { outcome: "cancelled" }
  | { outcome: "selected"; optionId: string };

/**
 * Whether a permission request's title names a tool the client offered:
 * exactly `client: <name>`. Anything else, a shell command included, is not.
 */
export function isOfferedToolTitle(title: unknown): boolean {
  return OFFERED_TOOLS.some((tool) => title === `client: ${tool.name}`);
}

/**
 * Picks the option to answer with: `allow_once` (else `allow_always`) to
 * allow; `reject_once` (else `reject_always`) to refuse, else `cancelled`.
 * Only ever an `optionId` that mm offered.
 *
 * @example
 * ```ts
 * choosePermission([{ optionId: "ok", kind: "allow_once" }], true);
 * // { outcome: "selected", optionId: "ok" }
 * ```
 */
export function choosePermission(
  options: unknown,
  allow: boolean,
): PermissionOutcome {
  const offered = Array.isArray(options) ? options.filter(isObject) : [];
  const kinds = allow ? ["allow_once", "allow_always"] : ["reject_once", "reject_always"];
  for (const kind of kinds) {
    const option = offered.find((o) => o.kind === kind && typeof o.optionId === "string");
    if (option) {
      return { outcome: "selected", optionId: option.optionId as string };
    }
  }
  return allow ? choosePermission(options, false) : { outcome: "cancelled" };
}

/** Answers `session/request_permission` with the policy above, and logs it. */
function answerPermission(
  params: unknown,
  turnCancelled: boolean,
): { outcome: PermissionOutcome } {
  const toolCall = isObject(params) ? params.toolCall : undefined;
  const title = isObject(toolCall) ? toolCall.title : undefined;
  const options = isObject(params) ? params.options : undefined;
  const allow = isOfferedToolTitle(title);
  // After session/cancel every permission request is answered cancelled,
  // whatever its title (ACP: the client MUST).
  const outcome: PermissionOutcome = turnCancelled
    ? { outcome: "cancelled" }
    : choosePermission(options, allow);
  const allowed = allow && outcome.outcome === "selected" &&
    optionKind(options, outcome.optionId).startsWith("allow");
  log(
    `permission for ${JSON.stringify(title ?? "")}: ${allowed ? "allowed" : "refused"}`,
  );
  return { outcome };
}

function optionKind(options: unknown, optionId: string): string {
  const option = Array.isArray(options)
    ? options.find((o) => isObject(o) && o.optionId === optionId)
    : undefined;
  return String(option?.kind ?? "");
}

// ─── 6. Everything else ──────────────────────────────────────────────────────

/** JSON-RPC error codes the client sends. */
export const ErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  requestCancelled: -32800,
} as const;

const ERROR_MESSAGES: Record<number, string> = {
  [ErrorCode.parseError]: "Parse error",
  [ErrorCode.invalidRequest]: "Invalid Request",
  [ErrorCode.methodNotFound]: "Method not found",
  [ErrorCode.requestCancelled]: "Request cancelled",
};

/** A JSON-RPC error to answer a request with. */
export class RpcError extends Error {
  /** The JSON-RPC error code. */
  readonly code: number;
  /** Builds the error for `code`, with its standard message unless given one. */
  constructor(code: number, message = ERROR_MESSAGES[code] ?? "Error") {
    super(message);
    this.code = code;
  }
}

/**
 * Answers one request from mm: the tool, the list, a permission; anything
 * else (`fs/*`, `terminal/*`, unknown `_…` methods) is `-32601`.
 */
function answerRequest(
  method: string,
  params: unknown,
  turnCancelled: boolean,
): unknown {
  switch (method) {
    case HOST_INFO_TOOL.method:
      return answerHostInfo(params);
    case "_org.mini-me/tools/list": {
      const sessionId = isObject(params) ? params.sessionId : undefined;
      log(`list requested for session ${sessionId ?? "?"}`);
      return toolList();
    }
    case "session/request_permission":
      return answerPermission(params, turnCancelled);
    default:
      throw new RpcError(ErrorCode.methodNotFound);
  }
}

// ─── 7. What the user sees ───────────────────────────────────────────────────

/** One output stream that remembers whether it stands at a line start. */
class Sink {
  #file: { writeSync(p: Uint8Array): number };
  #encoder = new TextEncoder();
  #broken = false;
  /** Whether ANSI styles may be written. */
  readonly colour: boolean;
  /** `false` after text that did not end with a newline. */
  atLineStart = true;

  constructor(file: { writeSync(p: Uint8Array): number }, colour: boolean) {
    this.#file = file;
    this.colour = colour;
  }

  /** Streams text as it comes, without adding a newline. */
  chunk(text: string): void {
    if (text === "") return;
    this.#write(text);
    this.atLineStart = text.endsWith("\n");
  }

  /** Says whether another stream's open line needs ending first. */
  beforeLine: () => boolean = () => false;

  /** Writes a whole line, after a newline if a chunk left the line open. */
  line(text: string): void {
    const open = !this.atLineStart || this.beforeLine();
    this.#write(open ? `\n${text}\n` : `${text}\n`);
    this.atLineStart = true;
  }

  /** Wraps text in an ANSI style when colour is on. */
  style(code: number, text: string): string {
    return this.colour ? `\x1b[${code}m${text}\x1b[0m` : text;
  }

  #write(text: string): void {
    if (this.#broken) return;
    const bytes = this.#encoder.encode(text);
    try {
      for (let n = 0; n < bytes.length;) {
        n += this.#file.writeSync(bytes.subarray(n));
      }
    } catch {
      // A reader that went away (`client.ts | head`) is not our failure.
      this.#broken = true;
    }
  }
}

function wantsColour(file: { isTerminal(): boolean }): boolean {
  return file.isTerminal() && readEnv("NO_COLOR") === undefined;
}

/** stdout: the conversation. */
const out = new Sink(Deno.stdout, wantsColour(Deno.stdout));
/** stderr: diagnostics. */
const err = new Sink(Deno.stderr, wantsColour(Deno.stderr));

/**
 * When both streams are one terminal, a stderr line must not glue itself to
 * an answer still streaming on stdout; when stdout is a file, it stays as mm
 * sent it.
 */
const sharedTerminal = Deno.stdout.isTerminal() && Deno.stderr.isTerminal();
err.beforeLine = () => {
  if (sharedTerminal && !out.atLineStart) {
    out.atLineStart = true;
    return true;
  }
  return false;
};

/** Writes a `[client] …` line on stderr. */
function log(text: string): void {
  err.line(`[client] ${text}`);
}

const DIM = 2;
const RED = 31;

/** How a content block is shown: its text, or `[<type>]`. */
function blockText(block: unknown): { text: string } | { label: string } {
  if (
    isObject(block) && block.type === "text" && typeof block.text === "string"
  ) {
    return { text: block.text };
  }
  const type = isObject(block) && typeof block.type === "string" ? block.type : "unknown";
  return { label: `[${type}]` };
}

function lines(text: string): string[] {
  const parts = text.split(/\r?\n/);
  if (parts.length > 1 && parts.at(-1) === "") parts.pop();
  return parts;
}

/**
 * Shows `session/update` notifications: stdout gets the conversation, stderr
 * (with `--verbose`) thoughts, plans and usage. Unknown kinds show nothing.
 */
export class Renderer {
  #verbose: boolean;
  #titles = new Map<string, string>();

  /**
   * Builds a renderer.
   *
   * @param verbose show thoughts, plans and usage updates on stderr
   */
  constructor(verbose: boolean) {
    this.#verbose = verbose;
  }

  /** Shows one `session/update`'s `update` object. */
  show(update: unknown): void {
    if (!isObject(update)) return;
    switch (update.sessionUpdate) {
      case "agent_message_chunk": {
        const shown = blockText(update.content);
        if ("text" in shown) out.chunk(shown.text);
        else out.line(shown.label);
        return;
      }
      case "tool_call":
        return this.#toolCall(update);
      case "tool_call_update":
        return this.#toolCallUpdate(update);
      case "agent_thought_chunk":
        return this.#thought(update);
      case "plan":
        return this.#plan(update);
      case "usage_update":
        return this.#usage(update);
      default:
        return; // forward compatible: a kind we do not know shows nothing
    }
  }

  #toolCall(update: Record<string, unknown>): void {
    const id = String(update.toolCallId ?? "");
    const title = typeof update.title === "string" ? update.title : id;
    this.#titles.set(id, title);
    out.line(`🛠️ ${title}`);
    this.#content(update.content);
  }

  #toolCallUpdate(update: Record<string, unknown>): void {
    const id = String(update.toolCallId ?? "");
    if (typeof update.title === "string") this.#titles.set(id, update.title);
    if (update.status === "failed") {
      const title = this.#titles.get(id) ?? id;
      out.line(out.style(RED, `✖ ${title} failed`));
    }
    this.#content(update.content);
  }

  #content(content: unknown): void {
    if (!Array.isArray(content)) return;
    for (const item of content) {
      const shown = isObject(item) && item.type === "content"
        ? blockText(item.content)
        : blockText(item);
      const text = "text" in shown ? shown.text : shown.label;
      for (const line of lines(text)) out.line(`│ ${line}`);
    }
  }

  #thought(update: Record<string, unknown>): void {
    if (!this.#verbose) return;
    const shown = blockText(update.content);
    err.chunk(err.style(DIM, "text" in shown ? shown.text : shown.label));
  }

  #plan(update: Record<string, unknown>): void {
    if (!this.#verbose || !Array.isArray(update.entries)) return;
    err.line(err.style(DIM, "plan:"));
    for (const entry of update.entries.filter(isObject)) {
      err.line(err.style(DIM, `  [${entry.status}] ${entry.content}`));
    }
  }

  #usage(update: Record<string, unknown>): void {
    if (!this.#verbose) return;
    let text = `usage: ${update.used} of ${update.size} tokens`;
    const cost = update.cost;
    if (isObject(cost)) text += `, cost ${cost.amount} ${cost.currency}`;
    err.line(err.style(DIM, text));
  }
}

// ─── 8. Framing ──────────────────────────────────────────────────────────────

/** The longest line accepted from mm, as in the official SDK: 32 MiB. */
export const MAX_LINE_BYTES = 32 * 1024 * 1024;

/** A line from mm longer than {@linkcode MAX_LINE_BYTES}. */
export class LineTooLongError extends Error {
  /** Builds the error for a line over `limit` bytes. */
  constructor(limit: number) {
    super(`mm sent a line longer than ${limit} bytes`);
  }
}

/**
 * Splits a byte stream into lines ended by `\n` or `\r\n`. Each chunk is
 * scanned once, only its new bytes, so a line spanning many chunks costs time
 * linear in its length; lines are decoded whole, so a UTF-8 character split
 * across chunks decodes correctly.
 *
 * @example
 * ```ts
 * const reader = new LineReader();
 * [...reader.push(new TextEncoder().encode('{"a":1}\r\n{"b"'))]; // ['{"a":1}']
 * ```
 */
export class LineReader {
  #parts: Uint8Array[] = [];
  #length = 0;
  #limit: number;
  #decoder = new TextDecoder();

  /**
   * Builds a reader.
   *
   * @param limit the longest line accepted, in bytes (without its end)
   */
  constructor(limit = MAX_LINE_BYTES) {
    this.#limit = limit;
  }

  /**
   * Takes the next chunk and yields every line it completes.
   *
   * @throws {LineTooLongError} when the line being read grows past the limit
   */
  *push(chunk: Uint8Array): Generator<string> {
    let start = 0;
    for (
      let end = chunk.indexOf(10);
      end !== -1;
      end = chunk.indexOf(10, start)
    ) {
      this.#keep(chunk.subarray(start, end));
      yield this.#take();
      start = end + 1;
    }
    if (start < chunk.length) this.#keep(chunk.subarray(start));
  }

  /** The last line when the stream ended without a newline, if any. */
  flush(): string | undefined {
    return this.#length > 0 ? this.#take() : undefined;
  }

  #keep(bytes: Uint8Array): void {
    // One byte of slack for the `\r` of a `\r\n` ending.
    if (this.#length + bytes.length > this.#limit + 1) {
      this.#parts = [];
      this.#length = 0;
      throw new LineTooLongError(this.#limit);
    }
    if (bytes.length > 0) {
      // Kept, not copied: a stream hands over a new chunk on every read.
      this.#parts.push(bytes);
      this.#length += bytes.length;
    }
  }

  #take(): string {
    let bytes: Uint8Array;
    if (this.#parts.length === 1) bytes = this.#parts[0];
    else {
      bytes = new Uint8Array(this.#length);
      let offset = 0;
      for (const part of this.#parts) {
        bytes.set(part, offset);
        offset += part.length;
      }
    }
    this.#parts = [];
    this.#length = 0;
    if (bytes.at(-1) === 13) bytes = bytes.subarray(0, -1);
    return this.#decoder.decode(bytes);
  }
}

/** A JSON-RPC id. */
export type RpcId = string | number | null;

/** What one line from mm turned out to be. */
export type Frame =
  | { kind: "request"; id: string | number; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | {
    kind: "response";
    id: RpcId;
    result?: unknown;
    error?: { code: number; message: string; data?: unknown };
  }
  | { kind: "blank" }
  | { kind: "bad"; reply: Record<string, unknown> };

function errorReply(id: RpcId, code: number): Record<string, unknown> {
  return { jsonrpc: "2.0", id, error: { code, message: ERROR_MESSAGES[code] } };
}

/**
 * Classifies one line: a request, a notification, a response, a blank line
 * to skip, or a bad frame with the error reply §8 fixes (`-32700` for a line
 * that is not JSON; `-32600` for a batch, a non-object, or an object that is
 * none of the three).
 *
 * @example
 * ```ts
 * parseFrame("[1,2]");
 * // { kind: "bad", reply: { jsonrpc: "2.0", id: null, error: { code: -32600, … } } }
 * ```
 */
export function parseFrame(line: string): Frame {
  if (line.trim() === "") return { kind: "blank" };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { kind: "bad", reply: errorReply(null, ErrorCode.parseError) };
  }
  if (!isObject(value)) {
    return { kind: "bad", reply: errorReply(null, ErrorCode.invalidRequest) };
  }
  const id = value.id;
  const validId = typeof id === "string" || typeof id === "number";
  if (typeof value.method === "string") {
    if (validId) {
      return {
        kind: "request",
        id,
        method: value.method,
        params: value.params,
      };
    }
    if (!("id" in value)) {
      return {
        kind: "notification",
        method: value.method,
        params: value.params,
      };
    }
  } else if (
    !("method" in value) && (validId || id === null) &&
    ("result" in value || isObject(value.error))
  ) {
    return {
      kind: "response",
      id: id as RpcId,
      result: value.result,
      error: value.error as { code: number; message: string } | undefined,
    };
  }
  return {
    kind: "bad",
    reply: errorReply(validId ? id : null, ErrorCode.invalidRequest),
  };
}

// ─── 9. The connection to mm ─────────────────────────────────────────────────

/** An error that ends the run with a message and an exit code. */
export class ClientError extends Error {
  /** The process exit code. */
  readonly exitCode: number;
  /** `message` is printed as `error: <message>`; an empty one prints nothing. */
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

interface Pending {
  method: string;
  resolve(result: unknown): void;
  reject(error: RpcError): void;
}

/**
 * JSON-RPC over mm's stdin and stdout: requests out with their answers
 * matched by id, requests and notifications in, writes serialised so one
 * frame is written whole before the next starts.
 */
class Connection {
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #encoder = new TextEncoder();
  #writing: Promise<void> = Promise.resolve();
  #queued: string[] = [];
  #nextId = 0;
  #pending = new Map<RpcId, Pending>();
  /** Requests from mm still being handled, to honour `$/cancel_request`. */
  #handling = new Map<RpcId, AbortController>();
  #trace: boolean;
  #onRequest: (method: string, params: unknown, signal: AbortSignal) => unknown;
  #onNotification: (method: string, params: unknown) => void;
  #onWriteError: (error: unknown) => void;

  constructor(options: {
    stdin: WritableStream<Uint8Array>;
    trace: boolean;
    onRequest: (
      method: string,
      params: unknown,
      signal: AbortSignal,
    ) => unknown;
    onNotification: (method: string, params: unknown) => void;
    onWriteError: (error: unknown) => void;
  }) {
    this.#writer = options.stdin.getWriter();
    this.#trace = options.trace;
    this.#onRequest = options.onRequest;
    this.#onNotification = options.onNotification;
    this.#onWriteError = options.onWriteError;
  }

  /** Sends a request and resolves with its result, or rejects with its error. */
  request(method: string, params: unknown): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { method, resolve, reject });
      this.#send({ jsonrpc: "2.0", id, method, params });
    });
  }

  /** Sends a notification. */
  notify(method: string, params: unknown): void {
    this.#send({ jsonrpc: "2.0", method, params });
  }

  /** Closes mm's stdin once every queued frame is written. */
  async close(): Promise<void> {
    await this.#writing;
    await this.#writer.close().catch(() => {});
  }

  /** Reads frames from mm's stdout until it ends. */
  async readFrom(stdout: ReadableStream<Uint8Array>): Promise<void> {
    const reader = new LineReader();
    for await (const chunk of stdout) {
      for (const line of reader.push(chunk)) this.#receive(line);
    }
    const last = reader.flush();
    if (last !== undefined) this.#receive(last);
  }

  /**
   * Queues a frame. Frames queued in the same tick go out in one write, whole
   * and in order: one system call for a burst of answers instead of one each.
   */
  #send(message: Record<string, unknown>): void {
    const line = JSON.stringify(message);
    if (this.#trace) err.line(`→ ${line}`);
    this.#queued.push(line, "\n");
    if (this.#queued.length > 2) return; // a write is already scheduled
    this.#writing = this.#writing
      .then(() => {
        const bytes = this.#encoder.encode(this.#queued.join(""));
        this.#queued = [];
        return this.#writer.write(bytes);
      })
      .catch((error) => this.#onWriteError(error));
  }

  #receive(line: string): void {
    if (this.#trace && line.trim() !== "") err.line(`← ${line}`);
    const frame = parseFrame(line);
    switch (frame.kind) {
      case "blank":
        return;
      case "bad":
        log(`bad frame from mm: ${line.slice(0, 80)}`);
        return this.#send(frame.reply);
      case "response":
        return this.#settle(frame);
      case "notification":
        return this.#notification(frame.method, frame.params);
      case "request":
        return this.#request(frame.id, frame.method, frame.params);
    }
  }

  #settle(frame: Extract<Frame, { kind: "response" }>): void {
    const pending = this.#pending.get(frame.id);
    if (!pending) {
      log(
        `answer to no pending request (id ${JSON.stringify(frame.id)}) ignored`,
      );
      return;
    }
    this.#pending.delete(frame.id);
    if (frame.error) {
      const message = typeof frame.error.message === "string"
        ? frame.error.message
        : JSON.stringify(frame.error);
      pending.reject(new RpcError(Number(frame.error.code), message));
    } else pending.resolve(frame.result);
  }

  #notification(method: string, params: unknown): void {
    if (method === "$/cancel_request") {
      const id = isObject(params) ? params.requestId : undefined;
      const handling = this.#handling.get(id as RpcId);
      if (handling) {
        handling.abort();
        this.#handling.delete(id as RpcId);
        this.#reply(id as RpcId, new RpcError(ErrorCode.requestCancelled));
      }
      return; // already answered: nothing left to cancel
    }
    this.#onNotification(method, params);
  }

  #request(id: string | number, method: string, params: unknown): void {
    const controller = new AbortController();
    let answer: unknown;
    try {
      answer = this.#onRequest(method, params, controller.signal);
    } catch (error) {
      return this.#reply(id, error);
    }
    if (!(answer instanceof Promise)) return this.#reply(id, answer, true);
    // An asynchronous handler: it can be cancelled until it answers.
    this.#handling.set(id, controller);
    answer.then(
      (result) => this.#replyUnlessCancelled(id, controller, result, true),
      (error) => this.#replyUnlessCancelled(id, controller, error),
    );
  }

  #replyUnlessCancelled(
    id: RpcId,
    controller: AbortController,
    answer: unknown,
    ok = false,
  ): void {
    if (controller.signal.aborted) return; // answered -32800 already
    this.#handling.delete(id);
    this.#reply(id, answer, ok);
  }

  #reply(id: RpcId, answer: unknown, ok = false): void {
    if (ok) return this.#send({ jsonrpc: "2.0", id, result: answer ?? null });
    const error = answer instanceof RpcError
      ? answer
      : new RpcError(-32603, `Internal error: ${errorText(answer)}`);
    this.#send({
      jsonrpc: "2.0",
      id,
      error: { code: error.code, message: error.message },
    });
  }
}

// ─── 10. The command line ────────────────────────────────────────────────────

/** The default question. */
export const DEFAULT_QUESTION =
  "What operating system does my machine run, and how much memory does it have?";

/** The options of one run, from the command line. */
export interface Options {
  /** The prompt. */
  question: string;
  /** How mm discovers the tool. */
  discovery: Discovery;
  /** The agent file as given (or the default for the mode). */
  agent: string;
  /** The mm executable given by `--mm`, if any. */
  mm?: string;
  /** Print every frame on stderr. */
  trace: boolean;
  /** Show thoughts, plans and usage. */
  verbose: boolean;
  /** Seconds to wait for `initialize` and `session/new`. */
  timeout: number;
  /** `--help` or `--version` asked for. */
  show?: "help" | "version";
}

/** The usage text of `--help`. */
export const USAGE = `usage: client.ts [options] [question]

Lends mini-me (mm -acp) one tool, host_info, asks it a question and shows
the conversation.

options:
  --request          discovery mode "request" (default agent file: agent-request.yaml)
  --agent FILE       the agent file to give mm (default: agent.yaml)
  --mm PATH          the mm executable (default: $MM_BIN, else mm on PATH)
  --trace            print every JSON-RPC frame on stderr (→ sent, ← received)
  --verbose          also show thoughts, plans and usage updates on stderr
  --timeout SECONDS  how long to wait for initialize and session/new (default 30)
  -h, --help         show this help and exit
  --version          print the version and exit`;

/** A command line the client cannot run: exit code 2, with the usage. */
export class UsageError extends ClientError {
  /** Builds the error; `message` names the bad option or value. */
  constructor(message: string) {
    super(message, 2);
  }
}

/**
 * Parses the command line with `node:util` `parseArgs`. A `--` that is the
 * very first argument is dropped (`deno task demo -- --request`).
 *
 * @throws {UsageError} for an unknown option or a bad value
 * @example
 * ```ts
 * parseCommandLine(["--", "--request", "Which", "CPU?"]).question; // "Which CPU?"
 * ```
 */
export function parseCommandLine(argv: readonly string[]): Options {
  const args = argv[0] === "--" ? argv.slice(1) : [...argv];
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        request: { type: "boolean" },
        agent: { type: "string" },
        mm: { type: "string" },
        trace: { type: "boolean" },
        verbose: { type: "boolean" },
        timeout: { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean" },
      },
    });
  } catch (error) {
    throw new UsageError(describeParseError(error));
  }
  const { values, positionals } = parsed;
  const timeout = Number(values.timeout ?? "30");
  if (!(timeout > 0 && Number.isFinite(timeout))) {
    throw new UsageError(
      `--timeout needs a number of seconds above 0, got ${JSON.stringify(values.timeout)}`,
    );
  }
  const discovery: Discovery = values.request ? "request" : "meta";
  return {
    question: positionals.join(" ").trim() || DEFAULT_QUESTION,
    discovery,
    agent: values.agent ??
      (discovery === "request" ? "agent-request.yaml" : "agent.yaml"),
    mm: values.mm,
    trace: values.trace ?? false,
    verbose: values.verbose ?? false,
    timeout,
    show: values.help ? "help" : values.version ? "version" : undefined,
  };
}

function describeParseError(error: unknown): string {
  const text = errorText(error);
  const code = isObject(error) ? error.code : undefined;
  const option = text.match(/'([^']+)'/)?.[1]?.split(" ")[0];
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && option) {
    return `unknown option ${option}`;
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && option) {
    return `${option} needs a value`;
  }
  return text.split("\n")[0];
}

// ─── 11. The agent file ──────────────────────────────────────────────────────

/**
 * Finds the agent file: relative to the current directory, else, when the
 * client runs from a source file, next to `client.ts`.
 *
 * @throws {ClientError} (exit 2) when it is in neither place
 */
export function findAgentFile(name: string): string {
  const candidates = [name];
  const here = import.meta.dirname;
  if (here && !isAbsolute(name)) candidates.push(`${here}/${name}`);
  for (const path of candidates) {
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch (error) {
      if (error instanceof Deno.errors.NotCapable) {
        throw new ClientError(
          `agent file ${path} is outside what this run may read (add --allow-read=${path})`,
          2,
        );
      }
      // not there: try the next place
    }
  }
  throw new ClientError(
    `agent file not found: ${name} (run from the project folder or pass --agent)`,
    2,
  );
}

function isAbsolute(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path);
}

/** The part of an agent file the client checks. */
export interface AgentConfig {
  /** `acp.clientTools.enabled` (default `true`). */
  enabled: boolean;
  /** `acp.clientTools.discovery` (default `meta`). */
  discovery: string;
}

/**
 * Reads an agent file's YAML and the keys the client checks.
 *
 * @throws {ClientError} (exit 2) naming the file, and the line for bad YAML
 */
export function readAgentFile(path: string): AgentConfig {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (error) {
    throw new ClientError(
      `cannot read agent file ${path}: ${errorText(error)}`,
      2,
    );
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    if (error instanceof YAMLException) {
      throw new ClientError(
        `agent file ${path} is not valid YAML (line ${
          (error.mark?.line ?? 0) + 1
        }): ${error.reason}`,
        2,
      );
    }
    throw error;
  }
  if (document !== null && document !== undefined && !isObject(document)) {
    throw new ClientError(
      `agent file ${path} is not a YAML mapping of keys`,
      2,
    );
  }
  const acp = isObject(document) ? document.acp : undefined;
  const tools = isObject(acp) ? acp.clientTools : undefined;
  const config = isObject(tools) ? tools : {};
  return {
    enabled: config.enabled !== false,
    discovery: typeof config.discovery === "string" ? config.discovery : "meta",
  };
}

/**
 * The warnings for an agent file that contradicts the run (§9). The client
 * goes on anyway, so that mm's own reaction can be seen.
 */
export function agentFileWarnings(
  file: string,
  config: AgentConfig,
  discovery: Discovery,
): string[] {
  const prefix = `warning: ${file} sets acp.clientTools`;
  if (!config.enabled) {
    return [`${prefix}.enabled: false; mm will ignore host_info`];
  }
  if (config.discovery === "meta" && discovery === "request") {
    return [
      `${prefix}.discovery: meta, but the client announces request; mm will not see host_info`,
    ];
  }
  if (config.discovery === "request" && discovery === "meta") {
    return [
      `${prefix}.discovery: request, but the client announces meta; mm will ask for the list, and the client answers it`,
    ];
  }
  return [];
}

// ─── 12. The run ─────────────────────────────────────────────────────────────

/** How long mm gets to exit after its stdin is closed. */
const EXIT_GRACE_MS = 2000;
/** How long mm gets to answer the prompt after `session/cancel`. */
const CANCEL_GRACE_MS = 5000;

const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Starts mm as `<mm> -acp -agent <file>`, in its own process group so that a
 * Ctrl-C typed in the terminal reaches the client alone.
 *
 * @throws {ClientError} (exit 127) when it cannot be started
 */
function startMm(mm: string, agentFile: string): Deno.ChildProcess {
  try {
    return new Deno.Command(mm, {
      args: ["-acp", "-agent", agentFile],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
      detached: true,
    }).spawn();
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound
      ? "not found"
      : error instanceof Deno.errors.PermissionDenied
      ? "not executable"
      : errorText(error);
    throw new ClientError(
      `cannot start mm (${mm}): ${reason}. Install mini-me or set MM_BIN / --mm.`,
      127,
    );
  }
}

/** Kills mm's whole process group: an agent may run helpers of its own. */
function killGroup(child: Deno.ChildProcess): void {
  try {
    Deno.kill(-child.pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

/** The error of an mm that exited before the turn ended. */
function mmExited(status: Deno.CommandStatus): ClientError {
  const how = status.signal ? `signal ${status.signal}` : `code ${status.code}`;
  return new ClientError(`mm exited with ${how} before the turn ended`, 1);
}

/** One conversation with mm, from `initialize` to the stop reason. */
class Run {
  #options: Options;
  #child: Deno.ChildProcess;
  #connection: Connection;
  #renderer: Renderer;
  #failed!: (error: ClientError) => void;
  /** Settles when the run must end early: mm gone, a bad stream, a signal. */
  #failure: Promise<never>;
  #readDone: Promise<void>;
  #turnStarted = false;
  #sessionId = "?";
  #signalExit: number | undefined;
  #cancelTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: Options, child: Deno.ChildProcess) {
    this.#options = options;
    this.#child = child;
    this.#renderer = new Renderer(options.verbose);
    this.#failure = new Promise<never>((_, reject) => this.#failed = reject);
    this.#failure.catch(() => {}); // read where it matters, in #ask
    this.#connection = new Connection({
      stdin: child.stdin,
      trace: options.trace,
      onRequest: (method, params) => answerRequest(method, params, this.#signalExit !== undefined),
      onNotification: (method, params) => this.#notification(method, params),
      onWriteError: (error) => this.#writeFailed(error),
    });
    this.#readDone = this.#connection.readFrom(child.stdout).catch((error) => {
      if (error instanceof LineTooLongError) {
        log(`${error.message}; dropping the connection`);
        this.#failed(
          new ClientError(`${error.message}; connection dropped`, 1),
        );
      } else {
        this.#failed(new ClientError(`reading from mm: ${errorText(error)}`, 1));
      }
    });
    child.status.then(async (status) => {
      // Read what mm wrote before it went, then report it gone.
      await Promise.race([this.#readDone, delay(1000)]);
      this.#failed(mmExited(status));
    });
  }

  /** Runs the exchange and returns the exit code. */
  async exchange(): Promise<number> {
    const { discovery, question, timeout } = this.#options;
    const init = await this.#ask(
      "initialize",
      initializeParams(discovery),
      timeout,
    );
    const version = isObject(init) ? init.protocolVersion : undefined;
    if (version !== 1) {
      throw new ClientError(
        `mm speaks ACP protocol version ${JSON.stringify(version)}; this client speaks 1`,
        1,
      );
    }
    const session = await this.#ask(
      "session/new",
      { cwd: Deno.cwd(), mcpServers: [] },
      timeout,
    );
    const sessionId = isObject(session) ? String(session.sessionId) : "?";
    this.#sessionId = sessionId;
    log(`discovery: ${discovery}, session ${sessionId}`);

    out.line(`❓ ${question}`);
    this.#turnStarted = true;
    const answer = await this.#ask("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: question }],
    });
    clearTimeout(this.#cancelTimer);
    const stopReason = isObject(answer) ? String(answer.stopReason) : "?";
    out.line(`[${stopReason}]`);
    if (this.#signalExit !== undefined) return this.#signalExit;
    if (stopReason === "cancelled") return 130;
    return stopReason === "refusal" ? 1 : 0;
  }

  /** Ends mm: close its stdin, give it time to exit, then kill its group. */
  async stop(): Promise<void> {
    await Promise.race([this.#connection.close(), delay(EXIT_GRACE_MS)]);
    await Promise.race([this.#child.status, delay(EXIT_GRACE_MS)]);
    killGroup(this.#child);
  }

  /**
   * Ctrl-C or SIGTERM: during the turn, cancel it the ACP way and give mm
   * time to answer; before it, or the second time, kill mm.
   */
  interrupt(signal: Deno.Signal): void {
    const code = SIGNAL_EXIT[signal] ?? 130;
    if (!this.#turnStarted || this.#signalExit !== undefined) {
      killGroup(this.#child);
      this.#failed(new ClientError("", this.#signalExit ?? code));
      return;
    }
    this.#signalExit = code;
    log("cancelling…");
    this.#connection.notify("session/cancel", { sessionId: this.#sessionId });
    this.#cancelTimer = setTimeout(() => {
      log("mm did not answer the cancellation in time; killing it");
      killGroup(this.#child);
      this.#failed(new ClientError("", code));
    }, CANCEL_GRACE_MS);
  }

  async #ask(
    method: string,
    params: unknown,
    timeout?: number,
  ): Promise<unknown> {
    const racers: Promise<unknown>[] = [
      this.#connection.request(method, params),
      this.#failure,
    ];
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (timeout !== undefined) {
      racers.push(
        new Promise((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new ClientError(
                  `mm did not answer ${method} within ${timeout} s`,
                  1,
                ),
              ),
            timeout * 1000,
          );
        }),
      );
    }
    try {
      return await Promise.race(racers);
    } catch (error) {
      if (error instanceof RpcError) {
        throw new ClientError(`mm refused ${method}: ${error.message}`, 1);
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  #notification(method: string, params: unknown): void {
    // Other notifications (and other sessions' updates) are not ours to show.
    if (method === "session/update" && isObject(params)) {
      this.#renderer.show(params.update);
    }
  }

  async #writeFailed(error: unknown): Promise<void> {
    const status = await Promise.race([
      this.#child.status,
      delay(EXIT_GRACE_MS),
    ]);
    this.#failed(
      status ? mmExited(status) : new ClientError(`cannot write to mm: ${errorText(error)}`, 1),
    );
  }
}

/**
 * Runs the client with a command line and returns the exit code. Every
 * failure of §7 is one `error: …` line on stderr, never a stack trace.
 */
export async function main(argv: readonly string[]): Promise<number> {
  let child: Deno.ChildProcess | undefined;
  let run: Run | undefined;
  const listeners: [Deno.Signal, () => void][] = [];
  try {
    const options = parseCommandLine(argv);
    if (options.show === "help") {
      out.line(USAGE);
      return 0;
    }
    if (options.show === "version") {
      out.line(`host-info-client ${VERSION}`);
      return 0;
    }
    const agentFile = findAgentFile(options.agent);
    const config = readAgentFile(agentFile);
    for (
      const warning of agentFileWarnings(
        options.agent,
        config,
        options.discovery,
      )
    ) {
      log(warning);
    }
    const mm = options.mm ?? readEnv("MM_BIN") ?? "mm";
    child = startMm(mm, agentFile);
    run = new Run(options, child);
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      const listener = () => run?.interrupt(signal);
      Deno.addSignalListener(signal, listener);
      listeners.push([signal, listener]);
    }
    return await run.exchange();
  } catch (error) {
    if (error instanceof UsageError) {
      err.line(`error: ${error.message}`);
      err.line(USAGE);
      return error.exitCode;
    }
    if (error instanceof ClientError) {
      if (error.message) err.line(`error: ${error.message}`);
      return error.exitCode;
    }
    err.line(`error: ${errorText(error)}`);
    return 1;
  } finally {
    if (run) await run.stop();
    else if (child) killGroup(child);
    for (const [signal, listener] of listeners) {
      Deno.removeSignalListener(signal, listener);
    }
  }
}

// ─── Small helpers ───────────────────────────────────────────────────────────

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // not allowed to read it: as if unset
  }
}

function delay(ms: number): Promise<undefined> {
  return new Promise((resolve) => {
    setTimeout(() => resolve(undefined), ms);
  });
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
