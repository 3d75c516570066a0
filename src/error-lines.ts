// A failure told in one line: the backend's and the CLI's messages carry log lines and lists of
// problems (`invalid config, 2 problem(s):\n  FILE: field 'X': …`); a notification shows the cause
// (the first problem, the CLI's own `rft: …` line), the rest stays in the log. Pure, no vscode.

const MAX = 240;

/** The cause of a failure in one line. */
export function oneLineReason(message: string): string {
  const head = causeLine(message);
  return head.length > MAX ? `${head.slice(0, MAX - 1)}…` : head;
}

/** The cause line of a message, whole: the CLI's `rft: …` line, or the first item of a list of problems. */
function causeLine(message: string): string {
  let lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (!lines.length) return 'no reason given (see the log)';
  // The CLI's own error line (`rft: …`) is the cause; what precedes it is log output.
  const cli = lines.map((l) => l.startsWith('rft: ')).lastIndexOf(true);
  if (cli >= 0) lines = [lines[cli]!.slice(5), ...lines.slice(cli + 1)];
  let head = lines[0]!;
  let more = 0;
  // `invalid config, 2 problem(s):` heads a list: the first item is the cause.
  if (/problem\(s\):$/.test(head) && lines.length > 1) {
    more = lines.length - 2;
    head = lines[1]!;
  } else if (/;\s*last log lines:?$/.test(head)) {
    head = head.replace(/;\s*last log lines:?$/, '');
  } else if (head.endsWith(':') && lines.length > 1) {
    head = `${head.slice(0, -1)}: ${lines[1]}`;
  }
  head = head.replace(/^(Error|InputError|ConflictError|InfrastructureError|TypeError):\s*/, '');
  if (more > 0) head += ` (and ${more} more)`;
  return head;
}

/** A message that says its one fix (`… Fix: set trainer.batch_size to 32.`): what is wrong, and the fix. */
export function splitFix(message: string): { what: string; fix?: string } {
  const at = message.indexOf(' Fix: ');
  if (at < 0) return { what: message };
  const fix = /^Fix: .*?\.(?=\s|$)/.exec(message.slice(at + 1))?.[0] ?? message.slice(at + 1).split('\n')[0]!;
  return { what: message.slice(0, at).replace(/[.;]$/, ''), fix };
}

/**
 * A refusal in a toast: what is wrong without its parenthesised detail (that stays in Problems and
 * the log), then its one fix.
 */
export function toastLine(message: string): string {
  const { what, fix } = splitFix(causeLine(message));
  if (!fix) return oneLineReason(message);
  const short = what.replace(/\s*\([^()]*\)/g, '');
  return `${short.length > MAX ? `${short.slice(0, MAX - 1)}…` : short}. ${fix}`;
}

/** What to do about it, when the message says (else undefined). */
export function errorFix(message: string): string | undefined {
  // The message's own fix first (the config check and resume refusals say one).
  const own = splitFix(message).fix;
  if (own) return own;
  const dym = /did you mean '([^']+)'\?/.exec(message);
  if (dym) return `Fix: use '${dym[1]}'.`;
  // The rule about relative paths only where the path was relative (an absolute one is just missing).
  if (/no file '(\/|[A-Za-z]:\\)|nothing at that absolute path/.test(message)) return 'Fix: check the path.';
  if (/no file '|ENOENT|no such file|not found/i.test(message))
    return 'Fix: check the path (paths in a config are relative to the config file).';
  if (/backend is not running|connection (got )?disposed|Pending response rejected/i.test(message))
    return 'Fix: run "RFT Studio: Restart Backend".';
  if (/process died/.test(message)) return 'Fix: Resume continues from the last checkpoint.';
  return undefined;
}
