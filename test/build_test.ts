/**
 * Building and installing: `deno task compile` embeds the client and its YAML reader only, and
 * `deno task install` makes a command that works from any folder.
 */

import assert from "./_assert.ts";
import { VERSION } from "../client.ts";
import { MODEL_NAMES, passedEnv, ROOT, RUN_MS, within } from "./_run.ts";
import { SCRATCH, scratchDir } from "./_scratch.ts";

Deno.test("build: the package is publishable as deno.json names it: its version is the client's, its licence the LICENSE file's and client.ts's SPDX line", () => {
  const config = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  assert.match(config.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/);
  assert.equal(config.version, VERSION);
  assert.equal(config.license, "MIT");
  assert.equal(config.exports, "./client.ts");
  assert.match(Deno.readTextFileSync(`${ROOT}/LICENSE`), /^MIT License\n/);
  const [, second] = Deno.readTextFileSync(`${ROOT}/client.ts`).split("\n");
  assert.equal(second, "// SPDX-License-Identifier: MIT", "the line after the shebang");
  assert.match(config.tasks.check, /deno publish --dry-run/, "deno task check tries a publish");
});

/** Runs a `deno task` in `cwd` (default: the project folder), with a deadline. */
async function task(name: string, env: Record<string, string>, cwd = ROOT) {
  const output = await within(
    2 * RUN_MS,
    `deno task ${name} to end`,
    new Deno.Command(Deno.execPath(), {
      args: ["task", name],
      cwd,
      env: { NO_COLOR: "1", TMPDIR: SCRATCH, ...env },
      stdin: "null",
    }).output(),
  );
  const text = new TextDecoder().decode(output.stderr) +
    new TextDecoder().decode(output.stdout);
  assert.ok(output.success, `deno task ${name} failed:\n${text}`);
  return text;
}

Deno.test("build: deno task compile embeds client.ts and js-yaml, none of the test-only packages", async () => {
  // DENORT_BIN names the runtime to bundle: the deno running the tests, so that nothing is
  // downloaded (dl.deno.land cannot be reached here). The binary it makes is therefore a plain
  // deno, which cannot run the client: this test reads what was embedded, and runs nothing.
  // It builds in a copy of the files the task needs, so that nothing is written to the project.
  const copy = scratchDir("compile-");
  for (const file of ["deno.json", "deno.lock", "client.ts"]) {
    Deno.copyFileSync(`${ROOT}/${file}`, `${copy}/${file}`);
  }
  const binary = `${copy}/host-info-client`;
  const listing = await task("compile", { DENORT_BIN: Deno.execPath() }, copy);
  const embedded = listing.slice(listing.indexOf("Embedded Files"));
  for (const wanted of ["client.ts", "js-yaml/", "argparse/"]) {
    assert.ok(embedded.includes(wanted), `${wanted} is embedded:\n${embedded}`);
  }
  for (
    const unwanted of ["@agentclientprotocol", "zod/", "ajv/", "fast-uri/"]
  ) {
    assert.ok(
      !embedded.includes(unwanted),
      `${unwanted} is embedded:\n${embedded}`,
    );
  }
  const [, size, unit] = embedded.match(/Files: ([\d.]+)(KB|MB)/) ?? [];
  assert.ok(
    unit === "KB" || Number(size) < 3,
    `${size} ${unit} of files embedded`,
  );
  assert.ok(Deno.statSync(binary).isFile);
});

Deno.test("build: deno task install makes a command that works from any folder", async () => {
  const root = scratchDir("install-");
  await task("install", { DENO_INSTALL_ROOT: root });
  const elsewhere = scratchDir("elsewhere-");
  const run = (cwd: string) =>
    within(
      RUN_MS,
      "the installed command to exit",
      new Deno.Command(`${root}/bin/host-info-client`, {
        args: ["How much RAM?"],
        cwd,
        clearEnv: true,
        env: {
          ...passedEnv(),
          PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:/usr/bin:/bin`,
          MM_BIN: `${ROOT}/test/mm-sim`,
          DENO_BIN: Deno.execPath(),
          NO_COLOR: "1",
          HOME: Deno.env.get("HOME") ?? "/tmp",
          TMPDIR: SCRATCH,
        },
        stdin: "null",
      }).output(),
    ).then(({ code, stdout, stderr }) => ({
      code,
      stdout: new TextDecoder().decode(stdout),
      stderr: new TextDecoder().decode(stderr),
    }));
  // It calls itself by the name it was installed as.
  const help = await within(
    RUN_MS,
    "the installed command's --help",
    new Deno.Command(`${root}/bin/host-info-client`, {
      args: ["--help"],
      env: { PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:/usr/bin:/bin` },
      stdin: "null",
    }).output(),
  );
  const usage = new TextDecoder().decode(help.stdout);
  assert.ok(
    usage.startsWith("usage: host-info-client [options] [question | -] [-- COMMAND [ARGS…]]\n"),
    usage,
  );
  // From a folder with no agent file, it uses the one next to the installed client.ts.
  const far = await run(elsewhere);
  assert.equal(far.code, 0, far.stderr);
  assert.match(far.stdout, /\n\[end_turn\]\n$/);
  assert.ok(
    far.stderr.includes(`[acp] client tools (meta): ${MODEL_NAMES}\n`),
    far.stderr,
  );
  // From a folder that has one, it uses that one: here one that disables client tools.
  Deno.writeTextFileSync(
    `${elsewhere}/agent.yaml`,
    "acp:\n  clientTools:\n    enabled: false\n",
  );
  const near = await run(elsewhere);
  assert.equal(near.code, 0, near.stderr);
  assert.ok(
    near.stderr.includes(
      "[client] warning: agent.yaml sets acp.clientTools.enabled: false",
    ),
  );
});

Deno.test("build: the compiled binary is told its name, as the installed command is", () => {
  const { tasks } = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  for (const name of ["compile", "install"]) {
    const words = String(tasks[name]).split(/\s+/);
    assert.deepEqual(
      words.slice(-3),
      ["--", "--called", "host-info-client"],
      tasks[name],
    );
  }
});

Deno.test("build: on a new machine, deno task start fetches the client's YAML reader alone, and deno task demo only what the stand-in adds: none of the test-only packages", async () => {
  // An empty cache: what each task downloads is what it needs (the npm registry is reachable).
  const fetched = async (args: string[]) => {
    const cache = scratchDir("deno-dir-");
    const output = await within(
      2 * RUN_MS,
      `deno task ${args.join(" ")} on an empty cache`,
      new Deno.Command(Deno.execPath(), {
        args: ["task", "-q", ...args],
        cwd: ROOT,
        clearEnv: true,
        env: {
          ...passedEnv(),
          DENO_DIR: cache,
          HOME: cache,
          PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:/usr/bin:/bin`,
          DENO_BIN: Deno.execPath(),
          NO_COLOR: "1",
          TMPDIR: SCRATCH,
        },
        stdin: "null",
      }).output(),
    );
    const said = new TextDecoder().decode(output.stderr);
    assert.ok(output.success, `deno task ${args.join(" ")} failed:\n${said}`);
    return [...Deno.readDirSync(`${cache}/npm/registry.npmjs.org`)].map((e) => e.name).sort();
  };
  assert.deepEqual(await fetched(["start", "--", "--version"]), [
    "argparse",
    "js-yaml",
  ]);
  assert.deepEqual(await fetched(["demo", "--", "-q", "How much RAM?"]), [
    "@agentclientprotocol",
    "argparse",
    "js-yaml",
    "zod",
  ]);
});

Deno.test("build: client.ts copied alone into an empty folder, beside an agent file, answers a question with deno run -A", async () => {
  // What a copier does first: no deno.json, no lock file, no import map; the imports carry their
  // own specifiers. (The folder is under the scratch folder, which has no deno.json above it.)
  const alone = scratchDir("copied-alone-");
  for (const file of ["client.ts", "agent.yaml"]) {
    Deno.copyFileSync(`${ROOT}/${file}`, `${alone}/${file}`);
  }
  const output = await within(
    RUN_MS,
    "the copied client to exit",
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "client.ts", "How much RAM?"],
      cwd: alone,
      env: {
        MM_BIN: `${ROOT}/test/mm-sim`,
        DENO_BIN: Deno.execPath(),
        NO_COLOR: "1",
        TMPDIR: SCRATCH, // where the stand-in keeps its sessions
      },
      stdin: "null",
    }).output(),
  );
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  assert.match(stdout, /\n│ \d+\.\d GiB free of \d+\.\d GiB\n/);
  assert.match(stdout, /\n\[end_turn\]\n$/);
  assert.ok(!/not a dependency|error:/.test(stderr), stderr);
  assert.deepEqual([...Deno.readDirSync(alone)].map((e) => e.name).sort(), [
    "agent.yaml",
    "client.ts",
  ]);
  // The session went to the scratch folder, not to the machine's /tmp.
  const sessions = [...Deno.readDirSync(`${SCRATCH}/mm-sim-sessions`)].map((
    e,
  ) => Deno.readTextFileSync(`${SCRATCH}/mm-sim-sessions/${e.name}`));
  assert.ok(
    sessions.some((text) => JSON.parse(text).cwd === alone),
    "no session in the scratch",
  );
});

Deno.test("build: deno task test runs the checks, then every test and client.ts's JSDoc examples", () => {
  const { tasks } = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  const words = String(tasks.test).split(/\s+/);
  assert.ok(String(tasks.test).startsWith("deno task check && "), tasks.test);
  for (const word of ["test", "--doc", "client.ts", "test/"]) {
    assert.ok(words.includes(word), word);
  }
  for (
    const step of [
      "deno fmt --check",
      "deno lint",
      "deno check --config test/deno.json client.ts test/",
      "deno doc --lint",
    ]
  ) {
    assert.ok(String(tasks.check).includes(step), `${step}: ${tasks.check}`);
  }
  const ci = Deno.readTextFileSync(`${ROOT}/.ci/run`);
  assert.match(
    ci,
    /npx -y deno@\d+\.\d+\.\d+ task test/,
    "CI runs the README's test command",
  );
});

Deno.test("build: deno task test runs two test files per core side by side, or as many as DENO_JOBS says", async () => {
  const { tasks } = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`));
  const words = String(tasks.test).split(/\s+/);
  assert.ok(words.includes("--parallel"), tasks.test);
  // A number fixed for one machine crowds a smaller one: the count follows the machine's cores
  // (two each, as the tests mostly wait on processes), unless the person sets DENO_JOBS.
  const jobs = String(tasks.test).match(
    /DENO_JOBS=\$\(deno eval -p '([^']*)'\) deno test /,
  )?.[1];
  if (jobs === undefined) {
    throw new Error(`no DENO_JOBS from the cores in: ${tasks.test}`);
  }
  const count = async (env: Record<string, string>) => {
    const command = new Deno.Command(Deno.execPath(), {
      args: ["eval", "-p", jobs],
      clearEnv: true,
      env: { ...passedEnv(), ...env },
      stdin: "null",
    });
    return new TextDecoder().decode((await command.output()).stdout).trim();
  };
  assert.equal(await count({}), String(navigator.hardwareConcurrency * 2));
  assert.equal(await count({ DENO_JOBS: "1" }), "1");
  // Files named before test/ start first, so that the last to start is a short one.
  const first = words.slice(
    words.indexOf("--doc") + 1,
    words.indexOf("client.ts"),
  );
  assert.ok(first.length > 0, tasks.test);
  for (const file of first) {
    assert.ok(Deno.statSync(`${ROOT}/${file}`).isFile, file);
  }
});
