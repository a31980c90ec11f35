import { connect, isIP, Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { Kafka, logLevel, type ISocketFactory, type logCreator, type RetryOptions } from 'kafkajs';
import type { BusLogger } from '../shared';
import type { KafkaBusOptions } from './options';
import { installProduceEncoder } from './produce-encoder';

/**
 * Every broker connection of one bus goes through this factory, so a test can
 * make the whole process "die": kill() destroys the live sockets (the broker
 * sees them drop, no LeaveGroup, no commit) and refuses new ones.
 */
export class Sockets {
  private readonly live = new Set<Socket>();
  private dead = false;

  readonly factory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
    if (this.dead) {
      const socket = new Socket();
      // kafkajs attaches its listeners after we return: fail on the next turn.
      setImmediate(() => socket.destroy(Object.assign(new Error('connect ECONNREFUSED (bus killed)'), { code: 'ECONNREFUSED' })));
      return socket;
    }
    // As kafkajs's own factory: TLS when the client has `ssl`, the host name sent for SNI and checked against the certificate.
    const socket = ssl
      ? connectTls({ host, port, ...(isIP(host) ? {} : { servername: host }), ...(typeof ssl === 'object' ? ssl : {}) }, onConnect)
      : connect({ host, port }, onConnect);
    socket.setKeepAlive(true, 60_000);
    socket.setNoDelay(true);
    this.live.add(socket);
    socket.once('close', () => this.live.delete(socket));
    return socket;
  };

  kill(): void {
    this.dead = true;
    for (const socket of this.live) socket.destroy();
    this.live.clear();
  }
}

/** Retries of one kafkajs operation: three attempts within about a second, then the caller hears of it. */
export const shortRetry: RetryOptions = { retries: 2, initialRetryTime: 100, maxRetryTime: 1_000 };

export function createKafka(o: KafkaBusOptions, sockets: Sockets, logger: BusLogger): Kafka {
  installProduceEncoder();
  return new Kafka({
    clientId: o.clientId ?? 'svc-bus',
    brokers: [...o.brokers],
    connectionTimeout: o.connectionTimeoutMs ?? 2_000,
    requestTimeout: o.requestTimeoutMs ?? 5_000,
    retry: shortRetry,
    socketFactory: sockets.factory,
    ...(o.ssl ? { ssl: o.ssl } : {}),
    ...(o.sasl ? { sasl: o.sasl } : {}),
    logLevel: logLevel.INFO,
    logCreator: kafkaLogs(logger),
  });
}

/** kafkajs logs into ours: its errors stay errors, its chatty info becomes debug. */
function kafkaLogs(logger: BusLogger): logCreator {
  return () =>
    ({ namespace, level, log }) => {
      const { message, ...extra } = log;
      const entry = { ...extra, kafkajs: namespace };
      const text = `kafkajs: ${message}`;
      // Bounded retries are deliberate (see shortRetry): their warning is noise here.
      if (level === logLevel.ERROR) logger.error(entry, text);
      else if (level === logLevel.WARN && !message.startsWith('Limiting retries')) logger.warn(entry, text);
      else logger.debug(entry, text);
    };
}
