// Minimal levelled logger writing to stderr (stdout stays free for CLI results and JSON-RPC).
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function threshold(): number {
  const env = (process.env.RFT_LOG_LEVEL ?? 'info') as LogLevel;
  return ORDER[env] ?? ORDER.info;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

type Sink = (level: LogLevel, scope: string, msg: string, fields?: Record<string, unknown>) => void;
let sink: Sink = (level, scope, msg, fields) => {
  const extra = fields && Object.keys(fields).length ? ' ' + JSON.stringify(fields) : '';
  process.stderr.write(`[${new Date().toISOString()}] ${level.toUpperCase()} ${scope}: ${msg}${extra}\n`);
};

/** Replace where log lines go (the server forwards them to the extension's output channel). */
export function setLogSink(s: Sink): void {
  sink = s;
}

export function logger(scope: string): Logger {
  const at = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] >= threshold()) sink(level, scope, msg, fields);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
