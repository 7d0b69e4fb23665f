#!/usr/bin/env -S deno run --allow-run --allow-read=. --allow-env=MM_BIN,NO_COLOR,TERM --allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime
/**
 * An ACP client that lends mini-me (`mm -acp`) a tool of its own,
 * `host_info`, asks it a question and shows the conversation.
 *
 * mm speaks the Agent Client Protocol: JSON-RPC 2.0, one JSON object per line
 * on its stdin and stdout. A client offers tools through ACP extensibility
 * (mini-me's acp-client-tools.md, "Découverte"): their descriptions go in the
 * `_meta` of `initialize` (`meta` discovery), or in the answer to
 * `_org.mini-me/tools/list` (`request` discovery). mm's model calls each tool
 * as `client_<name>`, and mm forwards the call to the client as a request for
 * the tool's `method`.
 *
 * The file reads in the order of a session:
 * 1. What mm may ask, and the tools the client lends — `TOOLS`, `answerRequest()`.
 * 2. The tool itself — `hostInfo()`.
 * 3. The run as it happens — `main()`: start mm, `initialize`, open the session,
 *    a turn, what the user sees (`showUpdate()`), the end.
 * 4. The plumbing — output, framing, the connection, the command line, the agent file.
 *
 * To lend a tool of your own, add one entry to `TOOLS`: its description and the
 * function that answers its calls. The list mm sees, the dispatch of its calls,
 * the permission policy and the log line all follow from that entry.
 *
 * @module
 */

import { cpus } from "node:os";
import { fstatSync } from "node:fs";
import { parseArgs } from "node:util";
import { load as parseYaml, YAMLException } from "js-yaml";

/** The client's version, sent as `clientInfo.version` and printed by `--version`. */
export const VERSION = "0.3.0";

// ─── 1. What mm may ask, and the tools the client lends ──────────────────────

/** A tool's answer, MCP's `tools/call` result (acp-client-tools.md, "Réponse"). */
export type ToolResult = { content: { type: "text"; text: string }[]; isError?: boolean };

/**
 * A tool the client lends: its description as mm reads it (acp-client-tools.md,
 * "Description d'un outil"), and the function that answers a call.
 */
export interface Tool {
  /** Unique in the list; the model sees `client_<name>`. */
  name: string;
  /** What the model reads to decide when to call the tool. */
  description: string;
  /** The ACP extension method mm sends for a call: it starts with `_`. */
  method: string;
  /** The JSON Schema of the arguments: an object. */
  inputSchema: { type: "object"; [key: string]: unknown };
  /**
   * Answers one call with the model's arguments. It may return a promise: the
   * client goes on reading and answering meanwhile. `signal` aborts when mm
   * cancels the call. What it throws, or rejects with, is answered as the
   * tool's failure (an error result), never as a broken protocol.
   */
  call(args: Record<string, unknown>, signal: AbortSignal): ToolResult | Promise<ToolResult>;
}

/** Every tool the client lends to mm. Add yours here. */
export const TOOLS: readonly Tool[] = [
  {
    name: "host_info",
    description: "Facts about the machine the user's client runs on: its operating system, CPU, " +
      "memory or uptime. Call it once per topic.",
    method: "_demo.minime/host_info",
    inputSchema: {
      type: "object",
      properties: {
        topic: {
          type: "string",
          enum: ["os", "cpu", "memory", "uptime"],
          description: "Which fact to report.",
        },
      },
      required: ["topic"],
    },
    call: ({ topic }) => hostInfo(topic),
  },
];

/** The tools as mm reads them, in `initialize` or in the answer to the list request. */
export const TOOL_DESCRIPTIONS: readonly Omit<Tool, "call">[] = TOOLS.map(
  ({ name, description, method, inputSchema }) => ({ name, description, method, inputSchema }),
);

const TOOL_BY_METHOD = new Map(TOOLS.map((tool) => [tool.method, tool]));

/** A text result; with `isError`, the model reads it as `[client tool error: <text>]`. */
export function toolText(text: string, isError = false): ToolResult {
  return { content: [{ type: "text", text }], ...(isError ? { isError } : {}) };
}

/**
 * Answers one request from mm: its result, a promise of it, or a thrown
 * {@linkcode RpcError}. A tool call goes to its tool; `signal` aborts when mm
 * sends `$/cancel_request` for it.
 */
function answerRequest(run: Run, method: string, params: unknown, signal: AbortSignal): unknown {
  const tool = TOOL_BY_METHOD.get(method);
  if (tool) return callTool(run, tool, params, signal);
  switch (method) {
    case "_org.mini-me/tools/list":
      run.out.log(`list requested for session ${field(params, "sessionId") ?? "?"}`);
      return { tools: TOOL_DESCRIPTIONS };
    case "session/request_permission":
      return { outcome: answerPermission(run, params) };
    default: // fs/*, terminal/*, unknown extensions: not offered, so not found
      throw new RpcError(-32601, "Method not found");
  }
}

/**
 * One call of a tool: the `[client] <name> {args} (session …)` line, then
 * the tool. A throw or a rejection is the tool's failure, not the client's:
 * an error result the model reads, a line on stderr, and the turn goes on.
 */
function callTool(run: Run, tool: Tool, params: unknown, signal: AbortSignal) {
  const { args, sessionId } = readToolCall(params);
  run.out.log(`${tool.name} ${JSON.stringify(args)} (session ${sessionId})`);
  const failed = (error: unknown) => {
    const text = `${tool.name} failed: ${errorText(error)}`;
    if (!signal.aborted) run.out.line(run.out.stderr, `[client] ${text}`);
    return toolText(text, true);
  };
  try {
    const result = tool.call(isObject(args) ? args : {}, signal);
    return result instanceof Promise ? result.catch(failed) : result;
  } catch (error) {
    return failed(error);
  }
}

/**
 * What a tool call carries (acp-client-tools.md, "Requête"): the model's
 * arguments at the top level of `params`, the session in
 * `params._meta["org.mini-me/sessionId"]` (`?` when absent).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const call = readToolCall({ topic: "os", _meta: { "org.mini-me/sessionId": "s1" } });
 * assert.deepEqual(call, { args: { topic: "os" }, sessionId: "s1" });
 * ```
 */
export function readToolCall(params: unknown): { args: unknown; sessionId: string } {
  if (!isObject(params)) return { args: params ?? {}, sessionId: "?" };
  const { _meta, ...args } = params;
  const sessionId = field(_meta, "org.mini-me/sessionId");
  return { args, sessionId: typeof sessionId === "string" ? sessionId : "?" };
}

/**
 * Whether a permission request's title names a tool the client lends:
 * exactly `client: <name>` (acp-client-tools.md, "Avant la requête"). Anything
 * else — a shell command, another tool, a look-alike — is refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(isOfferedToolTitle("client: host_info"), true);
 * assert.equal(isOfferedToolTitle("client: host_info; rm -rf /"), false);
 * ```
 */
export function isOfferedToolTitle(title: unknown): boolean {
  return TOOLS.some((tool) => title === `client: ${tool.name}`);
}

/** The answer to `session/request_permission`. */
export type PermissionOutcome =
  | { outcome: "cancelled" }
  | { outcome: "selected"; optionId: string };

/**
 * Picks among the options mm offered: `allow_once`, else `allow_always` to
 * allow; `reject_once`, else `reject_always` to refuse; with no such option,
 * `cancelled`. Never an `optionId` mm did not offer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const options = [{ optionId: "y", kind: "allow_once" }, { optionId: "n", kind: "reject_once" }];
 * assert.deepEqual(choosePermission(options, true), { outcome: "selected", optionId: "y" });
 * assert.deepEqual(choosePermission(options, false), { outcome: "selected", optionId: "n" });
 * ```
 */
export function choosePermission(options: unknown, allow: boolean): PermissionOutcome {
  const offered = Array.isArray(options) ? options.filter(isObject) : [];
  for (const kind of allow ? ["allow_once", "allow_always"] : ["reject_once", "reject_always"]) {
    const option = offered.find((o) => o.kind === kind && typeof o.optionId === "string");
    if (option) return { outcome: "selected", optionId: option.optionId as string };
  }
  return allow ? choosePermission(options, false) : { outcome: "cancelled" };
}

/**
 * Answers a permission request, and shows the call it is about (a real agent
 * may ask for a call it never announced); a refusal shows on stdout too.
 */
function answerPermission(run: Run, params: unknown): PermissionOutcome {
  const { out } = run;
  const call = seeCall(run, field(params, "toolCall"), out.stdout);
  const title = field(field(params, "toolCall"), "title");
  const options = field(params, "options");
  // Once the client has sent session/cancel, ACP says every permission
  // request is answered cancelled, whatever it asks.
  const outcome: PermissionOutcome = run.cancelledBy !== undefined
    ? { outcome: "cancelled" }
    : choosePermission(options, isOfferedToolTitle(title));
  const chosen = [options].flat().find((o) => field(o, "optionId") === field(outcome, "optionId"));
  const allowed = "optionId" in outcome && `${field(chosen, "kind")}`.startsWith("allow");
  out.log(`permission for ${JSON.stringify(title ?? "")}: ${allowed ? "allowed" : "refused"}`);
  if (!allowed) {
    run.refused = true;
    run.running.delete(call);
    if (!out.quiet) out.line(out.stdout, `✖ ${call.title} refused`, RED);
  }
  return outcome;
}

// ─── 2. The tool: host_info ──────────────────────────────────────────────────

type SysName = Deno.SysPermissionDescriptor["kind"];

/** Reads a fact once, the first time it is needed: it cannot change while the client runs. */
function once<T>(read: () => T): () => T {
  let value: { read: T } | undefined;
  return () => (value ??= { read: read() }).read;
}

/** A fact `host_info` reports: the `--allow-sys` names it needs, and how it is read. */
function fact(needs: SysName[], read: () => string) {
  const allowed = once(() => needs.every((kind) => granted({ name: "sys", kind })));
  return { needs, allowed, read };
}

/** The topics, read with Deno's own APIs where it has them. */
const TOPICS = {
  os: fact(["osRelease", "hostname"], () => {
    const { os, arch } = Deno.build;
    return `${osName(os)} ${KERNEL_RELEASE()} (${os}/${arch}), host name ${HOST_NAME()}`;
  }),
  cpu: fact(["cpus", "loadavg"], () => {
    const load = Deno.loadavg().map((n) => n.toFixed(2)).join(" ");
    return `${navigator.hardwareConcurrency} × ${CPU_MODEL()} (${Deno.build.arch}), load average ${load}`;
  }),
  memory: fact(["systemMemoryInfo"], () => {
    const { available, total } = Deno.systemMemoryInfo();
    return `${gib(available)} free of ${gib(total)}`;
  }),
  uptime: fact(["osUptime"], () => describeUptime(Deno.osUptime(), new Date())),
};

/** `Deno.osRelease()` reads a file each time; the kernel does not change under a running client. */
const KERNEL_RELEASE = once(() => Deno.osRelease());
const HOST_NAME = once(() => Deno.hostname());
/** Deno has no API for the CPU model: `node:os` reads it. */
const CPU_MODEL = once(() => cpus()[0]?.model.trim() || "unknown CPU");

/**
 * Runs `host_info` for the model's `topic`. A bad call is an error result
 * the model can act on, never an exception; so is a `--allow-sys` name the
 * client was not given, checked first so that Deno never stops to ask.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.deepEqual(hostInfo("disk"), {
 *   content: [{ type: "text", text: 'unknown topic "disk"; use one of: os, cpu, memory, uptime' }],
 *   isError: true,
 * });
 * ```
 */
export function hostInfo(topic: unknown): ToolResult {
  const choices = `use one of: ${Object.keys(TOPICS).join(", ")}`;
  if (typeof topic !== "string") return toolText(`missing parameter "topic"; ${choices}`, true);
  if (!Object.hasOwn(TOPICS, topic)) {
    return toolText(`unknown topic ${JSON.stringify(topic)}; ${choices}`, true);
  }
  const { needs, allowed, read } = TOPICS[topic as keyof typeof TOPICS];
  if (!allowed()) {
    return toolText(`host_info needs --allow-sys=${needs.join(",")} to report ${topic}`, true);
  }
  try {
    return toolText(read());
  } catch (error) {
    return toolText(`host_info could not read ${topic}: ${errorText(error)}`, true);
  }
}

/** The display name of a `Deno.build.os` value: `darwin` is macOS, others are capitalised. */
export function osName(os: string): string {
  const known: Record<string, string> = { linux: "Linux", darwin: "macOS", windows: "Windows" };
  return known[os] ?? os.charAt(0).toUpperCase() + os.slice(1);
}

/** A size in bytes as GiB with one decimal: `15.8 GiB`. */
export function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/**
 * The `uptime` text for a number of seconds up, as of `now`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const text = describeUptime(274_320, new Date("2026-11-30T12:13:00Z"));
 * assert.equal(text, "up 3 days, 4 hours, 12 minutes (since 2026-11-27 08:01 UTC)");
 * ```
 */
export function describeUptime(seconds: number, now: Date): string {
  const up = Math.floor(seconds / 60); // minutes
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const parts = [unit(up % 60, "minute")];
  if (up >= 60) parts.unshift(unit(Math.floor(up / 60) % 24, "hour"));
  if (up >= 1440) parts.unshift(unit(Math.floor(up / 1440), "day"));
  const since = new Date(now.getTime() - seconds * 1000).toISOString();
  return `up ${parts.join(", ")} (since ${since.slice(0, 10)} ${since.slice(11, 16)} UTC)`;
}

// ─── 3. The run as it happens ────────────────────────────────────────────────

/** An error that ends the run: `error: <message>` on stderr (none if empty), and an exit code. */
export class ClientError extends Error {
  /** `usage`: the usage follows the message. */
  constructor(message: string, readonly exitCode = 1, readonly usage = false) {
    super(message);
  }
}

/**
 * One run: mm, the connection, and where the exchange stands. `stage` says
 * what mm has yet to do, for an mm that exits: answer `asking`, end the turn,
 * or nothing while the `-i` prompt waits for a question. `cancelledBy` is the
 * exit code of the signal that cancelled the turn; `failed` rejects when the
 * run must end early, and every wait races it. `replaying`: a loaded
 * session's past is shown, dimmed on stderr. `calls`: the tool calls seen.
 */
interface Run {
  options: Options;
  out: Output;
  child: Deno.ChildProcess;
  connection: Connection;
  failed: Promise<never>;
  fail(error: ClientError): void;
  stage: "opening" | "turn" | "question";
  asking?: string;
  sessionId?: string;
  cancelledBy?: number;
  /** The error a cancelled turn ends the run with (`--turn-timeout`). */
  cancelWhy?: string;
  /** When mm last sent something, as `performance.now()`. */
  heard: number;
  /** The answer text of the turn so far. */
  answer: string;
  /** Settles when mm's log (its stderr) has ended, every line forwarded. */
  log: Promise<void>;
  cancelTimer?: ReturnType<typeof setTimeout>;
  lastSignal?: number;
  replaying?: boolean;
  calls: Map<string, Call>;
  running: Set<Call>;
  /** The next agent text starts on a line of its own (it follows a tool call or a block). */
  textBreak?: boolean;
  /** A permission was refused in this turn. */
  refused?: boolean;
}

/**
 * Runs the client with a command line and returns the exit code. Every
 * failure is one `error: …` line on stderr, never a stack trace, and no mm
 * process outlives the client.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const out = new Output();
  let run: Run | undefined;
  let [code, graceful] = [1, false];
  try {
    const options = parseCommandLine(argv);
    if (options.help || options.version) {
      out.print(out.stdout, `${options.help ? USAGE : `host-info-client ${VERSION}`}\n`);
      return 0;
    }
    [out.quiet, out.json] = [!!options.quiet, !!options.json];
    const agent = options.agent ?? (options.request ? "agent-request.yaml" : "agent.yaml");
    const { path, config } = readAgentFile(agent, options.agent !== undefined);
    for (const warning of agentFileWarnings(agent, config, !!options.request)) {
      out.line(out.stderr, `[client] ${warning}`);
    }
    if (options.question === "-") {
      if (Deno.stdin.isTerminal()) {
        out.line(out.stderr, "[client] reading the question from stdin; end it with Ctrl-D");
      }
      options.question = (await Array.fromAsync(stdinLines())).join("\n").trim() ||
        DEFAULT_QUESTION;
    }
    run = startRun(options, out, path);
    code = await converse(run);
    graceful = true;
  } catch (error) {
    code = error instanceof ClientError ? error.exitCode : 1;
    if (out.stderr.open) out.print(out.stderr, "\n"); // Ctrl-C at the prompt: end its line
    if (errorText(error)) out.line(out.stderr, `error: ${errorText(error)}`);
    if (error instanceof ClientError && error.usage) out.line(out.stderr, USAGE);
    out.json = out.json || argv.includes("--json"); // a script is told why, even of a usage error
    out.record({ error: { message: errorText(error) || "interrupted", exitCode: code } });
  }
  out.waitFor(undefined);
  // After a turn that ended, cancelled or not, or at the -i prompt, say how to come back to it.
  const cancelled = [124, 130, 143].includes(code) && run?.stage === "question";
  if ((code === 0 || cancelled) && run?.sessionId) {
    out.log(`continue with: --resume ${run.sessionId}`);
  }
  if (run) await endMm(run, graceful);
  const unlogged = run?.connection.unlogged();
  if (unlogged) {
    out.line(out.stderr, `[client] ${unlogged} more bad frames from mm were not logged`);
  }
  out.flush();
  return code;
}

/** Starts mm and connects to it; from here on, Ctrl-C and SIGTERM are the client's. */
function startRun(options: Options, out: Output, agentFile: string): Run {
  const fromEnv = readEnv("MM_BIN") || undefined; // set but empty is unset
  const namedBy = options.mm ? "--mm" : fromEnv ? "MM_BIN" : undefined;
  const child = startMm(options.mm ?? fromEnv ?? "mm", agentFile, namedBy);
  const log = forwardLog(child, out);
  let fail!: (error: ClientError) => void;
  const failed = new Promise<never>((_, reject) => fail = reject);
  failed.catch(() => {}); // read where it matters, in ask()
  const connection = connect(child, !!options.trace, out, {
    request: (method, params, signal) => {
      run.heard = performance.now();
      return answerRequest(run, method, params, signal);
    },
    answered: (method, params, answer) => out.record({ request: { method, params }, answer }),
    notification: (method, params) => {
      if (method !== "session/update") return; // other notifications are not for the user
      run.heard = performance.now();
      out.record(params);
      showUpdate(run, field(params, "update"));
      // What the progress line waits for: a running tool, or the model.
      const [running] = run.running;
      if (run.stage === "turn") out.waitFor(running?.title ?? "the model");
    },
    fail,
  });
  const run: Run = {
    options,
    out,
    child,
    connection,
    failed,
    fail,
    stage: "opening",
    calls: new Map(),
    running: new Set(),
    heard: 0,
    answer: "",
    log,
  };
  out.onFailure = (error) =>
    fail(new ClientError(`cannot write the conversation: ${errorText(error)}`));
  child.status.then(async (status) => {
    await Promise.race([Promise.all([connection.reading, log]), delay(1000)]); // its last words
    const how = status.signal ? `signal ${status.signal}` : `code ${status.code}`;
    const before = { turn: "the turn ended", question: "the next question" }[run.stage as string];
    fail(new ClientError(`mm exited with ${how} before ${before ?? `answering ${run.asking}`}`));
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => interrupt(run, signal));
  }
  return run;
}

/**
 * Starts mm as `<mm> -acp -agent <file>` — the line to change if your mm is
 * started another way — in its own process group, so that a Ctrl-C typed in
 * the terminal reaches the client alone.
 */
function startMm(mm: string, agentFile: string, namedBy?: string): Deno.ChildProcess {
  let reason = "this run may not start it (add --allow-run)";
  try {
    if (granted({ name: "run", command: mm })) {
      const args = ["-acp", "-agent", agentFile];
      const pipes = { stdin: "piped", stdout: "piped", stderr: "piped" } as const;
      return new Deno.Command(mm, { args, ...pipes, detached: true }).spawn();
    }
  } catch (error) {
    reason = error instanceof Deno.errors.NotFound
      ? "not found"
      : error instanceof Deno.errors.PermissionDenied
      ? "not executable"
      : errorText(error);
  }
  if (!namedBy && !granted({ name: "env", variable: "MM_BIN" })) {
    reason += "; MM_BIN could not be read (add --allow-env=MM_BIN)";
  }
  const next = namedBy
    ? `${namedBy} names it: check that path`
    : "Install mini-me or set MM_BIN / --mm";
  throw new ClientError(`cannot start mm (${mm}): ${reason}. ${next}.`, 127);
}

/** A line of mm's log longer than this is forwarded in pieces, so a flood takes no memory. */
const MAX_HELD = 64 * 1024;

/**
 * mm's own log, its stderr, forwarded as it comes and byte for byte, whole
 * lines at a time, through the client's output: the progress line is erased
 * first, and an open answer line ended first. Settles when mm's stderr ends.
 */
async function forwardLog(child: Deno.ChildProcess, out: Output): Promise<void> {
  let held: Uint8Array[] = [];
  const release = () => (out.raw(out.stderr, held), held = []);
  try {
    for await (const chunk of child.stderr) {
      const end = chunk.lastIndexOf(10) + 1; // the lines this chunk ends go out now
      if (end > 0) held.push(chunk.subarray(0, end)), release();
      if (end < chunk.length) held.push(chunk.subarray(end));
      if (held.reduce((size, part) => size + part.length, 0) > MAX_HELD) release();
    }
  } catch {
    // mm's stderr is gone: what was read is still shown
  }
  release();
}

/** The whole conversation: `initialize`, a session, then one turn per question. */
async function converse(run: Run): Promise<number> {
  const { options, out } = run;
  out.waitFor("mm");
  const init = await ask(run, "initialize", initializeParams(!!options.request), options.seconds);
  const version = JSON.stringify(field(init, "protocolVersion"));
  if (version !== "1") {
    throw new ClientError(`mm speaks ACP protocol version ${version}; this client speaks 1`);
  }
  const capabilities = field(init, "agentCapabilities");
  if (options.sessions) return await showSessions(run, capabilities);
  if (options.continue) options.resume = await latestSession(run, capabilities);
  await openSession(run, capabilities);
  out.waitFor(undefined); // the session is open: until a question, nothing to wait for
  if (!options.interactive) return await turn(run, options.question ?? DEFAULT_QUESTION);
  const questions = stdinLines();
  for (let question = options.question;; question = undefined) {
    question ??= await nextQuestion(run, questions);
    if (question === undefined) return 0; // end of input
    const code = await turn(run, question);
    if (run.cancelledBy === 143) return code; // SIGTERM ends the client, Ctrl-C only the turn
    run.cancelledBy = undefined;
  }
}

/** `--sessions`: mm's sessions, most recent first, one per line: id, last update, title or cwd. */
async function showSessions(run: Run, capabilities: unknown): Promise<number> {
  const sessions = await listSessions(run, capabilities);
  run.out.record({ sessions });
  for (const s of sessions) {
    const about = field(s, "title") ?? field(s, "cwd");
    run.out.line(
      run.out.stdout,
      `${field(s, "sessionId")}  ${field(s, "updatedAt") ?? "-"}  ${about}`,
    );
  }
  return 0;
}

/** `--continue`: the most recent session of the current folder. */
async function latestSession(run: Run, capabilities: unknown): Promise<string> {
  const here = (await listSessions(run, capabilities, Deno.cwd()))
    .filter((s) => field(s, "cwd") === Deno.cwd());
  const last = (s: unknown) => String(field(s, "updatedAt") ?? "");
  const [latest] = here.sort((a, b) => last(b).localeCompare(last(a)));
  if (!latest) throw new ClientError(`mm has no session in ${Deno.cwd()} to continue`);
  return String(field(latest, "sessionId"));
}

/** Every session mm lists (`session/list`, page after page), of one folder or all. */
async function listSessions(run: Run, capabilities: unknown, cwd?: string): Promise<unknown[]> {
  if (field(field(capabilities, "sessionCapabilities"), "list") == null) {
    throw new ClientError("mm cannot list its sessions (it does not advertise session/list)");
  }
  const sessions: unknown[] = [];
  let cursor: unknown;
  for (let page = 0; page < MAX_PAGES && (page === 0 || typeof cursor === "string"); page++) {
    const answer = await ask(run, "session/list", { cwd, cursor }, run.options.seconds);
    sessions.push(...list(field(answer, "sessions")));
    cursor = field(answer, "nextCursor");
  }
  return sessions;
}

/** A `session/list` that pages on and on is read no further than this. */
const MAX_PAGES = 100;

/**
 * The `initialize` params: the tool list in `meta` mode, `true` ("ask me for
 * it") in `request` mode (acp-client-tools.md, "Découverte").
 */
export function initializeParams(
  request: boolean,
): { clientCapabilities: Record<string, unknown>; [key: string]: unknown } {
  return {
    protocolVersion: 1,
    clientInfo: { name: "host-info-client", version: VERSION },
    // Capabilities are a contract: no file system and no terminal, which this client lacks.
    clientCapabilities: {
      fs: { readTextFile: false, writeTextFile: false },
      terminal: false,
      _meta: { "org.mini-me/tools": request ? true : TOOL_DESCRIPTIONS },
    },
  };
}

/**
 * Opens the session: `session/new`, or with `--resume` `session/resume` when
 * mm advertises it, else `session/load` (which replays the conversation so
 * far). In `request` mode mm asks for the tool list before it answers any of
 * the three (acp-client-tools.md, "Mode request").
 */
async function openSession(run: Run, capabilities: unknown): Promise<void> {
  const { options } = run;
  const params = { cwd: Deno.cwd(), mcpServers: [] };
  let how = "";
  if (options.resume === undefined) {
    const session = await ask(run, "session/new", params, options.seconds);
    run.sessionId = String(field(session, "sessionId"));
  } else {
    const resumes = field(field(capabilities, "sessionCapabilities"), "resume") != null;
    const method = resumes ? "session/resume" : "session/load";
    if (!resumes && field(capabilities, "loadSession") !== true) {
      throw new ClientError("mm can neither resume nor load sessions; --resume needs one of them");
    }
    [run.sessionId, run.replaying] = [options.resume, method === "session/load"];
    await ask(run, method, { sessionId: options.resume, ...params }, options.seconds);
    run.replaying = false;
    how = method === "session/load" ? " (loaded)" : " (resumed)";
  }
  run.out.log(`discovery: ${options.request ? "request" : "meta"}, session ${run.sessionId}${how}`);
}

/** One prompt turn: the question, mm's updates as they come, and its stop reason. */
async function turn(run: Run, question: string): Promise<number> {
  const { out } = run;
  if (!out.quiet) out.line(out.stdout, `❓ ${question}`);
  [run.stage, run.refused, run.answer] = ["turn", false, ""];
  out.waitFor("the model");
  const prompt = [{ type: "text", text: question }];
  const silence = watchSilence(run);
  const answer = await ask(run, "session/prompt", { sessionId: run.sessionId, prompt })
    .finally(silence);
  clearTimeout(run.cancelTimer);
  out.waitFor(undefined);
  run.stage = "question";
  const stopReason = String(field(answer, "stopReason"));
  if (!out.quiet) out.line(out.stdout, `[${stopReason}]`);
  else if (out.stdout.open) out.print(out.stdout, "\n");
  out.record({ result: { stopReason, sessionId: run.sessionId, text: run.answer } });
  if (run.cancelWhy) throw new ClientError(run.cancelWhy, run.cancelledBy);
  if (run.cancelledBy !== undefined) return run.cancelledBy;
  if (stopReason === "cancelled") {
    const why = run.refused ? " after a refused permission" : "";
    out.line(out.stderr, `[client] mm ended the turn as cancelled; the client did not ask${why}`);
  }
  return stopReason === "cancelled" ? 130 : stopReason === "refusal" ? 1 : 0;
}

/** Sends a request and waits for its answer, unless the run fails or the timeout passes first. */
async function ask(run: Run, method: string, params: object, seconds?: number): Promise<unknown> {
  if (run.stage === "opening") run.asking = method;
  let timer; // of the timeout
  const timeout = new Promise<never>((_, reject) => {
    if (seconds === undefined || seconds * 1000 > MAX_TIMER_MS) return;
    const error = new ClientError(`mm did not answer ${method} within ${seconds} s`);
    timer = setTimeout(() => reject(error), seconds * 1000);
  });
  try {
    return await Promise.race([run.connection.request(method, params), run.failed, timeout]);
  } catch (error) {
    if (error instanceof RpcError) throw new ClientError(`mm refused ${method}: ${error.message}`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The lines of stdin, for `-i` and `-`; a line over the limit is named as stdin's. */
async function* stdinLines(): AsyncGenerator<string> {
  const reader = new LineReader();
  try {
    for await (const chunk of Deno.stdin.readable) yield* reader.push(chunk);
  } catch (error) {
    throw error instanceof LineTooLongError
      ? new ClientError(`stdin has ${error.message}`, 2)
      : error;
  }
  const last = reader.flush();
  if (last !== undefined) yield last;
}

/** The next question of `--interactive`, blank lines skipped, after a prompt on a terminal. */
async function nextQuestion(run: Run, lines: AsyncGenerator<string>): Promise<string | undefined> {
  const { stderr } = run.out;
  const atTerminal = Deno.stdin.isTerminal();
  for (;;) {
    if (atTerminal) run.out.print(stderr, "> ");
    const next = await Promise.race([lines.next(), run.failed]);
    stderr.open = false; // the person's Enter ended the prompt's line
    if (next.done && atTerminal) run.out.print(stderr, "\n"); // Ctrl-D did not
    if (next.done || next.value.trim()) return next.value?.trim();
  }
}

/**
 * Shows one `session/update`: one `case` per kind the user sees, and a
 * `default` that ignores kinds this client does not know. stdout is the
 * conversation; stderr is diagnostics, and with `--verbose` thoughts, plans,
 * usage and the session's settings. A loaded session's replay goes to stderr, dimmed.
 */
function showUpdate(run: Run, update: unknown): void {
  const { out, options } = run;
  const kind = field(update, "sessionUpdate");
  const content = field(update, "content");
  const [to, style] = run.replaying ? [out.stderr, DIM] : [out.stdout, undefined];
  const note = (text: string) => options.verbose && out.line(out.stderr, text, DIM);
  switch (kind) {
    case "agent_message_chunk":
      if (out.quiet && run.replaying) return;
      if (blockText(content) === "") return; // an empty chunk only carries _meta
      if (!run.replaying && field(content, "type") === "text") run.answer += blockText(content);
      // Text that follows a tool call or another block starts on a line of its own.
      if (run.textBreak && to.open && !out.quiet) out.print(to, "\n");
      run.textBreak = field(content, "type") !== "text";
      return showChunk(out, to, content, style);
    case "user_message_chunk":
      if (run.replaying && !out.quiet) out.line(out.stderr, `❓ ${blockText(content)}`, DIM);
      return;
    case "tool_call":
    case "tool_call_update":
      return showToolCall(run, update, to, style);
    case "agent_thought_chunk":
      return void (options.verbose && showChunk(out, out.stderr, content, DIM));
    case "plan":
      note("plan:");
      for (const e of list(field(update, "entries"))) {
        note(`  [${field(e, "status")}] ${field(e, "content")}`);
      }
      return;
    case "usage_update": {
      const cost = field(update, "cost");
      const paid = isObject(cost) ? `, cost ${cost.amount} ${cost.currency}` : "";
      return void note(`usage: ${field(update, "used")} of ${field(update, "size")} tokens${paid}`);
    }
    case "available_commands_update": {
      const names = list(field(update, "availableCommands")).map((c) => `/${field(c, "name")}`);
      return void note(`commands: ${names.join(", ")}`);
    }
    case "current_mode_update":
      return void note(`mode: ${field(update, "currentModeId")}`);
    case "session_info_update": {
      const title = field(update, "title");
      return void (typeof title === "string" && note(`title: ${title}`));
    }
    case "config_option_update":
      for (const o of list(field(update, "configOptions"))) {
        note(`config: ${field(o, "id")} = ${field(o, "currentValue")}`);
      }
      return;
    default: // a kind this client does not know: nothing to show
  }
}

/** A tool call as the client has shown it: its title, its content lines, whether it runs. */
type Call = { title: string; lines: string[]; rawOutput?: unknown };

/**
 * A tool call or its update. ACP: an update carries only what changed, and
 * its `content` replaces the call's content, so only lines not shown yet are
 * shown. A call that ends without content shows its `rawOutput`.
 */
function showToolCall(run: Run, update: unknown, to: Stream, style?: number): void {
  const { out } = run;
  const call = seeCall(run, update, to, style);
  const status = field(update, "status");
  if (status === "completed" || status === "failed") run.running.delete(call);
  else if (field(update, "sessionUpdate") === "tool_call") run.running.add(call);
  if (field(update, "rawOutput") !== undefined) call.rawOutput = field(update, "rawOutput");
  if (out.quiet) return;
  if (status === "failed") out.line(to, `✖ ${call.title} failed`, style ?? RED);
  const content = field(update, "content");
  let lines = Array.isArray(content) ? content.flatMap(contentLines) : call.lines;
  if (!run.running.has(call) && lines.length === 0 && call.rawOutput !== undefined) {
    const raw = call.rawOutput;
    lines = textLines(typeof raw === "string" ? raw : JSON.stringify(raw));
    if (lines.length > RAW_OUTPUT_LINES) {
      lines = [
        ...lines.slice(0, RAW_OUTPUT_LINES),
        `… (${lines.length - RAW_OUTPUT_LINES} more lines)`,
      ];
    }
  }
  // When the new content extends what was shown, only the new part; a last line that grew
  // is shown again whole. Otherwise the new content whole.
  const shown = call.lines;
  const extended = shown.every((line, i) =>
    lines[i] === line || (i === shown.length - 1 && lines[i]?.startsWith(line))
  );
  const from = !extended ? 0 : shown.length - (lines[shown.length - 1] === shown.at(-1) ? 0 : 1);
  for (const line of lines.slice(from)) out.line(to, `│ ${line}`, style);
  call.lines = lines;
}

/** A `rawOutput` is shown up to this many lines. */
const RAW_OUTPUT_LINES = 20;

/**
 * The call an update or a permission request is about. Every call is shown
 * once, when first seen, and once more when its title changes, so that the
 * command that runs is always visible (`🛠️ Terminal → ls -la /`).
 */
function seeCall(run: Run, toolCall: unknown, to: Stream, style?: number): Call {
  const id = String(field(toolCall, "toolCallId") ?? "");
  const title = field(toolCall, "title");
  const known = run.calls.get(id);
  const call = known ?? { title: typeof title === "string" ? title : id, lines: [] };
  run.calls.set(id, call);
  run.textBreak = true;
  const shown = !run.out.quiet;
  if (!known && shown) run.out.line(to, `🛠️ ${call.title}`, style);
  if (known && typeof title === "string" && title !== call.title) {
    if (shown) run.out.line(to, `🛠️ ${call.title} → ${title}`, style);
    call.title = title;
  }
  return call;
}

/** One item of a tool call's content as lines: text, a diff's size, a terminal, another block. */
function contentLines(item: unknown): string[] {
  switch (field(item, "type")) {
    case "content":
      return textLines(blockText(field(item, "content")));
    case "diff": {
      const [before, after] = [field(item, "oldText"), field(item, "newText")].map((t) =>
        typeof t === "string" && t !== "" ? textLines(t) : []
      );
      const left = new Map<string, number>();
      for (const line of before) left.set(line, (left.get(line) ?? 0) + 1);
      let added = 0; // lines of the new text not matched by a line of the old one
      for (const line of after) {
        const unmatched = left.get(line) ?? 0;
        if (unmatched > 0) left.set(line, unmatched - 1);
        else added++;
      }
      const removed = before.length - (after.length - added);
      return [`diff ${field(item, "path")} (+${added} −${removed} lines)`];
    }
    case "terminal":
      return [`[terminal ${field(item, "terminalId")}]`];
    default:
      return textLines(blockText(item));
  }
}

/** A text's lines at `\n` or `\r\n`; a last line end adds no line. */
function textLines(text: string): string[] {
  const lines = text.split(/\r?\n/);
  if (lines.length > 1 && lines.at(-1) === "") lines.pop();
  return lines;
}

/** Streams a message chunk as it comes, with no newline added; another block on its own line. */
function showChunk(out: Output, to: Stream, block: unknown, style?: number): void {
  if (field(block, "type") === "text") out.print(to, blockText(block), style);
  else out.line(to, blockText(block), style);
}

/** A content block as text: its text, or `[<type>]` for any other kind. */
function blockText(block: unknown): string {
  const [type, text] = [field(block, "type"), field(block, "text")];
  if (type === "text" && typeof text === "string") return text;
  return `[${typeof type === "string" ? type : "unknown"}]`;
}

/** Signals closer than this to the first are the same keypress (`deno task` forwards it). */
const SAME_KEYPRESS_MS = 300;
/** How long mm gets to end a turn after `session/cancel`. */
const CANCEL_GRACE_MS = 5000;
/** How long mm gets to exit once its stdin is closed. */
const EXIT_GRACE_MS = 2000;

/**
 * Ctrl-C or SIGTERM. During a turn, the first cancels it the ACP way
 * (`session/cancel`) and gives mm time to answer; a second kills mm. Before
 * the session exists, or at the `--interactive` prompt, the client ends.
 */
function interrupt(run: Run, signal: "SIGINT" | "SIGTERM"): void {
  const now = performance.now();
  if (now - (run.lastSignal ?? -Infinity) < SAME_KEYPRESS_MS) return; // one keypress, twice
  run.lastSignal = now;
  const code = signal === "SIGINT" ? 130 : 143;
  if (run.stage !== "turn") return killMm(run, code);
  if (run.cancelledBy !== undefined) {
    run.out.log(`second ${signal === "SIGINT" ? "Ctrl-C" : signal}: killing mm`);
    return killMm(run, run.cancelledBy);
  }
  cancelTurn(run, code);
}

/**
 * Cancels the turn the ACP way: `session/cancel`, then mm has a grace period
 * to end the turn before it is killed. `why` is the error the run ends with.
 */
function cancelTurn(run: Run, code: number, why?: string): void {
  [run.cancelledBy, run.cancelWhy] = [code, why];
  run.out.log("cancelling…");
  run.connection.notify("session/cancel", { sessionId: run.sessionId });
  const late = () => {
    run.out.log("mm did not answer the cancellation in time; killing it");
    killMm(run, code);
  };
  run.cancelTimer = setTimeout(late, CANCEL_GRACE_MS);
}

/** Kills mm now, and ends the run with `code`. */
function killMm(run: Run, code: number): void {
  killGroup(run.child);
  run.fail(new ClientError(run.cancelWhy ?? "", code));
}

/**
 * `--turn-timeout`: when mm has sent nothing for the turn that long — no
 * update, no request — the turn is cancelled and the run ends with 124, as
 * `timeout(1)` does. mm waiting for the client's answer is not silence.
 * Returns what stops the watch.
 */
function watchSilence(run: Run): () => void {
  const ms = (run.options.turnSeconds ?? Infinity) * 1000;
  if (ms > MAX_TIMER_MS) return () => {};
  run.heard = performance.now();
  let timer: ReturnType<typeof setTimeout>;
  const check = () => {
    if (run.connection.busy()) run.heard = performance.now();
    const silent = performance.now() - run.heard;
    if (silent < ms) return void (timer = setTimeout(check, ms - silent));
    const why = `mm sent nothing for ${run.options.turnSeconds} s; turn cancelled`;
    if (run.cancelledBy === undefined) cancelTurn(run, 124, why);
  };
  timer = setTimeout(check, ms);
  return () => clearTimeout(timer);
}

/**
 * Ends mm. After a conversation that ended, close its stdin and give it time
 * to exit; after an error, do not wait. Then kill its whole process group: an
 * agent may run helper processes of its own.
 */
async function endMm(run: Run, graceful: boolean): Promise<void> {
  clearTimeout(run.cancelTimer);
  if (graceful) {
    const deadline = delay(EXIT_GRACE_MS);
    await Promise.race([run.connection.close(), deadline]);
    await Promise.race([run.child.status, deadline]);
  }
  killGroup(run.child);
  await Promise.race([run.log, delay(500)]); // mm's last lines, whatever the path out
}

function killGroup(child: Deno.ChildProcess): void {
  try {
    Deno.kill(-child.pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

// ─── 4. Output: the conversation, diagnostics, the progress line ─────────────

/** ANSI styles. */
const DIM = 2;
const RED = 31;
const ENCODER = new TextEncoder();

/** An output stream; `open`: its last line is not ended; `gone`: its reader went away. */
type Stream = {
  file: typeof Deno.stdout;
  terminal: boolean;
  colour: boolean;
  open: boolean;
  gone: boolean;
};

/**
 * The client's two output streams. stdout is the conversation; stderr is
 * diagnostics. When both go to one terminal, pipe or file (`2>&1 | less`), a
 * line open on one is ended before the other writes, so no line starts in the
 * middle of another; apart, each stream is exactly what was written to it.
 * On a terminal, a progress line on stderr shows what the client waits for.
 */
class Output {
  /** The conversation. */
  readonly stdout: Stream = Output.#open(Deno.stdout);
  /** Diagnostics. */
  readonly stderr: Stream = Output.#open(Deno.stderr);
  /** Both streams reach the same terminal, pipe or file. */
  readonly shared: boolean = sameFile(1, 2) ?? this.stdout.terminal === this.stderr.terminal;
  /** A progress line is drawn: stderr is a terminal that can erase a line. */
  readonly progress: boolean = this.stderr.terminal && readEnv("TERM") !== "dumb";
  /** `--quiet`: stdout is the answer text alone, and `[client]` progress lines are not shown. */
  quiet = false;
  /** `--json`: stdout is one JSON object per line, written by `record()`, and nothing else. */
  json = false;
  /** What to do when stdout cannot be written for another reason than EPIPE. */
  onFailure: (error: unknown) => void = () => {};
  #waiting?: { label: string; since: number; drawn: boolean };
  #ticking = false;
  #queue: [Stream, string | Uint8Array][] = [];

  static #open(file: typeof Deno.stdout): Stream {
    const terminal = file.isTerminal();
    // no-color.org: colour is off when NO_COLOR is set and not empty; a dumb terminal has none.
    const colour = terminal && !readEnv("NO_COLOR") && readEnv("TERM") !== "dumb";
    return { file, terminal, colour, open: false, gone: false };
  }

  /** A `[client] …` progress line on stderr (not with `--quiet`). */
  log(text: string): void {
    if (!this.quiet) this.line(this.stderr, `[client] ${text}`);
  }

  /** Writes a whole line, after a newline if the stream's last line is still open. */
  line(to: Stream, text: string, style?: number): void {
    this.print(to, `${to.open ? "\n" : ""}${text}\n`, style);
  }

  /**
   * Writes text. Everything mm sends is untrusted: on a terminal its control
   * characters are shown, not obeyed.
   */
  print(to: Stream, text: string, style?: number): void {
    if (to === this.stdout && this.json) return;
    this.#put(to, to.terminal ? showControls(text) : text, style);
  }

  /** With `--json`, one line on stdout; C1 controls escaped too, so a terminal shows it as is. */
  record(value: unknown): void {
    const escape = (c: string) => `\\u00${c.charCodeAt(0).toString(16)}`;
    if (this.json) this.#put(this.stdout, `${JSON.stringify(value ?? null).replace(C1, escape)}\n`);
  }

  /** mm's own bytes, as they are. */
  raw(to: Stream, parts: Uint8Array[]): void {
    for (const part of parts) this.#put(to, part);
  }

  #put(to: Stream, text: string | Uint8Array, style?: number): void {
    if (text.length === 0 || to.gone) return;
    this.#erase();
    const other = to === this.stdout ? this.stderr : this.stdout;
    if (this.shared && other.open) this.#write(this.stderr, "\n"), other.open = false;
    const styled = (line: string) => `\x1b[${style}m${line}\x1b[0m`;
    const colour = to.colour && style && typeof text === "string";
    this.#write(to, colour ? text.replace(/[^\n]+/g, styled) : text);
    to.open = typeof text === "string" ? !text.endsWith("\n") : text.at(-1) !== 10;
  }

  /**
   * Shows `waiting for <label> … 3 s` on a terminal's stderr, or stops with
   * `undefined`. The line leaves the cursor at its start and is erased before
   * anything else is printed; never drawn in a file or a pipe.
   */
  waitFor(label?: string): void {
    if (label === this.#waiting?.label) return;
    this.#erase();
    this.#waiting = label === undefined ? undefined : { label, since: Date.now(), drawn: false };
    if (!this.#ticking && this.progress) {
      Deno.unrefTimer(Number(setInterval(() => this.#draw(), 100)));
      this.#ticking = true;
    }
    this.#draw();
  }

  #draw(): void {
    const waiting = this.#waiting;
    // Not over an open line: the answer's, on one screen, or a thought's.
    if (!waiting || !this.progress || this.stderr.open) return;
    if (this.shared && this.stdout.open) return;
    const spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"[Math.floor(Date.now() / 100) % 10];
    const seconds = Math.floor((Date.now() - waiting.since) / 1000);
    const label = showControls(waiting.label); // a tool's title is mm's text
    const text = fit(`${spinner} waiting for ${label} … ${seconds} s`, terminalWidth());
    this.#write(this.stderr, `\r\x1b[K${text}\r`);
    waiting.drawn = true;
  }

  #erase(): void {
    if (this.#waiting?.drawn) this.#write(this.stderr, "\r\x1b[K"), this.#waiting.drawn = false;
  }

  /** Queues text; what one tick prints goes out together, in order, in one write per stream. */
  #write(to: Stream, data: string | Uint8Array): void {
    const last = this.#queue.at(-1);
    if (last?.[0] === to && typeof last[1] === "string" && typeof data === "string") {
      last[1] += data;
    } else if (this.#queue.push([to, data]) === 1) queueMicrotask(() => this.flush());
  }

  /** Writes what is queued. */
  flush(): void {
    for (const [to, data] of this.#queue.splice(0)) {
      const bytes = typeof data === "string" ? ENCODER.encode(data) : data;
      try {
        for (let n = 0; n < bytes.length && !to.gone;) n += to.file.writeSync(bytes.subarray(n));
      } catch (error) {
        to.gone = true;
        // A reader that went away (`| head -1`) is not an error; a full disk is.
        if (to === this.stdout && !(error instanceof Deno.errors.BrokenPipe)) this.onFailure(error);
      }
    }
  }
}

/** The terminal's width in columns (80 when it does not say). */
function terminalWidth(): number {
  try {
    return Deno.consoleSize().columns || 80;
  } catch {
    return 80;
  }
}

/** Text cut to fit one row of `width` columns, so that erasing the row erases all of it. */
function fit(text: string, width: number): string {
  let [columns, end] = [0, 0];
  for (const char of text) {
    columns += char.codePointAt(0)! >= 0x1100 ? 2 : 1; // a wide character may take two
    if (columns >= width) break; // the last column is left free: some terminals wrap there
    end += char.length;
  }
  return text.slice(0, end);
}

/** C1 control characters, which `JSON.stringify` leaves as they are. */

const C1 = /[\u007f-\u009f]/g;

/** Whether two file descriptors are the same terminal, pipe or file; `undefined` if unknown. */
function sameFile(a: number, b: number): boolean | undefined {
  try {
    const [x, y] = [fstatSync(a), fstatSync(b)];
    return x.ino ? x.dev === y.dev && x.ino === y.ino : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Replaces control characters other than newline and tab with visible
 * symbols (ESC becomes `␛`), so text shown on a terminal cannot clear the
 * screen, move the cursor, set the window title or write the clipboard.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(showControls("a\x1b[2Jb\r\n\tc\x9b"), "a␛[2Jb\n\tc�");
 * ```
 */
export function showControls(text: string): string {
  return text.replace(/\r\n/g, "\n").replace(
    // deno-lint-ignore no-control-regex
    /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g,
    (c) => c === "\x7f" ? "␡" : c > "\x7f" ? "�" : String.fromCharCode(0x2400 + c.charCodeAt(0)),
  );
}

// ─── 5. Framing ──────────────────────────────────────────────────────────────

/** A line longer than a {@linkcode LineReader} accepts. */
export class LineTooLongError extends Error {
  /** A line longer than `limit` bytes. */
  constructor(readonly limit: number) {
    super(`a line longer than ${limit} bytes`);
  }
}

/**
 * Splits a byte stream into lines ended by `\n` or `\r\n`. Invariant: each
 * chunk's bytes are scanned once and copied at most once, so a line spanning
 * many chunks costs time linear in its length; a line is decoded whole, so a
 * UTF-8 character split across chunks decodes correctly.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const reader = new LineReader();
 * assert.deepEqual([...reader.push(new TextEncoder().encode('{"a":1}\r\n{"b"'))], ['{"a":1}']);
 * assert.deepEqual([...reader.push(new TextEncoder().encode(":2}\n"))], ['{"b":2}']);
 * ```
 */
export class LineReader {
  #parts: Uint8Array[] = [];
  #length = 0;
  #decoder = new TextDecoder();

  /** A reader of lines up to `limit` bytes, not counting the line end (32 MiB, as in the official SDK). */
  constructor(readonly limit: number = 32 * 1024 * 1024) {}

  /**
   * Takes the next chunk and yields every line it completes.
   *
   * @throws {LineTooLongError} when the line being read grows past the limit
   */
  *push(chunk: Uint8Array): Generator<string> {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
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
    if (bytes.length > 0) {
      this.#parts.push(bytes); // kept, not copied: a stream hands over a new chunk each read
      this.#length += bytes.length;
    }
    const last = this.#parts.at(-1)?.at(-1);
    // A last `\r` may be the start of the line's end, `\r\n`: it does not count.
    if (this.#length - (last === 13 ? 1 : 0) > this.limit) {
      [this.#parts, this.#length] = [[], 0];
      throw new LineTooLongError(this.limit);
    }
  }

  #take(): string {
    let bytes = this.#parts.length === 1 ? this.#parts[0] : new Uint8Array(this.#length);
    if (this.#parts.length > 1) {
      let offset = 0;
      for (const part of this.#parts) bytes.set(part, offset), offset += part.length;
    }
    [this.#parts, this.#length] = [[], 0];
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
  | { kind: "response"; id: RpcId; result?: unknown; error?: { code: number; message: string } }
  | { kind: "blank" }
  | { kind: "bad"; reply: { jsonrpc: "2.0"; id: RpcId; error: { code: number; message: string } } };

/**
 * Classifies one line: a request, a notification, a response, a blank line to
 * skip, or a bad frame with its error reply: `-32700` for a line that is not
 * JSON; `-32600` for a batch, a non-object, or an object of none of the kinds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(parseFrame('{"jsonrpc":"2.0","id":7,"method":"m"}').kind, "request");
 * assert.deepEqual(parseFrame("[1,2]"), {
 *   kind: "bad",
 *   reply: { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request" } },
 * });
 * ```
 */
export function parseFrame(line: string): Frame {
  if (line.trim() === "") return { kind: "blank" };
  const bad = (id: RpcId, code: number, message: string): Frame => ({
    kind: "bad",
    reply: { jsonrpc: "2.0", id, error: { code, message } },
  });
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return bad(null, -32700, "Parse error");
  }
  if (!isObject(value)) return bad(null, -32600, "Invalid Request");
  const { id, method, params, result, error } = value;
  const validId = typeof id === "string" || typeof id === "number";
  if (typeof method === "string" && validId) return { kind: "request", id, method, params };
  if (typeof method === "string" && !("id" in value)) {
    return { kind: "notification", method, params };
  }
  if (method === undefined && (validId || id === null) && ("result" in value || isObject(error))) {
    return { kind: "response", id, result, error: error as { code: number; message: string } };
  }
  return bad(validId ? id : null, -32600, "Invalid Request");
}

// ─── 6. The connection ───────────────────────────────────────────────────────

/** A JSON-RPC error, to answer a request with, or received as an answer. */
class RpcError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** The first bad frames are logged and answered. */
const BAD_FRAMES_SHOWN = 10;
/** After this many bad frames in a row, mm is not talking JSON-RPC. */
const BAD_FRAMES_IN_A_ROW = 1000;
/** Reading from mm pauses while more than this many characters of answers wait to be written. */
const MAX_UNWRITTEN = 1024 * 1024;

/** What the connection does with what mm sends; `fail` when it cannot go on. */
interface Handlers {
  request(method: string, params: unknown, signal: AbortSignal): unknown;
  answered(method: string, params: unknown, answer: object): void;
  notification(method: string, params: unknown): void;
  fail(error: ClientError): void;
}

/**
 * JSON-RPC over mm's pipes. Frames queued in one tick go out in one write,
 * whole and in order, so the lines of a chunk are handled synchronously (an
 * async iterator per line measured 0.61× the throughput). An answer that is a
 * promise goes out when it settles, or as `-32800` when mm cancels the request
 * first (`$/cancel_request`). Reading pauses while answers pile up unwritten,
 * so memory stays bounded when mm stops reading its stdin. `request` rejects
 * with an {@linkcode RpcError}; `close` ends mm's stdin after the queued
 * frames; `reading` settles when mm's stdout has ended, every line handled.
 */
function connect(child: Deno.ChildProcess, trace: boolean, out: Output, handlers: Handlers) {
  const writer = child.stdin.getWriter();
  const pending = new Map<RpcId, { resolve(r: unknown): void; reject(e: RpcError): void }>();
  const running = new Map<RpcId, { controller: AbortController; settle(a: object): void }>();
  let [queued, unwritten, writing, nextId] = [[] as string[], 0, Promise.resolve(), 0];
  const bad = { total: 0, inARow: 0, first: "" };

  const send = (message: object) => {
    const line = JSON.stringify(message);
    if (trace) out.line(out.stderr, `→ ${line}`);
    queued.push(line, "\n");
    unwritten += line.length + 1;
    if (queued.length > 2) return; // a write of this tick is scheduled already
    writing = writing.then(async () => {
      const text = queued.join("");
      queued = [];
      await writer.write(ENCODER.encode(text));
      unwritten -= text.length;
    }).catch(async (error) => {
      // An mm that exited is reported as such by the run; anything else is reported here.
      const exited = await Promise.race([child.status, delay(EXIT_GRACE_MS)]);
      if (!exited) handlers.fail(new ClientError(`cannot write to mm: ${errorText(error)}`));
    });
  };
  const failure = (error: unknown) => {
    const { code, message } = error instanceof RpcError
      ? error
      : { code: -32603, message: `Internal error: ${errorText(error)}` };
    return { error: { code, message } };
  };

  /** Answers a request from mm at once, or when its promise settles, unless mm cancels it first. */
  const answer = (id: string | number, method: string, params: unknown) => {
    const controller = new AbortController();
    const settle = (reply: object) => {
      handlers.answered(method, params, reply);
      send({ jsonrpc: "2.0", id, ...reply });
    };
    let result;
    try {
      result = handlers.request(method, params, controller.signal);
    } catch (error) {
      return settle(failure(error));
    }
    if (!(result instanceof Promise)) return settle({ result });
    const call = { controller, settle };
    running.set(id, call);
    result.then((value) => ({ result: value }), failure).then((reply) => {
      if (running.get(id) !== call) return; // cancelled, and answered so
      running.delete(id);
      settle(reply);
    });
  };

  /** `$/cancel_request`: a request still running is aborted and answered `-32800`. */
  const cancel = (params: unknown) => {
    const id = field(params, "requestId") as RpcId;
    const call = running.get(id);
    if (!call) return; // answered already, or never asked: nothing to cancel
    running.delete(id);
    call.controller.abort();
    call.settle({ error: { code: -32800, message: "Request cancelled" } });
  };

  const receive = (line: string) => {
    if (trace && line.trim() !== "") out.line(out.stderr, `← ${line}`);
    const frame = parseFrame(line);
    if (frame.kind === "blank") return;
    if (frame.kind === "bad") return badLine(line, frame.reply);
    bad.inARow = 0;
    if (frame.kind === "request") return answer(frame.id, frame.method, frame.params);
    if (frame.kind === "notification") {
      if (frame.method === "$/cancel_request") return cancel(frame.params);
      return handlers.notification(frame.method, frame.params);
    }
    const waiting = pending.get(frame.id);
    if (!waiting) {
      return out.log(`answer to no pending request (id ${JSON.stringify(frame.id)}) ignored`);
    }
    pending.delete(frame.id);
    if (!frame.error) return waiting.resolve(frame.result);
    const { code, message } = frame.error;
    waiting.reject(new RpcError(Number(code), typeof message === "string" ? message : "?"));
  };

  /** A noisy peer: log and answer the first few bad lines, count the rest, give up on a flood. */
  const badLine = (line: string, badReply: object) => {
    if (bad.inARow++ === 0) bad.first = line.slice(0, 80);
    if (++bad.total <= BAD_FRAMES_SHOWN) {
      out.line(out.stderr, `[client] bad frame from mm: ${line.slice(0, 80)}`);
      send(badReply);
    }
    if (bad.inARow < BAD_FRAMES_IN_A_ROW) return;
    const many = `${bad.inARow} bad lines; first: ${bad.first}`;
    throw new ClientError(`mm is not speaking JSON-RPC on stdout (${many})`);
  };

  const reading = (async () => {
    const reader = new LineReader();
    for await (const chunk of child.stdout) {
      for (const line of reader.push(chunk)) receive(line);
      if (unwritten > MAX_UNWRITTEN) await writing;
    }
    const last = reader.flush();
    if (last !== undefined) receive(last);
  })().catch((error) => {
    const message = error instanceof LineTooLongError
      ? `mm sent ${error.message}; connection dropped`
      : `reading from mm: ${errorText(error)}`;
    handlers.fail(error instanceof ClientError ? error : new ClientError(message));
  });

  return {
    request: (method: string, params: unknown) =>
      new Promise<unknown>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        send({ jsonrpc: "2.0", id, method, params });
      }),
    notify: (method: string, params: unknown) => send({ jsonrpc: "2.0", method, params }),
    close: () => writing.then(() => writer.close()).catch(() => {}),
    reading,
    /** A request of mm's is still being answered. */
    busy: () => running.size > 0,
    unlogged: () => Math.max(0, bad.total - BAD_FRAMES_SHOWN),
  };
}

type Connection = ReturnType<typeof connect>;

// ─── 7. The command line and the agent file ──────────────────────────────────

/** The default question. */
export const DEFAULT_QUESTION =
  "What operating system does my machine run, and how much memory does it have?";

/** The usage text of `--help`. */
export const USAGE = `usage: client.ts [options] [question | -]

Lends mini-me (mm -acp) one tool, host_info, asks it a question ("-": read from stdin).

options:
  --request          discovery mode "request" (default agent file: agent-request.yaml)
  --agent FILE       the agent file to give mm (default: agent.yaml)
  --mm PATH          the mm executable (default: $MM_BIN, else mm on PATH)
  -i, --interactive  more questions after the first, one per line, in the same session
  -q, --quiet        stdout is the answer alone; no [client] progress lines
  --resume ID        continue an earlier session of mm
  --trace            print every JSON-RPC frame on stderr (→ sent, ← received)
  --verbose          also show thoughts, plans and usage updates on stderr
  --timeout SECONDS  how long to wait for mm to start a session (default 30)
  --turn-timeout SECONDS
                     cancel a turn when mm sends nothing for that long (exit 124)
  --json             stdout is JSON lines: mm's updates, its requests and their answers,
                     and last the result (or the error)
  --sessions         list mm's sessions and exit
  --continue         continue the most recent session of this folder
  -h, --help         show this help and exit
  --version          print the version and exit`;

/** The command line's options, as `node:util` `parseArgs` reads them. */
export const OPTIONS = {
  request: { type: "boolean" },
  agent: { type: "string" },
  mm: { type: "string" },
  interactive: { type: "boolean", short: "i" },
  quiet: { type: "boolean", short: "q" },
  resume: { type: "string" },
  trace: { type: "boolean" },
  verbose: { type: "boolean" },
  timeout: { type: "string", default: "30" },
  "turn-timeout": { type: "string" },
  json: { type: "boolean" },
  sessions: { type: "boolean" },
  continue: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

/** The options of one run: what `parseArgs` read, the first question, `--timeout` in seconds. */
export type Options = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>["values"] & {
  /** The first question: `-` for stdin, `undefined` to read it with `--interactive`. */
  question?: string;
  /** `--timeout` in seconds. */
  seconds: number;
  /** `--turn-timeout` in seconds. */
  turnSeconds?: number;
};

/**
 * Parses the command line. A `--` that is the very first argument is dropped,
 * because `deno task demo -- --request` passes it through.
 *
 * @throws {ClientError} (exit 2, with the usage) naming what is wrong
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * const options = parseCommandLine(["--", "--request", "Which", "CPU?"]);
 * assert.deepEqual([options.request, options.question], [true, "Which CPU?"]);
 * ```
 */
export function parseCommandLine(argv: readonly string[]): Options {
  const args = argv[0] === "--" ? argv.slice(1) : [...argv];
  const usage = (message: string) => new ClientError(message, 2, true);
  // Read loosely, then checked token by token: a value that starts with `-`
  // (`--timeout -1`) is a value, and each mistake is named precisely.
  const { values, positionals, tokens } = parseArgs({
    args,
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const option = Object.hasOwn(OPTIONS, token.name)
      ? OPTIONS[token.name as keyof typeof OPTIONS]
      : undefined;
    if (!option) throw usage(`unknown option ${token.rawName}`);
    if (option.type === "boolean" && token.value !== undefined) {
      throw usage(`${token.rawName} takes no value`);
    }
    const dashed = !token.inlineValue && /^-(?![\d.])./.test(token.value ?? "");
    if (option.type === "string" && (token.value === undefined || dashed)) {
      throw usage(`${token.rawName} needs a value`);
    }
  }
  const parsed = values as Omit<Options, "question" | "seconds">; // as checked above
  const seconds = (name: string, value: string) => {
    if (/^(\d+\.?\d*|\.\d+)$/.test(value) && Number(value) > 0) return Number(value);
    throw usage(`--${name} takes a number of seconds above 0, got ${JSON.stringify(value)}`);
  };
  const turnTimeout = parsed["turn-timeout"];
  const turnSeconds = turnTimeout === undefined ? undefined : seconds("turn-timeout", turnTimeout);
  if (parsed.json && parsed.quiet) {
    throw usage("--json and --quiet both say what stdout is: pick one");
  }
  if (parsed.continue && parsed.resume !== undefined) {
    throw usage("--continue and --resume both name the session: pick one");
  }
  if (parsed.mm === "") throw usage('--mm needs a path, got ""');
  if (parsed.resume === "") throw usage('--resume needs a session id, got ""');
  const question = positionals.join(" ").trim() ||
    (parsed.interactive ? undefined : DEFAULT_QUESTION);
  if (question === "-" && parsed.interactive) {
    throw usage("- reads the question from stdin, which --interactive reads too");
  }
  return { ...parsed, question, seconds: seconds("timeout", parsed.timeout), turnSeconds };
}

/**
 * Finds and reads the agent file: relative to the current directory, else,
 * when the client runs from a source file, next to `client.ts`. An empty
 * file, or one with only comments, has no keys, as mm reads it.
 *
 * @throws {ClientError} (exit 2) naming the file and what is wrong with it
 */
function readAgentFile(name: string, given: boolean): { path: string; config: AgentConfig } {
  const here = import.meta.dirname;
  const places = here && !/^([/\\]|[A-Za-z]:)/.test(name) ? [name, `${here}/${name}`] : [name];
  for (const path of places) {
    const problem = (what: string) => new ClientError(`agent file ${path} ${what}`, 2);
    if (!granted({ name: "read", path })) {
      throw problem(`is outside what this run may read (add --allow-read=${path})`);
    }
    let document: unknown;
    try {
      const text = Deno.readTextFileSync(path);
      // js-yaml refuses a document with no content; Go's YAML, which mm uses, reads no keys.
      document = /^\s*(#[^\n]*\s*)*$/.test(text) ? null : parseYaml(text);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      if (error instanceof Deno.errors.IsADirectory) throw problem("is a directory");
      if (!(error instanceof YAMLException)) throw problem(`cannot be read: ${errorText(error)}`);
      throw problem(`is not valid YAML (line ${(error.mark?.line ?? 0) + 1}): ${error.reason}`);
    }
    if (document != null && !isObject(document)) throw problem("is not a YAML mapping of keys");
    const tools = field(field(document, "acp"), "clientTools");
    const [enabled, discovery] = [field(tools, "enabled"), field(tools, "discovery")];
    return { path, config: { enabled: enabled !== false, discovery: String(discovery ?? "meta") } };
  }
  const hint = given ? "" : " (run from the project folder or pass --agent)";
  throw new ClientError(`agent file not found: ${name}${hint}`, 2);
}

/** What the client reads in an agent file: `acp.clientTools.enabled` and `.discovery`. */
export type AgentConfig = { enabled: boolean; discovery: string };

/**
 * The warnings for an agent file that contradicts the run. The client goes
 * on anyway, so that mm's own reaction can be seen.
 */
export function agentFileWarnings(file: string, config: AgentConfig, request: boolean): string[] {
  const sets = `warning: ${file} sets acp.clientTools`;
  if (!config.enabled) return [`${sets}.enabled: false; mm will ignore host_info`];
  const announced = request ? "request" : "meta";
  if (config.discovery === announced || !["meta", "request"].includes(config.discovery)) return [];
  const then = request
    ? "mm will not see host_info"
    : "mm will ask for the list, and the client answers it";
  return [`${sets}.discovery: ${config.discovery}, but the client announces ${announced}; ${then}`];
}

// ─── Helpers ─────────────────────────────────────────────────────────────────

/** The longest delay a timer takes (about 24.8 days); a longer timeout never fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` when it is an array, else an empty one. */
function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** `value[key]` when `value` is an object, else `undefined`. */

function field(value: unknown, key: string): unknown {
  return isObject(value) ? value[key] : undefined;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Whether a permission is granted, asked without ever prompting. */
function granted(descriptor: Deno.PermissionDescriptor): boolean {
  return Deno.permissions.querySync(descriptor).state === "granted";
}

/** An environment variable; one the run may not read counts as unset. */
function readEnv(name: string): string | undefined {
  return granted({ name: "env", variable: name }) ? Deno.env.get(name) : undefined;
}

function delay(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms));
}

if (import.meta.main) Deno.exit(await main(Deno.args));
