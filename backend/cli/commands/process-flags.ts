// The flags a run's coordinator starts `rft explorer-process` and `rft trainer-process` with
// (coordinator/process-context.ts processArgv).
export const PROCESS_FLAGS = {
  'run-id': { type: 'string', value: 'ID', required: true, description: 'the run' },
  store: { type: 'string', value: 'URL', required: true, description: "the run's buffer" },
  stage: { type: 'number', default: 0, description: 'the stage the process runs' },
} as const;
