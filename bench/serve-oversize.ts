// `npm run bench -- serve-oversize [MB...]`: the peak RSS of `rft serve --port` (VmHWM, Linux) after a
// client sends one message of MB megabytes (default 200 and 600) against the default 64 MiB limit;
// the hostile-input round measured 877 MB RSS for 200 MB and no reply at all for 600 MB before the
// limit. Also the time to the error reply and whether the next request on the connection is answered.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, serveArgs } from '../tools/spawn-serve.js';
import { tcpPeer } from '../tools/raw-rpc.js';
import { report } from './report.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
for (const MB of sizes.length ? sizes : [200, 600]) {
  const ws = mkdtempSync(join(tmpdir(), 'rft-bench-oversize-'));
  const child = spawn(process.execPath, serveArgs(['--workspace', ws, '--port', '0']), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const l = await new Promise<{ listening: number; tokenFile: string }>((res) =>
    child.stdout!.once('data', (d) => res(JSON.parse(String(d)))),
  );
  const peak = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
  const p = await tcpPeer(l.listening);
  p.send({ jsonrpc: '2.0', id: 0, method: 'server/auth', params: { token: readFileSync(l.tokenFile, 'utf8').trim() } });
  await p.next();
  const before = peak();
  const body = Buffer.alloc(MB * 2 ** 20, 0x61);
  const t0 = performance.now();
  p.write(`Content-Length: ${body.length}\r\n\r\n`);
  p.write(body);
  const reply = (await p.next(120_000)) as { error?: { code: number } };
  const replyMs = performance.now() - t0;
  p.send({ jsonrpc: '2.0', id: 1, method: 'runs/list', params: {} });
  const next = (await p.next(120_000)) as { result?: unknown };
  report({
    bench: 'serve-oversize',
    figure: `peak_rss_after_${MB}MB_message`,
    unit: 'MiB',
    value: peak(),
    baseline: 'peak_rss_before',
    baseline_value: before,
    reply_code: reply.error?.code ?? null,
    reply_ms: Math.round(replyMs),
    next_request_answered: Array.isArray(next.result),
  });
  p.destroy();
  child.kill();
  await new Promise((r) => child.once('exit', r));
}
process.exit(0);
