// Maps backend errors to JSON-RPC errors: InputError keeps its file/line/field as `data` so the
// extension can show it at the right place; "not there yet" is its own code, never a fake success.
import { ResponseError } from 'vscode-jsonrpc/node';
import { errorKind, InputError } from '../core/errors.js';
import { ErrorCodes } from '../core/protocol.js';

export class NotAvailableError extends Error {
  constructor(what: string) {
    super(`${what} is not available yet in this backend`);
    this.name = 'NotAvailableError';
  }
}

export class NotFoundError extends Error {
  override name = 'NotFoundError';
}

/** A path outside the workspace, or a file that is not one of this project's buffers. */
export class ForbiddenError extends Error {
  override name = 'ForbiddenError';
}

export function toResponseError(err: unknown): ResponseError<unknown> {
  if (err instanceof ResponseError) return err;
  if (err instanceof InputError) return new ResponseError(ErrorCodes.InvalidInput, err.message, err.location);
  if (err instanceof NotAvailableError) return new ResponseError(ErrorCodes.NotAvailable, err.message);
  if (err instanceof NotFoundError) return new ResponseError(ErrorCodes.NotFound, err.message);
  if (errorKind(err) === 'conflict') return new ResponseError(ErrorCodes.Conflict, (err as Error).message);
  if (err instanceof ForbiddenError) return new ResponseError(ErrorCodes.Forbidden, err.message);
  const msg = err instanceof Error ? err.message : String(err);
  return new ResponseError(-32603, msg);
}
