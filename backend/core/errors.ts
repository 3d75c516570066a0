// The errors a run or a request ends with, by who can fix them:
// - input: the user's config, file or argument is wrong (InputError points at file, line and field,
//   rendered `FILE:LINE: field 'NAME': message`);
// - conflict: the request is valid but the state it needs has changed or is held by someone else
//   (an experience edited since, a run that is live, a lease another process holds);
// - infrastructure: a process, storage or network the run depends on failed.
// The server maps each kind to its JSON-RPC code and the CLI prints them without a stack; a bare
// Error is a bug (an assertion) and the CLI prints its stack.
export type ErrorKind = 'input' | 'conflict' | 'infrastructure';

export abstract class RftError extends Error {
  abstract readonly kind: ErrorKind;
}

export interface InputLocation {
  file?: string;
  line?: number;
  field?: string;
}

export class InputError extends RftError {
  readonly kind = 'input';
  constructor(
    message: string,
    readonly location: InputLocation = {},
  ) {
    super(formatLocation(location) + message);
    this.name = 'InputError';
  }
}

export class ConflictError extends RftError {
  readonly kind = 'conflict';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConflictError';
  }
}

export class InfrastructureError extends RftError {
  readonly kind = 'infrastructure';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'InfrastructureError';
  }
}

/** The kind of an error, or undefined for a bare Error (a bug). */
export function errorKind(err: unknown): ErrorKind | undefined {
  return err instanceof RftError ? err.kind : undefined;
}

export function formatLocation(loc: InputLocation): string {
  let s = '';
  if (loc.file) s += loc.file;
  if (loc.line !== undefined) s += `:${loc.line}`;
  if (loc.field) s += (s ? ': ' : '') + `field '${loc.field}'`;
  return s ? s + ': ' : '';
}
