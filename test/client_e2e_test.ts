/**
 * The real client, as a process, against the mm stand-in: the exchange with
 * mm, the permission policy, what the user sees, and every ending.
 */

import assert from "node:assert/strict";
import { hostInfo } from "../client.ts";
import {
  agentFileWith,
  alive,
  assertInOrder,
  ROOT,
  runClient,
  sessionOf,
  startClient,
  tempFile,
} from "./_run.ts";
import { scratchDir } from "./_scratch.ts";

const OS_TEXT = hostInfo("os").content[0].text;
const MEMORY_LINE = /^│ \d+\.\d GiB free of \d+\.\d GiB$/;
const TOOL_ERROR = (text: string) => `│ [client tool error: ${text}]`;

Deno.test("meta mode: mm sees client_host_info and the model's two calls are answered", async () => {
  const run = await runClient();
  assert.equal(run.code, 0, run.stderr);
  const session = sessionOf(run.log);
  assert.match(session, /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  assertInOrder(run.log, [
    "[acp] client tools (meta): client_host_info",
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
  assert.match(run.out[4], MEMORY_LINE);
  assert.match(
    run.out[5],
    /^Here is what host_info reports about your machine — operating system: /,
  );
  assert.equal(run.out[6], "[end_turn]");
  assert.equal(run.out.length, 7);
  assert.ok(!run.log.some((l) => l.includes("list requested")), "meta mode asks for no list");
});

Deno.test("request mode: the list is answered while session/new is still pending", async () => {
  const run = await runClient({
    args: ["--request", "Which CPU does my machine have, and since when is it up?"],
  });
  assert.equal(run.code, 0, run.stderr);
  const session = sessionOf(run.log);
  assertInOrder(run.log, [
    `[client] list requested for session ${session}`,
    `[acp] session ${session} client tools (request): client_host_info`,
    `[client] discovery: request, session ${session}`,
    `[client] host_info {"topic":"cpu"} (session ${session})`,
    `[client] host_info {"topic":"uptime"} (session ${session})`,
  ]);
  assertInOrder(run.out, [
    "❓ Which CPU does my machine have, and since when is it up?",
    /^│ \d+ × .+ \(.+\), load average \d+\.\d\d \d+\.\d\d \d+\.\d\d$/,
    /^│ up (\d+ days?, )?(\d+ hours?, )?\d+ minutes? \(since \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$/,
    "[end_turn]",
  ]);
  // The list request came in before mm answered session/new.
  const trace = run.stderr.split("\n");
  const listAt = trace.findIndex((l) =>
    l.startsWith("← ") && l.includes('"_org.mini-me/tools/list"')
  );
  const newAnsweredAt = trace.findIndex((l) =>
    l.startsWith("← ") && l.includes(`"sessionId":"${session}"}}`)
  );
  assert.ok(listAt >= 0 && listAt < newAnsweredAt, "list request before the session/new answer");
});

for (
  const [what, replacements] of [
    ["yolo: false", { "yolo: true": "yolo: false" }],
    ["permissions: ask", { "permissions: auto": "permissions: ask" }],
  ] as const
) {
  Deno.test(`${what}: mm asks before each call and the client allows client: host_info`, async () => {
    const agent = agentFileWith(replacements);
    const run = await runClient({ args: ["--agent", agent], readAlso: [agent] });
    assert.equal(run.code, 0, run.stderr);
    const session = sessionOf(run.log);
    assertInOrder(run.log, [
      '[client] permission for "client: host_info": allowed',
      '[client] permission for "client: host_info": allowed',
      `[client] host_info {"topic":"os"} (session ${session})`,
      `[client] host_info {"topic":"memory"} (session ${session})`,
    ]);
    assert.ok(run.stderr.includes('"outcome":{"outcome":"selected","optionId":"allow"}'));
    assertInOrder(run.out, [`│ ${OS_TEXT}`, MEMORY_LINE, "[end_turn]"]);
  });
}

Deno.test("crossed modes: the client announces true to a meta agent, mm says so and the model has no tool", async () => {
  const run = await runClient({ args: ["--request", "--agent", "agent.yaml"] });
  assert.equal(run.code, 0, run.stderr);
  assertInOrder(run.log, [
    "[client] warning: agent.yaml sets acp.clientTools.discovery: meta, but the client announces request; mm will not see host_info",
    '[acp] client tools: "org.mini-me/tools" is not a list of tools; a client that answers _org.mini-me/tools/list needs acp.clientTools.discovery: request',
  ]);
  assert.ok(!run.log.some((l) => l.startsWith("[client] host_info")));
  assertInOrder(run.out, [/^I cannot see your machine/, "[end_turn]"]);
});

Deno.test("crossed modes: a meta client with a request agent still answers the list", async () => {
  const run = await runClient({ args: ["--agent", "agent-request.yaml"] });
  assert.equal(run.code, 0, run.stderr);
  const session = sessionOf(run.log);
  assertInOrder(run.log, [
    "[client] warning: agent-request.yaml sets acp.clientTools.discovery: request, but the client announces meta; mm will ask for the list, and the client answers it",
    `[client] list requested for session ${session}`,
    `[acp] session ${session} client tools (request): client_host_info`,
  ]);
  assertInOrder(run.out, [`│ ${OS_TEXT}`, "[end_turn]"]);
});

Deno.test("an agent file with client tools disabled is warned about and mm ignores host_info", async () => {
  const agent = agentFileWith({ "enabled: true": "enabled: false" });
  const run = await runClient({ args: ["--agent", agent], readAlso: [agent] });
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.log[0],
    /^\[client\] warning: .*agent\.yaml sets acp\.clientTools\.enabled: false; mm will ignore host_info$/,
  );
  assert.ok(!run.log.some((l) => l.startsWith("[acp] client tools")));
  assertInOrder(run.out, [/^I cannot see your machine/, "[end_turn]"]);
});

Deno.test("host_info reports an unknown topic as an error result the model reads", async () => {
  const run = await runClient({ args: ["How big is my disk?"] });
  assert.equal(run.code, 0, run.stderr);
  assertInOrder(run.out, [
    "🛠️ client: host_info",
    "✖ client: host_info failed",
    TOOL_ERROR('unknown topic "disk"; use one of: os, cpu, memory, uptime'),
    "[end_turn]",
  ]);
  assert.ok(run.stderr.includes('"isError":true'));
});

Deno.test("mm's required-parameter check stops a call without a topic before it reaches the client", async () => {
  const run = await runClient({ args: ["Tell me about it without a topic"] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(!run.log.some((l) => l.startsWith("[client] host_info")));
  assertInOrder(run.out, [
    "✖ client: host_info failed",
    TOOL_ERROR("missing required parameters: topic"),
  ]);
});

Deno.test("stdout carries only the conversation", async () => {
  const run = await runClient({ noTrace: true });
  assert.equal(run.code, 0);
  assert.ok(!run.stdout.includes("[client]") && !run.stdout.includes("[acp]"));
  assert.ok(run.out.every((l) => !l.startsWith("→") && !l.startsWith("←")));
  assert.ok(!run.stderr.includes("→ "), "no trace without --trace");
});

Deno.test("mm that cannot be found exits 127 with a one-line error", async () => {
  const run = await runClient({ noMm: true, args: ["--mm", "/nonexistent/mm"] });
  assert.equal(run.code, 127);
  assert.deepEqual(run.log, [
    "error: cannot start mm (/nonexistent/mm): not found. --mm names it: check that path.",
  ]);
  assert.equal(run.stdout, "");
});

Deno.test("mm found through MM_BIN when --mm is not given", async () => {
  const run = await runClient({ noMm: true, env: { MM_BIN: `${ROOT}/test/mm-sim` } });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("mm that is not executable exits 127", async () => {
  const notExecutable = tempFile("mm", "#!/bin/sh\n", 0o644);
  const run = await runClient({ noMm: true, args: ["--mm", notExecutable] });
  assert.equal(run.code, 127);
  assert.equal(
    run.log.at(-1),
    `error: cannot start mm (${notExecutable}): not executable. --mm names it: check that path.`,
  );
});

Deno.test("mm exiting in the middle of the turn ends the run with its exit code", async () => {
  const pidFile = tempFile("pid", "");
  const run = await runClient({ env: { MM_SIM_EXIT_IN_TURN: "3", MM_SIM_PID_FILE: pidFile } });
  assert.equal(run.code, 1);
  assert.equal(run.log.at(-1), "error: mm exited with code 3 before the turn ended");
  assert.ok(!run.stderr.includes("    at "), "no stack trace");
  assert.ok(!alive(Number(Deno.readTextFileSync(pidFile))));
});

Deno.test("a missing agent file is an error before mm starts", async () => {
  const run = await runClient({ args: ["--agent", "nowhere.yaml"] });
  assert.equal(run.code, 2);
  assert.deepEqual(run.log, [
    "error: agent file not found: nowhere.yaml",
  ]);
});

Deno.test("an agent file that is not YAML is an error naming the file and the line", async () => {
  const bad = tempFile("agent.yaml", "yolo: true\nacp:\n  clientTools: [\n    enabled: : true\n");
  const run = await runClient({ args: ["--agent", bad], readAlso: [bad] });
  assert.equal(run.code, 2);
  assert.equal(run.log.length, 1);
  assert.match(
    run.log[0],
    new RegExp(`^error: agent file ${bad} is not valid YAML \\(line \\d+\\): .+`),
  );
});

Deno.test("an agent file outside what the run may read is named in the error", async () => {
  const agent = agentFileWith({});
  const run = await runClient({ args: ["--agent", agent] });
  assert.equal(run.code, 2);
  assert.deepEqual(run.log, [
    `error: agent file ${agent} is outside what this run may read (add --allow-read=${agent})`,
  ]);
});

Deno.test("the agent file is found next to client.ts when the current folder has none", async () => {
  const elsewhere = scratchDir();
  const run = await runClient({ cwd: elsewhere, permissions: ["--allow-all"] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stderr.includes(`"cwd":"${elsewhere}"`), "session/new carries the client's cwd");
});

Deno.test("Ctrl-C during the turn cancels it the ACP way and exits 130", async () => {
  const pidFile = tempFile("pid", "");
  const client = startClient({ env: { MM_SIM_THINK_MS: "30000", MM_SIM_PID_FILE: pidFile } });
  await client.waitForStderr("agent_thought_chunk");
  client.child.kill("SIGINT");
  const run = await client.done();
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.log.includes("[client] cancelling…"));
  assert.ok(run.stderr.includes('"method":"session/cancel"'));
  assert.equal(run.out.at(-1), "[cancelled]");
  assert.ok(run.ms < 10_000, `ended in ${run.ms} ms`);
  assert.ok(!alive(Number(Deno.readTextFileSync(pidFile))), "mm is gone");
});

Deno.test("SIGTERM during the turn cancels it like Ctrl-C and exits 143", async () => {
  const pidFile = tempFile("pid", "");
  const client = startClient({ env: { MM_SIM_THINK_MS: "30000", MM_SIM_PID_FILE: pidFile } });
  await client.waitForStderr("agent_thought_chunk");
  client.child.kill("SIGTERM");
  const run = await client.done();
  assert.equal(run.code, 143, run.stderr);
  assert.ok(!alive(Number(Deno.readTextFileSync(pidFile))), "mm is gone");
  assert.ok(run.stderr.includes('"method":"session/cancel"'));
  assert.equal(run.out.at(-1), "[cancelled]");
});

Deno.test("mm that never answers initialize hits --timeout and is killed", async () => {
  const pidFile = tempFile("pid", "");
  const silent = tempFile("mm", `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 60\n`, 0o755);
  const run = await runClient({ noMm: true, args: ["--mm", silent, "--timeout", "1"] });
  assert.equal(run.code, 1);
  assert.equal(run.log.at(-1), "error: mm did not answer initialize within 1 s");
  assert.ok(run.ms < 10_000, `ended in ${run.ms} ms`);
  assert.ok(!alive(Number(Deno.readTextFileSync(pidFile))), "the silent mm is gone");
});

Deno.test("a turn that ends normally leaves no mm process behind", async () => {
  const pidFile = tempFile("pid", "");
  const run = await runClient({ env: { MM_SIM_PID_FILE: pidFile } });
  assert.equal(run.code, 0);
  assert.ok(!alive(Number(Deno.readTextFileSync(pidFile))));
});
