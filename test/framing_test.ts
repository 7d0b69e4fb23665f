/**
 * The client's framing, pure: `LineReader` splits mm's bytes into lines whatever the chunks, within
 * its line limit; `parseFrame` classifies each line and answers the bad ones as JSON-RPC says.
 */

import assert from "./_assert.ts";
import { ClientError, LineReader, LineTooLongError, parseFrame, RpcError } from "../client.ts";

/** A recorded exchange with multibyte text, CRLF endings and blank lines. */
const TRANSCRIPT = [
  '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\n',
  '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"20261110-230430-6df8f9dd"}}\r\n',
  "\n",
  "   \r\n",
  '{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Déjà vu — 8 × 🚀 in 日本語"}}}}\n',
  '{"jsonrpc":"2.0","id":7,"method":"_demo.minime/host_info","params":{"topic":"os"}}\r\n',
  '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}',
].join("");
const BYTES = new TextEncoder().encode(TRANSCRIPT);

/** The lines, split the obvious way, for comparison. */
const EXPECTED = TRANSCRIPT.split("\n").map((line) => line.replace(/\r$/, ""));

function readAll(chunks: Uint8Array[]): string[] {
  const reader = new LineReader();
  const lines: string[] = [];
  for (const chunk of chunks) lines.push(...reader.push(chunk));
  const last = reader.flush();
  if (last !== undefined) lines.push(last);
  return lines;
}

/** Asserts that two lists of lines are the same (cheaply: lines never hold a line end). */
function assertSameLines(actual: string[], expected: string[], message: string): void {
  if (actual.length !== expected.length || actual.join("\n") !== expected.join("\n")) {
    assert.deepEqual(actual, expected, message);
  }
}

Deno.test("framing: every split point of a transcript gives the same lines", () => {
  for (let at = 0; at <= BYTES.length; at++) {
    assert.deepEqual(
      readAll([BYTES.subarray(0, at), BYTES.subarray(at)]),
      EXPECTED,
      `split at ${at}`,
    );
  }
});

Deno.test("framing: a transcript fed one byte at a time gives the same lines", () => {
  const bytes = [...BYTES].map((b) => Uint8Array.of(b));
  assert.deepEqual(readAll(bytes), EXPECTED);
});

/** A small reproducible generator, so a failing chunking can be replayed. */
function mulberry32(state: number): () => number {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("framing: 200 reproducible random chunkings, half in chunks of 1 to 64 B and half up to 64 KiB, give the same lines", () => {
  // Small chunks over a transcript of 50 copies (some 23 KB), large ones over 400 copies (some
  // 180 KB, several 64 KiB chunks): every round splits lines, line ends and characters somewhere.
  const random = mulberry32(20261130);
  for (const [copies, widest] of [[50, 64], [400, 65536]]) {
    const long = new TextEncoder().encode(`${TRANSCRIPT}\n`.repeat(copies));
    const expected = readAll([long]);
    assert.equal(expected.length, 7 * copies);
    for (let round = 0; round < 100; round++) {
      const largest = 1 + Math.floor(random() * widest);
      const chunks: Uint8Array[] = [];
      for (let at = 0; at < long.length;) {
        const size = 1 + Math.floor(random() * largest);
        chunks.push(long.subarray(at, at + size));
        at += size;
      }
      assertSameLines(
        readAll(chunks),
        expected,
        `${copies} copies, round ${round}, chunks up to ${largest} B`,
      );
    }
  }
});

Deno.test("framing: LineReader takes a line of exactly its limit, \\n or \\r\\n ended, at every split point", () => {
  for (const end of ["\n", "\r\n"]) {
    const bytes = new TextEncoder().encode(`${"x".repeat(16)}${end}`);
    for (let at = 0; at <= bytes.length; at++) {
      const reader = new LineReader(16);
      const lines = [...reader.push(bytes.subarray(0, at)), ...reader.push(bytes.subarray(at))];
      assert.deepEqual(lines, ["x".repeat(16)], `${JSON.stringify(end)} split at ${at}`);
    }
  }
});

Deno.test("framing: LineReader refuses a line one byte over its limit, \\n or \\r\\n ended or not ended", () => {
  for (const end of ["\n", "\r\n", "\r", ""]) {
    const bytes = new TextEncoder().encode(`${"x".repeat(17)}${end}`);
    for (let at = 0; at <= bytes.length; at++) {
      const reader = new LineReader(16);
      assert.throws(
        () => [...reader.push(bytes.subarray(0, at)), ...reader.push(bytes.subarray(at))],
        LineTooLongError,
        `${JSON.stringify(end)} split at ${at}`,
      );
    }
  }
  // A \r that is not the start of the line's end counts like any other byte.
  assert.throws(
    () => [...new LineReader(16).push(new TextEncoder().encode(`${"x".repeat(16)}\rx\n`))],
  );
});

Deno.test("framing: the errors a program may meet uncaught say their own class's name, as a stack trace prints it", () => {
  const tooLong = new LineTooLongError(16);
  assert.equal(String(tooLong), "LineTooLongError: a line longer than 16 bytes");
  assert.equal(String(new RpcError(-32601, "Method not found")), "RpcError: Method not found");
  assert.equal(String(new ClientError("mm exited", 1)), "ClientError: mm exited");
});

Deno.test("framing: LineReader's default line limit is 32 MiB, as in the official SDK", () => {
  assert.equal(new LineReader().limit, 32 * 1024 * 1024);
});

Deno.test("framing: parseFrame classifies requests, notifications and responses", () => {
  assert.deepEqual(parseFrame('{"jsonrpc":"2.0","id":3,"method":"m","params":{"a":1}}'), {
    kind: "request",
    id: 3,
    method: "m",
    params: { a: 1 },
  });
  assert.deepEqual(parseFrame('{"jsonrpc":"2.0","method":"n"}'), {
    kind: "notification",
    method: "n",
    params: undefined,
  });
  assert.deepEqual(parseFrame('{"jsonrpc":"2.0","id":"x","result":null}'), {
    kind: "response",
    id: "x",
    result: null,
    error: undefined,
  });
  assert.equal(parseFrame(" \t ").kind, "blank");
});

Deno.test("framing: parseFrame answers a line that is not JSON with -32700 and id null", () => {
  assert.deepEqual(parseFrame("{oops"), {
    kind: "bad",
    reply: { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } },
  });
});

Deno.test("framing: parseFrame answers a batch, a non-object or an object of no kind with -32600", () => {
  for (const line of ["[1,2]", "[]", "42", "null", '"text"', "true"]) {
    assert.deepEqual(parseFrame(line), {
      kind: "bad",
      reply: { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request" } },
    }, line);
  }
  assert.deepEqual(parseFrame('{"jsonrpc":"2.0","id":4}'), {
    kind: "bad",
    reply: { jsonrpc: "2.0", id: 4, error: { code: -32600, message: "Invalid Request" } },
  });
  assert.equal(parseFrame('{"jsonrpc":"2.0","id":{},"method":"m"}').kind, "bad");
});
