/**
 * The real client against a peer that misbehaves on purpose
 * (`test/rogue_mm.ts`): refusals, bad frames, floods, hostile permission
 * requests, bad calls, cancellation and every way out: requests from mm,
 * the permission policy, ending and cancelling, and framing.
 */

import assert from "node:assert/strict";
import {
  alive,
  type ClientResult,
  type ClientRun,
  rogue,
  runClient,
  startClient,
  tempFile,
} from "./_run.ts";

/**
 * Runs the client against the rogue peer and checks, whatever the path out,
 * that it ended within a bound and left no peer process behind.
 */
async function runRogue(scenario: string, run: ClientRun = {}): Promise<ClientResult> {
  const options = rogue(scenario, run);
  return checkedEnd(options, await runClient(options));
}

function checkedEnd(options: ClientRun, result: ClientResult): ClientResult {
  assert.ok(result.ms < 20_000, `the client took ${result.ms} ms`);
  const pid = Number(Deno.readTextFileSync(options.env!.ROGUE_PID_FILE).split(" ")[0]);
  assert.ok(pid > 0, "the peer wrote its pid");
  assert.ok(!alive(pid), "no peer process outlives the client");
  return result;
}

/** The `[rogue] …` lines: what the peer saw of the client's answers. */
function seen(log: string[]): string[] {
  return log.filter((l) => l.startsWith("[rogue] ")).map((l) => l.slice(8));
}

for (
  const [scenario, method, message] of [
    ["refuse-initialize", "initialize", "no model configured"],
    ["refuse-session", "session/new", "cwd must be absolute"],
    ["refuse-prompt", "session/prompt", "the model is not loaded"],
  ]
) {
  Deno.test(`mm answering ${method} with an error ends the run with exit 1`, async () => {
    const run = await runRogue(scenario);
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.log.at(-1), `error: mm refused ${method}: ${message}`);
    assert.ok(!run.stderr.includes("    at "), "no stack trace");
  });
}

Deno.test("mm speaking another protocol version is refused", async () => {
  const run = await runRogue("version-2");
  assert.equal(run.code, 1);
  assert.equal(run.log.at(-1), "error: mm speaks ACP protocol version 2; this client speaks 1");
});

Deno.test("mm that never answers session/new hits --timeout", async () => {
  const run = await runRogue("silent-session", { args: ["--timeout", "0.5"] });
  assert.equal(run.code, 1);
  assert.equal(run.log.at(-1), "error: mm did not answer session/new within 0.5 s");
  assert.ok(run.ms < 10_000, `ended in ${run.ms} ms`);
});

Deno.test("a turn ending in refusal exits 1, and one cancelled unasked exits 130", async () => {
  const refusal = await runRogue("refusal");
  assert.equal(refusal.code, 1);
  assert.equal(refusal.out.at(-1), "[refusal]");
  const cancelled = await runRogue("cancelled-unasked");
  assert.equal(cancelled.code, 130);
  assert.equal(cancelled.out.at(-1), "[cancelled]");
  assert.ok(!refusal.stderr.includes("continue with"), "a refusal is not a way to go on");
  // A cancelled turn leaves the session as it was: it can be continued.
  assert.ok(cancelled.log.includes(`[client] continue with: --resume 20261130-120000-0badc0de`));
});

for (const stopReason of ["end_turn", "max_tokens", "max_turn_requests"]) {
  Deno.test(`a turn ending in ${stopReason} prints it and exits 0`, async () => {
    const run = await runRogue("stop", { env: { ROGUE_STOP_REASON: stopReason } });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.out.at(-1), `[${stopReason}]`);
  });
}

Deno.test("mm killed by a signal mid-turn is reported with the signal's name", async () => {
  const run = await runRogue("killed");
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with signal SIGKILL before the turn ended");
});

Deno.test("fs, terminal and unknown extension requests get Method not found with their id", async () => {
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

Deno.test("bad frames are answered or ignored as the framing rules say and the turn still ends", async () => {
  const run = await runRogue("bad-frames");
  assert.equal(run.code, 0, run.stderr);
  const parseError =
    'answer {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}';
  const invalid = (id: unknown) =>
    `answer {"jsonrpc":"2.0","id":${
      JSON.stringify(id)
    },"error":{"code":-32600,"message":"Invalid Request"}}`;
  assert.deepEqual(
    seen(run.log),
    [
      parseError,
      invalid(null),
      invalid(null),
      invalid(null),
      invalid(5), // an id, but no method, result or error
      invalid(7),
    ],
  );
  for (const frame of ["this is not json", "[1,2]", "42", "null", '{"jsonrpc":"2.0","id":5}']) {
    assert.ok(run.log.includes(`[client] bad frame from mm: ${frame}`), `logged ${frame}`);
  }
  assert.ok(run.stderr.includes("\n← this is not json\n"), "--trace shows rejected frames too");
  assert.ok(run.log.includes("[client] answer to no pending request (id 999) ignored"));
  assert.ok(run.log.includes("[client] answer to no pending request (id 1) ignored"));
  assert.deepEqual(run.out.slice(-2), ["still here", "[end_turn]"]);
});

Deno.test("1,000 host_info requests in flight are all answered, with a permission and a list among them", async () => {
  const run = await runRogue("flood", { noTrace: true });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(seen(run.log), [
    "host_info answered 1000 of 1000",
    "permission answered: true, list answered: true",
  ]);
  assert.equal(run.log.filter((l) => l.startsWith("[client] host_info")).length, 1000);
});

Deno.test("the permission policy allows exactly client: host_info and only picks offered options", async () => {
  const run = await runRogue("permission-attack");
  assert.equal(run.code, 0, run.stderr);
  const all = JSON.stringify([
    { optionId: "yes", name: "Allow", kind: "allow_once" },
    { optionId: "always", name: "Always", kind: "allow_always" },
    { optionId: "no", name: "Reject", kind: "reject_once" },
    { optionId: "never", name: "Never", kind: "reject_always" },
  ]);
  const selected = (id: string) => `{"outcome":{"outcome":"selected","optionId":"${id}"}}`;
  assert.deepEqual(seen(run.log), [
    `"client: host_info" ${all} -> ${selected("yes")}`,
    `"client: host_info " ${all} -> ${selected("no")}`,
    `"Client: host_info" ${all} -> ${selected("no")}`,
    `"client: host_info; rm -rf /" ${all} -> ${selected("no")}`,
    `"client: other" ${all} -> ${selected("no")}`,
    `"bash: ls" ${all} -> ${selected("no")}`,
    `"" ${all} -> ${selected("no")}`,
    `null ${all} -> ${selected("no")}`,
    `"client: host_info" [{"optionId":"always","name":"Always","kind":"allow_always"},{"optionId":"never","name":"Never","kind":"reject_always"}] -> ${
      selected("always")
    }`,
    `"bash: ls" [{"optionId":"yes","name":"Allow","kind":"allow_once"},{"optionId":"never","name":"Never","kind":"reject_always"}] -> ${
      selected("never")
    }`,
    `"bash: ls" [{"optionId":"yes","name":"Allow","kind":"allow_once"}] -> {"outcome":{"outcome":"cancelled"}}`,
    `"client: host_info" [{"optionId":"no","name":"Reject","kind":"reject_once"}] -> ${
      selected("no")
    }`,
    `"client: host_info" [] -> {"outcome":{"outcome":"cancelled"}}`,
    `"client: host_info" "not a list" -> {"outcome":{"outcome":"cancelled"}}`,
  ]);
  const decisions = run.log.filter((l) => l.startsWith("[client] permission for "));
  assert.deepEqual(decisions.slice(0, 3), [
    '[client] permission for "client: host_info": allowed',
    '[client] permission for "client: host_info ": refused',
    '[client] permission for "Client: host_info": refused',
  ]);
  assert.equal(decisions[8], '[client] permission for "client: host_info": allowed');
  assert.equal(decisions[11], '[client] permission for "client: host_info": refused');
});

Deno.test("bad host_info calls get an error result or the right log line, never a JSON-RPC error", async () => {
  const run = await runRogue("bad-calls");
  assert.equal(run.code, 0, run.stderr);
  const missing =
    '{"content":[{"type":"text","text":"missing parameter \\"topic\\"; use one of: os, cpu, memory, uptime"}],"isError":true}';
  const lines = seen(run.log);
  assert.equal(lines.length, 8);
  for (const i of [0, 1, 2, 3, 7]) assert.ok(lines[i].endsWith(`"result":${missing}}`), lines[i]);
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

Deno.test("$/cancel_request for an answered or unknown request changes nothing", async () => {
  const run = await runRogue("cancel-request");
  assert.equal(run.code, 0, run.stderr);
  const [answer] = seen(run.log);
  assert.match(
    answer,
    /^answer \{"jsonrpc":"2\.0","id":300,"result":\{"content":\[\{"type":"text","text":"up /,
  );
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("a line over 32 MiB is one error line, the connection dropped, exit 1", async () => {
  const run = await runRogue("huge-line", { noTrace: true });
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(run.log.filter((l) => l.includes("33554432")), [
    "error: mm sent a line longer than 33554432 bytes; connection dropped",
  ]);
  assert.equal(
    run.log.at(-1),
    "error: mm sent a line longer than 33554432 bytes; connection dropped",
  );
});

Deno.test("a 16 MiB message chunk in 64 KiB writes arrives intact", async () => {
  const run = await runRogue("big-chunk", { noTrace: true });
  assert.equal(run.code, 0, run.stderr);
  const size = 16 * 1024 * 1024;
  assert.equal(run.out.length, 3);
  assert.equal(run.out[1], "é".repeat(size / 4) + "x".repeat(size / 2));
  assert.equal(run.out[2], "[end_turn]");
});

Deno.test("mm exiting while a call is answered ends the run with its exit code", async () => {
  const run = await runRogue("exit-mid-call");
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.log.at(-1), "error: mm exited with code 0 before the turn ended");
});

Deno.test("after Ctrl-C a permission request is answered cancelled whatever its title", async () => {
  const options = rogue("permission-after-cancel");
  const client = startClient(options);
  await client.waitForStderr("waiting");
  client.child.kill("SIGINT");
  const run = checkedEnd(options, await client.done());
  assert.equal(run.code, 130, run.stderr);
  assert.deepEqual(seen(run.log), [
    `got {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"20261130-120000-0badc0de"}}`,
    'answer {"jsonrpc":"2.0","id":500,"result":{"outcome":{"outcome":"cancelled"}}}',
  ]);
  assert.equal(run.out.at(-1), "[cancelled]");
});

Deno.test("mm ignoring session/cancel is killed after 5 s, exit 130", async () => {
  const options = rogue("ignore-cancel");
  const client = startClient(options);
  await client.waitForStderr("waiting");
  client.child.kill("SIGINT");
  const run = checkedEnd(options, await client.done());
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.ms < 15_000, `ended in ${run.ms} ms`);
});

Deno.test("a second Ctrl-C kills mm at once, exit 130", async () => {
  const options = rogue("ignore-cancel");
  const client = startClient(options);
  await client.waitForStderr("waiting");
  client.child.kill("SIGINT");
  await client.waitForStderr("[client] cancelling…", 5000);
  // Copies of one press arrive within 300 ms of it: a second press comes later.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const second = performance.now();
  client.child.kill("SIGINT");
  const run = checkedEnd(options, await client.done());
  assert.equal(run.code, 130, run.stderr);
  assert.ok(run.log.includes("[client] second Ctrl-C: killing mm"), run.stderr);
  assert.ok(performance.now() - second < 3000, "did not wait for the 5 s grace");
});

Deno.test("mm's helper processes do not outlive the client either", async () => {
  const pidFile = tempFile("pids", "");
  const run = await runRogue("helpers", { env: { ROGUE_PID_FILE: pidFile } });
  assert.equal(run.code, 0, run.stderr);
  const [mm, helper] = Deno.readTextFileSync(pidFile).split(" ").map(Number);
  assert.ok(!alive(mm), "mm is gone");
  assert.ok(!alive(helper), "its helper is gone");
});

Deno.test("what the user sees: failed calls, non-text content, and nothing of unknown kinds", async () => {
  const run = await runRogue("render", { noTrace: true });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.out, [
    "❓ What operating system does my machine run, and how much memory does it have?",
    "🛠️ client: host_info",
    "✖ client: host_info failed",
    "│ first line",
    "│ second line",
    "🛠️ renamed",
    "✖ renamed failed",
    "🛠️ c",
    "✖ c failed",
    "│ [image]",
    "│ diff /x (+0 −0 lines)",
    "An answer",
    "[image]",
    "ends here.",
    "[end_turn]",
  ]);
  assert.ok(!run.stderr.includes("thinking hard"), "no thoughts without --verbose");
  assert.ok(!run.stderr.includes("usage"), "no usage without --verbose");
});

Deno.test("--verbose shows thoughts, plans and usage on stderr, never on stdout", async () => {
  const run = await runRogue("render", { noTrace: true, args: ["--verbose"] });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.log.includes("thinking hard"));
  assert.ok(run.log.includes("plan:"));
  assert.ok(run.log.includes("  [completed] look"));
  assert.ok(run.log.includes("  [pending] answer"));
  assert.ok(run.log.includes("usage: 1234 of 32768 tokens, cost 0.02 USD"));
  assert.ok(!run.stdout.includes("thinking hard") && !run.stdout.includes("usage"));
  assert.ok(!run.stderr.includes("\x1b["), "no colour when stderr is not a terminal");
});
