// Entry point of the `rft` CLI (and of `rft serve`, the backend the extension launches).
import { commandHelp, errorReport, exitCodeOf, nameAndArgs, parseFor } from './cli/command.js';
import { commands, renamed } from './cli/commands/index.js';

function help(): string {
  const lines = ['usage: rft <command> [options]', '', 'commands:'];
  for (const name of commands.names()) {
    const c = commands.get(name);
    lines.push(`  ${nameAndArgs(c).padEnd(36)} ${c.summary}`);
  }
  for (const [old, now] of renamed) lines.push(`  ${old.padEnd(36)} old name of ${now} (warns)`);
  lines.push('', '`rft <command> --help` lists its flags.');
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    console.log(help());
    return argv.length === 0 ? 1 : 0;
  }
  // Longest matching command path: 'tokenizer train' before 'tokenizer'.
  for (let n = Math.min(3, argv.length); n >= 1; n--) {
    let name = argv.slice(0, n).join(' ');
    const now = renamed.get(name);
    if (now) {
      console.error(`warning: 'rft ${name}' is now 'rft ${now}'`);
      name = now;
    }
    if (commands.has(name)) {
      const c = commands.get(name);
      const rest = argv.slice(n);
      // `rft CMD --help` prints the command's usage and flags and does nothing else (`--` ends the flags).
      const flags = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest;
      if (flags.includes('--help') || flags.includes('-h')) {
        console.log(commandHelp(c));
        return 0;
      }
      return await c.run(parseFor(c, rest));
    }
  }
  console.error(`rft: unknown command '${argv[0]}'\n\n${help()}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(errorReport(err, !!process.env.RFT_DEBUG));
    process.exitCode = exitCodeOf(err);
  },
);
