import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z, type ZodTypeAny } from 'zod';

// .openapi('Name') below makes each schema a named component ($ref) of the document.
extendZodWithOpenApi(z);

/**
 * Response bodies as the interface's resource tables (and DESIGN.md's decisions) define them.
 * Objects are strict so that an undocumented field in a real response fails the contract test
 * instead of silently drifting away from the document.
 */

/** ISO 8601 date-time in UTC, written without a zone offset, with fractional seconds (`toApiTimestamp`). */
export const timestamp = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/, 'ISO 8601 without zone, fractional seconds')
  .describe('UTC date-time, ISO 8601 without a zone offset, with fractional seconds (e.g. 2026-11-22T09:30:00.123); read it as UTC (new Date(value + "Z")), not as local time');
const uuid = z.string().uuid();
const nullableString = z.string().nullable();

export const errorResponse = z.object({ message: z.string() }).strict().openapi('Error');

export const slimUser = z
  .object({
    id: uuid,
    email: z.string(),
    username: nullableString,
    website: nullableString,
    visible_email: z.boolean(),
  })
  .strict()
  .openapi('SlimUser');

/** A user as others see it: `email` is null unless visible (or the viewer is that user). */
const userShape = {
  id: uuid,
  email: nullableString,
  username: nullableString,
  website: nullableString,
  visible_email: z.boolean(),
  created_at: timestamp,
};
export const user = z.object(userShape).strict().openapi('User');

export const topUser = z
  .object({ ...userShape, score: z.number().int() })
  .strict()
  .openapi('TopUser');

/**
 * `schema` (the component `name`) or null. zod-to-openapi carries a named schema's name onto its `.nullable()`, which
 * made the component itself nullable (`User` typed `{...} | null` in generated clients); this keeps null beside it.
 */
function nullOr<T extends ZodTypeAny>(schema: T, name: string) {
  return z.union([schema, z.null()]).openapi({ anyOf: [{ $ref: `#/components/schemas/${name}` }, { type: 'null' }] });
}

const cardShape = {
    id: uuid,
    author: nullOr(user, 'User'),
    content: z.string(),
    card_html: z.string(),
    link: z.string(),
    vector_point_id: nullableString,
    total_upvotes: z.number().int().nonnegative(),
    total_downvotes: z.number().int().nonnegative(),
    vote_by_current_user: z.boolean().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    tag_set: nullableString,
    file_id: uuid.nullable(),
    file_name: nullableString,
    private: z.boolean(),
    verification_score: z.number().nullable(),
    oc_file_path: nullableString,
};
export const card = z.object(cardShape).strict().openapi('Card');

/** The create response's card: `vector_point_id` is null (indexing is asynchronous) and `author_id` is present. */
export const createdCard = z
  .object({ ...cardShape, vector_point_id: z.null(), author_id: uuid })
  .strict()
  .openapi('CreatedCard');

export const createCardResponse = z.object({ card_metadata: createdCard, duplicate: z.boolean() }).strict().openapi('CreateCardResponse');

export const cardCount = z.object({ total_count: z.number().int().nonnegative() }).strict().openapi('CardCount');

/** A root card followed by the collisions the caller may see. */
export const cardGroup = z.object({ metadata: z.array(card).min(1) }).strict().openapi('CardGroup');
export const cardSearchEntry = z
  .object({ metadata: z.array(card).min(1), score: z.number() })
  .strict()
  .openapi('CardSearchEntry');

export const cardSearchResponse = z
  .object({
    score_cards: z.array(cardSearchEntry),
    total_pages: z.number().int().nonnegative(),
    /** Present on the full-text search only, equal to total_pages. */
    total_card_pages: z.number().int().nonnegative().optional(),
  })
  .strict()
  .openapi('CardSearchResponse');

const collectionShape = {
  id: uuid,
  author_id: uuid,
  name: z.string(),
  description: z.string(),
  is_public: z.boolean(),
  created_at: timestamp,
  updated_at: timestamp,
};
export const collection = z.object(collectionShape).strict().openapi('Collection');

/** In per-user collection listings: the file the collection was made from, or null. */
export const listedCollection = z
  .object({ ...collectionShape, file_id: uuid.nullable() })
  .strict()
  .openapi('ListedCollection');

export const collectionSearchResponse = z
  .object({ bookmarks: z.array(cardSearchEntry), collection, total_pages: z.number().int().nonnegative() })
  .strict()
  .openapi('CollectionSearchResponse');

export const collectionCardsPage = z
  .object({ bookmarks: z.array(cardGroup), collection, total_pages: z.number().int().nonnegative() })
  .strict()
  .openapi('CollectionCardsPage');

export const bookmarkLookupEntry = z.object({ card_uuid: uuid, collection_ids: z.array(uuid) }).strict().openapi('BookmarkLookupEntry');

export const vote = z
  .object({
    id: uuid,
    voted_user_id: uuid,
    card_metadata_id: uuid,
    vote: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
    deleted: z.boolean(),
  })
  .strict()
  .openapi('Vote');

export const userPage = z
  .object({
    ...userShape,
    total_cards_created: z.number().int().nonnegative(),
    total_pages: z.number().int().nonnegative(),
    total_upvotes_received: z.number().int().nonnegative(),
    total_downvotes_received: z.number().int().nonnegative(),
    total_votes_cast: z.number().int().nonnegative(),
    /** `author` is null in cards listed under a user. */
    cards: z.array(z.object({ ...cardShape, author: z.null() }).strict().openapi('UserCard')),
  })
  .strict()
  .openapi('UserPage');

export const topUsersPage = z.object({ users: z.array(topUser), total_user_pages: z.number().int().nonnegative() }).strict().openapi('TopUsersPage');

const fileShape = {
    id: uuid,
    user_id: uuid,
    file_name: z.string(),
    mime_type: z.string(),
    private: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
    size: z.number().int().nonnegative(),
    tag_set: nullableString,
    /** Empty when the file has no such path (uploads set none). */
    oc_file_path: z.string(),
    /** Ingestion of the document into cards: the files service's IngestionStatus (services/files/src/domain/model.ts). */
    ingestion_status: z
      .enum(['pending', 'done', 'failed'])
      .describe('Ingestion of the document into cards: pending (cards not made yet), done (its cards and collection exist; find the collection by file_id), failed (see ingestion_error)'),
  ingestion_error: nullableString,
};
export const fileRecord = z.object(fileShape).strict().openapi('File');

/** The get-file and create-file responses carry the content; the per-user listing does not. */
export const fileWithContent = z
  .object({ ...fileShape, base64url_content: z.string() })
  .strict()
  .openapi('FileWithContent');

const notificationTimes = { user_read: z.boolean(), created_at: timestamp, updated_at: timestamp };

export const verificationNotification = z
  .object({
    type: z.literal('verification'),
    id: uuid,
    user_uuid: uuid,
    card_uuid: uuid.nullable(),
    verification_uuid: uuid.nullable(),
    similarity_score: z.number().int().min(0).max(100),
    ...notificationTimes,
  })
  .strict()
  .openapi('VerificationNotification');

export const collectionCreatedNotification = z
  .object({
    type: z.literal('collection_created'),
    id: uuid,
    user_uuid: uuid,
    collection_uuid: uuid.nullable(),
    ...notificationTimes,
  })
  .strict()
  .openapi('CollectionCreatedNotification');

export const notification = z.discriminatedUnion('type', [verificationNotification, collectionCreatedNotification]).openapi('Notification');

export const health = z.object({ status: z.literal('ok') }).strict().openapi('Health');
