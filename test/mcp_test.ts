/**
 * The client's own MCP server, for an agent that is not mm (`client.ts … -- COMMAND`): what it
 * serves to the MCP SDK's own client, over HTTP and through the relay; what it refuses, and that
 * a refusal neither ends the session nor runs a tool; that nothing of it listens or runs once the
 * session has ended, whatever the way out; the agent stand-in (`test/agent-sim`) asking permission
 * in each real adapter's shape, connecting late or never; the agent named in the messages.
 */

import assert from "./_assert.ts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { hasScript, inTerminal } from "./_pty.ts";
import {
  alive,
  clientCommand,
  type ClientRun,
  clientWithTools,
  OS_TEXT,
  passedEnv,
  ROOT,
  runClient,
  runShell,
  sentWith,
  sleep,
  SLOW_TOOL,
  startClient,
  WAIT_MS,
  within,
} from "./_run.ts";

/** The agent stand-in as an ACP agent that is not mm. */
const AGENT_SIM = `${ROOT}/test/agent-sim`;
/** What messages call it: the title of its `initialize` answer. */
const AGENT_TITLE = "ACP agent stand-in";

/** A run of the client against the agent stand-in (`-- test/agent-sim …`), asking `question`. */
function withAgent(
  agentArgs: string[] = [],
  question = "What OS?",
  run: ClientRun = {},
): ClientRun {
  return {
    ...run,
    noMm: true,
    args: [...(run.args ?? []), question, "--", AGENT_SIM, ...agentArgs],
  };
}

/** An entry of `mcpServers`, as the client gives it. */
type Entry = {
  type?: string;
  name: string;
  url?: string;
  headers?: { name: string; value: string }[];
  command?: string;
  args?: string[];
  env?: { name: string; value: string }[];
};

/** The MCP server the client named in its `session/new` (or `resume`, `load`), read from its trace. */
function entryOf(stderr: string): Entry {
  const [opened] = ["session/new", "session/resume", "session/load"]
    .flatMap((method) => sentWith(stderr, method));
  const servers = (opened?.params as { mcpServers?: Entry[] })?.mcpServers ?? [];
  assert.equal(servers.length, 1, `one MCP server in session/new: ${JSON.stringify(opened)}`);
  return servers[0];
}

/** The server's address (`127.0.0.1:<port>`) and token, from the entry of either road. */
function serverOf(entry: Entry): { host: string; token: string } {
  const url = entry.url ?? entry.args?.find((arg) => arg.startsWith("http://"));
  const host = new URL(String(url)).host;
  const bearer = entry.headers?.find((header) => header.name === "Authorization")?.value;
  const token = bearer?.replace(/^Bearer /, "") ??
    entry.env?.find((variable) => variable.name === "ACP_CLIENT_MCP_TOKEN")?.value;
  return { host, token: String(token) };
}

/** Whether anything listens at `host` (`127.0.0.1:<port>`). */
async function listening(host: string): Promise<boolean> {
  const [hostname, port] = host.split(":");
  try {
    const connection = await Deno.connect({ hostname, port: Number(port) });
    connection.close();
    return true;
  } catch {
    return false;
  }
}

/** The processes whose command line holds `text`, from `ps`. */
async function processesWith(text: string): Promise<string[]> {
  const { stdout } = await new Deno.Command("ps", { args: ["-eo", "pid=,args="] }).output();
  return new TextDecoder().decode(stdout).split("\n").filter((line) =>
    line.includes(text) && !line.includes("ps -eo")
  );
}

/**
 * Asserts that nothing of the session's MCP server is left: no port listening, no relay running
 * (a relay still dying gets a few seconds, as a crowded machine may need).
 */
async function assertNothingLeft(entry: Entry): Promise<void> {
  const { host } = serverOf(entry);
  assert.equal(await listening(host), false, `the MCP server still listens at ${host}`);
  const until = performance.now() + 5000;
  let relays = await processesWith(`--mcp-relay http://${host}/`);
  while (relays.length > 0 && performance.now() < until) {
    await sleep(100);
    relays = await processesWith(`--mcp-relay http://${host}/`);
  }
  assert.deepEqual(relays, [], "a relay outlived the session");
}

/**
 * One raw HTTP exchange with the server: a request as written, its status and body. The answer
 * is read as far as its `content-length` says: a server that answers before it has read a body
 * may keep the connection open for the rest of it.
 */
async function rawHttp(host: string, request: string): Promise<{ status: number; body: string }> {
  const [hostname, port] = host.split(":");
  const connection = await Deno.connect({ hostname, port: Number(port) });
  try {
    const bytes = new TextEncoder().encode(request);
    for (let written = 0; written < bytes.length;) { // a large request takes several writes
      written += await connection.write(bytes.subarray(written));
    }
    const answer = await within(WAIT_MS, "the server's answer", readAnswer(connection));
    const status = Number(answer.match(/^HTTP\/1\.1 (\d{3})/)?.[1]);
    return { status, body: answer.slice(answer.indexOf("\r\n\r\n") + 4) };
  } finally {
    connection.close();
  }
}
/** An HTTP answer, whole: its head, and as much body as its `content-length` says. */
async function readAnswer(connection: Deno.Conn): Promise<string> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(65536);
  let text = "";
  for (;;) {
    const head = text.indexOf("\r\n\r\n");
    const length = Number(text.match(/^content-length: (\d+)/im)?.[1] ?? 0);
    if (head >= 0 && new TextEncoder().encode(text.slice(head + 4)).length >= length) return text;
    const read = await connection.read(buffer);
    if (read === null) return text;
    text += decoder.decode(buffer.subarray(0, read), { stream: true });
  }
}

/** A POST of `body` to the server, with the headers given (a `Host` of the server's own unless given). */
function post(host: string, body: string, headers: Record<string, string>) {
  const all: Record<string, string> = {
    Host: host,
    "Content-Type": "application/json",
    Connection: "close",
    ...headers,
  };
  if (!("Content-Length" in headers)) {
    all["Content-Length"] = String(new TextEncoder().encode(body).length);
  }
  const lines = Object.entries(all).map(([name, value]) => `${name}: ${value}`);
  return rawHttp(host, `POST /mcp HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n${body}`);
}
/** A POST to `/mcp` whose body is sent in chunks of 64 KiB, its length said nowhere. */
function chunkedPost(host: string, body: string, headers: Record<string, string>) {
  const chunks = [];
  for (let at = 0; at < body.length; at += 65536) {
    const chunk = body.slice(at, at + 65536); // ASCII: as many bytes as characters
    chunks.push(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
  }
  const head = Object.entries({ ...headers, Host: host, "Transfer-Encoding": "chunked" })
    .map(([name, value]) => `${name}: ${value}\r\n`).join("");
  return rawHttp(
    host,
    `POST /mcp HTTP/1.1\r\n${head}Connection: close\r\n\r\n${chunks.join("")}0\r\n\r\n`,
  );
}

/** The MCP SDK's client, connected to the served endpoint over HTTP, with the entry's headers. */
async function sdkOverHttp(entry: Entry): Promise<Client> {
  const headers = Object.fromEntries((entry.headers ?? []).map((h) => [h.name, h.value]));
  const transport = new StreamableHTTPClientTransport(new URL(String(entry.url)), {
    requestInit: { headers },
  });
  const client = new Client({ name: "mcp-test", version: "0" });
  await within(WAIT_MS, "the MCP SDK to connect over HTTP", client.connect(transport));
  return client;
}

/** The MCP SDK's client, starting the relay as the entry says, as an agent would. */
async function sdkThroughRelay(entry: Entry): Promise<Client> {
  const env = Object.fromEntries(
    (entry.env ?? []).map((variable) => [variable.name, variable.value]),
  );
  const transport = new StdioClientTransport({
    command: String(entry.command),
    args: entry.args,
    env: { ...passedEnv(), ...env },
    stderr: "inherit",
  });
  const client = new Client({ name: "mcp-test", version: "0" });
  await within(WAIT_MS, "the MCP SDK to connect through the relay", client.connect(transport));
  return client;
}

/** What a call answers, as the MCP SDK gives it. */
type Called = { content: unknown; isError?: boolean };
/** Asserts what the MCP SDK's client sees of the served tools, and a call of host_info. */
async function assertServes(client: Client): Promise<void> {
  const { tools } = await within(WAIT_MS, "tools/list", client.listTools()) as {
    tools: { name: string; annotations?: unknown; inputSchema: { required?: string[] } }[];
  };
  const hostInfo = tools.find((tool) => tool.name === "host_info");
  assert.ok(hostInfo, JSON.stringify(tools));
  assert.deepEqual(hostInfo.annotations, { readOnlyHint: true, openWorldHint: false });
  assert.deepEqual(hostInfo.inputSchema.required, ["topic"]);
  const called = await within(
    WAIT_MS,
    "tools/call",
    client.callTool({ name: "host_info", arguments: { topic: "os" } }),
  ) as Called;
  assert.deepEqual(called, { content: [{ type: "text", text: OS_TEXT }] });
  const wrong = await within(
    WAIT_MS,
    "tools/call with a wrong topic",
    client.callTool({ name: "host_info", arguments: { topic: "disk" } }),
  ) as Called;
  assert.equal(wrong.isError, true);
  assert.deepEqual(wrong.content, [{
    type: "text",
    text: 'host_info: "topic" must be one of os, cpu, memory, uptime, not "disk"',
  }]);
}

/** A run that waits: the agent's model thinks for a minute, unless its turn is cancelled. */
const THINKING = { env: { MM_SIM_THINK_MS: String(WAIT_MS) } };

Deno.test("MCP: the MCP SDK's client, given the entry an HTTP agent was given, lists the tools and calls host_info; once the turn is cancelled nothing listens", async () => {
  const client = startClient(withAgent([], "What OS?", THINKING));
  await client.waitForStderr('"method":"session/new"');
  const entry = entryOf(client.stderr());
  assert.deepEqual(Object.keys(entry), ["type", "name", "url", "headers"]);
  assert.equal(entry.type, "http");
  assert.equal(entry.name, "client");
  assert.match(String(entry.url), /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  assert.match(entry.headers?.[0].value ?? "", /^Bearer [0-9a-f]{64}$/);
  const sdk = await sdkOverHttp(entry);
  await assertServes(sdk);
  await sdk.close();
  await client.waitForStderr('[client] host_info {"topic":"os"} (session ');
  Deno.kill(client.child.pid, "SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  await assertNothingLeft(entry);
});

Deno.test("MCP: the MCP SDK's client, starting the relay a stdio agent was given, lists the tools and calls host_info; the relay ends with its stdin", async () => {
  // Deno's cache, named: the relay is told to compile client.ts where the client's deno did.
  const cache = Deno.env.get("DENO_DIR") ?? await denoDir();
  const env = { ...THINKING.env, DENO_DIR: cache };
  const client = startClient(withAgent(["--stdio"], "What OS?", { ...THINKING, env }));
  await client.waitForStderr('"method":"session/new"');
  const entry = entryOf(client.stderr());
  assert.deepEqual(Object.keys(entry), ["name", "command", "args", "env"]);
  assert.equal(entry.command, Deno.execPath(), "the running deno, by its absolute path");
  assert.ok(entry.args?.includes("--mcp-relay"), JSON.stringify(entry.args));
  assert.ok(!entry.args?.some((arg) => /[0-9a-f]{64}/.test(arg)), "the token is not an argument");
  // The token, and where the relay's deno finds its cache (when the client may say so).
  const names = entry.env?.map((variable) => variable.name) ?? [];
  assert.deepEqual(names, ["ACP_CLIENT_MCP_TOKEN", "DENO_DIR"]);
  assert.deepEqual(entry.env?.[1], { name: "DENO_DIR", value: cache });
  const { host } = serverOf(entry);
  const sdk = await sdkThroughRelay(entry);
  await assertServes(sdk);
  await sdk.close(); // its stdin ends: the relay exits
  Deno.kill(client.child.pid, "SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  await assertNothingLeft(entry);
  assert.equal(await listening(host), false);
});

Deno.test("MCP: what the server refuses — no token (wherever asked), another token even one character off, another host, a page that is not local, a body too large (its length said or not), not JSON, a batch, a bad shape, an unknown method or tool, GET and DELETE — neither ends the session nor runs a tool; a call without arguments is checked as one with none", async () => {
  const client = startClient(withAgent([], "What OS?", THINKING));
  await client.waitForStderr('"method":"session/new"');
  const entry = entryOf(client.stderr());
  const { host, token } = serverOf(entry);
  const auth = { Authorization: `Bearer ${token}` };
  const near = `${token[0] === "a" ? "b" : "a"}${token.slice(1)}`; // the right length, one wrong
  // A ping a little over 4 MiB: were it cut at the limit and read, it would be bad JSON (400).
  const padding = "x".repeat(4 * 2 ** 20);
  const bigPing = JSON.stringify({ jsonrpc: "2.0", id: 8, method: "ping", params: { padding } });
  const call = JSON.stringify({
    jsonrpc: "2.0",
    id: 9,
    method: "tools/call",
    params: { name: "host_info", arguments: { topic: "uptime" } },
  });
  const refusals: [string, Promise<{ status: number; body: string }>, number][] = [
    ["no token", post(host, call, {}), 401],
    ["another token", post(host, call, { Authorization: `Bearer ${"0".repeat(64)}` }), 401],
    [
      "the token but its first character",
      post(host, call, { Authorization: `Bearer ${near}` }),
      401,
    ],
    [
      "no token, on another path",
      rawHttp(host, `POST /other HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
      401,
    ],
    [
      "no token, GET",
      rawHttp(host, `GET /mcp HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
      401,
    ],
    [
      "another host",
      post(host, call, { ...auth, Host: `evil.example:${host.split(":")[1]}` }),
      403,
    ],
    [
      "the loopback by name",
      post(host, call, { ...auth, Host: `localhost:${host.split(":")[1]}` }),
      403,
    ],
    ["a page elsewhere", post(host, call, { ...auth, Origin: "http://evil.example" }), 403],
    [
      "a body over 4 MiB",
      post(host, call, { ...auth, "Content-Length": String(5 * 2 ** 20) }),
      413,
    ],
    ["a body over 4 MiB, its length unsaid (chunked)", chunkedPost(host, bigPing, auth), 413],
    [
      "GET",
      rawHttp(
        host,
        `GET /mcp HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      ),
      405,
    ],
    [
      "DELETE",
      rawHttp(
        host,
        `DELETE /mcp HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      ),
      405,
    ],
  ];
  for (const [what, answer, status] of refusals) {
    assert.equal((await answer).status, status, what);
  }
  const rpc = async (body: string, status: number, code: number, what: string) => {
    const answer = await post(host, body, auth);
    assert.equal(answer.status, status, `${what}: ${answer.body}`);
    assert.equal(JSON.parse(answer.body).error?.code, code, `${what}: ${answer.body}`);
  };
  await rpc("not json", 400, -32700, "not JSON");
  await rpc(`[${call}]`, 400, -32600, "a batch");
  await rpc('{"jsonrpc":"2.0","id":3}', 400, -32600, "neither a request nor an answer");
  await rpc('{"jsonrpc":"2.0","id":4,"method":"resources/list"}', 200, -32601, "unknown method");
  const unknownTool = '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"rm"}}';
  await rpc(unknownTool, 200, -32602, "unknown tool");
  await rpc('{"jsonrpc":"2.0","id":6,"method":"server/discover"}', 400, -32601, "server/discover");
  const notified = await post(host, '{"jsonrpc":"2.0","method":"notifications/initialized"}', auth);
  assert.equal(notified.status, 202);
  // A page on this machine may ask, with the token: a local origin.
  const local = await post(host, call, { ...auth, Origin: "http://localhost:3000" });
  assert.equal(local.status, 200, local.body);
  assert.equal(JSON.parse(local.body).result.content[0].text.startsWith("up "), true, local.body);
  // A call without arguments is a call with none: the tool's own check answers it.
  const bare = '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"host_info"}}';
  const answered = JSON.parse((await post(host, bare, auth)).body);
  assert.equal(answered.result?.isError, true, JSON.stringify(answered));
  const versions = async (asked: string) => {
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "initialize",
      params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: "t", version: "0" } },
    });
    return JSON.parse((await post(host, body, auth)).body).result.protocolVersion;
  };
  assert.equal(await versions("2025-06-18"), "2025-06-18");
  assert.equal(await versions("1999-01-01"), "2025-11-25");
  // The session goes on: cancelled as a person would, it ends as usual.
  Deno.kill(client.child.pid, "SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  const calls = run.log.filter((line) => line.startsWith("[client] host_info "));
  assert.equal(calls.length, 2, `the calls let in, and no other:\n${calls.join("\n")}`);
  assert.match(calls[0], /^\[client\] host_info \{"topic":"uptime"\} \(session \S+\)$/);
  assert.match(calls[1], /^\[client\] host_info \{\} \(session \S+\)$/);
  await assertNothingLeft(entry);
});

/** Each way a session ends, with the client's exit code, and what the agent and the run are given. */
const WAYS_OUT: [
  string,
  number,
  string[],
  ClientRun,
  ((run: ReturnType<typeof startClient>) => Promise<void>)?,
][] = [
  ["the turn ends", 0, [], {}],
  ["the agent crashes", 1, [], { env: { MM_SIM_EXIT_IN_TURN: "3" } }],
  ["Ctrl-C", 130, [], THINKING, async (run) => {
    await run.waitForStdout("❓ What OS?");
    Deno.kill(run.child.pid, "SIGINT");
  }],
  ["SIGTERM", 143, [], THINKING, async (run) => {
    await run.waitForStdout("❓ What OS?");
    Deno.kill(run.child.pid, "SIGTERM");
  }],
  ["a silence past --turn-timeout", 124, [], { ...THINKING, args: ["--turn-timeout", "1"] }],
];
for (const [way, code, agentArgs, run, act] of WAYS_OUT) {
  for (const transport of ["http", "stdio"]) {
    Deno.test(`MCP: when ${way}, nothing of the ${transport} road listens or runs any more`, async () => {
      const args = transport === "stdio" ? ["--stdio", ...agentArgs] : agentArgs;
      const client = startClient(withAgent(args, "What OS?", run));
      await act?.(client);
      const result = await client.done();
      assert.equal(result.code, code, result.stderr);
      await assertNothingLeft(entryOf(result.stderr));
    });
  }
}

Deno.test("MCP: the agent is named as it names itself, in the client's messages", async () => {
  const crashed = await runClient(withAgent([], "What OS?", { env: { MM_SIM_EXIT_IN_TURN: "3" } }));
  assert.equal(crashed.code, 1);
  assert.ok(
    crashed.log.includes(`error: ${AGENT_TITLE} exited with code 3 before the turn ended`),
    crashed.stderr,
  );
  const missing = await runClient({
    noMm: true,
    noTrace: true,
    args: ["Hi", "--", "/no/such/agent"],
  });
  assert.equal(missing.code, 127);
  assert.equal(
    missing.log[0],
    "error: cannot start agent (/no/such/agent): not found. -- COMMAND names it: check that command.",
  );
});

for (const shape of ["claude", "gemini", "codex", "codex2", "qwen"]) {
  Deno.test(`MCP: asked for a call of host_info in the shape of ${shape}, the client allows it, and the tool runs`, async () => {
    const run = await runClient(withAgent(["--asks", shape]));
    assert.equal(run.code, 0, run.stderr);
    const permission = run.log.find((line) => line.startsWith("[client] permission for "));
    assert.match(String(permission), /: allowed$/, run.stderr);
    assert.ok(run.log.some((line) => line.startsWith('[client] host_info {"topic":"os"}')));
    assert.ok(run.out.includes(`│ ${OS_TEXT}`), run.stdout);
  });
}

Deno.test("MCP: an agent that lists the tools a second late still gets the first question after it; one that never does is said to", async () => {
  const late = await runClient(withAgent(["--connect", "late"]));
  assert.equal(late.code, 0, late.stderr);
  assert.ok(late.out.includes(`│ ${OS_TEXT}`), late.stdout);
  const never = await runClient(withAgent(["--connect", "never"]));
  assert.equal(never.code, 0, never.stderr);
  assert.ok(
    never.log.includes(
      `[client] ${AGENT_TITLE} did not ask for the client's tools (it may not take mcpServers)`,
    ),
    never.stderr,
  );
  assert.ok(!never.log.some((line) => line.startsWith("[client] host_info ")), never.stderr);
});

Deno.test("MCP: the agent is given the tools on one road only: no client tools in initialize, one MCP server in session/new", async () => {
  const run = await runClient(withAgent());
  assert.equal(run.code, 0, run.stderr);
  const [init] = sentWith(run.stderr, "initialize");
  const capabilities = (init.params as { clientCapabilities: Record<string, unknown> })
    .clientCapabilities;
  assert.deepEqual(capabilities, {
    fs: { readTextFile: false, writeTextFile: false },
    terminal: false,
  });
  assert.ok(run.log.some((line) => /^\[client\] discovery: MCP \(http\), session \S+$/.test(line)));
  // It listed them as it opened the session: the first question did not wait for them in vain.
  assert.ok(
    !run.log.some((line) => line.includes("did not ask for the client's tools")),
    run.stderr,
  );
  assert.equal(alive(Number(Deno.readTextFileSync(run.pidFile).trim().split(/\s+/)[0])), false);
});

Deno.test("MCP: -q shows the answer alone, as with mm", async () => {
  const run = await runClient(withAgent([], "What OS?", { args: ["-q"], noTrace: true }));
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stdout.startsWith("Here is what host_info reports"), run.stdout);
  assert.ok(!run.log.some((line) => line.startsWith("[client] host_info")), run.stderr);
});

Deno.test("README: its line that runs the demo with the stand-in as another agent does what it says", async () => {
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const line = readme.match(/^(deno task demo -- "What OS\?" -- test\/agent-sim)\b.*$/m)?.[1];
  assert.ok(line, "the README's Any ACP agent has no line running the stand-in");
  const deno = Deno.execPath().replace(/\/[^/]*$/, "");
  const run = await runShell(line, { PATH: `${deno}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}` });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stdout.includes(`│ ${OS_TEXT}`), run.stdout);
  assert.match(run.stderr, /\[client\] discovery: MCP \(http\), session \S+\n/);
  assert.match(run.stderr, /\[client\] host_info \{"topic":"os"\} \(session \S+\)\n/);
});

Deno.test({
  name:
    "MCP: at a terminal, once a turn is cancelled, the progress line waits for the agent by its own name",
  ignore: !hasScript,
  async fn() {
    const command = `exec ${clientCommand(["-i", "--", AGENT_SIM])}`; // its exit code, not sh's
    const terminal = inTerminal(command, { env: { MM_SIM_THINK_MS: String(WAIT_MS) } });
    await terminal.waitFor("> ");
    await terminal.type("What OS?\r");
    await terminal.waitFor(/waiting for the model … \d+ s/);
    await terminal.type("\x03");
    await terminal.waitFor(/\[cancelled\][^]*> $/);
    await terminal.type("\x04");
    const { code, screen } = await terminal.done();
    assert.equal(code, 0, JSON.stringify(screen));
    assert.ok(
      screen.includes(`waiting for ${AGENT_TITLE} to end the turn`),
      JSON.stringify(screen),
    );
    assert.ok(!screen.includes("waiting for mm"), JSON.stringify(screen));
  },
});

Deno.test("MCP: a session of another agent resumed (--resume) is given the client's server again, and its tools", async () => {
  const first = await runClient(withAgent([], "What OS?", { noTrace: true }));
  assert.equal(first.code, 0, first.stderr);
  const id = first.log.find((line) => line.startsWith("[client] continue with: --resume "))
    ?.split(" ").at(-1);
  assert.ok(id, first.stderr);
  for (const transport of [[], ["--stdio"]]) {
    const resumed = await runClient(
      withAgent(transport, "And the CPU?", { args: ["--resume", id] }),
    );
    assert.equal(resumed.code, 0, resumed.stderr);
    const how = transport.length > 0 ? "stdio" : "http";
    assert.ok(
      resumed.log.includes(`[client] discovery: MCP (${how}), session ${id} (resumed)`),
      resumed.stderr,
    );
    assert.equal(entryOf(resumed.stderr).name, "client");
    assert.ok(resumed.log.some((line) => line.startsWith('[client] host_info {"topic":"cpu"}')));
  }
});

Deno.test("MCP: Ctrl-C during a call of a lent tool aborts its signal, and says so", async () => {
  const client = startClient(withAgent([], "What does slow say?", {
    client: clientWithTools(SLOW_TOOL),
    env: { MM_SIM_ARGS: JSON.stringify({ slow: { ms: WAIT_MS } }) },
  }));
  await client.waitForStderr('[client] slow {"ms":');
  Deno.kill(client.child.pid, "SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.log.includes("[client] slow cancelled"), run.stderr);
  assert.ok(run.log.includes("[tool] slow saw its signal abort"), run.stderr);
  // The person cancelled it, not the agent: the line does not say the agent did.
  const byAgent = run.log.filter((line) => line.includes("cancelled by"));
  assert.deepEqual(byAgent, [], run.stderr);
});

Deno.test("MCP: the relay answers what it was asked before its stdin ended, then exits", async () => {
  const run = withAgent(["--stdio"], "What OS?", {
    ...THINKING,
    client: clientWithTools(SLOW_TOOL),
  });
  const client = startClient(run);
  await client.waitForStderr('"method":"session/new"');
  const relay = startRelay(entryOf(client.stderr()));
  // A call that takes a while: its answer comes well after the end of the relay's stdin.
  await relay.send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: slowCall(500) });
  await relay.writer.close(); // at once: the answer is still on its way
  const { code, stdout } = await within(WAIT_MS, "the relay to exit", relay.child.output());
  assert.equal(code, 0);
  const answer = JSON.parse(new TextDecoder().decode(stdout));
  assert.deepEqual(answer, {
    jsonrpc: "2.0",
    id: 5,
    result: { content: [{ type: "text", text: "slow done after 500 ms" }] },
  });
  Deno.kill(client.child.pid, "SIGINT");
  const ended = await client.done();
  assert.equal(ended.code, 130, ended.stderr);
});

Deno.test("MCP: the relay passes on a cancel and a second call while a call runs, and exits 1 once the session's server is gone", async () => {
  const run = withAgent(["--stdio"], "What OS?", {
    ...THINKING,
    client: clientWithTools(SLOW_TOOL),
  });
  const client = startClient(run);
  await client.waitForStderr('"method":"session/new"');
  const relay = startRelay(entryOf(client.stderr()));
  try {
    // A call that would run for two minutes; then, behind it, its cancel and another call.
    await relay.send({
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: slowCall(2 * WAIT_MS),
    });
    await client.waitForStderr('[client] slow {"ms":');
    const cancel = { requestId: 5, reason: "the user cancelled" };
    await relay.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: cancel });
    const uptime = { name: "host_info", arguments: { topic: "uptime" } };
    await relay.send({ jsonrpc: "2.0", id: 6, method: "tools/call", params: uptime });
    const answers = new Map<unknown, Record<string, unknown>>();
    while (answers.size < 2) {
      const line = await within(WAIT_MS, "the relay's answers", relay.lines.next());
      assert.equal(line.done, false, "the relay's stdout ended before it answered");
      const answer = JSON.parse(String(line.value));
      answers.set(answer.id, answer);
    }
    assert.deepEqual(answers.get(5)?.error, { code: -32800, message: "Request cancelled" });
    assert.match(JSON.stringify(answers.get(6)?.result), /"text":"up /);
    // The session ends; the relay, its stdin still open, finds the server gone at its next line.
    Deno.kill(client.child.pid, "SIGINT");
    const ended = await client.done();
    assert.equal(ended.code, 130, ended.stderr);
    await relay.send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: uptime });
    const { code } = await within(WAIT_MS, "the relay to exit", relay.child.status);
    assert.equal(code, 1);
  } finally {
    await relay.writer.close().catch(() => {});
    if (alive(relay.child.pid)) relay.child.kill();
    if (alive(client.child.pid)) Deno.kill(client.child.pid, "SIGKILL"); // failed before its end
    await relay.child.status;
    await relay.lines.return(undefined);
  }
});

Deno.test("MCP: a relay with the wrong token answers a call with the server's refusal, as that call's error", async () => {
  const client = startClient(withAgent(["--stdio"], "What OS?", THINKING));
  await client.waitForStderr('"method":"session/new"');
  const relay = startRelay(entryOf(client.stderr()), { ACP_CLIENT_MCP_TOKEN: "0".repeat(64) });
  const uptime = { name: "host_info", arguments: { topic: "uptime" } };
  await relay.send({ jsonrpc: "2.0", id: 6, method: "tools/call", params: uptime });
  await relay.writer.close();
  const { code, stdout } = await within(WAIT_MS, "the relay to exit", relay.child.output());
  assert.equal(code, 0);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), {
    jsonrpc: "2.0",
    id: 6,
    error: { code: -32603, message: "no token, or not the session's" },
  });
  Deno.kill(client.child.pid, "SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok(!run.log.some((line) => line.startsWith("[client] host_info ")), run.stderr);
});

/**
 * The relay an agent was given as its stdio MCP server, started as the agent starts it (`changed`
 * changes the entry's environment).
 */
function startRelay(entry: ReturnType<typeof entryOf>, changed: Record<string, string> = {}) {
  const given = (entry.env ?? []).map((variable) => [variable.name, variable.value]);
  const env = { ...Object.fromEntries(given), ...changed };
  const child = new Deno.Command(String(entry.command), {
    args: entry.args,
    env: { ...passedEnv(), ...env },
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const send = (message: object) =>
    writer.write(new TextEncoder().encode(`${JSON.stringify(message)}\n`));
  return { child, writer, send, lines: linesOf(child.stdout) };
}
/** A call of the slow tool that answers after `ms`. */
function slowCall(ms: number) {
  return { name: "slow", arguments: { ms } };
}
/** The lines of a stream, one at a time. */
async function* linesOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of stream) {
    text += decoder.decode(chunk, { stream: true });
    const lines = text.split("\n");
    text = lines.pop() ?? "";
    yield* lines;
  }
}
/** Where this deno keeps its cache when `DENO_DIR` does not say (`deno info`). */
async function denoDir(): Promise<string> {
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  return JSON.parse(new TextDecoder().decode(info.stdout)).denoDir;
}
