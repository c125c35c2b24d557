import { connect, type Socket } from 'node:net';

/**
 * Opens `count` keep-alive connections to 127.0.0.1:`port`, each asking GET /livez once and held open after its 200 (a
 * gateway counts a connection against HTTP_MAX_CONNECTIONS once its first answer is back), pushing each into `held`
 * for the caller to destroy. Rejects when one is not answered 200.
 */
export async function holdAnsweredConnections(port: number, count: number, held: Socket[]): Promise<void> {
  for (let i = 0; i < count; i++) {
    const socket = connect(port, '127.0.0.1');
    held.push(socket);
    socket.write('GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const head = await new Promise<string>((resolve, reject) => {
      socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1')));
      socket.once('error', reject);
    });
    if (!/^HTTP\/1\.1 200 /.test(head)) throw new Error(`a held connection was answered ${head.split('\r\n')[0]}`);
  }
}
