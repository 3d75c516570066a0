// Every path a request names is resolved against the workspace and must stay inside it (after
// following links): a request can neither read nor write a file of the user's elsewhere.
import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { ForbiddenError } from './errors.js';

export class WorkspacePaths {
  /** The workspace as the file system knows it (links resolved). */
  readonly root: string;
  /** The workspace as given (absolute): paths are resolved against it and returned under it. */
  readonly given: string;

  constructor(workspace: string) {
    this.given = resolve(workspace);
    this.root = existsSync(this.given) ? realpathSync(this.given) : this.given;
  }

  /**
   * `p` (relative to the workspace, or absolute) as an absolute path (under the workspace as given) whose real path is inside the workspace, else a
   * ForbiddenError naming the field. Links are followed for the part that exists, so a link inside
   * the workspace that points out of it is refused too.
   */
  inside(p: unknown, field: string): string {
    if (typeof p !== 'string' || !p) throw new ForbiddenError(`field '${field}': a path is required`);
    if (p.includes('\0')) throw new ForbiddenError(`field '${field}': a path cannot contain NUL`);
    const abs = resolve(this.given, p);
    if (!within(this.root, realOfExisting(abs)))
      throw new ForbiddenError(`field '${field}': '${p}' is outside the workspace ${this.given}`);
    return abs;
  }

  /** A file the request may write: inside the workspace, its folder exists, and it is not a link. */
  writable(p: unknown, field: string): string {
    const file = this.inside(p, field);
    if (!existsSync(dirname(file)))
      throw new ForbiddenError(`field '${field}': folder ${dirname(file)} does not exist`);
    let st;
    try {
      st = lstatSync(file);
    } catch {
      return file;
    }
    if (st.isSymbolicLink() || !st.isFile())
      throw new ForbiddenError(`field '${field}': '${p}' exists and is not a regular file`);
    return file;
  }
}

export function within(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The real path of `abs`: links resolved in the longest prefix that exists, the rest appended. */
export function realOfExisting(abs: string): string {
  let head = abs;
  const tail: string[] = [];
  while (!existsSync(head)) {
    const up = dirname(head);
    if (up === head) return abs;
    tail.unshift(basename(head));
    head = up;
  }
  return join(realpathSync(head), ...tail);
}
