import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Response } from 'express';
import { streamAnswer } from './stream-answer';

/**
 * Answers 200 with one JSON array whose items are read a page at a time and written as each page
 * arrives, so a long list never sits whole in the gateway's memory, and a slow client slows the
 * reading down (back-pressure) instead of piling pages up. The first page is read before anything
 * is sent, so its failure is answered like any error; a later failure can only cut the connection:
 * the client sees a broken answer, never a shorter list presented as complete.
 */
export async function sendJsonArrayInPages(res: Response, pages: AsyncIterable<readonly unknown[]>): Promise<void> {
  const iterator = pages[Symbol.asyncIterator]();
  const first = await iterator.next();
  async function* chunks(): AsyncGenerator<string> {
    let opening = '[';
    try {
      for (let page = first; !page.done; page = await iterator.next()) {
        if (page.value.length > 0) {
          // One JSON.stringify for the page: the brackets are cut off so the pages join into one array.
          yield opening + JSON.stringify(page.value).slice(1, -1);
          opening = ',';
        }
        // A turn of the event loop (a macrotask) between pages: however long the list, the requests that arrived
        // meanwhile are answered between its pages, not after it. Page reads and writes can all resolve as
        // microtasks (in-process calls, a socket that takes each write at once), which would hold the loop.
        await nextTurn();
      }
    } finally {
      await iterator.return?.();
    }
    yield opening === '[' ? '[]' : ']';
  }
  res.status(200).type('application/json');
  await streamAnswer(res, chunks());
}

/** One answer of a list RPC read in pages: its items, and the token of the next page ('' after the last). */
export interface ListPage<T> {
  items: readonly T[];
  nextPageToken: string;
}

/**
 * Every page of a list RPC, each read with the token the one before gave, until one gives none. `first` is the first
 * page's read when it was started already (alongside another call); otherwise it is read on the first step.
 */
export async function* pagesOf<T>(readPage: (pageToken: string) => Promise<ListPage<T>>, first?: Promise<ListPage<T>>): AsyncGenerator<readonly T[]> {
  let page = await (first ?? readPage(''));
  yield page.items;
  while (page.nextPageToken !== '') {
    page = await readPage(page.nextPageToken);
    yield page.items;
  }
}
