/**
 * The reference the benchmark measures `client.ts` against: the same job —
 * start mm, offer host_info, ask, answer mm's calls and permissions, show the
 * answer — written the way the official SDK's client-side API suggests.
 * The tool itself (host_info's entry in `TOOLS`, the check of its arguments)
 * is shared with `client.ts`, so only the protocol machinery differs.
 *
 * @module
 */

import * as acp from "@agentclientprotocol/sdk";
import {
  checkArguments,
  decide,
  describeTools,
  initializeParams,
  readToolCall,
  TOOLS,
  toolText,
} from "../../client.ts";
import { startAgent } from "./_agent.ts";

const [mm, agentFile] = Deno.args;
const question = Deno.args[2] ?? "How much memory?";
const child = startAgent(mm, agentFile);

const encoder = new TextEncoder();
const write = (text: string) => Deno.stdout.writeSync(encoder.encode(text));
const log = (text: string) => Deno.stderr.writeSync(encoder.encode(`[client] ${text}\n`));
const anything = (params: unknown) => params;
const [hostInfo] = TOOLS;

const app = acp.client({ name: "sdk-reference" })
  .onRequest("_demo.minime/host_info", anything, ({ params }) => {
    const { args, sessionId } = readToolCall(params);
    log(`host_info ${JSON.stringify(args)} (session ${sessionId})`);
    const given = args as Record<string, unknown>;
    const mismatch = checkArguments(hostInfo, given);
    if (mismatch) return toolText(mismatch, true);
    return hostInfo.call(given, new AbortController().signal);
  })
  .onRequest("_org.mini-me/tools/list", anything, ({ params }) => {
    log(`list requested for session ${(params as Record<string, unknown>)?.sessionId}`);
    return { tools: describeTools(TOOLS) };
  })
  .onRequest("session/request_permission", ({ params }) => {
    const title = params.toolCall.title ?? undefined;
    const allow = decide({ title, toolCall: {}, options: [] }, TOOLS) === "allow";
    const option = params.options.find((o) => o.kind === (allow ? "allow_once" : "reject_once"));
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  })
  .onNotification("session/update", ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      write(update.content.text);
    }
  });

const stream = acp.ndJsonStream(child.stdin, child.stdout);
const stopReason = await app.connectWith(stream, async (agent) => {
  await agent.request(
    "initialize",
    initializeParams("meta", TOOLS) as unknown as acp.InitializeRequest,
  );
  const session = await agent.request("session/new", { cwd: Deno.cwd(), mcpServers: [] });
  write(`❓ ${question}\n`);
  const answer = await agent.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: question }],
  });
  return answer.stopReason;
});
write(`\n[${stopReason}]\n`);
await child.stdin.close().catch(() => {});
await child.status;
