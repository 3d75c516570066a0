// `rft trainer --weights-host ADDR`: the address explorers are told to fetch the weights from. An
// address this machine does not have was taken as given, and every explorer then failed to load
// the weights (issue 24). It must be one of this machine's addresses, or a name that resolves to one;
// an address forwarded to this machine (NAT, a proxy) is declared with --weights-host-forwarded.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

function localAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.push(a.address);
  return out;
}

const norm = (a: string) =>
  a
    .toLowerCase()
    .replace(/^::ffff:/, '')
    .replace(/%.*$/, '');

/** null when explorers can reach this machine at HOST, else why not (for `--weights-host`). */
export async function advertisedHostProblem(host: string, o: { addresses?: string[] } = {}): Promise<string | null> {
  const mine = (o.addresses ?? localAddresses()).map(norm);
  const list = mine.join(', ');
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const fix = `give one of this machine's addresses (${list}) or a name that resolves to one; an address forwarded to this machine (NAT, a proxy) goes with --weights-host-forwarded`;
  if (bare === '0.0.0.0' || bare === '::')
    return `--weights-host ${host}: not an address explorers can connect to: ${fix}`;
  if (isIP(bare))
    return mine.includes(norm(bare))
      ? null
      : `--weights-host ${host}: this machine has no such address, so explorers would fetch the weights from another machine: ${fix}`;
  let resolved: string[];
  try {
    resolved = (await lookup(bare, { all: true })).map((a) => norm(a.address));
  } catch (e) {
    return `--weights-host ${host}: the name does not resolve here (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): ${fix}`;
  }
  if (resolved.some((a) => mine.includes(a))) return null;
  return `--weights-host ${host}: the name resolves to ${resolved.join(', ')}, none of which is this machine's: ${fix}`;
}
