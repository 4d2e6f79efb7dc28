// The receiver's side of a callback: checking `Timewheel-Signature` v2 (docs/server.md,
// "The signature") before trusting anything in the request.
//
// Why the body must be the RAW bytes: the signature covers the body exactly as sent. A
// framework that parses JSON first and hands back `JSON.stringify(parsed)` changes spacing,
// key order or escapes, and the signature no longer matches (the most reported failure of
// webhook verifiers). Read the bytes, verify, and only then parse. Why the URL is the one
// given at submit: the signature covers that text, and a receiver behind a proxy sees another
// host, port or path in its own request line; the receiver knows what it registered.

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Request headers as node:http gives them (lower-case names) or a WHATWG `Headers`. */
export type HeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface SignedRequest {
  /** The callback's method (`POST` unless the task said otherwise). */
  method: string;
  /** The callback URL exactly as given at submit (not the request line this receiver saw). */
  url: string;
  headers: HeaderSource;
  /** The body's raw bytes, before any parsing. */
  body: Uint8Array | string;
}

export interface VerifyOptions {
  /** One secret or several (during a rotation: the new and the old); any may match. */
  secrets: string | Uint8Array | ReadonlyArray<string | Uint8Array>;
  /** How far `t` may be from this receiver's clock, in seconds: 300 by default. */
  toleranceSeconds?: number;
  /** This receiver's clock in milliseconds since the epoch; `Date.now` by default (tests
   *  inject another). */
  now?: () => number;
}

/** What a verified request says about itself. */
export interface Verified {
  /** The task id (`Idempotency-Key`): the same on every attempt, to drop a repeat. */
  taskId: string;
  /** `Timewheel-Attempt`, from 1: the `attempt` of a result report after a 202. */
  attempt: number;
  /** When the service signed it (Unix seconds). */
  signedAt: number;
  /** Which of `options.secrets` matched (0 is the first): tells when the old one is unused. */
  secretIndex: number;
}

export type SignatureFailure =
  | 'missing_header' | 'malformed_header' | 'stale_timestamp' | 'no_match';

/** A request that does not prove it comes from timewheeld. Answer it 401 and drop it. */
export class SignatureError extends Error {
  readonly reason: SignatureFailure;
  constructor(reason: SignatureFailure, message: string) {
    super(message);
    this.name = 'SignatureError';
    this.reason = reason;
  }
}

/**
 * Verifies a callback's `Timewheel-Signature` v2 and returns what it proves, or throws
 * SignatureError. `request.body` must be the raw bytes received: verify first, parse after.
 * The comparison is constant-time (`crypto.timingSafeEqual`) for every `v2` entry and secret.
 */
export function verifySignature(request: SignedRequest, options: VerifyOptions): Verified {
  const header = single(request.headers, 'timewheel-signature');
  const taskId = single(request.headers, 'idempotency-key');
  const attemptText = single(request.headers, 'timewheel-attempt');
  if (header === undefined || taskId === undefined || attemptText === undefined) {
    throw new SignatureError('missing_header', 'no Timewheel-Signature, Idempotency-Key or Timewheel-Attempt header (or one given twice)');
  }
  let t: string | undefined;
  const macs: Buffer[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) throw new SignatureError('malformed_header', 'Timewheel-Signature has an entry without "="');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') t = value;
    // Other schemes (v1 during a migration) and malformed v2 entries cannot match: skipped.
    else if (key === 'v2' && /^[0-9a-f]{64}$/.test(value)) macs.push(Buffer.from(value, 'hex'));
  }
  if (t === undefined || !/^\d{1,15}$/.test(t)) {
    throw new SignatureError('malformed_header', 'Timewheel-Signature has no t=<unix seconds>');
  }
  if (!/^\d{1,9}$/.test(attemptText)) {
    throw new SignatureError('malformed_header', 'Timewheel-Attempt is not a number');
  }
  const signedAt = Number(t);
  const tolerance = options.toleranceSeconds ?? 300;
  const now = (options.now ?? Date.now)() / 1000;
  if (Math.abs(now - signedAt) > tolerance) {
    throw new SignatureError('stale_timestamp', `signed at ${signedAt}, ${Math.round(now - signedAt)} s from this clock (tolerance ${tolerance} s)`);
  }
  const text = canonicalText(t, request.method, request.url, taskId, attemptText, request.body);
  const secrets = Array.isArray(options.secrets) ? options.secrets : [options.secrets as string | Uint8Array];
  if (secrets.length === 0) throw new TypeError('verifySignature: no secret given');
  let secretIndex = -1;
  secrets.forEach((secret, i) => {
    const expected = createHmac('sha256', secret).update(text).digest();
    // Every entry is compared, so the time taken says nothing about which one matched.
    for (const mac of macs) {
      if (timingSafeEqual(mac, expected) && secretIndex < 0) secretIndex = i;
    }
  });
  if (secretIndex < 0) throw new SignatureError('no_match', 'no v2 signature matches the secrets, method, URL, task, attempt and body');
  return { taskId, attempt: Number(attemptText), signedAt, secretIndex };
}

/** The text the service signs: t, method, URL, task id, attempt and body, joined by "\n". */
export function canonicalText(t: string, method: string, url: string, taskId: string, attempt: string, body: Uint8Array | string): Buffer {
  return Buffer.concat([Buffer.from([t, method, url, taskId, attempt, ''].join('\n')), Buffer.from(body)]);
}

/**
 * Reads a node:http request's raw body, refusing more than `maxBytes` (1 MiB by default, the
 * largest callback body the service sends). Rejects with a RangeError past the bound.
 */
export function readRawBody(request: IncomingMessage, maxBytes = 1024 * 1024): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new RangeError(`request body over ${maxBytes} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks, size)));
    request.on('error', reject);
  });
}

function single(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? undefined : value;
}
