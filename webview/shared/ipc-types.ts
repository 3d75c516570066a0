// Envelope of the messages between a webview and the extension host: requests carry an id and get
// one response; notifications have none. Each webview's protocol.ts fills in the method maps.
/** A map method -> { params, result }; interfaces satisfy it without an index signature. */
export type RequestMap<R> = { [K in keyof R]: { params: unknown; result: unknown } };

export type WebviewMessage = { kind: 'request'; id: number; method: string; params: unknown } | { kind: 'ready' };

export type HostMessage =
  | { kind: 'response'; id: number; result?: unknown; error?: { message: string; code?: number } }
  | { kind: 'notification'; method: string; params: unknown };
