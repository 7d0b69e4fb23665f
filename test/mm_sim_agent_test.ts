/**
 * The stand-in as an ACP agent that is not mm (`test/agent-sim`), over the wire: each test starts
 * the launcher, speaks raw ACP to it as a client does, and lends it tools the standard way, an MCP
 * server named in `mcpServers`: a small one written with the MCP SDK (`_mcp_server.ts`), served
 * here over streamable HTTP on 127.0.0.1 (bearer token checked), or spawned by the agent over
 * stdio. Its permission requests are compared with those captured from the real adapters
 * (`data/mcp-permission-requests.jsonl`). What the model read is the text of each call's final
 * `tool_call_update`.
 */

import assert from "./_assert.ts";
import type * as acp from "@agentclientprotocol/sdk";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { type Frame, HOST_INFO, type Peer, withPeer } from "./_wire.ts";
import { alive, passedEnv, ROOT, sleep, WAIT_MS, within } from "./_run.ts";
import { SCRATCH, scratchDir } from "./_scratch.ts";
import { type Answer, factAbout, HOST_INFO_DESCRIPTION, hostInfoServer } from "./_mcp_server.ts";
import {
  AGENT_SIM_USAGE,
  type AskName,
  isRecord,
  mcpErrorText,
  mcpResultText,
  parseAgentSimArgs,
  record,
} from "./mm_sim.ts";

/** The name the client gives its MCP server in these tests (the captures had `mm-client`). */
const SERVER = "host_tools";
/** What the agent says once it has listed the test server's tools. */
const LISTED = (kind: string) =>
  `[agent-sim] mcp server ${SERVER} (${kind}): tools host_info, clock`;
/** How `--connect late` waits before it connects (the stand-in's `LATE_CONNECT_MS`). */
const LATE_MS = 1000;

// ─── The test's MCP server, over HTTP ────────────────────────────────────────

/** A JSON-RPC message the server received, the moment it came, and its `Authorization` header. */
interface Received {
  message: Record<string, unknown>;
  at: number;
  authorization: string | null;
}

/** What the HTTP server does besides serving `_mcp_server.ts`'s tools. */
interface McpHttpOptions {
  /** A JSON-RPC response of the test's own for a message (an error), instead of the SDK's. */
  reply?: (message: Record<string, unknown>) => Record<string, unknown> | undefined;
  /** An `initialize` is held until this settles (or the server closes). */
  hold?: Promise<void>;
}

/**
 * `_mcp_server.ts` served over streamable HTTP on 127.0.0.1, a port the system picks, stateless (a
 * server and a transport for each request, as the MCP SDK's stateless example does): a request
 * without the session's bearer token is 401, a GET or a DELETE 405, as MCP lets a server answer
 * that offers neither an event stream nor sessions. Everything it receives is kept.
 */
class McpHttp {
  /** The bearer token the entry gives the agent. */
  readonly token = crypto.randomUUID();
  /** Every JSON-RPC message received, in order. */
  readonly received: Received[] = [];
  /** The HTTP requests refused, as `<method> <status>`. */
  readonly refused: string[] = [];
  /** Aborted when the server closes: an answer that waits for it ends then. */
  readonly closing = new AbortController();
  /** How `host_info` answers; a test replaces it. */
  answer: Answer = factAbout;
  #server: Deno.HttpServer<Deno.NetAddr>;
  #wake: (() => void)[] = [];

  constructor(options: McpHttpOptions = {}) {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request) => this.#handle(request, options),
    );
  }

  /** The server's endpoint. */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}/mcp`;
  }

  /** Its `mcpServers` entry, ACP v1's HTTP shape, with the bearer token (or another). */
  entry(name = SERVER, token: string = this.token): acp.McpServer {
    const headers = [{ name: "Authorization", value: `Bearer ${token}` }];
    return { type: "http", name, url: this.url, headers };
  }

  /** The methods received, in order (`(response)` for a response). */
  methods(): string[] {
    return this.received.map((r) => String(r.message.method ?? "(response)"));
  }

  /** The first message of `method` received (from `from` on), before the deadline. */
  waitFor(method: string, from = 0): Promise<Received> {
    const found = () => this.received.slice(from).find((r) => r.message.method === method);
    const waiting = (async () => {
      let hit = found();
      while (!hit) {
        await new Promise<void>((wake) => this.#wake.push(wake));
        if (this.closing.signal.aborted) throw new Error("the MCP server was closed");
        hit = found();
      }
      return hit;
    })();
    const what = () => `the MCP server to receive ${method}; it has: ${this.methods().join(", ")}`;
    return within(WAIT_MS, what, waiting);
  }

  /** Stops the server: answers still held end, and every wait fails. */
  async close(): Promise<void> {
    this.closing.abort();
    for (const wake of this.#wake.splice(0)) wake();
    await this.#server.shutdown();
  }

  async #handle(request: Request, options: McpHttpOptions): Promise<Response> {
    const authorization = request.headers.get("authorization");
    if (authorization !== `Bearer ${this.token}`) return this.#refuse(request, 401);
    if (request.method !== "POST") return this.#refuse(request, 405);
    const body = await request.json();
    const messages: Record<string, unknown>[] = [body].flat();
    for (const message of messages) {
      this.received.push({ message, at: performance.now(), authorization });
    }
    for (const wake of this.#wake.splice(0)) wake();
    if (messages.some((m) => m.method === "initialize")) await this.#untilClosed(options.hold);
    const own = messages.map((m) => options.reply?.(m)).find((reply) => reply !== undefined);
    if (own) return Response.json(own);
    const server = hostInfoServer((topic, call) => this.answer(topic, call));
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { parsedBody: body });
    } finally {
      await server.close();
    }
  }

  #refuse(request: Request, status: number): Response {
    this.refused.push(`${request.method} ${status}`);
    return new Response(null, { status });
  }

  /** `promise`, or nothing once the server closes. */
  #untilClosed(promise: Promise<void> | undefined): Promise<void> {
    if (!promise) return Promise.resolve();
    const { signal } = this.closing;
    const closed = new Promise<void>((done) => signal.addEventListener("abort", () => done()));
    return Promise.race([promise, closed]);
  }
}

/** Runs `body` with the HTTP MCP server, and always closes it. */
async function withMcp(
  options: McpHttpOptions,
  body: (mcp: McpHttp) => Promise<void>,
): Promise<void> {
  const mcp = new McpHttp(options);
  try {
    await body(mcp);
  } finally {
    await mcp.close();
  }
}

/** An answer that never comes while the server runs: a call held in flight. */
function heldAnswer(mcp: McpHttp): Answer {
  const { signal } = mcp.closing;
  return (topic) =>
    new Promise((done) => signal.addEventListener("abort", () => done(factAbout(topic))));
}

// ─── The stdio server ────────────────────────────────────────────────────────

/**
 * `_mcp_server.ts` as a stdio `mcpServers` entry, ACP v1's shape: deno (absolute) runs it with the
 * tests' configuration; it writes its process id to `pidFile`. Its environment is the entry's (the
 * MCP SDK adds HOME, PATH and a few more of the agent's own).
 */
function stdioEntry(pidFile: string): acp.McpServer {
  const args = [
    "run",
    "--quiet",
    "--no-prompt",
    `--config=${ROOT}/test/deno.json`,
    "--allow-env=MCP_SERVER_PID_FILE",
    `--allow-write=${pidFile}`,
    `${ROOT}/test/_mcp_server.ts`,
  ];
  const vars = { ...passedEnv(), MCP_SERVER_PID_FILE: pidFile };
  const env = Object.entries(vars).map(([name, value]) => ({ name, value }));
  return { name: SERVER, command: Deno.execPath(), args, env };
}

/** A fresh path for a pid file, not yet written. */
function pidPath(): string {
  return `${scratchDir("pid-")}/pid`;
}

/** The process id written to `file`. */
function pidIn(file: string): number {
  const pid = Number(Deno.readTextFileSync(file).trim());
  assert.ok(pid > 0, `no process id in ${file}`);
  return pid;
}

/** Resolves once process `pid` has ended (a zombie counts as ended), before the deadline. */
async function ended(pid: number, what: string): Promise<void> {
  const stop = new AbortController();
  const polling = (async () => {
    while (alive(pid) && !stop.signal.aborted) await sleep(50);
  })();
  try {
    await within(WAIT_MS, `${what} (pid ${pid}) to end`, polling);
  } finally {
    stop.abort();
    await polling;
  }
}

// ─── Helpers of the wire ─────────────────────────────────────────────────────

/** `initialize` without mm's client tools, then `session/new` with these servers. */
async function open(peer: Peer, servers: acp.McpServer[]): Promise<string> {
  await peer.initialize(undefined);
  return await peer.newSession("/tmp", servers);
}

/** The `tool_call` updates the agent sent, in order. */
function toolCalls(peer: Peer): (acp.SessionUpdate & { sessionUpdate: "tool_call" })[] {
  return peer.updates().flatMap((u) => u.sessionUpdate === "tool_call" ? [u] : []);
}

/** Answers each permission request with the first option of `kind`. */
function choose(peer: Peer, kind: acp.PermissionOptionKind): void {
  peer.handlers["session/request_permission"] = (params) => {
    const picked = (params.options as acp.PermissionOption[]).find((o) => o.kind === kind);
    return { result: { outcome: { outcome: "selected", optionId: picked?.optionId } } };
  };
}

/** The index of a frame in what the agent wrote. */
function at(peer: Peer, frame: Frame | undefined): number {
  return frame ? peer.frames.indexOf(frame) : -1;
}

// ─── The launcher ────────────────────────────────────────────────────────────

Deno.test("stand-in (agent): the launcher's arguments: defaults, --stdio, --asks, --connect, and what parseArgs refuses", () => {
  assert.deepEqual(parseAgentSimArgs([]), {
    http: true,
    asks: "none",
    connect: "eager",
    help: false,
  });
  assert.deepEqual(parseAgentSimArgs(["--stdio", "--asks", "codex2", "--connect=late"]), {
    http: false,
    asks: "codex2",
    connect: "late",
    help: false,
  });
  assert.equal(parseAgentSimArgs(["-h"]).help, true);
  assert.throws(
    () => parseAgentSimArgs(["--asks", "copilot"]),
    /^Error: --asks: unknown value "copilot" \(one of none, claude, gemini, codex, codex2, qwen\)$/,
  );
  assert.throws(() => parseAgentSimArgs(["--connect", "lazy"]), /--connect: unknown value "lazy"/);
  assert.throws(() => parseAgentSimArgs(["--http"]), /'--http'/);
  assert.throws(() => parseAgentSimArgs(["claude"]), /'claude'/);
  assert.throws(() => parseAgentSimArgs(["--asks"]), /argument missing/);
});

Deno.test("stand-in (agent): a bad argument is one line on stderr and exit 2; --help prints the usage and exits 0", async () => {
  const run = async (args: string[]) => {
    const command = new Deno.Command(`${ROOT}/test/agent-sim`, {
      args,
      env: { DENO_BIN: Deno.execPath(), TMPDIR: SCRATCH },
      stdin: "null",
    });
    const output = await within(WAIT_MS, `test/agent-sim ${args.join(" ")}`, command.output());
    const decoder = new TextDecoder();
    return {
      code: output.code,
      out: decoder.decode(output.stdout),
      err: decoder.decode(output.stderr),
    };
  };
  for (const args of [["--asks", "copilot"], ["--bogus"], ["stray"], ["--connect"]]) {
    const { code, out, err } = await run(args);
    assert.equal(code, 2, `${args.join(" ")}: ${err}`);
    assert.equal(out, "");
    const lines = err.split("\n").filter((line) => line !== "");
    assert.equal(lines.length, 1, err);
    assert.match(lines[0], /^agent-sim: .+ \(usage: test\/agent-sim \[--stdio\] .+\)$/);
  }
  const help = await run(["--help"]);
  assert.equal(help.code, 0, help.err);
  assert.ok(help.out.startsWith(`usage: ${AGENT_SIM_USAGE}\n`), help.out);
});

// ─── initialize ──────────────────────────────────────────────────────────────

for (
  const [args, env, capabilities] of [
    [[], {}, {
      loadSession: true,
      sessionCapabilities: { resume: {}, list: {}, close: {} },
      mcpCapabilities: { http: true },
    }],
    [["--stdio"], {}, {
      loadSession: true,
      sessionCapabilities: { resume: {}, list: {}, close: {} },
      mcpCapabilities: { http: false },
    }],
    [[], { MM_SIM_SESSIONS: "none" }, { loadSession: false, mcpCapabilities: { http: true } }],
  ] as const
) {
  const how = [...args, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)].join(" ") || "default";
  Deno.test(`stand-in (agent): initialize (${how}) names the agent-sim and advertises its MCP capabilities and its sessions`, async () => {
    await withPeer({ agentSim: [...args], env }, async (peer) => {
      const answer = await peer.initialize(undefined);
      assert.deepEqual(answer.result, {
        protocolVersion: 1,
        agentCapabilities: capabilities,
        agentInfo: { name: "agent-sim", title: "ACP agent stand-in", version: "sim" },
        authMethods: [],
      });
    });
  });
}

Deno.test("stand-in (agent): mm's client tools in initialize are ignored: no list request, no call, no [acp] line", async () => {
  await withPeer({ agentSim: [] }, async (peer) => {
    await peer.initialize([HOST_INFO]);
    const session = await peer.newSession();
    assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
    assert.equal(peer.requests("_org.mini-me/tools/list").length, 0);
    assert.equal(peer.requests("_demo.minime/host_info").length, 0);
    assert.deepEqual(peer.acpLines(), []);
    assert.match(peer.answerText(), /^I cannot see your machine/);
  });
});

// ─── Both transports ─────────────────────────────────────────────────────────

Deno.test("stand-in (agent): http: connects and lists the tools before answering session/new, the bearer on every request, and calls host_info per topic", async () => {
  await withMcp({}, async (mcp) => {
    await withPeer({ agentSim: [] }, async (peer) => {
      const session = await open(peer, [mcp.entry()]);
      // Answered only once it had listed the tools: the list came before the answer.
      assert.deepEqual(mcp.methods(), ["initialize", "notifications/initialized", "tools/list"]);
      await peer.waitForStderr(`${LISTED("http")}\n`);
      const question = "What operating system does my machine run, and how much memory?";
      assert.equal(await peer.prompt(session, question), "end_turn");
      const calls = mcp.received.filter((r) => r.message.method === "tools/call");
      const params = calls.map((r) => r.message.params);
      assert.deepEqual(params, [
        { name: "host_info", arguments: { topic: "os" } },
        { name: "host_info", arguments: { topic: "memory" } },
      ]);
      assert.ok(mcp.received.every((r) => r.authorization === `Bearer ${mcp.token}`));
      assert.ok(mcp.refused.every((r) => r === "GET 405"), mcp.refused.join(", "));
      // --asks none: a plain tool_call, no question.
      assert.deepEqual(
        toolCalls(peer).map(({ title, kind, rawInput }) => ({ title, kind, rawInput })),
        [
          { title: `${SERVER}/host_info`, kind: "other", rawInput: { topic: "os" } },
          { title: `${SERVER}/host_info`, kind: "other", rawInput: { topic: "memory" } },
        ],
      );
      assert.equal(peer.requests("session/request_permission").length, 0);
      assert.deepEqual(peer.finalTexts(session).sort(), ["fact about memory", "fact about os"]);
      assert.equal(
        peer.answerText(session),
        "Here is what host_info reports about your machine — operating system: fact about os; memory: fact about memory.",
      );
    });
  });
});

Deno.test("stand-in (agent): stdio (--stdio): spawns the entry's command with its args and env, lists its tools before answering, and calls them", async () => {
  const pidFile = pidPath();
  await withPeer({ agentSim: ["--stdio"] }, async (peer) => {
    const session = await open(peer, [stdioEntry(pidFile)]);
    await peer.waitForStderr(`${LISTED("stdio")}\n`);
    assert.ok(alive(pidIn(pidFile)));
    assert.equal(await peer.prompt(session, "Which CPU?"), "end_turn");
    assert.deepEqual(peer.finalTexts(session), ["fact about cpu"]);
    assert.match(peer.answerText(session), /— CPU: fact about cpu\.$/);
  });
});

Deno.test("stand-in (agent): another tool the question names is called, with arguments from its schema; the stepwise model marks each call in progress", async () => {
  await withMcp({}, async (mcp) => {
    await withPeer({ agentSim: [], env: { MM_SIM_MODEL: "stepwise" } }, async (peer) => {
      const session = await open(peer, [mcp.entry()]);
      assert.equal(await peer.prompt(session, "What does the clock say?"), "end_turn");
      const calls = mcp.received.filter((r) => r.message.method === "tools/call");
      assert.deepEqual(calls.map((r) => r.message.params), [{ name: "clock", arguments: {} }]);
      const statuses = peer.updates(session).flatMap((u) =>
        u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update" ? [u.status] : []
      );
      assert.deepEqual(statuses, ["pending", "in_progress", "completed"]);
      assert.match(
        peer.answerText(session),
        /Here is what clock reports about your machine — clock: 12:00\.$/,
      );
    });
  });
});

Deno.test("stand-in (agent): an error result reads [tool error: …], a JSON-RPC error [mcp error: <message>], and the turn goes on", async () => {
  const reply = (message: Record<string, unknown>) => {
    const topic = record(record(message.params).arguments).topic;
    if (message.method !== "tools/call" || topic !== "cpu") return undefined;
    return {
      jsonrpc: "2.0",
      id: message.id,
      error: { code: -32603, message: "the CPU is on fire" },
    };
  };
  await withMcp({ reply }, async (mcp) => {
    await withPeer({ agentSim: [] }, async (peer) => {
      const session = await open(peer, [mcp.entry()]);
      assert.equal(await peer.prompt(session, "Which CPU, and the disk?"), "end_turn");
      const finals = peer.updates(session).flatMap((u) =>
        u.sessionUpdate === "tool_call_update" ? [u.status] : []
      );
      assert.deepEqual(finals, ["failed", "failed"]);
      assert.deepEqual(peer.finalTexts(session).sort(), [
        "[mcp error: the CPU is on fire]",
        '[tool error: no topic "disk"]',
      ]);
    });
  });
});

Deno.test("stand-in (agent): what the model reads of a result and of an error, pure", () => {
  const block = (text: string) => ({ type: "text", text });
  const image = { type: "image", data: "", mimeType: "image/png" };
  assert.deepEqual(mcpResultText({ content: [block("a"), image, block("b")] }), {
    text: "ab",
    failed: false,
  });
  assert.deepEqual(mcpResultText({ content: [block("no")], isError: true }), {
    text: "[tool error: no]",
    failed: true,
  });
  assert.deepEqual(mcpResultText({}), { text: "", failed: false });
  assert.equal(
    mcpErrorText(new Error("MCP error -32001: Request timed out")),
    "[mcp error: Request timed out]",
  );
  assert.equal(mcpErrorText(new Error("fetch failed")), "[mcp error: fetch failed]");
});

// ─── Entries it cannot take ──────────────────────────────────────────────────

Deno.test("stand-in (agent): an entry it cannot connect to is one stderr line, and the session opens with the other servers' tools", async () => {
  await withMcp({}, async (mcp) => {
    await withPeer({ agentSim: [] }, async (peer) => {
      const missing = { name: "missing", command: "/nonexistent/mcp-server", args: [], env: [] };
      const sse: acp.McpServer = { type: "sse", name: "old", url: mcp.url, headers: [] };
      const session = await open(peer, [
        mcp.entry("locked", "a wrong token"),
        missing,
        sse,
        mcp.entry(),
      ]);
      // Written before the answer, but stderr is a pipe of its own: read until each has come.
      for (const name of ["locked", "missing", "old"]) {
        await peer.waitForStderr(`[agent-sim] mcp server ${name}: `);
      }
      await peer.waitForStderr(LISTED("http"));
      const lines = peer.stderr.split("\n").filter((line) => line.startsWith("[agent-sim] "));
      assert.equal(lines.length, 4, peer.stderr);
      assert.ok(
        lines.includes("[agent-sim] mcp server old: a sse server, which this agent does not take"),
      );
      assert.ok(mcp.refused.includes("POST 401"), mcp.refused.join(", "));
      assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
      assert.deepEqual(peer.finalTexts(session), ["fact about os"]);
    });
  });
});

Deno.test("stand-in (agent): --stdio refuses an http entry with one line, and without a tool says it cannot see the machine", async () => {
  await withMcp({}, async (mcp) => {
    await withPeer({ agentSim: ["--stdio"] }, async (peer) => {
      const session = await open(peer, [mcp.entry()]);
      await peer.waitForStderr(
        `[agent-sim] mcp server ${SERVER}: an http server, but this agent advertised http: false (--stdio)\n`,
      );
      assert.deepEqual(mcp.received, []);
      assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
      assert.match(peer.answerText(session), /^I cannot see your machine/);
    });
  });
});

// ─── Permission shapes ───────────────────────────────────────────────────────

/** One line of the captured frames: an adapter's permission request, and its tool_call before. */
interface Captured {
  agent: string;
  server_name: string;
  tool: string;
  tool_call_before: Record<string, unknown> | null;
  request_permission_params: Record<string, unknown>;
}

const CAPTURED: Captured[] = Deno.readTextFileSync(
  `${ROOT}/test/data/mcp-permission-requests.jsonl`,
).split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));

/** The adapter whose capture each `--asks` shape follows. */
const ADAPTER: Record<Exclude<AskName, "none">, string> = {
  claude: "claude",
  gemini: "gemini",
  codex: "codex",
  codex2: "codex2-ro",
  qwen: "qwen",
};

/** The capture of an adapter. */
function capturedOf(agent: string): Captured {
  const found = CAPTURED.find((c) => c.agent === agent);
  if (!found) throw new Error(`no capture of ${agent} in test/data/mcp-permission-requests.jsonl`);
  return found;
}

/**
 * A captured frame as the stand-in must send it in this run: each of `swaps` (the capture's ids
 * and server name, this run's) replaced in every string; a text the capture cut (ending in `…`)
 * matching the text sent that starts with it; and an empty content list, which the capture wrote
 * as the text `"[]"` (ACP's schema has a list there), read as the empty list.
 */
function asExpected(captured: unknown, sent: unknown, swaps: [string, string][]): unknown {
  if (typeof captured === "string") {
    const swapped = swaps.reduce((text, [from, to]) => text.replaceAll(from, to), captured);
    if (swapped === "[]" && Array.isArray(sent)) return [];
    const cut = swapped.endsWith("…") && typeof sent === "string" &&
      sent.startsWith(swapped.slice(0, -1));
    return cut ? sent : swapped;
  }
  if (Array.isArray(captured)) {
    const items = Array.isArray(sent) ? sent : [];
    return captured.map((item, index) => asExpected(item, items[index], swaps));
  }
  if (!isRecord(captured)) return captured;
  const fields = record(sent);
  return Object.fromEntries(
    Object.entries(captured).map(([key, value]) => [key, asExpected(value, fields[key], swaps)]),
  );
}

/** codex-acp's turn id in a permission request, if it has one. */
const turnIdOf = (params: unknown) => record(record(record(params).toolCall).rawInput).turn_id;

for (const [asks, adapter] of Object.entries(ADAPTER)) {
  Deno.test(`stand-in (agent): --asks ${asks} sends the tool_call and the permission request ${adapter} sent, with this call's ids and server name, and the call runs once allowed`, async () => {
    const captured = capturedOf(adapter);
    await withMcp({}, async (mcp) => {
      await withPeer({ agentSim: ["--asks", asks] }, async (peer) => {
        const session = await open(peer, [mcp.entry()]);
        assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
        const [asked] = peer.requests("session/request_permission");
        const toolCallId = String(record(record(asked?.params).toolCall).toolCallId);
        // gemini-cli's id names the server and the tool; the others are the stand-in's call_<n>.
        const expectedId = asks === "gemini" ? `mcp_${SERVER}_host_info__call_1` : "call_1";
        assert.equal(toolCallId, expectedId);
        const capturedParams = captured.request_permission_params;
        const swaps: [string, string][] = [
          [String(record(capturedParams.toolCall).toolCallId), toolCallId],
          [captured.server_name, SERVER],
          [String(capturedParams.sessionId), session],
        ];
        const turnId = turnIdOf(asked.params);
        if (turnIdOf(capturedParams) !== undefined) {
          assert.match(
            String(turnId),
            /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
          );
          swaps.push([String(turnIdOf(capturedParams)), String(turnId)]);
        }
        assert.deepEqual(asked.params, asExpected(capturedParams, asked.params, swaps));
        const announced = peer.frames.find((f) =>
          f.method === "session/update" && record(f.params?.update).sessionUpdate === "tool_call"
        );
        const update = record(announced?.params?.update);
        if (captured.tool_call_before) {
          assert.ok(
            at(peer, announced) < at(peer, asked),
            "the tool_call comes before the question",
          );
          assert.deepEqual(update, asExpected(captured.tool_call_before, update, swaps));
        } else {
          // gemini-cli sent none before it asked; the stand-in announces the call once allowed.
          assert.ok(at(peer, announced) > at(peer, asked), "no tool_call before the question");
          assert.equal(update.toolCallId, toolCallId);
          assert.equal(update.status, "in_progress");
        }
        if (asks === "codex") {
          const shown = JSON.stringify(asked.params);
          assert.ok(shown.includes(JSON.stringify(HOST_INFO_DESCRIPTION).slice(1, -1)), shown);
        }
        assert.deepEqual(mcp.received.filter((r) => r.message.method === "tools/call").length, 1);
        assert.deepEqual(peer.finalTexts(session), ["fact about os"]);
      });
    });
  });

  Deno.test(`stand-in (agent): --asks ${asks}: a reject option, or an error answer, is a refusal the model reads as [host_info rejected by user]; the tool never runs, and the turn goes on`, async () => {
    await withMcp({}, async (mcp) => {
      await withPeer({ agentSim: ["--asks", asks] }, async (peer) => {
        const session = await open(peer, [mcp.entry()]);
        choose(peer, "reject_once");
        assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
        peer.handlers["session/request_permission"] = () => ({
          error: { code: -32603, message: "Internal error" },
        });
        assert.equal(await peer.prompt(session, "Which CPU?"), "end_turn");
        assert.equal(peer.requests("session/request_permission").length, 2);
        assert.deepEqual(mcp.methods().filter((m) => m === "tools/call"), []);
        assert.deepEqual(peer.finalTexts(session), [
          "[host_info rejected by user]",
          "[host_info rejected by user]",
        ]);
        assert.match(peer.answerText(session), /operating system: \[host_info rejected by user\]/);
      });
    });
  });
}

Deno.test("stand-in (agent): an allow_always option allows the call too", async () => {
  await withMcp({}, async (mcp) => {
    await withPeer({ agentSim: ["--asks", "claude"] }, async (peer) => {
      const session = await open(peer, [mcp.entry()]);
      choose(peer, "allow_always");
      assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
      assert.deepEqual(peer.finalTexts(session), ["fact about os"]);
    });
  });
});

// ─── Cancel ──────────────────────────────────────────────────────────────────

Deno.test("stand-in (agent): session/cancel during a call aborts tools/call with notifications/cancelled, the call ends failed, the turn cancelled", async () => {
  await withMcp({}, async (mcp) => {
    mcp.answer = heldAnswer(mcp);
    await withPeer({ agentSim: [] }, async (peer) => {
      const session = await open(peer, [mcp.entry()]);
      const turn = peer.startTurn(session, "Which OS?");
      const call = await mcp.waitFor("tools/call");
      await peer.notify("session/cancel", { sessionId: session });
      assert.deepEqual((await turn).result, { stopReason: "cancelled" });
      const cancelled = await mcp.waitFor("notifications/cancelled");
      assert.equal(record(cancelled.message.params).requestId, call.message.id);
      assert.deepEqual(peer.finalTexts(session), ["[host_info cancelled]"]);
    });
  });
});

// ─── When it connects ────────────────────────────────────────────────────────

Deno.test("stand-in (agent): --connect late answers session/new first and connects a second later; a prompt before the tools are listed finds none", async () => {
  const held = Promise.withResolvers<void>();
  await withMcp({ hold: held.promise }, async (mcp) => {
    try {
      await withPeer({ agentSim: ["--connect", "late"] }, async (peer) => {
        await peer.initialize(undefined);
        const sent = performance.now();
        // Answered while the server holds the agent's initialize: before any tool was listed.
        const session = await peer.newSession("/tmp", [mcp.entry()]);
        assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
        assert.match(peer.answerText(session), /^I cannot see your machine/);
        const initialize = await mcp.waitFor("initialize");
        assert.ok(
          initialize.at - sent >= LATE_MS - 10,
          `connected after ${initialize.at - sent} ms`,
        );
        held.resolve();
        await peer.waitForStderr(LISTED("http"));
        assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
        assert.deepEqual(peer.finalTexts(session), ["fact about os"]);
      });
    } finally {
      held.resolve();
    }
  });
});

Deno.test("stand-in (agent): --connect never ignores mcpServers: no request, no process spawned, no tool", async () => {
  const pidFile = pidPath();
  await withMcp({}, async (mcp) => {
    await withPeer({ agentSim: ["--connect", "never"] }, async (peer) => {
      const session = await open(peer, [mcp.entry(), { ...stdioEntry(pidFile), name: "spawned" }]);
      assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
      assert.match(peer.answerText(session), /^I cannot see your machine/);
      // Longer than --connect late waits: a late connection would have come by then.
      await sleep(LATE_MS + 500);
      assert.deepEqual(mcp.received, []);
      assert.equal(mcp.refused.length, 0);
      assert.ok(!peer.stderr.includes("[agent-sim] mcp server"), peer.stderr);
    });
  });
  assert.throws(() => Deno.statSync(pidFile), Deno.errors.NotFound);
});

Deno.test("stand-in (agent): session/load and session/resume connect to the servers they name before answering, and the session calls their tools", async () => {
  await withMcp({}, async (mcp) => {
    await withPeer({ agentSim: [] }, async (peer) => {
      const session = await open(peer, [mcp.entry()]);
      assert.equal(await peer.prompt(session, "Which OS?"), "end_turn");
      const count = (method: string) => mcp.methods().filter((m) => m === method).length;
      for (const method of ["session/load", "session/resume"]) {
        const before = count("tools/list");
        const params = { sessionId: session, cwd: "/tmp", mcpServers: [mcp.entry()] };
        const answer = await peer.request(method, params);
        assert.deepEqual(answer.result, {}, JSON.stringify(answer));
        assert.equal(count("tools/list"), before + 1, `${method}: ${mcp.methods().join(", ")}`);
      }
      assert.equal(await peer.prompt(session, "How much RAM?"), "end_turn");
      assert.deepEqual(peer.finalTexts(session).slice(-1), ["fact about memory"]);
    });
  });
});

// ─── Nothing it started outlives it ──────────────────────────────────────────

for (const end of ["session/close", "stdin ending", "MM_SIM_EXIT_IN_TURN", "SIGTERM"] as const) {
  Deno.test(`stand-in (agent): the stdio server it spawned is gone after ${end}`, async () => {
    const pidFile = pidPath();
    const agentPidFile = pidPath();
    const env: Record<string, string> = { MM_SIM_PID_FILE: agentPidFile };
    if (end === "MM_SIM_EXIT_IN_TURN") env.MM_SIM_EXIT_IN_TURN = "3";
    await withPeer({ agentSim: ["--stdio"], env }, async (peer) => {
      const session = await open(peer, [stdioEntry(pidFile)]);
      const server = pidIn(pidFile);
      assert.ok(alive(server));
      if (end === "session/close") {
        const closed = await peer.request("session/close", { sessionId: session });
        assert.deepEqual(closed.result, {}, JSON.stringify(closed));
      } else if (end === "stdin ending") {
        await peer.close();
      } else if (end === "MM_SIM_EXIT_IN_TURN") {
        const turn = peer.startTurn(session, "Which OS?");
        await ended(pidIn(agentPidFile), "the agent");
        turn.catch(() => {}); // never answered: the agent exited
      } else {
        Deno.kill(pidIn(agentPidFile), "SIGTERM");
        await ended(pidIn(agentPidFile), "the agent");
      }
      await ended(server, "the stdio MCP server");
    });
  });
}
