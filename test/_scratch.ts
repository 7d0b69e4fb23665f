/**
 * One scratch folder per test file: every temporary file and folder the tests
 * make, and the stand-in's saved sessions, go under it (`TMPDIR` points
 * there, for this process and the processes it starts), and it is removed
 * when the test file is done.
 *
 * @module
 */

// The system's own temp folder, remembered before any test file changes TMPDIR.
const base = Deno.env.get("HOST_INFO_TESTS_TMP") ?? Deno.env.get("TMPDIR") ?? "/tmp";
Deno.env.set("HOST_INFO_TESTS_TMP", base);

/** The scratch folder of this test file. */
export const SCRATCH: string = Deno.makeTempDirSync({ dir: base, prefix: "host-info-tests-" });
Deno.env.set("TMPDIR", SCRATCH);
globalThis.addEventListener("unload", () => Deno.removeSync(SCRATCH, { recursive: true }));
