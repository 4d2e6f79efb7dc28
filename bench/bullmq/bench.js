// bench/bullmq/bench.js
//
// BullMQ, the peer of timewheel's durable queue, measured the way bench/dq/dq_bench.cpp
// measures timewheel::dq, against the same redis-server, in the same run
// (scripts/bench-dq.sh runs both, FLUSHALL between them). Prints one JSON object per line.
//
//   throughput  N delayed jobs added first (addBulk, 1000 per call, 8 calls in flight), due
//               spread evenly over --window-ms that starts --lead after the add is expected to
//               end (the add rate is calibrated first on a scratch queue); then --workers
//               worker processes (child processes, each one Worker with --concurrency) and a
//               no-op processor. Tasks per second = N / (last ack - max(first due, workers
//               ready)); an ack is the worker's 'completed' event (after BullMQ's
//               moveToFinished script returned). With --memory: Redis `used_memory` before and
//               after the add (nothing else in the database), divided by N.
//   lateness    N jobs, due one per 1000/--rate ms, all added ahead of the first due time; one
//               worker process; lateness = handler start - due time, both read on this
//               machine's wall clock (Date.now-based, sub-millisecond through
//               performance.timeOrigin + performance.now(); Redis TIME reads the same
//               CLOCK_REALTIME, so this is the store's clock too).
//
// Usage: node bench.js throughput|lateness --port P [--n N] [--workers W] [--concurrency C]
//                      [--window-ms 1000] [--payload 100] [--rate 1000] [--memory]
//                      [--remove-on-complete]
// Jobs: payload = a string of --payload bytes (stored as JSON, so 2 more bytes), default
// options (attempts 1, completed jobs kept, as BullMQ does unless told otherwise).

'use strict';

const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');
const { fork } = require('child_process');
const { performance } = require('perf_hooks');

const wall = () => performance.timeOrigin + performance.now(); // ms, fractional

function parse(argv) {
  const o = {
    mode: argv[0],
    port: 6379,
    n: 100000,
    workers: 1,
    concurrency: 100,
    windowMs: 1000,
    payload: 100,
    rate: 1000,
    memory: false,
    removeOnComplete: false,
    queue: 'bench',
    leadMs: 0,
  };
  for (let i = 1; i < argv.length; ++i) {
    const k = argv[i];
    const v = () => argv[++i];
    if (k === '--port') o.port = Number(v());
    else if (k === '--n') o.n = Number(v());
    else if (k === '--workers') o.workers = Number(v());
    else if (k === '--concurrency') o.concurrency = Number(v());
    else if (k === '--window-ms') o.windowMs = Number(v());
    else if (k === '--payload') o.payload = Number(v());
    else if (k === '--rate') o.rate = Number(v());
    else if (k === '--memory') o.memory = true;
    else if (k === '--remove-on-complete') o.removeOnComplete = true;
    else if (k === '--queue') o.queue = v();
    else if (k === '--lead-ms') o.leadMs = Number(v());
    else throw new Error(`unknown option ${k}`);
  }
  return o;
}

const connection = (o) => ({ host: '127.0.0.1', port: o.port, maxRetriesPerRequest: null });

async function usedMemory(redis) {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)[1]);
}

async function cpuSeconds(redis) {
  const info = await redis.info('cpu');
  return Number(/used_cpu_sys:([\d.]+)/.exec(info)[1]) +
    Number(/used_cpu_user:([\d.]+)/.exec(info)[1]);
}

// What Redis spent from here to take(): CPU seconds and INFO commandstats, as dq_bench
// reports them.
async function redisProbe(redis) {
  await redis.config('RESETSTAT');
  const cpu0 = await cpuSeconds(redis);
  return {
    async take(n, seconds) {
      const cpu = (await cpuSeconds(redis)) - cpu0;
      const stats = await redis.info('commandstats');
      let script = 0; let all = 0; let scriptCalls = 0;
      const top = [];
      for (const m of stats.matchAll(/cmdstat_([^:]+):calls=(\d+),usec=(\d+)/g)) {
        const [name, calls, usec] = [m[1], Number(m[2]), Number(m[3])];
        if (name === 'info' || name === 'config') continue;
        all += usec;
        if (['evalsha', 'eval', 'fcall', 'evalsha_ro'].includes(name)) {
          script += usec;
          scriptCalls += calls;
        }
        top.push([usec, `${name}:${usec}us/${calls}`]);
      }
      top.sort((a, b) => b[0] - a[0]);
      return {
        redis_cpu_us_per_task: +((cpu * 1e6) / n).toFixed(2),
        redis_cpu_share: +(cpu / seconds).toFixed(2),
        redis_script_us_per_task: +(script / n).toFixed(2),
        redis_cmd_us_per_task: +(all / n).toFixed(2),
        redis_script_calls: scriptCalls,
        redis_top: top.slice(0, 3).map((t) => t[1]).join(' '),
      };
    },
  };
}

// Adds jobs[i] for i in [0, n), due at due(i), 1000 per addBulk, 8 in flight.
async function addAll(queue, o, n, due, timestamp) {
  const payload = 'x'.repeat(o.payload);
  const chunk = 1000;
  const inflight = 8;
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const from = next;
      const to = Math.min(n, from + chunk);
      next = to;
      const jobs = [];
      for (let i = from; i < to; ++i) {
        jobs.push({
          name: 't',
          data: payload,
          opts: {
            jobId: `t${i}`,
            timestamp,
            delay: Math.max(1, due(i) - timestamp),
            removeOnComplete: o.removeOnComplete,
          },
        });
      }
      await queue.addBulk(jobs);
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
}

// Adds calibration jobs to a scratch queue: how many adds per second this run can expect.
// Two rounds, the first one to warm up (script loading, JIT); the rate of the second.
async function calibrate(o, redis) {
  const n = Math.min(20000, Math.max(5000, Math.floor(o.n / 20)));
  const q = new Queue(`${o.queue}-calibrate`, { connection: connection(o) });
  const now = Date.now();
  let rate = 0;
  for (let round = 0; round < 2; ++round) {
    const t0 = wall();
    await addAll(q, o, n, () => now + 3600000, now);
    rate = n / ((wall() - t0) / 1000);
    await redis.flushall();
  }
  await q.close();
  return rate;
}

function spawnWorkers(o, mode) {
  const children = [];
  for (let w = 0; w < o.workers; ++w) {
    const args = ['worker', '--port', String(o.port), '--concurrency', String(o.concurrency),
      '--queue', o.queue, '--mode-of', mode];
    const child = fork(__filename, args, { stdio: 'inherit' });
    const state = { child, ready: null, acked: 0, final: null };
    child.on('message', (m) => {
      if (m.type === 'ready') state.ready = m.at;
      else if (m.type === 'progress') state.acked = m.acked;
      else if (m.type === 'final') state.final = m;
    });
    children.push(state);
  }
  return children;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(pred, what, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

async function stopWorkers(children) {
  for (const c of children) c.child.send({ type: 'stop' });
  await waitFor(() => children.every((c) => c.final), 'the workers to stop', 60000);
  await Promise.all(children.map((c) => new Promise((r) => {
    if (c.child.exitCode !== null) r();
    else c.child.on('exit', r);
  })));
  return children.map((c) => c.final);
}

async function throughput(o) {
  const redis = new IORedis(connection(o));
  await redis.flushall();
  const addRate = await calibrate(o, redis);
  const before = await usedMemory(redis);
  const queue = new Queue(o.queue, { connection: connection(o) });
  await queue.waitUntilReady();
  // Due from `first`, spread over the window; `first` leaves the expected add time plus a
  // margin (and the time to start the workers).
  const expectedAddMs = (o.n / addRate) * 1000;
  const lead = o.leadMs || Math.ceil(expectedAddMs * 1.1 + 1000);
  const t0 = Date.now();
  const first = t0 + lead;
  const due = (i) => first + Math.floor((i * o.windowMs) / o.n);
  const a0 = wall();
  await addAll(queue, o, o.n, due, t0);
  const addSeconds = (wall() - a0) / 1000;
  const addEnd = Date.now();
  const after = await usedMemory(redis);
  const delayedCount = await redis.zcard(`bull:${o.queue}:delayed`);
  if (delayedCount !== o.n) throw new Error(`${delayedCount} delayed jobs, expected ${o.n}`);
  const probe = await redisProbe(redis);
  const children = spawnWorkers(o, 'throughput');
  await waitFor(() => children.every((c) => c.ready), 'the workers to be ready', 30000);
  const ready = Math.max(...children.map((c) => c.ready));
  await waitFor(() => children.reduce((s, c) => s + c.acked, 0) >= o.n, 'every ack',
    Math.max(600000, lead + 600000));
  const drainEnd = wall();
  const finals = await stopWorkers(children);
  const acked = finals.reduce((s, f) => s + f.acked, 0);
  const lastAck = Math.max(...finals.map((f) => f.lastAck));
  const firstStart = Math.min(...finals.map((f) => f.firstStart));
  const from = Math.max(first, ready);
  const out = {
    system: 'bullmq',
    case: 'throughput',
    n: o.n,
    workers: o.workers,
    concurrency: o.concurrency,
    window_ms: o.windowMs,
    submit_s: +addSeconds.toFixed(3),
    submit_per_s: Math.round(o.n / addSeconds),
    due_after_submit_ms: first - addEnd, // > 0: every job was added before the first was due
    workers_ready_after_due_ms: +(ready - first).toFixed(1), // < 0: ready in time
    first_start_after_due_ms: +(firstStart - first).toFixed(1),
    seconds: +((lastAck - from) / 1000).toFixed(3),
    tasks_per_s: Math.round(o.n / ((lastAck - from) / 1000)),
    acked,
  };
  Object.assign(out, await probe.take(o.n, (drainEnd - Math.max(first, ready)) / 1000));
  if (o.memory) {
    out.used_memory_before = before;
    out.used_memory_after = after;
    out.bytes_per_task = +((after - before) / o.n).toFixed(1);
  }
  console.log(JSON.stringify(out));
  await queue.close();
  await redis.quit();
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function lateness(o) {
  const redis = new IORedis(connection(o));
  await redis.flushall();
  const addRate = await calibrate(o, redis);
  const queue = new Queue(o.queue, { connection: connection(o) });
  await queue.waitUntilReady();
  const interval = 1000 / o.rate;
  const t0 = Date.now();
  // All added ahead of the first due time, with a margin.
  const first = t0 + (o.leadMs || Math.ceil((o.n / addRate) * 1000 * 1.5 + 2000));
  const due = (i) => first + Math.floor(i * interval);
  await addAll(queue, o, o.n, due, t0);
  const addEnd = Date.now();
  o.workers = 1;
  const probe = await redisProbe(redis);
  const children = spawnWorkers(o, 'lateness');
  await waitFor(() => children.every((c) => c.ready), 'the worker to be ready', 30000);
  await waitFor(() => children[0].acked >= o.n, 'every ack', first - Date.now() + 600000);
  // Redis over the whole run (the wait before the first due time included).
  const spanS = (Date.now() - addEnd) / 1000;
  const cost = await probe.take(o.n, spanS);
  const [f] = await stopWorkers(children);
  const late = f.lateness.slice().sort((a, b) => a - b);
  console.log(JSON.stringify({
    system: 'bullmq',
    case: 'lateness',
    n: o.n,
    rate: o.rate,
    concurrency: o.concurrency,
    due_after_submit_ms: first - addEnd,
    samples: late.length,
    min_ms: +late[0].toFixed(3),
    p50_ms: +percentile(late, 50).toFixed(3),
    p99_ms: +percentile(late, 99).toFixed(3),
    max_ms: +late[late.length - 1].toFixed(3),
    early: late.filter((x) => x < 0).length,
    scripts_per_s: Math.round(cost.redis_script_calls / spanS),
    ...cost,
  }));
  await queue.close();
  await redis.quit();
}

// A child process: one Worker with a no-op processor, reporting to its parent.
async function worker(argv) {
  let modeOf = 'throughput';
  const rest = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--mode-of') modeOf = argv[++i];
    else rest.push(argv[i]);
  }
  const o = parse(['worker', ...rest]);
  const keep = modeOf === 'lateness';
  const lateness = [];
  let acked = 0;
  let firstStart = Infinity;
  let lastAck = 0;
  const w = new Worker(o.queue, async (job) => {
    const now = wall();
    if (now < firstStart) firstStart = now;
    if (keep) lateness.push(now - (job.timestamp + job.opts.delay));
  }, { connection: connection(o), concurrency: o.concurrency, autorun: false });
  w.on('completed', () => {
    ++acked;
    lastAck = wall();
  });
  w.on('error', (e) => console.error('worker error', e));
  let reported = -1;
  const timer = setInterval(() => {
    if (acked !== reported) {
      reported = acked;
      process.send({ type: 'progress', acked });
    }
  }, 20);
  process.on('message', async (m) => {
    if (m.type !== 'stop') return;
    clearInterval(timer);
    await w.close();
    process.send({ type: 'final', acked, firstStart, lastAck, lateness }, () => process.exit(0));
  });
  w.run();
  await w.waitUntilReady();
  process.send({ type: 'ready', at: wall() });
}

(async () => {
  const mode = process.argv[2];
  try {
    if (mode === 'worker') await worker(process.argv.slice(3));
    else if (mode === 'throughput') await throughput(parse(process.argv.slice(2)));
    else if (mode === 'lateness') await lateness(parse(process.argv.slice(2)));
    else throw new Error('usage: node bench.js throughput|lateness --port P [...]');
  } catch (e) {
    console.error(e);
    process.exit(1);
  }
})();
