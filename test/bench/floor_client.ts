/**
 * The floor of the end-to-end benchmark: the least a client can do — canned
 * answers to the handshake, and for each call a canned result with the id
 * copied in. No parsing beyond finding the id; no tool run.
 *
 * @module
 */

import { startAgent } from "./_agent.ts";

const [mm, agentFile] = Deno.args;
const child = startAgent(mm, agentFile);
const writer = child.stdin.getWriter();
const encoder = new TextEncoder();
const send = (line: string) => writer.write(encoder.encode(`${line}\n`));

send('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}');
const decoder = new TextDecoder();
let buffer = "";
outer: for await (const chunk of child.stdout) {
  buffer += decoder.decode(chunk, { stream: true });
  let end;
  while ((end = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    if (line.includes('"method":"_demo.minime/host_info"')) {
      const id = line.match(/"id":(\d+)/)![1];
      send(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"Linux"}]}}`);
    } else if (line.startsWith('{"jsonrpc":"2.0","id":0,"result"')) {
      send('{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}');
    } else if (line.startsWith('{"jsonrpc":"2.0","id":1,"result"')) {
      const session = line.match(/"sessionId":"([^"]+)"/)![1];
      send(
        `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"${session}","prompt":[{"type":"text","text":"q"}]}}`,
      );
    } else if (line.startsWith('{"jsonrpc":"2.0","id":2,"result"')) break outer;
  }
}
await writer.close().catch(() => {});
await child.status;
