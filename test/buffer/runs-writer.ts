// A separate writer process for the run-registry concurrency test: creates N runs in a workspace,
// each with a status change and a checkpoint, as the coordinator, the trainer and `rft serve` do.
import { RunRegistry } from '../../backend/buffer/runs.js';

const [ws, tag, n] = process.argv.slice(2) as [string, string, string];
const reg = await RunRegistry.open(ws);
for (let i = 0; i < Number(n); i++) {
  const r = await reg.create({ name: `${tag}-${i}`, config: {}, id: `${tag}-${i}` });
  await reg.setStatus(r.id, 'running');
  await reg.addCheckpoint(r.id, { version: 1, path: `ck/${r.id}`, step: i });
}
