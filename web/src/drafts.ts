/**
 * Unsent form drafts, kept in this tab's sessionStorage when the session ends while a card is written (a sign-out in
 * another tab, an expired cookie: the form goes with the signed-in state), so nothing is lost: signing in again through
 * `?next=` brings the draft back, once.
 *
 * A draft is private data (the text of a private card too): it is keyed by the user's id, so another person signing in
 * on the same browser never sees it, lives only as long as the tab (sessionStorage, not localStorage), and every draft
 * of the tab goes on a deliberate sign-out. The form takes it out when it restores it.
 */
const PREFIX = 'draft:';

function storage(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

/** `form`: which form and which record, e.g. `card:new` or `card:<id>`. */
function keyOf(userId: string, form: string): string {
  return `${PREFIX}${userId}:${form}`;
}

export function readDraft<T>(userId: string, form: string): T | undefined {
  try {
    const text = storage()?.getItem(keyOf(userId, form));
    return text ? (JSON.parse(text) as T) : undefined;
  } catch {
    return undefined;
  }
}

export function saveDraft(userId: string, form: string, draft: unknown): void {
  try {
    storage()?.setItem(keyOf(userId, form), JSON.stringify(draft));
  } catch {
    // storage full or unavailable: the draft is not kept, the form works as before
  }
}

export function dropDraft(userId: string, form: string): void {
  try {
    storage()?.removeItem(keyOf(userId, form));
  } catch {
    // nothing kept
  }
}

/** Every draft kept in this tab, whoever's: on a deliberate sign-out. */
export function dropAllDrafts(): void {
  const store = storage();
  if (!store) return;
  try {
    for (const key of Object.keys(store)) if (key.startsWith(PREFIX)) store.removeItem(key);
  } catch {
    // nothing kept
  }
}
