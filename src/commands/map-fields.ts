// "Map Fields…": a quick pick chain over a taskset or experts file of the user's own. It shows the
// file's first records, proposes which field is the prompt, the answer (or an expert's response)
// and the id (from the names and the values, src/field-mapping.ts), lets each be changed, and
// writes the mapping into the run config that reads the file (or a new config for it).
import * as vscode from 'vscode';
import { dirname, relative } from 'node:path';
import { sectionsNaming, withFormat, type ConfigSection } from '../config-format-edit.js';
import {
  describeMapping,
  fieldsOf,
  firstRecordsOfFile,
  formatOf,
  guessRole,
  proposeMapping,
  type MappingProposal,
  type MappingRole,
  type MappingTarget,
} from '../field-mapping.js';
import type { Services } from '../services.js';
import { readHead } from '../taskset-detect.js';
import { configTemplate, domainOf, templateRunName } from '../templates.js';
import { takenRunNames } from './run-names.js';
import { CONFIG_GLOB } from './training.js';
import { formatByExtension, TASKSET_EXTENSIONS } from '../../backend/core/taskset-text/index.js';
import { unusedUri } from './unused-name.js';

type Rec = Record<string, unknown>;

/** One field preset by a quick fix (`final` as the answer): the mapping is written without asking. */
export interface FieldPreset {
  target: MappingTarget;
  key: string;
}

const TARGET_LABEL: Record<MappingTarget, string> = {
  prompt: 'prompt',
  answer: 'answer (checked by the reward)',
  response: 'expert response (trained on)',
  id: 'id',
};

/** `"What is 17 + 25?" · "What is 9 * 8?"`: a field's first values, short. */
export function sampleValues(records: Rec[], key: string, n = 3): string {
  return records
    .slice(0, n)
    .map((r) => (key in r ? JSON.stringify(r[key]) : '—'))
    .map((v) => (v.length > 40 ? `${v.slice(0, 39)}…` : v))
    .join(' · ');
}

async function pickFile(s: Services, arg?: vscode.Uri): Promise<vscode.Uri | undefined> {
  if (arg) return arg;
  const active = vscode.window.activeTextEditor?.document.uri;
  // Every format the backend reads (JSONL, JSON, YAML, CSV, Parquet, Arrow); a run config is YAML but no taskset.
  const readable = (u: vscode.Uri) => !!formatByExtension(u.fsPath) && !/\.rft\.ya?ml$/i.test(u.fsPath);
  if (active && readable(active)) return active;
  const files = s.tasksets.list().filter(readable);
  const pick = await vscode.window.showQuickPick(
    files.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })),
    {
      title: 'Map fields: which file?',
      placeHolder: `a file of tasks or expert demonstrations (${TASKSET_EXTENSIONS.join(', ')})`,
      ignoreFocusOut: true,
    },
  );
  return pick?.uri;
}

/** The proposal with one field chosen by the user (the field it took is freed from another target). */
function choose(p: MappingProposal, target: MappingTarget, key: string | undefined): MappingProposal {
  const fields = p.fields.filter((f) => f.target !== target && f.key !== key);
  if (key) fields.push({ target, key, why: key === target ? 'own' : 'name' });
  const order: MappingTarget[] = ['prompt', 'answer', 'response', 'id'];
  fields.sort((a, b) => order.indexOf(a.target) - order.indexOf(b.target));
  return { role: p.role, fields, format: formatOf(fields) };
}

function targetsOf(role: MappingRole): MappingTarget[] {
  return role === 'task' ? ['prompt', 'answer', 'id'] : ['prompt', 'response'];
}

/** The first step: the records and the proposal; accept, change each field, or switch tasks / experts. */
async function review(
  rel: string,
  records: Rec[],
  p: MappingProposal,
): Promise<'accept' | 'edit' | 'role' | undefined> {
  type Item = vscode.QuickPickItem & { act?: 'accept' | 'edit' | 'role' };
  const items: Item[] = [
    {
      label: `$(check) Use: ${describeMapping(p.fields) || 'no fields found'}`,
      detail:
        p.role === 'task'
          ? 'read as tasks'
          : 'read as expert demonstrations (prompt + response, trained on by MIX / SFT)',
      act: 'accept',
    },
    { label: '$(edit) Choose each field…', act: 'edit' },
    {
      label:
        p.role === 'task'
          ? '$(arrow-swap) Read as expert demonstrations instead'
          : '$(arrow-swap) Read as tasks instead',
      act: 'role',
    },
    { label: `First records of ${rel}`, kind: vscode.QuickPickItemKind.Separator },
    ...records.slice(0, 3).map((r) => ({ label: JSON.stringify(r).slice(0, 240) })),
  ];
  for (;;) {
    const pick = await vscode.window.showQuickPick(items, {
      title: `Map fields of ${rel}`,
      placeHolder: 'the proposed mapping, from the field names and values of the first records',
      ignoreFocusOut: true,
    });
    if (!pick) return undefined;
    if (pick.act) return pick.act;
    // A record was picked: show the list again.
  }
}

/** One quick pick per target: the file's fields with their first values, the proposed one first. */
async function editEach(rel: string, records: Rec[], p: MappingProposal): Promise<MappingProposal | undefined> {
  let cur = p;
  const keys = fieldsOf(records);
  const targets = targetsOf(p.role);
  for (const [i, t] of targets.entries()) {
    const proposed = cur.fields.find((f) => f.target === t)?.key;
    const ordered = proposed ? [proposed, ...keys.filter((k) => k !== proposed)] : keys;
    type Item = vscode.QuickPickItem & { key?: string };
    const items: Item[] = ordered.map((k) => ({
      label: k,
      description: k === proposed ? '(proposed)' : '',
      detail: sampleValues(records, k),
      key: k,
    }));
    // An id is optional (the line number is used); an answer may be left to the reward.
    if (t !== 'prompt')
      items.push({ label: '(none)', detail: t === 'id' ? 'tasks are numbered by their line' : 'no field' });
    const pick = await vscode.window.showQuickPick(items, {
      title: `Map fields of ${rel} (${i + 1}/${targets.length}): which field is the ${TARGET_LABEL[t]}?`,
      ignoreFocusOut: true,
    });
    if (!pick) return undefined;
    cur = choose(cur, t, pick.key);
  }
  return cur;
}

export interface MappingWritten {
  config: vscode.Uri;
  sections: ConfigSection[];
  created: boolean;
}

/** A dataset folder read by split (Open Dataset…): its split, and a held-out split for a new config's eval. */
export interface DatasetTarget {
  split: string;
  evalSplit?: string;
}

/** A path as a config in `dir` names it: relative inside the workspace, absolute outside (the HF cache). */
function configPath(dir: string, file: string): string {
  const rel = relative(dir, file).split('\\').join('/');
  return rel.startsWith('../') &&
    vscode.workspace.workspaceFolders?.every((f) => relative(f.uri.fsPath, file).startsWith('..'))
    ? file
    : rel;
}

/**
 * Writes the mapping into every config that reads the file, else into a config the user picks, else a
 * new one. A dataset folder (`dataset`) goes into a config the user picks or a new one, with its split.
 */
async function writeMapping(
  file: vscode.Uri,
  p: MappingProposal,
  dataset?: DatasetTarget,
): Promise<MappingWritten | undefined> {
  const format = p.format ?? {};
  const configs = await vscode.workspace.findFiles(CONFIG_GLOB, '**/node_modules/**', 100);
  const texts = new Map<string, string>();
  const read = async (u: vscode.Uri) =>
    texts.get(u.fsPath) ?? new TextDecoder().decode(await vscode.workspace.fs.readFile(u));
  const naming: { uri: vscode.Uri; sections: ConfigSection[] }[] = [];
  for (const u of configs) {
    const text = await read(u);
    texts.set(u.fsPath, text);
    const sections = dataset ? [] : sectionsNaming(u.fsPath, text, file.fsPath);
    if (sections.length) naming.push({ uri: u, sections });
  }
  const section: ConfigSection = p.role === 'expert' ? 'experts' : 'taskset';
  if (naming.length) {
    for (const n of naming)
      for (const sec of n.sections) await save(n.uri, withFormat(await read(n.uri), sec, format), texts);
    return { config: naming[0]!.uri, sections: naming[0]!.sections, created: false };
  }
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!folder) return undefined;
  const NEW = '$(add) A new config for this file';
  const pick = configs.length
    ? await vscode.window.showQuickPick(
        [
          ...configs.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u as vscode.Uri | undefined })),
          { label: NEW, uri: undefined },
        ],
        {
          title: `No config reads ${vscode.workspace.asRelativePath(file)}: write its mapping (${section}) into…`,
          ignoreFocusOut: true,
        },
      )
    : { label: NEW, uri: undefined };
  if (!pick) return undefined;
  if (pick.uri) {
    const rel = configPath(dirname(pick.uri.fsPath), file.fsPath);
    await save(pick.uri, withFormat(await read(pick.uri), section, format, rel, dataset?.split), texts);
    return { config: pick.uri, sections: [section], created: false };
  }
  // No config yet: the template, reading this file (never over an existing train.rft.yaml).
  const uri = await unusedUri(folder, 'train.rft.yaml');
  const rel = configPath(folder.fsPath, file.fsPath);
  const fmt = p.format ? { format: p.format } : {};
  const name = templateRunName(p.role === 'task' ? rel : 'tasksets/math.jsonl', undefined, await takenRunNames([]));
  const text =
    p.role === 'task'
      ? configTemplate(
          rel,
          domainOf(rel),
          undefined,
          {
            ...fmt,
            ...(dataset ? { split: dataset.split } : {}),
            // A dataset's held-out split (test) is the eval set, read with the same mapping.
            ...(dataset?.evalSplit ? { eval: { path: rel, split: dataset.evalSplit, ...fmt } } : {}),
          },
          [],
          name,
        )
      : configTemplate(
          'tasksets/math.jsonl',
          'math',
          undefined,
          { experts: { path: rel, ...fmt, ...(dataset ? { split: dataset.split } : {}) } },
          [],
          name,
        );
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text));
  return { config: uri, sections: [section], created: true };
}

/** Saves a config: through the editor when it has unsaved edits (kept, undoable), else on disk. */
async function save(uri: vscode.Uri, text: string, cache: Map<string, string>): Promise<void> {
  cache.set(uri.fsPath, text);
  const open = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === uri.fsPath);
  if (open?.isDirty) {
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(0, 0, open.lineCount, 0), text);
    await vscode.workspace.applyEdit(edit);
    return;
  }
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text));
}

export async function mapFields(
  s: Services,
  arg?: vscode.Uri,
  preset?: FieldPreset,
): Promise<MappingWritten | undefined> {
  const file = await pickFile(s, arg instanceof vscode.Uri ? arg : undefined);
  if (!file) return undefined;
  const rel = vscode.workspace.asRelativePath(file);
  const open = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === file.fsPath);
  const records = await firstRecordsOfFile(file.fsPath, () => (open ? open.getText() : readHead(file.fsPath)), 20);
  if (!records.length) {
    void vscode.window.showWarningMessage(
      `${rel}: no records to map (JSONL: one object per line; JSON: an array of objects; YAML: a list of maps; CSV: a header row, then one row per record; Parquet / Arrow: one row per record).`,
    );
    return undefined;
  }
  return mapRecords(s, file, rel, records, preset);
}

/** Map Fields on a dataset folder's split (Open Dataset…): its first records come from the backend. */
export function mapDataset(
  s: Services,
  dir: vscode.Uri,
  label: string,
  records: Rec[],
  dataset: DatasetTarget,
): Promise<MappingWritten | undefined> {
  return mapRecords(s, dir, label, records, undefined, dataset);
}

async function mapRecords(
  s: Services,
  file: vscode.Uri,
  rel: string,
  records: Rec[],
  preset?: FieldPreset,
  dataset?: DatasetTarget,
): Promise<MappingWritten | undefined> {
  let p = proposeMapping(
    records,
    preset?.target === 'response' ? 'expert' : preset?.target === 'answer' ? 'task' : guessRole(file.fsPath, records),
  );
  if (preset) p = choose(p, preset.target, preset.key);
  else {
    for (;;) {
      const act = await review(rel, records, p);
      if (!act) return undefined;
      if (act === 'role') {
        p = proposeMapping(records, p.role === 'task' ? 'expert' : 'task');
        continue;
      }
      if (act === 'edit') {
        const edited = await editEach(rel, records, p);
        if (!edited) return undefined;
        p = edited;
      }
      break;
    }
  }
  try {
    const done = await writeMapping(file, p, dataset);
    if (!done) return undefined;
    await s.rereadConfigs?.();
    const cfg = vscode.workspace.asRelativePath(done.config);
    s.output.info(`Mapped ${rel} (${describeMapping(p.fields)}) in ${cfg} (${done.sections.join(', ')}).`);
    void vscode.window
      .showInformationMessage(
        `${done.created ? 'Wrote' : 'Mapped in'} ${cfg}: ${rel} read with ${describeMapping(p.fields)}.`,
        'Open Config',
      )
      .then((x) => x && vscode.window.showTextDocument(done.config));
    return done;
  } catch (err) {
    void vscode.window.showErrorMessage(`Map fields of ${rel}: ${(err as Error).message}`);
    return undefined;
  }
}
