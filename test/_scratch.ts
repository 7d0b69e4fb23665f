/**
 * One scratch folder per test file: every temporary file and folder the tests make, and the
 * stand-in's saved sessions, go under it, and it is removed when the test file is done. Test
 * files may run side by side (`deno test --parallel`), in one process: nothing here changes the
 * process's environment; the processes the tests start are given `TMPDIR` explicitly.
 *
 * @module
 */

/** The scratch folder of this test file. */
export const SCRATCH: string = Deno.makeTempDirSync({
  dir: Deno.env.get("TMPDIR") ?? "/tmp",
  prefix: "host-info-tests-",
});
globalThis.addEventListener("unload", () => Deno.removeSync(SCRATCH, { recursive: true }));

/** A fresh folder in the scratch folder. */
export function scratchDir(prefix = "dir-"): string {
  return Deno.makeTempDirSync({ dir: SCRATCH, prefix });
}

/** A fresh empty file in the scratch folder. */
export function scratchFile(prefix = "file-"): string {
  return Deno.makeTempFileSync({ dir: SCRATCH, prefix });
}
