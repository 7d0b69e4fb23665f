/**
 * The stand-in's pure functions against mini-me's acp-client-tools.md ("Référence :
 * outils du client ACP"): each test names the section and row it checks. The
 * same rows are checked over the wire in mm_sim_wire_test.ts.
 */

import assert from "node:assert/strict";
import {
  answerFrom,
  cutToMaxOutput,
  errorText,
  MODEL_META,
  modelName,
  newSessionId,
  parseDuration,
  plannedCalls,
  planTurn,
  readAgentConfig,
  resultText,
  streamPieces,
  validateToolList,
} from "./mm_sim.ts";

const TOOL = { name: "open_buffers", method: "_com.example/workspace/buffers" };
const HOST_INFO = {
  name: "host_info",
  method: "_demo.minime/host_info",
  inputSchema: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] },
};

Deno.test('"Description d\'un outil", name: non-alphanumerics become _, runs shrink, ends are trimmed', () => {
  assert.equal(modelName("open buffers"), "client_open_buffers");
  assert.equal(modelName("__a--b..c__"), "client_a_b_c");
  assert.equal(modelName("host_info"), "client_host_info");
  assert.equal(modelName("été 2026!"), "client_t_2026");
});

Deno.test('"Description d\'un outil", description: absent gives "Tool provided by the editor (<method>)."', () => {
  const { tools } = validateToolList([TOOL]);
  assert.equal(
    tools[0].description,
    "Tool provided by the editor (_com.example/workspace/buffers).",
  );
});

Deno.test('"Validation d\'une liste", row "not a tool description": an entry that is not a tool object', () => {
  const { tools, skipped } = validateToolList(["open_buffers", 3, [TOOL], { ...TOOL, name: 5 }]);
  assert.equal(tools.length, 0);
  assert.equal(skipped.length, 4);
  skipped.forEach((line, i) =>
    assert.match(line, new RegExp(`^entry ${i} skipped: not a tool description: `))
  );
});

Deno.test('"Validation d\'une liste", row "no name": name absent or empty', () => {
  const { skipped } = validateToolList([{ method: "_a/b" }, { name: "", method: "_a/b" }]);
  assert.deepEqual(skipped, ["entry 0 skipped: no name", "entry 1 skipped: no name"]);
});

Deno.test('"Validation d\'une liste", row "method …": absent or not an extension method', () => {
  const { skipped } = validateToolList([{ name: "a" }, { name: "b", method: "workspace/buffers" }]);
  assert.deepEqual(skipped, [
    'entry 0 skipped: method "" must start with "_" (an ACP extension method)',
    'entry 1 skipped: method "workspace/buffers" must start with "_" (an ACP extension method)',
  ]);
});

Deno.test('"Validation d\'une liste", row "inputSchema.type": a schema of something else than an object', () => {
  const { tools, skipped } = validateToolList([
    { ...TOOL, inputSchema: { type: "array" } },
    { ...TOOL, name: "no_type", inputSchema: { properties: {} } },
  ]);
  assert.deepEqual(skipped, ['entry 0 skipped: inputSchema.type must be "object", got "array"']);
  assert.deepEqual(tools.map((t) => t.name), ["no_type"]);
});

Deno.test('"Validation d\'une liste", row "duplicate tool name": the first is kept', () => {
  const { tools, skipped } = validateToolList([
    { ...TOOL, description: "first" },
    { ...TOOL, name: "open-buffers", description: "second" },
  ]);
  assert.deepEqual(skipped, ['entry 1 skipped: duplicate tool name "client_open_buffers"']);
  assert.equal(tools[0].description, "first");
});

Deno.test('"Validation d\'une liste": the other entries are kept and tools are sorted by model name', () => {
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

Deno.test("a null entry or a null field reads as absent, as Go decodes JSON", () => {
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

Deno.test('"Réponse": text blocks concatenated, other blocks replaced, isError wrapped', () => {
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

Deno.test('"Réponse": a JSON string without its quotes, any other value as JSON text', () => {
  assert.deepEqual(resultText("plain"), { text: "plain", failed: false });
  assert.deepEqual(resultText({ a: 1 }), { text: '{"a":1}', failed: false });
  assert.deepEqual(resultText(42), { text: "42", failed: false });
  assert.deepEqual(resultText([1]), { text: "[1]", failed: false });
});

Deno.test('"Erreurs": a JSON-RPC error reads as its compact JSON, data kept when present', () => {
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

Deno.test('"Erreurs": every result is cut to maxOutput, keeping its start and its end', () => {
  assert.equal(cutToMaxOutput("short", 100), "short");
  assert.equal(cutToMaxOutput("abcdefghij", 5), "ab…ij");
  const cut = cutToMaxOutput("a".repeat(500) + "b".repeat(500), 100);
  assert.equal([...cut].length, 100);
  assert.ok(cut.startsWith("aaa") && cut.endsWith("bbb"));
  assert.ok(cut.includes("900 characters cut"));
});

Deno.test("a cut is never longer than maxOutput, however small, and keeps an end when it can", () => {
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

Deno.test('"Configuration": defaults, and the keys read from an agent file', () => {
  assert.deepEqual(readAgentConfig("yolo: true\n"), {
    yolo: true,
    maxOutput: 30000,
    enabled: true,
    discovery: "meta",
    permissions: "auto",
    timeoutMs: 30000,
    warnings: [],
  });
  assert.deepEqual(
    readAgentConfig(
      "yolo: false\nmaxOutput: 80\nacp:\n  clientTools:\n    enabled: false\n    discovery: request\n    permissions: ask\n    timeout: 500ms\n",
    ),
    {
      yolo: false,
      maxOutput: 80,
      enabled: false,
      discovery: "request",
      permissions: "ask",
      timeoutMs: 500,
      warnings: [],
    },
  );
});

Deno.test('"Configuration": durations are Go durations', () => {
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
    ["0", 0],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  for (const bad of ["5", "", "s", "1x", "1s ", "1 s", "1m30", "ms", "1.2.3s"]) {
    assert.equal(parseDuration(bad), undefined, bad);
  }
});

Deno.test('"Configuration": a bare number or a bad duration is reported and 30s used', () => {
  for (const [yaml, shown] of [["5", "5"], ["soon", "soon"], ['"0s"', "0s"], ["-1s", "-1s"]]) {
    const config = readAgentConfig(`acp:\n  clientTools:\n    timeout: ${yaml}\n`);
    assert.equal(config.timeoutMs, 30_000);
    assert.deepEqual(config.warnings, [
      `[acp] config: acp.clientTools.timeout: invalid duration "${shown}" (using 30s)`,
    ]);
  }
});

Deno.test("the scripted model picks topics from the question's words, in order", () => {
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

Deno.test("session ids are shaped like mm's", () => {
  assert.match(newSessionId(new Date("2026-11-10T22:45:07Z")), /^20261110-224507-[0-9a-f]{8}$/);
});

Deno.test("the scripted model streams its answer in pieces that add up to the whole", () => {
  const text = `Here is ${"a".repeat(60)} and more words after it, ending here.`;
  const pieces = streamPieces(text);
  assert.equal(pieces.join(""), text);
  assert.ok(pieces.length > 2);
});
