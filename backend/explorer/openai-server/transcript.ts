// Whether a call continues its episode: its messages are the previous call's messages, then the
// reply the server gave (as the client echoes it back), then anything new. Compared by meaning, not
// by bytes: tool-call ids and JSON spacing of arguments may differ.
import { isDeepStrictEqual } from 'node:util';
import type { ApiMessage, ApiToolCall } from './request.js';

function args(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function sameCalls(a: ApiToolCall[] | undefined, b: ApiToolCall[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return (
    x.length === y.length &&
    x.every(
      (c, i) =>
        c.function.name === y[i]!.function.name &&
        isDeepStrictEqual(args(c.function.arguments), args(y[i]!.function.arguments)),
    )
  );
}

export function sameMessage(a: ApiMessage, b: ApiMessage): boolean {
  return (
    a.role === b.role &&
    a.content === b.content &&
    sameCalls(a.tool_calls, b.tool_calls) &&
    (a.role !== 'tool' || a.tool_call_id === b.tool_call_id || a.tool_call_id === undefined)
  );
}

/** True when NEXT starts with PREV (every message the same) and adds at least one message. */
export function extendsTranscript(prev: ApiMessage[], next: ApiMessage[]): boolean {
  return next.length > prev.length && prev.every((m, i) => sameMessage(m, next[i]!));
}
