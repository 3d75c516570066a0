// Server-sent events as OpenAI streams them: `data: JSON\n\n` per chunk, `data: [DONE]\n\n` last.
// A client that disconnects mid-stream stops the writes; its rows leave the decode batch (routes.ts).
import type { ServerResponse } from 'node:http';

export class SseWriter {
  private closed = false;

  constructor(private readonly res: ServerResponse) {
    res.on('close', () => (this.closed = true));
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
  }

  /** True once the client went away (the rest of the stream is dropped). */
  get gone(): boolean {
    return this.closed || this.res.destroyed;
  }

  send(obj: unknown): void {
    if (!this.gone) this.res.write(`data: ${JSON.stringify(obj)}\n\n`);
  }

  /** The last event: `[DONE]`, then the end of the response. */
  done(): void {
    if (!this.gone) this.res.end('data: [DONE]\n\n');
  }
}
