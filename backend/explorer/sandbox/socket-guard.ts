// Filesystem Unix sockets from a sandbox worker. Neither the network namespace (it isolates network
// interfaces and abstract sockets, not socket files) nor Node 20's permission model (no network
// rules) stops `net.connect('/run/some.sock')`, so code that escaped the vm could talk to a local
// daemon. This module, loaded with `--import` before any worker program, makes every path-based
// connect throw ERR_ACCESS_DENIED: `net.Socket.prototype.connect` is the only way JS reaches a
// socket file (http's socketPath and tls go through it; `process.binding` is denied by the
// permission model), and the replacement is non-writable and non-configurable, so a program cannot
// put the original back. TCP connects pass through (the network namespace handles those).
const GUARD = `
import net from 'node:net';
const original = net.Socket.prototype.connect;
const isPath = (args) => {
  const o = Array.isArray(args[0]) ? args[0][0] : args[0];
  return (typeof o === 'string' && !/^\\d+$/.test(o)) || (o !== null && typeof o === 'object' && o.path !== undefined && o.path !== null);
};
Object.defineProperty(net.Socket.prototype, 'connect', {
  value: function connect(...args) {
    if (isPath(args)) {
      const e = new Error('Unix sockets are blocked in the sandbox');
      e.code = 'ERR_ACCESS_DENIED';
      throw e;
    }
    return Reflect.apply(original, this, args);
  },
  writable: false,
  configurable: false,
  enumerable: false,
});
`;

/** For `node --import`: a data URL, so loading it needs no file read (the permission model denies those). */
export const SOCKET_GUARD_URL = `data:text/javascript,${encodeURIComponent(GUARD)}`;
