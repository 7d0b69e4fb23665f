/**
 * What the client does beyond the Node demo, end to end: least
 * privilege, the command line as a process, colour only on a terminal, the
 * wire trace, and `deno compile`.
 */

import assert from "node:assert/strict";
import { ROOT, runClient, START_PERMISSIONS, within } from "./_run.ts";

Deno.test("the start task runs with exact permissions, no -A", () => {
  const tasks = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks;
  for (const name of ["start", "demo", "compile"]) {
    assert.ok(!/\s(-A|--allow-all)\b/.test(tasks[name]), `${name}: ${tasks[name]}`);
    assert.match(tasks[name], /--allow-env=MM_BIN,NO_COLOR,TERM /);
    assert.match(
      tasks[name],
      /--allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime /,
    );
  }
  assert.deepEqual(START_PERMISSIONS, [
    "--allow-run",
    "--allow-read=.",
    "--allow-env=MM_BIN,NO_COLOR,TERM",
    "--allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime",
  ]);
});

Deno.test("without a --allow-sys name host_info answers an error result naming it, and the turn goes on", async () => {
  const permissions = START_PERMISSIONS.map((flag) =>
    flag.startsWith("--allow-sys=") ? "--allow-sys=cpus,loadavg,systemMemoryInfo,osUptime" : flag
  );
  const run = await runClient({ permissions });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.out.includes("✖ client: host_info failed"));
  assert.ok(
    run.out.includes(
      "│ [client tool error: host_info needs --allow-sys=osRelease,hostname to report os]",
    ),
    run.stdout,
  );
  assert.match(run.out.find((l) => l.includes("GiB free of")) ?? "", /^│ /);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("deno run -A client.ts keeps working", async () => {
  const run = await runClient({ permissions: ["-A"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
});

Deno.test("--help prints the usage and exits 0; --version prints the version", async () => {
  const help = await runClient({ noMm: true, noTrace: true, args: ["--help"] });
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: client\.ts \[options\] \[question \| -\]/);
  assert.ok(help.stdout.includes("--timeout SECONDS"));
  const version = await runClient({ noMm: true, noTrace: true, args: ["--version"] });
  assert.equal(version.code, 0);
  assert.equal(version.stdout, "host-info-client 0.3.0\n");
});

Deno.test("an unknown option is one line naming it plus the usage, exit 2", async () => {
  const run = await runClient({ noMm: true, noTrace: true, args: ["--frobnicate"] });
  assert.equal(run.code, 2);
  assert.equal(run.log[0], "error: unknown option --frobnicate");
  assert.equal(run.log[1], "usage: client.ts [options] [question | -]");
  assert.equal(run.stdout, "");
});

Deno.test("--trace shows every frame in order, → sent and ← received", async () => {
  const run = await runClient({});
  const trace = run.stderr.split("\n").filter((l) => l.startsWith("→ ") || l.startsWith("← "));
  const methods = trace.map((l) => {
    const message = JSON.parse(l.slice(2));
    return `${l[0]} ${message.method ?? `answer ${message.id}`}`;
  });
  assert.deepEqual(methods.slice(0, 5), [
    "→ initialize",
    "← answer 0",
    "→ session/new",
    "← answer 1",
    "→ session/prompt",
  ]);
  assert.equal(methods.at(-1), "← answer 2");
  assert.equal(methods.filter((m) => m === "← _demo.minime/host_info").length, 2);
});

/** Runs the client under a pseudo-terminal (`script`), stdout and stderr both on it. */
async function onTerminal(env: Record<string, string>): Promise<string> {
  const command = [
    Deno.execPath(),
    "run",
    "--quiet",
    "--config",
    `${ROOT}/deno.json`,
    ...START_PERMISSIONS,
    `${ROOT}/client.ts`,
    "--mm",
    `${ROOT}/test/mm-sim`,
    "--verbose",
    "How big is my disk?",
  ].map((word) => `'${word}'`).join(" ");
  const environment: Record<string, string> = { ...Deno.env.toObject(), DENO_BIN: Deno.execPath() };
  delete environment.NO_COLOR;
  Object.assign(environment, env);
  const output = await within(
    30_000,
    "the client on a terminal to exit",
    new Deno.Command("script", {
      args: ["-qec", command, "/dev/null"],
      cwd: ROOT,
      clearEnv: true,
      env: environment,
      stdin: "null",
    }).output(),
  );
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return new TextDecoder().decode(output.stdout);
}

const hasScript = new Deno.Command("sh", { args: ["-c", "command -v script"] }).outputSync()
  .success;

Deno.test({
  name: "on a terminal failed calls are red and thoughts dim; NO_COLOR turns colour off",
  ignore: !hasScript,
  async fn() {
    const coloured = await onTerminal({});
    assert.ok(
      coloured.includes("\x1b[31m✖ client: host_info failed\x1b[0m"),
      JSON.stringify(coloured),
    );
    assert.ok(coloured.includes("\x1b[2mThe user asks about the machine"));
    const plain = await onTerminal({ NO_COLOR: "1" });
    assert.ok(plain.includes("✖ client: host_info failed"));
    // NO_COLOR is about colour: the progress line may still erase itself.
    // deno-lint-ignore no-control-regex
    assert.ok(!/\x1b\[[\d;]*m/.test(plain), JSON.stringify(plain));
  },
});
