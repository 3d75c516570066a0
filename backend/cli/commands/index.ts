// The `rft` commands: each is declared in one file of this folder (with its flags, cli/flags.ts) and
// listed once below, so adding a command is one new file plus one entry, and a missing one is a
// compile error rather than "unknown command".
import { Registry } from '../../core/registry.js';
import type { CliCommand } from '../command.js';
import {
  bufferExportCommand,
  bufferImportCommand,
  bufferLsCommand,
  bufferShowCommand,
  bufferStatsCommand,
} from './buffer.js';
import { coordinatorCommand } from './coordinator.js';
import { evalCommand } from './eval.js';
import { explorerCommand } from './explorer.js';
import { explorerProcessCommand } from './explorer-process.js';
import { modelExportCommand, modelGenerateCommand, modelInfoCommand, modelScoreCommand } from './model.js';
import { rewardModelTrainCommand } from './reward-model.js';
import { demoCommand, resumeCommand, runCommand } from './run.js';
import { pauseCommand, reportCommand, statusCommand, stopCommand } from './runs.js';
import { serveCommand } from './serve.js';
import { tasksetValidateCommand } from './taskset.js';
import { tokenizerDecodeCommand, tokenizerEncodeCommand, tokenizerTrainCommand } from './tokenizer.js';
import { trainerCommand } from './trainer.js';
import { trainerProcessCommand } from './trainer-process.js';
import { workersCommand } from './workers.js';

const all: readonly CliCommand[] = [
  resumeCommand,
  runCommand,
  demoCommand,
  serveCommand,
  tokenizerTrainCommand,
  tokenizerEncodeCommand,
  tokenizerDecodeCommand,
  bufferStatsCommand,
  bufferLsCommand,
  bufferShowCommand,
  bufferExportCommand,
  bufferImportCommand,
  tasksetValidateCommand,
  statusCommand,
  reportCommand,
  stopCommand,
  pauseCommand,
  evalCommand,
  explorerProcessCommand,
  trainerProcessCommand,
  coordinatorCommand,
  explorerCommand,
  trainerCommand,
  workersCommand,
  modelInfoCommand,
  modelScoreCommand,
  modelGenerateCommand,
  modelExportCommand,
  rewardModelTrainCommand,
];

export const commands = new Registry<CliCommand>('command', Object.fromEntries(all.map((c) => [c.name, c])));

/** Old command name -> the command it became (`rft OLD` warns and runs the new one). */
export const renamed: ReadonlyMap<string, string> = new Map(
  all.flatMap((c) => (c.renamedFrom ? [[c.renamedFrom, c.name] as const] : [])),
);
