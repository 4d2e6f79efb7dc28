// A callback receiver on node:http that verifies every request before reading it: the
// example of the README, kept here whole so that the tests run it against real callbacks.
//
// Why the handler reads the body itself: verifying needs the raw bytes, so no JSON parser
// may run before it. The same handler serves Express (`app.post('/hooks/remind', handler)`)
// as long as no body parser (`express.json()`) is mounted on that route before it.
//
//   node dist/example/receiver.js    (TIMEWHEEL_SIGNING_SECRETS=new,old  PUBLIC_URL=https://...)

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readRawBody, SignatureError, verifySignature, type Verified } from '../src';

/**
 * A request handler for callbacks registered as `publicUrl` (exactly the text given at
 * submit). `onCallback` gets the verified facts and the parsed body; its throw answers 500,
 * so the service retries.
 */
export function callbackHandler(
  publicUrl: string, secrets: string[],
  onCallback: (verified: Verified, body: unknown) => Promise<void> | void,
) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let verified: Verified;
    let raw: Buffer;
    try {
      raw = await readRawBody(req);
      verified = verifySignature({ method: req.method!, url: publicUrl, headers: req.headers, body: raw }, { secrets });
    } catch (e) {
      res.writeHead(e instanceof SignatureError ? 401 : 413).end();
      return;
    }
    try {
      // Only now is the body trusted enough to parse.
      await onCallback(verified, raw.length > 0 ? JSON.parse(raw.toString('utf8')) : null);
      res.writeHead(200).end();
    } catch {
      res.writeHead(500).end();
    }
  };
}

if (require.main === module) {
  const url = process.env.PUBLIC_URL ?? 'http://127.0.0.1:9000/hooks/remind';
  const secrets = (process.env.TIMEWHEEL_SIGNING_SECRETS ?? '').split(',').filter(Boolean);
  const handler = callbackHandler(url, secrets, ({ taskId, attempt }, body) => {
    console.log(`task ${taskId}, attempt ${attempt}:`, body);
  });
  createServer(handler).listen(Number(new URL(url).port || 9000), '127.0.0.1');
}
