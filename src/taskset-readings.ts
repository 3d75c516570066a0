// How the workspace's run configs read their files: a taskset, eval or experts file named by a
// `*.rft.yaml` with a `format:` mapping (or as experts) is validated as the run loads it, so a file
// written with other names (`question` for prompt) is not flagged while a config maps them.
import * as vscode from 'vscode';
import { dirname, resolve } from 'node:path';
import { parseLastGood } from './config-last-good.js';
import type { TasksetReading } from '../backend/core/protocol.js';
import { looksLikeTaskset } from './diagnostics.js';
import type { MappingProposal } from './field-mapping.js';
import { detectTaskset, detectedNote, detectedReading, readHead } from './taskset-detect.js';

const CONFIGS = '**/*.rft.{yaml,yml}';
const SECTIONS: [string, TasksetReading['role']][] = [
  ['taskset', 'task'],
  ['eval', 'task'],
  ['experts', 'expert'],
];

/** A data file a run config names: its section, absolute path and how the run reads it. */
export interface ConfigFile {
  section: 'taskset' | 'eval' | 'experts';
  file: string;
  reading: TasksetReading;
  /** The config says how (a `format:`, or experts): the first config that does rules the file. */
  mapped: boolean;
}

/** Every file one config names (taskset, eval, experts), with its reading; none when the YAML does not parse. */
export function filesOf(configPath: string, text: string): ConfigFile[] {
  const out: ConfigFile[] = [];
  // A config that does not parse now: its last good reading (its own diagnostics report the syntax).
  const { doc } = parseLastGood(configPath, text);
  if (!doc || typeof doc !== 'object') return out;
  for (const [key, role] of SECTIONS) {
    const ref = (doc as Record<string, unknown>)[key];
    if (!ref || typeof ref !== 'object') continue;
    const { path, format, domain } = ref as Record<string, unknown>;
    if (typeof path !== 'string' || !path) continue;
    const fmt =
      format && typeof format === 'object'
        ? Object.fromEntries(Object.entries(format).filter(([, v]) => typeof v === 'string'))
        : undefined;
    out.push({
      section: key as ConfigFile['section'],
      file: resolve(dirname(configPath), path),
      reading: {
        ...(fmt ? { format: fmt as Record<string, string> } : {}),
        role,
        ...(typeof domain === 'string' ? { domain: domain as TasksetReading['domain'] } : {}),
      },
      mapped: !!fmt || role === 'expert',
    });
  }
  return out;
}

/** The files one config names with a `format:` or as experts, and how it reads each. */
export function readingsOf(configPath: string, text: string): Map<string, TasksetReading> {
  const out = new Map<string, TasksetReading>();
  for (const f of filesOf(configPath, text)) if (f.mapped && !out.has(f.file)) out.set(f.file, f.reading);
  return out;
}

export class TasksetReadings {
  private byFile = new Map<string, TasksetReading>();
  /** Every file a config names (mapped or not), and the configs naming it. */
  private named = new Map<string, vscode.Uri[]>();
  /** Files read with the mapping detected from their first records (no config maps them). */
  private readonly detected = new Map<string, MappingProposal>();

  /** Re-reads every run config of the workspace (on disk); the first one naming a file wins. */
  async refresh(): Promise<void> {
    const next = new Map<string, TasksetReading>();
    const named = new Map<string, vscode.Uri[]>();
    for (const uri of await vscode.workspace.findFiles(CONFIGS, '**/node_modules/**', 100)) {
      try {
        const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
        for (const [file, r] of readingsOf(uri.fsPath, text)) if (!next.has(file)) next.set(file, r);
        for (const f of filesOf(uri.fsPath, text)) named.set(f.file, [...(named.get(f.file) ?? []), uri]);
      } catch {
        /* unreadable: its own diagnostics say so */
      }
    }
    this.byFile = next;
    this.named = named;
  }

  /** The configs that name `file` (as taskset, eval or experts), as of the last refresh. */
  configsNaming(file: string): vscode.Uri[] {
    return this.named.get(file) ?? [];
  }

  for(file: string): TasksetReading | undefined {
    return this.byFile.get(file);
  }

  /**
   * How `taskset/validate` should read a file: as a config maps it, else with the mapping detected
   * from its first records (`text`: the unsaved text, else the file's head on disk).
   */
  readingFor(file: string, text?: string): TasksetReading | undefined {
    const mapped = this.byFile.get(file);
    this.detected.delete(file);
    if (mapped) return mapped;
    const p = detectTaskset(file, text ?? readHead(file));
    const reading = p && detectedReading(p);
    if (reading) this.detected.set(file, p);
    return reading;
  }

  /** The mapping detected for a file the last readingFor() read that way. */
  detectedFor(file: string): MappingProposal | undefined {
    return this.detected.get(file);
  }

  /** Problems' note for a file read with a detected mapping. */
  note(file: string): string | undefined {
    const p = this.detected.get(file);
    return p && detectedNote(p);
  }

  /** A taskset by its folder, because a config names it, or by its first records. */
  isTaskset(file: string, text?: string): boolean {
    return looksLikeTaskset(file) || this.byFile.has(file) || this.holdsTasks(file, text);
  }

  holdsTasks(file: string, text?: string): boolean {
    return /\.jsonl?$/i.test(file) && !!detectTaskset(file, text ?? readHead(file));
  }

  files(): string[] {
    return [...this.byFile.keys()];
  }
}
