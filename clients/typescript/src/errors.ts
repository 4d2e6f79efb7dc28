// What a call of the client throws. Three kinds, because a caller reacts to each differently:
// the service said no (ApiError: switch on `code`, fix `field`, wait `retryAfter`), the service
// answered something this client cannot trust (ResponseError: not JSON, too large, not the
// documented shape), or no answer came at all (TransportError: refused, reset, timed out; a
// write may or may not have been done, so retry it with the same id).

import type { ErrorBody, TaskState } from './types';

/** The base of everything the client throws, for a single `catch` that means "timewheeld". */
export class TimewheelError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An error answer of the API: `{"error": {"code", "field", "message"}}` with its HTTP status. */
export class ApiError extends TimewheelError {
  /** The HTTP status (400, 401, 404, 409, 413, 415, 429, 503, 507, ...). */
  readonly status: number;
  /** A stable snake_case word to switch on (`invalid_field`, `too_late`, `conflict`, ...). */
  readonly code: string;
  /** The dotted path of the culprit (`callback.url`), when the service names one. */
  readonly field: string | undefined;
  /** The service's explanation, for people. */
  readonly apiMessage: string;
  /** With 409 `conflict`: the state of the task that was not replaced. */
  readonly state: TaskState | undefined;
  /** With a bad cron expression: the offset in it where the fault starts. */
  readonly position: number | undefined;
  /** Seconds to wait before retrying, from `Retry-After` (429, 503), when given. */
  readonly retryAfter: number | undefined;

  constructor(status: number, body: ErrorBody, retryAfter: number | undefined) {
    super(`${status} ${body.code}${body.field !== undefined ? ` (${body.field})` : ''}: ${body.message}`);
    this.status = status;
    this.code = body.code;
    this.field = body.field;
    this.apiMessage = body.message;
    this.state = body.state;
    this.position = body.position;
    this.retryAfter = retryAfter;
  }
}

/** An answer this client refuses to use: not JSON, larger than its bound, or not the
 *  documented shape. `status` is the HTTP status it came with. */
export class ResponseError extends TimewheelError {
  readonly status: number;
  constructor(status: number, message: string, options?: { cause?: unknown }) {
    super(`${status}: ${message}`, options);
    this.status = status;
  }
}

/** No answer: the connection failed, or the client's timeout passed. */
export class TransportError extends TimewheelError {}
