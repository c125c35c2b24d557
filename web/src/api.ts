/** The public HTTP interface (/api, same origin, `ai-editor` cookie) as typed functions. */

import type { operations, Schemas, SuccessBody } from '@cards/client';
import { dropAllDrafts } from './drafts';
import { tellOtherTabs } from './tabs';

// Every shape below comes from the gateway's OpenAPI document (@cards/client, type-only: nothing is
// bundled), so a change of the contract shows up here as a type error.

/** The JSON body an operation takes, e.g. `RequestBody<'createCard'>` (never when it takes none). */
type RequestBody<Op extends keyof operations> = operations[Op] extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
/** The body argument of a call: required when the operation takes one, absent otherwise. */
type BodyArg<Op extends keyof operations> = [RequestBody<Op>] extends [never] ? [] : [body: RequestBody<Op>];
/** What a successful call resolves to: the 200 JSON body, or nothing (204 and bodiless 200). */
type Answer<Op extends keyof operations> = [SuccessBody<Op>] extends [never] ? void : SuccessBody<Op>;

export type SlimUser = Schemas['SlimUser'];
/** A user as an author, a profile or a ranking entry (`Schemas['User']` is the nullable author field). */
export type User = NonNullable<Schemas['User']>;
export type Card = Schemas['Card'];
export type CardSearchEntry = Schemas['CardSearchEntry'];
export type Collection = Schemas['Collection'];
/** A collection in a user's listing: with the id of the file it was made from. */
export type ListedCollection = Schemas['ListedCollection'];
export type FileRecord = Schemas['File'];
export type Notification = Schemas['Notification'];
export type SearchQuery = RequestBody<'semanticSearch'>;

/**
 * A non-2xx answer, carrying the server's `{"message"}` and the answer's x-request-id (the gateway sets one on every
 * answer): a server failure's message shows it, so a person can quote it to support and an operator find the request.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly requestId: string | null = null,
  ) {
    super(message);
  }
}

const unauthorizedListeners = new Set<() => void>();

/**
 * Calls `listener` whenever the server answers 401 (no session, or it ended: the cookie expired or was dropped), so the
 * session can drop its signed-in state. Returns the unsubscribe function.
 */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => void unauthorizedListeners.delete(listener);
}

/** The session is gone (a 401, or the server no longer knows this browser's cookie): each listener keeps what it must. */
export function reportUnauthorized(): void {
  for (const l of unauthorizedListeners) l();
}

/**
 * A new Idempotency-Key: 128 random bits as hex (crypto.randomUUID exists only on https and localhost pages). A create
 * form keeps one per draft, so sending the same draft again (a second click, a retry after a lost answer) makes nothing
 * twice, and a changed draft gets a new one (the server refuses a key sent with another request).
 */
export function newIdempotencyKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The last notification list read and its ETag: a poll (the header's unread badge, the notifications page's refresh)
 * sends the tag as If-None-Match and keeps this list when the server answers 304 Not Modified. The browser does not do
 * this itself (the answer is Cache-Control: no-store). Dropped on sign-in, sign-out and an ended session, so one user's
 * list is never shown to another.
 */
let keptNotifications: { etag: string; list: Notification[] } | null = null;
/** Counts the drops: an answer to a request sent before a drop is not kept. */
let notificationsGeneration = 0;

/** Drops the kept notification list and its tag (sign-in, sign-out, another user, an ended session). */
export function forgetNotifications(): void {
  keptNotifications = null;
  notificationsGeneration++;
}

async function listNotifications(): Promise<Notification[]> {
  const generation = notificationsGeneration;
  const kept = keptNotifications;
  const { data, headers, status } = await request<Notification[]>('GET', '/notifications', undefined, kept ? { 'if-none-match': kept.etag } : {});
  // 304: the server found the tag (which names the user) still current for this session, so the kept list is its list.
  if (status === 304 && kept) return kept.list;
  if (status === 304) throw new ApiError(304, 'The notifications could not be read. Try again.');
  const etag = headers.get('etag');
  if (generation === notificationsGeneration) keptNotifications = etag && Array.isArray(data) ? { etag, list: data } : null;
  return data;
}

/**
 * The API's field names as the forms call them: the server says "website: must be an http or https URL", a person reads
 * "Website must be an http or https URL". `username` is left to the profile form, which ties it to its field.
 */
const FIELD_WORDING: Record<string, string> = {
  card_id: 'The card address',
  card_uuid: 'The card address',
  card_metadata_id: 'The card address',
  collection_id: 'The collection address',
  file_id: 'The file address',
  notification_id: 'The notification',
  content: 'The search text',
  card_html: 'The card text',
  link: 'The source link',
  tag_set: 'The tags',
  base64_docx_file: 'The document',
  file_name: 'The document’s name',
  file_mime_type: 'The document’s type',
  website: 'The website',
  name: 'The name',
  description: 'The description',
  email: 'The e-mail address',
  password: 'The password',
  password_confirmation: 'The repeated password',
};

/** Seconds to wait from a Retry-After header (seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The server's message as the app shows it: API field names in the forms' words, a 429's wait as Retry-After says it. */
export function readableMessage(status: number, message: string, retryAfter: string | null = null): string {
  if (status === 429) {
    const seconds = retryAfterSeconds(retryAfter);
    if (seconds !== undefined) {
      const wait = seconds <= 1 ? 'a second' : seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
      return `${message.replace(/[,:;]?\s*try again in [^.]*\.?$/i, '').replace(/\.$/, '') || 'Too many attempts'}: try again in ${wait}.`;
    }
  }
  // Several problems come joined by "; ", each led by its field.
  return message
    .split(/; (?=[a-z][a-z0-9_]*: )/)
    .map((part) => {
      const field = /^([a-z][a-z0-9_]*): (.+)$/s.exec(part);
      const wording = field ? FIELD_WORDING[field[1]!] : undefined;
      if (!field || !wording) return part;
      const rest = field[2]!;
      if (/^at (most|least)\b/.test(rest)) return `${wording} may have ${rest}`;
      return /^(must|is|are|has|have|was|cannot|should)\b/.test(rest) ? `${wording} ${rest}` : `${wording}: ${rest}`;
    })
    .join('; ');
}

/**
 * How long a call may go without its whole answer. The gateway answers every call within ~10 s or says why, so a
 * connection that stalls (a train in a tunnel: nothing fails, nothing arrives) would otherwise show "Loading…" until
 * the browser gives up, minutes later. Uploads (XMLHttpRequest, below) are not bounded: they take as long as the bytes.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

/** The same version (ETag) whether its answer came compressed (W/"…") or not. */
export const sameVersion = (a: string | null, b: string | null) => a !== null && b !== null && a.replace(/^W\//, '') === b.replace(/^W\//, '');

/**
 * "Save mine anyway" may replace what is stored now: it is the version the user was shown (`chosen`), or neither read
 * carried a version (a proxy that strips ETags), when the user's choice is taken as made, as before versions.
 */
export const chosenVersion = (chosen: string | null, now: string | null) => (chosen === null && now === null) || sameVersion(chosen, now);

/** A 412 answered to an update sent with If-Match: changed between the read and the update. Read, compare, send again up to this many times. */
export const EDIT_ATTEMPTS = 3;

const NO_ANSWER_IN_TIME = 'The server did not answer within 30 seconds. Check your connection and try again; if you were saving, reload first to see whether it was saved.';

async function request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<{ data: T; headers: Headers; status: number }> {
  // One signal for the caller's abort (a page that no longer wants the answer) and the timeout; which one fired decides
  // the message. (AbortSignal.any would do, but older Safari lacks it.)
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, REQUEST_TIMEOUT_MS);
  const onCallerAbort = () => controller.abort();
  if (signal?.aborted) controller.abort();
  else signal?.addEventListener('abort', onCallerAbort, { once: true });
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json', ...headers }, signal: controller.signal };
  if (body !== undefined) {
    init.headers = { ...init.headers, 'content-type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  let res: Response;
  let text: string;
  try {
    try {
      res = await fetch(`/api${path}`, init);
    } catch {
      throw new ApiError(0, timedOut ? NO_ANSWER_IN_TIME : 'The server cannot be reached. Check your connection and try again.');
    }
    try {
      text = await res.text();
    } catch {
      // The head came and the body stopped (or the connection dropped mid-answer).
      throw new ApiError(0, timedOut ? NO_ANSWER_IN_TIME : 'The connection to the server was lost. Check your connection and try again.');
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onCallerAbort);
  }
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  // 304 Not Modified answers only a request that sent If-None-Match (listNotifications), which handles it.
  if (!res.ok && !(res.status === 304 && 'if-none-match' in headers)) {
    // /auth itself (who am I, sign in, sign out) answers 401 as its plain answer for "not signed in" or a wrong
    // password: the session code reads those directly.
    if (res.status === 401) forgetNotifications();
    if (res.status === 401 && path !== '/auth') reportUnauthorized();
    const message = (json as { message?: unknown } | undefined)?.message;
    throw new ApiError(res.status, readableMessage(res.status, typeof message === 'string' && message ? message : `Request failed (${res.status})`, res.headers.get('retry-after')), res.headers.get('x-request-id'));
  }
  return { data: json as T, headers: res.headers, status: res.status };
}

// Each call names its operation (`get<'getCard'>(...)`): the body it sends and the answer it types come from the contract.
const get = async <Op extends keyof operations>(path: string) => (await request<Answer<Op>>('GET', path)).data;
const post = async <Op extends keyof operations>(path: string, ...[body]: BodyArg<Op>) => (await request<Answer<Op>>('POST', path, body ?? {})).data;
/** A POST whose request `signal` can abort (a search the page no longer wants: its answer would only take up the link). */
const postAbortable = async <Op extends keyof operations>(path: string, body: RequestBody<Op>, signal?: AbortSignal) => (await request<Answer<Op>>('POST', path, body, {}, signal)).data;
const put = async <Op extends keyof operations>(path: string, ...[body]: BodyArg<Op>) => (await request<Answer<Op>>('PUT', path, body ?? {})).data;
const del = async <Op extends keyof operations>(path: string, ...[body]: BodyArg<Op>) => (await request<Answer<Op>>('DELETE', path, body)).data;
const seg = encodeURIComponent;

export const api = {
  // Accounts and sessions
  invite: (email: string) => post<'createInvitation'>('/invitation', { email, referral_tokens: [] }),
  register: (invitationId: string, password: string, passwordConfirmation: string) =>
    post<'register'>(`/register/${seg(invitationId)}`, { password, password_confirmation: passwordConfirmation }),
  // A sign-in, sign-out, profile change or password reset is told to the app's other tabs (./tabs): the cookie is shared,
  // so they now act as whoever is signed in here, and ask the server who that is.
  login: async (email: string, password: string) => {
    forgetNotifications();
    await post<'login'>('/auth', { email, password });
    tellOtherTabs('session');
  },
  logout: async () => {
    // A deliberate sign-out takes this tab's unsent drafts with it (a draft of a private card is private data).
    dropAllDrafts();
    forgetNotifications();
    try {
      return await del<'logout'>('/auth');
    } finally {
      forgetNotifications();
      tellOtherTabs('session');
    }
  },
  me: () => get<'currentUser'>('/auth'),
  requestPasswordReset: (email: string) => get<'requestPasswordReset'>(`/password/${seg(email)}`),
  resetPassword: async (passwordResetId: string, password: string, passwordConfirmation: string) => {
    await post<'resetPassword'>('/password', { password_reset_id: passwordResetId, password, password_confirmation: passwordConfirmation });
    tellOtherTabs('session');
  },
  updateProfile: async (body: RequestBody<'updateUser'>) => {
    const updated = await put<'updateUser'>('/user', body);
    tellOtherTabs('session');
    return updated;
  },

  // Cards
  /** `idempotencyKey`: the same for every sending of one draft, so a second click or a retry makes no second card. */
  createCard: async (body: RequestBody<'createCard'>, idempotencyKey: string) =>
    (await request<Answer<'createCard'>>('POST', '/card', body, { 'idempotency-key': idempotencyKey })).data,
  card: (id: string) => get<'getCard'>(`/card/${seg(id)}`),
  /** The card with its ETag (its version), which an update sends back as If-Match. */
  cardWithVersion: async (id: string) => {
    const { data, headers } = await request<Answer<'getCard'>>('GET', `/card/${seg(id)}`);
    return { card: data, etag: headers.get('etag') };
  },
  /** `ifMatch`: the ETag of the version the change was worked out on; the server answers 412 if the card changed since. */
  updateCard: async (body: RequestBody<'updateCard'>, ifMatch?: string | null) => {
    await request<Answer<'updateCard'>>('PUT', '/card/update', body, ifMatch ? { 'if-match': ifMatch } : {});
  },
  deleteCard: (id: string) => del<'deleteCard'>(`/card/${seg(id)}`),
  countCards: () => get<'countCards'>('/card/count'),
  search: (mode: SearchMode, page: number, query: SearchQuery, signal?: AbortSignal) =>
    mode === 'semantic' ? postAbortable<'semanticSearch'>(`/card/search/${page}`, query, signal) : postAbortable<'fullTextSearch'>(`/card/fulltextsearch/${page}`, query, signal),

  // Votes
  vote: (cardId: string, vote: boolean) => post<'castVote'>('/vote', { card_metadata_id: cardId, vote }),
  unvote: (cardId: string) => del<'deleteVote'>(`/vote/${seg(cardId)}`),

  // Users
  userPage: (userId: string, page: number) => get<'getUserPage'>(`/user/${seg(userId)}/${page}`),
  userCollections: (userId: string) => get<'listUserCollections'>(`/user/collections/${seg(userId)}`),
  userFiles: (userId: string) => get<'listUserFiles'>(`/user/files/${seg(userId)}`),
  topUsers: (page: number) => get<'getTopUsers'>(`/top_users/${page}`),

  // Files
  file: (id: string) => get<'getFile'>(`/file/${seg(id)}`),
  deleteFile: (id: string) => del<'deleteFile'>(`/file/${seg(id)}`),
  setFilePrivate: (fileId: string, isPrivate: boolean) => put<'setFilePrivacy'>('/file', { file_id: fileId, private: isPrivate }),

  // Collections
  /** `idempotencyKey`: the same for every sending of one draft, so a second click or a retry makes no second collection. */
  createCollection: async (body: RequestBody<'createCollection'>, idempotencyKey: string) => {
    const { headers } = await request<void>('POST', '/card_collection', body, { 'idempotency-key': idempotencyKey });
    const location = headers.get('location') ?? '';
    return location.split('/').filter(Boolean).pop() ?? null;
  },
  /** `ifMatch`: the ETag of the version the change was worked out on; the server answers 412 if the collection changed since. */
  updateCollection: async (body: RequestBody<'updateCollection'>, ifMatch?: string | null) => {
    await request<Answer<'updateCollection'>>('PUT', '/card_collection', body, ifMatch ? { 'if-match': ifMatch } : {});
  },
  /** The collection (read with its first page) and its ETag (its version), which an update sends back as If-Match. */
  collectionWithVersion: async (id: string) => {
    const { data, headers } = await request<Answer<'listCollectionCards'>>('GET', `/card_collection/${seg(id)}/1`);
    return { collection: data.collection, etag: headers.get('etag') };
  },
  deleteCollection: (collectionId: string) => del<'deleteCollection'>('/card_collection', { collection_id: collectionId }),
  collection: (id: string, page: number) => get<'listCollectionCards'>(`/card_collection/${seg(id)}/${page}`),
  addToCollection: (collectionId: string, cardId: string) => post<'addBookmark'>(`/card_collection/${seg(collectionId)}`, { card_metadata_id: cardId }),
  removeFromCollection: (collectionId: string, cardId: string) => del<'removeBookmark'>(`/card_collection/${seg(collectionId)}`, { card_metadata_id: cardId }),
  collectionsOfCards: (cardIds: string[]) => post<'findBookmarks'>('/card_collection/bookmark', { collection_ids: cardIds.join(',') }),
  searchCollection: (mode: SearchMode, page: number, collectionId: string, query: SearchQuery, signal?: AbortSignal) => {
    const body = { ...query, collection_id: collectionId };
    return mode === 'semantic'
      ? postAbortable<'collectionSemanticSearch'>(`/card_collection/search/${page}`, body, signal)
      : postAbortable<'collectionFullTextSearch'>(`/card_collection/fulltextsearch/${page}`, body, signal);
  },

  // Notifications
  /** Sends the last list's ETag and answers the kept list on 304 (see keptNotifications). */
  notifications: (): Promise<Answer<'listNotifications'>> => listNotifications(),
  markRead: async (notificationId: string) => {
    await put<'markNotificationRead'>('/notifications', { notification_id: notificationId });
    tellOtherTabs('notifications');
  },
  markAllRead: async () => {
    await put<'markAllNotificationsRead'>('/notifications/all');
    tellOtherTabs('notifications');
  },
};

export type SearchMode = 'semantic' | 'fulltext';

/** Bytes -> base64url without padding, in chunks so large files do not overflow the call stack. */
export function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * POST /api/file through XMLHttpRequest, the one browser API that reports upload progress.
 * `onProgress` receives a fraction in [0, 1]. `idempotencyKey`: the same for every sending of one draft (file, tags,
 * privacy), so a second click or a retry stores and ingests the document once.
 */
export function uploadFile(body: RequestBody<'uploadFile'>, idempotencyKey: string, onProgress: (fraction: number) => void): Promise<Answer<'uploadFile'>> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/file');
    xhr.setRequestHeader('content-type', 'application/json');
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('idempotency-key', idempotencyKey);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onerror = () => reject(new ApiError(0, 'The upload failed: the server cannot be reached.'));
    xhr.onload = () => {
      if (xhr.status === 401) forgetNotifications();
      let json: any;
      try {
        json = xhr.responseText ? JSON.parse(xhr.responseText) : undefined;
      } catch {
        json = undefined;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        resolve(json);
      } else {
        if (xhr.status === 401) reportUnauthorized();
        reject(new ApiError(xhr.status, typeof json?.message === 'string' ? readableMessage(xhr.status, json.message, xhr.getResponseHeader('retry-after')) : `Upload failed (${xhr.status})`, xhr.getResponseHeader('x-request-id')));
      }
    };
    xhr.send(JSON.stringify(body));
  });
}
