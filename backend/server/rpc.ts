// Typed wrappers over a vscode-jsonrpc connection: handlers and notifications are checked
// against the method maps in backend/core/protocol.ts.
import type { CancellationToken, MessageConnection } from 'vscode-jsonrpc/node';
import type { NotificationMethod, Notifications, ParamsOf, RequestMethod, ResultOf } from '../core/protocol.js';
import { logger } from '../core/log.js';
import { toResponseError } from './errors.js';

const log = logger('server');

export type Handler<M extends RequestMethod> = (
  params: ParamsOf<M>,
  token: CancellationToken,
) => Promise<ResultOf<M>> | ResultOf<M>;

export interface RpcHost {
  on<M extends RequestMethod>(method: M, handler: Handler<M>): void;
  notify<N extends NotificationMethod>(method: N, params: Notifications[N]): void;
}

export function rpcHost(conn: MessageConnection): RpcHost {
  return {
    on(method, handler) {
      conn.onRequest(method, async (params: unknown, token: CancellationToken) => {
        try {
          return await handler((params ?? {}) as never, token);
        } catch (err) {
          const re = toResponseError(err);
          log.debug(`request ${method} failed`, { code: re.code, message: re.message });
          return re;
        }
      });
    },
    notify(method, params) {
      void conn.sendNotification(method, params).catch(() => {
        /* the client went away; the server notices on close */
      });
    },
  };
}
