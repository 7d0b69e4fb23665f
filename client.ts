#!/usr/bin/env -S deno run --no-prompt --allow-run --allow-read=. --allow-env=MM_BIN,NO_COLOR,TERM,DENO_DIR,ACP_CLIENT_MCP_TOKEN --allow-net=127.0.0.1 --allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime
// SPDX-License-Identifier: MIT
/**
 * Lends tools of your own to mini-me (`mm -acp`), an AI agent that speaks the Agent Client
 * Protocol: JSON-RPC 2.0, one JSON object per line on its stdin and stdout. The client offers its
 * tools through ACP extensibility (mini-me's acp-client-tools.md, "Découverte": how mm finds a
 * client's tools): in `initialize`'s `clientCapabilities._meta` (`meta` discovery), or in its
 * answer to mm's `_org.mini-me/tools/list` (`request`). mm's model calls each as `client_<name>`;
 * mm then sends the client a request whose method is the tool's `method`.
 *
 * A whole tool, lent for one question (mm reads `agent.yaml` in the current folder):
 *
 * ```ts ignore
 * import { lend, tool, toolText } from "./client.ts";
 *
 * const dice = tool({
 *   name: "dice",
 *   description: "Rolls a die with as many sides as asked.",
 *   method: "_example/dice",
 *   inputSchema: { type: "object", properties: { sides: { type: "integer" } } },
 *   call: ({ sides = 6 }) => toolText(`rolled ${1 + Math.floor(Math.random() * sides)}`),
 * });
 * const { turns } = await lend({ tools: [dice], questions: "Roll a die for me." });
 * console.log(turns[0].text);
 * ```
 *
 * The file reads in the order of a session. First the lesson: what mini-me's Node.js demo
 * (`client.js`) does, in the order of the exchange. Then what makes it robust, each piece with the
 * failure it guards against. Below the line that says the protocol ends, the terminal program,
 * whose `main()` is `lend()`'s first user and whose `TOOLS` lends `host_info`. Importing the file
 * runs nothing.
 *
 * @module
 */

/** The client's version, sent as `clientInfo.version` and printed by `--version`. */
export const VERSION = "0.5.0";

// ═══ The lesson: lend tools to mm, in the order of a session ═══════════════════════════════════
// Start mm, speak JSON-RPC on its stdin and stdout, `initialize` with the tools, open a session,
// ask, answer mm's requests — the list, a call, a permission, `-32601` for the rest — and end.
// A session, as the wire has it (→ the client writes, ← mm; ids are each side's own; "…" cut):
//   → {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
//        "clientCapabilities":{…,"_meta":{"org.mini-me/tools":[{"name":"host_info",…}]}}}}
//   ← {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{…}}}
//   → {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/me","mcpServers":[]}}
//   ← {"jsonrpc":"2.0","id":1,"result":{"sessionId":"20261110-224507-1f3a9c2e"}}
//   → {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"2026…",
//        "prompt":[{"type":"text","text":"Which OS?"}]}}
//   ← {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"2026…","update":
//        {"sessionUpdate":"tool_call","toolCallId":"call_1","title":"client: host_info",…}}}
//   ← {"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"2026…",
//        "toolCall":{"toolCallId":"call_1","title":"client: host_info","kind":"other"},
//        "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},…]}}
//   → {"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}
//   ← {"jsonrpc":"2.0","id":1,"method":"_demo.minime/host_info","params":{"topic":"os",
//        "_meta":{"org.mini-me/sessionId":"2026…"}}}
//   → {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Linux 6.1 (…)"}]}}
//   ← {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"2026…","update":
//        {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"It runs Linux."}}}}
//   ← {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}
//   → {"jsonrpc":"2.0","id":3,"method":"session/close","params":{"sessionId":"2026…"}}
// In request discovery `initialize` says `"org.mini-me/tools":true`, and mm asks for the list
// before it answers `session/new` (its methods start with `_`, ACP's mark of an extension; keys of
// `_meta` do not):
//   ← {"jsonrpc":"2.0","id":0,"method":"_org.mini-me/tools/list","params":{"sessionId":"2026…",…}}
//   → {"jsonrpc":"2.0","id":0,"result":{"tools":[{"name":"host_info",…}]}}
// The model calls the tool as `client_host_info`; mm titles the call `client: host_info`. A call
// the tool fails is still a result, one the model reads: `{"content":[…],"isError":true}`. A
// request nobody lends an answer to: `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,…}}`. A
// turn is cancelled with a notification; mm then cancels a call it no longer wants, answered so:
//   → {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"2026…"}}
//   ← {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}
//   → {"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}
// Where the robust client does more, a line here calls a function of the next section whose name
// says what it does: a first reading can skip it.

/** MCP's hints about what a tool does, for an agent that decides how to run it. */
export type ToolAnnotations = {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
};
/** A tool's answer, MCP's `tools/call` result (acp-client-tools.md, "Réponse": the answer). */
export type ToolResult = { content: { type: "text"; text: string }[]; isError?: boolean };
/**
 * A tool: its description as mm reads it (acp-client-tools.md, "Description d'un outil": a tool's
 * description), and
 * the `call` that answers it. `S`, its schema, types `call`'s arguments (see {@linkcode ArgsOf}).
 */
export interface Tool<S extends InputSchema = InputSchema> {
  /** Unique in the list; the model sees `client_<name>`. */
  readonly name: string;
  /** What the model reads to decide when to call the tool. */
  readonly description: string;
  /** The ACP extension method mm sends for a call: it starts with `_`. */
  readonly method: string;
  /** The JSON Schema of the arguments, which are checked against it before `call` runs. */
  readonly inputSchema: S;
  /** MCP's hints to an agent that takes the tool from the client's MCP server (`readOnlyHint`…). */
  readonly annotations?: ToolAnnotations;
  /** Answers a call, now or in a promise; `signal` aborts if the call is cancelled. A throw is an error result. */
  call(args: ArgsOf<S>, signal: AbortSignal): ToolResult | Promise<ToolResult>;
}
/**
 * A tool whose `call` has its arguments typed by its `inputSchema`, as written (TypeScript alone:
 * at run time it returns what it is given): a `required`
 * property is there, another may be `undefined`, an `enum` is the union of its values. The client
 * checks the arguments against the schema before `call` runs: that makes the type true. Write the
 * schema in the call (or `as const`): its literal values are what type the arguments.
 */
export function tool<const S extends InputSchema>(definition: Tool<S>): Tool;
export function tool(definition: Tool): Tool {
  return definition;
}
/** A text result; with `isError` true, the model reads it as `[client tool error: <text>]`. */
export function toolText(text: string, isError?: boolean): ToolResult {
  if (isError) return { content: [{ type: "text", text }], isError: true };
  return { content: [{ type: "text", text }] };
}

/**
 * Starts the agent — mm, `mm -acp -agent agent.yaml` unless told otherwise — with its stdin and
 * stdout for JSON-RPC and its stderr a log, in its own process group.
 */
function startAgent(
  { command, args, cwd }: { command: string; args: string[]; cwd?: string },
  name: string,
): Deno.ChildProcess {
  const refused = `cannot start ${name} (${command}): this run may not start it (add --allow-run)`;
  if (!granted({ name: "run", command })) throw new ClientError(refused, 127);
  const pipes = { stdin: "piped", stdout: "piped", stderr: "piped" } as const;
  try {
    // Its own group: a Ctrl-C typed in the terminal reaches the client alone, which cancels the
    // turn the ACP way; and the client can end the group, helpers and all.
    return new Deno.Command(command, { args, cwd, detached: true, ...pipes }).spawn();
  } catch (error) {
    let reason = errorText(error);
    if (error instanceof Deno.errors.NotFound) reason = "not found";
    if (error instanceof Deno.errors.PermissionDenied) reason = "not executable";
    throw new ClientError(`cannot start ${name} (${command}): ${reason}`, 127, { cause: error });
  }
}

/** A JSON-RPC error, to answer a request with, or received as an answer. */
export class RpcError extends Error {
  /** `code`: JSON-RPC's, such as `-32601` (Method not found); `data`: the error's, if any. */
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
    this.name = "RpcError";
  }
}
/** A JSON-RPC id. */
export type RpcId = string | number | null;
/** A JSON-RPC error object: `data`, if any, says more. */
export type ErrorObject = { code: number; message: string; data?: unknown };
/** What one line turned out to be. */
export type Frame =
  | { kind: "request"; id: string | number; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | { kind: "response"; id: RpcId; result?: unknown; error?: ErrorObject }
  | { kind: "blank" }
  | { kind: "bad"; reply: { jsonrpc: "2.0"; id: RpcId; error: ErrorObject } };
/**
 * Classifies a line as JSON-RPC 2.0 does: a request has a `method` and an `id`, a notification a
 * `method` alone, a response an `id` and a `result` or an `error`. A bad one is answered `-32700`
 * if it is not JSON, else `-32600` (a batch too).
 */
export function parseFrame(line: string): Frame {
  if (line.trim() === "") return { kind: "blank" };
  const bad = (id: RpcId, code: number, message: string): Frame => {
    return { kind: "bad", reply: { jsonrpc: "2.0", id, error: { code, message } } };
  };
  const value: unknown = attempt(() => JSON.parse(line), undefined); // JSON is never undefined
  if (value === undefined) return bad(null, -32700, "Parse error");
  if (!isObject(value)) return bad(null, -32600, "Invalid Request");
  const { id, method, params, result, error } = value;
  const validId = typeof id === "string" || typeof id === "number";
  const hasMethod = typeof method === "string";
  if (hasMethod && validId) return { kind: "request", id, method, params };
  if (hasMethod && !("id" in value)) return { kind: "notification", method, params };
  if (method === undefined && (validId || id === null) && ("result" in value || isObject(error))) {
    return { kind: "response", id, result, error: error as ErrorObject };
  }
  return bad(validId ? id : null, -32600, "Invalid Request");
}

/**
 * What a connection calls: `request` answers one of the peer's (a result, a promise of it, or a
 * thrown `RpcError`; `signal` aborts if the request is cancelled); `view` sees each frame and
 * answer; `fail`: the connection cannot go on (`writing`: a write failed, as once mm has exited).
 */
type Handlers = {
  request(method: string, params: unknown, signal: AbortSignal): unknown;
  notification(method: string, params: unknown): void;
  /** How messages name the peer: `mm`, or the agent's name. */
  peer(): string;
  view: Pick<View, "frame" | "answered" | "log" | "warn">;
  fail(error: ClientError, writing: boolean): void;
};
/**
 * JSON-RPC 2.0 over a pair of byte streams, one JSON object per line. Read in the order a line
 * takes: read, received, answered (a request of the peer's), written. The client's own requests
 * are matched to their answers by id; the peer's are answered in any order, each once.
 */
class Connection {
  /** Settles when the stream from the peer has ended and each frame on it was handled. */
  readonly reading: Promise<void>;
  readonly #handlers: Handlers;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #nextId = 0;
  readonly #pending = new Map<RpcId, PromiseWithResolvers<unknown>>(); // the client's requests
  readonly #running = new Map<RpcId, AbortController>(); // the peer's, being answered
  #writing = Promise.resolve(); // the writes, one after another
  #queued: string[] = []; // frames not written yet: a tick's go out in one write
  #unwritten = 0; // characters of frames not written yet
  #lastFrameAt = 0; // when a frame last crossed, either way: the peer's silence counts from it
  readonly #bad: BadFrames;
  constructor(stream: ReadableWritablePair<Uint8Array, Uint8Array>, handlers: Handlers) {
    this.#handlers = handlers;
    this.#bad = new BadFrames(handlers.peer);
    this.#writer = stream.writable.getWriter();
    this.reading = this.#read(stream.readable).catch((error) =>
      handlers.fail(readError(error, handlers.peer()), false)
    );
  }
  /**
   * Reads lines, however the chunks split them — at `\n` or `\r\n`, a UTF-8 character split
   * between chunks decoded whole, 32 MiB at most (`LineReader`) — and handles each as it comes.
   */
  async #read(readable: ReadableStream<Uint8Array>): Promise<void> {
    const reader = new LineReader();
    for await (const chunk of readable) {
      for (const line of reader.push(chunk)) this.#receive(line);
      // Backpressure: a peer that stops reading must not pile answers up in the client's memory.
      if (this.#unwritten > MAX_UNWRITTEN) await this.#writing;
    }
    const last = reader.flush();
    if (last !== undefined) this.#receive(last);
  }
  /** One line: a request to answer, a notification, or the answer to one of the client's. */
  #receive(line: string): void {
    this.#lastFrameAt = performance.now();
    const frame = parseFrame(line);
    if (frame.kind === "blank") return;
    this.#handlers.view.frame?.(line, false); // false: received
    // A bad line is answered, and logged; a flood of them throws, and ends the connection.
    if (frame.kind === "bad") return this.#badLine(line, frame.reply);
    this.#bad.inARow = 0;
    if (frame.kind === "request") return this.#answer(frame.id, frame.method, frame.params);
    // ACP's `$/cancel_request`: the peer no longer wants the answer to one of its requests.
    if (frame.kind === "notification" && frame.method === "$/cancel_request") {
      return this.#running.get(field(frame.params, "requestId") as RpcId)?.abort(CANCELLED_BY_PEER);
    }
    if (frame.kind === "notification") {
      return this.#handlers.notification(frame.method, frame.params);
    }
    const waiting = this.#pending.get(frame.id);
    if (!waiting) {
      return this.#handlers.view.log?.(
        `answer to no pending request (id ${JSON.stringify(frame.id)}) ignored`,
      );
    }
    this.#pending.delete(frame.id);
    if (!frame.error) return waiting.resolve(frame.result);
    const { code, message, data } = frame.error;
    waiting.reject(new RpcError(Number(code), typeof message === "string" ? message : "?", data));
  }
  /**
   * Answers a request of the peer's with what its handler returns: at once, or when its promise
   * settles. A throw is a JSON-RPC error: an `RpcError`'s own code, else `-32603` (`errorReply`).
   * While it runs, `$/cancel_request` aborts its signal and answers `-32800` (Request cancelled)
   * at once; its late end is not sent.
   */
  #answer(id: string | number, method: string, params: unknown): void {
    const controller = new AbortController();
    const settle = (reply: object) => {
      this.#handlers.view.answered?.(method, params, reply);
      this.#send({ jsonrpc: "2.0", id, ...reply });
    };
    let result;
    try {
      result = this.#handlers.request(method, params, controller.signal);
    } catch (error) {
      return settle(errorReply(error));
    }
    if (!(result instanceof Promise)) return settle({ result: result ?? null }); // never no result
    const finish = (reply: object) => {
      if (this.#running.get(id) !== controller) return; // answered already, or abandoned
      this.#running.delete(id);
      settle(reply);
    };
    this.#running.set(id, controller);
    // Cancelled by the peer: `-32800` now. (Abandoned, it is no longer running: nothing is sent.)
    controller.signal.addEventListener("abort", () => finish(CANCELLED_REPLY));
    const answered = (value: unknown) => finish({ result: value ?? null });
    result.then(answered, (error) => finish(errorReply(error)));
  }
  /** Writes one frame: its JSON, and a line end. */
  #send(message: object): void {
    const line = `${JSON.stringify(message)}\n`;
    this.#lastFrameAt = performance.now();
    this.#handlers.view.frame?.(line.slice(0, -1), true); // true: sent
    this.#queued.push(line);
    this.#unwritten += line.length;
    // Frames queued while a write is under way go out together in the next one, in order.
    if (this.#queued.length > 1) return; // that write is scheduled already
    this.#writing = this.#writing.then(() => this.#writeQueued());
  }
  async #writeQueued(): Promise<void> {
    const text = this.#queued.splice(0).join("");
    try {
      await this.#writer.write(ENCODER.encode(text));
      this.#unwritten -= text.length;
    } catch (error) {
      const reason = `cannot write to ${this.#handlers.peer()}: ${errorText(error)}`;
      this.#handlers.fail(new ClientError(reason), true);
    }
  }
  /** Sends a request; the promise settles with the answer, or rejects with its `RpcError`. */
  request(method: string, params: unknown): Promise<unknown> {
    const id = this.#nextId++;
    const reply = Promise.withResolvers<unknown>();
    this.#pending.set(id, reply);
    this.#send({ jsonrpc: "2.0", id, method, params });
    return reply.promise;
  }
  /** Sends a notification: no id, no answer. */
  notify(method: string, params: unknown): void {
    this.#send({ jsonrpc: "2.0", method, params });
  }
  /** Closes the stream to the peer, once what is queued is written. */
  close(): Promise<void> {
    return this.#writing.then(() => this.#writer.close()).catch(() => {});
  }
  /** A bad line from the peer: answered and logged, the first few; a flood ends the connection. */
  #badLine(line: string, reply: object): void {
    if (this.#bad.count(line)) {
      this.#handlers.view.warn?.(`bad frame from ${this.#handlers.peer()}: ${line.slice(0, 80)}`);
      this.#send(reply);
    }
  }
  /** Aborts every request of the peer's still running, with `reason`, and answers none of them. */
  abandon(reason: unknown): void {
    const running = [...this.#running.values()];
    this.#running.clear();
    for (const controller of running) controller.abort(reason);
  }
  /** How long the peer has been silent: sent nothing and been sent nothing; 0 while it waits for us. */
  silentFor(): number {
    return this.#running.size > 0 ? 0 : performance.now() - this.#lastFrameAt;
  }
  /** How many bad frames were counted but not logged. */
  unlogged(): number {
    return this.#bad.unlogged();
  }
}
/**
 * Lends tools to mm (or, with `agent`, to another ACP agent, through the client's own MCP server)
 * for one session: starts it in its own process group, `initialize`, opens a session, asks each
 * question in a turn while it answers the agent's requests, closes the session and ends the agent,
 * group and all, whatever the way out; a call still running is aborted before it settles.
 * Resolves to what happened; rejects with a {@linkcode ClientError}, the signal's reason (the agent
 * was killed, if it had to be), or what the asker or a view threw.
 */
export async function lend(options: LendOptions): Promise<Lent> {
  options.signal?.throwIfAborted();
  const session = new Session(options); // mm started, and the connection to it open
  let lent: Lent;
  try {
    lent = await session.converse();
  } catch (error) {
    await session.end(false); // at once: no session/close, mm and its group killed
    throw error;
  }
  await session.end(true);
  options.signal?.throwIfAborted(); // the turn cancelled and the session ended, as asked
  return lent;
}

/** One session with mm: the process, the connection to it, where the exchange stands, the turn. */
class Session {
  readonly tools: readonly Tool[];
  readonly view: View;
  readonly cwd: string; // the session's folder, absolute as ACP wants it
  /** mm takes the tools as its client tools; any other agent, from the client's MCP server. */
  readonly road: "mm" | "mcp";
  /** How messages name the agent: `mm`, or as its `initialize` answer names it. */
  name: string;
  readonly child: Deno.ChildProcess;
  readonly connection: Connection;
  mcp?: McpServer; // the client's MCP server, for an agent that is not mm
  /** Rejects when the session cannot go on (mm exited, a view threw): every wait races it. */
  readonly failed: Promise<never>;
  fail!: (error: unknown) => void;
  stderr: Promise<void> = Promise.resolve(); // mm's log, read to its end
  nextStep = "answering initialize"; // what mm has yet to do: said if it exits first
  capabilities: unknown; // what mm's `initialize` answer says it can do
  sessionId?: string;
  listed = false; // mm asked for the list (request discovery)
  replaying = false; // mm replays the past of the session it loads
  turn?: TurnState;
  asked: Promise<unknown> = Promise.resolve(); // the permissions put to the asker, one by one
  constructor(readonly options: LendOptions) {
    this.tools = lendable(options.tools); // a broken tool stops the run before mm starts
    this.failed = new Promise<never>((_, reject) => this.fail = reject);
    this.failed.catch(() => {}); // read where it matters, by each wait
    this.view = guarded(options.view ?? {}, (error) => this.fail(error));
    const agent = agentToStart(options); // mm, unless `agent` names another
    this.road = options.agent ? "mcp" : "mm";
    this.name = options.agent ? agentName(agent.command) : "mm";
    this.view.agent?.(this.name);
    this.cwd = absolute(agent.cwd);
    this.child = startAgent(agent, this.name);
    const { stdout, stdin, status } = this.child;
    this.connection = new Connection({ readable: stdout, writable: stdin }, {
      request: (method, params, signal) => this.answer(method, params, signal),
      notification: (method, params) => this.notified(method, params),
      peer: () => this.name,
      view: this.view, // sees the frames, and the answers to mm's requests
      // A write fails once mm has exited: then its exit is what ends the session.
      fail: async (error, writing) => {
        if (!writing || !await within(EXIT_GRACE_MS, status)) this.fail(error);
      },
    });
    watchMm(this); // its log, its exit, the caller's signal
  }

  /** `initialize`, the session, then one turn per question. */
  async converse(): Promise<Lent> {
    const seconds = this.options.timeout ?? 30;
    const discovery = this.road === "mm" ? (this.options.discovery ?? "meta") : "mcp";
    const init = await this.request("initialize", initializeParams(discovery, this.tools), seconds);
    const version = JSON.stringify(field(init, "protocolVersion")); // as JSON: "1" is not 1
    const mismatch = `${this.name} speaks ACP protocol version ${version}; this client speaks 1`;
    if (version !== "1") throw new ClientError(mismatch);
    this.capabilities = field(init, "agentCapabilities");
    if (this.road === "mcp") this.mcp = serveTools(this, field(init, "agentInfo")); // its own section
    const sessionId = await this.open(seconds);
    if (sessionId === undefined) return { turns: [] }; // none of mm's sessions was chosen
    this.nextStep = "the next question";
    this.view.opened?.(sessionId);
    await this.mcp?.toolsListed(); // another agent, that connects late, is given a few seconds
    const turns: TurnResult[] = [];
    const questions = iterate(this.options.questions); // a text is one question
    while (!this.options.signal?.aborted) {
      const next = await Promise.race([questions.next(), this.failed]);
      if (next.done) break;
      turns.push(await this.prompt(sessionId, next.value));
    }
    return { sessionId, turns };
  }

  /**
   * Opens the session: `session/new`, or continues one of mm's (`resumeSession()`). `mcpServers`
   * names the client's own MCP server to an agent that is not mm; mm takes none.
   */
  async open(seconds: number): Promise<string | undefined> {
    if (this.options.resume !== undefined) return await resumeSession(this, seconds);
    const params = { cwd: this.cwd, mcpServers: this.mcpServers() };
    const session = await this.request("session/new", params, seconds);
    this.sessionId = String(field(session, "sessionId"));
    this.view.log?.(`discovery: ${this.discovery()}, session ${this.sessionId}`);
    checkListed(this); // request discovery: mm asks for the list before it answers, or is warned of
    return this.sessionId;
  }
  /** The MCP servers the agent is given: the client's own, for an agent that is not mm. */
  mcpServers(): McpServerEntry[] {
    return this.mcp ? [this.mcp.entry] : [];
  }
  /** How the tools reach the agent: `meta` or `request` for mm; `MCP (http)` or `MCP (stdio)`. */
  discovery(): string {
    if (this.mcp) return `MCP (${this.mcp.transport})`;
    return this.options.discovery ?? "meta";
  }

  /**
   * One prompt turn: the question, mm's updates and requests as they come, its stop reason. The
   * answer's text is that of mm's `agent_message_chunk` updates; `turn.cancel()` (Ctrl-C, the
   * caller's signal, a silence too long: seconds of `turnTimeout`) sends `session/cancel`, and mm
   * ends the turn `cancelled`.
   */
  async prompt(sessionId: string, question: string): Promise<TurnResult> {
    const turn = new TurnState(this, sessionId, question);
    this.turn = turn;
    this.nextStep = "the turn ended";
    this.view.turnStarted?.(turn);
    const stopWatching = watchSilence(turn, this.connection, this.options.turnTimeout);
    const params = { sessionId, prompt: [{ type: "text", text: question }] };
    const answer = await this.request("session/prompt", params).finally(() => {
      stopWatching();
      turn.end();
    });
    this.turn = undefined;
    this.nextStep = "the next question";
    const { text, cancelled, refused } = turn;
    const stopReason = String(field(answer, "stopReason"));
    const result = { question, stopReason, text, cancelled, refused };
    this.view.turnEnded?.(result);
    if (turn.timedOut) throw turn.reason; // the silence ends the session
    return result;
  }

  /**
   * Sends a request and waits for its answer, unless the session fails or time runs out first
   * (with `Infinity`, as for the prompt, no timer is set).
   */
  async request(method: string, params: object, seconds = Infinity): Promise<unknown> {
    if (this.nextStep.startsWith("answering")) this.nextStep = `answering ${method}`;
    const timer = Promise.withResolvers<never>();
    const late = new ClientError(`${this.name} did not answer ${method} within ${seconds} s`);
    const stopTimer = after(seconds * 1000, () => timer.reject(late));
    try {
      return await Promise.race([
        this.connection.request(method, params),
        this.failed,
        timer.promise,
      ]);
    } catch (error) {
      if (error instanceof RpcError) {
        throw new ClientError(`${this.name} refused ${method}: ${refusal(error)}`);
      }
      throw error;
    } finally {
      stopTimer();
    }
  }

  /** A `session/update` is shown, and heard by its turn; other notifications are not ours. */
  notified(method: string, params: unknown): void {
    if (method !== "session/update") return;
    if (!this.replaying) this.turn?.heard(field(params, "update"));
    this.view.update?.(params, this.replaying);
  }

  /**
   * Answers a request of mm's: a call of a lent tool, found by its `method` (acp-client-tools.md,
   * "Appel d'un outil": a call of a tool); the list ("Mode request"); a permission. Anything else — `fs/*`,
   * `terminal/*`, another extension — is not lent: `-32601`, as JSON-RPC says.
   */
  answer(method: string, params: unknown, signal: AbortSignal): unknown {
    const called = this.tools.find((lent) => lent.method === method);
    if (called && this.road === "mm") {
      const { args, sessionId } = readToolCall(params);
      return this.callTool(called, args, sessionId, signal);
    }
    if (method === "_org.mini-me/tools/list" && this.road === "mm") return this.toolList(params);
    if (method === "session/request_permission") return this.answerPermission(params, signal);
    throw new RpcError(-32601, "Method not found");
  }

  /** The list, in request discovery: every tool, for whichever session asks. */
  toolList(params: unknown): { tools: Omit<Tool, "call" | "annotations">[] } {
    this.listed = true;
    this.view.log?.(`list requested for session ${field(params, "sessionId") ?? "?"}`);
    return { tools: describeTools(this.tools) };
  }

  /**
   * A call: the model's arguments are at the top level of `params`, mm's session in its `_meta`
   * ("Requête": the request). Checked against the schema, they go to the tool; what it returns, now or in a
   * promise, is the answer: a `result` of MCP's shape, `{content, isError?}`. A wrong argument, a
   * throw, or a value that is not a result is such a result too, with `isError` — an answer the
   * model can act on (`toolFailure()`), never a JSON-RPC error, never a crash of the client. (The
   * client's MCP server, for other agents, calls a tool the same way.)
   */
  callTool(
    called: Tool,
    args: unknown,
    sessionId: string,
    signal: AbortSignal,
  ): ToolResult | Promise<ToolResult> {
    this.view.log?.(`${called.name} ${JSON.stringify(args)} (session ${sessionId})`);
    sayWhenCancelled(called, signal, this);
    if (signal.aborted) return toolFailure(this.view, signal, `${called.name} was cancelled`);
    const given = isObject(args) ? args : {};
    const mismatch = checkArguments(called, given);
    if (mismatch) return toolFailure(this.view, signal, mismatch);
    const threw = (error: unknown) =>
      toolFailure(this.view, signal, `${called.name} failed: ${errorText(error)}`);
    try {
      const result = called.call(given, signal);
      // A synchronous tool is answered at once; a promise, when it settles.
      if (result instanceof Promise) {
        return result.then((value) => checkedResult(called, value, this.view, signal), threw);
      }
      return checkedResult(called, result, this.view, signal);
    } catch (error) {
      return threw(error);
    }
  }

  /**
   * A permission (acp-client-tools.md, "Avant la requête": before the request). Its params: `{sessionId, toolCall:
   * {toolCallId, title, kind, rawInput, …}, options: [{optionId, name, kind}]}`, the call as mm
   * shows it (`permissionRequest()` adds what an earlier `tool_call` of that id said). {@linkcode
   * decide} says allow, refuse or ask; the answer is `{outcome}`, one of mm's own options
   * ({@linkcode choosePermission}). "ask" goes to the asker, one question at a time
   * (`askInTurn()`); with none, or nothing mm offers to allow, it is refused. Once the turn is
   * cancelled, every answer is `cancelled`.
   */
  answerPermission(params: unknown, signal: AbortSignal): unknown {
    const request = permissionRequest(params, this.turn);
    this.view.permissionRequested?.(request);
    if (this.turn?.cancelled) return this.answered(request, CANCELLED, TURN_CANCELLED);
    const decision = (this.options.policy ?? decide)(request, this.tools);
    const { options } = request;
    if (
      decision === "ask" && this.options.asker && allows(options, choosePermission(options, true))
    ) {
      return askInTurn(this, this.options.asker, request, signal);
    }
    return this.answered(request, choosePermission(options, decision === "allow"));
  }

  /** Logs the answer to a permission and tells the view; returns what mm is sent. */
  answered(request: PermissionRequest, outcome: Outcome, how = ""): { outcome: Outcome } {
    const allowed = allows(request.options, outcome);
    const said = allowed ? "allowed" : "refused";
    this.view.log?.(`permission for ${callName(request)}: ${said}${how}`);
    if (!allowed && this.turn) this.turn.refused = true;
    this.view.permissionAnswered?.(request, allowed);
    return { outcome };
  }

  /**
   * The end: every call still running aborted (the session owns them); `session/close` if mm
   * advertises `sessionCapabilities.close` (`closeSession()`); mm's stdin closed, and time to exit,
   * all within one grace; then its process group killed, with whatever mm left running. After a
   * failure, at once: no `session/close`, no grace.
   */
  async end(graceful: boolean): Promise<void> {
    const ended = new ClientError("the session ended");
    this.connection.abandon(ended);
    this.mcp?.abandon(ended);
    this.turn?.end();
    const deadline = performance.now() + EXIT_GRACE_MS;
    if (graceful) await closeSession(this);
    const exiting = this.connection.close().then(() => this.child.status);
    const exited = graceful && await within(deadline - performance.now(), exiting);
    if (graceful && !exited) {
      const late = `${this.name} did not exit within ${EXIT_GRACE_MS / 1000} s of the end`;
      this.view.log?.(`${late}; killing it`);
    }
    await killGroup(this.child);
    await this.mcp?.stop(); // nothing of the session listens any more
    await within(500, this.stderr);
    const unlogged = this.connection.unlogged();
    if (unlogged) this.view.warn?.(`${unlogged} more bad frames from ${this.name} were not logged`);
  }
}

/**
 * The `initialize` params: the tools (`meta`), `true` (`request`; "Découverte"), or none (`mcp`:
 * another agent takes them from the client's MCP server).
 * @ignore The lesson's, exported for its tests and the benchmark's reference client.
 */
export function initializeParams(discovery: string, tools: readonly Tool[]): {
  protocolVersion: 1;
  clientInfo: { name: string; version: string };
  clientCapabilities: Record<string, unknown>;
} {
  const clientInfo = { name: "host-info-client", version: VERSION };
  // Capabilities are a contract: no file system and no terminal, which this client lacks.
  const fs = { readTextFile: false, writeTextFile: false };
  const _meta = { "org.mini-me/tools": discovery === "request" ? true : describeTools(tools) };
  if (discovery === "mcp") {
    return { protocolVersion: 1, clientInfo, clientCapabilities: { fs, terminal: false } };
  }
  return { protocolVersion: 1, clientInfo, clientCapabilities: { fs, terminal: false, _meta } };
}
/**
 * The tools as mm reads them: in `initialize`, or in the answer to the list request.
 * @ignore The lesson's, exported for its tests and the benchmark's reference client.
 */
export function describeTools(tools: readonly Tool[]): Omit<Tool, "call" | "annotations">[] {
  return tools.map(({ call: _, annotations: _hints, ...description }) => description);
}
/**
 * A call's arguments (`params` but `_meta`) and its session (`_meta`'s, or `?`): "Requête".
 * @ignore The lesson's, exported for its tests and the benchmark's reference client.
 */
export function readToolCall(params: unknown): { args: unknown; sessionId: string } {
  if (!isObject(params)) return { args: params ?? {}, sessionId: "?" };
  const { _meta, ...args } = params;
  const sessionId = field(_meta, "org.mini-me/sessionId");
  return { args, sessionId: typeof sessionId === "string" ? sessionId : "?" };
}

/** A `session/request_permission`: the call's title and kind, the call as described, mm's options. */
export type PermissionRequest = {
  title?: string;
  kind?: string;
  toolCall: Record<string, unknown>;
  /** The call as the `tool_call` updates of the same id described it before the request, if any. */
  announced?: Record<string, unknown>;
  options: Record<string, unknown>[];
};
/**
 * What the client does about a permission: allow it, refuse it, or ask the person (and refuse
 * where nobody can be asked). The default policy never refuses outright; a policy of yours may.
 */
export type Decision = "allow" | "refuse" | "ask";
/**
 * The permission policy, the one place that decides what to answer: a call of a tool the client
 * lends is allowed, anything else is put to the person. A call is one of ours only as the agent
 * itself names it, never by words the model chose: mm titles a call of a client tool
 * `client: <name>` with the kind `other` ("Avant la requête": mm's words, not the model's);
 * another agent, for a tool of the client's MCP server, names it in fields its adapter sets
 * (`ownMcpTool()`). And none that carries a `command`.
 */
export function decide(request: PermissionRequest, tools: readonly Tool[]): Decision {
  const { title, kind } = request;
  const mm = tools.find((lent) => title === `client: ${lent.name}` && kind === "other");
  const ours = mm ?? ownMcpTool(request, tools);
  if (ours && !carriesCommand(request)) return "allow";
  return "ask";
}
/** What a permission is answered with: `{ outcome }`, one of these. */
export type Outcome = { outcome: "cancelled" } | { outcome: "selected"; optionId: string };
/**
 * Picks among mm's options: `allow_once`, else `allow_always` to allow; `reject_once`, else
 * `reject_always` to refuse; else `cancelled`. Never an `optionId` mm did not offer.
 */
export function choosePermission(options: unknown, allow: boolean): Outcome {
  const offered = list(options).filter(isObject);
  const kinds = ["reject_once", "reject_always"];
  if (allow) kinds.unshift("allow_once", "allow_always");
  for (const kind of kinds) {
    const option = offered.find((o) => o.kind === kind && typeof o.optionId === "string");
    if (option) return { outcome: "selected", optionId: String(option.optionId) };
  }
  return { outcome: "cancelled" };
}

// ═══ What lend() takes and gives, and the types that type a tool's arguments ═══════════════════

/** What {@linkcode lend} runs: which mm, the tools, the questions; who shows it and who decides. */
export type LendOptions = {
  /**
   * The mm to start (default `mm -acp -agent agent.yaml`), in the session's folder `cwd` (or here),
   * from which a relative `command` is found too.
   */
  mm?: { command?: string; args?: string[]; cwd?: string };
  /**
   * Another ACP agent than mm, started as given (`command`, `args`, in `cwd` or here): it is lent
   * the tools through the client's own MCP server (needs `--allow-net=127.0.0.1`), over HTTP if
   * it takes it, else over stdio through a relay: this file run with `--mcp-relay` (in a compiled
   * program of yours, call {@linkcode relayMcp} when it is started so). Not with `mm`.
   */
  agent?: { command: string; args?: string[]; cwd?: string };
  /** The tools to lend: `tool({ … })` each. */
  tools: readonly Tool[];
  /** How: in `initialize` (`meta`, the default), or when mm asks (`request`): as the agent file says. */
  discovery?: "meta" | "request";
  /** One turn each, in one session: a text, a list, or an async iterable (read as it comes). */
  questions: string | Iterable<string> | AsyncIterable<string>;
  /** What to show (none: nothing). */
  view?: View;
  /** Who answers when the policy says "ask" (none: refused). */
  asker?: Asker;
  /** The permission policy: {@linkcode decide}, unless you give one of your own. */
  policy?: (request: PermissionRequest, tools: readonly Tool[]) => Decision;
  /**
   * Aborted: the turn under way is cancelled, then the lending ends, rejecting with its reason
   * (the session and the turns so far are the view's: `opened`, `turnEnded`).
   */
  signal?: AbortSignal;
  /** Seconds mm has to answer `initialize` and to open the session (default 30). */
  timeout?: number;
  /** Seconds mm may be silent in a turn before it is cancelled and the lending ends (124). */
  turnTimeout?: number;
  /** A session to continue: its id, or one chosen among mm's (of `cwd` if given); none chosen: no turn. */
  resume?: string | {
    cwd?: string;
    choose(sessions: Record<string, unknown>[]): string | undefined;
  };
};
/**
 * What a lending shows: optional callbacks, none of which changes what mm is answered. A callback
 * that throws ends the lending.
 */
export type View = {
  /** A line on what the client does: a call, a permission, the session opened. */
  log?(line: string): void;
  /** A line on a fault the lending goes on after: a bad frame, a tool that failed. */
  warn?(line: string): void;
  /** mm's own log (its stderr), as it comes. */
  mmLog?(chunk: Uint8Array): void;
  /** How messages name the agent: `mm`, its command's name, then as it names itself. */
  agent?(name: string): void;
  /** Each JSON-RPC line, as written (`sent`) or read. */
  frame?(line: string, sent: boolean): void;
  /** The session is open. */
  opened?(sessionId: string): void;
  /** A turn starts: its question, and how to cancel it. */
  turnStarted?(turn: Turn): void;
  /** The turn under way is being cancelled: `session/cancel` is sent, and mm is to end it. */
  turnCancelled?(): void;
  /** A turn has ended. */
  turnEnded?(result: TurnResult): void;
  /** A `session/update` as mm sent it; `replay`: the past of a session being loaded. */
  update?(notification: unknown, replay: boolean): void;
  /** A request of mm's, with the client's answer. */
  answered?(method: string, params: unknown, answer: object): void;
  /** mm asks permission for a call. */
  permissionRequested?(request: PermissionRequest): void;
  /** A permission was answered (not one mm withdrew). */
  permissionAnswered?(request: PermissionRequest, allowed: boolean): void;
};
/**
 * Answers what {@linkcode decide} puts to a person: an `Outcome` (one of `request.options`, as
 * {@linkcode choosePermission} picks them; another is refused), or `undefined` if nobody can
 * answer (refused). `signal` aborts when the question no longer stands: mm withdrew it, the turn
 * is cancelled, or the session ended. A throw ends the lending, unless it comes of that abort (the
 * question has no answer then, as when mm withdrew it).
 */
export type Asker = (
  request: PermissionRequest,
  signal: AbortSignal,
) => Promise<Outcome | undefined>;
/** A turn under way. `cancel()`: mm ends it `cancelled`, or is killed after 5 s or a second cancel. */
export type Turn = {
  readonly question: string;
  readonly cancelled: boolean;
  cancel(reason?: unknown): void;
};
/** A turn that ended. */
export type TurnResult = {
  question: string;
  /** ACP's: `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`. */
  stopReason: string;
  /** The answer's text, as it streamed. */
  text: string;
  /** The client cancelled the turn (`cancelled` without it: mm ended it so by itself). */
  cancelled: boolean;
  /** A permission was refused in it. */
  refused: boolean;
};
/** What a lending did: its session, and each turn. */
export type Lent = { sessionId?: string; turns: TurnResult[] };
/** An error that ends a lending: its message (empty for an interrupt), and a command's exit code. */
export class ClientError extends Error {
  /** An error, and the exit code a command ends with for it. */
  constructor(message: string, readonly exitCode = 1, options?: ErrorOptions) {
    super(message, options);
    this.name = "ClientError"; // as an uncaught one is printed
  }
}

/** A tool's `inputSchema`: a JSON Schema of an object (acp-client-tools.md, "Description d'un outil"). */
export type InputSchema = {
  readonly type: "object";
  readonly properties?: { readonly [name: string]: PropertySchema };
  readonly required?: readonly string[];
  readonly [keyword: string]: unknown;
};
/** A property of an input schema: TypeScript follows its `type` and its `enum`. */
export type PropertySchema = {
  readonly type?: string | readonly string[];
  readonly enum?: readonly unknown[];
  readonly [keyword: string]: unknown;
};
/** The TypeScript type of a JSON Schema `type`. */
export type TypeOf<T> = T extends "string" ? string
  : T extends "number" | "integer" ? number
  : T extends "boolean" ? boolean
  : T extends "array" ? unknown[]
  : T extends "object" ? Record<string, unknown>
  : T extends "null" ? null
  : unknown;
/** A property's value: one of its `enum`, else of its `type` (any of a list of types). */
export type ValueOf<P> = P extends { readonly enum: readonly (infer E)[] } ? E
  : P extends { readonly type: readonly (infer T)[] } ? TypeOf<T>
  : P extends { readonly type: infer T } ? TypeOf<T>
  : unknown;
/** The names of a schema's `required` properties. */
export type Needed<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;
/** The arguments a schema describes: its `required` properties present, the others optional. */
export type ArgsOf<S extends InputSchema> = string extends keyof S ? Record<string, unknown> // not a literal
  : S extends { readonly properties: infer P } ?
      & { -readonly [K in keyof P as K extends Needed<S> ? K : never]: ValueOf<P[K]> }
      & { -readonly [K in keyof P as K extends Needed<S> ? never : K]?: ValueOf<P[K]> }
  : Record<never, never>;

// ═══ What makes the lesson robust: each piece, and the failure it guards against ═══════════════

// ─── The tools: mistakes named before mm starts, arguments checked before a call ─
/** The tools to lend, checked first: mm would skip a broken one in silence, and the model never see it. */
function lendable(tools: readonly Tool[] | undefined): readonly Tool[] {
  const none = "lend() needs the tools to lend: tools: [tool({ … })]";
  if (!Array.isArray(tools)) throw new ClientError(none, 2);
  const broken = checkTools(tools);
  if (broken) throw new ClientError(broken, 2);
  return tools;
}
/**
 * What is wrong with a list of tools, by mm's rules (acp-client-tools.md, "Validation d'une
 * liste") and the client's (one `method` each: calls are dispatched by it). mm would skip a broken
 * entry in silence; the client stops before mm starts. Entries count from 0, as `TOOLS[1]` does.
 */
export function checkTools(tools: readonly Tool[]): string | undefined {
  for (const [index, entry] of tools.entries()) {
    const problem = toolProblem(entry, tools.slice(0, index));
    if (problem) return `TOOLS entry ${index} (${JSON.stringify(entry?.name ?? "")}): ${problem}`;
  }
  return undefined;
}
/** What is wrong with one tool, given the tools before it. */
function toolProblem(entry: Tool, before: readonly Tool[]): string | undefined {
  if (typeof entry.name !== "string" || entry.name === "") return "no name";
  const method = typeof entry.method === "string" ? entry.method : "";
  if (!method.startsWith("_")) {
    return `method ${JSON.stringify(method)} must start with "_" (an ACP extension method)`;
  }
  const schema: unknown = entry.inputSchema;
  // mm decodes it as Go does: `null` is no schema, and no parameter.
  if (schema != null && !isObject(schema)) return "inputSchema must be an object";
  const type = field(schema, "type");
  if (type !== undefined && type !== "object") {
    return `inputSchema.type must be "object", got ${JSON.stringify(type)}`;
  }
  const properties = field(schema, "properties"); // a name `required` lists that it lacks: a typo
  const stray = list(field(schema, "required")).find((required) =>
    isObject(properties) && !Object.hasOwn(properties, String(required))
  );
  if (stray !== undefined) {
    const named = JSON.stringify(stray);
    return `inputSchema.required names ${named}, which its properties do not declare`;
  }
  const name = modelName(entry.name);
  if (name === "client_") return `name ${JSON.stringify(entry.name)} leaves the model no name`;
  if (method === "_org.mini-me/tools/list") return `method "${method}" is mm's list request`;
  const sameName = before.findIndex((other) => modelName(other.name) === name);
  if (sameName >= 0) {
    return `duplicate tool name "${name}": entry ${sameName} (${before[sameName].name}) has it`;
  }
  const sameMethod = before.findIndex((other) => other.method === method);
  if (sameMethod === -1) return undefined;
  const owner = before[sameMethod].name;
  return `method "${method}" is entry ${sameMethod}'s (${owner}) too; calls are dispatched by it`;
}
/**
 * The name the model sees (acp-client-tools.md, "Description d'un outil"): each character outside
 * `[A-Za-z0-9]` is `_`, a run of `_` one, leading and trailing `_` go: `client_open_buffers`.
 * @ignore Exported for its tests.
 */
export function modelName(name: string): string {
  return `client_${name.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "")}`;
}
/**
 * A call's arguments against its tool's `inputSchema`: `required`, each `type` and `enum`. mm
 * checks only `required`, and hides `enum` from the model (acp-client-tools.md, "Le schéma tel que
 * le voit le modèle"): a model may send anything else. The mismatch, in words it can act on.
 */
export function checkArguments(
  lent: Pick<Tool, "name" | "inputSchema">,
  args: Record<string, unknown>,
): string | undefined {
  const properties = field(lent.inputSchema, "properties");
  for (const name of list(field(lent.inputSchema, "required"))) {
    if (typeof name !== "string" || Object.hasOwn(args, name)) continue;
    const choices = list(field(field(properties, name), "enum"));
    const hint = choices.length > 0 ? ` (one of ${choices.join(", ")})` : "";
    return `${lent.name}: missing parameter ${JSON.stringify(name)}${hint}`;
  }
  for (const [name, value] of Object.entries(args)) {
    const problem = valueProblem(field(properties, name), value);
    if (problem) return `${lent.name}: ${JSON.stringify(name)} must be ${problem}`;
  }
  return undefined;
}
/** What one property's schema says against `value` (`a string, not 5`), if anything. */
function valueProblem(schema: unknown, value: unknown): string | undefined {
  const declared = field(schema, "type");
  const types = (Array.isArray(declared) ? declared : [declared]).map((type) => TYPES.get(type));
  // A type this check does not know, or none, is left to the tool.
  if (types.every((type) => type !== undefined) && !types.some((type) => type.test(value))) {
    return `${types.map((type) => type.words).join(" or ")}, not ${preview(value)}`;
  }
  const choices = field(schema, "enum");
  if (!Array.isArray(choices) || choices.includes(value)) return undefined;
  const text = JSON.stringify(value); // an object or an array is the same if its JSON is
  if (choices.some((choice) => JSON.stringify(choice) === text)) return undefined;
  return `one of ${choices.join(", ")}, not ${preview(value)}`;
}
/** JSON Schema's primitive types: how an error names each, and how a value is checked. */
const TYPES = new Map<unknown, { words: string; test: (value: unknown) => boolean }>([
  ["string", { words: "a string", test: (value) => typeof value === "string" }],
  ["number", { words: "a number", test: (value) => typeof value === "number" }],
  ["integer", { words: "an integer", test: (value) => Number.isInteger(value) }],
  ["boolean", { words: "a boolean", test: (value) => typeof value === "boolean" }],
  ["array", { words: "an array", test: (value) => Array.isArray(value) }],
  ["object", { words: "an object", test: (value) => isObject(value) }],
  ["null", { words: "null", test: (value) => value === null }],
]);
/** A value as its JSON begins, for a message (`undefined` as such). */
const preview = (value: unknown) => (JSON.stringify(value) ?? String(value)).slice(0, 40);

// ─── A call that fails, or is cancelled ─
/** A tool's failure, as the error result the model reads; and as a warning, unless mm cancelled it. */
function toolFailure(view: View, signal: AbortSignal, text: string): ToolResult {
  if (!signal.aborted) view.warn?.(text); // cancelled: mm has its -32800 already
  return toolText(text, true);
}
/**
 * What a tool returned, if it is a result; anything else (`undefined` from plain JavaScript) is
 * the tool's failure: an answer must have a `result` or an `error`, and mm's model something to read.
 */
function checkedResult(lent: Tool, value: unknown, view: View, signal: AbortSignal): ToolResult {
  if (isObject(value) && Array.isArray(value.content)) return value as ToolResult;
  const text = `${lent.name} failed: its call returned ${preview(value)}, not a result`;
  return toolFailure(view, signal, text);
}
/**
 * Says so when the agent cancels a call (mm's timeout, a cancelled turn: "Erreurs"; an MCP
 * `notifications/cancelled`): a copier sees the cancel reach the tool.
 */
function sayWhenCancelled(lent: Tool, signal: AbortSignal, session: Session): void {
  signal.addEventListener("abort", () => {
    if (signal.reason === CANCELLED_WITH_THE_TURN) session.view.log?.(`${lent.name} cancelled`);
    if (signal.reason !== CANCELLED_BY_PEER) return;
    session.view.log?.(`${lent.name} cancelled by ${session.name}`);
  });
}

// ─── A view that throws ─
/** A view's callbacks, each name. */
const VIEW_CALLBACKS = [
  "log",
  "warn",
  "mmLog",
  "agent",
  "frame",
  "opened",
  "turnStarted",
  "turnCancelled",
  "turnEnded",
  "update",
  "answered",
  "permissionRequested",
  "permissionAnswered",
] as const satisfies readonly (keyof View)[];
/**
 * The view's callbacks, each of which ends the lending (`fail`) if it throws, wherever it is
 * called: a throw in the middle of an answer or a write would otherwise leave it half done.
 */
function guarded(view: View, fail: (error: unknown) => void): View {
  const safe: Record<string, (...args: unknown[]) => void> = {};
  for (const name of VIEW_CALLBACKS) {
    const callback: ((...args: never[]) => void) | undefined = view[name];
    if (!callback) continue;
    safe[name] = (...args) => {
      try {
        Reflect.apply(callback, view, args);
      } catch (error) {
        fail(error);
      }
    };
  }
  return safe;
}

// ─── mm's log, mm's exit, and the caller's signal ─
/**
 * mm's stderr, read to its end for the view (none: its last line kept, for its exit to quote);
 * mm's exit, which ends the session naming what mm had yet to do; the caller's signal, which
 * cancels the turn under way (and then the session), or ends the session at once.
 */
function watchMm(session: Session): void {
  const { child, options, view } = session;
  let lastWords: string | undefined;
  session.stderr = forward(child.stderr, (chunk) => {
    if (view.mmLog) return view.mmLog(chunk);
    const lines = new TextDecoder().decode(chunk).split("\n").map((line) => line.trim());
    lastWords = lines.filter((line) => line !== "").at(-1)?.slice(0, 200) ?? lastWords;
  });
  child.status.then(async ({ code, signal }) => {
    // Its last frames and log lines are read first: they may say why.
    await within(1000, Promise.all([session.connection.reading, session.stderr]));
    const how = signal ? `signal ${signal}` : `code ${code}`;
    const said = lastWords ? ` (its last words: ${JSON.stringify(lastWords)})` : "";
    const exited = `${session.name} exited with ${how} before ${session.nextStep}${said}`;
    session.fail(new ClientError(exited));
  });
  options.signal?.addEventListener("abort", () => {
    const turn = session.turn;
    if (turn && !turn.cancelled) turn.cancel(options.signal?.reason); // the session ends after it
    else killSession(session, options.signal?.reason);
  });
}
/** Passes each chunk of a stream on as it comes, until the stream ends (or fails). */
async function forward(stream: ReadableStream<Uint8Array>, to: (chunk: Uint8Array) => void) {
  try {
    for await (const chunk of stream) to(chunk);
  } catch { /* the stream is gone: what was read has been passed on */ }
}
/** Kills mm now, group and all, and ends the session with `reason`. */
function killSession(session: Session, reason: unknown): void {
  killGroup(session.child);
  session.fail(reason);
}
/** How long mm gets to end a turn after `session/cancel`, and to exit once its stdin is closed. */
const CANCEL_GRACE_MS = 5000;
const EXIT_GRACE_MS = 2000;
/**
 * Kills a child's process group, with whatever the child left running in it, and waits (a second
 * at most) until it is gone; where the group cannot be signalled (Windows refuses a negative pid;
 * a child that leads none), the child itself.
 * @ignore Exported for its tests.
 */
export async function killGroup(child: Deno.ChildProcess): Promise<void> {
  try {
    Deno.kill(-child.pid, "SIGKILL");
  } catch {
    attempt(() => child.kill("SIGKILL"), undefined); // unless it is gone already
  }
  await within(1000, child.status);
}
/** ACP's `session/close`, when mm advertises it: mm frees the session; no answer never delays the end. */
async function closeSession(session: Session): Promise<void> {
  const closes = field(field(session.capabilities, "sessionCapabilities"), "close") != null;
  if (!closes || !session.sessionId) return;
  const closed = session.connection.request("session/close", { sessionId: session.sessionId });
  await within(EXIT_GRACE_MS, Promise.race([closed.catch(() => {}), session.child.status]));
}

// ─── Discovery that mm did not follow ─
/**
 * In request discovery mm asks for the list while it opens a session, before it answers
 * (acp-client-tools.md, "Mode request"). A session opened without that question has no tool: mm's
 * agent file says otherwise, and the view is told so, with what to change.
 */
function checkListed(session: Session): void {
  if (session.options.discovery !== "request" || session.listed) return;
  session.view.warn?.(
    `warning: mm opened session ${session.sessionId} without asking for the client's tools, so ` +
      'it has none: for discovery "request", its agent file must set acp.clientTools.discovery: request',
  );
}

// ─── Sessions of mm's to continue: resume, load, list ─
/**
 * Continues one of mm's sessions: the one named, or the one `choose()` picks among those
 * `session/list` gives. `session/resume` where mm has it; else `session/load`, whose replay of the
 * session's past the view sees as such. `undefined`: none was chosen.
 */
async function resumeSession(session: Session, seconds: number): Promise<string | undefined> {
  const { options, capabilities } = session;
  const sessions = field(capabilities, "sessionCapabilities");
  let resume = options.resume;
  if (typeof resume === "object") {
    const none = `${session.name} cannot list its sessions (it does not advertise session/list)`;
    if (field(sessions, "list") == null) throw new ClientError(none);
    resume = resume.choose(await listSessions(session, seconds, resume.cwd));
  }
  if (resume === undefined) return undefined;
  const resumes = field(sessions, "resume") != null;
  const neither =
    `${session.name} can neither resume nor load sessions; --resume needs one of them`;
  if (!resumes && field(capabilities, "loadSession") !== true) throw new ClientError(neither);
  session.sessionId = resume;
  session.replaying = !resumes;
  const params = { sessionId: resume, cwd: session.cwd, mcpServers: session.mcpServers() };
  await session.request(resumes ? "session/resume" : "session/load", params, seconds);
  session.replaying = false;
  const how = resumes ? "resumed" : "loaded";
  session.view.log?.(`discovery: ${session.discovery()}, session ${resume} (${how})`);
  checkListed(session);
  return resume;
}
/** mm's sessions (`session/list`, page after page, 100 at most); of `cwd` alone, if given. */
async function listSessions(
  session: Session,
  seconds: number,
  folder?: string,
): Promise<Record<string, unknown>[]> {
  const cwd = folder === undefined ? undefined : absolute(folder);
  const found: Record<string, unknown>[] = [];
  let cursor: unknown;
  for (let page = 0; page < 100 && (page === 0 || typeof cursor === "string"); page++) {
    const answer = await session.request("session/list", { cwd, cursor }, seconds);
    found.push(...list(field(answer, "sessions")).filter(isObject));
    cursor = field(answer, "nextCursor");
  }
  return cwd === undefined ? found : found.filter((listed) => listed.cwd === cwd);
}
/** The questions, one at a time. */
function iterate(questions: LendOptions["questions"]): Iterator<string> | AsyncIterator<string> {
  if (typeof questions === "string") return [questions][Symbol.iterator]();
  if (Symbol.asyncIterator in questions) return questions[Symbol.asyncIterator]();
  return questions[Symbol.iterator]();
}

// ─── A turn: its cancel and the cancel's grace, its silence ─
/** One prompt turn, made when it starts: its answer's text, its calls, a refusal, its cancel. */
class TurnState implements Turn {
  text = "";
  refused = false;
  /** What the agent said of each call, by its id: a permission may name a call by its id alone. */
  readonly calls = new Map<string, Record<string, unknown>>();
  #messageId: unknown; // the last chunk's, if it had one
  timedOut = false;
  reason: unknown; // the cancel's: what the session ends with if mm must be killed
  readonly stopped = new AbortController(); // aborts when the turn is cancelled
  #ended = false;
  #stopGrace = () => {};
  constructor(readonly session: Session, readonly sessionId: string, readonly question: string) {}
  get cancelled(): boolean {
    return this.stopped.signal.aborted;
  }
  /**
   * Cancels the turn the ACP way: `session/cancel`, the questions still open answered
   * `cancelled`; mm that does not end the turn within the grace, or a second cancel, is killed.
   */
  cancel(reason: unknown = new ClientError("the turn was cancelled")): void {
    if (this.#ended) return;
    if (this.cancelled) return killSession(this.session, reason); // a second cancel: at once
    const { view, connection } = this.session;
    this.reason = reason;
    view.log?.("cancelling…");
    this.stopped.abort(reason);
    connection.notify("session/cancel", { sessionId: this.sessionId });
    this.session.mcp?.abandon(CANCELLED_WITH_THE_TURN); // the calls of the turn, on the MCP road
    view.turnCancelled?.();
    const late = () => {
      view.log?.(`${this.session.name} did not answer the cancellation in time; killing it`);
      killSession(this.session, reason);
    };
    this.#stopGrace = after(CANCEL_GRACE_MS, late);
  }
  end(): void {
    this.#ended = true;
    this.#stopGrace();
  }
  /** An update of this turn: the answer's text as it streams, its messages apart; a call. */
  heard(update: unknown): void {
    const [kind, content, messageId] = fields(update, "sessionUpdate", "content", "messageId");
    const [type, text] = fields(content, "type", "text");
    if (kind === "agent_message_chunk" && type === "text" && typeof text === "string") {
      if (startsMessage(this.#messageId, messageId)) this.text += paragraph(this.text);
      this.#messageId = messageId;
      this.text += text;
    }
    if (kind !== "tool_call" && kind !== "tool_call_update") return;
    const id = String(field(update, "toolCallId"));
    this.calls.set(id, { ...this.calls.get(id), ...fieldsSaid(update) });
  }
}
/**
 * Whether a chunk of agent text starts a message of its own: ACP v1's `messageId`, which differs
 * from the previous chunk's. Chunks without ids are one text, as they always were.
 */
function startsMessage(previous: unknown, messageId: unknown): boolean {
  return typeof previous === "string" && typeof messageId === "string" && previous !== messageId;
}
/** What starts a new paragraph after `text`: a blank line, whether or not its last line ended. */
const paragraph = (text: string) => text.endsWith("\n") ? "\n" : "\n\n";
/** The fields an update or a call sets (those `undefined` or `null` say nothing), but its kind. */
function fieldsSaid(value: unknown): Record<string, unknown> {
  const entries = Object.entries(isObject(value) ? value : {});
  return Object.fromEntries(entries.filter(([key, v]) => v != null && key !== "sessionUpdate"));
}
/**
 * `turnTimeout`: when mm has sent nothing for the turn that long (mm waiting for the client's
 * answer is not silence), the turn is cancelled and the lending ends (124, as `timeout(1)`). Once
 * the turn is cancelled otherwise, the silence can no longer end anything.
 */
function watchSilence(turn: TurnState, connection: Connection, seconds?: number): () => void {
  if (seconds === undefined) return () => {};
  const silent = `${turn.session.name} sent nothing for ${seconds} s; turn cancelled`;
  const why = new ClientError(silent, 124);
  const check = () => {
    if (turn.cancelled) return;
    const rest = seconds * 1000 - connection.silentFor(); // of the silence, from mm's last frame
    if (rest > 0) {
      stopTimer = after(rest, check);
      return;
    }
    turn.timedOut = true;
    turn.cancel(why);
  };
  let stopTimer = after(seconds * 1000, check);
  return () => stopTimer();
}

// ─── Asking the person: one question at a time, and one that no longer stands ─
/**
 * A permission request, as its params give it, and the call as the agent described it: some
 * agents name the call by its `toolCallId` alone, its title and input in the `tool_call` before.
 */
function permissionRequest(params: unknown, turn?: TurnState): PermissionRequest {
  const own = fieldsSaid(field(params, "toolCall"));
  const announced = turn?.calls.get(String(own.toolCallId));
  const toolCall = { ...announced, ...own }; // what it says now, over what it said before
  const text = (value: unknown) => typeof value === "string" ? value : undefined;
  const [title, kind] = fields(toolCall, "title", "kind").map(text);
  const options = list(field(params, "options")).filter(isObject);
  return { title, kind, toolCall, announced, options };
}
/**
 * The tool of the client's own MCP server a call is of, as the agent's adapter names it in fields
 * it sets itself (how each asks, measured: the Claude adapter, qwen-code, gemini-cli, codex-acp
 * 0.16 and 2.6); none, if they do not name one of the lent tools on that server.
 */
function ownMcpTool(request: PermissionRequest, tools: readonly Tool[]): Tool | undefined {
  const { toolCall, announced } = request;
  const server = MCP_SERVER_NAME;
  const named = (name: unknown) => tools.find((lent) => lent.name === name);
  const meta = field(toolCall, "_meta");
  const full = (name: unknown) => typeof name === "string" && name.startsWith(`mcp__${server}__`);
  const name = toolCall.name;
  const toolName = field(meta, "toolName");
  // The Claude adapter: the tool's full name, and its server in `_meta.claudeCode`.
  const claude = field(field(field(meta, "claudeCode"), "mcpServer"), "name") === server;
  if (claude && full(name)) return named(String(name).slice(`mcp__${server}__`.length));
  // qwen-code: the full name in `_meta.toolName` (its title is the arguments).
  if (full(toolName)) return named(String(toolName).slice(`mcp__${server}__`.length));
  // gemini-cli: an id made of the server and the tool, and a title made of them too.
  const id = String(toolCall.toolCallId);
  const gemini = tools.find((lent) =>
    id.startsWith(`mcp_${server}_${lent.name}__`) &&
    request.title === `${lent.name} (${server} MCP Server)`
  );
  if (gemini) return gemini;
  // codex-acp: the tool_call before names the server and the tool (`rawInput`); then 0.16 asks
  // an approval of that server's call, and 2.6 marks its call as an MCP tool's.
  const input = field(announced, "rawInput");
  if (field(input, "server") !== server) return undefined;
  const approval = field(
    field(field(toolCall.rawInput, "request"), "_meta"),
    "codex_approval_kind",
  );
  const codex = field(toolCall.rawInput, "server_name") === server && approval === "mcp_tool_call";
  const codex2 = field(field(announced, "_meta"), "is_mcp_tool_call") === true;
  return codex || codex2 ? named(field(input, "tool")) : undefined;
}
/** Whether a call carries a command, in its input or in its arguments: a tool of ours does not. */
function carriesCommand({ toolCall, announced }: PermissionRequest): boolean {
  const inputs = [toolCall.rawInput, field(announced, "rawInput")];
  const approval = field(field(field(toolCall.rawInput, "request"), "_meta"), "tool_params");
  const places = [...inputs, ...inputs.map((input) => field(input, "arguments")), approval];
  return places.some((place) => field(place, "command") !== undefined);
}
/**
 * How the log names the call a permission is for: its title; else its id, and whether the agent
 * described it at all (no title, no input, no content: then nobody may allow it unseen).
 */
function callName(request: PermissionRequest): string {
  if (request.title !== undefined) return JSON.stringify(request.title);
  const id = String(request.toolCall.toolCallId ?? "?");
  if (!described(request.toolCall)) return `a call the agent did not describe (${id})`;
  return `an untitled call (${id})`;
}
/** Whether the agent said anything of what a call would do: a title, an input, content, places. */
export function described(toolCall: Record<string, unknown>): boolean {
  const { title, rawInput, content, locations } = toolCall;
  return typeof title === "string" || rawInput != null || list(content).length > 0 ||
    list(locations).length > 0;
}
/** Puts a permission to the asker after those asked before it: one question at a time, in order. */
function askInTurn(
  session: Session,
  asker: Asker,
  request: PermissionRequest,
  signal: AbortSignal,
) {
  const answer = session.asked.then(() => ask(session, asker, request, signal));
  session.asked = answer.catch(() => {});
  return answer;
}
/**
 * Puts a permission to the asker, unless the question no longer stands: mm withdrew it, or the
 * turn was cancelled. An answer mm did not offer is refused; a throw ends the lending.
 */
async function ask(
  session: Session,
  asker: Asker,
  request: PermissionRequest,
  signal: AbortSignal,
): Promise<{ outcome: Outcome }> {
  const { turn } = session;
  const stop = turn ? AbortSignal.any([signal, turn.stopped.signal]) : signal; // withdrawn, cancelled
  let outcome: Outcome | undefined;
  if (!stop.aborted) {
    try {
      outcome = await asker(request, stop);
    } catch (error) {
      // Rejected as its signal aborted: the question no longer stands, and has no answer.
      if (!stop.aborted) {
        session.fail(error); // the asker cannot go on, nor can the lending: thrown or rejected
        throw error;
      }
    }
  }
  if (turn?.cancelled) return session.answered(request, CANCELLED, TURN_CANCELLED);
  if (signal.aborted) return { outcome: CANCELLED }; // withdrawn by mm: nobody refused it
  if (outcome && !offered(request.options, outcome)) {
    const chosen = JSON.stringify(field(outcome, "optionId"));
    session.view.warn?.(
      `the asker chose ${chosen}, an option ${session.name} did not offer: refused`,
    );
    outcome = choosePermission(request.options, false);
  }
  if (outcome) return session.answered(request, outcome, " (asked)");
  const refused = choosePermission(request.options, false);
  return session.answered(request, refused, " (nobody can answer)");
}
const CANCELLED: Outcome = { outcome: "cancelled" };
/** How the log says a permission was answered `cancelled` because the turn was. */
const TURN_CANCELLED = " (the turn is cancelled)";
/** Whether `outcome` picks an option that allows (`cancelled` picks none, not even one without id). */
const allows = (options: Record<string, unknown>[], outcome: Outcome) =>
  "optionId" in outcome &&
  String(options.find((o) => o.optionId === outcome.optionId)?.kind).startsWith("allow");
/** Whether mm can take `outcome`: `cancelled`, or one of the options it offered. */
const offered = (options: Record<string, unknown>[], outcome: Outcome) =>
  !("optionId" in outcome) || options.some((o) => o.optionId === outcome.optionId);

// ─── The wire: lines however the chunks come, a noisy peer, a peer that stops reading ─
/** The first bad frames are logged and answered; 1,000 in a row: mm is not talking JSON-RPC. */
const BAD_FRAMES_SHOWN = 10;
const BAD_FRAMES_IN_A_ROW = 1000;
/** Reading from mm pauses while more than this many characters of answers wait to be written. */
const MAX_UNWRITTEN = 1024 * 1024;
/** Why a call on the MCP road is aborted when its turn is cancelled. */
const CANCELLED_WITH_THE_TURN = new RpcError(-32800, "Request cancelled");
/** Why `$/cancel_request` aborts a request's signal: the peer cancelled it, and has its `-32800`. */
const CANCELLED_BY_PEER = new RpcError(-32800, "Request cancelled");
const CANCELLED_REPLY = { error: { code: -32800, message: "Request cancelled" } };
/** A noisy peer's bad lines: the first few shown, the rest counted; a flood of them ends it all. */
class BadFrames {
  total = 0;
  inARow = 0;
  first = "";
  constructor(readonly peer: () => string) {}
  /** Counts a bad line; whether it is one of the first, to log and answer. Throws at a flood. */
  count(line: string): boolean {
    if (this.inARow === 0) this.first = line.slice(0, 80);
    this.inARow++;
    this.total++;
    if (this.inARow < BAD_FRAMES_IN_A_ROW) return this.total <= BAD_FRAMES_SHOWN;
    const many = `${this.inARow} bad lines; first: ${this.first}`;
    throw new ClientError(`${this.peer()} is not speaking JSON-RPC on stdout (${many})`);
  }
  unlogged(): number {
    return Math.max(0, this.total - BAD_FRAMES_SHOWN);
  }
}
/** Why reading from the agent (`peer`) stopped, in the words of the error the lending ends with. */
function readError(error: unknown, peer: string): ClientError {
  if (error instanceof ClientError) return error;
  if (!(error instanceof LineTooLongError)) {
    return new ClientError(`reading from ${peer}: ${errorText(error)}`);
  }
  return new ClientError(`${peer} sent ${error.message}; connection dropped`);
}
/**
 * An agent's error answer, as the one line that says why: its message, and the reason its `data`
 * gives: a text, as JSON-RPC allows, or one in `details`, as the ACP TypeScript SDK's adapters
 * send it ("Internal error" alone says nothing).
 */
function refusal(error: RpcError): string {
  const reason = typeof error.data === "string" ? error.data : field(error.data, "details");
  if (typeof reason !== "string") return error.message;
  const said = reason.replace(/\s+/g, " ").trim().slice(0, 300);
  if (said === "" || error.message.includes(said)) return error.message;
  return `${error.message} (${said})`;
}
/** The JSON-RPC error an answer that failed is sent as: its own, or `-32603`. */
function errorReply(error: unknown): { error: { code: number; message: string } } {
  if (error instanceof RpcError) return { error: { code: error.code, message: error.message } };
  return { error: { code: -32603, message: `Internal error: ${errorText(error)}` } };
}
/** A line longer than a {@linkcode LineReader} accepts. */
export class LineTooLongError extends Error {
  /** A line longer than `limit` bytes. */
  constructor(readonly limit: number) {
    super(`a line longer than ${limit} bytes`);
    this.name = "LineTooLongError";
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
  /** Takes the next chunk and yields the lines it ends; throws {@linkcode LineTooLongError}. */
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
    const ending = this.#parts.at(-1)?.at(-1) === 13 ? 1 : 0; // a last `\r` may be half of `\r\n`
    if (this.#length - ending <= this.limit) return;
    this.#parts = [];
    this.#length = 0;
    throw new LineTooLongError(this.limit);
  }
  #take(): string {
    let bytes = this.#parts.length === 1 ? this.#parts[0] : new Uint8Array(this.#length);
    if (this.#parts.length > 1) {
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

// ─── Helpers ─
const ENCODER = new TextEncoder();
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const list = (value: unknown): unknown[] => Array.isArray(value) ? value : [];
/** `value[key]` when `value` is an object, else `undefined`; `fields()`, of several keys. */
const field = (value: unknown, key: string): unknown => isObject(value) ? value[key] : undefined;
const fields = (value: unknown, ...keys: string[]) => keys.map((key) => field(value, key));
const errorText = (error: unknown) => error instanceof Error ? error.message : String(error);
/** A folder as ACP wants it: an absolute path (a relative one is from the current folder). */
const absolute = (folder?: string) =>
  folder === undefined ? Deno.cwd() : process.getBuiltinModule("node:path").resolve(folder);
/** Whether a permission is granted, asked without ever prompting. */
const granted = (descriptor: Deno.PermissionDescriptor) =>
  Deno.permissions.querySync(descriptor).state === "granted";
/**
 * Calls `fire` in `ms`, unless the function it returns is called first. The web's own timer: Deno's
 * global `setTimeout` is Node's, whose loading costs a tenth of a start. Stopped, it no longer
 * holds the event loop.
 */
function after(ms: number, fire: () => void): () => void {
  if (ms > 2 ** 31 - 1) return () => {}; // longer than a timer can wait (24.8 days): never fires
  const signal = AbortSignal.timeout(Math.max(ms, 0));
  signal.addEventListener("abort", fire);
  return () => signal.removeEventListener("abort", fire);
}
/** `promise`'s value, or `undefined` once `ms` have passed; the timer ends with the wait. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T | undefined> {
  const timer = Promise.withResolvers<undefined>();
  const stop = after(ms, () => timer.resolve(undefined));
  try {
    return await Promise.race([promise, timer.promise]);
  } finally {
    stop();
  }
}
/** What `run()` returns, or `otherwise` when it throws. */
function attempt<T, U>(run: () => T, otherwise: U): T | U {
  try {
    return run();
  } catch {
    return otherwise;
  }
}

// ═══ The client's own MCP server: the same tools, for an agent that is not mm ═══════════════════
// Every ACP agent takes MCP servers in `session/new` (`mcpServers`): the client serves its tools as
// one, in its own process, for the length of the session. Over streamable HTTP on the loopback
// address where the agent's `initialize` answer says `mcpCapabilities.http`; else over stdio, as
// every agent takes it, through a relay of this very file that the agent starts. mm keeps its
// client tools, and never gets both: its model would see each tool twice.

/** The server's name: a part of each tool's name as the agent's model sees it (`mcp__client__…`). */
export const MCP_SERVER_NAME = "client";
/** The MCP revisions the server speaks, the newest first: it answers with the one asked for. */
const MCP_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/** The largest request the server reads: a larger one is refused (413) before it is read whole. */
const MAX_BODY = 4 * 1024 * 1024;
/** The relay's token comes in its environment, never on its command line (`ps` shows that). */
const TOKEN_VARIABLE = "ACP_CLIENT_MCP_TOKEN";
/** How long the first prompt waits for an agent that has not listed the tools yet. */
const LIST_WAIT_MS = 5000;
/** How long after its list is answered an agent has the tools: an agent that connects late. */
const LISTED_SETTLE_MS = 200;
/** An entry of `mcpServers`, as ACP v1's schema has it: HTTP, or a command to start (stdio). */
export type McpServerEntry =
  | { type: "http"; name: string; url: string; headers: { name: string; value: string }[] }
  | { name: string; command: string; args: string[]; env: { name: string; value: string }[] };

/** The agent to start: `agent`, else mm as `mm` says (default `mm -acp -agent agent.yaml`). */
function agentToStart(
  { mm, agent }: LendOptions,
): { command: string; args: string[]; cwd?: string } {
  if (agent && mm) throw new ClientError("lend() starts mm or another agent: give mm or agent", 2);
  if (agent) return { command: agent.command, args: agent.args ?? [], cwd: agent.cwd };
  return {
    command: mm?.command ?? "mm",
    args: mm?.args ?? ["-acp", "-agent", "agent.yaml"],
    cwd: mm?.cwd,
  };
}
/** An agent's name, before it says its own: its command's, without the folders. */
const agentName = (command: string) => command.split(/[/\\]/).at(-1) || command;
/**
 * Names the agent as its `initialize` answer does (`agentInfo.title`, else `name`), and starts the
 * client's MCP server for it: over HTTP if it takes that, else for the relay (stdio).
 */
function serveTools(session: Session, agentInfo: unknown): McpServer {
  const [title, name] = fields(agentInfo, "title", "name");
  const named = [title, name].find((value) => typeof value === "string" && value.trim() !== "");
  if (typeof named === "string") session.name = named;
  session.view.agent?.(session.name);
  const http = field(field(session.capabilities, "mcpCapabilities"), "http") === true;
  return new McpServer(session, http ? "http" : "stdio");
}

/**
 * The client's MCP server for one session, on `127.0.0.1` at a port the system picks. Only the
 * holder of the session's random token gets in, from the loopback address, naming it as its host:
 * it runs the lent tools, their arguments checked, and nothing else.
 */
class McpServer {
  readonly #token = [...crypto.getRandomValues(new Uint8Array(32))]
    .map((byte) => byte.toString(16).padStart(2, "0")).join("");
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #host: string; // 127.0.0.1:<port>, as a request must name it
  readonly #running = new Map<RpcId, AbortController>(); // the calls under way
  readonly #listed = Promise.withResolvers<void>(); // the agent asked for the tools
  #stopSettling = () => {};
  constructor(readonly session: Session, readonly transport: "http" | "stdio") {
    const refused = `lending tools to ${session.name} needs --allow-net=127.0.0.1, where the ` +
      "client serves them as an MCP server";
    if (!granted({ name: "net", host: "127.0.0.1" })) throw new ClientError(refused);
    const options = { hostname: "127.0.0.1", port: 0, onListen: () => {} };
    this.#server = Deno.serve(options, (request) => this.#handle(request));
    this.#host = `127.0.0.1:${this.#server.addr.port}`;
  }
  /** Where the agent finds the server, and how it proves it is the agent (`mcpServers`). */
  get entry(): McpServerEntry {
    const url = `http://${this.#host}/mcp`;
    if (this.transport === "http") {
      const headers = [{ name: "Authorization", value: `Bearer ${this.#token}` }];
      return { type: "http", name: MCP_SERVER_NAME, url, headers };
    }
    const env = [{ name: TOKEN_VARIABLE, value: this.#token }];
    const cache = readable("DENO_DIR"); // the relay's deno compiles client.ts where this one does
    if (cache) env.push({ name: "DENO_DIR", value: cache });
    const relay = ["--mcp-relay", url];
    if (Deno.build.standalone) {
      return { name: MCP_SERVER_NAME, command: Deno.execPath(), args: relay, env };
    }
    const permissions = [`--allow-net=${this.#host}`, `--allow-env=${TOKEN_VARIABLE}`];
    const run = ["run", "--no-prompt", "--no-config", ...permissions, import.meta.url, ...relay];
    return { name: MCP_SERVER_NAME, command: Deno.execPath(), args: run, env };
  }
  /** Before the first prompt: the tools listed, or a few seconds gone, and a line that says so. */
  async toolsListed(): Promise<void> {
    const listed = this.#listed.promise.then(() => true);
    if (await Promise.race([within(LIST_WAIT_MS, listed), this.session.failed])) return;
    const nothing = "did not ask for the client's tools (it may not take mcpServers)";
    this.session.view.warn?.(`${this.session.name} ${nothing}`);
  }
  /** Aborts every call under way (the turn is cancelled, or the session ends). */
  abandon(reason: unknown): void {
    for (const controller of this.#running.values()) controller.abort(reason);
  }
  /** Stops the server: no port is left listening. */
  async stop(): Promise<void> {
    this.#stopSettling();
    await within(1000, this.#server.shutdown());
  }
  /**
   * One HTTP request: refused unless it names the server's own host (a rebinding DNS name would
   * not), comes from no page but a local one, and carries the token (403, 401); then one JSON-RPC
   * message in a POST, as MCP's streamable HTTP has it. No stream is offered: GET is 405.
   */
  async #handle(request: Request): Promise<Response> {
    if (request.headers.get("host") !== this.#host) {
      return new Response("wrong host", { status: 403 });
    }
    const origin = request.headers.get("origin");
    if (origin !== null && !isLocal(origin)) {
      return new Response("not a local page", { status: 403 });
    }
    if (!sameSecret(request.headers.get("authorization"), `Bearer ${this.#token}`)) {
      return new Response("no token, or not the session's", { status: 401 });
    }
    if (new URL(request.url).pathname !== "/mcp") return new Response("not here", { status: 404 });
    if (request.method !== "POST") {
      return new Response(null, { status: 405, headers: { allow: "POST" } });
    }
    const body = await readBody(request, MAX_BODY);
    if (body === undefined) return new Response("too large", { status: 413 });
    const frame = parseFrame(body);
    if (frame.kind === "bad") return json(frame.reply, 400);
    if (frame.kind === "notification") this.#notified(frame.method, frame.params);
    if (frame.kind !== "request") return new Response(null, { status: 202 });
    const reply = await this.#answer(frame.id, frame.method, frame.params).then(
      (result) => ({ result }),
      (error) => errorReply(error),
    );
    // MCP's newest revision opens with server/discover; refused so (400), the agent falls back on
    // initialize, as with the MCP SDK's own server.
    return json(
      { jsonrpc: "2.0", id: frame.id, ...reply },
      frame.method === "server/discover" ? 400 : 200,
    );
  }
  /** A request: MCP's handshake, a ping, the list of tools, or a call. */
  async #answer(id: RpcId, method: string, params: unknown): Promise<unknown> {
    if (method === "initialize") {
      const asked = field(params, "protocolVersion");
      const protocolVersion = MCP_VERSIONS.includes(String(asked)) ? asked : MCP_VERSIONS[0];
      const serverInfo = { name: "host-info-client", version: VERSION };
      return { protocolVersion, capabilities: { tools: { listChanged: false } }, serverInfo };
    }
    if (method === "ping") return {};
    if (method === "tools/list") {
      // Listed once the agent has taken the answer in: a moment after it is sent.
      this.#stopSettling = after(LISTED_SETTLE_MS, () => this.#listed.resolve());
      return { tools: this.session.tools.map(mcpTool) };
    }
    if (method !== "tools/call") throw new RpcError(-32601, "Method not found");
    const called = this.session.tools.find((lent) => lent.name === field(params, "name"));
    if (!called) throw new RpcError(-32602, `Unknown tool: ${field(params, "name")}`);
    const controller = new AbortController();
    const args = field(params, "arguments") ?? {};
    const sessionId = this.session.sessionId ?? "?";
    this.#running.set(id, controller);
    const result = this.session.callTool(called, args, sessionId, controller.signal);
    if (!(result instanceof Promise)) { // answered at once: nothing left to cancel
      this.#running.delete(id);
      return result;
    }
    const cancelled = Promise.withResolvers<never>();
    controller.signal.addEventListener("abort", () => cancelled.reject(CANCELLED_BY_PEER));
    try {
      return await Promise.race([result, cancelled.promise]); // cancelled: -32800, at once
    } finally {
      this.#running.delete(id);
    }
  }
  /** A notification: the agent cancels a call (`notifications/cancelled`); the rest need nothing. */
  #notified(method: string, params: unknown): void {
    if (method !== "notifications/cancelled") return;
    this.#running.get(field(params, "requestId") as RpcId)?.abort(CANCELLED_BY_PEER);
  }
}
/** A tool as MCP's `tools/list` gives it: its name, description, schema, and hints if it has some. */
function mcpTool({ name, description, inputSchema, annotations }: Tool) {
  return annotations
    ? { name, description, inputSchema, annotations }
    : { name, description, inputSchema };
}
/** A JSON answer. */
const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
/** Whether a page's origin is on this machine: the loopback address, by any of its names. */
const isLocal = (origin: string) =>
  attempt(() => ["127.0.0.1", "localhost", "[::1]"].includes(new URL(origin).hostname), false);
/** Whether two secrets are the same, in a time that does not say how much of them is. */
function sameSecret(given: string | null, secret: string): boolean {
  if (given === null || given.length !== secret.length) return false;
  let differ = 0;
  for (let i = 0; i < secret.length; i++) differ |= given.charCodeAt(i) ^ secret.charCodeAt(i);
  return differ === 0;
}
/** A request's body as text, or `undefined` once it is longer than `limit` bytes: not read whole. */
async function readBody(request: Request, limit: number): Promise<string | undefined> {
  const declared = request.headers.get("content-length");
  if (Number(declared ?? 0) > limit) return undefined;
  // Its length said, and within the limit: HTTP reads no more than that. Else, read with a count.
  if (declared !== null) return await request.text();
  const decoder = new TextDecoder(); // a character split between two parts is decoded whole
  let text = "";
  let size = 0;
  for await (const part of request.body ?? []) {
    size += part.length;
    if (size > limit) return undefined;
    text += decoder.decode(part, { stream: true });
  }
  return text + decoder.decode();
}
/** An environment variable this run may read and that is set, else `undefined`; never a prompt. */
const readable = (name: string) =>
  granted({ name: "env", variable: name }) ? Deno.env.get(name) || undefined : undefined;

/**
 * The stdio road: started by the agent as this file with `--mcp-relay <url>` (the entry the client
 * gave it), it passes each line of its stdin to the session's server as a POST with the token of
 * its environment, and writes each answer on stdout as a line. It ends with its stdin, or once the
 * server is gone.
 */
export async function relayMcp(url: string): Promise<number> {
  const token = readable(TOKEN_VARIABLE);
  if (!token) {
    console.error(`error: the MCP relay needs its token in ${TOKEN_VARIABLE}`);
    return 2;
  }
  const headers = {
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  const gone = new AbortController(); // the server is: so is the session
  const output = stdoutLines();
  const write = output.write;
  const post = async (line: string) => {
    if (line.trim() === "") return;
    const sent = fetch(url, { method: "POST", headers, body: line, signal: gone.signal });
    const response = await sent.catch(() => gone.abort());
    if (!response) return;
    const text = (await response.text()).trim();
    // The server's JSON is one line already; anything else is made one, or an error.
    const json = response.headers.get("content-type") === "application/json";
    if (json && !text.includes("\n")) return write(text);
    const answer = attempt(() => JSON.stringify(JSON.parse(text)), undefined);
    if (answer !== undefined) return write(answer);
    const frame = parseFrame(line);
    if (frame.kind !== "request") return;
    write(JSON.stringify({ jsonrpc: "2.0", id: frame.id, error: { code: -32603, message: text } }));
  };
  const reader = new LineReader(MAX_BODY);
  const stdin = Deno.stdin.readable.getReader();
  const stopped = new Promise<undefined>((done) =>
    gone.signal.addEventListener("abort", () => done(undefined))
  );
  const posts = new Set<Promise<void>>();
  for (;;) {
    const read = await Promise.race([stdin.read(), stopped]);
    if (!read || read.done) break;
    for (const line of reader.push(read.value)) {
      const posting = post(line);
      posts.add(posting);
      posting.finally(() => posts.delete(posting));
    }
  }
  await Promise.allSettled(posts);
  await output.written();
  return gone.signal.aborted ? 1 : 0;
}
/** Writes lines on stdout in their order; the lines of one tick go out in one write. */
function stdoutLines(): { write(line: string): void; written(): Promise<void> } {
  let writing = Promise.resolve();
  let queued: string[] = []; // lines not written yet
  const write = (line: string) => {
    queued.push(`${line}\n`);
    if (queued.length > 1) return;
    writing = writing.then(() => {
      const text = queued.join("");
      queued = [];
      return writeAll(Deno.stdout, ENCODER.encode(text));
    });
  };
  return { write, written: () => writing };
}
/** Writes all of `bytes`, however many writes it takes. */
async function writeAll(file: typeof Deno.stdout, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    written += await file.write(bytes.subarray(written));
  }
}

// ═══ The protocol ends here. Below it, the terminal program that lends host_info: main() ══════
// The program's tools (`TOOLS`: host_info, and yours), what a person sees (the conversation, `-q`,
// `--json`), the progress line, asking the person, the questions of `-i` and `-`, Ctrl-C and
// SIGTERM, the command line, the agent file, `main()`. It uses the protocol above only through
// `lend()`, and adds nothing to it.
import { parseArgs } from "node:util";

// ─── The program's tools: host_info, and yours ───────────────────────────────
/** What host_info reports, one topic per call. */
export const TOPICS = ["os", "cpu", "memory", "uptime"] as const;
/** A topic of host_info. */
export type Topic = typeof TOPICS[number];
/**
 * Every tool the program lends to mm. Add yours after host_info:
 * `tool({ name, description, method, inputSchema, call })`, the whole of a tool.
 */
export const TOOLS: readonly Tool[] = [
  tool({
    name: "host_info",
    description: "Facts about the machine the user's client runs on: its operating system, CPU, " +
      "memory or uptime. Call it once per topic.",
    method: "_demo.minime/host_info",
    inputSchema: {
      type: "object",
      properties: { topic: { type: "string", enum: TOPICS, description: "Which fact to report." } },
      required: ["topic"],
    },
    annotations: { readOnlyHint: true, openWorldHint: false }, // it only reads this machine
    call: ({ topic }) => hostInfo(topic),
  }),
];

/** A fact host_info reports: the `--allow-sys` names it needs, and how it is read. */
function fact(needs: Deno.SysPermissionDescriptor["kind"][], read: () => string) {
  const allowed = once(() => needs.every((kind) => granted({ name: "sys", kind })));
  return { needs, allowed, read };
}
/** Each topic's fact, read with Deno's own APIs where it has them. */
const FACTS: Record<Topic, ReturnType<typeof fact>> = {
  os: fact(["osRelease", "hostname"], () => OS_TEXT()),
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
// Read once, as calls may come many times a second and these do not change under a running
// client: the kernel release (`Deno.osRelease()` reads a file), the host name, and the CPU model,
// which Deno has no API for; `node:os`, a Node layer only this topic needs, loads on first use.
const OS_TEXT = once(() => {
  const { os, arch } = Deno.build;
  return `${osName(os)} ${Deno.osRelease()} (${os}/${arch}), host name ${Deno.hostname()}`;
});
const CPU_MODEL = once(() =>
  process.getBuiltinModule("node:os").cpus()[0]?.model.trim() || "unknown CPU"
);
/** host_info's answer for a topic; what it cannot say is an error result, never a prompt. */
export function hostInfo(topic: Topic): ToolResult {
  const { needs, allowed, read } = FACTS[topic];
  const missing = `host_info needs --allow-sys=${needs.join(",")} to report ${topic}`;
  if (!allowed()) return toolText(missing, true); // asked first, so that Deno never prompts
  try {
    return toolText(read());
  } catch (error) {
    return toolText(`host_info could not read ${topic}: ${errorText(error)}`, true);
  }
}
/**
 * The display name of a `Deno.build.os` value: `darwin` is macOS, others are capitalised.
 * @ignore host_info's, exported for its tests.
 */
export function osName(os: string): string {
  return os === "darwin" ? "macOS" : os.charAt(0).toUpperCase() + os.slice(1);
}
/**
 * A size in bytes as GiB with one decimal: `15.8 GiB`.
 * @ignore host_info's, exported for its tests.
 */
export function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}
/**
 * The `uptime` text for seconds up, as of `now`: `up 3 days, 4 hours, 12 minutes (since …)`.
 * @ignore host_info's, exported for its tests.
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

/** A function that reads a value the first time it is called, and then remembers it. */
function once<T>(read: () => T): () => T {
  let value: { read: T } | undefined;
  return () => {
    value ??= { read: read() };
    return value.read;
  };
}

// ─── Output: the two streams and the progress line ───────────────────────────
/** An environment variable; one the run may not read counts as unset. */
const readEnv = (name: string) =>
  granted({ name: "env", variable: name }) ? Deno.env.get(name) : undefined;
const DIM = 2; // ANSI styles
const RED = 31;
/** stdout or stderr: a terminal or not, in colour or not, its last line open, its reader gone. */
function stream(file: typeof Deno.stdout, fd: number) {
  const terminal = file.isTerminal();
  // no-color.org: no colour when NO_COLOR is set and not empty; a dumb terminal has none.
  const colour = terminal && !readEnv("NO_COLOR") && readEnv("TERM") !== "dumb";
  return { file, fd, terminal, colour, open: false, gone: false };
}
type Stream = ReturnType<typeof stream>;
/**
 * stdout, the conversation, and stderr, diagnostics; on one terminal, pipe or file, a line open on
 * one is ended before the other writes. A tick's output goes out in one write per stream, in order.
 */
class Output {
  readonly stdout = stream(Deno.stdout, 1);
  readonly stderr = stream(Deno.stderr, 2);
  #progress = this.stderr.terminal && readEnv("TERM") !== "dumb"; // can erase a line
  onFailure: (error: unknown) => void = () => {}; // stdout cannot be written, and not for EPIPE
  #waiting?: { label: string; since: number; drawnAt?: number }; // drawn: at this width
  #queue: [Stream, string | Uint8Array][] = [];
  constructor() { // the progress line redraws itself (its seconds, its width) on a timer
    if (this.#progress) Deno.unrefTimer(Number(setInterval(() => this.#draw(), 100)));
  }
  /** Whether both streams reach the same terminal, pipe or file: asked once, when it matters. */
  readonly shared = once(() => sameStream(streamFacts(this.stdout), streamFacts(this.stderr)));
  /** A line on stderr. */
  note(text: string, style?: number): void {
    this.line(this.stderr, text, style);
  }
  line(to: Stream, text: string, style?: number): void {
    this.print(to, `${to.open ? "\n" : ""}${text}\n`, style);
  }
  /** Writes text, which mm may have sent: on a terminal its control characters are shown. */
  print(to: Stream, text: string, style?: number): void {
    const shown = to.terminal ? showControls(text) : text;
    this.put(to, to.colour && style ? shown.replace(/[^\n]+/g, `\x1b[${style}m$&\x1b[0m`) : shown);
  }
  /** One JSON line on stdout; C1 controls escaped too, so a terminal shows it as it is. */
  record(value: unknown): void {
    const escape = (c: string) => `\\u00${c.charCodeAt(0).toString(16)}`;
    this.put(this.stdout, `${JSON.stringify(value ?? null).replace(/[\x7f-\x9f]/g, escape)}\n`);
  }
  /** Writes text or bytes as they are, after erasing the progress line and ending the other's. */
  put(to: Stream, data: string | Uint8Array): void {
    if (data.length === 0 || to.gone) return;
    this.#erase();
    const other = to === this.stdout ? this.stderr : this.stdout;
    if (other.open && this.shared()) {
      this.#write(this.stderr, "\n"); // on stderr: stdout, apart, stays the conversation
      other.open = false;
    }
    this.#write(to, data);
    to.open = typeof data === "string" ? !data.endsWith("\n") : data.at(-1) !== 10;
    if (typeof data === "string" && !to.open) this.lastLine = data.slice(0, -1).split("\n").at(-1)!;
  }
  /** The last line written whole, on either stream: a question sees whether its call is in sight. */
  lastLine = "";
  /** Shows `waiting for <label> … 3 s` on a terminal, erased before output; `undefined`: stop. */
  waitFor(label?: string): void {
    if (label === this.#waiting?.label) return;
    this.#erase();
    this.#waiting = label === undefined ? undefined : { label, since: Date.now() };
    this.#draw();
  }
  /** No progress line from now on: the shell may have the terminal back (see `interrupt()`). */
  stopProgress(): void {
    this.waitFor(undefined);
    this.#progress = false;
  }
  #draw(): void {
    const waiting = this.#waiting;
    if (!waiting || !this.#progress || this.stderr.open) return;
    if (this.stdout.open && this.shared()) return; // never over an open line of the answer
    const spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"[Math.floor(Date.now() / 100) % 10];
    const seconds = Math.floor((Date.now() - waiting.since) / 1000);
    const label = showControls(waiting.label); // a tool's title is mm's text
    const line = fit(`${spinner} waiting for ${label}`, ` … ${seconds} s`); // the seconds in sight
    this.#write(this.stderr, `${erasing(waiting.drawnAt)}${line}\r`);
    waiting.drawnAt = terminalWidth();
  }
  #erase(): void {
    if (this.#waiting?.drawnAt === undefined) return;
    this.#write(this.stderr, erasing(this.#waiting.drawnAt));
    this.#waiting.drawnAt = undefined;
  }
  #write(to: Stream, data: string | Uint8Array): void {
    if (this.#queue.length === 0) queueMicrotask(() => this.flush());
    const last = this.#queue.at(-1);
    const joins = typeof data === "string" && typeof last?.[1] === "string" && last[0] === to;
    if (joins) last[1] += data; // text after text to the same stream: one write
    else this.#queue.push([to, data]);
  }
  flush(): void {
    for (const [to, data] of this.#queue.splice(0)) {
      const bytes = typeof data === "string" ? ENCODER.encode(data) : data;
      try {
        let written = 0;
        while (written < bytes.length) written += to.file.writeSync(bytes.subarray(written));
      } catch (error) {
        to.gone = true;
        // A reader that went away (`| head -1`) is not an error; a full disk is.
        if (to === this.stdout && !(error instanceof Deno.errors.BrokenPipe)) this.onFailure(error);
      }
    }
  }
}
/**
 * What erases the progress line drawn at a width: back to its start, and to the end of its row
 * alone. `fit()` cuts it to the width at each draw, so it takes one row; an erase to the end of the
 * screen (`CSI J`) at the top row is a cleared screen to tmux (`scroll-on-clear`), which pushes the
 * whole screen into its scrollback. Only a terminal narrowed since the draw may have wrapped it onto
 * more rows: then, and then only, the erase goes to the end of the screen (it is the last line).
 */
function erasing(drawnAt = 0): string {
  return terminalWidth() < drawnAt ? "\r\x1b[J" : ERASE;
}
const ERASE = "\r\x1b[K";
/**
 * What tells two output streams apart: a terminal, or the file's device and inode.
 * @ignore The terminal program's, exported for its tests.
 */
export type StreamFacts = { terminal: boolean; dev?: number; ino?: number | null };
/**
 * Whether stdout and stderr are one terminal, pipe or file: two terminals are one; two files are
 * one if they share an inode, and two where the system gives none (Windows): never lines glued.
 * @ignore The terminal program's, exported for its tests.
 */
export function sameStream(out: StreamFacts, err: StreamFacts): boolean {
  if (out.terminal || err.terminal) return out.terminal && err.terminal;
  return !!out.ino && out.ino === err.ino && out.dev === err.dev;
}
/** A stream's facts; a file's inode is `node:fs`'s (Deno has no API), loaded only when needed. */
function streamFacts(stream: Stream): StreamFacts {
  if (stream.terminal) return { terminal: true };
  const stat = attempt(() => process.getBuiltinModule("node:fs").fstatSync(stream.fd), undefined);
  return { terminal: false, dev: stat?.dev, ino: stat?.ino };
}
/** The terminal's width in columns, asked at each use: it may be resized at any time. */
const terminalWidth = () => attempt(() => Deno.consoleSize().columns, 0) || 80;
/** Characters a terminal shows two columns wide: East Asian scripts, most emoji. */
const WIDE =
  /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60\u{1f300}-\u{1faff}]/u;
/** `text`, cut so that it and `tail` fit one row of the terminal (its last column left free). */
function fit(text: string, tail = ""): string {
  const width = terminalWidth();
  const columns = (char: string) => WIDE.test(char) ? 2 : 1;
  let room = width - 1 - [...tail].reduce((sum, char) => sum + columns(char), 0);
  let kept = "";
  for (const char of text) {
    room -= columns(char);
    if (room < 0) return tail ? kept + tail : `${[...kept].slice(0, -1).join("")}…`;
    kept += char;
  }
  return kept + tail;
}
/**
 * Shows control characters other than newline and tab as symbols (`\x1b` as `␛`), so text on a
 * terminal cannot clear the screen, move the cursor, set the title or write the clipboard.
 * @ignore The terminal program's, exported for its tests.
 */
export function showControls(text: string): string {
  const picture = (char: string) => String.fromCharCode(0x2400 + char.charCodeAt(0)); // ESC: ␛
  // deno-lint-ignore no-control-regex
  const shown = text.replace(/\r\n/g, "\n").replace(/[\x00-\x08\x0b-\x1f]/g, picture);
  return shown.replace(/\x7f/g, "␡").replace(/[\x80-\x9f]/g, "�"); // DEL, and a C1 control
}

// ─── What a person sees: the terminal view, and the three ways to show stdout ─
/**
 * The terminal program's view of a run: on stderr the client's lines, mm's log, `--trace`,
 * `--verbose` and the progress line; on stdout the conversation, the answer alone (`-q`) or JSON
 * lines (`--json`), chosen once. It follows the session and the turn under way, for Ctrl-C.
 */
class Terminal implements View {
  readonly stdout: StdoutView;
  readonly progress: Progress;
  readonly controller = new AbortController(); // ends the lending at once: no turn to cancel
  readonly #replay: Screen; // a loaded session's past, dimmed on stderr
  readonly #mmLog: ReturnType<typeof wholeLines>;
  sessionId?: string;
  turn?: Turn;
  #firstInterrupt?: number; // the exit code of the turn's first Ctrl-C or SIGTERM
  #lastInterrupt = -Infinity;
  ending = false; // SIGTERM: no question after this turn
  agentName = "mm"; // how messages name the agent
  constructor(readonly out: Output, readonly options: Options) {
    this.stdout = conversation(out);
    if (options.quiet) this.stdout = answerAlone(out);
    if (options.json) this.stdout = jsonLines(out);
    this.#replay = new Screen(out, out.stderr, true);
    this.#mmLog = wholeLines(out);
    this.progress = new Progress(out, () => this.agentName);
  }
  log(line: string): void {
    if (!this.options.quiet) this.out.note(`[client] ${line}`); // -q: no progress lines
  }
  warn(line: string): void {
    this.out.note(`[client] ${line}`);
  }
  mmLog(chunk: Uint8Array): void {
    this.#mmLog.push(chunk);
  }
  agent(name: string): void {
    this.agentName = name;
  }
  /** mm's last log line, if it did not end it. */
  flush(): void {
    this.#mmLog.release();
  }
  frame(line: string, sent: boolean): void {
    if (this.options.trace) this.out.note(`${sent ? "→" : "←"} ${line}`);
  }
  opened(sessionId: string): void {
    this.sessionId = sessionId;
    this.out.waitFor(undefined); // mm has opened the session
    this.stdout.opened?.(sessionId);
  }
  turnStarted(turn: Turn): void {
    this.turn = turn;
    this.#firstInterrupt = undefined;
    this.stdout.turnStarted?.(turn);
    this.progress.turn(turn);
  }
  turnCancelled(): void {
    this.progress.show();
  }
  update(notification: unknown, replay: boolean): void {
    const update = field(notification, "update");
    this.stdout.update?.(notification, replay);
    if (replay && !this.options.quiet) this.#replay.show(update);
    if (this.options.verbose) showDetails(this.out, update);
    if (replay) return;
    const kind = field(update, "sessionUpdate");
    if (kind === "tool_call" || kind === "tool_call_update") this.progress.see(update);
    this.progress.show();
  }
  answered(method: string, params: unknown, answer: object): void {
    this.stdout.answered?.(method, params, answer);
  }
  permissionRequested(request: PermissionRequest): void {
    this.stdout.permissionRequested?.(request);
    this.progress.see(request.toolCall); // shown once answered, or asked
  }
  permissionAnswered(request: PermissionRequest, allowed: boolean): void {
    this.stdout.permissionAnswered?.(request, allowed);
    this.progress.see(request.toolCall, !allowed); // refused: that is its end
    this.progress.show();
  }
  turnEnded(result: TurnResult): void {
    this.turn = undefined;
    this.progress.turn(undefined);
    this.stdout.turnEnded?.(result);
    // -q shows no `[refusal]`: the exit code (1) is said why on stderr.
    const refusal = `${this.agentName} refused to answer (stop reason refusal)`;
    if (this.options.quiet && result.stopReason === "refusal") this.out.note(`[client] ${refusal}`);
    if (result.stopReason !== "cancelled" || result.cancelled) return;
    const why = result.refused ? " after a refused permission" : "";
    const said = `${this.agentName} ended the turn as cancelled; the client did not ask${why}`;
    this.out.note(`[client] ${said}`);
  }
  /**
   * Ctrl-C or SIGTERM. During a turn, the first cancels it the ACP way, and a second kills mm,
   * ending with the first one's code; SIGTERM then ends the client. Before the session exists,
   * or at the `-i` prompt, the client ends at once.
   */
  interrupt(signal: "SIGINT" | "SIGTERM"): void {
    const now = performance.now();
    if (now - this.#lastInterrupt < SAME_KEYPRESS_MS) return; // one keypress, twice
    this.#lastInterrupt = now;
    const code = signal === "SIGINT" ? 130 : 143;
    if (!this.turn) return this.controller.abort(new ClientError("", code));
    if (this.turn.cancelled) {
      this.log(`second ${signal === "SIGINT" ? "Ctrl-C" : signal}: killing ${this.agentName}`);
      return this.turn.cancel(new ClientError("", this.#firstInterrupt ?? code));
    }
    this.#firstInterrupt = code;
    if (code === 143) this.ending = true;
    // After Ctrl-C a one-shot run draws no progress line: the shell may have the terminal already
    // (a wrapper around deno ended at the keypress), and erasing the line would erase its prompt.
    if (code === 130 && !this.options.interactive) this.out.stopProgress();
    this.turn.cancel(new ClientError("", code));
  }
  /** The exit code of a lending that ended as it should. */
  exitCode(lent: Lent): number {
    const last = lent.turns.at(-1);
    if (this.ending) return 143; // SIGTERM ends the client, Ctrl-C only the turn
    if (this.options.interactive || !last) return 0;
    if (last.cancelled) return this.#firstInterrupt ?? 130;
    if (last.stopReason === "refusal") return 1;
    return last.stopReason === "cancelled" ? 130 : 0;
  }
}
/** Signals closer than this to the first are the same keypress (`deno task` forwards it). */
const SAME_KEYPRESS_MS = 300;
/**
 * What the client waits for in a turn, as the progress line says it: the call under way (its
 * title), else the model; you, while a permission is put to you; mm, to end a cancelled turn. It
 * follows what the view is told; the progress line keeps the clock.
 */
class Progress {
  readonly #calls = new Map<string, { title: string; done: boolean }>(); // the turn's own
  #turn?: Turn;
  #asking = false;
  /** `agent`: how the agent is named, `mm` or its own name. */
  constructor(readonly out: Output, readonly agent: () => string) {}
  /** A turn starts, with calls of its own; or it ended (`undefined`): nothing to wait for. */
  turn(turn?: Turn): void {
    this.#turn = turn;
    this.#calls.clear();
    this.#asking = false;
    this.show();
  }
  /** A call, as an update or a permission names it: its latest title, and whether it is over. */
  see(toolCall: unknown, over = false): void {
    const id = String(field(toolCall, "toolCallId") ?? "");
    const [title, status] = fields(toolCall, "title", "status");
    const call = this.#calls.get(id) ?? { title: id, done: false };
    if (typeof title === "string") call.title = title;
    if (over || status === "completed" || status === "failed") call.done = true;
    this.#calls.set(id, call);
  }
  /** Whether a permission is put to the person. */
  asking(on: boolean): void {
    this.#asking = on;
  }
  /** Says what the turn waits for now. */
  show(): void {
    const turn = this.#turn;
    if (!turn) return this.out.waitFor(undefined);
    if (turn.cancelled) return this.out.waitFor(`${this.agent()} to end the turn`);
    if (this.#asking) return this.out.waitFor("you");
    const running = [...this.#calls.values()].findLast((call) => !call.done);
    this.out.waitFor(running?.title ?? "the model");
  }
}
/** What stdout shows of a run; `sessions`: `--sessions`' list; `failed`: how the run ended. */
type StdoutView = View & {
  sessions?(found: Record<string, unknown>[]): void;
  failed?(message: string, exitCode: number): void;
};
/** The conversation: the question, the answer as it streams, each tool call, the stop reason. */
function conversation(out: Output): StdoutView {
  let screen = new Screen(out, out.stdout, false);
  return {
    turnStarted: (turn) => {
      out.line(out.stdout, `❓ ${turn.question}`);
      screen = new Screen(out, out.stdout, false); // a call of an earlier turn is not this turn's
    },
    update: (notification, replay) => {
      if (!replay) screen.show(field(notification, "update"));
    },
    permissionRequested: (request) => screen.see(request.toolCall),
    permissionAnswered: (request, allowed) => {
      if (!allowed) screen.refused(request.toolCall);
    },
    turnEnded: (result) => out.line(out.stdout, `[${result.stopReason}]`),
    sessions: (found) => {
      if (found.length === 0) out.note("[client] mm has no sessions");
      for (const session of found) {
        const [id, at, title, cwd] = fields(session, "sessionId", "updatedAt", "title", "cwd");
        const line = `${id}  ${at ?? "-"}  ${title ?? cwd ?? "-"}`;
        out.line(out.stdout, out.stdout.terminal ? fit(line) : line); // a long title is cut
      }
    },
  };
}
/** `-q`: stdout is the answer's text alone, a message of its own a paragraph, ending with a newline. */
function answerAlone(out: Output): StdoutView {
  let messageId: unknown; // the last chunk's, if it had one
  return {
    update: (notification, replay) => {
      const update = field(notification, "update");
      const [kind, content] = fields(update, "sessionUpdate", "content");
      if (replay || kind !== "agent_message_chunk" || field(content, "type") !== "text") return;
      const another = startsMessage(messageId, field(update, "messageId"));
      messageId = field(update, "messageId");
      if (another) out.print(out.stdout, out.stdout.open ? "\n\n" : "\n");
      out.print(out.stdout, blockText(content)); // not an image's `[image]`: text alone
    },
    turnEnded: () => {
      if (out.stdout.open) out.print(out.stdout, "\n");
    },
  };
}
/**
 * `--json`: one JSON object per line, for programs: each update as mm sent it, each of mm's
 * requests with the client's answer, each turn's result, or the error the run ended with.
 */
function jsonLines(out: Output): StdoutView {
  let sessionId: string | undefined;
  // A permission's call as the agent described it, by its id: its title and input may have come in
  // the `tool_call` before the request, which names it by its id alone.
  const calls = new Map<unknown, Record<string, unknown>>();
  return {
    opened: (id) => {
      sessionId = id;
    },
    update: (notification) => out.record(notification),
    permissionRequested: (request) => calls.set(request.toolCall.toolCallId, request.toolCall),
    answered: (method, params, answer) => {
      const id = field(field(params, "toolCall"), "toolCallId");
      const call = method === "session/request_permission" ? calls.get(id) : undefined;
      calls.delete(id);
      out.record({ request: { method, params, call }, answer });
    },
    turnEnded: ({ stopReason, text }) => out.record({ result: { stopReason, sessionId, text } }),
    sessions: (found) => {
      out.record({ sessions: found });
      if (found.length === 0) out.note("[client] mm has no sessions");
    },
    failed: (message, exitCode) => out.record({ error: { message, exitCode } }),
  };
}
/**
 * mm's stderr, whole lines as they come; `release()`: an unended one. To a file or a pipe, byte for
 * byte; at a terminal, through the filter the conversation goes through: mm may not move the
 * cursor, rewrite lines, set the title or write the clipboard there either.
 */
function wholeLines(out: Output) {
  const held: Uint8Array[] = []; // the start of a line mm has not ended yet
  let size = 0;
  const decoder = new TextDecoder(); // a character split between two pieces is decoded whole
  const pass = (part: Uint8Array) => {
    if (!out.stderr.terminal) return out.put(out.stderr, part);
    out.print(out.stderr, decoder.decode(part, { stream: true }));
  };
  const release = (...more: Uint8Array[]) => {
    for (const part of [...held.splice(0), ...more]) pass(part);
    size = 0;
  };
  const push = (chunk: Uint8Array) => {
    const end = chunk.lastIndexOf(10) + 1; // the lines this chunk ends go out now
    if (end > 0) release(chunk.subarray(0, end));
    if (end < chunk.length) held.push(chunk.subarray(end));
    size += chunk.length - end;
    if (size > 64 * 1024) release(); // a line over 64 KiB goes in pieces: a flood is bounded
  };
  return { push, release };
}
/** What `--verbose` shows on stderr, dimmed: thoughts, plans, usage, and the session's settings. */
function showDetails(out: Output, update: unknown): void {
  const [kind, content] = fields(update, "sessionUpdate", "content");
  if (kind === "agent_thought_chunk") {
    if (field(content, "type") === "text") return out.print(out.stderr, blockText(content), DIM);
    return out.note(blockText(content), DIM);
  }
  if (!isObject(update) || !Object.hasOwn(DETAILS, String(kind))) return;
  for (const line of DETAILS[String(kind)](update)) out.note(line, DIM);
}
/** What `--verbose` shows of the updates that are not the conversation: plans, usage, settings. */
const DETAILS: Record<string, (update: Record<string, unknown>) => string[]> = {
  plan: ({ entries }) => [
    "plan:",
    ...list(entries).map((e) => `  [${field(e, "status")}] ${field(e, "content")}`),
  ],
  usage_update: ({ used, size, cost }) => {
    const paid = isObject(cost) ? `, cost ${cost.amount} ${cost.currency}` : "";
    return [`usage: ${used} of ${size} tokens${paid}`];
  },
  available_commands_update: ({ availableCommands }) => [
    `commands: ${list(availableCommands).map((c) => `/${field(c, "name")}`).join(", ")}`,
  ],
  current_mode_update: ({ currentModeId }) => [`mode: ${currentModeId}`],
  session_info_update: ({ title }) => typeof title === "string" ? [`title: ${title}`] : [],
  config_option_update: ({ configOptions }) =>
    list(configOptions).map((o) => `config: ${field(o, "id")} = ${field(o, "currentValue")}`),
};

/** A tool call as shown so far; `refused`: its permission was, and that is its end as shown. */
type Call = {
  title: string;
  lines: string[];
  rawOutput?: unknown;
  done?: boolean;
  refused?: true;
  /** What a terminal the client never lent printed, as the agent's `_meta` says; its exit. */
  terminal?: { output: string; exitCode?: unknown; shown?: true };
};
/**
 * The conversation on one stream, as ACP means it: the answer as it streams, each tool call once
 * (and again when renamed), its content as it grows, a refusal; `replay`: dimmed, with the questions.
 */
class Screen {
  readonly #calls = new Map<string, Call>();
  #textBreak = false; // the next text starts a line: it follows a tool call or a block
  #messageId: unknown; // the last chunk of text's, if it had one
  readonly #style?: number;
  constructor(readonly out: Output, readonly to: Stream, readonly replay: boolean) {
    this.#style = replay ? DIM : undefined;
  }
  /** Shows one `session/update`: a `case` per kind the user sees; any other kind shows nothing. */
  show(update: unknown): void {
    const [kind, content] = fields(update, "sessionUpdate", "content");
    switch (kind) {
      case "agent_message_chunk":
        return this.#text(content, field(update, "messageId"));
      case "user_message_chunk":
        if (this.replay) this.out.line(this.to, `❓ ${blockText(content)}`, DIM);
        return;
      case "tool_call":
      case "tool_call_update":
        return this.#toolCall(update);
    }
  }
  /** The answer as it streams, a message of its own a paragraph; a non-text block on its own line. */
  #text(content: unknown, messageId: unknown): void {
    const text = blockText(content);
    const isText = field(content, "type") === "text";
    if (text === "") return; // a chunk of only `_meta`
    const another = startsMessage(this.#messageId, messageId);
    this.#messageId = messageId;
    if (another && !this.#textBreak) this.out.print(this.to, this.to.open ? "\n\n" : "\n");
    if (this.#textBreak && this.to.open) this.out.print(this.to, "\n"); // on a line of its own
    this.#textBreak = !isText;
    if (isText) return this.out.print(this.to, text, this.#style);
    this.out.line(this.to, text, this.#style);
  }
  /** A tool call or its update: its title, its state, the content lines not shown yet. */
  #toolCall(update: unknown): void {
    const call = this.see(update);
    const [status, content, raw] = fields(update, "status", "content", "rawOutput");
    if (status === "completed" || status === "failed") call.done = true;
    if (raw !== undefined) call.rawOutput = raw;
    const failed = status === "failed" && !call.refused; // refused: said so already
    if (failed) this.out.line(this.to, `✖ ${call.title} failed`, this.#style ?? RED);
    let lines = Array.isArray(content) ? content.flatMap(contentLines) : call.lines;
    if (call.done && lines.length === 0) lines = rawOutputLines(call.rawOutput);
    for (const line of unshown(call.lines, lines)) this.out.line(this.to, `│ ${line}`, this.#style);
    call.lines = lines;
    this.#terminalOutput(call, update);
  }
  /**
   * A terminal the client never lent (it says `terminal: false`) that an agent reports on anyway,
   * the output in its update's `_meta` (`terminal_output_delta`, `terminal_exit`): shown as
   * `rawOutput` is, once the call has ended, with its exit code when not 0.
   */
  #terminalOutput(call: Call, update: unknown): void {
    const meta = field(update, "_meta");
    const data = field(field(meta, "terminal_output_delta"), "data");
    const exit = field(meta, "terminal_exit");
    if (typeof data === "string" || exit !== undefined) call.terminal ??= { output: "" };
    if (!call.terminal || call.terminal.shown) return;
    if (typeof data === "string") call.terminal.output += data;
    if (exit !== undefined) call.terminal.exitCode = field(exit, "exit_code");
    if (!call.done && exit === undefined) return;
    call.terminal.shown = true;
    const { output, exitCode } = call.terminal;
    for (const line of rawOutputLines(output)) this.out.line(this.to, `│ ${line}`, this.#style);
    if (typeof exitCode === "number" && exitCode !== 0) {
      this.out.line(this.to, `│ [exit code ${exitCode}]`, this.#style);
    }
  }
  /** The call an update or a permission is about: shown when first seen, and when renamed. */
  see(toolCall: unknown): Call {
    const id = String(field(toolCall, "toolCallId") ?? "");
    const title = field(toolCall, "title");
    const known = this.#calls.get(id);
    const call: Call = known ?? { title: typeof title === "string" ? title : id, lines: [] };
    let shown = known ? undefined : `🛠️ ${call.title}`;
    if (typeof title === "string" && title !== call.title) {
      shown = `🛠️ ${call.title} → ${title}`;
      call.title = title;
    }
    this.#calls.set(id, call);
    this.#textBreak = true;
    if (shown) this.out.line(this.to, shown, this.#style);
    return call;
  }
  /** A refused permission: the call's end, as shown. */
  refused(toolCall: unknown): void {
    const call = this.see(toolCall);
    call.done = true;
    call.refused = true;
    this.out.line(this.to, `✖ ${call.title} refused`, RED);
  }
}
/** A finished call's `rawOutput` (if any) as lines, 20 at most: a string as text, else as JSON. */
function rawOutputLines(raw: unknown): string[] {
  if (raw === undefined) return [];
  const all = textLines(typeof raw === "string" ? raw : JSON.stringify(raw));
  return all.length <= 20 ? all : [...all.slice(0, 20), `… (${all.length - 20} more lines)`];
}
/**
 * Of a call's content, the lines not shown yet. ACP: an update's `content` replaces the call's: one
 * that extends what was shown adds its new part (a last line that grew, again whole), else all.
 */
function unshown(shown: string[], lines: string[]): string[] {
  const last = shown.length - 1;
  const grew = (line: string, i: number) => i === last && lines[i]?.startsWith(line);
  if (!shown.every((line, i) => lines[i] === line || grew(line, i))) return lines; // a replacement
  return lines.slice(lines[last] === shown[last] ? last + 1 : last);
}
/** An item of a tool call's content as lines: text, a diff's size, a terminal, another block. */
function contentLines(item: unknown): string[] {
  const type = field(item, "type");
  if (type === "diff") return [`diff ${field(item, "path")} (${diffSize(item)} lines)`];
  if (type === "terminal") return [`[terminal ${field(item, "terminalId")}]`];
  return textLines(blockText(type === "content" ? field(item, "content") : item));
}
/** A diff's size, `+2 −1`: the lines of `newText` not matched by one of `oldText` are added. */
function diffSize(diff: unknown): string {
  const [before, after] = fields(diff, "oldText", "newText").map((t) => textLines(`${t ?? ""}`));
  const surplus = new Map<string, number>(); // of each line, how many more `before` has
  for (const line of before) surplus.set(line, (surplus.get(line) ?? 0) + 1);
  for (const line of after) surplus.set(line, (surplus.get(line) ?? 0) - 1);
  const kept = before.length - [...surplus.values()].reduce((sum, n) => sum + Math.max(n, 0), 0);
  return `+${after.length - kept} −${before.length - kept}`;
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

// ─── Asking the person ───────────────────────────────────────────────────────
/** The key of each kind of option: `a` allow once, `A` allow always, `r` and `R` reject. */
const OPTION_KEYS = new Map([
  ["allow_once", "a"],
  ["allow_always", "A"],
  ["reject_once", "r"],
  ["reject_always", "R"],
]);
/**
 * An option of mm's that the person can pick, and its key.
 * @ignore The terminal program's, exported for its tests.
 */
export type KeyedOption = { key: string; option: Record<string, unknown> };
/**
 * mm's options with a key each, in mm's order: of each kind the first, if it has an id.
 * @ignore The terminal program's, exported for its tests.
 */
export function optionKeys(options: unknown): KeyedOption[] {
  const keyed: KeyedOption[] = [];
  for (const option of list(options).filter(isObject)) {
    const key = OPTION_KEYS.get(String(option.kind));
    const taken = keyed.some((other) => other.key === key);
    if (key && !taken && typeof option.optionId === "string") keyed.push({ key, option });
  }
  return keyed;
}
/** The person at the terminal, as an {@linkcode Asker}; once stdin has ended, nobody answers. */
function personAsker(
  out: Output,
  keyboard: Keyboard,
  ctrlC: () => void,
  progress: Progress,
): Asker {
  return async (request, signal) => {
    progress.asking(true);
    progress.show();
    try {
      return await askPerson(out, keyboard, ctrlC, request, signal);
    } finally {
      // Not waiting for you any more: the answer says what is next; a question withdrawn, now.
      progress.asking(false);
      if (signal.aborted) progress.show();
    }
  };
}
/**
 * Puts a permission to the person: what the call would do, then mm's options, each with its key.
 * One key answers; Enter is the safe choice. `undefined`: nobody answered (the question was
 * withdrawn, the turn cancelled, or stdin has ended).
 */
async function askPerson(
  out: Output,
  keyboard: Keyboard,
  ctrlC: () => void,
  request: PermissionRequest,
  signal: AbortSignal,
): Promise<Outcome | undefined> {
  if (signal.aborted || keyboard.ended) return undefined;
  const keys = optionKeys(request.options);
  const withdrawn = new Promise<void>((done) => signal.addEventListener("abort", () => done()));
  const stop = Promise.race([withdrawn, keyboard.lost.catch(() => {})]);
  keyboard.watchForeground(stop);
  const safe = keys.find(({ key }) => key === "r") ?? keys.find(({ key }) => key === "R");
  const named = (keyed?: KeyedOption) => String(keyed?.option.name ?? keyed?.option.kind);
  const choices = keys.map((keyed) => `[${keyed.key}] ${named(keyed)}`).join("  ");
  // The call asked about, named again where other lines came after it: the question is its own.
  const title = request.title ?? String(request.toolCall.toolCallId ?? "");
  if (!out.lastLine.endsWith(showControls(title))) out.note(`   call: ${title}`);
  for (const line of whatItWouldDo(request.toolCall)) out.note(`   ${line}`); // whole: nothing hidden
  const enter = safe ? named(safe) : "cancel";
  out.note(`   ${choices}  (Enter: ${enter})`);
  const letters = keys.map((keyed) => keyed.key);
  // A key that answers nothing ("y", out of habit) is told the keys that do, once.
  const hint = `   keys that answer: ${[...letters, `Enter (${enter})`].join(", ")}`;
  const key = await readKey(keyboard, letters, stop, ctrlC, () => out.note(hint));
  if (key === undefined) return undefined;
  const picked = keys.find((keyed) => keyed.key === key) ?? safe; // Enter: the safe one
  if (!picked) return { outcome: "cancelled" };
  return { outcome: "selected", optionId: String(picked.option.optionId) };
}
/** What a call asked about would do: its kind, its command or input, its diffs, its places. */
function whatItWouldDo(toolCall: Record<string, unknown>): string[] {
  const [kind, input] = fields(toolCall, "kind", "rawInput");
  const lines = [`kind: ${typeof kind === "string" ? kind : "other"}`];
  if (!described(toolCall)) {
    lines.push("a call the agent did not describe: nothing says what it does");
  }
  // A command, as a shell tool's input has it, or an MCP tool's arguments (codex's `rawInput`).
  const command = field(input, "command") ?? field(field(input, "arguments"), "command");
  if (typeof command === "string") lines.push(`command: ${command}`);
  else if (isObject(input) && Object.keys(input).length > 0) {
    lines.push(`input: ${JSON.stringify(input)}`);
  }
  const diffs = list(field(toolCall, "content")).filter((item) => field(item, "type") === "diff");
  lines.push(...diffs.flatMap(contentLines));
  for (const place of list(field(toolCall, "locations"))) {
    const line = field(place, "line");
    lines.push(`location: ${field(place, "path")}${typeof line === "number" ? `:${line}` : ""}`);
  }
  return lines;
}
/** A key this soon after the question showed was typed before it: not an answer. */
const TYPED_AHEAD_MS = 250;
/**
 * One of `keys`, or Enter (`\r`, or `\n` where the terminal maps CR to NL, or Ctrl-J), read in
 * cbreak mode; `undefined` when `stop` comes first, or stdin ends. `stray()`, once, at the first
 * key that is neither.
 */
async function readKey(
  keyboard: Keyboard,
  keys: string[],
  stop: Promise<unknown>,
  ctrlC: () => void,
  stray: () => void,
) {
  const shown = performance.now();
  let hinted = false;
  keyboard.keys(true);
  try {
    for (;;) {
      const read = await keyboard.next(stop);
      if (read === undefined || read.done) return undefined; // stopped, or nobody is left to type
      const typed = [...new TextDecoder().decode(read.value)];
      if (typed.includes("\x03")) ctrlC(); // Windows: the key is the interrupt
      // Typed before the question showed (with -i, the next question, maybe): not its answer.
      if (performance.now() - shown < TYPED_AHEAD_MS) {
        keyboard.holdBack(typed.join(""));
        continue;
      }
      // Keys that come together (a paste, a fast typist, ssh): the first that answers, answers.
      const key = typed.find((k) => k === "\r" || k === "\n" || keys.includes(k));
      if (key) return key;
      if (hinted || typed.includes("\x03")) continue; // Ctrl-C cancels: no keys to tell
      hinted = true;
      stray();
    }
  } finally {
    keyboard.keys(false);
  }
}

// ─── The questions of -i and - ───────────────────────────────────────────────
/** Why the terminal cannot be read any more, most often, and what to do. */
const LOST_TERMINAL = "most likely the shell took it back when npm's Node wrapper around deno " +
  'ended at Ctrl-C; put the real deno binary first on PATH (the README\'s "Two commands" says how)';
/** A read of stdin. */
type ReadResult = ReadableStreamReadResult<Uint8Array>;
/**
 * stdin, read by one reader for the questions of `-i` and `-` and a permission's keys: a chunk
 * read for a permission question that ended meanwhile (its turn was cancelled) goes to the next
 * reader. `lost` rejects when the terminal is taken from the client.
 */
class Keyboard {
  #reader?: ReadableStreamDefaultReader<Uint8Array>;
  #read?: Promise<ReadResult>; // asked for, and not taken yet
  #keys = false; // a question reads keys: the terminal is in cbreak mode
  #readsKeys = false; // the read under way began in cbreak mode
  #line?: string; // a line begun in cbreak mode after its question ended, as typed so far
  #ending = false; // a Ctrl-D was typed there: the end of input
  #typedAhead = false; // line mode again: what the next read gives may be keys typed before
  #held: string[] = []; // typed before a question showed, for the next reader of lines
  ended = false; // stdin has ended: nobody is left to type
  readonly #lost = Promise.withResolvers<never>();
  readonly lost = this.#lost.promise;
  constructor(readonly out: Output) {
    this.lost.catch(() => {}); // read where it matters, by each wait
  }
  /**
   * Keys one at a time (cbreak: Ctrl-C is still SIGINT; Windows has none, Ctrl-C is a key), or
   * lines again. A read begun in cbreak mode keeps it (see {@linkcode Keyboard.next}).
   */
  keys(on: boolean): void {
    this.#keys = on;
    if (on || !this.#read || !this.#readsKeys) {
      Deno.stdin.setRaw(on, { cbreak: Deno.build.os !== "windows" });
    }
  }
  /**
   * The next chunk of stdin, or `undefined` when `stop` settles first (the chunk is kept). Keys
   * read in cbreak mode for a question that ended meanwhile (its turn was cancelled) begin a line
   * that is read on in that mode, as line mode would: Deno drops an end of input (Ctrl-D) that
   * such a read meets once the terminal is back in line mode.
   */
  async next(stop: Promise<unknown> = new Promise(() => {})): Promise<ReadResult | undefined> {
    if (this.#ending) this.ended = true;
    if (this.#ending) return { done: true, value: undefined };
    const held = this.#keys ? undefined : this.#held.shift();
    if (held !== undefined) return { done: false, value: ENCODER.encode(held) };
    this.#reader ??= Deno.stdin.readable.getReader();
    if (!this.#read) this.#readsKeys = this.#keys || this.#line !== undefined;
    this.#read ??= this.#reader.read();
    const read = await Promise.race([this.#read, stop.then(() => undefined), this.lost]);
    if (!read) return read;
    this.#read = undefined;
    if (read.done) this.ended = true;
    // Keys typed in cbreak mode and not read before the terminal went back to line mode come as
    // one piece that no line end ends (Linux hands them on at the switch): they are still keys.
    const typedAhead = this.#typedAhead && read.value?.at(-1) !== 10;
    this.#typedAhead = false;
    if (read.done || this.#keys || (!this.#readsKeys && !typedAhead)) return read;
    const line = this.#typed(new TextDecoder().decode(read.value));
    if (line === undefined) return this.next(stop); // the line goes on, or input has ended
    return { done: false, value: ENCODER.encode(line) };
  }
  /**
   * Keys typed in cbreak mode after a question ended, as line mode takes them, echoed: Backspace
   * erases, Enter ends a line, Ctrl-D at a line's start is the end of input. The lines they end;
   * once no line is left half typed, lines again.
   */
  #typed(keys: string): string | undefined {
    let line = this.#line ?? "";
    let lines = "";
    for (const key of keys) {
      this.#ending = key === "\x04" && line === "";
      if (this.#ending) break;
      if (key === "\r" || key === "\n") lines += `${line}\n`;
      if (key === "\r" || key === "\n") line = "";
      if (key === "\x7f" && line !== "") this.out.put(this.out.stderr, "\b \b"); // as sent
      if (key === "\x7f") line = [...line].slice(0, -1).join("");
      else if (key !== "\x04") this.out.print(this.out.stderr, key.replace("\r", "\n"));
      if (!"\r\n\x7f\x04".includes(key)) line += key;
    }
    this.#line = line === "" ? undefined : line;
    if (this.#line === undefined) {
      Deno.stdin.setRaw(false);
      this.#typedAhead = true;
    }
    return lines === "" ? undefined : lines;
  }
  /** Keeps what was typed ahead of a question for the next reader of lines (Enter ends a line). */
  holdBack(text: string): void {
    this.#held.push(text.replaceAll("\r", "\n"));
  }
  /** Every chunk, to the end of stdin. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    for (let read = await this.next(); read && !read.done; read = await this.next()) {
      yield read.value;
    }
  }
  /**
   * Ends the run if the client is no longer in the terminal's foreground while it waits for the
   * person (until `until` settles): the program the shell started around deno (npm's Node
   * wrapper) ended at Ctrl-C, and the shell took the terminal back. A read that began before
   * cannot tell: it would wait on, racing the shell for what the person types. `ps` says it (`+`).
   */
  watchForeground(until: Promise<unknown>): void {
    if (!granted({ name: "run", command: "ps" })) return;
    let waiting = true;
    const stopWaiting = () => {
      waiting = false;
    };
    until.then(stopWaiting, stopWaiting);
    const ps = new Deno.Command("ps", {
      args: ["-o", "stat=", "-p", `${Deno.pid}`],
      stderr: "null",
    });
    const lost = "the shell has it back";
    const check = async () => {
      if (!waiting) return;
      const output = await attempt(() => ps.output(), undefined)?.catch(() => undefined);
      if (!output?.success || !waiting) return; // no ps here: nothing to go by
      if (new TextDecoder().decode(output.stdout).includes("+")) return after(FOREGROUND_MS, check);
      this.#lost.reject(
        new ClientError(`cannot read the terminal any more (${lost}): ${LOST_TERMINAL}`),
      );
    };
    after(FOREGROUND_MS, check);
  }
}
/** How often the client makes sure it has the terminal while it waits for the person. */
const FOREGROUND_MS = 300;
/** The lines of stdin, for `-i` and `-`; a line over the limit, or a failed read, is an error. */
async function* stdinLines(chunks: AsyncIterable<Uint8Array>) {
  const reader = new LineReader();
  try {
    for await (const chunk of chunks) yield* reader.push(chunk);
  } catch (error) {
    if (error instanceof LineTooLongError) throw new ClientError(`stdin has ${error.message}`, 2);
    if (error instanceof ClientError) throw error;
    const reason = errorText(error).replace(/ \(os error \d+\)$/, ""); // the system's words
    if (!Deno.stdin.isTerminal()) throw new ClientError(`cannot read stdin: ${reason}`);
    // The program the shell started, a wrapper around deno (npm's bin.cjs, a Node process), ended
    // at Ctrl-C and the shell took the terminal back; the client, in the background, reads EIO.
    throw new ClientError(`cannot read the terminal any more (stdin: ${reason}): ${LOST_TERMINAL}`);
  }
  const last = reader.flush();
  if (last !== undefined) yield last;
}
/** `-`: the question is all of stdin (at a terminal, after a hint); empty: the default one. */
async function questionFromStdin(out: Output, keyboard: Keyboard): Promise<string> {
  const hint = "[client] reading the question from stdin; end it with Ctrl-D at a line's start";
  if (Deno.stdin.isTerminal()) out.note(hint);
  const lines = await Array.fromAsync(stdinLines(keyboard.chunks()));
  return lines.join("\n").trim() || DEFAULT_QUESTION;
}
/**
 * The questions of `--interactive`: the first (if given), then each line of stdin, after a `> `
 * at a terminal, blank lines skipped, until the end of input, or until `stopped()`.
 */
async function* questionsOf(
  first: string | undefined,
  out: Output,
  keyboard: Keyboard,
  stopped: () => boolean,
): AsyncGenerator<string> {
  if (first !== undefined) yield first;
  const lines = stdinLines(keyboard.chunks()); // shared with the permission questions
  for (;;) {
    if (stopped()) return; // SIGTERM: the client ends after the turn
    const question = await nextQuestion(out, keyboard, lines);
    if (question === undefined) return; // end of input
    yield question;
  }
}
/** The next question of `--interactive`, blank lines skipped, after a prompt on a terminal. */
async function nextQuestion(out: Output, keyboard: Keyboard, lines: AsyncGenerator<string>) {
  const atTerminal = Deno.stdin.isTerminal();
  for (;;) {
    if (atTerminal) out.print(out.stderr, "> ");
    const answered = Promise.withResolvers<void>();
    if (atTerminal) keyboard.watchForeground(answered.promise);
    const next = await Promise.race([lines.next(), keyboard.lost]).finally(answered.resolve);
    out.stderr.open = false; // the person's Enter ended the prompt's line
    if (next.done && atTerminal) out.print(out.stderr, "\n"); // Ctrl-D did not
    if (next.done || next.value.trim()) return next.value?.trim();
  }
}

// ─── The command line ────────────────────────────────────────────────────────
/** The names of the tools the client lends, for the texts that speak of them: `host_info, clock`. */
const TOOL_NAMES = TOOLS.map((tool) => tool.name).join(", ");
/**
 * The default question.
 * @ignore The terminal program's, exported for its tests.
 */
export const DEFAULT_QUESTION =
  "What operating system does my machine run, and how much memory does it have?";
/**
 * The command line's options, as `parseArgs` reads them (`type`, `short`, `default`), with the
 * name of the value each takes and the help line of the usage. Adding an option is one entry.
 * @ignore The terminal program's, exported for its tests.
 */
export const OPTIONS = {
  request: {
    type: "boolean",
    help: 'discovery mode "request" (default agent file: agent-request.yaml)',
  },
  agent: { type: "string", value: "FILE", help: "the agent file to give mm (default: agent.yaml)" },
  mm: {
    type: "string",
    value: "PATH",
    help: "the mm executable (default: $MM_BIN, else mm on PATH)",
  },
  interactive: {
    type: "boolean",
    short: "i",
    help: "more questions after the first, one per line, one session",
  },
  quiet: {
    type: "boolean",
    short: "q",
    help: "stdout is the answer alone; stderr has no [client] progress lines",
  },
  json: {
    type: "boolean",
    help: "stdout is JSON lines: updates, requests and answers, the result",
  },
  "no-ask": {
    type: "boolean",
    help: "never ask; refuse what the client did not offer, as the Node demo does",
  },
  resume: { type: "string", value: "ID", help: "continue an earlier session of mm" },
  continue: { type: "boolean", help: "continue the most recent session of this folder" },
  sessions: { type: "boolean", help: "list mm's sessions and exit" },
  trace: { type: "boolean", help: "print every JSON-RPC frame on stderr (→ sent, ← received)" },
  verbose: { type: "boolean", help: "also show thoughts, plans, usage and settings on stderr" },
  timeout: {
    type: "string",
    value: "SECONDS",
    default: "30",
    help: "how long to wait for mm to start a session (default 30)",
  },
  "turn-timeout": {
    type: "string",
    value: "SEC",
    help: "cancel a turn after SEC s of silence from mm, its waits for us aside (exit 124)",
  },
  help: { type: "boolean", short: "h", help: "show this help and exit" },
  version: { type: "boolean", help: "print the version and exit" },
} as const;
/**
 * An option's name: `agent`, `turn-timeout`.
 * @ignore The terminal program's, exported for its tests.
 */
export type OptionName = keyof typeof OPTIONS;
/**
 * The usage text of `--help`, naming the command as it was started (`client.ts`, or installed).
 * @ignore The terminal program's, exported for its tests.
 */
export function usage(program = "client.ts"): string {
  const lines = Object.entries(OPTIONS).map(([name, option]) => usageLine(name, option));
  return `usage: ${program} [options] [question | -] [-- COMMAND [ARGS…]]

Lends mini-me (mm -acp) the client's tools (${TOOL_NAMES}), asks it a question
("-": read the question from stdin). After --, another ACP agent to run instead of
mm, as given (npx -y @agentclientprotocol/claude-agent-acp): its tools come from the
client's own MCP server, on 127.0.0.1. A -- first of all is deno task's: dropped.

options:
${lines.join("\n")}

--json writes one JSON object per line, of these kinds, told apart by their keys:
  {"sessionId", "update"}  each session/update as the agent sent it: update.sessionUpdate
                           names its kind (agent_message_chunk, tool_call, …)
  {"request", "answer"}    each request of the agent's: request.method, request.params (a
                           permission's also request.call, the call as described); the
                           client's answer: answer.result or answer.error
  {"result"}               a turn ended (one per turn with -i): result.stopReason,
                           result.sessionId, result.text
  {"sessions"}             --sessions' list: sessions
  {"error"}                the run failed, the last line: error.message, error.exitCode`;
}
/** One option's line of the usage: `  -i, --interactive  more questions…`. */
function usageLine(name: string, option: { value?: string; short?: string; help: string }) {
  const letter = option.short ? `-${option.short}, ` : "";
  const value = option.value ? ` ${option.value}` : "";
  return `${`  ${letter}--${name}${value}`.padEnd(20)} ${option.help}`;
}
/**
 * What the command line says: a flag is `true` if given, a value is as typed.
 * @ignore The terminal program's, exported for its tests.
 */
export type OptionValues = {
  [name in OptionName]?: (typeof OPTIONS)[name] extends { type: "string" } ? string : boolean;
};
/**
 * A run's options: those typed, the first question (`-`: stdin), the timeouts in seconds.
 * @ignore The terminal program's, exported for its tests.
 */
export type Options = OptionValues & {
  question?: string;
  seconds: number;
  turnSeconds?: number;
  /** The name the command was started by, for its messages (`--called`, baked in by a task). */
  program: string;
  /** Another agent than mm to run, as given after `--`: its command and arguments. */
  command?: string[];
};
/**
 * The options, or a usage error (exit 2).
 * @ignore The terminal program's, exported for its tests.
 */
export function parseCommandLine(argv: readonly string[]): Options {
  const { program, args } = ownArguments(argv);
  const { values, words, command } = readCommandLine(args);
  const problem = combinationProblem(values, words, command);
  if (problem) throw usageError(problem);
  const question = words || (values.interactive ? undefined : DEFAULT_QUESTION);
  const turn = values["turn-timeout"];
  const turnSeconds = turn === undefined ? undefined : secondsOf("turn-timeout", turn);
  const seconds = secondsOf("timeout", String(values.timeout));
  const options = { ...values, question, seconds, turnSeconds, program };
  return command ? { ...options, command } : options;
}
/**
 * The options typed and the words of the question, read by `parseArgs`: `--name value`,
 * `--name=value`, `-iq` for `-i -q`; `--` ends the options. Its errors are said in the client's
 * words, and the option at fault is found among the tokens it reads when it does not refuse.
 */
function readCommandLine(
  args: string[],
): { values: OptionValues; words: string; command?: string[] } {
  const config = { args, options: OPTIONS, allowPositionals: true, tokens: true } as const;
  let parsed;
  try {
    parsed = parseArgs({ ...config, strict: true });
  } catch (error) {
    const { tokens } = parseArgs({ ...config, strict: false });
    throw usageError(parseProblem(error, tokens));
  }
  // parseArgs takes no word that starts with "-" as a value, lest it swallow an option; nor does
  // the client take a lone "-", which is the question from stdin: `--agent -` names no file.
  for (const token of parsed.tokens) {
    if (token.kind === "option" && token.value === "-" && !token.inlineValue) {
      throw usageError(`${token.rawName} needs a value`);
    }
  }
  // After `--`, the command of another agent than mm: its words, as given.
  const end = parsed.tokens.findIndex((token) => token.kind === "option-terminator");
  const positionals = (tokens: ArgToken[]) =>
    tokens.flatMap((token) => token.kind === "positional" ? [token.value] : []);
  const before = end < 0 ? parsed.tokens : parsed.tokens.slice(0, end);
  const words = positionals(before).join(" ").trim();
  if (end < 0) return { values: parsed.values, words };
  const command = positionals(parsed.tokens.slice(end + 1));
  if (command.length === 0) throw usageError("-- needs the command of an agent after it");
  return { values: parsed.values, words, command };
}
/** What `parseArgs` refused (its error `code`), said of the first option it refuses for it. */
function parseProblem(error: unknown, tokens: ArgToken[]): string {
  const code = field(error, "code");
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const option = Object.hasOwn(OPTIONS, token.name) ? OPTIONS[token.name as OptionName] : null;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && !option) return unknownOption(token.rawName);
    if (code !== "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" || !option) continue;
    const { rawName, value } = token;
    if (option.type === "boolean" && value !== undefined) return `${rawName} takes no value`;
    if (value === undefined) return `${rawName} needs a value`;
    if (token.inlineValue || !value.startsWith("-")) continue;
    // The next word starts with "-": an option, so the value is missing, or a negative number,
    // which was meant as the value (`--timeout -1`) and is spoken of as one.
    const number = ["timeout", "turn-timeout"].includes(token.name) && /^-[\d.]/.test(value);
    return number ? secondsProblem(token.name, value) : `${rawName} needs a value`;
  }
  throw error; // none the client has words for: its own message, as any other error
}
/** A token of `parseArgs`: an option (with its value, if any), a word, or `--`. */
type ArgToken = NonNullable<ReturnType<typeof parseArgs>["tokens"]>[number];
/** Whether `--json` is among the options, read leniently: for a command line that has a mistake. */
function asksForJson(argv: readonly string[]): boolean {
  const { args } = ownArguments(argv);
  const lenient = { args, options: OPTIONS, allowPositionals: true, strict: false } as const;
  return attempt(() => parseArgs(lenient).values.json === true, false);
}
/**
 * The client's own arguments, and the name it was started by: a first `--called NAME`, which the
 * install and compile tasks bake in, names it; a first `--`, which `deno task` passes on, is dropped.
 */
function ownArguments(argv: readonly string[]): { program: string; args: string[] } {
  const called = argv[0] === "--called" && argv.length > 1;
  const program = called ? argv[1] : "client.ts";
  const args = argv.slice(called ? 2 : 0);
  return { program, args: args[0] === "--" ? args.slice(1) : args };
}
/** A usage error: its message, then the usage; exit 2. */
class UsageError extends ClientError {
  constructor(message: string) {
    super(message, 2);
  }
}
const usageError = (message: string) => new UsageError(message);
/** An option this client does not have, and the long one it may be a typo of (`--tiemout`). */
function unknownOption(rawName: string): string {
  const typed = rawName.slice(2); // "" for `-x`: a name under 3 characters is not guessed at
  const meant = Object.keys(OPTIONS).find((name) => typed.length >= 3 && oneEditApart(typed, name));
  if (meant) return `unknown option ${rawName}; did you mean --${meant}?`;
  return `unknown option ${rawName}`;
}
/** Options that cannot go together, or values that cannot be. */
function combinationProblem(values: OptionValues, words: string, command?: string[]) {
  const { json, quiet, resume, sessions, interactive } = values;
  const forMm = (["mm", "agent", "request"] as const).find((name) => values[name] !== undefined);
  if (command && forMm) return `--${forMm} is mm's; with -- COMMAND another agent runs`;
  if (json && quiet) return "--json and --quiet both say what stdout is: pick one";
  if (sessions && quiet) return "--sessions lists on stdout, where --quiet writes only an answer";
  if (values.continue && resume !== undefined) {
    return "--continue and --resume both name the session: pick one";
  }
  if (sessions && (words || resume || values.continue || interactive)) {
    return "--sessions lists the sessions and exits: it takes no question or session to open";
  }
  if (values.mm === "") return '--mm needs a path, got ""';
  if (values.agent === "") return '--agent needs a file, got ""';
  if (resume === "") return '--resume needs a session id, got ""';
  if (words === "-" && interactive) {
    return "- reads the question from stdin, which --interactive reads too";
  }
  return undefined;
}
/** A number of seconds above 0, decimal (`1.5`; not `0x10`, not `-1`). */
function secondsOf(name: string, text: string): number {
  if (/^(\d+\.?\d*|\.\d+)$/.test(text) && Number(text) > 0) return Number(text);
  throw usageError(secondsProblem(name, text));
}
/** What is wrong with a number of seconds given for `--<name>`. */
const secondsProblem = (name: string, text: string) =>
  `--${name} takes a number of seconds above 0, got ${JSON.stringify(text)}`;
/** Whether one character added, left out, replaced, or two neighbours swapped make `a` into `b`. */
function oneEditApart(a: string, b: string): boolean {
  if (a === b || Math.abs(a.length - b.length) > 1) return false;
  if (a[0] === b[0]) return oneEditApart(a.slice(1), b.slice(1)); // alike so far: look further on
  if (a.slice(1) === b.slice(1) || a.slice(1) === b || a === b.slice(1)) return true;
  return a[0] === b[1] && a[1] === b[0] && a.slice(2) === b.slice(2);
}

/**
 * The YAML reader, loaded when an agent file is read: a program that imports `lend()` reads none,
 * and does not even resolve it. Named by a constant, which Deno does not fetch ahead of the run
 * as it does a literal `import("…")` (`deno task compile` embeds it with `--include`).
 */
const JS_YAML = "npm:js-yaml@^5.5.0";
/** Reads the agent file, in the current folder or else next to `client.ts`; its errors name it. */
async function readAgentFile(name: string, given: boolean) {
  const here = import.meta.dirname;
  const places = here && !/^([/\\]|[A-Za-z]:)/.test(name) ? [name, `${here}/${name}`] : [name];
  for (const path of places) {
    const problem = (what: string) => new ClientError(`agent file ${path} ${what}`, 2);
    if (!granted({ name: "read", path })) {
      const remedy = `copy it into this folder, or add --allow-read=${path}`; // tasks' flags are fixed
      throw problem(`is outside what this run may read (${remedy})`);
    }
    let text;
    try {
      text = Deno.readTextFileSync(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      if (error instanceof Deno.errors.IsADirectory) throw problem("is a directory");
      throw problem(`cannot be read: ${errorText(error)}`);
    }
    const document = await readYaml(text, problem);
    if (document != null && !isObject(document)) throw problem("is not a YAML mapping of keys");
    const tools = field(field(document, "acp"), "clientTools");
    const [enabled, discovery] = fields(tools, "enabled", "discovery");
    return { path, config: { enabled: enabled !== false, discovery: String(discovery ?? "meta") } };
  }
  // The file travels with client.ts: a copy without it finds none, and is told what to do.
  const hint = given ? "" : ` (copy it beside client.ts, or pass --agent FILE)`;
  throw new ClientError(`agent file not found: ${name}${hint}`, 2);
}
/**
 * An agent file's first YAML document, as mm reads it (Go's YAML): a file with none (empty, or
 * only comments) has no keys. A mistake is named with its line.
 */
async function readYaml(text: string, problem: (what: string) => ClientError): Promise<unknown> {
  const { loadAll, YAMLException } = (await import(JS_YAML)) as typeof import("npm:js-yaml@^5.5.0");
  try {
    return loadAll(text)[0];
  } catch (error) {
    if (!(error instanceof YAMLException)) throw problem(`cannot be read: ${errorText(error)}`);
    throw problem(`is not valid YAML (line ${(error.mark?.line ?? 0) + 1}): ${error.reason}`);
  }
}
/**
 * What the client reads in an agent file: `acp.clientTools.enabled` and `.discovery`.
 * @ignore The terminal program's, exported for its tests.
 */
export type AgentConfig = { enabled: boolean; discovery: string };
/**
 * Warnings for an agent file that contradicts the run; the client goes on, to show mm's way.
 * @ignore The terminal program's, exported for its tests.
 */
export function agentFileWarnings(file: string, config: AgentConfig, request: boolean): string[] {
  const sets = `warning: ${file} sets acp.clientTools`;
  if (!config.enabled) return [`${sets}.enabled: false; mm will ignore ${TOOL_NAMES}`];
  const announced = request ? "request" : "meta";
  if (config.discovery === announced || !["meta", "request"].includes(config.discovery)) return [];
  let then = "mm will ask for the list, and the client answers it";
  if (request) then = `mm will not see ${TOOL_NAMES}`;
  return [`${sets}.discovery: ${config.discovery}, but the client announces ${announced}; ${then}`];
}

// ─── main() ──────────────────────────────────────────────────────────────────
/** Runs the client; every failure is one `error: …` line, and no mm process outlives the run. */
export async function main(argv: readonly string[]): Promise<number> {
  const out = new Output();
  let terminal: Terminal | undefined;
  let code = 1;
  try {
    const relay = ownArguments(argv).args; // the agent starts the relay: not a conversation
    if (relay[0] === "--mcp-relay" && relay.length === 2) return await relayMcp(relay[1]);
    const options = parseCommandLine(argv);
    if (options.help || options.version) {
      const text = options.help ? usage(options.program) : `host-info-client ${VERSION}`;
      out.print(out.stdout, `${text}\n`);
      return 0;
    }
    const broken = checkTools(TOOLS); // after --help: a copier with a slip can still read it
    if (broken) throw new ClientError(broken, 2);
    terminal = new Terminal(out, options);
    code = await converse(terminal, options);
  } catch (error) {
    code = error instanceof ClientError ? error.exitCode : 1;
    terminal?.flush(); // mm's last words, before the client's line about its end
    if (out.stderr.open) out.print(out.stderr, "\n"); // Ctrl-C at the prompt: end its line
    const message = errorText(error);
    if (message) out.note(`error: ${message}`);
    if (error instanceof UsageError) out.note(usage(ownArguments(argv).program));
    // A script is told why, even of a usage error: --json among the options, before any `--`.
    const failed = terminal?.stdout.failed ??
      (asksForJson(argv) ? jsonLines(out).failed : undefined);
    failed?.(message || "interrupted", code);
  }
  terminal?.flush();
  // After a turn that ended, cancelled or not, or at the -i prompt: how to come back to it.
  const resumable = code === 0 || ([124, 130, 143].includes(code) && !terminal?.turn);
  const sessionId = terminal?.sessionId;
  if (resumable && sessionId) terminal?.log(`continue with: --resume ${sessionId}`);
  out.waitFor(undefined);
  out.flush();
  return code;
}

/** The conversation the options ask for: the agent file read, `TOOLS` lent to mm, the exit code. */
async function converse(terminal: Terminal, options: Options): Promise<number> {
  const { out } = terminal;
  const start = await agentToRun(options, out);
  const keyboard = new Keyboard(out); // stdin, shared by the questions and the permissions
  if (options.question === "-") options.question = await questionFromStdin(out, keyboard);
  const { controller } = terminal;
  out.onFailure = (e) => {
    controller.abort(new ClientError(`cannot write the conversation: ${errorText(e)}`));
  };
  Deno.addSignalListener("SIGINT", () => terminal.interrupt("SIGINT"));
  // No SIGTERM on Windows: Deno refuses the listener.
  if (Deno.build.os !== "windows") {
    Deno.addSignalListener("SIGTERM", () => terminal.interrupt("SIGTERM"));
  }
  const atTerminal = Deno.stdin.isTerminal() && out.stderr.terminal;
  const asks = atTerminal && !options.json && !options["no-ask"];
  const ctrlC = () => terminal.interrupt("SIGINT");
  let questions: LendOptions["questions"] = options.question ?? DEFAULT_QUESTION;
  if (options.interactive) {
    questions = questionsOf(options.question, out, keyboard, () => terminal.ending);
  }
  out.waitFor(start.mm ? "mm" : "the agent");
  const lent = await lend({
    ...start,
    tools: TOOLS,
    discovery: options.request ? "request" : "meta",
    questions,
    view: terminal,
    asker: asks ? personAsker(out, keyboard, ctrlC, terminal.progress) : undefined,
    signal: controller.signal,
    timeout: options.seconds,
    turnTimeout: options.turnSeconds,
    resume: sessionToResume(options, terminal.stdout),
  }).catch((error) => {
    throw startError(error, start);
  });
  return terminal.exitCode(lent);
}
/**
 * What `lend()` starts: the agent after `--`, as given; else mm with the agent file (read, and
 * warned about where it contradicts the run), and who named mm, for an error that it cannot start.
 */
async function agentToRun(options: Options, out: Output) {
  const [command, ...args] = options.command ?? [];
  if (command !== undefined) return { agent: { command, args }, namedBy: "-- COMMAND" };
  const agent = options.agent ?? (options.request ? "agent-request.yaml" : "agent.yaml");
  const { path, config } = await readAgentFile(agent, options.agent !== undefined);
  for (const warning of agentFileWarnings(agent, config, !!options.request)) {
    out.note(`[client] ${warning}`);
  }
  const { mm, namedBy } = mmToStart(options);
  // The line to change if your mm starts otherwise.
  return { mm: { command: mm, args: ["-acp", "-agent", path] }, namedBy };
}
/** The mm to start: `--mm`, else `MM_BIN` (set and not empty), else `mm` on `PATH`; who named it. */
function mmToStart(options: Options): { mm: string; namedBy?: string } {
  if (options.mm) return { mm: options.mm, namedBy: "--mm" };
  const fromEnv = readEnv("MM_BIN");
  if (fromEnv) return { mm: fromEnv, namedBy: "MM_BIN" };
  return { mm: "mm" };
}
/** An agent that cannot be started, with what to do next: the hint names what named it. */
function startError(
  error: unknown,
  { mm, agent, namedBy }: {
    mm?: { command: string };
    agent?: { command: string };
    namedBy?: string;
  },
): unknown {
  if (!(error instanceof ClientError) || error.exitCode !== 127 || !error.cause) return error;
  let reason = error.message;
  if (agent) return new ClientError(`${reason}. ${namedBy} names it: check that command.`, 127);
  const command = mm?.command ?? "mm";
  // A name without a slash is looked for on PATH, as a shell does, not in this folder.
  const here = !/[/\\]/.test(command) && granted({ name: "read", path: command });
  if (
    reason.endsWith(": not found") && here && attempt(() => Deno.statSync(command).isFile, false)
  ) {
    reason += ` on PATH (for the file in this folder: ./${command})`;
  }
  const unreadable = !namedBy && !granted({ name: "env", variable: "MM_BIN" });
  if (unreadable) reason += "; MM_BIN could not be read (add --allow-env=MM_BIN)";
  let next = "Install mini-me or set MM_BIN / --mm";
  if (namedBy) next = `${namedBy} names it: check that path`;
  return new ClientError(`${reason}. ${next}.`, 127);
}
/** The session to continue: `--resume ID`; `--continue`, this folder's latest; `--sessions`: none. */
function sessionToResume(options: Options, stdout: StdoutView): LendOptions["resume"] {
  if (options.sessions) {
    return {
      choose: (found) => {
        stdout.sessions?.(found);
        return undefined;
      },
    };
  }
  if (!options.continue) return options.resume;
  return { cwd: Deno.cwd(), choose: latestSession };
}
/** `--continue`: the most recent of the sessions of the current folder. */
function latestSession(sessions: Record<string, unknown>[]): string {
  const updated = (s: unknown) => String(field(s, "updatedAt") ?? "");
  const [latest] = sessions.sort((a, b) => updated(b).localeCompare(updated(a)));
  if (!latest) throw new ClientError(`mm has no session in ${Deno.cwd()} to continue`);
  return String(latest.sessionId);
}

if (import.meta.main) Deno.exit(await main(Deno.args));
