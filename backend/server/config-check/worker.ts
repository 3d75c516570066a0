// The config thread's entry (thread.ts): parses and checks config texts, one message at a time.
import { parentPort } from 'node:worker_threads';
import { checkConfigText } from './checks.js';

parentPort!.on('message', (m: { id: number; text: string; file: string }) => {
  try {
    parentPort!.postMessage({ id: m.id, result: checkConfigText(m.text, m.file) });
  } catch (e) {
    parentPort!.postMessage({ id: m.id, error: (e as Error).message });
  }
});
