// A write that failed for lack of room (ENOSPC, or EDQUOT: over the user's quota) stops the run with
// one clear line naming where, instead of a raw stack; the run is marked failed and can be resumed
// from its last checkpoint once there is room (coordinator/run.ts).
import { InfrastructureError } from './errors.js';

export function isDiskFull(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

export class DiskFullError extends InfrastructureError {
  constructor(
    readonly path: string,
    cause?: unknown,
  ) {
    super(
      `disk full at ${path}: ${(cause as Error | undefined)?.message?.split('\n')[0] ?? 'no space left on device'}; the run stops (it is resumable from its last checkpoint once there is room)`,
      { cause },
    );
    this.name = 'DiskFullError';
  }
}

/** E as a DiskFullError naming its path (else WHERE) when it is one, else E itself. */
export function asDiskFull(e: unknown, where: string): unknown {
  if (e instanceof DiskFullError || !isDiskFull(e)) return e;
  return new DiskFullError((e as NodeJS.ErrnoException).path ?? where, e);
}
