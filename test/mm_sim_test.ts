/**
 * The stand-in's pure functions against mini-me's acp-client-tools.md ("Référence :
 * outils du client ACP"): each test names the section and row it checks. The
 * same rows are checked over the wire in mm_sim_wire_test.ts.
 */

import assert from "./_assert.ts";
import {
  answerFrom,
  type ClientTool,
  cutToMaxOutput,
  errorText,
  exampleArgs,
  listSessions,
  MODEL_META,
  modelName,
  newSessionId,
  parseDuration,
  plannedCalls,
  planTurn,
  readAgentConfig,
  resultText,
  type SavedSession,
  sessionTitle,
  streamPieces,
  validateToolList,
} from "./mm_sim.ts";

const TOOL = { name: "open_buffers", method: "_com.example/workspace/buffers" };
const HOST_INFO = {
  name: "host_info",
  method: "_demo.minime/host_info",
  inputSchema: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] },
};
/** The tools of a list, validated as mm keeps them. */
const tools = (...entries: unknown[]): ClientTool[] => validateToolList(entries).tools;

Deno.test('stand-in: "Description d\'un outil", name: non-alphanumerics become _, runs shrink, ends are trimmed', () => {
  assert.equal(modelName("open buffers"), "client_open_buffers");
  assert.equal(modelName("__a--b..c__"), "client_a_b_c");
  assert.equal(modelName("host_info"), "client_host_info");
  assert.equal(modelName("été 2026!"), "client_t_2026");
});

Deno.test('stand-in: "Description d\'un outil", description: absent or empty gives "Tool provided by the editor (<method>)."', () => {
  // Go reads "" as an absent string (guess: mm tests for it); a description of its own is kept.
  for (const entry of [TOOL, { ...TOOL, description: "" }, { ...TOOL, description: null }]) {
    assert.equal(
      validateToolList([entry]).tools[0].description,
      "Tool provided by the editor (_com.example/workspace/buffers).",
      JSON.stringify(entry),
    );
  }
  const described = { ...TOOL, description: "The open files." };
  assert.equal(validateToolList([described]).tools[0].description, "The open files.");
});

Deno.test('stand-in: "Validation d\'une liste", row "not a tool description": a field of the wrong type', () => {
  for (
    const [field, value, shown] of [["description", 5, "a number"], ["method", {}, "an object"]]
  ) {
    const { tools, skipped } = validateToolList([{ ...TOOL, [field as string]: value }]);
    assert.equal(tools.length, 0);
    assert.deepEqual(skipped, [
      `entry 0 skipped: not a tool description: field ${field} is ${shown}, not a string`,
    ]);
  }
});

Deno.test('stand-in: "Validation d\'une liste", row "not a tool description": an entry that is not a tool object', () => {
  const { tools, skipped } = validateToolList(["open_buffers", 3, [TOOL], { ...TOOL, name: 5 }]);
  assert.equal(tools.length, 0);
  assert.equal(skipped.length, 4);
  skipped.forEach((line, i) =>
    assert.match(line, new RegExp(`^entry ${i} skipped: not a tool description: `))
  );
});

Deno.test('stand-in: "Validation d\'une liste", row "no name": name absent or empty', () => {
  const { skipped } = validateToolList([{ method: "_a/b" }, { name: "", method: "_a/b" }]);
  assert.deepEqual(skipped, ["entry 0 skipped: no name", "entry 1 skipped: no name"]);
});

Deno.test('stand-in: "Validation d\'une liste", row "method …": absent or not an extension method', () => {
  const { skipped } = validateToolList([{ name: "a" }, { name: "b", method: "workspace/buffers" }]);
  assert.deepEqual(skipped, [
    'entry 0 skipped: method "" must start with "_" (an ACP extension method)',
    'entry 1 skipped: method "workspace/buffers" must start with "_" (an ACP extension method)',
  ]);
});

Deno.test('stand-in: "Validation d\'une liste", row "inputSchema.type": a schema of something else than an object', () => {
  const { tools, skipped } = validateToolList([
    { ...TOOL, inputSchema: { type: "array" } },
    { ...TOOL, name: "no_type", inputSchema: { properties: {} } },
  ]);
  assert.deepEqual(skipped, ['entry 0 skipped: inputSchema.type must be "object", got "array"']);
  assert.deepEqual(tools.map((t) => t.name), ["no_type"]);
});

Deno.test('stand-in: "Validation d\'une liste", row "duplicate tool name": the first is kept', () => {
  const { tools, skipped } = validateToolList([
    { ...TOOL, description: "first" },
    { ...TOOL, name: "open-buffers", description: "second" },
  ]);
  assert.deepEqual(skipped, ['entry 1 skipped: duplicate tool name "client_open_buffers"']);
  assert.equal(tools[0].description, "first");
});

Deno.test('stand-in: "Validation d\'une liste": the other entries are kept and tools are sorted by model name', () => {
  const { tools, skipped } = validateToolList([
    { name: "zeta", method: "_z" },
    { name: "" },
    { name: "alpha", method: "_a", inputSchema: { type: "object", required: ["x"] } },
  ]);
  assert.deepEqual(tools.map((t) => t.modelName), ["client_alpha", "client_zeta"]);
  assert.deepEqual(tools[0].required, ["x"]);
  assert.equal(skipped.length, 1);
  const two = validateToolList([{ name: "a", method: "_x/a" }, { name: "b" }]);
  assert.deepEqual(two.tools.map((t) => t.modelName), ["client_a"]);
  assert.deepEqual(two.skipped, [
    'entry 1 skipped: method "" must start with "_" (an ACP extension method)',
  ]);
});

Deno.test("stand-in: a null entry or a null field reads as absent, as Go decodes JSON", () => {
  const { tools, skipped } = validateToolList([
    null,
    { ...TOOL, name: null },
    { ...TOOL, method: null },
    { ...TOOL, description: null, inputSchema: null },
    { name: "typed", method: "_t", inputSchema: { type: null, required: null } },
  ]);
  assert.deepEqual(skipped, [
    "entry 0 skipped: no name",
    "entry 1 skipped: no name",
    'entry 2 skipped: method "" must start with "_" (an ACP extension method)',
  ]);
  assert.deepEqual(tools.map((t) => [t.name, t.description, t.required]), [
    ["open_buffers", "Tool provided by the editor (_com.example/workspace/buffers).", []],
    ["typed", "Tool provided by the editor (_t).", []],
  ]);
});

Deno.test('stand-in: "Réponse": text blocks concatenated, other blocks replaced, isError wrapped', () => {
  assert.deepEqual(
    resultText({
      content: [{ type: "text", text: "main.go\n" }, { type: "text", text: "util.go" }],
      isError: false,
    }),
    { text: "main.go\nutil.go", failed: false },
  );
  assert.deepEqual(
    resultText({ content: [{ type: "image", data: "" }, { type: "text", text: "!" }] }),
    {
      text: "[client tool: non-text content of type image skipped]!",
      failed: false,
    },
  );
  assert.deepEqual(
    resultText({ content: [{ type: "text", text: "no such topic" }], isError: true }),
    {
      text: "[client tool error: no such topic]",
      failed: true,
    },
  );
});

Deno.test('stand-in: "Réponse": a JSON string without its quotes, any other value as JSON text', () => {
  assert.deepEqual(resultText("plain"), { text: "plain", failed: false });
  assert.deepEqual(resultText({ a: 1 }), { text: '{"a":1}', failed: false });
  assert.deepEqual(resultText(42), { text: "42", failed: false });
  assert.deepEqual(resultText([1]), { text: "[1]", failed: false });
});

Deno.test('stand-in: "Erreurs": a JSON-RPC error reads as its compact JSON, data kept when present', () => {
  assert.equal(
    errorText({ code: -32601, message: "Method not found" }),
    '[client tool error: {"code":-32601,"message":"Method not found"}]',
  );
  assert.equal(
    errorText({ code: -32800, message: "Request cancelled" }),
    '[client tool error: {"code":-32800,"message":"Request cancelled"}]',
  );
  assert.equal(
    errorText({ code: 1, message: "m", data: { why: "x" } }),
    '[client tool error: {"code":1,"message":"m","data":{"why":"x"}}]',
  );
  assert.equal(
    errorText({ code: 1, message: "m", data: null }),
    '[client tool error: {"code":1,"message":"m"}]',
  );
});

Deno.test('stand-in: "Erreurs": every result is cut to maxOutput, keeping its start and its end', () => {
  assert.equal(cutToMaxOutput("short", 100), "short");
  assert.equal(cutToMaxOutput("abcdefghij", 5), "ab…ij");
  const cut = cutToMaxOutput("a".repeat(500) + "b".repeat(500), 100);
  assert.equal([...cut].length, 100);
  assert.ok(cut.startsWith("aaa") && cut.endsWith("bbb"));
  assert.ok(cut.includes("900 characters cut"));
});

Deno.test("stand-in: a cut is never longer than maxOutput, however small, and keeps an end when it can", () => {
  const text = "abcdefghijklmnopqrstuvwxyz".repeat(4);
  for (let max = 0; max < 110; max++) {
    const cut = cutToMaxOutput(text, max);
    assert.ok([...cut].length <= max, `max ${max}: ${JSON.stringify(cut)}`);
    if (max >= 2 && max < text.length) assert.ok(cut.startsWith("a"), `max ${max}: ${cut}`);
    if (max >= 3 && max < text.length) assert.ok(cut.endsWith("z"), `max ${max}: ${cut}`);
  }
  assert.equal(cutToMaxOutput(text, 1), "…");
  assert.equal(cutToMaxOutput(text, 2), "a…");
  assert.equal(cutToMaxOutput("🙂🙂🙂🙂🙂", 3), "🙂…🙂");
});

Deno.test('stand-in: "Configuration": defaults, and the keys read from an agent file', () => {
  assert.deepEqual(readAgentConfig("yolo: true\n"), {
    yolo: true,
    bashTool: false,
    maxOutput: 30000,
    enabled: true,
    discovery: "meta",
    permissions: "auto",
    timeoutMs: 30000,
    warnings: [],
  });
  assert.deepEqual(
    readAgentConfig(
      "yolo: false\nbashTool: true\nmaxOutput: 80\nacp:\n  clientTools:\n    enabled: false\n    discovery: request\n    permissions: ask\n    timeout: 500ms\n",
    ),
    {
      yolo: false,
      bashTool: true,
      maxOutput: 80,
      enabled: false,
      discovery: "request",
      permissions: "ask",
      timeoutMs: 500,
      warnings: [],
    },
  );
  // Without a yolo key, only `ask` asks (guess: mm's default is in none of its documents).
  assert.equal(readAgentConfig("model: x\n").yolo, true);
  assert.equal(readAgentConfig("").yolo, true);
});

Deno.test('stand-in: "Configuration": maxOutput 0 cuts every result to nothing; a bad one is the default', () => {
  assert.equal(readAgentConfig("maxOutput: 0\n").maxOutput, 0);
  assert.equal(cutToMaxOutput("anything", 0), "");
  for (const bad of ["-1", '"big"', "null"]) {
    assert.equal(readAgentConfig(`maxOutput: ${bad}\n`).maxOutput, 30000, bad);
  }
});

Deno.test('stand-in: "Configuration": durations are Go durations', () => {
  const cases: [string, number][] = [
    ["500ms", 500],
    ["2s", 2000],
    ["1m30s", 90_000],
    ["0m2s", 2000],
    ["1h", 3_600_000],
    ["1.5s", 1500],
    ["2h45m", 9_900_000],
    [".5s", 500],
    ["1500us", 1.5],
    ["500000\u00b5s", 500], // µ, the micro sign, as Go accepts
    ["500000\u03bcs", 500], // μ, the Greek letter, as Go accepts too
    ["0", 0],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  for (const bad of ["5", "", "s", "1x", "1s ", "1 s", "1m30", "ms", "1.2.3s"]) {
    assert.equal(parseDuration(bad), undefined, bad);
  }
});

Deno.test('stand-in: "Configuration": a bare number or a bad duration is reported and 30s used', () => {
  for (const [yaml, shown] of [["5", "5"], ["soon", "soon"], ['"0s"', "0s"], ["-1s", "-1s"]]) {
    const config = readAgentConfig(`acp:\n  clientTools:\n    timeout: ${yaml}\n`);
    assert.equal(config.timeoutMs, 30_000);
    assert.deepEqual(config.warnings, [
      `[acp] config: acp.clientTools.timeout: invalid duration "${shown}" (using 30s)`,
    ]);
  }
});

Deno.test("stand-in: the scripted model picks topics from the question's words, in order", () => {
  assert.deepEqual(
    plannedCalls("What operating system does my machine run, and how much memory?"),
    [
      { topic: "os" },
      { topic: "memory" },
    ],
  );
  assert.deepEqual(plannedCalls("Which CPU does my machine have, and since when is it up?"), [
    { topic: "cpu" },
    { topic: "uptime" },
  ]);
  assert.deepEqual(plannedCalls("How much RAM? And the processor?"), [{ topic: "memory" }, {
    topic: "cpu",
  }]);
  assert.deepEqual(plannedCalls("How much RAM?"), [{ topic: "memory" }]);
  assert.deepEqual(plannedCalls("Hello"), [{ topic: "os" }, { topic: "memory" }]);
  assert.deepEqual(plannedCalls("Hello", false), []);
  assert.deepEqual(plannedCalls("How big is my disk?"), [{ topic: "disk" }]);
  assert.deepEqual(plannedCalls("anything without a topic"), [{}]);
  const [hostInfo] = validateToolList([HOST_INFO]).tools;
  assert.deepEqual(planTurn("memory, with a _meta", [hostInfo]), [
    { tool: hostInfo, args: { topic: "memory", _meta: MODEL_META } },
  ]);
  assert.match(
    answerFrom([{ tool: "host_info", args: { topic: "os" }, text: "Linux" }]),
    /^Here is what host_info reports about your machine — operating system: Linux\.$/,
  );
});

Deno.test("stand-in: session ids are shaped like mm's", () => {
  assert.match(newSessionId(new Date("2026-11-10T22:45:07Z")), /^20261110-224507-[0-9a-f]{8}$/);
});

Deno.test("stand-in: the scripted model streams its answer in pieces that add up to the whole", () => {
  const text = `Here is ${"a".repeat(60)} and more words after it, ending here.`;
  const pieces = streamPieces(text);
  assert.equal(pieces.join(""), text);
  assert.ok(pieces.length > 2);
});

// ─── Other tools of the client (the stand-in's own behaviour) ────────────────

Deno.test("stand-in: exampleArgs gives each required property its first enum value, whatever its type", () => {
  const [tool] = tools({
    name: "clock",
    method: "_x/clock",
    inputSchema: {
      type: "object",
      properties: {
        zone: { type: "string", enum: ["UTC", "local"] },
        step: { type: "integer", enum: [5, 10] },
        optional: { type: "string", enum: ["never"] },
      },
      required: ["zone", "step"],
    },
  });
  assert.deepEqual(exampleArgs(tool), { zone: "UTC", step: 5 });
});

Deno.test("stand-in: exampleArgs gives a required property without enum a placeholder of its type", () => {
  const properties = {
    s: { type: "string" },
    n: { type: "number" },
    i: { type: "integer" },
    b: { type: "boolean" },
    a: { type: "array", items: { type: "string" } },
    o: { type: "object" },
    z: { type: "null" },
    either: { type: ["null", "integer"] },
    untyped: {},
    odd: { type: "toString" },
    empty: { type: "string", enum: [] },
  };
  const required = [...Object.keys(properties), "undeclared"];
  assert.deepEqual(exampleArgs({ required, properties }), {
    s: "example",
    n: 0,
    i: 0,
    b: false,
    a: [],
    o: {},
    z: null,
    either: 0,
    untyped: "example",
    odd: "example",
    empty: "example",
    undeclared: "example",
  });
  assert.deepEqual(exampleArgs({ required: [], properties }), {});
  const first = exampleArgs({ required: ["a"], properties });
  (first.a as unknown[]).push("changed");
  assert.deepEqual(
    exampleArgs({ required: ["a"], properties }),
    { a: [] },
    "a fresh array each time",
  );
});

Deno.test("stand-in: planTurn calls another tool named in the question as name or client_name, as a word, in any case", () => {
  const offered = tools(HOST_INFO, { name: "clock", method: "_x/clock" });
  const clock = offered.find((t) => t.name === "clock")!;
  for (const question of ["What does clock say?", "Ask CLIENT_CLOCK", "(Clock)", "clock"]) {
    assert.deepEqual(planTurn(question, offered), [{ tool: clock, args: {} }], question);
  }
  for (const question of ["Is it clockwise?", "What is my_clock?", "client_clocks"]) {
    assert.deepEqual(
      planTurn(question, offered).map((c) => c.tool.name),
      ["host_info", "host_info"],
      question,
    );
  }
});

Deno.test("stand-in: planTurn calls host_info only for named topics once another tool is named, in order", () => {
  const offered = tools(
    { name: "zone", method: "_x/zone" },
    HOST_INFO,
    { name: "open buffers", method: "_x/buffers" },
  );
  const plan = planTurn("Which OS? Then client_open_buffers, then zone and memory.", offered);
  assert.deepEqual(
    plan.map((c) => [c.tool.modelName, c.args]),
    [
      ["client_host_info", { topic: "os" }],
      ["client_host_info", { topic: "memory" }],
      ["client_open_buffers", {}],
      ["client_zone", {}],
    ],
  );
  assert.deepEqual(planTurn("What does zone say?", offered).map((c) => c.tool.name), ["zone"]);
  assert.deepEqual(planTurn("zone, with a _meta", offered), [
    { tool: offered.find((t) => t.name === "zone")!, args: { _meta: MODEL_META } },
  ]);
});

Deno.test("stand-in: planTurn without host_info calls only the tools the question names", () => {
  const offered = tools({ name: "a.b+c", method: "_x/abc" });
  assert.deepEqual(planTurn("Which OS?", offered), []);
  assert.deepEqual(planTurn("Try a.b+c now", offered).map((c) => c.tool.name), ["a.b+c"]);
  assert.deepEqual(planTurn("Try client_a_b_c now", offered).map((c) => c.tool.name), ["a.b+c"]);
  assert.deepEqual(planTurn("Try axb+c now", offered), [], "the name is not a pattern");
});

Deno.test("stand-in: answerFrom names every tool it quotes, host_info's results by topic, others by name", () => {
  assert.equal(
    answerFrom([
      { tool: "host_info", args: { topic: "os" }, text: "Linux" },
      { tool: "clock", args: {}, text: "noon" },
      { tool: "host_info", args: { topic: "memory" }, text: "1 GiB" },
    ]),
    "Here is what host_info and clock report about your machine — operating system: Linux; clock: noon; memory: 1 GiB.",
  );
  assert.equal(
    answerFrom([{ tool: "clock", args: { zone: "UTC" }, text: "noon" }]),
    "Here is what clock reports about your machine — clock: noon.",
  );
});

// ─── session/list (guess) ────────────────────────────────────────────────────

Deno.test("stand-in: sessionTitle is the first question on one line, cut to 60 characters", () => {
  assert.equal(sessionTitle([]), undefined);
  assert.equal(sessionTitle([{ kind: "agent", text: "Hello" }]), undefined);
  assert.equal(
    sessionTitle([
      { kind: "user", text: "  \n " },
      { kind: "user", text: "  How much\n\tRAM?  " },
      { kind: "user", text: "Which OS?" },
    ]),
    "How much RAM?",
  );
  const long = sessionTitle([{ kind: "user", text: `${"é".repeat(59)}and more` }]);
  assert.equal(long, `${"é".repeat(59)}…`, "60 characters, counted as code points");
  const atSpace = sessionTitle([{ kind: "user", text: `${"a".repeat(58)} bcd` }]);
  assert.equal(atSpace, `${"a".repeat(58)}…`, "no space before the …");
  assert.equal(sessionTitle([{ kind: "user", text: "x".repeat(60) }]), "x".repeat(60));
});

Deno.test("stand-in: listSessions gives the sessions of a cwd, or all, the most recently saved first", () => {
  const saved = (sessionId: string, cwd: string, updatedAt?: string): SavedSession => ({
    sessionId,
    cwd,
    updatedAt,
    nextCall: 1,
    history: [{ kind: "user", text: `question of ${sessionId}` }],
  });
  const all = [
    saved("a", "/p", "2026-01-01T00:00:00.000Z"),
    saved("b", "/q", "2026-03-01T00:00:00.000Z"),
    saved("c", "/p", "2026-02-01T00:00:00.000Z"),
    saved("d", "/p"),
    { ...saved("e", "/p", "2026-02-01T00:00:00.000Z"), history: [] },
  ];
  assert.deepEqual(listSessions(all, "/p"), [
    { sessionId: "e", cwd: "/p", updatedAt: "2026-02-01T00:00:00.000Z" },
    { sessionId: "c", cwd: "/p", title: "question of c", updatedAt: "2026-02-01T00:00:00.000Z" },
    { sessionId: "a", cwd: "/p", title: "question of a", updatedAt: "2026-01-01T00:00:00.000Z" },
    { sessionId: "d", cwd: "/p", title: "question of d" },
  ]);
  for (const cwd of [undefined, null]) {
    assert.deepEqual(listSessions(all, cwd).map((s) => s.sessionId), ["b", "e", "c", "a", "d"]);
  }
  assert.deepEqual(listSessions(all, "/elsewhere"), []);
});
