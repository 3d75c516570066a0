// The shared storage suite on PostgreSQL: RFT_TEST_PG_URL, or a throwaway server from scripts/pg-test-server.sh.
// Under CI the server must start (the suite fails otherwise); locally without PostgreSQL it is skipped with the reason.
import { after, describe, test } from 'node:test';
import { pgSchemaUrl, startPg } from './storage-helpers.js';
import { storageSuite } from './storage-suite.js';

const pg = startPg();
if ('skip' in pg) {
  describe('storage: postgres', () => {
    test('PostgreSQL unavailable', { skip: pg.skip }, () => undefined);
  });
} else {
  after(() => pg.stop());
  storageSuite('postgres', () => ({ freshUrl: () => pgSchemaUrl(pg.url) }));
}
