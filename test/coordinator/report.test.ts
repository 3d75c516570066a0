// The HTML report (issue 28 finding 7): wall_seconds covers every resumed segment (was: the last
// segment only, 207 s of a 12-minute run), and the losses chart shows what the dashboard shows
// (total, policy, SFT) with their latest values (was: grpo_loss, flat 0 beside the dashboard's policy 0.44).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSeconds, writeReport, type MetricRecord } from '../../backend/coordinator/monitor.js';

const S = 1000;
const recs: MetricRecord[] = [
  { t: 0, kind: 'segment', resumed: false },
  { t: 10 * S, kind: 'train', step: 0, loss: 0.5, policy_loss: 0.44, grpo_loss: 0.0001, sft_loss: 1.2 },
  { t: 200 * S, kind: 'train', step: 1, loss: 0.45, policy_loss: 0.4, grpo_loss: -0.0002, sft_loss: 1.1 },
  // stopped for 300 s, then resumed
  { t: 500 * S, kind: 'segment', resumed: true },
  { t: 600 * S, kind: 'train', step: 2, loss: 0.42, policy_loss: 0.38, grpo_loss: 0.0, sft_loss: 1.0 },
];

test('runSeconds: the running time of every segment, not the gaps between them', () => {
  assert.deepEqual(runSeconds(recs, 700 * S), { seconds: 200 + 200, segments: 2 });
  // A run from before segment records: one segment from its first record.
  assert.deepEqual(runSeconds(recs.slice(1, 3), 250 * S), { seconds: 240, segments: 1 });
  assert.deepEqual(runSeconds([], 1), { seconds: 0, segments: 0 });
});

test("the report's losses are the dashboard's series with their latest values", () => {
  const file = join(mkdtempSync(join(tmpdir(), 'rft-report-')), 'report.html');
  writeReport(file, 'run', recs, { wall_seconds: runSeconds(recs, 700 * S).seconds });
  const html = readFileSync(file, 'utf8');
  assert.match(html, /<th>wall_seconds<\/th><td>400<\/td>/);
  const names = [...html.matchAll(/font-size="11">([^<]+)<\/text>/g)].map((m) => m[1]);
  assert.deepEqual(names, ['total (last 0.42)', 'policy (last 0.38)', 'SFT (last 1)']);
});
