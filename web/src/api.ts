/** The public HTTP interface (/api, same origin, `ai-editor` cookie) as typed functions. */

export interface SlimUser {
  id: string;
  email: string;
  username: string | null;
  website: string | null;
  visible_email: boolean;
}

export interface User {
  id: string;
  email: string | null;
  username: string | null;
  website: string | null;
  visible_email: boolean;
  created_at?: string;
  score?: number;
}

export interface Card {
  id: string;
  author: User | null;
  content: string;
  card_html: string;
  link: string;
  vector_point_id: string | null;
  total_upvotes: number;
  total_downvotes: number;
  vote_by_current_user: boolean | null;
  created_at: string;
  updated_at: string;
  tag_set: string | null;
  file_id: string | null;
  file_name: string | null;
  private: boolean;
  verification_score: number | null;
  oc_file_path?: string | null;
}

export interface CardEntry {
  metadata: Card[];
  score?: number;
}

export interface SearchResult {
  score_cards: CardEntry[];
  total_pages: number;
  total_card_pages?: number;
}

export interface Collection {
  id: string;
  author_id: string;
  name: string;
  description: string;
  is_public: boolean;
  created_at: string;
  updated_at: string;
  file_id?: string | null;
}

export interface CollectionPage {
  bookmarks: CardEntry[];
  collection: Collection;
  total_pages: number;
}

export interface FileRecord {
  id: string;
  user_id: string;
  file_name: string;
  mime_type: string;
  private: boolean;
  created_at: string;
  updated_at: string;
  size: number;
  oc_file_path?: string | null;
}

export interface Notification {
  id: string;
  type?: 'verification' | 'collection_created';
  user_uuid: string;
  card_uuid?: string;
  verification_uuid?: string;
  similarity_score?: number;
  collection_uuid?: string;
  user_read: boolean;
  created_at: string;
  updated_at: string;
}

export interface UserPage extends User {
  total_cards_created: number;
  cards: Card[];
  total_pages?: number;
  total_upvotes_received?: number;
  total_downvotes_received?: number;
  total_votes_cast?: number;
}

export interface Vote {
  id: string;
  voted_user_id: string;
  card_metadata_id: string;
  vote: boolean;
}

export interface SearchQuery {
  content: string;
  tag_set?: string[];
  link?: string[];
}

/** A non-2xx answer, carrying the server's `{"message"}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function request<T>(method: string, path: string, body?: unknown): Promise<{ data: T; headers: Headers }> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers = { ...init.headers, 'content-type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  let res: Response;
  try {
    res = await fetch(`/api${path}`, init);
  } catch {
    throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const message = (json as { message?: unknown } | undefined)?.message;
    throw new ApiError(res.status, typeof message === 'string' && message ? message : `Request failed (${res.status})`);
  }
  return { data: json as T, headers: res.headers };
}

const get = async <T>(path: string) => (await request<T>('GET', path)).data;
const post = async <T>(path: string, body: unknown = {}) => (await request<T>('POST', path, body)).data;
const put = async <T>(path: string, body: unknown = {}) => (await request<T>('PUT', path, body)).data;
const del = async <T>(path: string, body?: unknown) => (await request<T>('DELETE', path, body)).data;
const seg = encodeURIComponent;

export const api = {
  // Accounts and sessions
  invite: (email: string) => post<void>('/invitation', { email, referral_tokens: [] }),
  register: (invitationId: string, password: string, passwordConfirmation: string) =>
    post<SlimUser>(`/register/${seg(invitationId)}`, { password, password_confirmation: passwordConfirmation }),
  login: (email: string, password: string) => post<void>('/auth', { email, password }),
  logout: () => del<void>('/auth'),
  me: () => get<SlimUser>('/auth'),
  requestPasswordReset: (email: string) => get<void>(`/password/${seg(email)}`),
  resetPassword: (passwordResetId: string, password: string, passwordConfirmation: string) =>
    post<void>('/password', { password_reset_id: passwordResetId, password, password_confirmation: passwordConfirmation }),
  updateProfile: (body: { username?: string | null; website?: string | null; visible_email?: boolean }) => put<SlimUser>('/user', body),

  // Cards
  createCard: (body: { card_html: string; link: string; private: boolean; tag_set?: string[] }) =>
    post<{ card_metadata: Card; duplicate: boolean }>('/card', body),
  card: (id: string) => get<Card>(`/card/${seg(id)}`),
  updateCard: (body: { card_uuid: string; link?: string; card_html?: string; private?: boolean }) => put<void>('/card/update', body),
  deleteCard: (id: string) => del<void>(`/card/${seg(id)}`),
  countCards: () => get<{ total_count: number }>('/card/count'),
  search: (mode: SearchMode, page: number, query: SearchQuery) =>
    post<SearchResult>(`/card/${mode === 'semantic' ? 'search' : 'fulltextsearch'}/${page}`, query),

  // Votes
  vote: (cardId: string, vote: boolean) => post<Vote>('/vote', { card_metadata_id: cardId, vote }),
  unvote: (cardId: string) => del<void>(`/vote/${seg(cardId)}`),

  // Users
  userPage: (userId: string, page: number) => get<UserPage>(`/user/${seg(userId)}/${page}`),
  userCollections: (userId: string) => get<Collection[]>(`/user/collections/${seg(userId)}`),
  userFiles: (userId: string) => get<FileRecord[]>(`/user/files/${seg(userId)}`),
  topUsers: (page: number) => get<{ users: User[]; total_user_pages: number }>(`/top_users/${page}`),

  // Files
  file: (id: string) => get<FileRecord>(`/file/${seg(id)}`),
  deleteFile: (id: string) => del<void>(`/file/${seg(id)}`),
  setFilePrivate: (fileId: string, isPrivate: boolean) => put<void>('/file', { file_id: fileId, private: isPrivate }),

  // Collections
  createCollection: async (body: { name: string; description?: string; is_public: boolean }) => {
    const { headers } = await request<void>('POST', '/card_collection', body);
    const location = headers.get('location') ?? '';
    return location.split('/').filter(Boolean).pop() ?? null;
  },
  updateCollection: (body: { collection_id: string; name?: string; description?: string; is_public?: boolean }) => put<void>('/card_collection', body),
  deleteCollection: (collectionId: string) => del<void>('/card_collection', { collection_id: collectionId }),
  collection: (id: string, page: number) => get<CollectionPage>(`/card_collection/${seg(id)}/${page}`),
  addToCollection: (collectionId: string, cardId: string) => post<void>(`/card_collection/${seg(collectionId)}`, { card_metadata_id: cardId }),
  removeFromCollection: (collectionId: string, cardId: string) => del<void>(`/card_collection/${seg(collectionId)}`, { card_metadata_id: cardId }),
  collectionsOfCards: (cardIds: string[]) =>
    post<{ card_uuid: string; collection_ids: string[] }[]>('/card_collection/bookmark', { collection_ids: cardIds.join(',') }),
  searchCollection: (mode: SearchMode, page: number, collectionId: string, query: SearchQuery) =>
    post<CollectionPage>(`/card_collection/${mode === 'semantic' ? 'search' : 'fulltextsearch'}/${page}`, { ...query, collection_id: collectionId }),

  // Notifications
  notifications: () => get<Notification[]>('/notifications'),
  markRead: (notificationId: string) => put<void>('/notifications', { notification_id: notificationId }),
  markAllRead: () => put<void>('/notifications/all'),
};

export type SearchMode = 'semantic' | 'fulltext';

/** Bytes -> base64url without padding, in chunks so large files do not overflow the call stack. */
export function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export interface UploadRequest {
  base64_docx_file: string;
  file_name: string;
  file_mime_type: string;
  private: boolean;
  tag_set?: string[];
}

/**
 * POST /api/file through XMLHttpRequest, the one browser API that reports upload progress.
 * `onProgress` receives a fraction in [0, 1].
 */
export function uploadFile(body: UploadRequest, onProgress: (fraction: number) => void): Promise<FileRecord & { base64url_content?: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/file');
    xhr.setRequestHeader('content-type', 'application/json');
    xhr.setRequestHeader('accept', 'application/json');
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onerror = () => reject(new ApiError(0, 'The upload failed: the server cannot be reached.'));
    xhr.onload = () => {
      let json: any;
      try {
        json = xhr.responseText ? JSON.parse(xhr.responseText) : undefined;
      } catch {
        json = undefined;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        resolve(json);
      } else reject(new ApiError(xhr.status, typeof json?.message === 'string' ? json.message : `Upload failed (${xhr.status})`));
    };
    xhr.send(JSON.stringify(body));
  });
}
