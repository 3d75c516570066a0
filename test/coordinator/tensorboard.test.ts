// TensorBoard event files (issue 44 item 3): TFRecord framing with masked CRC-32C (checked against the
// CRC-32C test vectors of RFC 3720 B.4), the Event / Summary fields TensorBoard reads, and a run that
// writes them in each placement's own process, with its config as text and a restart on resume.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32c, EventFileWriter, maskedCrc32c, recordScalars } from '../../backend/coordinator/tensorboard.js';
import { runJob } from '../../backend/coordinator/run.js';
import { tempWorkspace, tinyConfig } from './tiny-config.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { runInfo } from '../../backend/server/adapters/run-registry.js';

test('CRC-32C: the check value and RFC 3720 B.4 vectors', () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
  assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c);
  // The mask: rotate right 15, add 0xa282ead8 (TFRecord's crc32c::Mask).
  const c = crc32c(Buffer.from('123456789'));
  assert.equal(maskedCrc32c(Buffer.from('123456789')), ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0);
});

// ---- a reader written from the format's description, independent of the writer's encoders ----
type Fields = Map<number, (bigint | Buffer)[]>;
function decode(buf: Buffer): Fields {
  const out: Fields = new Map();
  let i = 0;
  const vint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < buf.length) {
    const k = Number(vint());
    const [field, wire] = [k >>> 3, k & 7];
    let v: bigint | Buffer;
    if (wire === 0) v = vint();
    else if (wire === 1) v = buf.subarray(i, (i += 8));
    else if (wire === 5) v = buf.subarray(i, (i += 4));
    else if (wire === 2) {
      const n = Number(vint());
      v = buf.subarray(i, (i += n));
    } else throw new Error(`wire type ${wire} at ${i}`);
    out.set(field, [...(out.get(field) ?? []), v]);
  }
  return out;
}
const one = (f: Fields, n: number) => f.get(n)?.[0];
const str = (f: Fields, n: number) => (one(f, n) as Buffer | undefined)?.toString('utf8');

interface Ev {
  wall: number;
  step: number;
  version?: string;
  scalars: Record<string, number>;
  text?: { tag: string; plugin: string; dtype: number; value: string };
  sessionStatus?: number;
}

/** Every record of an event file, its framing and both CRCs checked. */
function readEvents(file: string): Ev[] {
  const b = readFileSync(file);
  const out: Ev[] = [];
  let o = 0;
  while (o < b.length) {
    const len = Number(b.readBigUInt64LE(o));
    assert.equal(b.readUInt32LE(o + 8), maskedCrc32c(b.subarray(o, o + 8)), `length CRC at ${o}`);
    const data = b.subarray(o + 12, o + 12 + len);
    assert.equal(b.readUInt32LE(o + 12 + len), maskedCrc32c(data), `data CRC at ${o}`);
    o += 16 + len;
    const e = decode(data);
    const ev: Ev = { wall: (one(e, 1) as Buffer).readDoubleLE(), step: Number(one(e, 2) ?? 0n), scalars: {} };
    if (e.has(3)) ev.version = str(e, 3);
    if (e.has(7)) ev.sessionStatus = Number(one(decode(one(e, 7) as Buffer), 1));
    if (e.has(5)) {
      for (const vb of decode(one(e, 5) as Buffer).get(1) ?? []) {
        const v = decode(vb as Buffer);
        const tag = str(v, 1)!;
        if (v.has(2)) ev.scalars[tag] = (one(v, 2) as Buffer).readFloatLE();
        if (v.has(8)) {
          const t = decode(one(v, 8) as Buffer);
          const plugin = str(decode(one(decode(one(v, 9) as Buffer), 1) as Buffer), 1)!;
          ev.text = { tag, plugin, dtype: Number(one(t, 1)), value: str(t, 8)! };
        }
      }
    }
    out.push(ev);
  }
  assert.equal(o, b.length, 'no trailing bytes');
  return out;
}

test('an event file: the version record first, scalars at their step, text as the text plugin reads it, a restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tb-'));
  try {
    const w = new EventFileWriter(dir, 'trainer');
    assert.match(w.file, /events\.out\.tfevents\.\d+\..+\.\d+\.trainer$/);
    w.scalars(3, [
      ['train/loss', 0.25],
      ['train/lr', 1e-4],
    ]);
    w.text(0, 'config', '```yaml\nname: x\n```');
    w.restartAt(7);
    // A second writer of this process in the same second (a run resumed at once) gets a file of its own.
    const again = [new EventFileWriter(dir, 'trainer'), new EventFileWriter(dir, 'trainer')];
    assert.equal(new Set([w.file, ...again.map((a) => a.file)]).size, 3);
    assert.equal(readEvents(w.file).length, 4);
    const ev = readEvents(w.file);
    assert.equal(ev.length, 4);
    assert.equal(ev[0]!.version, 'brain.Event:2');
    assert.equal(ev[1]!.step, 3);
    assert.equal(ev[1]!.scalars['train/loss'], 0.25);
    assert.equal(ev[1]!.scalars['train/lr'], Math.fround(1e-4));
    assert.ok(Math.abs(ev[1]!.wall - Date.now() / 1000) < 60, 'wall time in seconds');
    assert.deepEqual(ev[2]!.text, { tag: 'config', plugin: 'text', dtype: 7, value: '```yaml\nname: x\n```' });
    assert.deepEqual([ev[3]!.step, ev[3]!.sessionStatus], [7, 1]);
    // A second writer in the same folder makes its own file; it never appends to another's.
    const w2 = new EventFileWriter(dir, 'explorer');
    assert.notEqual(w2.file, w.file);
    assert.equal(readdirSync(dir).length, 4);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('recordScalars: finite numbers and booleans of a metrics record, tagged KIND/FIELD; ids and x axes are not series', () => {
  assert.deepEqual(
    recordScalars({
      t: 1,
      kind: 'train',
      stage: 'mix',
      step: 4,
      model_version: 5,
      loss: 0.5,
      kl: Number.NaN,
      starved: true,
      rollout: { workers: 2 },
      note: 'x',
    }),
    [
      ['train/loss', 0.5],
      ['train/starved', 1],
    ],
  );
});

function eventFiles(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('events.out.tfevents.')) : [];
}

test('a run writes its metrics as TensorBoard events by default (every train step, explore, eval, the config), one file per process; resume restarts at its checkpoint step', async () => {
  const ws = tempWorkspace();
  try {
    const cfg = tinyConfig({ sync_offset: 0 }, 3);
    cfg.placement = 'memory';
    // Stopped after a few train steps, then resumed.
    const ac = new AbortController();
    const runDir = join(ws, '.rft', 'runs', 'tb1');
    const watcher = setInterval(() => {
      const f = join(runDir, 'metrics.jsonl');
      if (existsSync(f) && readFileSync(f, 'utf8').split('"kind":"train"').length > 3) ac.abort();
    }, 20);
    const s = await runJob({ config: cfg, workspace: ws, runId: 'tb1', checkpointEvery: 1, signal: ac.signal }).finally(
      () => clearInterval(watcher),
    );
    assert.ok(s.trainer_steps >= 2 && s.trainer_steps < 5, `stopped mid-run at ${s.trainer_steps}`);
    const dir = join(s.run_dir, 'tensorboard');
    const files = eventFiles(dir);
    assert.equal(files.length, 1, 'one process, one file');
    const ev = readEvents(join(dir, files[0]!));
    const metrics = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const trainSteps = metrics.filter((r) => r.kind === 'train').map((r) => r.step);
    const withLoss = ev.filter((e) => 'train/loss' in e.scalars).map((e) => e.step);
    assert.deepEqual(withLoss, trainSteps, 'every train step, at its step');
    const lastTrain = metrics.filter((r) => r.kind === 'train').at(-1)!;
    const lastEv = ev.filter((e) => 'train/loss' in e.scalars).at(-1)!;
    assert.equal(lastEv.scalars['train/loss'], Math.fround(lastTrain.loss as number));
    assert.equal(lastEv.scalars['train/lr'], Math.fround(lastTrain.lr as number));
    assert.ok(
      ev.some((e) => 'eval/accuracy' in e.scalars),
      'held-out accuracy',
    );
    // The views learn the folder from the run's record (Open in TensorBoard).
    const rec = (await (await RunRegistry.open(ws)).get('tb1'))!;
    assert.equal(runInfo(rec).tensorboardDir, dir);
    const config = ev.find((e) => e.text?.tag === 'config');
    assert.match(config!.text!.value, /^```yaml\n[\s\S]*name: tiny[\s\S]*```$/);

    // The resume: a second file, which starts with a restart at the checkpoint's step (TensorBoard then
    // drops the first file's events from that step on: they are trained again).
    const resumed = await runJob({ resume: 'tb1', workspace: ws });
    assert.equal(resumed.trainer_steps, 5);
    const after = eventFiles(dir);
    assert.equal(after.length, 2);
    const newer = readEvents(join(dir, after.find((f) => !files.includes(f))!));
    assert.equal(newer[1]!.sessionStatus, 1, 'a SessionLog START after the version record');
    assert.ok(newer[1]!.step >= 1 && newer[1]!.step <= s.trainer_steps, `restart at ${newer[1]!.step}`);
    assert.ok(
      newer.some((e) => 'explore/reward_mean' in e.scalars),
      'explorer rewards (the MIX stage explores)',
    );
    const all = [...ev, ...newer].filter((e) => 'train/loss' in e.scalars).map((e) => e.step);
    assert.ok(all.includes(4), 'the last step');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('monitor.tensorboard: a folder holds one subfolder per run; false writes none', async () => {
  const ws = tempWorkspace();
  try {
    const tbRoot = join(ws, 'tb');
    for (const [id, setting] of [
      ['a', tbRoot],
      ['b', tbRoot],
      ['c', false],
    ] as const) {
      const cfg = tinyConfig({ sync_offset: 0 }, 1);
      cfg.placement = 'memory';
      cfg.stages = cfg.stages!.slice(0, 1);
      cfg.monitor.tensorboard = setting;
      const s = await runJob({ config: cfg, workspace: ws, runId: id });
      assert.equal(eventFiles(join(s.run_dir, 'tensorboard')).length, 0, `${id}: nothing under the run folder`);
    }
    assert.deepEqual(readdirSync(tbRoot).sort(), ['a', 'b']);
    const reg = await RunRegistry.open(ws);
    assert.equal(runInfo((await reg.get('a'))!).tensorboardDir, join(tbRoot, 'a'));
    assert.equal(runInfo((await reg.get('c'))!).tensorboardDir, undefined);
    assert.equal(eventFiles(join(tbRoot, 'a')).length, 1);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
