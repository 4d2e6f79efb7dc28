// The bodies of the timewheeld API, written from docs/openapi.yaml (the contract).
//
// Why written by hand and not generated: a generator would be one more dependency for every
// user of a small package, and its output is hard to read. What keeps these types honest is
// the `*Keys` records below: each lists every property of its interface, and the compiler
// refuses a record that misses one or has one too many. test/types.test.ts then compares each
// record with the matching schema of docs/openapi.json, both ways, so a field added to the
// document (or to a type) without the other fails the tests.

/** A time as the service writes it: RFC 3339, UTC, milliseconds (`2026-11-26T01:02:03.456Z`).
 *  On input any RFC 3339 offset is accepted. */
export type Time = string;

export type TaskState = 'delayed' | 'prefetched' | 'running' | 'finished' | 'dead' | 'cancelled';

export type Headers = Record<string, string>;

/** Where a completion notice goes (`callback.on_success`, `callback.on_failure`). */
export interface NoticeTarget {
  url: string;
  headers?: Headers;
}

/** The HTTP request the service makes when the task comes due. */
export interface Callback {
  /** The URL exactly as given: a receiver verifies signatures against this text. */
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Headers;
  /** Sent like `headers`, but shown as `"***"` by every answer. */
  secret_headers?: Headers;
  body?: string;
  timeout_ms?: number;
  on_success?: NoticeTarget;
  on_failure?: NoticeTarget;
}

export interface Retry {
  attempts?: number;
  base_ms?: number;
  cap_ms?: number;
}

export interface RetryShown {
  attempts: number;
  base_ms: number;
  cap_ms: number;
}

/** A submit (`POST /v1/tasks`, one item of a batch): exactly one of `due_at` and `delay_ms`. */
export interface TaskSubmit {
  id?: string;
  due_at?: Time;
  delay_ms?: number;
  callback: Callback;
  retry?: Retry;
  on_conflict?: 'keep' | 'replace' | 'debounce';
  /** Required with `on_conflict: 'debounce'`, refused without it. */
  max_delay_ms?: number;
  /** The queue (`default` when absent); it must exist: 400 `unknown_queue` otherwise. */
  queue?: QueueName;
}

export interface LogEntry {
  attempt: number;
  worker: string;
  started_at: Time;
  ended_at: Time;
  outcome: string;
  error: string | null;
}

export interface NoticeOf {
  task_id: string;
  on_success?: NoticeTarget;
  on_failure?: NoticeTarget;
}

export interface Task {
  id: string;
  state: TaskState;
  attempts: number;
  due_at: Time;
  created_at: Time;
  updated_at: Time;
  retry: RetryShown;
  last_error: string | null;
  /** null where the store no longer keeps it (Redis: a finished or cancelled task). */
  callback?: Callback | null;
  payload?: string;
  /** A notice task (`<id>~notice`) shows this in place of `callback`. */
  notice?: NoticeOf | null;
  log: LogEntry[];
  /** On a submit answered 200: whether this submit replaced the task. */
  replaced?: boolean;
  /** Its queue; null when the store no longer knows it (Redis: a finished task). */
  queue?: string | null;
}

export interface TaskEntry {
  id: string;
  state: TaskState;
  due_at: Time | null;
  ended_at?: Time;
  attempt: number;
  last_error: string | null;
  callback: { method: string; url: string } | null;
  /** Its queue; null when the store no longer knows it (Redis: a finished task). */
  queue?: string | null;
}

export interface Page<E> {
  entries: E[];
  /** null on the last page. */
  next_cursor: string | null;
}

export type TaskPage = Page<TaskEntry>;

export interface DeadEntry {
  id: string;
  died_at: Time;
  attempts: number;
  last_error: string | null;
}

export type DeadPage = Page<DeadEntry>;

/** The `error` member of every error answer. */
export interface ErrorBody {
  code: string;
  field?: string;
  message: string;
  position?: number;
  /** With 409 `conflict`: the state of the task that was not replaced. */
  state?: TaskState;
  /** In a batch result: the item's place in `tasks`. */
  index?: number;
}

export type BatchResult =
  | { status: 200 | 201; task: Task }
  | { status: 400 | 409 | 503 | 507; error: ErrorBody & { index: number } };

export interface BatchResults {
  results: BatchResult[];
}

export interface Cancelled {
  id: string;
  state: 'cancelled';
}

export interface ResultReport {
  /** The attempt number the callback was sent with (its Timewheel-Attempt header). */
  attempt: number;
  outcome: 'success' | 'retry' | 'failure';
  error?: string;
  /** Only with `outcome: 'retry'`. */
  retry_after_ms?: number;
}

/** 200: the waiting attempt took the report; 202 (Redis): sent on, the holder may take it. */
export type ResultAnswer =
  | { id: string; attempt: number; accepted: true }
  | { id: string; attempt: number; forwarded: true };

export interface Deleted {
  id: string;
  deleted: true;
}

/** A due time (`PATCH /v1/tasks/{id}`, a dead letter's retry): exactly one of the two. */
export type DueTime = { due_at: Time; delay_ms?: never } | { delay_ms: number; due_at?: never };

/** The paging parameters of every list. */
export interface PageQuery {
  limit?: number;
  /** A previous page's `next_cursor`, as given. */
  cursor?: string;
}

/** The parameters of `GET /v1/tasks`. */
export interface TaskListQuery {
  state: TaskState;
  order?: 'asc' | 'desc';
  due_after?: Time;
  due_before?: Time;
  ended_after?: Time;
  ended_before?: Time;
  id_prefix?: string;
  host?: string;
  /** Only the tasks of this queue (`default` for those that name none); not with `finished`. */
  queue?: QueueName;
  limit?: number;
  cursor?: string;
}

export interface StateCounts {
  delayed: number;
  prefetched: number;
  running: number;
  finished: number;
  dead: number;
  cancelled: number;
}

export interface NodeStats {
  window_s: number;
  throughput: { at: Time; fired: number; succeeded: number; failed: number }[];
  callbacks_per_second: number;
  lateness_ms: { p50: number; p90: number; p99: number; max: number; count: number };
  lateness_histogram: { le_ms: number | null; count: number }[];
}

export interface HostStats {
  host: string;
  in_flight: number;
  backing_off: number;
  succeeded: number;
  failed: number;
  last_error: string | null;
}

export interface Stats {
  counts: StateCounts;
  due_now: number;
  oldest_due_age_ms: number | null;
  node: NodeStats;
  hosts: HostStats[];
}

/** What happens to occurrences missed while no node ran. */
export interface Misfire {
  policy?: 'run_latest' | 'skip' | 'run_all';
  /** With `run_all`: at most this many, the latest ones. */
  limit?: number;
}

/** The fields of a schedule a create or a PATCH gives: exactly one of `cron` and `every_ms`
 *  on a create; on a PATCH the fields given replace theirs, `null` clears the bounds. */
export interface ScheduleFields {
  cron?: string;
  every_ms?: number;
  /** The IANA zone a cron expression is read in; `UTC` by default. */
  time_zone?: string;
  callback?: Callback;
  retry?: Retry;
  start_at?: Time | null;
  end_at?: Time | null;
  paused?: boolean;
  misfire?: Misfire;
  overlap?: 'allow' | 'forbid';
}

/** `POST /v1/schedules`: the id is required (a retried create must not make a second one). */
export interface ScheduleCreate extends ScheduleFields {
  id: string;
  callback: Callback;
  start_at?: Time;
  end_at?: Time;
}

export type SchedulePatch = ScheduleFields;

export interface Occurrence {
  at: Time;
  /** The same instant on the zone's wall clock (`2026-03-29T03:00:00+02:00`). */
  local: string;
}

export interface ScheduleCounts {
  occurrences: number;
  triggers: number;
  skipped_misfire: number;
  skipped_overlap: number;
}

export interface Schedule {
  id: string;
  cron?: string;
  every_ms?: number;
  time_zone: string;
  callback?: Callback;
  payload?: string;
  retry: RetryShown;
  start_at: Time | null;
  end_at: Time | null;
  paused: boolean;
  misfire: Misfire;
  overlap: 'allow' | 'forbid';
  /** null once the rule has ended. */
  next_occurrence: { at: Time; local?: string } | null;
  last_task_id: string | null;
  created_at: Time;
  updated_at: Time;
  counts: ScheduleCounts;
}

export type SchedulePage = Page<Schedule>;

/** 1 to 64 bytes of `[a-z0-9_-]`, optionally after one namespace and a slash (`acme/billing`). */
export type QueueName = string;

/** `POST /v1/queues`: only `retry` is a setting today; the design's others are refused (400). */
export interface QueueCreate {
  id: QueueName;
  /** The policy of the queue's tasks that give none; null: the service's default. */
  retry?: Retry | null;
}

/** `PATCH /v1/queues/{id}`: the fields given replace theirs. */
export interface QueuePatch {
  retry?: Retry | null;
}

export interface Queue {
  id: string;
  /** 1 when created, one more on each change; 0 for the implicit `default` queue. */
  generation: number;
  retry: RetryShown | null;
  created_at: Time | null;
  updated_at: Time | null;
}

export type QueuePage = Page<Queue>;

/** The parameters of `GET /v1/queues`. */
export interface QueueListQuery extends PageQuery {
  id_prefix?: string;
}

/** `POST /v1/schedules:preview`: the occurrences of a rule not saved. */
export interface PreviewRequest {
  cron?: string;
  every_ms?: number;
  time_zone?: string;
  start_at?: Time;
  end_at?: Time;
  after?: Time;
  count?: number;
}

/** The parameters of `GET /v1/schedules/{id}/next`. */
export interface NextQuery {
  /** 1 to 100, 5 by default. */
  count?: number;
  /** From this time instead of now. */
  after?: Time;
}

export interface Occurrences {
  time_zone: string;
  occurrences: Occurrence[];
}

// The property lists the tests compare with docs/openapi.json. `Record<keyof T, true>` makes
// the compiler check each list against its interface: a missing or extra key does not compile.
type Keys<T> = Record<keyof Required<T>, true>;
export const schemaKeys = {
  NoticeTarget: { url: true, headers: true } satisfies Keys<NoticeTarget>,
  Callback: {
    url: true, method: true, headers: true, secret_headers: true, body: true, timeout_ms: true,
    on_success: true, on_failure: true,
  } satisfies Keys<Callback>,
  Retry: { attempts: true, base_ms: true, cap_ms: true } satisfies Keys<Retry>,
  RetryShown: { attempts: true, base_ms: true, cap_ms: true } satisfies Keys<RetryShown>,
  TaskSubmit: {
    id: true, due_at: true, delay_ms: true, callback: true, retry: true, on_conflict: true,
    max_delay_ms: true, queue: true,
  } satisfies Keys<TaskSubmit>,
  Task: {
    id: true, state: true, attempts: true, due_at: true, created_at: true, updated_at: true,
    retry: true, last_error: true, callback: true, payload: true, notice: true, log: true,
    replaced: true, queue: true,
  } satisfies Keys<Task>,
  'Task.log': {
    attempt: true, worker: true, started_at: true, ended_at: true, outcome: true, error: true,
  } satisfies Keys<LogEntry>,
  'Task.notice': { task_id: true, on_success: true, on_failure: true } satisfies Keys<NoticeOf>,
  TaskEntry: {
    id: true, state: true, due_at: true, ended_at: true, attempt: true, last_error: true,
    callback: true, queue: true,
  } satisfies Keys<TaskEntry>,
  TaskPage: { entries: true, next_cursor: true } satisfies Keys<TaskPage>,
  DeadPage: { entries: true, next_cursor: true } satisfies Keys<DeadPage>,
  'DeadPage.entries': { id: true, died_at: true, attempts: true, last_error: true } satisfies Keys<DeadEntry>,
  'Error.error': {
    code: true, field: true, message: true, position: true, state: true, index: true,
  } satisfies Keys<ErrorBody>,
  BatchResults: { results: true } satisfies Keys<BatchResults>,
  ResultReport: { attempt: true, outcome: true, error: true, retry_after_ms: true } satisfies Keys<ResultReport>,
  Deleted: { id: true, deleted: true } satisfies Keys<Deleted>,
  Stats: { counts: true, due_now: true, oldest_due_age_ms: true, node: true, hosts: true } satisfies Keys<Stats>,
  'Stats.counts': {
    delayed: true, prefetched: true, running: true, finished: true, dead: true, cancelled: true,
  } satisfies Keys<StateCounts>,
  'Stats.node': {
    window_s: true, throughput: true, callbacks_per_second: true, lateness_ms: true,
    lateness_histogram: true,
  } satisfies Keys<NodeStats>,
  'Stats.hosts': {
    host: true, in_flight: true, backing_off: true, succeeded: true, failed: true, last_error: true,
  } satisfies Keys<HostStats>,
  DueTime: { due_at: true, delay_ms: true } satisfies Record<'due_at' | 'delay_ms', true>,
  Cancelled: { id: true, state: true } satisfies Keys<Cancelled>,
  Misfire: { policy: true, limit: true } satisfies Keys<Misfire>,
  ScheduleFields: {
    cron: true, every_ms: true, time_zone: true, callback: true, retry: true, start_at: true,
    end_at: true, paused: true, misfire: true, overlap: true,
  } satisfies Keys<ScheduleFields>,
  ScheduleCreate: {
    id: true, cron: true, every_ms: true, time_zone: true, callback: true, retry: true,
    start_at: true, end_at: true, paused: true, misfire: true, overlap: true,
  } satisfies Keys<ScheduleCreate>,
  SchedulePatch: {
    cron: true, every_ms: true, time_zone: true, callback: true, retry: true, start_at: true,
    end_at: true, paused: true, misfire: true, overlap: true,
  } satisfies Keys<SchedulePatch>,
  Schedule: {
    id: true, cron: true, every_ms: true, time_zone: true, callback: true, payload: true,
    retry: true, start_at: true, end_at: true, paused: true, misfire: true, overlap: true,
    next_occurrence: true, last_task_id: true, created_at: true, updated_at: true, counts: true,
  } satisfies Keys<Schedule>,
  'Schedule.counts': {
    occurrences: true, triggers: true, skipped_misfire: true, skipped_overlap: true,
  } satisfies Keys<ScheduleCounts>,
  'Schedule.next_occurrence': { at: true, local: true } satisfies Keys<NonNullable<Schedule['next_occurrence']>>,
  SchedulePage: { entries: true, next_cursor: true } satisfies Keys<SchedulePage>,
  PreviewRequest: {
    cron: true, every_ms: true, time_zone: true, start_at: true, end_at: true, after: true, count: true,
  } satisfies Keys<PreviewRequest>,
  Occurrences: { time_zone: true, occurrences: true } satisfies Keys<Occurrences>,
  'Occurrences.occurrences': { at: true, local: true } satisfies Keys<Occurrence>,
  QueueCreate: { id: true, retry: true } satisfies Keys<QueueCreate>,
  QueuePatch: { retry: true } satisfies Keys<QueuePatch>,
  Queue: {
    id: true, generation: true, retry: true, created_at: true, updated_at: true,
  } satisfies Keys<Queue>,
  QueuePage: { entries: true, next_cursor: true } satisfies Keys<QueuePage>,
} as const;

/** The query parameters of the lists, compared with the document's the same way. */
export const parameterKeys = {
  'GET /v1/tasks': {
    state: true, order: true, due_after: true, due_before: true, ended_after: true,
    ended_before: true, id_prefix: true, host: true, queue: true, limit: true, cursor: true,
  } satisfies Keys<TaskListQuery>,
  'GET /v1/dead': { limit: true, cursor: true } satisfies Keys<PageQuery>,
  'GET /v1/schedules': { limit: true, cursor: true } satisfies Keys<PageQuery>,
  'GET /v1/queues': { limit: true, cursor: true, id_prefix: true } satisfies Keys<QueueListQuery>,
  'GET /v1/schedules/{id}/next': { count: true, after: true } satisfies Keys<NextQuery>,
} as const;
