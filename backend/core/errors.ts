// Errors that point at the bad input: file, line and field, so a user can fix it at once.
// Rendered as `FILE:LINE: field 'NAME': message`.
export interface InputLocation {
  file?: string;
  line?: number;
  field?: string;
}

export class InputError extends Error {
  constructor(
    message: string,
    readonly location: InputLocation = {},
  ) {
    super(formatLocation(location) + message);
    this.name = 'InputError';
  }
}

export function formatLocation(loc: InputLocation): string {
  let s = '';
  if (loc.file) s += loc.file;
  if (loc.line !== undefined) s += `:${loc.line}`;
  if (loc.field) s += (s ? ': ' : '') + `field '${loc.field}'`;
  return s ? s + ': ' : '';
}
