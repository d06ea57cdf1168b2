import uWS from 'uWebSockets.js';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { ErrorCode, ServingError } from '../common/errors.js';

export interface Listening {
  readonly host: string;
  readonly port: number;
  /** Stop accepting connections. */
  close(): void;
}

/** Listen on host:port (port 0 picks a free one); rejects when the address is taken. */
export function listen(app: TemplatedApp, host: string, port: number): Promise<Listening> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket: us_listen_socket | false) => {
      if (socket === false) {
        reject(new ServingError(ErrorCode.LISTEN, `cannot listen on ${host}:${port} (address in use or not available)`));
        return;
      }
      let open = true;
      resolve({
        host,
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => {
          if (open) uWS.us_listen_socket_close(socket);
          open = false;
        },
      });
    });
  });
}
