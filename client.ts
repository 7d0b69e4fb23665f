#!/usr/bin/env -S deno run --allow-run --allow-read=. --allow-env=MM_BIN,NO_COLOR,TERM --allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime
/**
 * An ACP client that lends mini-me (`mm -acp`) a tool of its own, `host_info`, asks it a question
 * and shows the conversation. mm speaks the Agent Client Protocol: JSON-RPC 2.0, one JSON object
 * per line on stdin and stdout. A client offers tools through ACP extensibility (mini-me's
 * acp-client-tools.md, "Découverte"): their descriptions go in the `_meta` of `initialize` (`meta`
 * discovery), or in the answer to `_org.mini-me/tools/list` (`request` discovery). mm's model
 * calls each as `client_<name>`, and mm forwards the call to the client as a request for `method`.
 *
 * To lend a tool of your own, add one entry to `TOOLS`: its description and the function that
 * answers its calls. The list mm sees, the dispatch of its calls, the permission policy and the log
 * line all follow from that entry.
 *
 * The file reads in the order of a session: the tools (`TOOLS`, `answerRequest()`, `hostInfo()`),
 * the run as it happens (`main()`: start mm, `initialize`, the session, a turn, `showUpdate()`, the
 * end), then the plumbing: output, framing, the connection, the command line, the agent file.
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
/** A tool: its description (acp-client-tools.md, "Description d'un outil") and its `call`. */
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
   * Answers a call with the model's arguments, now or in a promise (the client goes on meanwhile);
   * `signal` aborts when mm cancels the call. A throw or rejection is answered as an error result.
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
export const TOOL_DESCRIPTIONS: readonly Omit<Tool, "call">[] = TOOLS.map(({ call: _, ...d }) => d);
const TOOL_BY_METHOD = new Map(TOOLS.map((tool) => [tool.method, tool]));
/** A text result; with `isError`, the model reads it as `[client tool error: <text>]`. */
export function toolText(text: string, isError = false): ToolResult {
  return { content: [{ type: "text", text }], ...(isError ? { isError } : {}) };
}

/** Answers a request from mm: its result, a promise of it, or a thrown {@linkcode RpcError}. */
function answerRequest(run: Run, method: string, params: unknown, signal: AbortSignal): unknown {
  const tool = TOOL_BY_METHOD.get(method);
  if (tool) return callTool(run, tool, params, signal);
  if (method === "session/request_permission") return { outcome: answerPermission(run, params) };
  if (method === "_org.mini-me/tools/list") {
    run.out.log(`list requested for session ${field(params, "sessionId") ?? "?"}`);
    return { tools: TOOL_DESCRIPTIONS };
  }
  throw new RpcError(-32601, "Method not found"); // fs/*, terminal/*, unknown extensions: not lent
}
/**
 * One call: the `[client] <name> {args} (session …)` line, then the tool. Its throw or rejection is
 * its failure, not the client's: an error result (MCP's way), a line on stderr; the turn goes on.
 */
function callTool(run: Run, tool: Tool, params: unknown, signal: AbortSignal) {
  const { args, sessionId } = readToolCall(params);
  run.out.log(`${tool.name} ${JSON.stringify(args)} (session ${sessionId})`);
  const failed = (error: unknown) => {
    const text = `${tool.name} failed: ${errorText(error)}`;
    if (!signal.aborted) run.out.note(`[client] ${text}`);
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
 * What a tool call carries (acp-client-tools.md, "Requête"): the model's arguments at the top level
 * of `params`, the session in `params._meta["org.mini-me/sessionId"]` (`?` when absent).
 */
export function readToolCall(params: unknown): { args: unknown; sessionId: string } {
  if (!isObject(params)) return { args: params ?? {}, sessionId: "?" };
  const { _meta, ...args } = params;
  const sessionId = field(_meta, "org.mini-me/sessionId");
  return { args, sessionId: typeof sessionId === "string" ? sessionId : "?" };
}

/**
 * Whether a permission request's title is exactly `client: <name>` of a tool the client lends
 * (acp-client-tools.md, "Avant la requête"). A shell command or a look-alike is not.
 */
export function isOfferedToolTitle(title: unknown): boolean {
  return TOOLS.some((tool) => title === `client: ${tool.name}`);
}
/** The answer to `session/request_permission`. */
export type Outcome = { outcome: "cancelled" } | { outcome: "selected"; optionId: string };
/**
 * Picks among the options mm offered: `allow_once`, else `allow_always` to allow; `reject_once`,
 * else `reject_always` to refuse; else `cancelled`. Never an `optionId` mm did not offer.
 */
export function choosePermission(options: unknown, allow: boolean): Outcome {
  const offered = list(options).filter(isObject);
  for (const kind of allow ? ["allow_once", "allow_always"] : ["reject_once", "reject_always"]) {
    const option = offered.find((o) => o.kind === kind && typeof o.optionId === "string");
    if (option) return { outcome: "selected", optionId: option.optionId as string };
  }
  return allow ? choosePermission(options, false) : { outcome: "cancelled" };
}
/**
 * Answers a permission request, and shows its call (an agent may ask for one it never announced);
 * a refusal shows on stdout too. After `session/cancel`, ACP says each is answered `cancelled`.
 */
function answerPermission(run: Run, params: unknown): Outcome {
  const [toolCall, options] = fields(params, "toolCall", "options");
  const [call, title] = [seeCall(run, toolCall, run.out.stdout), field(toolCall, "title")];
  const offered = run.cancelled ? [] : options; // none: `cancelled`
  const outcome = choosePermission(offered, isOfferedToolTitle(title));
  const chosen = list(options).find((o) => field(o, "optionId") === field(outcome, "optionId"));
  const allowed = `${field(chosen, "kind")}`.startsWith("allow");
  run.out.log(`permission for ${JSON.stringify(title ?? "")}: ${allowed ? "allowed" : "refused"}`);
  if (!allowed) {
    [run.refused, call.done] = [true, true];
    run.out.say(`✖ ${call.title} refused`, RED);
  }
  return outcome;
}

// ─── 2. The tool: host_info ──────────────────────────────────────────────────
/** A fact `host_info` reports: the `--allow-sys` names it needs, and how it is read. */
function fact(needs: Deno.SysPermissionDescriptor["kind"][], read: () => string) {
  const allowed = once(() => needs.every((kind) => granted({ name: "sys", kind })));
  return { needs, allowed, read };
}
/** The topics, read with Deno's own APIs where it has them. */
const TOPICS = {
  os: fact(["osRelease", "hostname"], () => OS_TEXT()),
  cpu: fact(["cpus", "loadavg"], () => {
    const [count, arch] = [navigator.hardwareConcurrency, Deno.build.arch];
    const load = Deno.loadavg().map((n) => n.toFixed(2)).join(" ");
    return `${count} × ${CPU_MODEL()} (${arch}), load average ${load}`;
  }),
  memory: fact(["systemMemoryInfo"], () => {
    const { available, total } = Deno.systemMemoryInfo();
    return `${gib(available)} free of ${gib(total)}`;
  }),
  uptime: fact(["osUptime"], () => describeUptime(Deno.osUptime(), new Date())),
};
// Read once, as calls may come many times a second: the kernel release (`Deno.osRelease()` reads
// a file), the host name and the CPU model (Deno has no API) do not change under a running client.
const OS_TEXT = once(() => {
  const { os, arch } = Deno.build;
  return `${osName(os)} ${Deno.osRelease()} (${os}/${arch}), host name ${Deno.hostname()}`;
});
const CPU_MODEL = once(() => cpus()[0]?.model.trim() || "unknown CPU");

/**
 * Runs `host_info` for the model's `topic`. A bad call is an error result the model can act on,
 * never an exception; so is a `--allow-sys` name not given, checked first so Deno never asks.
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
  const fail = (text: string) => toolText(text, true);
  const choices = `use one of: ${Object.keys(TOPICS).join(", ")}`;
  if (typeof topic !== "string") return fail(`missing parameter "topic"; ${choices}`);
  const unknown = !Object.hasOwn(TOPICS, topic);
  if (unknown) return fail(`unknown topic ${JSON.stringify(topic)}; ${choices}`);

  const { needs, allowed, read } = TOPICS[topic as keyof typeof TOPICS];
  if (!allowed()) return fail(`host_info needs --allow-sys=${needs.join(",")} to report ${topic}`);
  try {
    return toolText(read());
  } catch (error) {
    return fail(`host_info could not read ${topic}: ${errorText(error)}`);
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
/** The `uptime` text for seconds up, as of `now`: `up 3 days, 4 hours, 12 minutes (since …)`. */
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
 * Runs the client with a command line and returns the exit code. Every failure is one `error: …`
 * line on stderr, never a stack trace, and no mm process outlives the client.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const out = new Output();
  let run: Run | undefined;
  let [code, graceful] = [1, false]; // graceful: the conversation ended, mm may exit in its time
  try {
    const options = parseCommandLine(argv);
    if (options.help || options.version) {
      out.print(out.stdout, `${options.help ? USAGE : `host-info-client ${VERSION}`}\n`);
      return 0;
    }
    [out.quiet, out.json] = [!!options.quiet, !!options.json];
    const agent = options.agent ?? (options.request ? "agent-request.yaml" : "agent.yaml");
    const { path, config } = readAgentFile(agent, options.agent !== undefined);
    agentFileWarnings(agent, config, !!options.request).forEach((w) => out.note(`[client] ${w}`));
    if (options.question === "-") options.question = await questionFromStdin(out);
    run = new Run(options, out, path);
    [code, graceful] = [await converse(run), true];
  } catch (error) {
    code = error instanceof ClientError ? error.exitCode : 1;
    if (out.stderr.open) out.print(out.stderr, "\n"); // Ctrl-C at the prompt: end its line
    if (errorText(error)) out.note(`error: ${errorText(error)}`);
    if (error instanceof ClientError && error.usage) out.note(USAGE);
    // A script is told why, even of a usage error: --json among the options (before a `--`).
    out.json ||= argv.slice(0, argv.indexOf("--", 1) >>> 0).includes("--json");
    out.record({ error: { message: errorText(error) || "interrupted", exitCode: code } });
  }
  out.waitFor(undefined);
  // After a turn that ended, cancelled or not, or at the -i prompt: how to come back to it.
  const ended = code === 0 || ([124, 130, 143].includes(code) && run?.stage === "question");
  if (ended && run?.sessionId) out.log(`continue with: --resume ${run.sessionId}`);
  if (run) await endMm(run, graceful);
  const unlogged = run?.connection.unlogged();
  if (unlogged) out.note(`[client] ${unlogged} more bad frames from mm were not logged`);
  out.flush();
  return code;
}

/**
 * One run: mm, the connection, where the exchange stands. `stage`: what mm has yet to do (if it
 * exits): answer `asking`, end the turn, nothing (`-i` prompt). `failed` rejects to end it early.
 */
class Run {
  stage: "opening" | "turn" | "question" = "opening";
  asking?: string;
  sessionId?: string;
  /** A cancelled turn: its exit code, the error the run ends with (`--turn-timeout`), a timer. */
  cancelled?: { code: number; why?: string; timer: ReturnType<typeof setTimeout> };
  lastSignal?: number;
  replaying = false; // a loaded session's past is shown, on stderr, dimmed
  readonly calls = new Map<string, Call>(); // the tool calls seen, by id
  answer = ""; // this turn's answer text
  refused = false; // a permission was refused in this turn
  textBreak = false; // the next text starts a line: it follows a tool call or a block
  readonly child: Deno.ChildProcess;
  readonly connection: Connection;
  readonly log: Promise<void>; // settles when mm's stderr has ended, every line passed on
  readonly failed: Promise<never>;
  fail!: (error: ClientError) => void;

  constructor(readonly options: Options, readonly out: Output, agentFile: string) {
    const fromEnv = readEnv("MM_BIN") || undefined; // set but empty is unset
    const namedBy = options.mm ? "--mm" : fromEnv ? "MM_BIN" : undefined;
    this.child = startMm(options.mm ?? fromEnv ?? "mm", agentFile, namedBy);
    this.failed = new Promise<never>((_, reject) => this.fail = reject);
    this.failed.catch(() => {}); // read where it matters, in ask()
    this.connection = connect(this);
    this.log = forwardLog(this.child, out);
    out.onFailure = (e) =>
      this.fail(new ClientError(`cannot write the conversation: ${errorText(e)}`));
    this.child.status.then(async ({ code, signal }) => {
      await Promise.race([Promise.all([this.connection.reading, this.log]), delay(1000)]);
      const how = signal ? `signal ${signal}` : `code ${code}`;
      const before = this.stage === "opening"
        ? `answering ${this.asking}`
        : { turn: "the turn ended", question: "the next question" }[this.stage];
      this.fail(new ClientError(`mm exited with ${how} before ${before}`));
    });
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      Deno.addSignalListener(signal, () => interrupt(this, signal));
    }
  }
}

/**
 * Starts mm as `<mm> -acp -agent <file>` — the line to change if your mm starts another way — in
 * its own process group, so that a Ctrl-C typed in the terminal reaches the client alone.
 */
function startMm(mm: string, agentFile: string, namedBy?: string): Deno.ChildProcess {
  const pipes = { stdin: "piped", stdout: "piped", stderr: "piped" } as const;
  const options = { args: ["-acp", "-agent", agentFile], detached: true, ...pipes };
  const refused = `cannot start mm (${mm}): this run may not start it (add --allow-run)`;
  if (!granted({ name: "run", command: mm })) throw new ClientError(refused, 127);
  try {
    return new Deno.Command(mm, options).spawn();
  } catch (error) {
    let reason = error instanceof Deno.errors.NotFound ? "not found" : errorText(error);
    if (error instanceof Deno.errors.PermissionDenied) reason = "not executable";
    if (!namedBy && !granted({ name: "env", variable: "MM_BIN" })) {
      reason += "; MM_BIN could not be read (add --allow-env=MM_BIN)";
    }
    const next = namedBy
      ? `${namedBy} names it: check that path`
      : "Install mini-me or set MM_BIN / --mm";
    throw new ClientError(`cannot start mm (${mm}): ${reason}. ${next}.`, 127);
  }
}
/**
 * mm's own log, its stderr, passed on byte for byte through the client's output, whole lines as
 * they come (the progress line erased first); a line over 64 KiB in pieces, so a flood is bounded.
 */
async function forwardLog(child: Deno.ChildProcess, out: Output): Promise<void> {
  let held: Uint8Array[] = [];
  const release = () => (held.forEach((part) => out.put(out.stderr, part)), held = []);
  const read = async () => {
    for await (const chunk of child.stderr) {
      const end = chunk.lastIndexOf(10) + 1; // the lines this chunk ends go out now
      if (end > 0) held.push(chunk.subarray(0, end)), release();
      if (end < chunk.length) held.push(chunk.subarray(end));
      if (held.reduce((size, part) => size + part.length, 0) > 64 * 1024) release();
    }
  };
  await read().catch(() => {}); // mm's stderr is gone: what was read is still shown
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
  if (options.sessions) return showSessions(run, await listSessions(run, capabilities));
  if (options.continue) options.resume = latestSession(await listSessions(run, capabilities));
  await openSession(run, capabilities);
  out.waitFor(undefined); // the session is open: until a question, nothing to wait for
  if (!options.interactive) return await turn(run, options.question ?? DEFAULT_QUESTION);
  const questions = stdinLines();
  for (let question = options.question;; question = undefined) {
    question ??= await nextQuestion(run, questions);
    if (question === undefined) return 0; // end of input
    const code = await turn(run, question);
    if (run.cancelled?.code === 143) return code; // SIGTERM ends the client, Ctrl-C only the turn
    run.cancelled = undefined;
  }
}
/** The `initialize` params: the tool list (`meta`), or `true` (`request`; "Découverte"). */
export function initializeParams(
  request: boolean,
): { clientCapabilities: Record<string, unknown>; [key: string]: unknown } {
  const clientInfo = { name: "host-info-client", version: VERSION };
  // Capabilities are a contract: no file system and no terminal, which this client lacks.
  const fs = { readTextFile: false, writeTextFile: false };
  const _meta = { "org.mini-me/tools": request ? true : TOOL_DESCRIPTIONS };
  return { protocolVersion: 1, clientInfo, clientCapabilities: { fs, terminal: false, _meta } };
}

/** `--sessions`: mm's sessions, one per line: id, last update, title or folder. */
function showSessions(run: Run, sessions: unknown[]): number {
  run.out.record({ sessions });
  for (const session of sessions) {
    const [id, at, title, cwd] = fields(session, "sessionId", "updatedAt", "title", "cwd");
    run.out.say(`${id}  ${at ?? "-"}  ${title ?? cwd}`);
  }
  return 0;
}
/** `--continue`: the most recent of the sessions of the current folder. */
function latestSession(sessions: unknown[]): string {
  const updated = (s: unknown) => String(field(s, "updatedAt") ?? "");
  const here = sessions.filter((s) => field(s, "cwd") === Deno.cwd());
  const [latest] = here.sort((a, b) => updated(b).localeCompare(updated(a)));
  if (!latest) throw new ClientError(`mm has no session in ${Deno.cwd()} to continue`);
  return String(field(latest, "sessionId"));
}
/** mm's sessions (`session/list`, page after page, 100 at most); this folder's for `--continue`. */
async function listSessions(run: Run, capabilities: unknown): Promise<unknown[]> {
  if (field(field(capabilities, "sessionCapabilities"), "list") == null) {
    throw new ClientError("mm cannot list its sessions (it does not advertise session/list)");
  }
  const [sessions, cwd] = [[] as unknown[], run.options.continue ? Deno.cwd() : undefined];
  let cursor: unknown;
  for (let page = 0; page < 100 && (page === 0 || typeof cursor === "string"); page++) {
    const answer = await ask(run, "session/list", { cwd, cursor }, run.options.seconds);
    sessions.push(...list(field(answer, "sessions")));
    cursor = field(answer, "nextCursor");
  }
  return sessions;
}

/**
 * Opens the session: `session/new`, or for `--resume` `session/resume` (else `session/load`, a
 * replay). In `request` mode mm first asks for the tools (acp-client-tools.md, "Mode request").
 */
async function openSession(run: Run, capabilities: unknown): Promise<void> {
  const { options } = run;
  const params = { sessionId: options.resume, cwd: Deno.cwd(), mcpServers: [] };
  let how = "";
  if (options.resume === undefined) {
    const session = await ask(run, "session/new", params, options.seconds);
    run.sessionId = String(field(session, "sessionId"));
  } else {
    const resumes = field(field(capabilities, "sessionCapabilities"), "resume") != null;
    if (!resumes && field(capabilities, "loadSession") !== true) {
      throw new ClientError("mm can neither resume nor load sessions; --resume needs one of them");
    }
    [run.sessionId, run.replaying] = [options.resume, !resumes];
    await ask(run, resumes ? "session/resume" : "session/load", params, options.seconds);
    [run.replaying, how] = [false, resumes ? " (resumed)" : " (loaded)"];
  }
  run.out.log(`discovery: ${options.request ? "request" : "meta"}, session ${run.sessionId}${how}`);
}

/** One prompt turn: the question, mm's updates as they come, and its stop reason. */
async function turn(run: Run, question: string): Promise<number> {
  const { out } = run;
  out.say(`❓ ${question}`);
  [run.stage, run.refused, run.answer] = ["turn", false, ""];
  out.waitFor("the model");
  const [prompt, stopWatching] = [[{ type: "text", text: question }], watchSilence(run)];
  const answer = await ask(run, "session/prompt", { sessionId: run.sessionId, prompt })
    .finally(stopWatching);
  clearTimeout(run.cancelled?.timer);
  run.stage = "question";
  out.waitFor(undefined);
  const stopReason = String(field(answer, "stopReason"));
  if (!out.quiet) out.say(`[${stopReason}]`);
  else if (out.stdout.open) out.print(out.stdout, "\n");
  out.record({ result: { stopReason, sessionId: run.sessionId, text: run.answer } });
  if (run.cancelled?.why) throw new ClientError(run.cancelled.why, run.cancelled.code);
  if (run.cancelled) return run.cancelled.code;
  if (stopReason === "cancelled") {
    const why = run.refused ? " after a refused permission" : "";
    out.note(`[client] mm ended the turn as cancelled; the client did not ask${why}`);
  }
  return stopReason === "cancelled" ? 130 : stopReason === "refusal" ? 1 : 0;
}
/** Sends a request and waits for its answer, unless the run fails or the timeout passes first. */
async function ask(run: Run, method: string, params: object, seconds = Infinity): Promise<unknown> {
  if (run.stage === "opening") run.asking = method;
  let timer; // of the timeout
  const timeout = new Promise<never>((_, reject) => {
    const error = new ClientError(`mm did not answer ${method} within ${seconds} s`);
    if (seconds * 1000 <= MAX_TIMER_MS) timer = setTimeout(() => reject(error), seconds * 1000);
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
    if (error instanceof LineTooLongError) throw new ClientError(`stdin has ${error.message}`, 2);
    throw error;
  }
  const last = reader.flush();
  if (last !== undefined) yield last;
}
/** `-`: the question is all of stdin (at a terminal, after a hint); empty: the default one. */
async function questionFromStdin(out: Output): Promise<string> {
  if (Deno.stdin.isTerminal()) {
    out.note("[client] reading the question from stdin; end it with Ctrl-D");
  }
  return (await Array.fromAsync(stdinLines())).join("\n").trim() || DEFAULT_QUESTION;
}
/** The next question of `--interactive`, blank lines skipped, after a prompt on a terminal. */
async function nextQuestion(run: Run, lines: AsyncGenerator<string>): Promise<string | undefined> {
  const [{ out }, atTerminal] = [run, Deno.stdin.isTerminal()];
  for (;;) {
    if (atTerminal) out.print(out.stderr, "> ");
    const next = await Promise.race([lines.next(), run.failed]);
    out.stderr.open = false; // the person's Enter ended the prompt's line
    if (next.done && atTerminal) out.print(out.stderr, "\n"); // Ctrl-D did not
    if (next.done || next.value.trim()) return next.value?.trim();
  }
}

/** A notification from mm: a `session/update` is shown; the others are not for the user. */
function notified(run: Run, method: string, params: unknown): void {
  if (method !== "session/update") return;
  run.out.record(params);
  showUpdate(run, field(params, "update"));
  if (run.stage !== "turn" || run.cancelled) return; // a replay, or a cancel: waited for already
  // What the progress line waits for: a tool that runs, or the model.
  const running = [...run.calls.values()].findLast((call) => !call.done);
  run.out.waitFor(running?.title ?? "the model");
}
/**
 * Shows one `session/update`: a `case` per kind the user sees, a `default` that ignores the rest.
 * With `--verbose`, thoughts, plans, usage and settings go to stderr; so does a replay, dimmed.
 */
function showUpdate(run: Run, update: unknown): void {
  const { out, options } = run;
  const [kind, content, title] = fields(update, "sessionUpdate", "content", "title");
  const [to, style] = run.replaying ? [out.stderr, DIM] : [out.stdout, undefined];
  const [text, isText] = [blockText(content), field(content, "type") === "text"];
  const note = (line: string) => void (options.verbose && out.note(line, DIM));
  switch (kind) {
    case "agent_message_chunk":
      if ((out.quiet && run.replaying) || text === "") return; // an empty chunk only has _meta
      if (!run.replaying && isText) run.answer += text;
      // Text that follows a tool call or another block starts on a line of its own.
      if (run.textBreak && to.open && !out.quiet) out.print(to, "\n");
      run.textBreak = !isText;
      return isText ? out.print(to, text, style) : out.line(to, text, style);
    case "agent_thought_chunk":
      return void (options.verbose && (isText ? out.print(out.stderr, text, DIM) : note(text)));
    case "user_message_chunk":
      return void (run.replaying && !out.quiet && out.note(`❓ ${text}`, DIM));
    case "tool_call":
    case "tool_call_update":
      return showToolCall(run, update, to, style);
    case "plan":
      note("plan:");
      for (const entry of list(field(update, "entries"))) {
        note(`  [${field(entry, "status")}] ${field(entry, "content")}`);
      }
      return;
    case "usage_update": {
      const [used, size, cost] = fields(update, "used", "size", "cost");
      const paid = isObject(cost) ? `, cost ${cost.amount} ${cost.currency}` : "";
      return note(`usage: ${used} of ${size} tokens${paid}`);
    }
    case "available_commands_update": {
      const names = list(field(update, "availableCommands")).map((c) => `/${field(c, "name")}`);
      return note(`commands: ${names.join(", ")}`);
    }
    case "current_mode_update":
      return note(`mode: ${field(update, "currentModeId")}`);
    case "session_info_update":
      return void (typeof title === "string" && note(`title: ${title}`));
    case "config_option_update":
      for (const option of list(field(update, "configOptions"))) {
        note(`config: ${field(option, "id")} = ${field(option, "currentValue")}`);
      }
      return;
    default: // a kind this client does not know: nothing to show
  }
}

/** A tool call as shown: its title, its content lines, its `rawOutput`, whether it is done. */
type Call = { title: string; lines: string[]; rawOutput?: unknown; done?: boolean };
/**
 * A tool call or its update. ACP: an update's `content` replaces the call's: shown is what extends
 * what was shown (a last line that grew, again whole), else all. Done with no content: `rawOutput`.
 */
function showToolCall(run: Run, update: unknown, to: Stream, style?: number): void {
  const call = seeCall(run, update, to, style);
  const [status, content, raw] = fields(update, "status", "content", "rawOutput");
  call.done ||= status === "completed" || status === "failed";
  if (raw !== undefined) call.rawOutput = raw;
  if (run.out.quiet) return;
  if (status === "failed") run.out.line(to, `✖ ${call.title} failed`, style ?? RED);
  let lines = Array.isArray(content) ? content.flatMap(contentLines) : call.lines;
  if (call.done && lines.length === 0 && call.rawOutput !== undefined) {
    const text = call.rawOutput;
    const all = textLines(typeof text === "string" ? text : JSON.stringify(text));
    lines = all.length > 20 ? [...all.slice(0, 20), `… (${all.length - 20} more lines)`] : all;
  }
  const [shown, last] = [call.lines, call.lines.length - 1];
  const grew = (line: string, i: number) => i === last && lines[i]?.startsWith(line);
  const extended = shown.every((line, i) => lines[i] === line || grew(line, i));
  const from = !extended ? 0 : lines[last] === shown[last] ? last + 1 : last;
  for (const line of lines.slice(from)) run.out.line(to, `│ ${line}`, style);
  call.lines = lines;
}
/**
 * The call an update or a permission request is about. Each call is shown once, when first seen,
 * and again when renamed, so that the command that runs is always visible (`🛠️ Terminal → ls`).
 */
function seeCall(run: Run, toolCall: unknown, to: Stream, style?: number): Call {
  const [id, title] = [String(field(toolCall, "toolCallId") ?? ""), field(toolCall, "title")];
  const [known, shown] = [run.calls.get(id), !run.out.quiet];
  const call = known ?? { title: typeof title === "string" ? title : id, lines: [] };
  run.calls.set(id, call);
  run.textBreak = true;
  if (!known && shown) run.out.line(to, `🛠️ ${call.title}`, style);
  if (!known || typeof title !== "string" || title === call.title) return call;
  if (shown) run.out.line(to, `🛠️ ${call.title} → ${title}`, style);
  call.title = title;
  return call;
}

/** An item of a tool call's content as lines: text, a diff's size, a terminal, another block. */
function contentLines(item: unknown): string[] {
  switch (field(item, "type")) {
    case "content":
      return textLines(blockText(field(item, "content")));
    case "diff": {
      const texts = fields(item, "oldText", "newText").map((t) => textLines(`${t ?? ""}`));
      const [[before, after], left] = [texts, new Map<string, number>()]; // left: not matched yet
      for (const line of before) left.set(line, (left.get(line) ?? 0) + 1);
      const kept = after.filter((line) => left.get(line) && left.set(line, left.get(line)! - 1));
      const [added, removed] = [after.length - kept.length, before.length - kept.length];
      return [`diff ${field(item, "path")} (+${added} −${removed} lines)`];
    }
    case "terminal":
      return [`[terminal ${field(item, "terminalId")}]`];
    default:
      return textLines(blockText(item));
  }
}
/** A text's lines at `\n` or `\r\n`; a last line end adds no line, and "" has none. */
function textLines(text: string): string[] {
  return text === "" ? [] : text.replace(/\r?\n$/, "").split(/\r?\n/);
}
/** A content block as text: its text, or `[<type>]` for any other kind. */
function blockText(block: unknown): string {
  const [type, text] = fields(block, "type", "text");
  if (type === "text" && typeof text === "string") return text;
  return `[${typeof type === "string" ? type : "unknown"}]`;
}

/** Signals closer than this to the first are the same keypress (`deno task` forwards it). */
const SAME_KEYPRESS_MS = 300;
/** How long mm gets to end a turn after `session/cancel`, and to exit once its stdin is closed. */
const CANCEL_GRACE_MS = 5000;
const EXIT_GRACE_MS = 2000;
/**
 * Ctrl-C or SIGTERM. During a turn, the first cancels it the ACP way, `session/cancel`; a second
 * kills mm. Before the session exists, or at the `-i` prompt, the client ends.
 */
function interrupt(run: Run, signal: "SIGINT" | "SIGTERM"): void {
  const now = performance.now();
  if (now - (run.lastSignal ?? -Infinity) < SAME_KEYPRESS_MS) return; // one keypress, twice
  run.lastSignal = now;
  const code = signal === "SIGINT" ? 130 : 143;
  if (run.stage !== "turn") return killMm(run, code);
  if (!run.cancelled) return cancelTurn(run, code);
  run.out.log(`second ${signal === "SIGINT" ? "Ctrl-C" : signal}: killing mm`);
  killMm(run, run.cancelled.code);
}
/** Cancels the turn: `session/cancel`, and mm is killed if it does not end the turn in time. */
function cancelTurn(run: Run, code: number, why?: string): void {
  run.out.log("cancelling…");
  run.connection.notify("session/cancel", { sessionId: run.sessionId });
  run.out.waitFor("mm to end the turn");
  const late = () => {
    run.out.log("mm did not answer the cancellation in time; killing it");
    killMm(run, code);
  };
  run.cancelled = { code, why, timer: setTimeout(late, CANCEL_GRACE_MS) };
}
/** Kills mm now, group and all, and ends the run with `code`. */
function killMm(run: Run, code: number): void {
  killGroup(run.child);
  run.fail(new ClientError(run.cancelled?.why ?? "", code));
}

/**
 * `--turn-timeout`: when mm has sent nothing for the turn that long (mm waiting for the client's
 * answer is not silence), the turn is cancelled and the run ends with 124, as `timeout(1)` does.
 */
function watchSilence(run: Run): () => void {
  const ms = (run.options.turnSeconds ?? Infinity) * 1000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = () => {
    const silent = run.connection.silentFor();
    if (silent < ms) return void (timer = setTimeout(check, ms - silent));
    const why = `mm sent nothing for ${run.options.turnSeconds} s; turn cancelled`;
    if (!run.cancelled) cancelTurn(run, 124, why);
  };
  if (ms <= MAX_TIMER_MS) timer = setTimeout(check, ms);
  return () => clearTimeout(timer);
}

/**
 * Ends mm: after a conversation that ended, closes its stdin and gives it time to exit; then kills
 * its process group (an agent may run helpers of its own), and passes on mm's last lines.
 */
async function endMm(run: Run, graceful: boolean): Promise<void> {
  clearTimeout(run.cancelled?.timer);
  const exited = run.connection.close().then(() => run.child.status);
  if (graceful) await Promise.race([exited, delay(EXIT_GRACE_MS)]);
  await killGroup(run.child);
  await Promise.race([run.log, delay(500)]);
}
/** Kills mm's process group, and waits (a second at most) until mm is gone, not just signalled. */
async function killGroup(child: Deno.ChildProcess): Promise<void> {
  attempt(() => Deno.kill(-child.pid, "SIGKILL"), undefined); // unless the group is gone already
  await Promise.race([child.status, delay(1000)]);
}

// ─── 4. Output: the conversation, diagnostics, the progress line ─────────────
/** ANSI styles. */
const DIM = 2;
const RED = 31;
const ENCODER = new TextEncoder();
/** An output stream: stdout or stderr. */
class Stream {
  readonly terminal: boolean;
  readonly colour: boolean;
  open = false; // its last line is not ended
  gone = false; // its reader went away
  constructor(readonly file: typeof Deno.stdout) {
    this.terminal = file.isTerminal();
    // no-color.org: no colour when NO_COLOR is set and not empty; a dumb terminal has none.
    this.colour = this.terminal && !readEnv("NO_COLOR") && readEnv("TERM") !== "dumb";
  }
}
/**
 * stdout, the conversation, and stderr, diagnostics; on one terminal, pipe or file, a line open on
 * one is ended before the other writes. A tick's output goes out in one write per stream, in order.
 */
class Output {
  readonly stdout = new Stream(Deno.stdout);
  readonly stderr = new Stream(Deno.stderr);
  /** Both streams reach the same terminal, pipe or file (if unknown: are both terminals?). */
  readonly shared: boolean = attempt(() => {
    const [out, err] = [fstatSync(1), fstatSync(2)];
    return out.ino ? out.dev === err.dev && out.ino === err.ino : undefined;
  }, undefined) ?? this.stdout.terminal === this.stderr.terminal;
  readonly progress = this.stderr.terminal && readEnv("TERM") !== "dumb"; // can erase a line
  quiet = false; // --quiet: stdout is the answer text alone, and no `[client]` progress lines
  json = false; // --json: stdout is JSON lines, written by record(), and nothing else
  onFailure: (error: unknown) => void = () => {}; // stdout cannot be written, and not for EPIPE
  #waiting?: { label: string; since: number; drawn: boolean };
  #queue: [Stream, string | Uint8Array][] = [];

  constructor() { // the progress line redraws itself (its seconds) on a timer that holds no one
    if (this.progress) Deno.unrefTimer(Number(setInterval(() => this.#draw(), 100)));
  }
  /** A `[client] …` progress line on stderr (not with `--quiet`). */
  log(text: string): void {
    if (!this.quiet) this.note(`[client] ${text}`);
  }
  /** A line on stderr. */
  note(text: string, style?: number): void {
    this.line(this.stderr, text, style);
  }
  /** A line of the conversation on stdout (not with `--quiet`). */
  say(text: string, style?: number): void {
    if (!this.quiet) this.line(this.stdout, text, style);
  }
  /** Writes a whole line, after a newline if the stream's last line is still open. */
  line(to: Stream, text: string, style?: number): void {
    this.print(to, `${to.open ? "\n" : ""}${text}\n`, style);
  }
  /** Writes text, which mm may have sent: on a terminal its control characters are shown. */
  print(to: Stream, text: string, style?: number): void {
    if (to === this.stdout && this.json) return; // stdout has only what record() writes
    this.put(to, to.terminal ? showControls(text) : text, style);
  }
  /** With `--json`, one line on stdout; C1 controls escaped too, so a terminal shows it as is. */
  record(value: unknown): void {
    if (!this.json) return;
    const escape = (c: string) => `\\u00${c.charCodeAt(0).toString(16)}`;
    this.put(this.stdout, `${JSON.stringify(value ?? null).replace(/[\x7f-\x9f]/g, escape)}\n`);
  }
  /** Writes text or bytes as they are, after erasing the progress line and ending the other's. */
  put(to: Stream, data: string | Uint8Array, style?: number): void {
    if (data.length === 0 || to.gone) return;
    this.#erase();
    const other = to === this.stdout ? this.stderr : this.stdout;
    if (this.shared && other.open) this.#write(this.stderr, "\n"), other.open = false;
    const styled = (line: string) => `\x1b[${style}m${line}\x1b[0m`;
    const text = typeof data === "string" && to.colour && style;
    this.#write(to, text ? data.replace(/[^\n]+/g, styled) : data);
    to.open = typeof data === "string" ? !data.endsWith("\n") : data.at(-1) !== 10;
  }
  /** Shows `waiting for <label> … 3 s` on a terminal, erased before output; `undefined`: stop. */
  waitFor(label?: string): void {
    if (label === this.#waiting?.label) return;
    this.#erase();
    this.#waiting = label === undefined ? undefined : { label, since: Date.now(), drawn: false };
    this.#draw();
  }
  #draw(): void {
    const waiting = this.#waiting;
    // Never over an open line: a thought's, or the answer's on one screen.
    if (!waiting || !this.progress || this.stderr.open || (this.shared && this.stdout.open)) return;
    const spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"[Math.floor(Date.now() / 100) % 10];
    const seconds = Math.floor((Date.now() - waiting.since) / 1000);
    const label = showControls(waiting.label); // a tool's title is mm's text
    const line = fit(`${spinner} waiting for ${label}`, ` … ${seconds} s`); // the seconds in sight
    this.#write(this.stderr, `\r\x1b[K${line}\r`);
    waiting.drawn = true;
  }
  #erase(): void {
    if (this.#waiting?.drawn) this.#write(this.stderr, "\r\x1b[K"), this.#waiting.drawn = false;
  }
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

/** Characters a terminal shows two columns wide: East Asian scripts, most emoji. */
const WIDE =
  /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60\u{1f300}-\u{1faff}]/u;
/**
 * `text` and `tail` cut to one row of the terminal, `text` first, so the tail stays in sight; the
 * last column is left free: some terminals wrap there.
 */
function fit(text: string, tail = ""): string {
  const width = attempt(() => Deno.consoleSize().columns, 0) || 80;
  const columns = (char: string) => WIDE.test(char) ? 2 : 1;
  let used = [...tail].reduce((sum, char) => sum + columns(char), 0);
  if (used >= width) [text, tail, used] = [text + tail, "", 0]; // no room for the tail either
  return [...text].filter((char) => (used += columns(char)) < width).join("") + tail;
}
/**
 * Shows control characters other than newline and tab as symbols (`\x1b` as `␛`), so text on a
 * terminal cannot clear the screen, move the cursor, set the title or write the clipboard.
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
 * Splits a byte stream into lines ended by `\n` or `\r\n`. Invariant: each chunk's bytes are
 * scanned once and copied at most once, so a line spanning many chunks costs time linear in its
 * length; a line is decoded whole, so a UTF-8 character split across chunks decodes correctly.
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
  /** Lines up to `limit` bytes, not counting their end (32 MiB, as in the official SDK). */
  constructor(readonly limit: number = 32 * 1024 * 1024) {}
  /** Takes
 the next chunk and yields the lines it ends; throws {@linkcode LineTooLongError}. */
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
    if (bytes.length > 0) this.#parts.push(bytes); // kept, not copied: each read is a new chunk
    this.#length += bytes.length;
    // A last `\r` may be the start of the line's end, `\r\n`: it does not count.
    if (this.#length - (this.#parts.at(-1)?.at(-1) === 13 ? 1 : 0) > this.limit) {
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
 * Classifies one line: a request, a notification, a response, a blank line, or a bad frame and its
 * reply: `-32700` for a line that is not JSON, `-32600` for a batch or any other non-frame.
 */
export function parseFrame(line: string): Frame {
  if (line.trim() === "") return { kind: "blank" };
  const bad = (id: RpcId, code: number, message: string): Frame => ({
    kind: "bad",
    reply: { jsonrpc: "2.0", id, error: { code, message } },
  });
  const value: unknown = attempt(() => JSON.parse(line), undefined); // JSON is never undefined
  if (value === undefined) return bad(null, -32700, "Parse error");
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
/** The first bad frames are logged and answered; 1,000 in a row: mm is not talking JSON-RPC. */
const BAD_FRAMES_SHOWN = 10;
const BAD_FRAMES_IN_A_ROW = 1000;
/** Reading from mm pauses while more than this many characters of answers wait to be written. */
const MAX_UNWRITTEN = 1024 * 1024;
const CANCELLED = { error: { code: -32800, message: "Request cancelled" } };

/**
 * JSON-RPC over mm's pipes: mm's requests go to `answerRequest()`, its notifications to
 * `notified()`. A chunk's lines are handled synchronously (an async iterator per line measured
 * 0.61× the throughput), and a tick's frames go out in one write; reading pauses while answers
 * pile up unwritten. An answer that is a promise goes out when it settles, or as `-32800`.
 */
function connect(run: Run) {
  const [{ child, out }, trace] = [run, !!run.options.trace];
  const writer = child.stdin.getWriter();
  const pending = new Map<RpcId, { resolve(r: unknown): void; reject(e: RpcError): void }>();
  const running = new Map<RpcId, AbortController>(); // mm's requests being answered
  let [queued, unwritten, writing, nextId, heard] = [[] as string[], 0, Promise.resolve(), 0, 0];
  const bad = { total: 0, inARow: 0, first: "" };

  const send = (message: object) => { // one line, after the other frames of this tick
    const line = JSON.stringify(message);
    heard = performance.now(); // mm's silence counts from what it was sent last
    if (trace) out.note(`→ ${line}`);
    queued.push(line, "\n");
    unwritten += line.length + 1;
    if (queued.length > 2) return; // a write of this tick is scheduled already
    writing = writing.then(async () => {
      const text = queued.splice(0).join("");
      await writer.write(ENCODER.encode(text));
      unwritten -= text.length;
    }).catch(async (error) => {
      // An mm that exited is reported as such by the run; anything else is reported here.
      const exited = await Promise.race([child.status, delay(EXIT_GRACE_MS)]);
      if (!exited) run.fail(new ClientError(`cannot write to mm: ${errorText(error)}`));
    });
  };

  const failure = (error: unknown) => ({
    error: error instanceof RpcError
      ? { code: error.code, message: error.message }
      : { code: -32603, message: `Internal error: ${errorText(error)}` },
  });
  /** Answers a request at once, or when its promise settles, unless mm cancels it first. */
  const answer = (id: string | number, method: string, params: unknown) => {
    const controller = new AbortController();
    const settle = (reply: object) => {
      out.record({ request: { method, params }, answer: reply });
      send({ jsonrpc: "2.0", id, ...reply });
    };
    let result;
    try {
      result = answerRequest(run, method, params, controller.signal);
    } catch (error) {
      return settle(failure(error));
    }
    if (!(result instanceof Promise)) return settle({ result });
    // Running: `$/cancel_request` aborts it, answered `-32800` at once; the tool's late end is not.
    const finish = (reply: object) =>
      running.get(id) === controller && running.delete(id) && settle(reply);
    running.set(id, controller);
    controller.signal.addEventListener("abort", () => finish(CANCELLED));
    result.then((result) => finish({ result }), (error) => finish(failure(error)));
  };
  const receive = (line: string) => {
    heard = performance.now();
    if (trace && line.trim() !== "") out.note(`← ${line}`);
    const frame = parseFrame(line);
    if (frame.kind === "blank") return;
    if (frame.kind === "bad") return badLine(line, frame.reply);
    bad.inARow = 0;
    if (frame.kind === "request") return answer(frame.id, frame.method, frame.params);
    if (frame.kind === "notification" && frame.method === "$/cancel_request") {
      return running.get(field(frame.params, "requestId") as RpcId)?.abort();
    }
    if (frame.kind === "notification") return notified(run, frame.method, frame.params);
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
  const badLine = (line: string, reply: object) => {
    if (bad.inARow++ === 0) bad.first = line.slice(0, 80);
    if (++bad.total <= BAD_FRAMES_SHOWN) {
      out.note(`[client] bad frame from mm: ${line.slice(0, 80)}`);
      send(reply);
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
    run.fail(error instanceof ClientError ? error : new ClientError(message));
  });

  return {
    request(method: string, params: unknown): Promise<unknown> {
      const [id, answer] = [nextId++, Promise.withResolvers<unknown>()];
      pending.set(id, answer);
      send({ jsonrpc: "2.0", id, method, params });
      return answer.promise;
    },
    notify: (method: string, params: unknown) => send({ jsonrpc: "2.0", method, params }),
    close: () => writing.then(() => writer.close()).catch(() => {}),
    reading,
    /** How long mm has been silent, sent nothing and been sent nothing; 0 while a tool runs. */
    silentFor: () => running.size > 0 ? 0 : performance.now() - heard,
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
  -q, --quiet        stdout is the answer alone; no [client] lines on stderr
  --json             stdout is JSON lines: updates, requests and answers, the result
  --resume ID        continue an earlier session of mm
  --continue         continue the most recent session of this folder
  --sessions         list mm's sessions and exit
  --trace            print every JSON-RPC frame on stderr (→ sent, ← received)
  --verbose          also show thoughts, plans, usage and settings on stderr
  --timeout SECONDS  how long to wait for mm to start a session (default 30)
  --turn-timeout SEC cancel a turn when mm has sent nothing for SEC seconds (exit 124)
  -h, --help         show this help and exit
  --version          print the version and exit`;
/** The command line's options, as `node:util` `parseArgs` reads them. */
export const OPTIONS = {
  request: { type: "boolean" },
  agent: { type: "string" },
  mm: { type: "string" },
  interactive: { type: "boolean", short: "i" },
  quiet: { type: "boolean", short: "q" },
  json: { type: "boolean" },
  resume: { type: "string" },
  continue: { type: "boolean" },
  sessions: { type: "boolean" },
  trace: { type: "boolean" },
  verbose: { type: "boolean" },
  timeout: { type: "string", default: "30" },
  "turn-timeout": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;
/** A run's options: what `parseArgs` read, the first question (`-`: stdin), timeouts in seconds. */
export type Options = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>["values"] & {
  question?: string; // none: `--interactive` reads it
  seconds: number;
  turnSeconds?: number;
};
/**
 * Parses the command line, or throws a {@linkcode ClientError} (exit 2) naming what is wrong. A
 * first `--` is dropped: `deno task demo -- --request` passes it through.
 */
export function parseCommandLine(argv: readonly string[]): Options {
  const args = argv[0] === "--" ? argv.slice(1) : [...argv];
  const usage = (message: string) => new ClientError(message, 2, true);
  // Read loosely, then checked token by token: a value that starts with `-` (`--timeout -1`) is
  // a value, and each mistake is named precisely.
  const read = parseArgs({
    args,
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of read.tokens) {
    if (token.kind !== "option") continue;
    const { name, rawName, value } = token;
    const type = Object.hasOwn(OPTIONS, name) && OPTIONS[name as keyof typeof OPTIONS].type;
    if (!type) throw usage(`unknown option ${rawName}`);
    if (type === "boolean" && value !== undefined) throw usage(`${rawName} takes no value`);
    const missing = value === undefined || (!token.inlineValue && /^-(?![\d.])./.test(value));
    if (type === "string" && missing) throw usage(`${rawName} needs a value`);
  }
  const values = read.values as Omit<Options, "question" | "seconds">; // as checked above
  const seconds = (name: string, text: string) => {
    if (/^(\d+\.?\d*|\.\d+)$/.test(text) && Number(text) > 0) return Number(text);
    throw usage(`--${name} takes a number of seconds above 0, got ${JSON.stringify(text)}`);
  };
  const turn = values["turn-timeout"];
  const turnSeconds = turn === undefined ? undefined : seconds("turn-timeout", turn);
  const { json, quiet, resume, sessions, interactive } = values;
  if (json && quiet) throw usage("--json and --quiet both say what stdout is: pick one");
  if (values.continue && resume !== undefined) {
    throw usage("--continue and --resume both name the session: pick one");
  }
  const words = read.positionals.join(" ").trim();
  if (sessions && (words || resume || values.continue || interactive)) {
    throw usage("--sessions lists the sessions and exits: it takes no question or session to open");
  }
  if (values.mm === "") throw usage('--mm needs a path, got ""');
  if (resume === "") throw usage('--resume needs a session id, got ""');
  const question = words || (interactive ? undefined : DEFAULT_QUESTION);
  if (question === "-" && interactive) {
    throw usage("- reads the question from stdin, which --interactive reads too");
  }
  return { ...values, question, seconds: seconds("timeout", values.timeout), turnSeconds };
}

/**
 * Finds and reads the agent file, in the current folder, else next to `client.ts`; an empty file,
 * or one with only comments, has no keys, as mm reads it. Throws a `ClientError` naming the file.
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
    const [enabled, discovery] = fields(tools, "enabled", "discovery");
    return { path, config: { enabled: enabled !== false, discovery: String(discovery ?? "meta") } };
  }
  const hint = given ? "" : " (run from the project folder or pass --agent)";
  throw new ClientError(`agent file not found: ${name}${hint}`, 2);
}
/** What the client reads in an agent file: `acp.clientTools.enabled` and `.discovery`. */
export type AgentConfig = { enabled: boolean; discovery: string };
/** Warnings for an agent file that contradicts the run; the client goes on, to show mm's way. */
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
// Used only once the module has loaded, so written as constants.
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
/** `value` when it is an array, else an empty one. */
const list = (value: unknown): unknown[] => Array.isArray(value) ? value : [];
/** `value[key]` when `value` is an object, else `undefined`; `fields()`, of several keys. */
const field = (value: unknown, key: string): unknown => isObject(value) ? value[key] : undefined;
const fields = (value: unknown, ...keys: string[]) => keys.map((key) => field(value, key));
const errorText = (error: unknown) => error instanceof Error ? error.message : String(error);
/** Whether a permission is granted, asked without ever prompting. */
const granted = (descriptor: Deno.PermissionDescriptor) =>
  Deno.permissions.querySync(descriptor).state === "granted";
/** An environment variable; one the run may not read counts as unset. */
const readEnv = (name: string) =>
  granted({ name: "env", variable: name }) ? Deno.env.get(name) : undefined;
const delay = (ms: number) =>
  new Promise<undefined>((done) => setTimeout(() => done(undefined), ms));

/** What `run()` returns, or `otherwise` when it throws. */
function attempt<T, U>(run: () => T, otherwise: U): T | U {
  try {
    return run();
  } catch {
    return otherwise;
  }
}
/** A function that reads a value the first time it is called, and then remembers it. */
function once<T>(read: () => T): () => T {
  let value: { read: T } | undefined;
  return () => (value ??= { read: read() }).read;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
