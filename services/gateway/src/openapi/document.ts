import { OpenAPIRegistry, OpenApiGeneratorV31, extendZodWithOpenApi, type ResponseConfig, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z, type AnyZodObject, type ZodTypeAny } from 'zod';
import { createCardBody, updateCardBody } from '../routes/card-routes';
import { idempotencyKeyHeader } from '../http/idempotency-key';
import { bookmarkBody, createCollectionBody, deleteCollectionBody, findBookmarksBody, updateCollectionBody } from '../routes/collection-routes';
import { createFileBody, setPrivacyBody } from '../routes/file-routes';
import { invitationBody, loginBody, passwordResetBody, passwordResetRequestBody, registerBody, updateUserBody } from '../routes/identity-routes';
import { markReadBody } from '../routes/notification-routes';
import { cardSearchBody, collectionSearchBody } from '../routes/search-routes';
import { voteBody } from '../routes/vote-routes';
import { SERVER_TIMEOUTS } from '../http/node-server';
import { originCheckJudges } from '../http/cross-origin';
import * as r from './response-schemas';

// Adds .openapi() to zod's prototypes, which the registry uses to name schemas ($ref).
extendZodWithOpenApi(z);

type Method = 'get' | 'post' | 'put' | 'delete';
type Auth = 'required' | 'optional' | 'none';

/** One operation the gateway serves: the single table both the document and the route-coverage test read. */
export interface OperationSpec {
  method: Method;
  /** The path as express registers it, e.g. `/api/card/:card_id`. */
  path: string;
  operationId: string;
  summary: string;
  /** What the summary leaves out, when a rule needs saying. */
  description?: string;
  tag: string;
  auth: Auth;
  params?: AnyZodObject;
  /** Request headers the operation reads besides the cookie. */
  headers?: AnyZodObject;
  body?: ZodTypeAny;
  /** The success status and its JSON body schema; no schema means no body. */
  success: { status: 200 | 204; schema?: ZodTypeAny; description?: string; contentType?: string; headers?: AnyZodObject };
  /** Failure statuses this operation documents besides `default`. */
  errors: number[];
  /** A failure status whose answer says more on this operation than the shared description (its own words, headers). */
  errorAnswers?: Partial<Record<number, { description: string; headers?: Record<string, { required: boolean; description: string; schema: { type: 'string' } }> }>>;
  /** Documented for the contract but not JSON (raw bytes, HTML). */
  raw?: boolean;
  /** Answers other than the success and the failures (a download's 206 Partial Content). */
  moreAnswers?: Partial<Record<number, ResponseConfig>>;
}

const uuidParam = z.string().uuid();
// Named, so that generators do not call the full-text searches' bodies after the semantic ones (SemanticSearchRequest).
const cardSearchRequest = cardSearchBody.openapi('CardSearchRequest');
const collectionSearchRequest = collectionSearchBody.openapi('CollectionSearchRequest');
const pageParam = z.number().int().min(1).describe('1-based page number; 0, negative or non-numeric is 400');
const params = (shape: Record<string, ZodTypeAny>) => z.object(shape);

/** The `page` path parameter plus a collection or user id, as several routes take. */
const pageOnly = params({ page: pageParam });

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input; the message names the offending field',
  401: 'Not logged in (no or an expired/revoked ai-editor cookie)',
  403: 'Changing someone else\'s visible resource, or a cross-site request carrying the cookie (GET /api/password/{email}, which sends mail: any request the browser marks cross-site)',
  404: 'No such resource, or a private resource of someone else',
  409: 'Conflicts with existing data (e.g. e-mail taken, or a username taken ignoring case and look-alike letters: "username: already taken"; an Idempotency-Key whose resource was deleted since)',
  413: 'Body or file above the size limit',
  422: 'The Idempotency-Key was used before for a different request (another body); a new request needs a new key',
  502: 'The files service answered the gateway wrongly (refused its internal token, or sent no file header); try again later',
  503: 'A backing service is unavailable, or the server\'s storage is full: nothing was saved; retry later',
};

/** Every route of the gateway. Keep in step with src/routes: a test walks the express router and compares. */
export const OPERATIONS: OperationSpec[] = [
  // Accounts and sessions
  { method: 'post', path: '/api/invitation', operationId: 'createInvitation', summary: 'Invite an e-mail address (sends a registration link)', tag: 'Accounts', auth: 'none', body: invitationBody, success: { status: 200 }, errors: [400, 429] },
  { method: 'post', path: '/api/register/:invitation_id', operationId: 'register', summary: 'Set a password for an invitation and create the account', tag: 'Accounts', auth: 'none', params: params({ invitation_id: uuidParam }), body: registerBody, success: { status: 200, schema: r.slimUser }, errors: [400, 404, 409] },
  { method: 'post', path: '/api/auth', operationId: 'login', summary: 'Log in; sets the ai-editor cookie', tag: 'Accounts', auth: 'none', body: loginBody, success: { status: 204, description: 'Logged in; Set-Cookie: ai-editor=...; HttpOnly; SameSite=Lax' }, errors: [400, 401, 429] },
  {
    method: 'delete',
    path: '/api/auth',
    operationId: 'logout',
    summary: 'Log out; revokes the session and clears the cookie',
    tag: 'Accounts',
    auth: 'optional',
    success: { status: 204 },
    errors: [503],
    errorAnswers: {
      503: {
        description:
          'The server could not end the session (the identity service is unavailable, or its storage is full): the ai-editor cookie is cleared all the same, so this browser is signed out, ' +
          'but the server keeps the session until it expires (the message says so; nothing to retry, so no Retry-After). ' +
          'Also, as on every operation: the server has too many open connections (answered before the request is read, with Retry-After, and then the cookie is not cleared)',
        headers: {
          'Set-Cookie': {
            required: false,
            description: 'Sent when the request carried an ai-editor cookie and the server could not end its session: ai-editor=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax (Secure as the session cookie), clearing it',
            schema: { type: 'string' },
          },
          'Retry-After': { required: false, description: 'Seconds to wait before trying again; sent only when the connection cap refused the request', schema: { type: 'string' } },
        },
      },
    },
  },
  {
    method: 'get',
    path: '/api/auth',
    operationId: 'currentUser',
    summary: 'The logged-in user',
    description:
      'Whether a session is live: 200 with the user, else 401. A 401 answered to a request that carried an ai-editor cookie (revoked, expired, or not a session) also clears that cookie, so the next request carries none. ' +
      'The web app asks it only when the readable ai-editor-hint cookie of its index.html answer says the page load came with a session cookie (see the cookieAuth scheme).',
    tag: 'Accounts',
    auth: 'required',
    success: { status: 200, schema: r.slimUser },
    errors: [401],
    errorAnswers: {
      401: {
        description: 'Not logged in (no or an expired/revoked ai-editor cookie); a cookie sent that is no live session is cleared',
        headers: {
          'Set-Cookie': {
            required: false,
            description: 'Sent when the request carried an ai-editor cookie: ai-editor=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax (Secure as the session cookie), clearing it',
            schema: { type: 'string' },
          },
        },
      },
    },
  },
  { method: 'get', path: '/api/password/:email', operationId: 'requestPasswordReset', summary: 'Send a password reset e-mail (204 whether or not the account exists)', description: 'Refused 403 when the browser says the request comes from another site (an Origin other than this site\'s or a CORS origin, else Sec-Fetch-Site: cross-site, else a foreign Referer), so no page can make its visitors\' browsers send reset mails; clients that send none of these headers are served. Counts toward the per-address mail limit (RATE_LIMIT_MAIL_PER_IP). HEAD is 405 (Allow: GET, OPTIONS) before any check, count or mail.', tag: 'Accounts', auth: 'none', params: params({ email: z.string().max(254) }), success: { status: 204 }, errors: [400, 403, 429] },
  { method: 'post', path: '/api/password', operationId: 'resetPassword', summary: 'Reset the password with a reset id (or, with only `email`, ask for the reset e-mail)', tag: 'Accounts', auth: 'none', body: z.union([passwordResetBody.openapi('PasswordReset'), passwordResetRequestBody.openapi('PasswordResetMailRequest')]), success: { status: 204 }, errors: [400, 404, 429] },
  { method: 'put', path: '/api/user', operationId: 'updateUser', summary: 'Update the caller\'s username, website, e-mail visibility', tag: 'Users', auth: 'required', body: updateUserBody, success: { status: 200, schema: r.slimUser }, errors: [400, 401, 409] },

  // Search
  { method: 'post', path: '/api/card/search/:page', operationId: 'semanticSearch', summary: 'Semantic search over the cards the caller may see', tag: 'Search', auth: 'optional', params: pageOnly, body: cardSearchRequest, success: { status: 200, schema: r.cardSearchResponse }, errors: [400] },
  { method: 'post', path: '/api/card/fulltextsearch/:page', operationId: 'fullTextSearch', summary: 'Trigram full-text search over the cards the caller may see', tag: 'Search', auth: 'optional', params: pageOnly, body: cardSearchRequest, success: { status: 200, schema: r.cardSearchResponse }, errors: [400] },
  { method: 'post', path: '/api/card_collection/search/:page', operationId: 'collectionSemanticSearch', summary: 'Semantic search inside one collection', tag: 'Search', auth: 'optional', params: pageOnly, body: collectionSearchRequest, success: { status: 200, schema: r.collectionSearchResponse }, errors: [400, 404] },
  { method: 'post', path: '/api/card_collection/fulltextsearch/:page', operationId: 'collectionFullTextSearch', summary: 'Full-text search inside one collection', tag: 'Search', auth: 'optional', params: pageOnly, body: collectionSearchRequest, success: { status: 200, schema: r.collectionSearchResponse }, errors: [400, 404] },

  // Collections
  { method: 'get', path: '/api/user/collections/:user_id', operationId: 'listUserCollections', summary: 'A user\'s collections (private ones only to their owner)', tag: 'Collections', auth: 'optional', params: params({ user_id: uuidParam }), success: { status: 200, schema: z.array(r.listedCollection) }, errors: [400, 404] },
  { method: 'get', path: '/api/card_collection', operationId: 'listOwnCollections', summary: 'The caller\'s own collections', tag: 'Collections', auth: 'required', success: { status: 200, schema: z.array(r.listedCollection) }, errors: [401] },
  { method: 'post', path: '/api/card_collection', operationId: 'createCollection', summary: 'Create a collection (Location header names it)', tag: 'Collections', auth: 'required', headers: idempotencyKeyHeader, body: createCollectionBody, success: { status: 204, headers: z.object({ Location: z.string().describe('/api/card_collection/<id>') }) }, errors: [400, 401, 409, 422] },
  {
    method: 'put',
    path: '/api/card_collection',
    operationId: 'updateCollection',
    summary: 'Rename, describe or change the visibility of an own collection',
    description:
      'With If-Match (the ETag GET /api/card_collection/{collection_id}/{page} answered), the change is made only if the collection has not changed since that read, checked and written in one step: else 412 and nothing is changed. ' +
      'Without If-Match (or with *) the fields sent are written on the collection as it is now. The 204 carries the collection\'s new ETag, for the next update\'s If-Match without reading it again.',
    tag: 'Collections',
    auth: 'required',
    headers: z.object({
      'If-Match': z
        .string()
        .optional()
        .describe('The collection\'s ETag as GET /api/card_collection/{collection_id}/{page} answered it (also in its weak form W/"…", which a compressed answer carries), or *. One tag; a malformed header or several of this API\'s tags is 400, a tag that is no version of this API 412'),
    }),
    body: updateCollectionBody,
    success: {
      status: 204,
      headers: z.object({
        ETag: z
          .string()
          .describe('The collection\'s version as this update left it, the ETag its page read answers until it changes again (strong, "…"): the version the update wrote, never a later change\'s. Send it as If-Match to make the next change without reading the collection again'),
      }),
    },
    errors: [400, 401, 403, 404, 412],
    errorAnswers: { 412: { description: 'If-Match names a version of the collection other than its current one: it was changed since the caller read it (another tab, device or client). Read it again (GET /api/card_collection/{collection_id}/{page}, a new ETag) and apply the change to it' } },
  },
  { method: 'delete', path: '/api/card_collection', operationId: 'deleteCollection', summary: 'Delete an own collection (its cards stay)', tag: 'Collections', auth: 'required', body: deleteCollectionBody, success: { status: 204 }, errors: [400, 401, 403, 404] },
  { method: 'post', path: '/api/card_collection/bookmark', operationId: 'findBookmarks', summary: 'For each listed card id, the caller\'s collections showing it (holding it, its root or a duplicate of either)', description: 'A collection page shows a card in its root\'s entry (the root, then the duplicates of it the caller may see), so a root and each of its duplicates count the same collections: the caller\'s collections holding any card of that group the caller may see, oldest collection first. Unknown ids, and cards the caller may not see, answer no collections.', tag: 'Collections', auth: 'required', body: findBookmarksBody, success: { status: 200, schema: z.array(r.bookmarkLookupEntry) }, errors: [400, 401] },
  {
    method: 'get',
    path: '/api/card_collection/:collection_id/:page',
    operationId: 'listCollectionCards',
    summary: 'A page of a collection\'s cards',
    tag: 'Collections',
    auth: 'optional',
    params: params({ collection_id: uuidParam, page: pageParam }),
    success: {
      status: 200,
      schema: r.collectionCardsPage,
      headers: z.object({
        ETag: z
          .string()
          .describe('The collection\'s version (of the collection object, not of the page\'s cards), for PUT /api/card_collection\'s If-Match: changes with every change of its name, description or visibility, the same on every page and for every caller who may read it (adding or removing cards does not change it). Strong ("…"); W/"…" when the answer is compressed'),
      }),
    },
    errors: [400, 404],
  },
  { method: 'post', path: '/api/card_collection/:collection_id', operationId: 'addBookmark', summary: 'Add a card to an own collection (no-op when already there)', tag: 'Collections', auth: 'required', params: params({ collection_id: uuidParam }), body: bookmarkBody, success: { status: 204 }, errors: [400, 401, 403, 404] },
  { method: 'delete', path: '/api/card_collection/:collection_id', operationId: 'removeBookmark', summary: 'Remove a card from an own collection (a root: its whole entry)', description: 'A root\'s id removes the entry the collection page lists under it: the root\'s bookmark and the bookmarks of all its duplicates in the collection. A duplicate\'s id removes only its own bookmark. 404 when the collection holds neither the card nor, for a root, a duplicate of it the caller may see; a bookmark of a card the caller can no longer see (made private by its author) is removed all the same.', tag: 'Collections', auth: 'required', params: params({ collection_id: uuidParam }), body: bookmarkBody, success: { status: 204 }, errors: [400, 401, 403, 404] },

  // Files
  { method: 'post', path: '/api/file', operationId: 'uploadFile', summary: 'Upload a .docx, .doc, .odt or .pdf document (base64url); cards are made from it asynchronously', tag: 'Files', auth: 'required', headers: idempotencyKeyHeader, body: createFileBody, success: { status: 200, schema: r.fileWithContent }, errors: [400, 401, 409, 413, 422, 429] },
  { method: 'put', path: '/api/file', operationId: 'setFilePrivacy', summary: 'Make an own file public or private', tag: 'Files', auth: 'required', body: setPrivacyBody, success: { status: 204 }, errors: [400, 401, 403, 404] },
  { method: 'get', path: '/api/user/files/:user_id', operationId: 'listUserFiles', summary: 'A user\'s files (private ones only to their owner)', tag: 'Files', auth: 'optional', params: params({ user_id: uuidParam }), success: { status: 200, schema: z.array(r.fileRecord) }, errors: [400, 404] },
  {
    method: 'get',
    path: '/api/file/:file_id/download',
    operationId: 'downloadFile',
    summary: 'The raw file bytes (byte ranges: Range, If-Range; conditional: If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since)',
    tag: 'Files',
    auth: 'optional',
    params: params({ file_id: uuidParam }),
    headers: z.object({
      Range: z.string().optional().describe('RFC 9110 byte range: one range (`bytes=0-99`, `bytes=100-`, `bytes=-100`) is answered 206 with those bytes; several ranges, or a header of another unit or not in the grammar, get the whole file (200); a range starting at or past the end is 416. Ignored on HEAD.'),
      'If-Range': z.string().optional().describe('The ETag (strong) or Last-Modified date of the copy the client holds part of: the range is served only while it still names the file, else the whole file (200).'),
      'If-Match': z.string().optional().describe('`*` or the strong ETags of the file the client holds (part of), e.g. with a Range to resume: 412 Precondition Failed when none names the file (strong comparison: a `W/"…"` tag never does), before If-None-Match and the Range are looked at. Ignored when it is no list of ETags.'),
      'If-Unmodified-Since': z.string().optional().describe('An HTTP-date: 412 Precondition Failed when the file was stored after it; ignored with If-Match, or when it is no HTTP-date.'),
      'If-None-Match': z.string().optional().describe('`*` or ETags of copies the client holds (weak comparison: `W/"…"` matches too): 304 Not Modified when one names the file. Decides alone when sent: If-Modified-Since is then ignored.'),
      'If-Modified-Since': z.string().optional().describe('An HTTP-date (e.g. the Last-Modified answered): 304 Not Modified when the file was stored at or before it; ignored with If-None-Match, or when it is no HTTP-date.'),
    }),
    description:
      "The body is the file's bytes and Content-Type is the file's own MIME type (its mime_type, e.g. application/pdf), so any media type may come back. Read it as bytes: with openapi-fetch, `parseAs: 'arrayBuffer'` (the default JSON parsing fails on it). A download cut part way goes on with `Range: bytes=<bytes held>-` and `If-Range: <ETag>`. HEAD answers the 200's head whatever the Range.",
    success: {
      status: 200,
      contentType: '*/*',
      schema: z.string().openapi({ format: 'binary' }),
      description: "The file's bytes, sent as its own MIME type",
      headers: z.object({
        'Accept-Ranges': z.string().describe('bytes'),
        ETag: z.string().describe("A strong validator of the file's bytes (they never change under a file's id)"),
        'Last-Modified': z.string().describe('When the bytes were stored (the upload)'),
      }),
    },
    moreAnswers: {
      206: {
        description: 'Partial Content: the one byte range asked for, with `Content-Range: bytes <first>-<last>/<size>` and Accept-Ranges, ETag and Last-Modified as the 200',
        headers: { 'Content-Range': { required: true, description: 'bytes <first>-<last>/<size>', schema: { type: 'string' } } },
        content: { '*/*': { schema: z.string().openapi({ format: 'binary' }) } },
      },
      304: {
        description: "Not Modified: If-None-Match names the file's ETag (or is `*`), or without it If-Modified-Since is at or after its Last-Modified; no body, with the ETag, Last-Modified and Cache-Control of the 200. Only to a caller who may read the file: to anyone else it is the 404 it would be without the condition",
        headers: {
          ETag: { required: true, description: "The file's ETag, as the 200's", schema: { type: 'string' } },
          'Last-Modified': { required: true, description: 'As the 200\'s', schema: { type: 'string' } },
        },
      },
    },
    errors: [400, 404, 412, 416, 502],
    errorAnswers: {
      412: {
        description: "Precondition Failed: If-Match does not name the file's ETag (or, without it, If-Unmodified-Since is before its Last-Modified); the message says which, with the ETag and Last-Modified of the file. Only to a caller who may read the file: to anyone else it is the 404 it would be without the condition",
      },
      416: {
        description: 'Range Not Satisfiable: the range starts at or past the end of the file; `Content-Range: bytes */<size>` gives the size',
        headers: { 'Content-Range': { required: true, description: 'bytes */<size>', schema: { type: 'string' } } },
      },
    },
    raw: true,
  },
  { method: 'get', path: '/api/file/:file_id', operationId: 'getFile', summary: 'A file with its content (base64url)', tag: 'Files', auth: 'optional', params: params({ file_id: uuidParam }), success: { status: 200, schema: r.fileWithContent }, errors: [400, 404, 429, 502] },
  { method: 'delete', path: '/api/file/:file_id', operationId: 'deleteFile', summary: 'Delete an own file (its cards and collection stay)', tag: 'Files', auth: 'required', params: params({ file_id: uuidParam }), success: { status: 204 }, errors: [400, 401, 403, 404] },

  // Notifications
  { method: 'get', path: '/api/notifications', operationId: 'listNotifications', summary: 'The caller\'s notifications, newest first, both kinds', tag: 'Notifications', auth: 'required', success: { status: 200, schema: z.array(r.notification) }, errors: [401] },
  { method: 'put', path: '/api/notifications/all', operationId: 'markAllNotificationsRead', summary: 'Mark all of the caller\'s notifications read', tag: 'Notifications', auth: 'required', success: { status: 204 }, errors: [401] },
  { method: 'put', path: '/api/notifications', operationId: 'markNotificationRead', summary: 'Mark one notification read', tag: 'Notifications', auth: 'required', body: markReadBody, success: { status: 204 }, errors: [400, 401, 404] },

  // Cards
  { method: 'post', path: '/api/card', operationId: 'createCard', summary: 'Create a card (more than 70 words); duplicates are stored as collisions', tag: 'Cards', auth: 'required', headers: idempotencyKeyHeader, body: createCardBody, success: { status: 200, schema: r.createCardResponse }, errors: [400, 401, 409, 422, 429] },
  { method: 'get', path: '/api/card/count', operationId: 'countCards', summary: 'Number of all cards, collisions included', tag: 'Cards', auth: 'none', success: { status: 200, schema: r.cardCount }, errors: [] },
  {
    method: 'put',
    path: '/api/card/update',
    operationId: 'updateCard',
    summary: 'Update an own card\'s link, html or privacy',
    description:
      'With If-Match (the ETag GET /api/card/{card_id} answered), the change is made only if the card has not changed since that read, checked and written in one step: else 412 and nothing is changed. ' +
      'Without If-Match (or with *) the change is made on the card as it is now, replacing any change made since the caller read it. ' +
      'The 204 carries the card\'s new ETag, for the next update\'s If-Match without reading the card again.',
    tag: 'Cards',
    auth: 'required',
    headers: z.object({
      'If-Match': z
        .string()
        .optional()
        .describe('The card\'s ETag as GET /api/card/{card_id} answered it (also in its weak form W/"…", which a compressed answer carries), or *. One tag; a malformed header or several of this API\'s tags is 400, a tag that is no version of this API 412'),
    }),
    body: updateCardBody,
    success: {
      status: 204,
      headers: z.object({
        ETag: z
          .string()
          .describe('The card\'s version as this update left it, the ETag GET /api/card/{card_id} answers until the card changes again (strong, "…"): the version the update wrote, or the one it found when there was nothing to change, never a later change\'s. Send it as If-Match to make the next change without reading the card again'),
      }),
    },
    errors: [400, 401, 403, 404, 412, 429],
    errorAnswers: { 412: { description: 'If-Match names a version of the card other than its current one: it was changed since the caller read it (another tab, device or client). Read it again (GET /api/card/{card_id}, a new ETag) and apply the change to it' } },
  },
  {
    method: 'get',
    path: '/api/card/:card_id',
    operationId: 'getCard',
    summary: 'A card (private ones only to their author)',
    tag: 'Cards',
    auth: 'optional',
    params: params({ card_id: uuidParam }),
    success: {
      status: 200,
      schema: r.card,
      headers: z.object({
        ETag: z
          .string()
          .describe('The card\'s version, for PUT /api/card/update\'s If-Match: changes with every change of the card (html, text, link, privacy, its place among copies), the same for every caller who may read it (vote counts and the caller\'s own vote are not part of it). Strong ("…"); W/"…" when the answer is compressed'),
      }),
    },
    errors: [400, 404],
  },
  { method: 'delete', path: '/api/card/:card_id', operationId: 'deleteCard', summary: 'Delete an own card', tag: 'Cards', auth: 'required', params: params({ card_id: uuidParam }), success: { status: 204 }, errors: [400, 401, 403, 404] },

  // Votes
  { method: 'post', path: '/api/vote', operationId: 'castVote', summary: 'Upvote (true) or downvote (false) a visible public card; one vote per user per card', tag: 'Votes', auth: 'required', body: voteBody, success: { status: 200, schema: r.vote }, errors: [400, 401, 404] },
  { method: 'delete', path: '/api/vote/:card_id', operationId: 'deleteVote', summary: 'Remove the caller\'s vote on a card (the path holds the card id)', tag: 'Votes', auth: 'required', params: params({ card_id: uuidParam }), success: { status: 204 }, errors: [400, 401, 404] },

  // Users
  { method: 'get', path: '/api/user/:user_id/:page', operationId: 'getUserPage', summary: 'A user with a page of their cards (25 per page, private ones only to the owner)', tag: 'Users', auth: 'optional', params: params({ user_id: uuidParam, page: pageParam }), success: { status: 200, schema: r.userPage }, errors: [400, 404] },
  { method: 'get', path: '/api/top_users/:page', operationId: 'getTopUsers', summary: 'Users by score (upvotes minus downvotes received on their public cards), 25 per page', tag: 'Users', auth: 'optional', params: pageOnly, success: { status: 200, schema: r.topUsersPage }, errors: [400] },

  // The contract itself and operations
  { method: 'get', path: '/api/openapi.json', operationId: 'getOpenApiDocument', summary: 'This document', tag: 'Meta', auth: 'none', success: { status: 200, schema: z.object({}).passthrough() }, errors: [] },
  { method: 'get', path: '/api/docs', operationId: 'getApiDocs', summary: 'Interactive documentation of this API (HTML)', tag: 'Meta', auth: 'none', success: { status: 200, contentType: 'text/html', schema: z.string() }, errors: [], raw: true },
  { method: 'get', path: '/livez', operationId: 'liveness', summary: 'Liveness: 200 while the gateway process answers, whatever its backing services do', tag: 'Meta', auth: 'none', success: { status: 200, schema: r.health }, errors: [] },
  { method: 'get', path: '/healthz', operationId: 'health', summary: 'Readiness: 200 when every backing service answers (503 names those that do not)', tag: 'Meta', auth: 'none', success: { status: 200, schema: r.health }, errors: [] },
  { method: 'get', path: '/metrics', operationId: 'metrics', summary: 'Prometheus metrics (a 404 here when the gateway serves them on a port of its own, METRICS_PORT)', tag: 'Meta', auth: 'none', success: { status: 200, contentType: 'text/plain', schema: z.string() }, errors: [404], raw: true },
];

/** The document's tags, in the order the docs page shows them; every operation's tag is one of them. */
const TAGS = [
  { name: 'Accounts', description: 'Invitations, registration, logging in and out, password resets' },
  { name: 'Users', description: 'Profiles, a user\'s cards and the top users' },
  { name: 'Cards', description: 'Creating, reading, changing and deleting cards' },
  { name: 'Search', description: 'Semantic and trigram full-text search over cards, everywhere or in one collection' },
  { name: 'Votes', description: 'Upvotes and downvotes on cards' },
  { name: 'Collections', description: 'Collections of cards and the cards in them' },
  { name: 'Files', description: 'Uploaded documents, which are made into cards and a collection' },
  { name: 'Notifications', description: 'Notices of finished verifications and collections made from files' },
  { name: 'Meta', description: 'This document, its docs page, health and metrics' },
];

const ERROR_REF = { $ref: '#/components/schemas/Error' };

/** Operations behind the /api body check and JSON parser; the Meta routes are answered before them (app.ts). */
const readsApiBody = (op: OperationSpec) => op.path.startsWith('/api/') && op.tag !== 'Meta';
/** Behind originCheck (mounted at /api, app.ts): a state-changing request that carries the cookie from another site is refused 403. */
const judgedByOriginCheck = (op: OperationSpec) => op.path.startsWith('/api/') && originCheckJudges(op.method);
/** Behind the body check, where the operation does not list `status` itself (with its own description). */
const readsApiBodyUnlessListed = (status: number) => (op: OperationSpec) => readsApiBody(op) && !op.errors.includes(status);
const errorAnswer = (description: string, headers?: Record<string, { required: boolean; description: string; schema: { type: 'string' } }>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: ERROR_REF } },
});

/**
 * Answers the shared HTTP layer gives on any operation, written once under components.responses: 405 for
 * another method on the path (OpenAPI has no place for a path's other methods, so each of its operations
 * lists it), 408, 431 and 503 that node-server.ts answers before any route (a request too slow, a request head over
 * Node's limit, a connection over the cap; 503 also for a backing service that does not answer) and, behind
 * the /api body check, 415 and 504 (a backing service past its deadline), plus 400 (a body that is not valid JSON or
 * not UTF-8) and 413 (a body over the limit) where the operation does not list them itself; and 403 on every
 * state-changing /api operation, which originCheck refuses cross-site with the cookie, where the operation does not
 * list 403 itself (its own 403 description names the cross-site refusal too).
 */
const TRANSPORT_RESPONSES = {
  400: { name: 'MalformedBody', appliesTo: readsApiBodyUnlessListed(400), response: errorAnswer('A request body that is not valid JSON, is not a JSON object, or whose bytes are not UTF-8 (an operation that reads no body ignores the fields of an object sent anyway)') },
  413: { name: 'PayloadTooLarge', appliesTo: readsApiBodyUnlessListed(413), response: errorAnswer('A request body above the size limit') },
  403: {
    name: 'CrossSiteRequestRefused',
    appliesTo: (op: OperationSpec) => judgedByOriginCheck(op) && !op.errors.includes(403),
    response: errorAnswer(
      'A cross-site request carrying the ai-editor cookie: its Origin (else Referer) is neither the gateway\'s own origin nor a configured CORS origin (CSRF defence)',
    ),
  },
  405: {
    name: 'MethodNotAllowed',
    appliesTo: (_op: OperationSpec) => true,
    response: errorAnswer('A method this path does not answer (e.g. PATCH, or POST where only GET is served); the Allow header lists the ones it does', {
      Allow: { required: true, description: 'The methods this path answers, e.g. "GET, HEAD, OPTIONS"', schema: { type: 'string' } },
    }),
  },
  431: {
    name: 'RequestHeadTooLarge',
    appliesTo: (_op: OperationSpec) => true,
    response: errorAnswer('The request line and headers together are over 16 KiB (a URL, query string or cookie too long)'),
  },
  408: {
    name: 'RequestTimeout',
    appliesTo: (_op: OperationSpec) => true,
    response: errorAnswer(
      `The request line and headers did not arrive within ${SERVER_TIMEOUTS.headers / 1000} s, or the whole request within ${SERVER_TIMEOUTS.request / 1000} s; ` +
        'for a file upload (POST /api/file) also a body that, once admitted, arrived below the minimum rate (UPLOAD_MIN_BYTES_PER_SECOND, 16 KiB/s by default, averaged over 10 s after a 10 s grace) or stopped arriving; the connection is closed',
    ),
  },
  503: {
    name: 'ServiceUnavailable',
    // An operation listing 503 itself (DELETE /api/auth) describes its own, the connection cap included.
    appliesTo: (op: OperationSpec) => !op.errors.includes(503),
    response: errorAnswer(
      'Try again later: the server has too many open connections (answered before the request is read, with Retry-After), the server is already serving all the API requests it serves at once and its line of waiting ones is full or this one waited its longest (HTTP_REQUESTS_AT_ONCE; searches, password checks and card writes apart: HTTP_HEAVY_REQUESTS_AT_ONCE; HTTP_REQUEST_QUEUE, HTTP_REQUEST_QUEUE_WAIT_MS; with Retry-After), a file upload or file read found every slot taken (uploads: after waiting in line; with Retry-After), the cards service\'s large-card HTML cleaners and their line are full (POST /api/card, PUT /api/card/update; the service\'s message, with Retry-After), ' +
        'the server\'s storage is full: nothing was saved (any write: a card, a vote, a collection, an upload, a sign-up or a login; the message "Storage is full, try again later: nothing was saved", with Retry-After; reads still work), ' +
        'or a backing service does not answer (on /healthz: not ready)',
      {
        'Retry-After': {
          required: false,
          description: 'Seconds to wait before trying again; sent when the connection cap, the request bound (2), the upload bound, the file-read bound or the cards service\'s large-card cleaners (5) refused the request, or the server\'s storage is full (30)',
          schema: { type: 'string' },
        },
      },
    ),
  },
  504: {
    name: 'GatewayTimeout',
    appliesTo: readsApiBody,
    response: errorAnswer('A backing service did not answer within the call deadline (GRPC_DEADLINE_MS); the change may or may not have been made: read before repeating it, or repeat it with the same Idempotency-Key'),
  },
  415: {
    name: 'UnsupportedMediaType',
    appliesTo: readsApiBody,
    response: errorAnswer('A request body that is not JSON (send Content-Type: application/json), or in a charset or Content-Encoding the server does not read'),
  },
};

/**
 * 429, on every API operation (a client's share of the request bound) and with more causes on those that list it: every 429 the gateway sends carries Retry-After (express-rate-limit sets it for
 * the auth limits, rate-limits.ts; the upload and file-read shares send 5 s, upload-admission.ts and file-routes.ts; a
 * service's own share refusal, as the cards service's per-user share of its large-HTML cleaners, 5 s, error-handler.ts).
 */
const TOO_MANY_REQUESTS = {
  name: 'TooManyRequests',
  response: errorAnswer(
    'Too many requests from this client; try again after Retry-After seconds. Logging in, invitations and password resets: ' +
      'over the attempts allowed per minute from one address (RATE_LIMIT_AUTH_PER_IP) or for one e-mail (RATE_LIMIT_AUTH_PER_EMAIL); ' +
      'invitations and reset mails together: over RATE_LIMIT_MAIL_PER_IP per RATE_LIMIT_MAIL_WINDOW_MS from one address (200 per 10 minutes by default; an IPv6 client counts by its /64). ' +
      'POST /api/file: the caller\'s uploads under way (admitted or waiting) would weigh more than half the upload bound beyond their first, ' +
      'or the files service already checks PARSER_CHECKS_PER_USER of the caller\'s uploads (4 by default). ' +
      'GET /api/file/{file_id}: the client (the user, else the client address) already has FILE_READS_PER_CLIENT reads under way (4 by default). ' +
      'POST /api/card and PUT /api/card/update with card_html of 16,384 characters or more (CARD_HTML_WORKER_MIN_CHARS): the cards service already cleans or has waiting CARD_HTML_PER_USER of the caller\'s large cards (2 by default). ' +
      'Any API operation: the client (the user when signed in, else the client address) already has HTTP_REQUESTS_PER_CLIENT requests served or waiting (64 by default; Retry-After 2). ' +
      'Other clients are still served.',
    { 'Retry-After': { required: true, description: 'Seconds to wait before trying again', schema: { type: 'string' } } },
  ),
};

/** `/api/card/:card_id` -> `/api/card/{card_id}`. */
export function toOpenApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

function jsonResponse(description: string, schema: ZodTypeAny, contentType = 'application/json'): ResponseConfig {
  return { description, content: { [contentType]: { schema } } };
}

let cached: ReturnType<OpenApiGeneratorV31['generateDocument']> | undefined;

/** The OpenAPI 3.1 document of the gateway, generated from the same zod schemas the routes validate with. */
export function buildOpenApiDocument() {
  if (cached) return cached;
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'cookieAuth', {
    type: 'apiKey',
    in: 'cookie',
    name: 'ai-editor',
    description:
      'Session cookie set by POST /api/auth (HttpOnly, SameSite=Lax), cleared by DELETE /api/auth and by a 401 from GET /api/auth to a request that carried one. State-changing requests that carry it must come from the same origin or a configured CORS origin (Origin/Referer check). ' +
      'Beside it, the web app\'s index.html answer (every page route outside /api) sets ai-editor-hint=signed-in or signed-out (not HttpOnly, SameSite=Lax, Path=/, 2 minutes): only whether that request carried an ai-editor cookie, so the app skips GET /api/auth on a signed-out load. It holds nothing of the session and grants nothing; GET /api/auth stays the answer on whether a session is live.',
  });
  const errorSchema = r.errorResponse;
  const tooManyRequests = registry.registerComponent('responses', TOO_MANY_REQUESTS.name, TOO_MANY_REQUESTS.response).ref;
  const transportRefs = Object.fromEntries(
    Object.entries(TRANSPORT_RESPONSES).map(([status, t]) => [status, { appliesTo: t.appliesTo, ref: registry.registerComponent('responses', t.name, t.response).ref }]),
  );
  for (const op of OPERATIONS) {
    const responses: RouteConfig['responses'] = {};
    const { success } = op;
    const description = success.description ?? (success.status === 204 ? 'Done, no body' : 'OK');
    if (success.schema) responses[success.status] = jsonResponse(description, success.schema, success.contentType);
    else responses[success.status] = { description, ...(success.headers ? { headers: success.headers } : {}) };
    if (success.headers && success.schema) (responses[success.status] as ResponseConfig).headers = success.headers;
    for (const status of op.errors) {
      const own = op.errorAnswers?.[status];
      responses[status] = status === 429 ? tooManyRequests : { ...jsonResponse(own?.description ?? ERROR_DESCRIPTIONS[status] ?? 'Error', errorSchema), ...(own?.headers ? { headers: own.headers } : {}) };
    }
    for (const [status, answer] of Object.entries(op.moreAnswers ?? {})) if (answer) responses[status] = answer;
    // Any API request beyond its client's share of the request bound (request-admission.ts) is answered 429.
    if (readsApiBody(op)) responses[429] = tooManyRequests;
    for (const [status, transport] of Object.entries(transportRefs)) if (transport.appliesTo(op)) responses[status] = transport.ref;
    responses.default = jsonResponse('Any other failure: a JSON {"message"} without internals', errorSchema);
    const route: RouteConfig = {
      method: op.method,
      path: toOpenApiPath(op.path),
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      security: op.auth === 'required' ? [{ cookieAuth: [] }] : op.auth === 'optional' ? [{}, { cookieAuth: [] }] : [],
      request: {
        ...(op.params ? { params: op.params } : {}),
        ...(op.headers ? { headers: op.headers } : {}),
        ...(op.body ? { body: { required: true, content: { 'application/json': { schema: op.body } } } } : {}),
      },
      responses,
    };
    registry.registerPath(route);
  }
  cached = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Card Library API',
      version: '1.0.0',
      description:
        'Cards, votes, collections, files, notifications and search behind one gateway. Every failure answers JSON {"message": "..."}. ' +
        'Unknown request fields are ignored. Timestamps are UTC, written ISO 8601 without a zone offset, with fractional seconds: read them as UTC.',
    },
    servers: [{ url: '/' }],
    tags: TAGS,
  });
  return cached;
}
