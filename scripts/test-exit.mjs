// Preloaded into every test file's process by scripts/test.mjs (`--import`): once a file's tests have
// ended, the file exits within EXIT_GRACE_MS even if something it started (a timer, a socket, a child's
// pipe) is still open, instead of holding the suite until CI's time limit. This replaces node's
// --test-force-exit, which exits at once and can drop the tail of a file's results before they reach
// the parent: the suite then reports fewer tests, all passing, and exits 0 (nodejs/node#64833; seen
// here: the last 9 tests of unread-fields.test.ts missing from a CI run that said "fail 0").
import { after } from 'node:test';
import { basename } from 'node:path';

// Registered first, this hook runs before the file's own root `after` hooks (cleanup that may take
// seconds: a code-server, a database): the grace covers them.
const EXIT_GRACE_MS = 15_000;

after(() => {
  // Unref'd: a file with nothing left open exits at once, as before; the grace only runs out on a stuck one.
  setTimeout(() => {
    process.stderr.write(
      `test-exit: ${basename(process.argv[1] ?? '')}: still running ${EXIT_GRACE_MS / 1000} s after its tests ended (something left open); exiting\n`,
    );
    process.exit(process.exitCode ?? 0);
  }, EXIT_GRACE_MS).unref();
});
