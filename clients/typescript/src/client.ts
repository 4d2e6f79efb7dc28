// The client of the timewheeld API (docs/openapi.yaml): one method per operation, the
// bodies typed in types.ts, the errors in errors.ts.
//
// Why it reads answers itself instead of `response.json()`: every byte from the network is
// hostile. An answer is read up to `maxResponseBytes` and no further, must say it is JSON and
// parse as an object of the documented shape, or the call throws ResponseError naming what
// was wrong; a caller never sees half a page or a proxy's HTML as if it were the API's.

import { ApiError, ResponseError, TimewheelError, TransportError } from './errors';
import type {
  BatchResult, Cancelled, DeadEntry, DeadPage, Deleted, DueTime, ErrorBody, NextQuery, Occurrences,
  Page, PageQuery, PreviewRequest, Queue, QueueCreate, QueueListQuery, QueuePage, QueuePatch,
  ResultAnswer, ResultReport, Schedule, ScheduleCreate, SchedulePage, SchedulePatch, Stats, Task, TaskEntry, TaskListQuery, TaskPage, TaskSubmit,
} from './types';

export interface ClientOptions {
  /** Where timewheeld listens: `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string;
  /** The bearer token (timewheeld's `--token` / TIMEWHEELD_TOKEN). */
  token?: string;
  /** Per call, the answer's body included. 30 s by default. */
  timeoutMs?: number;
  /** The largest answer read, in bytes; a larger one is a ResponseError. 16 MiB by default
   *  (a task's callback body alone may be 1 MiB, escaped in JSON). */
  maxResponseBytes?: number;
  /** For tests and proxies: the fetch to use. The global `fetch` (node >= 18) by default. */
  fetch?: typeof fetch;
}

/** The answer to a submit: 201 created, or 200 when the id existed (`task.replaced` says
 *  whether this submit replaced it). The shape of a batch's successful result. */
export interface Submitted {
  status: 200 | 201;
  task: Task;
}

type Query = Record<string, string | number | undefined>;

export class TimewheelClient {
  private readonly base: string;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 16 * 1024 * 1024;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof this.fetchImpl !== 'function') {
      throw new TimewheelError('no global fetch: node >= 18 is needed, or pass options.fetch');
    }
  }

  /** `POST /v1/tasks`. `on_conflict` decides what an existing id does (409 `conflict` when the
   *  task is past replacing); completion notices go in `callback.on_success`/`on_failure`. */
  async submit(task: TaskSubmit): Promise<Submitted> {
    const { status, body } = await this.call('POST', '/v1/tasks', { body: task, expect: [200, 201] });
    return { status: status as 200 | 201, task: expectTask(status, body) };
  }

  /** `POST /v1/tasks:batch`: 1 to 1000 tasks, one result per task, in order. An item's own
   *  failure (400, 409, 503, 507) is in its result, not thrown. */
  async submitBatch(tasks: TaskSubmit[]): Promise<BatchResult[]> {
    const { status, body } = await this.call('POST', '/v1/tasks:batch', { body: { tasks } });
    const results = expectArray(status, body, 'results');
    if (results.length !== tasks.length) {
      throw new ResponseError(status, `${results.length} results for ${tasks.length} tasks`);
    }
    for (const r of results) {
      const item = expectObject(status, r, ['status'], 'a batch result');
      expectObject(status, item, [item.status === 200 || item.status === 201 ? 'task' : 'error'], 'a batch result');
    }
    return results as BatchResult[];
  }

  /** `GET /v1/tasks/{id}`: 404 ApiError when no such task is known. */
  async get(id: string): Promise<Task> {
    const { status, body } = await this.call('GET', taskPath(id));
    return expectTask(status, body);
  }

  /** `DELETE /v1/tasks/{id}`: 409 `too_late` once it runs or has ended. */
  async cancel(id: string): Promise<Cancelled> {
    const { status, body } = await this.call('DELETE', taskPath(id));
    return expectObject(status, body, ['id', 'state'], 'the cancelled task') as unknown as Cancelled;
  }

  /** `PATCH /v1/tasks/{id}`: 409 `wrong_state` once it runs or has ended. */
  async reschedule(id: string, due: DueTime): Promise<Task> {
    const { status, body } = await this.call('PATCH', taskPath(id), { body: due });
    return expectTask(status, body);
  }

  /** `GET /v1/tasks`: one page of the tasks in one state. */
  async list(query: TaskListQuery): Promise<TaskPage> {
    const { status, body } = await this.call('GET', '/v1/tasks', { query: { ...query } });
    return expectPage<TaskEntry>(status, body);
  }

  /** Every task `list(query)` finds, page after page (`query.limit` is the page size). */
  listAll(query: TaskListQuery): AsyncGenerator<TaskEntry> {
    return entriesOf((cursor) => this.list({ ...query, cursor }), query.cursor);
  }

  /** `GET /v1/dead`: one page of dead letters, oldest death first. */
  async dead(query: PageQuery = {}): Promise<DeadPage> {
    const { status, body } = await this.call('GET', '/v1/dead', { query: { ...query } });
    return expectPage<DeadEntry>(status, body);
  }

  /** Every dead letter, page after page. */
  deadAll(query: PageQuery = {}): AsyncGenerator<DeadEntry> {
    return entriesOf((cursor) => this.dead({ ...query, cursor }), query.cursor);
  }

  /** `POST /v1/dead/{id}/retry`: delayed again (due now by default), its attempts reset. */
  async retryDead(id: string, due?: DueTime): Promise<Task> {
    const { status, body } = await this.call('POST', `/v1/dead/${encodeURIComponent(id)}/retry`, { body: due });
    return expectTask(status, body);
  }

  /** `DELETE /v1/dead/{id}`. */
  async deleteDead(id: string): Promise<Deleted> {
    const { status, body } = await this.call('DELETE', `/v1/dead/${encodeURIComponent(id)}`);
    return expectObject(status, body, ['id', 'deleted'], 'the deleted dead letter') as unknown as Deleted;
  }

  /** `POST /v1/tasks/{id}/result`: the result a callback that answered 202 promised.
   *  404 `no_pending_attempt`, 409 `wrong_attempt` are thrown as ApiError. */
  async reportResult(id: string, report: ResultReport): Promise<ResultAnswer> {
    const { status, body } = await this.call('POST', `${taskPath(id)}/result`, { body: report, expect: [200, 202] });
    return expectObject(status, body, ['id', 'attempt'], 'the result answer') as unknown as ResultAnswer;
  }

  /** `POST /v1/schedules`: 201 created, 200 when the same spec exists under the id; another
   *  spec under the id is a 409 `schedule_conflict` (change a schedule with updateSchedule). */
  async createSchedule(spec: ScheduleCreate): Promise<{ status: 200 | 201; schedule: Schedule }> {
    const { status, body } = await this.call('POST', '/v1/schedules', { body: spec, expect: [200, 201] });
    return { status: status as 200 | 201, schedule: expectSchedule(status, body) };
  }

  /** `GET /v1/schedules/{id}`. */
  async getSchedule(id: string): Promise<Schedule> {
    const { status, body } = await this.call('GET', schedulePath(id));
    return expectSchedule(status, body);
  }

  /** `GET /v1/schedules`: one page. */
  async listSchedules(query: PageQuery = {}): Promise<SchedulePage> {
    const { status, body } = await this.call('GET', '/v1/schedules', { query: { ...query } });
    return expectPage<Schedule>(status, body);
  }

  /** Every schedule, page after page. */
  listAllSchedules(query: PageQuery = {}): AsyncGenerator<Schedule> {
    return entriesOf((cursor) => this.listSchedules({ ...query, cursor }), query.cursor);
  }

  /** `PATCH /v1/schedules/{id}`: the fields given replace theirs; a changed rule restarts
   *  the schedule from now. */
  async updateSchedule(id: string, patch: SchedulePatch): Promise<Schedule> {
    const { status, body } = await this.call('PATCH', schedulePath(id), { body: patch });
    return expectSchedule(status, body);
  }

  /** `DELETE /v1/schedules/{id}`: the tasks it made stay, ordinary tasks. */
  async deleteSchedule(id: string): Promise<Deleted> {
    const { status, body } = await this.call('DELETE', schedulePath(id));
    return expectObject(status, body, ['id', 'deleted'], 'the deleted schedule') as unknown as Deleted;
  }

  /** `POST /v1/schedules/{id}/pause` (idempotent). */
  async pauseSchedule(id: string): Promise<Schedule> {
    const { status, body } = await this.call('POST', `${schedulePath(id)}/pause`);
    return expectSchedule(status, body);
  }

  /** `POST /v1/schedules/{id}/resume` (idempotent; what was missed while paused is skipped). */
  async resumeSchedule(id: string): Promise<Schedule> {
    const { status, body } = await this.call('POST', `${schedulePath(id)}/resume`);
    return expectSchedule(status, body);
  }

  /** `POST /v1/schedules/{id}/trigger`: one extra task now. Not idempotent: a retried
   *  trigger may run twice. */
  async triggerSchedule(id: string): Promise<Task> {
    const { status, body } = await this.call('POST', `${schedulePath(id)}/trigger`, { expect: [201] });
    return expectTask(status, body);
  }

  /** `GET /v1/schedules/{id}/next`: the next occurrences, paused or not. */
  async nextOccurrences(id: string, query: NextQuery = {}): Promise<Occurrences> {
    const { status, body } = await this.call('GET', `${schedulePath(id)}/next`, { query: { ...query } });
    return expectOccurrences(status, body);
  }

  /** `POST /v1/schedules:preview`: the occurrences of a rule, nothing stored (a 400 naming
   *  `cron`, with `position`, for a bad expression). */
  async previewSchedule(request: PreviewRequest): Promise<Occurrences> {
    const { status, body } = await this.call('POST', '/v1/schedules:preview', { body: request });
    return expectOccurrences(status, body);
  }

  /** `POST /v1/queues` (scope `admin`): 201 created, 200 when the same settings exist under
   *  the name; other settings under it are a 409 `queue_conflict` (change them with
   *  updateQueue). */
  async createQueue(spec: QueueCreate): Promise<{ status: 200 | 201; queue: Queue }> {
    const { status, body } = await this.call('POST', '/v1/queues', { body: spec, expect: [200, 201] });
    return { status: status as 200 | 201, queue: expectQueue(status, body) };
  }

  /** `GET /v1/queues/{id}` (`default` included). */
  async getQueue(id: string): Promise<Queue> {
    const { status, body } = await this.call('GET', queuePath(id));
    return expectQueue(status, body);
  }

  /** `GET /v1/queues`: one page, in byte order of the names. */
  async listQueues(query: QueueListQuery = {}): Promise<QueuePage> {
    const { status, body } = await this.call('GET', '/v1/queues', { query: { ...query } });
    return expectPage<Queue>(status, body);
  }

  /** Every queue, page after page. */
  listAllQueues(query: QueueListQuery = {}): AsyncGenerator<Queue> {
    return entriesOf((cursor) => this.listQueues({ ...query, cursor }), query.cursor);
  }

  /** `PATCH /v1/queues/{id}` (scope `admin`): the fields given replace theirs; the tasks
   *  already submitted keep their policy. */
  async updateQueue(id: string, patch: QueuePatch): Promise<Queue> {
    const { status, body } = await this.call('PATCH', queuePath(id), { body: patch });
    return expectQueue(status, body);
  }

  /** `DELETE /v1/queues/{id}` (scope `admin`): a 409 `queue_not_empty` while it holds
   *  delayed, claimed or dead tasks. */
  async deleteQueue(id: string): Promise<Deleted> {
    const { status, body } = await this.call('DELETE', queuePath(id));
    return expectObject(status, body, ['id', 'deleted'], 'the deleted queue') as unknown as Deleted;
  }

  /** `GET /v1/stats`. */
  async stats(): Promise<Stats> {
    const { status, body } = await this.call('GET', '/v1/stats');
    return expectObject(status, body, ['counts', 'due_now', 'node', 'hosts'], 'the stats') as unknown as Stats;
  }

  /** One request; the answer's JSON when its status is expected, an ApiError when it is an
   *  error answer, a ResponseError for anything else. */
  private async call(
    method: string, path: string,
    options: { body?: unknown; query?: Query; expect?: number[] } = {},
  ): Promise<{ status: number; body: unknown }> {
    const url = new URL(this.base + path);
    for (const [k, v] of Object.entries(options.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.token !== undefined) headers.Authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(options.body);
    }
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.timeoutMs);
    try {
      let response: Response;
      try {
        response = await this.fetchImpl(url, { method, headers, body: payload, signal: abort.signal, redirect: 'manual' });
      } catch (e) {
        throw new TransportError(`${method} ${url.pathname}: ${abort.signal.aborted ? `no answer within ${this.timeoutMs} ms` : describe(e)}`, { cause: e });
      }
      const text = await this.readBounded(response, abort.signal, `${method} ${url.pathname}`);
      const status = response.status;
      const json = parseJson(status, response.headers.get('content-type'), text);
      if ((options.expect ?? [200]).includes(status)) return { status, body: json };
      if (status >= 400) {
        const error = expectObject(status, json, ['error'], 'an error answer').error;
        const e = expectObject(status, error, ['code', 'message'], 'an error answer') as unknown as ErrorBody;
        if (typeof e.code !== 'string' || typeof e.message !== 'string') {
          throw new ResponseError(status, 'an error answer without a string code and message');
        }
        throw new ApiError(status, e, retryAfterSeconds(response.headers.get('retry-after')));
      }
      throw new ResponseError(status, `unexpected status for ${method} ${url.pathname}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private async readBounded(response: Response, signal: AbortSignal, what: string): Promise<string> {
    const declared = Number(response.headers.get('content-length') ?? NaN);
    if (declared > this.maxResponseBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new ResponseError(response.status, `${what}: answer of ${declared} bytes, over the limit of ${this.maxResponseBytes}`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (response.body) {
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          size += value.byteLength;
          if (size > this.maxResponseBytes) {
            await reader.cancel().catch(() => undefined);
            throw new ResponseError(response.status, `${what}: answer over the limit of ${this.maxResponseBytes} bytes`);
          }
          chunks.push(value);
        }
      } catch (e) {
        if (e instanceof TimewheelError) throw e;
        throw new TransportError(`${what}: ${signal.aborted ? `answer not read within ${this.timeoutMs} ms` : describe(e)}`, { cause: e });
      }
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks, size));
    } catch (e) {
      throw new ResponseError(response.status, `${what}: answer is not UTF-8`, { cause: e });
    }
  }
}

function taskPath(id: string): string {
  return `/v1/tasks/${encodeURIComponent(id)}`;
}

function schedulePath(id: string): string {
  return `/v1/schedules/${encodeURIComponent(id)}`;
}

/** A queue's name is one segment: the slash of `acme/billing` is encoded (`acme%2Fbilling`). */
function queuePath(id: string): string {
  return `/v1/queues/${encodeURIComponent(id)}`;
}

async function* entriesOf<E>(page: (cursor: string | undefined) => Promise<Page<E>>, first: string | undefined): AsyncGenerator<E> {
  let cursor = first;
  do {
    const p = await page(cursor);
    yield* p.entries;
    cursor = p.next_cursor ?? undefined;
  } while (cursor !== undefined);
}

function parseJson(status: number, contentType: string | null, text: string): unknown {
  if (!/^application\/json\s*(;|$)/i.test(contentType ?? '')) {
    throw new ResponseError(status, `answer is not JSON (Content-Type ${JSON.stringify(contentType)}): ${JSON.stringify(text.slice(0, 200))}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ResponseError(status, `answer is not valid JSON: ${JSON.stringify(text.slice(0, 200))}`, { cause: e });
  }
}

function expectObject(status: number, value: unknown, keys: string[], what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ResponseError(status, `${what} is not a JSON object`);
  }
  const missing = keys.filter((k) => !(k in value));
  if (missing.length > 0) throw new ResponseError(status, `${what} has no ${missing.join(', ')}`);
  return value as Record<string, unknown>;
}

function expectArray(status: number, value: unknown, key: string): unknown[] {
  const list = expectObject(status, value, [key], 'the answer')[key];
  if (!Array.isArray(list)) throw new ResponseError(status, `${key} is not an array`);
  return list;
}

function expectTask(status: number, value: unknown): Task {
  const task = expectObject(status, value, ['id', 'state', 'due_at'], 'the task');
  return task as unknown as Task;
}

function expectSchedule(status: number, value: unknown): Schedule {
  return expectObject(status, value, ['id', 'time_zone', 'next_occurrence', 'counts'], 'the schedule') as unknown as Schedule;
}

function expectQueue(status: number, value: unknown): Queue {
  return expectObject(status, value, ['id', 'generation', 'retry'], 'the queue') as unknown as Queue;
}

function expectOccurrences(status: number, value: unknown): Occurrences {
  expectArray(status, value, 'occurrences');
  return value as Occurrences;
}

function expectPage<E>(status: number, value: unknown): Page<E> {
  const entries = expectArray(status, value, 'entries');
  const page = value as Record<string, unknown>;
  if (!('next_cursor' in page) || (page.next_cursor !== null && typeof page.next_cursor !== 'string')) {
    throw new ResponseError(status, 'the page has no next_cursor string or null');
  }
  return { entries: entries as E[], next_cursor: page.next_cursor as string | null };
}

/** `Retry-After` in seconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
function retryAfterSeconds(header: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const cause = (e as { cause?: unknown }).cause;
    return cause instanceof Error ? `${e.message} (${cause.message})` : e.message;
  }
  return String(e);
}
