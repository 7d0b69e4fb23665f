/**
 * Peers that misbehave, and input that is hostile or odd: bad frames answered or ignored as
 * JSON-RPC says and logged within a limit, an mm that speaks no JSON-RPC at all, floods of calls
 * and of log, memory that stays bounded, lines over the limit (from mm or on stdin), ids of every
 * JSON type, an mm that stops reading. Mostly the misbehaving peer (`test/rogue-mm`), some small
 * shell-script mms.
 */

import assert from "./_assert.ts";
import {
  assertNoPeerLeft,
  assertTook,
  type ClientRun,
  idleRunMs,
  peakMemoryKiB,
  rogue,
  runClient,
  runRogue,
  seen,
  startClient,
  tempFile,
} from "./_run.ts";

// ─── Bad frames ──────────────────────────────────────────────────────────────

Deno.test("peers: bad frames are answered or ignored as the framing rules say, and the turn still ends", async () => {
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

Deno.test("peers: the first 10 bad frames are logged and answered, the rest counted and said once at the end", async () => {
  const run = await runRogue("garbage", { env: { ROGUE_GARBAGE_LINES: "25" } });
  assert.equal(run.code, 0, run.stderr);
  const bad = run.log.filter((l) => l.startsWith("[client] bad frame from mm: "));
  assert.deepEqual(bad, Array(10).fill("[client] bad frame from mm: not json"));
  const more = run.log.filter((l) => l.includes("more bad frames"));
  assert.deepEqual(more, ["[client] 15 more bad frames from mm were not logged"]);
  assert.ok(
    run.log.indexOf(more[0]) > run.log.lastIndexOf(bad[9]),
    "the count comes after the logged ones",
  );
  assert.deepEqual(seen(run.log), ["answers to bad frames: 10"]);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("peers: 1,998 bad frames with a good one in the middle are not 1,000 in a row: the turn goes on", async () => {
  const run = await runRogue("garbage", {
    env: { ROGUE_GARBAGE_LINES: "1998", ROGUE_GARBAGE_SPLIT: "1" },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(!run.stderr.includes("not speaking JSON-RPC"), run.stderr);
  assert.ok(run.log.includes("[client] 1988 more bad frames from mm were not logged"), run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
});

for (
  const [what, mm] of [
    ['an mm that is `yes "not json"`', "yes"],
    ["an mm that floods garbage in the middle of a turn", "rogue"],
  ] as const
) {
  Deno.test(`peers: ${what} is dropped after 1,000 bad lines, exit 1, quietly and quickly`, async () => {
    const idle = idleRunMs(); // beside the run: how long the machine takes to do nothing
    const pidFile = tempFile("pid", "");
    const options: ClientRun = mm === "yes"
      ? {
        noMm: true,
        pidFile,
        args: [
          "--mm",
          tempFile("mm", `#!/bin/sh\necho $$ > ${pidFile}\nexec yes "not json"\n`, 0o755),
        ],
      }
      : rogue("flood-garbage", { pidFile });
    const run = await runClient({ ...options, noTrace: true });
    assert.equal(run.code, 1, run.stderr.slice(0, 2000));
    const errors = run.log.filter((l) => l.startsWith("error:"));
    assert.deepEqual(errors, [
      "error: mm is not speaking JSON-RPC on stdout (1000 bad lines; first: not json)",
    ]);
    assert.ok(run.log.length < 20, `stderr has ${run.log.length} lines`);
    assertTook("the run ended", run.ms, { most: 2500, idle: await idle });
    await assertNoPeerLeft(pidFile);
  });
}

Deno.test("peers: host_info answers keep the JSON type of each request's id", async () => {
  const run = await runRogue("id-types");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(seen(run.log).sort(), [
    'answer id "7"',
    "answer id 0",
    "answer id 7",
    "answer id 9007199254740991",
  ]);
});

// ─── Floods and memory ───────────────────────────────────────────────────────

Deno.test("peers: 1,000 host_info requests in flight are all answered, with a permission and a list among them", async () => {
  const run = await runRogue("flood", { noTrace: true });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(seen(run.log), [
    "host_info answered 1000 of 1000",
    "permission answered: true, list answered: true",
  ]);
  assert.equal(run.log.filter((l) => l.startsWith("[client] host_info")).length, 1000);
});

Deno.test("peers: mm that stops reading for a while gets every answer, none lost while a write waits", async () => {
  const run = await runRogue("slow-reader", { noTrace: true });
  assert.equal(run.code, 0, run.stderr.slice(-500));
  assert.deepEqual(seen(run.log), ["answered 3000 of 3000"]);
});

Deno.test("peers: memory stays bounded when mm floods calls and never reads its stdin", async () => {
  // The peer sends up to 200,000 host_info calls whose ids are 2,500
  // characters long, and never reads a byte: answering them all would take
  // over 500 MB (each answer repeats its id). A client that keeps reading
  // and queues the answers grows by hundreds of MB within seconds; one whose
  // answers wait in a bounded queue stops reading mm's calls while its writes
  // are blocked, so mm blocks too. Once a write of the peer has waited 1 s
  // (or after 6 s in all) the peer gives up and exits, which ends the run (mm
  // exited before the turn ended). The client's resident memory is sampled
  // all along, and its peak must stay under 300 MB: far above what the
  // client needs (about 100 MB), far below what the answers would need.
  const client = startClient(rogue("deaf-flood", {
    noTrace: true,
    env: {
      ROGUE_CALLS: "200000",
      ROGUE_ID_PAD: "2500",
      ROGUE_GIVE_UP_MS: "6000",
      ROGUE_GIVE_UP_BLOCKED_MS: "1000",
    },
  }));
  const peak = peakMemoryKiB(client.child.pid);
  const run = await client.done();
  const peakKiB = await peak;
  const sent = seen(run.log).find((l) => l.startsWith("sent ")) ?? "(the peer said nothing)";
  assert.ok(
    peakKiB < 300 * 1024,
    `the client grew to ${Math.round(peakKiB / 1024)} MB; the peer ${sent}`,
  );
  assert.equal(run.code, 1, run.log.slice(-3).join("\n"));
  await assertNoPeerLeft(run.pidFile);
});

Deno.test("peers: a 48 MiB flood of mm's log is passed on whole without growing the client's memory", async () => {
  const client = startClient(rogue("stderr-flood", { noTrace: true }));
  const peak = peakMemoryKiB(client.child.pid);
  const run = await client.done();
  const peakKiB = await peak;
  assert.equal(run.code, 0, run.stderr.slice(-300));
  assert.ok(run.stderr.includes(`${"x".repeat(100)}`) && run.log.includes("[mm] flood done"));
  assert.equal(run.stderr.split("x").length - 1, 48 * 1024 * 1024, "every byte passed on");
  assert.ok(peakKiB < 200 * 1024, `the client grew to ${Math.round(peakKiB / 1024)} MB`);
});

// ─── Long lines ──────────────────────────────────────────────────────────────

Deno.test("peers: a line from mm over 32 MiB is one error line, the connection dropped, exit 1", async () => {
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

Deno.test("peers: a 16 MiB message chunk in 64 KiB writes arrives intact", async () => {
  const run = await runRogue("big-chunk", { noTrace: true });
  assert.equal(run.code, 0, run.stderr);
  const size = 16 * 1024 * 1024;
  assert.equal(run.out.length, 3);
  assert.equal(run.out[1], "é".repeat(size / 4) + "x".repeat(size / 2));
  assert.equal(run.out[2], "[end_turn]");
});

Deno.test("peers: a line over the limit on stdin is named as stdin's, not mm's", async () => {
  const run = await runClient({
    args: ["-i"],
    stdin: `${"x".repeat(32 * 1024 * 1024 + 1)}\n`,
    noTrace: true,
  });
  assert.equal(run.code, 2, run.stderr.slice(-300));
  assert.ok(run.log.includes("error: stdin has a line longer than 33554432 bytes"), run.stderr);
});

// ─── An mm that stops reading ────────────────────────────────────────────────

/** An mm (a shell script) that answers the handshake, closes its stdin, then calls host_info. */
const DEAF_MM = `#!/bin/sh
read -r line; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'
read -r line; echo '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}'
read -r line; exec 0<&-
echo '{"jsonrpc":"2.0","id":9,"method":"_demo.minime/host_info","params":{"topic":"os"}}'
exec sleep 60
`;

Deno.test("peers: an mm that stops reading its stdin but stays is an error once a write fails", async () => {
  const mm = tempFile("mm", DEAF_MM, 0o755);
  const run = await runClient({ noMm: true, args: ["--mm", mm] });
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.log.at(-1) ?? "", /^error: cannot write to mm: /);
});
