/**
 * Starts the benchmark agent as a client starts mm (`mm -acp -agent FILE`), its stdin and stdout
 * piped for the client, its stderr passed through.
 *
 * @module
 */

/** The agent `mm` with the agent file `agentFile`, started. */
export function startAgent(mm: string, agentFile: string): Deno.ChildProcess {
  return new Deno.Command(mm, {
    args: ["-acp", "-agent", agentFile],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}
