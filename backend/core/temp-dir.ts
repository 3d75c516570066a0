// Temp folders this process made and must not leave behind: removed by removeTempDir(), or when the
// process exits without that (an uncaught error, process.exit), since nothing else would ever delete
// them from the system's temp directory (a llama.cpp GGUF there is gigabytes a version).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const open = new Set<string>();
let hooked = false;

/** Best effort: an exit handler that throws would turn a clean exit into a crash. */
function remove(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    /* still in use (a child process writing there): left for the system's temp cleaning */
  }
}

/** A new folder `<tmpdir>/<prefix>XXXXXX`, removed at the latest when this process exits. */
export function tempDirUntilExit(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  open.add(dir);
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const d of open) remove(d);
    });
  }
  return dir;
}

/** Removes a folder made by tempDirUntilExit now (an error here is the caller's to see). */
export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  open.delete(dir);
}
