/**
 * The client's framer against the official SDK's `ndJsonStream` reader, on
 * the same bytes through the same kind of stream: many small frames, many
 * medium ones, and one 16 MiB frame in 64 KiB chunks. `deno bench` prints
 * each group's ratio to the SDK baseline.
 *
 * @module
 */

import { ndJsonStream } from "@agentclientprotocol/sdk";
import { LineReader, parseFrame } from "../../client.ts";

const encoder = new TextEncoder();

function frame(id: number, textLength: number): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "_demo.minime/host_info",
    params: { topic: "os", note: "é".repeat(textLength / 4) + "x".repeat(textLength / 2) },
  }) + "\n";
}

/** `count` frames of about `size` bytes, cut into chunks of `chunk` bytes. */
function input(count: number, size: number, chunk: number): Uint8Array[] {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) lines.push(frame(i, size - 90));
  const bytes = encoder.encode(lines.join(""));
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += chunk) chunks.push(bytes.subarray(at, at + chunk));
  return chunks;
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at < chunks.length) controller.enqueue(chunks[at++]);
      else controller.close();
    },
  });
}

async function clientReads(chunks: Uint8Array[]): Promise<number> {
  const reader = new LineReader();
  let frames = 0;
  for await (const chunk of streamOf(chunks)) {
    for (const line of reader.push(chunk)) if (parseFrame(line).kind !== "blank") frames++;
  }
  return frames;
}

async function sdkReads(chunks: Uint8Array[]): Promise<number> {
  const { readable } = ndJsonStream(new WritableStream(), streamOf(chunks));
  let frames = 0;
  for await (const _ of readable) frames++;
  return frames;
}

const cases = {
  "small frames (200 B × 10,000)": input(10_000, 200, 65536),
  "medium frames (4 KiB × 1,000)": input(1_000, 4096, 65536),
  "one 16 MiB frame in 64 KiB chunks": input(1, 16 * 1024 * 1024, 65536),
};

for (const [group, chunks] of Object.entries(cases)) {
  const expected = await clientReads(chunks);
  if (expected !== (await sdkReads(chunks))) throw new Error(`${group}: the readers disagree`);
  Deno.bench({
    name: "SDK ndJsonStream",
    group,
    baseline: true,
    n: 30,
    warmup: 5,
    fn: async () => void await sdkReads(chunks),
  });
  Deno.bench({
    name: "client LineReader + parseFrame",
    group,
    n: 30,
    warmup: 5,
    fn: async () => void await clientReads(chunks),
  });
}
