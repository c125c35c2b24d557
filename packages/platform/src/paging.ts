import { InvalidArgumentError } from './errors';
import { isUuid } from './ids';

/**
 * The most a list RPC answers in one page unless it says less: a page must stay far below gRPC's 8 MiB message limit
 * (1,000 collections with 2,000-character descriptions: ~2.1 MB). Lists of larger items set their own maximum.
 */
export const MAX_PAGE_SIZE = 1000;

/** One page of a list, in the list's order; `next` says where the following page starts, absent after the last. */
export interface Page<T> {
  items: T[];
  next?: string;
}

/**
 * The number of items to read from a list RPC's page_size and page_token: undefined for page_size 0 without a token
 * (every item in one answer, as callers written before paging ask), else page_size capped at `max` (0 with a token:
 * `max`).
 */
export function pageLimit(pageSize: number, pageToken: string, max = MAX_PAGE_SIZE): number | undefined {
  if (!Number.isInteger(pageSize) || pageSize < 0) throw new InvalidArgumentError('page_size: must be 0 or more');
  if (pageSize === 0 && pageToken === '') return undefined;
  return Math.min(pageSize || max, max);
}

/**
 * The page out of rows read one past it (LIMIT limit + 1), which tells whether another page follows without a further
 * query: the first `limit` rows, and the cursor after the last of them when more follow.
 */
export function pageOfRows<R>(rows: readonly R[], limit: number, cursorAfter: (last: R) => string): Page<R> {
  const items = rows.slice(0, limit);
  return rows.length > limit && items.length > 0 ? { items, next: cursorAfter(items[items.length - 1]!) } : { items };
}

const CREATION_CURSOR = /^(\d{1,15})_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/**
 * The cursor of lists ordered by creation time, then id (items whose id is a UUID and whose creation time never
 * changes): the last listed item's creation time (epoch milliseconds) and id.
 */
export const creationCursor = {
  after(item: { createdAt: Date; id: string }): string {
    return `${item.createdAt.getTime()}_${item.id}`;
  },
  /** Throws InvalidArgumentError naming page_token for anything `after` did not make. */
  parse(cursor: string): { createdAt: Date; id: string } {
    const match = CREATION_CURSOR.exec(cursor);
    const createdAt = new Date(Number(match?.[1]));
    if (!match || !isUuid(match[2]) || Number.isNaN(createdAt.getTime())) throw new InvalidArgumentError('page_token: not a token this service gave');
    return { createdAt, id: match[2]! };
  },
};
