// What the live tests share: a real timewheeld (the binary named by TIMEWHEELD_BINARY) on a
// SQLite store of its own, on 127.0.0.1, ended by its PID; and a receiver on node:http that
// keeps every callback it gets, raw, so that a test can check the signature on the real bytes.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../src/errors';
import { readRawBody } from '../src/receiver';

export const binary = process.env.TIMEWHEELD_BINARY;
/** Why the live tests are skipped, or false when they run. */
export const skipLive: string | false = !binary
  ? 'TIMEWHEELD_BINARY is not set (test/run.sh --timewheeld PATH sets it)'
  : !existsSync(binary) ? `no timewheeld at ${binary}` : false;

export const token = 'ts-client-test-token';

/** The ApiError a call must fail with (any other outcome fails the test). */
export async function apiError(call: Promise<unknown>): Promise<ApiError> {
  const e = await call.then(() => assert.fail('expected an ApiError'), (x: unknown) => x);
  assert.ok(e instanceof ApiError, String(e));
  return e;
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export class Service {
  private constructor(readonly baseUrl: string, private readonly proc: ChildProcess, private readonly dir: string) {}

  static async start(extraArgs: string[] = []): Promise<Service> {
    const dir = mkdtempSync(join(tmpdir(), 'tw-tsclient-'));
    const portFile = join(dir, 'port');
    const proc = spawn(binary!, [
      '--port', '0', '--port-file', portFile, '--store', `sqlite:${join(dir, 'tasks.db')}`,
      '--callback-allow-loopback', '--log-level', 'warn', ...extraArgs,
    ], { env: { ...process.env, TIMEWHEELD_TOKEN: token }, stdio: ['ignore', 'ignore', 'inherit'] });
    let exited: number | null = null;
    proc.on('exit', (code) => { exited = code ?? -1; });
    const port = await waitFor('timewheeld to listen', () => {
      if (exited !== null) throw new Error(`timewheeld exited with ${exited}`);
      return existsSync(portFile) ? readFileSync(portFile, 'utf8').trim() || undefined : undefined;
    });
    return new Service(`http://127.0.0.1:${port}`, proc, dir);
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      process.kill(this.proc.pid!, 'SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A receiver keeping every request; `answer` decides each status (200 by default). */
export class Receiver {
  readonly requests: Received[] = [];
  answer: (r: Received) => number = () => 200;
  private constructor(private readonly server: Server, readonly base: string) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const receiver = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', async (req, res) => {
      const r = { method: req.method!, path: req.url!, headers: req.headers, body: await readRawBody(req) };
      receiver.requests.push(r);
      res.writeHead(receiver.answer(r)).end();
    });
    return receiver;
  }

  /** The requests made to `path`, once at least `count` came. */
  waitFor(path: string, count = 1): Promise<Received[]> {
    return waitFor(`${count} request(s) to ${path}`, () => {
      const got = this.requests.filter((r) => r.path === path);
      return got.length >= count ? got : undefined;
    });
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}
