// The two flags every command of a distributed run takes: its database and its id.
export const DIST_FLAGS = {
  buffer: {
    type: 'string',
    value: 'postgres://...',
    required: true,
    description: "the run's PostgreSQL database (buffer and job queue)",
  },
  run: { type: 'string', value: 'RUN', required: true, description: 'the run id' },
} as const;
