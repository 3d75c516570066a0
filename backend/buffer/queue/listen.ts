// LISTEN for published checkpoints on a dedicated connection that reconnects by itself: after a
// server restart, and after a network cut (a health probe with a timeout notices a dead link that
// TCP alone would report only many minutes later). Notifications sent while disconnected are lost,
// so callers also poll the newest version now and then; the notification only makes it prompt.
import pg from 'pg';
import { WEIGHTS_CHANNEL } from './schema.js';

export class WeightsListener {
  private client: pg.Client | null = null;
  private closed = false;
  private probe: NodeJS.Timeout | null = null;
  private delay = 200;

  constructor(
    private readonly connectionString: string,
    private readonly schema: string,
    private readonly runId: string,
    private readonly onVersion: (version: number) => void,
    private readonly onState: (connected: boolean) => void = () => undefined,
  ) {}

  start(): void {
    void this.connect();
    this.probe = setInterval(() => void this.check(), 3000);
    this.probe.unref();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const c = new pg.Client({
      connectionString: this.connectionString,
      query_timeout: 3000,
      connectionTimeoutMillis: 3000,
      keepAlive: true,
    });
    c.on('error', () => this.drop(c));
    c.on('end', () => this.drop(c));
    c.on('notification', (n) => {
      try {
        const p = JSON.parse(n.payload ?? '{}') as { schema?: string; run?: string; version?: number };
        if (p.schema === this.schema && p.run === this.runId && typeof p.version === 'number')
          this.onVersion(p.version);
      } catch {
        // not ours
      }
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${WEIGHTS_CHANNEL}`);
      if (this.closed) return void c.end().catch(() => undefined);
      this.client = c;
      this.delay = 200;
      this.onState(true);
    } catch {
      c.end().catch(() => undefined);
      this.retry();
    }
  }

  private drop(c: pg.Client): void {
    if (this.client !== c) return;
    this.client = null;
    this.onState(false);
    c.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    if (this.closed) return;
    const t = setTimeout(() => void this.connect(), this.delay);
    t.unref();
    this.delay = Math.min(this.delay * 2, 2000);
  }

  private async check(): Promise<void> {
    const c = this.client;
    if (!c) return;
    try {
      await c.query('SELECT 1');
    } catch {
      this.drop(c);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.probe) clearInterval(this.probe);
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }
}
