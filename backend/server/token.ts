// The TCP server's token: random per server start, written to a file only the user can read (0600)
// that the extension (or the user, for a remote editor) reads and sends in `server/auth`.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

export function makeToken(): string {
  return randomBytes(32).toString('base64url');
}

/** `<workspace>/.rft/serve-<port>.token`: where the extension looks for the token of a local server. */
export function defaultTokenFile(workspace: string, port: number): string {
  return join(workspace, '.rft', `serve-${port}.token`);
}

/** Writes the token to a new file with mode 0600 (never through a link, never into an existing file). */
export function writeTokenFile(file: string, token: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  try {
    unlinkSync(file); // left by a server that was killed on this port
  } catch {
    // none
  }
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, token + '\n');
  } finally {
    closeSync(fd);
  }
}

export function removeTokenFile(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|::1|::ffff:127(\.\d{1,3}){3})$/i;
export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host.replace(/^\[|\]$/g, ''));
}
