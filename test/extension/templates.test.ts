// Every domain template the "New Taskset" command writes passes the backend's taskset validator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTaskset } from '../../backend/buffer/taskset/load.js';
import { DOMAINS, tasksetTemplate } from '../../src/templates.js';

for (const { domain } of DOMAINS) {
  test(`the ${domain} template is a valid taskset`, () => {
    const text = tasksetTemplate(domain);
    const r = parseTaskset(text, `tasksets/${domain}.jsonl`);
    assert.deepEqual(r.errors, []);
    assert.equal(r.tasks.length, text.trim().split('\n').length);
    assert.ok(r.tasks.every((t) => t.domain === domain));
  });
}
