/**
 * The tools the client lends mm: the `TOOLS` registry and how it is offered (meta and request
 * discovery), `host_info` itself (its texts, pure, and its results and error results end to end),
 * what the client does not lend, and tools a copier adds — tools that answer later, that mm
 * cancels, that fail — through a copy of client.ts with tools added to `TOOLS` exactly as the
 * README says, against the stand-in or a peer that calls them directly (`test/rogue-mm`).
 */

import assert from "./_assert.ts";
import {
  checkArguments,
  checkTools,
  describeTools,
  describeUptime,
  gib,
  hostInfo,
  initializeParams,
  modelName,
  osName,
  readToolCall,
  type Tool,
  TOOLS,
  toolText,
  VERSION,
} from "../client.ts";
import { validateToolList } from "./mm_sim.ts";
import {
  agentFileWith,
  ANSWER_PREFIX,
  assertInOrder,
  type ClientResult,
  clientWithTools,
  discovery,
  MODEL_NAMES,
  OS_TEXT,
  permissionsWith,
  RESULT_LINE,
  ROOT,
  runClient,
  runRogue,
  runShell,
  seen,
  SLOW_TOOL,
  tempFile,
  TOOL_NAMES,
  traced,
  WAIT_MS,
  within,
} from "./_run.ts";
import { scratchDir } from "./_scratch.ts";

const TOOL_ERROR = (text: string) => `│ [client tool error: ${text}]`;

// ─── host_info, pure ─────────────────────────────────────────────────────────

Deno.test("host_info: names operating systems as people do", () => {
  assert.equal(osName("linux"), "Linux");
  assert.equal(osName("darwin"), "macOS");
  assert.equal(osName("windows"), "Windows");
  assert.equal(osName("freebsd"), "Freebsd");
});

Deno.test("host_info: writes sizes in GiB with one decimal", () => {
  assert.equal(gib(16_106_127_360), "15.0 GiB");
  assert.equal(gib(16_965_120_000), "15.8 GiB");
});

Deno.test("host_info: writes uptime in days, hours and minutes with the UTC start", () => {
  const now = new Date("2026-11-30T12:13:30Z");
  assert.equal(
    describeUptime(3 * 86400 + 4 * 3600 + 12 * 60 + 30, now),
    "up 3 days, 4 hours, 12 minutes (since 2026-11-27 08:01 UTC)",
  );
  assert.equal(
    describeUptime(86400 + 60, now),
    "up 1 day, 0 hours, 1 minute (since 2026-11-29 12:12 UTC)",
  );
  assert.equal(describeUptime(42, now), "up 0 minutes (since 2026-11-30 12:12 UTC)");
  assert.equal(describeUptime(3600 * 2, now), "up 2 hours, 0 minutes (since 2026-11-30 10:13 UTC)");
  // At the boundaries: an hour exactly has its hour, a day exactly its day.
  assert.equal(describeUptime(3599, now), "up 59 minutes (since 2026-11-30 11:13 UTC)");
  assert.equal(describeUptime(3600, now), "up 1 hour, 0 minutes (since 2026-11-30 11:13 UTC)");
  assert.equal(
    describeUptime(86400, now),
    "up 1 day, 0 hours, 0 minutes (since 2026-11-29 12:13 UTC)",
  );
});

/** host_info's entry in TOOLS (a copier may have added others after it). */
const HOST_INFO = TOOLS.find((tool) => tool.name === "host_info")!;

Deno.test("host_info: reports this machine's facts in the documented shapes", () => {
  const text = (topic: "os" | "cpu" | "memory" | "uptime") => {
    const result = hostInfo(topic);
    assert.equal(result.isError, undefined, `${topic}: ${result.content[0].text}`);
    return result.content[0].text;
  };
  assert.match(text("os"), /^(Linux|macOS|Windows|\S+) \S+ \(\w+\/\w+\), host name \S+$/);
  assert.ok(text("os").includes(`(${Deno.build.os}/${Deno.build.arch})`));
  assert.match(text("cpu"), /^\d+ × .+ \(\w+\), load average \d+\.\d\d \d+\.\d\d \d+\.\d\d$/);
  assert.match(text("memory"), /^\d+\.\d GiB free of \d+\.\d GiB$/);
  assert.match(text("uptime"), /^up .*minutes? \(since \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$/);
});

Deno.test("host_info: its schema refuses an unknown topic, naming the choices", () => {
  assert.equal(
    checkArguments(HOST_INFO, { topic: "disk" }),
    'host_info: "topic" must be one of os, cpu, memory, uptime, not "disk"',
  );
  assert.equal(
    checkArguments(HOST_INFO, { topic: "OS" }),
    'host_info: "topic" must be one of os, cpu, memory, uptime, not "OS"',
  );
  for (const topic of ["os", "cpu", "memory", "uptime"]) {
    assert.equal(checkArguments(HOST_INFO, { topic }), undefined, topic);
  }
});

Deno.test("host_info: its schema refuses a missing or non-string topic", () => {
  assert.equal(
    checkArguments(HOST_INFO, {}),
    'host_info: missing parameter "topic" (one of os, cpu, memory, uptime)',
  );
  for (const [topic, shown] of [[42, "42"], [null, "null"], [["os"], '["os"]'], [{}, "{}"]]) {
    assert.equal(
      checkArguments(HOST_INFO, { topic }),
      `host_info: "topic" must be a string, not ${shown}`,
    );
  }
});

Deno.test("host_info: a machine fact it cannot read is an error result, not a crash", () => {
  const loadavg = Deno.loadavg;
  Object.assign(Deno, {
    loadavg: () => {
      throw new Error("no /proc/loadavg");
    },
  });
  try {
    assert.deepEqual(hostInfo("cpu"), {
      content: [{ type: "text", text: "host_info could not read cpu: no /proc/loadavg" }],
      isError: true,
    });
  } finally {
    Object.assign(Deno, { loadavg });
  }
});

Deno.test("host_info: memory is the system's available figure, of its total, in GiB", () => {
  const systemMemoryInfo = Deno.systemMemoryInfo;
  const GiB = 1024 ** 3;
  const stub = { total: 16 * GiB, free: 1 * GiB, available: 8.5 * GiB, buffers: 0, cached: 0 };
  Object.assign(Deno, { systemMemoryInfo: () => ({ ...stub, swapTotal: 0, swapFree: 0 }) });
  try {
    // Free memory is `available` (what a program can still get), not `free` (never touched).
    assert.deepEqual(hostInfo("memory"), {
      content: [{ type: "text", text: "8.5 GiB free of 16.0 GiB" }],
    });
  } finally {
    Object.assign(Deno, { systemMemoryInfo });
  }
});

// ─── The registry and how it is offered ──────────────────────────────────────

Deno.test("tools: a call's arguments are the params without _meta, its session from _meta", () => {
  assert.deepEqual(
    readToolCall({ topic: "os", _meta: { "org.mini-me/sessionId": "s1" } }),
    { args: { topic: "os" }, sessionId: "s1" },
  );
  assert.deepEqual(readToolCall({ topic: "os" }), { args: { topic: "os" }, sessionId: "?" });
  assert.deepEqual(readToolCall({ _meta: { "org.mini-me/sessionId": 7 } }), {
    args: {},
    sessionId: "?",
  });
  assert.deepEqual(readToolCall(undefined), { args: {}, sessionId: "?" });
  assert.deepEqual(readToolCall([1]), { args: [1], sessionId: "?" });
});

/** A well-formed tool for the registry's checks, changed in one field at a time. */
const CLOCK: Tool = {
  name: "clock",
  description: "The time.",
  method: "_demo.minime/clock",
  inputSchema: { type: "object", properties: {} },
  call: () => toolText("noon"),
};
/** What checkTools() says of host_info's entry followed by `entry`. */
const secondEntry = (entry: Record<string, unknown>) =>
  checkTools([HOST_INFO, { ...CLOCK, ...entry } as Tool]);

Deno.test("tools: the registry takes well-formed entries, the client's own TOOLS first", () => {
  assert.equal(checkTools(TOOLS), undefined);
  assert.equal(checkTools([HOST_INFO, CLOCK]), undefined);
  assert.equal(secondEntry({ inputSchema: undefined }), undefined, "no schema: no parameter");
});

Deno.test("tools: the registry refuses an entry without a name, naming its place", () => {
  assert.equal(secondEntry({ name: "" }), 'TOOLS entry 1 (""): no name');
  assert.equal(secondEntry({ name: undefined }), 'TOOLS entry 1 (""): no name');
  assert.equal(
    checkTools([{ ...CLOCK, name: "" }, HOST_INFO]),
    'TOOLS entry 0 (""): no name',
  );
});

Deno.test("tools: the registry refuses a method that is not an ACP extension method", () => {
  assert.equal(
    secondEntry({ method: "demo.minime/clock" }),
    'TOOLS entry 1 ("clock"): method "demo.minime/clock" must start with "_" (an ACP extension method)',
  );
  assert.equal(
    secondEntry({ method: undefined }),
    'TOOLS entry 1 ("clock"): method "" must start with "_" (an ACP extension method)',
  );
});

Deno.test("tools: the registry refuses an inputSchema that does not describe an object", () => {
  assert.equal(
    secondEntry({ inputSchema: { type: "string" } }),
    'TOOLS entry 1 ("clock"): inputSchema.type must be "object", got "string"',
  );
  for (const schema of ["object", [], [{ type: "object" }]]) {
    assert.equal(
      secondEntry({ inputSchema: schema }),
      'TOOLS entry 1 ("clock"): inputSchema must be an object',
      JSON.stringify(schema),
    );
  }
  assert.equal(secondEntry({ inputSchema: null }), undefined, "null is no schema, as mm reads it");
  assert.equal(secondEntry({ inputSchema: { properties: {} } }), undefined, "type may be absent");
});

Deno.test("tools: the registry refuses a required property its schema's properties do not declare, a typo the model could never satisfy", () => {
  const schema = (required: unknown[], properties?: object) => ({
    inputSchema: { type: "object", properties, required },
  });
  assert.equal(
    secondEntry(schema(["zone", "zome"], { zone: { type: "string" } })),
    'TOOLS entry 1 ("clock"): inputSchema.required names "zome", which its properties do not declare',
  );
  assert.equal(secondEntry(schema(["zone"], { zone: { type: "string" } })), undefined);
  assert.equal(
    secondEntry(schema(["zone"])),
    undefined,
    "no properties: any value, as JSON Schema",
  );
});

Deno.test("tools: the registry refuses two entries the model would see under one name", () => {
  assert.equal(modelName("open buffers"), "client_open_buffers");
  assert.equal(modelName("__host--info__"), "client_host_info");
  assert.equal(
    secondEntry({ name: "host-info" }),
    'TOOLS entry 1 ("host-info"): duplicate tool name "client_host_info": entry 0 (host_info) has it',
  );
  assert.equal(
    secondEntry({ name: "host info!" }),
    'TOOLS entry 1 ("host info!"): duplicate tool name "client_host_info": entry 0 (host_info) has it',
  );
});

Deno.test("tools: the registry refuses a name that leaves the model none, and the method of mm's list request", () => {
  assert.equal(
    secondEntry({ name: "--" }),
    'TOOLS entry 1 ("--"): name "--" leaves the model no name',
  );
  assert.equal(
    secondEntry({ method: "_org.mini-me/tools/list" }),
    'TOOLS entry 1 ("clock"): method "_org.mini-me/tools/list" is mm\'s list request',
  );
});

Deno.test("tools: the registry refuses two entries with one method, as calls are dispatched by it", () => {
  assert.equal(
    secondEntry({ method: HOST_INFO.method }),
    `TOOLS entry 1 ("clock"): method "${HOST_INFO.method}" is entry 0's (host_info) too; calls are dispatched by it`,
  );
});

/** The copy-paste slip: host_info's entry copied, its name and call changed, its method kept. */
const SLIP = `  {
    name: "disk",
    description: "Free space on the disk.",
    method: "_demo.minime/host_info",
    inputSchema: { type: "object", properties: {} },
    call: () => toolText("plenty"),
  },
`;

Deno.test("tools: a broken TOOLS entry ends the run with one error line, exit 2, before mm starts", async () => {
  const run = await runClient({ client: clientWithTools(SLIP), args: ["How much memory?"] });
  assert.equal(run.code, 2, run.stderr);
  // The slip is appended after every tool the client lends (a copier may have added some).
  const hostInfoAt = TOOLS.indexOf(HOST_INFO);
  assert.equal(
    run.stderr,
    `error: TOOLS entry ${TOOLS.length} ("disk"): method "_demo.minime/host_info" is entry ${hostInfoAt}'s (host_info) too; calls are dispatched by it\n`,
  );
  assert.equal(run.stdout, "");
  assert.equal(Deno.readTextFileSync(run.pidFile), "", "mm was never started");
});

Deno.test("tools: a broken TOOLS entry still lets --help and --version answer, and stops any other run", async () => {
  const client = clientWithTools(SLIP);
  const [help, version, other] = await Promise.all(
    [["--help"], ["--version"], ["--sessions"]].map((args) =>
      runClient({ client, args, noMm: true, noTrace: true })
    ),
  );
  assert.equal(help.code, 0, help.stderr);
  assert.ok(
    help.stdout.startsWith("usage: client.ts [options] [question | -] [-- COMMAND [ARGS…]]\n"),
    help.stdout,
  );
  const names = [...TOOLS.map((tool) => tool.name), "disk"].join(", ");
  assert.ok(help.stdout.includes(`the client's tools (${names})`), help.stdout);
  assert.equal(help.stderr, "");
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout, `host-info-client ${VERSION}\n`);
  assert.equal(version.stderr, "");
  assert.equal(other.code, 2, other.stderr);
  assert.match(
    other.stderr,
    /^error: TOOLS entry \d+ \("disk"\): method "_demo\.minime\/host_info"/,
  );
  assert.equal(other.stdout, "");
});

/** A tool whose schema has a property of each primitive type, and one enum. */
const TYPED = {
  name: "typed",
  inputSchema: {
    type: "object" as const,
    properties: {
      text: { type: "string" },
      count: { type: "integer" },
      ratio: { type: "number" },
      flag: { type: "boolean" },
      items: { type: "array" },
      options: { type: "object" },
      nothing: { type: "null" },
      maybe: { type: ["string", "null"] },
      colour: { enum: ["red", 2, null] },
      loose: { type: "date" },
      free: { description: "no type" },
    },
    required: ["text", "count"],
  },
};

Deno.test("tools: arguments are checked against the schema's required properties, types and enum", () => {
  const base = { text: "a", count: 1 };
  const check = (extra: Record<string, unknown>) => checkArguments(TYPED, { ...base, ...extra });
  assert.equal(check({}), undefined);
  assert.equal(checkArguments(TYPED, { count: 1 }), 'typed: missing parameter "text"');
  const single = {
    type: "object" as const,
    properties: { mode: { enum: ["fast"] } },
    required: ["mode"],
  };
  assert.equal(
    checkArguments({ name: "one", inputSchema: single }, {}),
    'one: missing parameter "mode" (one of fast)',
  );
  assert.equal(checkArguments(TYPED, { text: "a" }), 'typed: missing parameter "count"');
  assert.equal(check({ text: 1 }), 'typed: "text" must be a string, not 1');
  assert.equal(check({ count: 1.5 }), 'typed: "count" must be an integer, not 1.5');
  assert.equal(check({ count: "1" }), 'typed: "count" must be an integer, not "1"');
  assert.equal(check({ ratio: 0.5 }), undefined);
  assert.equal(check({ ratio: "0.5" }), 'typed: "ratio" must be a number, not "0.5"');
  assert.equal(check({ flag: "yes" }), 'typed: "flag" must be a boolean, not "yes"');
  assert.equal(check({ items: {} }), 'typed: "items" must be an array, not {}');
  assert.equal(check({ options: [] }), 'typed: "options" must be an object, not []');
  assert.equal(check({ options: null }), 'typed: "options" must be an object, not null');
  assert.equal(check({ nothing: 0 }), 'typed: "nothing" must be null, not 0');
  assert.equal(check({ maybe: null }), undefined);
  assert.equal(check({ maybe: 3 }), 'typed: "maybe" must be a string or null, not 3');
  assert.equal(check({ colour: 2 }), undefined);
  assert.equal(check({ colour: null }), undefined);
  assert.equal(check({ colour: "2" }), 'typed: "colour" must be one of red, 2, , not "2"');
  const long = "x".repeat(60);
  assert.equal(check({ text: [long] }), `typed: "text" must be a string, not ["${"x".repeat(38)}`);
});

Deno.test("tools: a type the check does not know, an untyped property and an unknown one are the tool's to judge", () => {
  const base = { text: "a", count: 1 };
  assert.equal(checkArguments(TYPED, { ...base, loose: 5 }), undefined);
  assert.equal(checkArguments(TYPED, { ...base, free: { any: "thing" } }), undefined);
  assert.equal(checkArguments(TYPED, { ...base, extra: true }), undefined);
  assert.equal(
    checkArguments({ name: "bare", inputSchema: { type: "object" } }, { a: 1 }),
    undefined,
  );
});

Deno.test("tools: every description in TOOLS passes mini-me's list validation, host_info's as fixed", () => {
  const { tools, skipped } = validateToolList(describeTools(TOOLS));
  assert.deepEqual(skipped, []);
  assert.equal(tools.length, TOOLS.length);
  assert.ok(tools.some((tool) => tool.modelName === "client_host_info"));
  const hostInfoTool = describeTools(TOOLS).find((tool) => tool.name === "host_info")!;
  assert.equal(hostInfoTool.method, "_demo.minime/host_info");
  assert.deepEqual(hostInfoTool.inputSchema, {
    type: "object",
    properties: {
      topic: {
        type: "string",
        enum: ["os", "cpu", "memory", "uptime"],
        description: "Which fact to report.",
      },
    },
    required: ["topic"],
  });
  assert.ok(hostInfoTool.method.startsWith("_"));
  assert.equal(hostInfoTool.inputSchema.type, "object");
  assert.deepEqual(Object.keys(hostInfoTool), ["name", "description", "method", "inputSchema"]);
  assert.equal(hostInfoTool.name, "host_info");
});

Deno.test("tools: every entry of TOOLS is offered as its description alone, the function left out", () => {
  assert.deepEqual(TOOLS.map((t) => t.name), describeTools(TOOLS).map((t) => t.name));
  for (const [i, description] of describeTools(TOOLS).entries()) {
    const { call: _, annotations: _hints, ...rest } = TOOLS[i];
    assert.deepEqual(description, rest);
    assert.equal(JSON.stringify(description), JSON.stringify(rest), "it crosses the wire whole");
  }
});

Deno.test("tools: initialize offers the list in meta mode, true in request mode, and no fs or terminal", () => {
  const capabilities = (request: boolean) =>
    initializeParams(request ? "request" : "meta", TOOLS).clientCapabilities;
  assert.deepEqual(capabilities(false)._meta, { "org.mini-me/tools": describeTools(TOOLS) });
  assert.deepEqual(capabilities(true)._meta, { "org.mini-me/tools": true });
  assert.deepEqual(capabilities(false).fs, { readTextFile: false, writeTextFile: false });
  assert.equal(capabilities(false).terminal, false);
  assert.equal(initializeParams("meta", TOOLS).protocolVersion, 1);
  assert.deepEqual(initializeParams("meta", TOOLS).clientInfo, {
    name: "host-info-client",
    version: "0.5.0",
  });
});

Deno.test("tools: meta discovery: mm sees the client's tools and the model's two host_info calls are answered", async () => {
  const run = await runClient();
  assert.equal(run.code, 0, run.stderr);
  const { session } = discovery(run.log);
  assert.match(session, /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  assertInOrder(run.log, [
    `[acp] client tools (meta): ${MODEL_NAMES}`,
    `[client] discovery: meta, session ${session}`,
    `[client] host_info {"topic":"os"} (session ${session})`,
    `[client] host_info {"topic":"memory"} (session ${session})`,
  ]);
  assert.equal(
    run.out[0],
    "❓ What operating system does my machine run, and how much memory does it have?",
  );
  assert.equal(run.out[1], "🛠️ client: host_info");
  assert.equal(run.out[2], "🛠️ client: host_info");
  assert.equal(run.out[3], `│ ${OS_TEXT}`);
  assert.match(run.out[4], RESULT_LINE.memory);
  assert.ok(run.out[5].startsWith(`${ANSWER_PREFIX}operating system: `), run.out[5]);
  assert.equal(run.out[6], "[end_turn]");
  assert.equal(run.out.length, 7);
  assert.ok(!run.log.some((l) => l.includes("list requested")), "meta mode asks for no list");
});

Deno.test("tools: request discovery: the list is answered while session/new is still pending", async () => {
  const run = await runClient({
    args: ["--request", "Which CPU does my machine have, and since when is it up?"],
  });
  assert.equal(run.code, 0, run.stderr);
  const { session } = discovery(run.log);
  assertInOrder(run.log, [
    `[client] list requested for session ${session}`,
    `[acp] session ${session} client tools (request): ${MODEL_NAMES}`,
    `[client] discovery: request, session ${session}`,
    `[client] host_info {"topic":"cpu"} (session ${session})`,
    `[client] host_info {"topic":"uptime"} (session ${session})`,
  ]);
  assertInOrder(run.out, [
    "❓ Which CPU does my machine have, and since when is it up?",
    RESULT_LINE.cpu,
    RESULT_LINE.uptime,
    "[end_turn]",
  ]);
  // The list request came in before mm answered session/new.
  const frames = traced(run.stderr);
  const list = frames.find((t) => !t.sent && t.frame.method === "_org.mini-me/tools/list");
  const opened = frames.find((t) =>
    !t.sent && (t.frame.result as { sessionId?: string })?.sessionId === session
  );
  assert.ok(list && opened && list.at < opened.at, "list request before the session/new answer");
});

Deno.test("tools: request discovery under a stepwise model: the list is answered, the calls go one at a time, each line whole", async () => {
  const run = await runClient({
    args: ["--request", "Which CPU do I have, and since when is it up?"],
    env: { MM_SIM_MODEL: "stepwise" },
  });
  assert.equal(run.code, 0, run.stderr);
  const { session } = discovery(run.log);
  assert.ok(run.log.includes(`[client] list requested for session ${session}`));
  assert.deepEqual(run.out.filter((l) => l.startsWith("🛠️") || l.startsWith("Let me")), [
    "Let me ask host_info about the CPU. ",
    "🛠️ client: host_info",
    "Let me ask host_info about the uptime. ",
    "🛠️ client: host_info",
  ]);
  assert.equal(run.out.at(-1), "[end_turn]");
});

// ─── host_info, end to end ───────────────────────────────────────────────────

Deno.test("host_info: an unknown topic reaches the model as an error result from its schema", async () => {
  const run = await runClient({ args: ["How big is my disk?"] });
  assert.equal(run.code, 0, run.stderr);
  assertInOrder(run.out, [
    "🛠️ client: host_info",
    "✖ client: host_info failed",
    TOOL_ERROR('host_info: "topic" must be one of os, cpu, memory, uptime, not "disk"'),
    "[end_turn]",
  ]);
  assert.ok(run.stderr.includes('"isError":true'));
});

Deno.test("host_info: a call without a topic is stopped by mm's required-parameter check before it reaches the client", async () => {
  const run = await runClient({ args: ["Tell me about it without a topic"] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(!run.log.some((l) => l.startsWith("[client] host_info")));
  assertInOrder(run.out, [
    "✖ client: host_info failed",
    TOOL_ERROR("missing required parameters: topic"),
  ]);
});

Deno.test("host_info: bad calls get an error result or the right log line, never a JSON-RPC error", async () => {
  const run = await runRogue("bad-calls");
  assert.equal(run.code, 0, run.stderr);
  const refused = (text: string) =>
    `"result":${JSON.stringify({ content: [{ type: "text", text }], isError: true })}}`;
  const missing = refused('host_info: missing parameter "topic" (one of os, cpu, memory, uptime)');
  const lines = seen(run.log);
  assert.equal(lines.length, 8);
  for (const i of [0, 1, 2, 7]) assert.ok(lines[i].endsWith(missing), lines[i]);
  assert.ok(lines[3].endsWith(refused('host_info: "topic" must be a string, not 42')), lines[3]);
  assert.match(lines[4], /"result":\{"content":\[\{"type":"text","text":"Linux|macOS|Windows/);
  assert.match(lines[5], / GiB free of /);
  assert.match(lines[6], / × /);
  assert.ok(!lines.some((l) => l.includes('"error"')));
  const calls = run.log.filter((l) => l.startsWith("[client] host_info "));
  assert.deepEqual(calls, [
    "[client] host_info [1,2] (session ?)",
    '[client] host_info "os" (session ?)',
    "[client] host_info {} (session ?)",
    '[client] host_info {"topic":42} (session ?)',
    '[client] host_info {"topic":"os","extra":true} (session ?)',
    '[client] host_info {"topic":"memory"} (session ?)',
    '[client] host_info {"topic":"cpu"} (session ?)',
    "[client] host_info {} (session ?)",
  ]);
});

Deno.test("tools: what the client does not lend (fs, terminal, unknown extensions) gets Method not found with its id", async () => {
  const run = await runRogue("unknown-requests");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(seen(run.log), [
    'answer {"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}',
    'answer {"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}',
    'answer {"jsonrpc":"2.0","id":"three","error":{"code":-32601,"message":"Method not found"}}',
    'answer {"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}',
  ]);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("tools: $/cancel_request for an answered or unknown request changes nothing", async () => {
  const run = await runRogue("cancel-request");
  assert.equal(run.code, 0, run.stderr);
  const [answer] = seen(run.log);
  assert.match(
    answer,
    /^answer \{"jsonrpc":"2\.0","id":300,"result":\{"content":\[\{"type":"text","text":"up /,
  );
  assert.equal(run.out.at(-1), "[end_turn]");
});

// ─── Tools a copier lends ────────────────────────────────────────────────────

/** Three tools a copier might write: one that takes its time, one that throws, one that rejects. */
const LENT = `${SLOW_TOOL}  {
    name: "throws",
    description: "Fails at once.",
    method: "_test/throws",
    inputSchema: { type: "object" },
    call: () => {
      throw new Error("boom");
    },
  },
  {
    name: "rejects",
    description: "Fails later.",
    method: "_test/rejects",
    inputSchema: { type: "object" },
    call: async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      throw new Error("later boom");
    },
  },
`;

type Answer = { id: number; result?: { content: { text: string }[]; isError?: boolean } } & {
  error?: { code: number; message: string };
  result?: { outcome?: { optionId?: string; outcome: string } };
};

/** The peer's reports of the answers it got, in the order they came. */
function answers(run: ClientResult): Answer[] {
  return seen(run.log).filter((l) => l.startsWith("answer "))
    .map((l) => JSON.parse(l.slice("answer ".length)));
}

/** The peer calling the lent tools of a copy of the client (one run, shared by the tests). */
let lentRun: Promise<ClientResult> | undefined;
async function lentToolsRun() {
  lentRun ??= runRogue("lent-tools", { client: clientWithTools(LENT) });
  const run = await lentRun;
  assert.equal(run.code, 0, run.stderr);
  return { run, answers: answers(run) };
}

Deno.test("tools: a tool that answers later lets the client answer other calls meanwhile", async () => {
  const { run, answers: got } = await lentToolsRun();
  // The host_info call came second and was answered first: JSON-RPC allows any order.
  assert.deepEqual(got.slice(0, 2).map((a) => a.id), [2, 1], run.stderr);
  assert.match(got[0].result!.content[0].text, /host name/);
  assert.deepEqual(got[1].result, { content: [{ type: "text", text: "slow done after 400 ms" }] });
  assert.ok(run.log.includes('[client] slow {"ms":400} (session 20261130-120000-0badc0de)'));
});

Deno.test("tools: a call mm cancels while it runs aborts the tool's signal, is answered -32800 once, and the client says so", async () => {
  const { run, answers: got } = await lentToolsRun();
  const cancelled = got.filter((a) => a.id === 3);
  assert.deepEqual(cancelled, [{
    jsonrpc: "2.0",
    id: 3,
    error: { code: -32800, message: "Request cancelled" },
  } as unknown as Answer]);
  assert.ok(run.stderr.includes("[tool] slow saw its signal abort"), run.stderr);
  // One line for the one call cancelled: not for the calls that ended, nor a late $/cancel_request.
  assert.deepEqual(run.log.filter((line) => line.includes("cancelled by mm")), [
    "[client] slow cancelled by mm",
  ]);
  assert.ok(!run.stderr.includes("slow failed"), "an aborted call is not a failure to report");
});

Deno.test("tools: mm's own timeout for a call cancels the lent tool: its signal aborts, the client says so, the turn goes on", async () => {
  const agent = agentFileWith({ "timeout: 30s": "timeout: 500ms" });
  const run = await runClient({
    client: clientWithTools(SLOW_TOOL),
    args: ["--agent", agent, "What does slow say?"],
    readAlso: [agent],
    env: { MM_SIM_ARGS: JSON.stringify({ slow: { ms: 60_000 } }) },
  });
  assert.equal(run.code, 0, run.stderr);
  const received = traced(run.stderr).filter((t) => !t.sent).map((t) => t.frame.method);
  assert.ok(received.includes("$/cancel_request"), "mm cancelled the call");
  assertInOrder(run.log, [
    /^\[client\] slow \{"ms":60000\} \(session /,
    "[client] slow cancelled by mm",
  ]);
  assert.ok(run.log.includes("[tool] slow saw its signal abort"), run.stderr);
  assertInOrder(run.out, [
    "✖ client: slow failed",
    TOOL_ERROR("context deadline exceeded"),
    "[end_turn]",
  ]);
});

Deno.test("tools: a tool that throws or rejects is an error result naming it, logged, and the turn goes on", async () => {
  const { run, answers: got } = await lentToolsRun();
  const result = (id: number) => got.find((a) => a.id === id)?.result;
  assert.deepEqual(result(4), {
    content: [{ type: "text", text: "throws failed: boom" }],
    isError: true,
  });
  assert.deepEqual(result(5), {
    content: [{ type: "text", text: "rejects failed: later boom" }],
    isError: true,
  });
  assert.ok(run.log.includes("[client] throws failed: boom"), run.stderr);
  assert.ok(run.log.includes("[client] rejects failed: later boom"), run.stderr);
  assert.ok(got.every((a) => a.error === undefined || Number.isInteger(a.error.code)));
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("tools: a lent tool's arguments that its schema refuses are an error result, and the tool does not run", async () => {
  const { run, answers: got } = await lentToolsRun();
  assert.deepEqual(got.find((a) => a.id === 8)?.result, {
    content: [{ type: "text", text: 'slow: "ms" must be a number, not "soon"' }],
    isError: true,
  });
  assert.ok(run.log.includes('[client] slow {"ms":"soon"} (session 20261130-120000-0badc0de)'));
  assert.ok(run.log.includes('[client] slow: "ms" must be a number, not "soon"'), run.stderr);
  assert.ok(!run.stderr.includes("slow failed"), "a refused call is not the tool's failure");
});

Deno.test("tools: the permission policy follows TOOLS: a lent tool is allowed, in the copy only", async () => {
  const { answers: got } = await lentToolsRun();
  const chosen = (id: number) => got.find((a) => a.id === id)?.result?.outcome?.optionId;
  assert.deepEqual([chosen(6), chosen(7)], ["yes", "yes"]);
  const original = await runRogue("lent-tools");
  const refused = answers(original);
  assert.equal(refused.find((a) => a.id === 6)?.result?.outcome?.optionId, "no");
  assert.deepEqual(refused.find((a) => a.id === 1)?.error?.code, -32601, "not lent: not found");
});

Deno.test("tools: the tests' editor of TOOLS adds after the last entry, whether it is written tool({…}) or as a plain object", async () => {
  const entry = (name: string, wrapped: boolean) => {
    const body =
      `    name: "${name}",\n    description: "A test.",\n    method: "_test/${name}",\n` +
      `    inputSchema: { type: "object" },\n    call: () => toolText("${name}"),\n`;
    return wrapped ? `  tool({\n${body}  }),\n` : `  {\n${body}  },\n`;
  };
  const afterWrapped = clientWithTools(entry("plain", false)); // host_info's entry is tool({…})
  const afterPlain = clientWithTools(entry("wrapped", true) + entry("plain", false), afterWrapped);
  const { TOOLS: tools } = await import(new URL(`file://${afterPlain}`).href);
  assert.deepEqual(tools.map((lent: Tool) => lent.name), [
    ...TOOL_NAMES.split(", "),
    "plain",
    "wrapped",
  ]);
});

/** The README's two example tools, as it shows them: its first two `ts` blocks after the heading. */
function readmeTools(): { envVar: string; slowEcho: string } {
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const section = readme.slice(readme.indexOf("## Lend your own tool"));
  const blocks = [...section.matchAll(/\n```ts ignore\n([\s\S]*?)\n```\n/g)].map((m) =>
    `${m[1]}\n`
  );
  if (blocks.length < 2) throw new Error("the README's Lend your own tool has not two ts blocks");
  return { envVar: blocks[0], slowEcho: blocks[1] };
}

/** What a copier's model is given for the README's tools (`MM_SIM_ARGS`). */
const COPIER_ARGS = { env_var: { name: "HOME" }, slow_echo: { text: "hello", delay_ms: 300 } };
/** The variables the client itself reads: its `--allow-env` as shipped. */
const CLIENT_VARIABLES = "MM_BIN,NO_COLOR,TERM,DENO_DIR,ACP_CLIENT_MCP_TOKEN";
/** What `env_var` answers for `HOME` once it may read it. */
const HOME_TEXT = Deno.env.get("HOME") ?? "HOME is not set";

/**
 * Runs a copy of client.ts with the README's two tools added as it says, asking about both; with
 * `home`, `HOME` is added to `--allow-env` as the README's permission paragraph says.
 */
function copierRun({ args = [], agent, home = false }: CopierRun = {}) {
  const { envVar, slowEcho } = readmeTools();
  return runClient({
    client: clientWithTools(envVar + slowEcho),
    args: [...(agent ? ["--agent", agent] : []), ...args, "What do env_var and slow_echo say?"],
    readAlso: agent ? [agent] : undefined,
    env: { MM_SIM_ARGS: JSON.stringify(COPIER_ARGS) },
    // The client's own variables, as shipped (a copier who followed the README has HOME too).
    permissions: permissionsWith(
      "--allow-env",
      `--allow-env=${CLIENT_VARIABLES}${home ? ",HOME" : ""}`,
    ),
  });
}
type CopierRun = { args?: string[]; agent?: string; home?: boolean };

/** The names mm's log gives the README's tools and host_info: a copier's own tools may sit among them. */
const README_NAMES = ["client_env_var", "client_host_info", "client_slow_echo"];
/** Asserts that mm's log line that starts with `start` lists the README's tools, in mm's order. */
function assertListed(log: string[], start: string | RegExp): void {
  const starts = (line: string) =>
    typeof start === "string" ? line.startsWith(start) : start.test(line);
  const line = log.find(starts);
  if (line === undefined) throw new Error(`no list line in:\n${log.join("\n")}`);
  const names = line.replace(start, "").split(", ");
  assert.deepEqual(names.filter((name) => README_NAMES.includes(name)), README_NAMES, line);
}

/** Both tools called with the model's arguments and their results shown; env_var's by `home`. */
function assertBothShown(run: ClientResult, home: boolean): void {
  assert.equal(run.code, 0, run.stderr);
  const envVar = home
    ? [`│ ${HOME_TEXT}`]
    : ["✖ client: env_var failed", TOOL_ERROR("env_var needs HOME in --allow-env")];
  assertInOrder(run.out, ["🛠️ client: env_var", "🛠️ client: slow_echo", ...envVar, "│ hello"]);
  for (const [name, args] of Object.entries(COPIER_ARGS)) {
    const called = `[client] ${name} ${JSON.stringify(args)} (session `;
    assert.ok(run.log.some((line) => line.startsWith(called)), run.stderr);
  }
  assert.equal(run.out.at(-1), "[end_turn]");
}

Deno.test("tools: the README's two tools, added as it says, are listed and called, env_var reading HOME once --allow-env names it (meta discovery)", async () => {
  const run = await copierRun({ home: true });
  assertListed(run.log, "[acp] client tools (meta): ");
  assertBothShown(run, true);
});

Deno.test("tools: client.ts with the README's two tools pasted in type-checks, their arguments typed by their schemas without a cast", async () => {
  const { envVar, slowEcho } = readmeTools();
  const copy = clientWithTools(envVar + slowEcho);
  assert.ok(!/ as (string|number)\b/.test(envVar + slowEcho), "a cast in the README's tools");
  const output = await within(
    WAIT_MS,
    "deno check of the copy",
    new Deno.Command(Deno.execPath(), {
      args: ["check", "--config", `${ROOT}/deno.json`, copy],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output(),
  );
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
});

Deno.test("tools: the README's two tools are given in the list request too, env_var naming the permission it lacks (request discovery)", async () => {
  const run = await copierRun({ args: ["--request"] });
  assertListed(run.log, /^\[acp\] session \S+ client tools \(request\): /);
  assertBothShown(run, false);
});

Deno.test("tools: with yolo false the README's two tools are allowed, the policy following TOOLS", async () => {
  const run = await copierRun({
    agent: agentFileWith({ "yolo: true": "yolo: false" }),
    home: true,
  });
  assert.ok(run.log.includes('[client] permission for "client: env_var": allowed'), run.stderr);
  assert.ok(run.log.includes('[client] permission for "client: slow_echo": allowed'), run.stderr);
  assertBothShown(run, true);
});

Deno.test("tools: the README's run of its two tools, in a copy of the project, prints what it shows line for line, each stream apart and both in one pipe", async () => {
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const section = readme.slice(readme.indexOf("## Lend your own tool"));
  const shown = section.match(/\n```\n\$ (.*)\n([\s\S]*?)\n```\n/);
  if (!shown) throw new Error("the README's Lend your own tool shows no run");
  // A copier's project: client.ts with the two tools pasted, the rest as shipped.
  const project = scratchDir("copier-");
  const { envVar, slowEcho } = readmeTools();
  Deno.copyFileSync(clientWithTools(envVar + slowEcho), `${project}/client.ts`);
  for (const file of ["deno.lock", "agent.yaml", "agent-request.yaml"]) {
    Deno.copyFileSync(`${ROOT}/${file}`, `${project}/${file}`);
  }
  // The demo task's --allow-env as shipped: the run is a copier's before the permission step.
  const config = Deno.readTextFileSync(`${ROOT}/deno.json`);
  const shipped = config.replace(/--allow-env(=[^\s"]*)?/g, `--allow-env=${CLIENT_VARIABLES}`);
  Deno.writeTextFileSync(`${project}/deno.json`, shipped);
  Deno.symlinkSync(`${ROOT}/test`, `${project}/test`);
  const deno = Deno.execPath().replace(/\/[^/]*$/, "");
  const env = { PATH: `${deno}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}` };
  // Run twice: each stream apart, and both in one pipe, in the order a terminal shows them.
  const [apart, merged] = await Promise.all([
    runShell(`cd '${project}' && ${shown[1]}`, env, 60_000),
    runShell(`cd '${project}' && (${shown[1]}) 2>&1`, env, 60_000),
  ]);
  assert.equal(apart.code, 0, apart.stderr);
  assert.equal(merged.code, 0, merged.stdout);
  // The session id is the run's own; all else is as the README shows it.
  // A copier's own tools are in mm's list too: of it, the README shows its two and host_info.
  const listed = /^(\[acp\] client tools \(meta\): )(.*)$/;
  const onlyShown = (line: string) =>
    line.replace(
      listed,
      (_, start, names: string) =>
        start + names.split(", ").filter((name) => README_NAMES.includes(name)).join(", "),
    );
  const lines = (text: string) =>
    text.replace(/\d{8}-\d{6}-[0-9a-f]{8}/g, "<session>").split("\n").filter((l) => l !== "")
      .map(onlyShown);
  const isLog = (line: string) => /^\[(acp|client)\] /.test(line);
  const printed = lines(shown[2]);
  assert.deepEqual(lines(apart.stdout), printed.filter((line) => !isLog(line)));
  assert.deepEqual(lines(apart.stderr), printed.filter(isLog));
  // mm's own log comes through a pipe of its own: its place among the client's lines may vary.
  const isMm = (line: string) => line.startsWith("[acp] ");
  const ours = (all: string[]) => all.filter((line) => !isMm(line));
  assert.deepEqual(ours(lines(merged.stdout)), ours(printed));
});

/** One of the README's tools, as written, in a module of its own. */
async function readmeTool(entry: string, name: string): Promise<Tool> {
  const module = tempFile(
    `${name}.ts`,
    `import { tool, toolText } from "${ROOT}/client.ts";\nexport const lent = ${
      entry.trim().replace(/,$/, "")
    };\n`,
  );
  return (await import(module)).lent;
}

Deno.test("tools: the README's env_var reads the variable its argument names, and says when it is not set", async () => {
  const tool = await readmeTool(readmeTools().envVar, "env_var");
  assert.equal(checkArguments(tool, {}), 'env_var: missing parameter "name"');
  assert.deepEqual(await tool.call({ name: "PATH" }, new AbortController().signal), {
    content: [{ type: "text", text: Deno.env.get("PATH") }],
  });
  const unset = "HOST_INFO_TEST_UNSET_VARIABLE";
  assert.deepEqual(await tool.call({ name: unset }, new AbortController().signal), {
    content: [{ type: "text", text: `${unset} is not set` }],
  });
});

Deno.test("tools: the README's slow_echo waits its delay, and passes its signal to its timer and its command", async () => {
  const tool = await readmeTool(readmeTools().slowEcho, "slow_echo");
  const started = performance.now();
  const done = await tool.call({ text: "hello", delay_ms: 300 }, new AbortController().signal);
  assert.ok(performance.now() - started >= 300, `answered after ${performance.now() - started} ms`);
  assert.deepEqual(done, { content: [{ type: "text", text: "hello" }] });
  // Cancelled while it waits: the call rejects with the signal's reason, and its timer is cleared
  // (the global timers are watched meanwhile: the ones set and neither cleared nor fired).
  const timers = { set: globalThis.setTimeout, clear: globalThis.clearTimeout };
  const pending = new Map<ReturnType<typeof setTimeout>, number>(); // id → delay
  const watched = {
    setTimeout: (fire: () => void, ms = 0) => {
      const id = timers.set(() => {
        pending.delete(id);
        fire();
      }, ms);
      pending.set(id, ms);
      return id;
    },
    clearTimeout: (id: ReturnType<typeof setTimeout>) => {
      pending.delete(id);
      timers.clear(id);
    },
  };
  Object.assign(globalThis, watched);
  try {
    const waiting = new AbortController();
    const call = Promise.resolve(tool.call({ text: "hello", delay_ms: 60_000 }, waiting.signal));
    waiting.abort();
    const reason = await within(WAIT_MS, "the cancelled wait to end", call).catch((e) => e);
    assert.equal(reason, waiting.signal.reason);
    assert.deepEqual([...pending.values()], [], "a timer left running after the cancel");
  } finally {
    Object.assign(globalThis, { setTimeout: timers.set, clearTimeout: timers.clear });
    for (const id of pending.keys()) timers.clear(id);
  }
  // Cancelled while its command runs: an echo that would run for a minute, which only the signal
  // the tool passes on can stop, as Deno does when it aborts (SIGTERM: exit code 143).
  const real = Deno.Command;
  const echoing = Promise.withResolvers<void>();
  class SlowEcho {
    constructor(readonly command: string, readonly options: Deno.CommandOptions) {
      echoing.resolve();
    }
    output(): Promise<{ code: number; stdout: Uint8Array; stderr: Uint8Array }> {
      const empty = new Uint8Array();
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ code: 0, stdout: empty, stderr: empty }), 60_000);
        this.options.signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve({ code: 143, stdout: empty, stderr: empty });
        });
      });
    }
  }
  Object.assign(Deno, { Command: SlowEcho });
  try {
    const running = new AbortController();
    const echo = Promise.resolve(tool.call({ text: "hello", delay_ms: 0 }, running.signal));
    await within(WAIT_MS, "the echo to start", echoing.promise);
    running.abort();
    const stopped = await within(WAIT_MS, "the cancelled echo to end", echo);
    assert.deepEqual(stopped, { content: [{ type: "text", text: "" }] });
  } finally {
    Object.assign(Deno, { Command: real });
  }
});

Deno.test("README: its table of how the client does it names only what client.ts defines (a method as Class.method()), each protocol step in the lesson, the rest in the terminal program", () => {
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  const section = readme.slice(
    readme.indexOf("## How the client does it"),
    readme.indexOf("## Lend"),
  );
  const rows = section.split("\n").filter((line) => /^\| [a-z]/.test(line)).slice(1); // no header
  assert.ok(rows.length >= 8, `a step per row: ${rows.length} rows`);
  const source = Deno.readTextFileSync(`${ROOT}/client.ts`);
  const divider = source.search(/^\/\/ ═══ The protocol ends here/m);
  const lesson = source.search(/^\/\/ ═══ The lesson/m);
  const lessonEnd = source.indexOf("\n// ═══ ", lesson + 1);
  assert.ok(lesson > 0 && lessonEnd > lesson, "client.ts has no section // ═══ The lesson");
  const definedAt = (name: string) => {
    const [owner, method] = name.split(".");
    const at = source.search(
      new RegExp(`^(export )?(async )?(function|class|const|type) ${owner}\\b`, "m"),
    );
    if (method === undefined || at < 0) return at;
    const body = source.slice(at, source.indexOf("\n}\n", at));
    const found = body.search(new RegExp(`^  (async )?${method}\\(`, "m"));
    return found < 0 ? -1 : at + found;
  };
  // The terminal program's steps come last: what you see, and the command itself.
  const terminal = rows.findIndex((row) => row.startsWith("| what you see"));
  assert.ok(terminal > 0, `no "what you see" row:\n${rows.join("\n")}`);
  for (const [i, row] of rows.entries()) {
    const names = [...row.split("|")[2].matchAll(/`(\w+(\.\w+)?)(\(\))?`/g)].map((m) => m[1]);
    assert.ok(names.length > 0, `a row that names nothing in client.ts: ${row}`);
    for (const name of names) {
      const at = definedAt(name);
      assert.ok(at >= 0, `README names ${name}, which client.ts does not define: ${row}`);
      if (i >= terminal) {
        assert.ok(at > divider, `${name} is not in the terminal program, below the line: ${row}`);
      } else {
        assert.ok(at > lesson && at < lessonEnd, `${name} is not in the lesson: ${row}`);
      }
    }
  }
});
