// The shared storage suite on SQLite (a fresh file per test).
import { mkdtempSync, rmSync } from 'node:fs';
import { after } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storageSuite } from './storage-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
storageSuite('sqlite', () => ({ freshUrl: () => join(dir, `b${n++}`, 'buffer.db') }));
