/**
 * Permissions, both kinds. The permission policy: which of mm's `session/request_permission`
 * requests the client allows (exactly the title of a tool it lends) and which option it picks,
 * pure and end to end against the stand-in and a hostile peer. Deno's permissions: the exact
 * flags of the tasks and of client.ts's shebang line, and a run that lacks one never stops at a
 * prompt — it goes on with what it may do, and says what is missing.
 */

import assert from "./_assert.ts";
import { choosePermission, isOfferedToolTitle, TOOLS } from "../client.ts";
import {
  agentFileWith,
  assertInOrder,
  clientCommand,
  discovery,
  MM_SIM,
  OS_TEXT,
  PATH_WITHOUT_MM,
  permissionsWith,
  RESULT_LINE,
  ROOT,
  runClient,
  runRogue,
  seen,
  START_PERMISSIONS,
} from "./_run.ts";
import { doneWithoutPrompt, hasScript, inTerminal, visibleLines } from "./_pty.ts";

// ─── The policy, pure ────────────────────────────────────────────────────────

Deno.test("permissions: only the exact title of an offered tool is allowed", () => {
  assert.equal(isOfferedToolTitle("client: host_info"), true);
  for (
    const title of [
      "client: host_info ",
      " client: host_info",
      "Client: host_info",
      "client:host_info",
      "client: host_info; rm -rf /",
      "client: host_info\nrm -rf /",
      "client: other",
      "client: ",
      "bash: ls",
      "",
      undefined,
      null,
      42,
    ]
  ) {
    assert.equal(isOfferedToolTitle(title), false, JSON.stringify(title));
  }
});

const OPTIONS = {
  allowOnce: { optionId: "a1", name: "Allow", kind: "allow_once" },
  allowAlways: { optionId: "a2", name: "Always", kind: "allow_always" },
  rejectOnce: { optionId: "r1", name: "Reject", kind: "reject_once" },
  rejectAlways: { optionId: "r2", name: "Never", kind: "reject_always" },
};

Deno.test("permissions: allowing picks allow_once, else allow_always", () => {
  const { allowOnce, allowAlways, rejectOnce } = OPTIONS;
  assert.deepEqual(choosePermission([rejectOnce, allowAlways, allowOnce], true), {
    outcome: "selected",
    optionId: "a1",
  });
  assert.deepEqual(choosePermission([rejectOnce, allowAlways], true), {
    outcome: "selected",
    optionId: "a2",
  });
});

Deno.test("permissions: refusing picks reject_once, else reject_always, else cancelled", () => {
  const { allowOnce, rejectOnce, rejectAlways } = OPTIONS;
  assert.deepEqual(choosePermission([allowOnce, rejectAlways, rejectOnce], false), {
    outcome: "selected",
    optionId: "r1",
  });
  assert.deepEqual(choosePermission([allowOnce, rejectAlways], false), {
    outcome: "selected",
    optionId: "r2",
  });
  assert.deepEqual(choosePermission([allowOnce], false), { outcome: "cancelled" });
});

Deno.test("permissions: without an allow option an allowed call is refused, never given an invented id", () => {
  const { rejectOnce } = OPTIONS;
  assert.deepEqual(choosePermission([rejectOnce], true), { outcome: "selected", optionId: "r1" });
  assert.deepEqual(choosePermission([], true), { outcome: "cancelled" });
  assert.deepEqual(choosePermission("nope", true), { outcome: "cancelled" });
  assert.deepEqual(choosePermission([{ kind: "allow_once" }, null, 3], true), {
    outcome: "cancelled",
  });
});

// ─── The policy, end to end ──────────────────────────────────────────────────

for (
  const [what, replacements] of [
    ["yolo: false", { "yolo: true": "yolo: false" }],
    ["permissions: ask", { "permissions: auto": "permissions: ask" }],
  ] as const
) {
  Deno.test(`permissions: with ${what} mm asks before each call and the client allows client: host_info`, async () => {
    const agent = agentFileWith(replacements);
    const run = await runClient({ args: ["--agent", agent], readAlso: [agent] });
    assert.equal(run.code, 0, run.stderr);
    const { session } = discovery(run.log);
    assertInOrder(run.log, [
      '[client] permission for "client: host_info": allowed',
      '[client] permission for "client: host_info": allowed',
      `[client] host_info {"topic":"os"} (session ${session})`,
      `[client] host_info {"topic":"memory"} (session ${session})`,
    ]);
    assert.ok(run.stderr.includes('"outcome":{"outcome":"selected","optionId":"allow"}'));
    assertInOrder(run.out, [`│ ${OS_TEXT}`, RESULT_LINE.memory, "[end_turn]"]);
  });
}

Deno.test("permissions: under a stepwise model each call is allowed just before it runs", async () => {
  const agent = agentFileWith({ "yolo: true": "yolo: false" });
  const run = await runClient({
    args: ["--agent", agent],
    readAlso: [agent],
    env: { MM_SIM_MODEL: "stepwise" },
  });
  assert.equal(run.code, 0, run.stderr);
  const decisions = run.log.filter((l) =>
    l.startsWith("[client] permission") || l.startsWith("[client] host_info")
  );
  assert.deepEqual(decisions.map((l) => l.split(" ").slice(0, 2).join(" ")), [
    "[client] permission",
    "[client] host_info",
    "[client] permission",
    "[client] host_info",
  ]);
  assert.ok(run.out.includes(`│ ${OS_TEXT}`), run.stdout);
});

Deno.test("permissions: the policy allows exactly client: host_info and only picks offered options", async () => {
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
    `"client: host_info" [{"name":"Allow","kind":"allow_once"}] -> {"outcome":{"outcome":"cancelled"}}`,
  ]);
  const decisions = run.log.filter((l) => l.startsWith("[client] permission for "));
  assert.deepEqual(decisions.slice(0, 3), [
    '[client] permission for "client: host_info": allowed',
    '[client] permission for "client: host_info ": refused',
    '[client] permission for "Client: host_info": refused',
  ]);
  assert.equal(decisions[8], '[client] permission for "client: host_info": allowed');
  assert.equal(decisions[11], '[client] permission for "client: host_info": refused');
  // An allow option without an id cannot be picked: the answer is cancelled, and said so.
  assert.equal(decisions[14], '[client] permission for "client: host_info": refused');
  assert.equal(run.out.filter((line) => line === "✖ client: host_info refused").length, 4);
});

// ─── Deno's permissions ──────────────────────────────────────────────────────

/** The client's own permissions, as the README lists them (a copier's tool may add more). */
const EXACT = [
  "--allow-run",
  "--allow-read=.",
  "--allow-env=MM_BIN,NO_COLOR,TERM",
  "--allow-sys=osRelease,hostname,cpus,loadavg,systemMemoryInfo,osUptime",
];

/** The permission flags in a command line. */
const flagsOf = (line: string) =>
  line.split(/\s+/).filter((word) => /^(-A|--allow-|--deny-)/.test(word));

/** The names a flag grants (`--allow-env=A,B` → A, B; a bare flag grants everything: `*`). */
const grants = (flags: string[], prefix: string) =>
  flags.filter((flag) => flag.split("=")[0] === prefix)
    .flatMap((flag) => flag.includes("=") ? flag.split("=")[1].split(",") : ["*"]);

Deno.test("permissions: the shebang line and the start, demo, compile and install tasks name the same flags and --no-prompt, never -A", () => {
  const [shebang] = Deno.readTextFileSync(`${ROOT}/client.ts`).split("\n", 1);
  assert.match(shebang, /^#!\/usr\/bin\/env -S deno run --no-prompt /);
  const flags = flagsOf(shebang);
  assert.ok(!flags.includes("-A"), shebang);
  assert.deepEqual(START_PERMISSIONS, flags);
  const tasks = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks;
  for (const name of ["start", "demo", "compile"]) {
    assert.deepEqual(flagsOf(tasks[name]), flags, `${name}: ${tasks[name]}`);
  }
  // A copier's tool that uses a permission it was not given fails; it never stops at a prompt.
  for (const name of ["start", "demo", "compile", "install"]) {
    assert.ok(tasks[name].split(/\s+/).includes("--no-prompt"), `${name}: ${tasks[name]}`);
  }
  // install also reads the project folder, wherever the command is run from.
  const installed = flags.map((flag) =>
    flag.startsWith("--allow-read=") ? flag.replace("=.", "=.,$PWD") : flag
  );
  assert.deepEqual(flagsOf(tasks.install), installed, tasks.install);
});

Deno.test("permissions: the flags grant what the client and host_info use, and as shipped nothing more", () => {
  for (const flag of EXACT) {
    const [prefix, names] = flag.split("=");
    const given = grants(START_PERMISSIONS, prefix);
    for (const name of names?.split(",") ?? ["*"]) {
      assert.ok(given.includes(name), `${flag}: ${name} is not granted by ${START_PERMISSIONS}`);
    }
  }
  // A copier's tools may need more (the README says where to add it); the demo alone does not.
  if (TOOLS.length === 1) assert.deepEqual(START_PERMISSIONS, EXACT);
});

Deno.test("permissions: deno run -A client.ts keeps working", async () => {
  const run = await runClient({ permissions: ["-A"] });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.out.at(-1), "[end_turn]");
});

/** Runs on a terminal that would show a prompt if Deno asked for a permission. */
const WITHOUT_A_PROMPT: {
  name: string;
  args: string[];
  permissions: string[];
  env?: Record<string, string>;
  end: string;
  check(code: number, screen: string): void;
}[] = [
  {
    name:
      "without an --allow-sys name host_info answers an error result naming it and the turn goes on",
    args: ["--mm", MM_SIM],
    permissions: permissionsWith(
      "--allow-sys=",
      "--allow-sys=cpus,loadavg,systemMemoryInfo,osUptime",
    ),
    end: "[end_turn]",
    check(code, screen) {
      assert.equal(code, 0, JSON.stringify(screen));
      assertInOrder(visibleLines(screen), [
        "✖ client: host_info failed",
        "│ [client tool error: host_info needs --allow-sys=osRelease,hostname to report os]",
        RESULT_LINE.memory,
        "[end_turn]",
      ]);
    },
  },
  {
    name: "MM_BIN that cannot be read counts as unset, and the error says so",
    args: [],
    permissions: permissionsWith("--allow-env", null),
    env: { MM_BIN: "/some/where/mm", PATH: PATH_WITHOUT_MM },
    end: "error: ",
    check(code, screen) {
      assert.equal(code, 127, JSON.stringify(screen));
      assert.ok(
        visibleLines(screen).includes(
          "error: cannot start mm (mm): not found; MM_BIN could not be read (add --allow-env=MM_BIN). Install mini-me or set MM_BIN / --mm.",
        ),
        JSON.stringify(screen),
      );
    },
  },
  {
    name: "NO_COLOR that cannot be read counts as unset: colour at a terminal",
    args: ["--mm", MM_SIM, "How big is my disk?"],
    permissions: permissionsWith("--allow-env", null),
    env: { NO_COLOR: "1" },
    end: "[end_turn]",
    check(code, screen) {
      assert.equal(code, 0, JSON.stringify(screen));
      // deno-lint-ignore no-control-regex
      assert.match(screen, /\x1b\[[0-9;]*m✖ client: host_info failed/);
    },
  },
];

Deno.test("permissions: a topic needs every one of its --allow-sys names; either one missing is named", async () => {
  for (const missing of ["osRelease", "hostname"]) {
    const names = ["osRelease", "hostname", "cpus", "loadavg", "systemMemoryInfo", "osUptime"];
    const flag = `--allow-sys=${names.filter((name) => name !== missing).join(",")}`;
    const run = await runClient({
      permissions: permissionsWith("--allow-sys=", flag),
      args: ["Which OS?"],
    });
    assert.equal(run.code, 0, run.stderr);
    assert.ok(
      run.out.includes(
        "│ [client tool error: host_info needs --allow-sys=osRelease,hostname to report os]",
      ),
      `without ${missing}: ${run.stdout}`,
    );
  }
});

for (const { name, args, permissions, env, end, check } of WITHOUT_A_PROMPT) {
  Deno.test({
    name: `permissions: ${name}; Deno never prompts`,
    ignore: !hasScript,
    async fn() {
      const terminal = inTerminal(clientCommand(args, permissions), { env });
      const { code, screen } = await doneWithoutPrompt(terminal, end);
      check(code, screen);
    },
  });
}
