// Per-token colouring of a response by behaviour log-prob or by advantage, with the value on hover.
// Colours mix theme colours (--vscode-*) so they work in light, dark and high-contrast themes.
export type ColourBy = 'logprob' | 'advantage';

export interface TokenCell {
  text: string;
  value: number | undefined;
  /** 0..100: how strongly the cell is tinted. */
  strength: number;
  colour: string;
  title: string;
}

/** Low probability (log-prob far below 0) is red; advantage is green above 0 and red below. */
export function tint(value: number | undefined, by: ColourBy): { strength: number; colour: string } {
  if (value === undefined || !Number.isFinite(value)) return { strength: 0, colour: 'transparent' };
  if (by === 'logprob') {
    const p = Math.exp(Math.min(0, value));
    const strength = Math.round((1 - p) * 70);
    return { strength, colour: `color-mix(in srgb, var(--vscode-charts-red) ${strength}%, transparent)` };
  }
  const strength = Math.round(Math.min(1, Math.abs(value) / 2) * 70);
  const base = value >= 0 ? 'var(--vscode-charts-green)' : 'var(--vscode-charts-red)';
  return { strength, colour: `color-mix(in srgb, ${base} ${strength}%, transparent)` };
}

export function tokenCells(
  e: { responseTokens: number[]; logprobs: number[]; advantages?: number[]; actionMask: number[] },
  pieces: string[] | undefined,
  by: ColourBy,
): TokenCell[] {
  const values = by === 'logprob' ? e.logprobs : e.advantages;
  return e.responseTokens.map((tok, i) => {
    const v = e.actionMask[i] === 0 ? undefined : values?.[i];
    const { strength, colour } = tint(v, by);
    const text = pieces?.[i] ?? `⟨${tok}⟩`;
    const label =
      by === 'logprob'
        ? `log-prob ${v?.toFixed(4)} (p = ${v === undefined ? '' : Math.exp(v).toFixed(4)})`
        : `advantage ${v?.toFixed(4)}`;
    const title =
      e.actionMask[i] === 0
        ? `token ${tok}: environment token (not trained on)`
        : v === undefined
          ? `token ${tok}: no ${by}`
          : `token ${tok}: ${label}`;
    return { text, value: v, strength, colour, title };
  });
}
