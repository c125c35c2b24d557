import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, type Notification } from '../api';
import { CardSummary, ErrorMessage, firstWords, formatDate, Loading, NotFoundHint, PageTitle, Pager, useAction, useAsync, userName, UserText, VoteTotals } from '../components';
import { Link, navigate, useLocation } from '../router';
import { verificationReading } from '../verification';
import { useSession } from '../session';
import { onOtherTabs } from '../tabs';

function pageFrom(query: URLSearchParams): number {
  const page = Number.parseInt(query.get('page') ?? '1', 10);
  return Number.isFinite(page) && page >= 1 ? page : 1;
}

export function UserPage({ userId }: { userId: string }) {
  const { query } = useLocation();
  const page = pageFrom(query);
  const session = useSession();
  const data = useAsync(() => api.userPage(userId, page), [userId, page]);
  const collections = useAsync(() => api.userCollections(userId), [userId]);
  if (data.loading && !data.data) return <Loading />;
  if (!data.data)
    return (
      <section>
        <PageTitle>User not found</PageTitle>
        <NotFoundHint error={data.error} />
      </section>
    );
  const u = data.data;
  const up = u.total_upvotes_received;
  const down = u.total_downvotes_received;
  const score = up - down;
  return (
    <section>
      <PageTitle dir="auto">{userName(u)}</PageTitle>
      <dl class="facts stats">
        <dt>Score</dt>
        <dd data-testid="user-score">{score}</dd>
        <dt>Cards</dt>
        <dd>{u.total_cards_created}</dd>
        <dt>Votes received</dt>
        <dd>
          <VoteTotals up={up} down={down} />
        </dd>
        <dt>Votes cast</dt>
        <dd>{u.total_votes_cast}</dd>
        {u.email ? (
          <>
            <dt>E-mail</dt>
            <dd>{u.email}</dd>
          </>
        ) : null}
        {u.website ? (
          <>
            <dt>Website</dt>
            <dd>
              <a href={u.website} rel="noopener noreferrer nofollow ugc">
                {u.website}
              </a>
            </dd>
          </>
        ) : null}
        <dt>Member since</dt>
        <dd>{formatDate(u.created_at)}</dd>
      </dl>
      {session.user?.id === userId ? (
        <p>
          <Link href="/profile">Edit your profile</Link>
        </p>
      ) : null}
      {collections.data && collections.data.length > 0 ? (
        <>
          <h2>Collections</h2>
          <ul class="plain-list">
            {collections.data.map((c) => (
              <li key={c.id}>
                <UserText>
                  <Link href={`/collection/${c.id}`}>{c.name}</Link>
                </UserText>{' '}
                {c.is_public ? null : <span class="badge">private</span>}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <h2>Cards</h2>
      {u.cards.length === 0 ? <p class="muted">No cards yet.</p> : null}
      <ol class="results" aria-label="Cards">
        {u.cards.map((card) => (
          <li key={card.id}>
            <CardSummary card={card} />
          </li>
        ))}
      </ol>
      <Pager page={page} totalPages={u.total_pages} onPage={(p) => navigate(`/user/${userId}?page=${p}`)} />
    </section>
  );
}

export function TopUsersPage() {
  const { query } = useLocation();
  const page = pageFrom(query);
  const data = useAsync(() => api.topUsers(page), [page]);
  return (
    <section>
      <PageTitle>Top users</PageTitle>
      <p class="muted">Score = upvotes received − downvotes received.</p>
      {data.loading ? <Loading /> : null}
      <ErrorMessage error={data.error} />
      {/* Past the last page the pager says so: "nobody" only when there is no one on any page. */}
      {data.data && data.data.users.length === 0 && (page === 1 || data.data.total_user_pages < 1) ? <p class="muted">Nobody has received a vote yet.</p> : null}
      {data.data && data.data.users.length > 0 ? (
        <table class="ranking">
          <caption class="visually-hidden">Users by score</caption>
          <thead>
            <tr>
              <th scope="col">Rank</th>
              <th scope="col">User</th>
              <th scope="col">Score</th>
            </tr>
          </thead>
          <tbody>
            {data.data.users.map((u, i) => (
              <tr key={u.id}>
                <td>{(page - 1) * 25 + i + 1}</td>
                <td>
                  <UserText>
                    <Link href={`/user/${u.id}`}>{userName(u)}</Link>
                  </UserText>
                </td>
                <td>{u.score}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {data.data ? <Pager page={page} totalPages={data.data.total_user_pages} onPage={(p) => navigate(`/top?page=${p}`)} /> : null}
    </section>
  );
}

/** What a notification's card or collection is called: its name, or `gone` when it was deleted since. */
type Named = { name: string } | { gone: true };

/**
 * The cards and collections found deleted (404), per user, for this tab's life (sessionStorage): a deleted one stays
 * deleted, so a later visit of the page, a reload too, shows "since deleted" without asking (and logging a 404) again.
 */
const GONE_KEY = 'notification-names-gone:';

function goneFor(userId: string | undefined): Map<string, Named> {
  const known = new Map<string, Named>();
  if (!userId) return known;
  try {
    const stored: unknown = JSON.parse(sessionStorage.getItem(GONE_KEY + userId) ?? '[]');
    if (Array.isArray(stored)) for (const k of stored) if (typeof k === 'string') known.set(k, { gone: true });
  } catch {
    // storage unavailable or unreadable: ask again
  }
  return known;
}

function rememberGone(userId: string | undefined, key: string): void {
  if (!userId) return;
  try {
    const keys = new Set([...goneFor(userId).keys(), key]);
    sessionStorage.setItem(GONE_KEY + userId, JSON.stringify([...keys].slice(-200)));
  } catch {
    // storage full or unavailable: only this visit remembers
  }
}

/** How many notifications, from the top of the list, get their card's or collection's name looked up. */
const NAMED_NOTIFICATIONS = 20;

/**
 * The names of the cards (opening words) and collections the first notifications name: one request per card or
 * collection, de-duplicated, and kept for the page's life (a Refresh asks only about new ones). A card or collection
 * that answers 404 is marked gone; any other failure leaves it unnamed (asked again on the next change of the list).
 */
function useNotificationNames(items: Notification[], userId: string | undefined): Map<string, Named> {
  const known = useRef(goneFor(userId));
  const [names, setNames] = useState(known.current);
  const wanted: { key: string; load: () => Promise<string> }[] = [];
  for (const n of items.slice(0, NAMED_NOTIFICATIONS)) {
    if (n.type === 'collection_created' && n.collection_uuid) {
      const id = n.collection_uuid;
      wanted.push({ key: `collection:${id}`, load: async () => (await api.collection(id, 1)).collection.name });
    } else if (n.type === 'verification' && n.card_uuid) {
      const id = n.card_uuid;
      wanted.push({ key: `card:${id}`, load: async () => firstWords((await api.card(id)).content, 8) });
    }
  }
  const missing = [...new Map(wanted.filter((w) => !known.current.has(w.key)).map((w) => [w.key, w])).values()];
  const key = missing.map((w) => w.key).join(',');
  useEffect(() => {
    if (missing.length === 0) return;
    let live = true;
    void Promise.allSettled(missing.map((w) => w.load())).then((results) => {
      results.forEach((r, i) => {
        const k = missing[i]!.key;
        if (r.status === 'fulfilled') known.current.set(k, { name: r.value });
        else if (r.reason instanceof ApiError && r.reason.status === 404) {
          known.current.set(k, { gone: true });
          rememberGone(userId, k);
        }
      });
      if (live) setNames(new Map(known.current));
    });
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return names;
}

function NotificationText({ n, names }: { n: Notification; names: Map<string, Named> }) {
  if (n.type === 'collection_created') {
    const named = names.get(`collection:${n.collection_uuid}`);
    if (named && 'gone' in named) return <>A collection was created (since deleted).</>;
    return (
      <>
        A collection was created:{' '}
        <UserText>
          <Link href={`/collection/${n.collection_uuid}`}>{named ? named.name : 'open the collection'}</Link>
        </UserText>
        .
      </>
    );
  }
  const named = names.get(`card:${n.card_uuid}`);
  const reading = verificationReading(n.similarity_score, true);
  const score =
    reading?.level === 'unreadable' ? (
      <>
        was checked, but its source page could not be read or shares no text with it (score <strong>0</strong>/100).
      </>
    ) : (
      <>
        was checked against its source page: {reading?.match ? `${reading.match}, ` : ''}score <strong>{n.similarity_score}</strong>/100.
      </>
    );
  if (named && 'gone' in named) return <>Your card (since deleted) {score}</>;
  return (
    <>
      Your{' '}
      <Link href={`/card/${n.card_uuid}`}>
        {named ? (
          <>
            card “<UserText>{named.name}</UserText>”
          </>
        ) : (
          'card'
        )}
      </Link>{' '}
      {score}
    </>
  );
}

export function NotificationsPage() {
  const session = useSession();
  const list = useAsync(() => api.notifications(), []);
  const action = useAction();
  const listRef = useRef<HTMLUListElement>(null);
  const countRef = useRef<HTMLSpanElement>(null);
  // Where the keyboard goes once a pressed "Mark as read" button is gone with its notification's unread state.
  const focusAfter = useRef<string | null>(null);
  const after = async (work: () => Promise<void>, thenFocusAfter?: string) => {
    const ok = await action.run(async () => {
      await work();
      return true;
    });
    if (!ok) return;
    if (thenFocusAfter) focusAfter.current = thenFocusAfter;
    list.reload();
  };
  const items = list.data ?? [];
  const names = useNotificationNames(items, session.user?.id);
  const unread = items.filter((n) => !n.user_read).length;
  // One count: the header's badge says what this page says, on opening it, after Refresh and after marking read.
  const { setUnread } = session;
  useEffect(() => {
    if (list.data) setUnread(unread);
  }, [list.data, unread, setUnread]);
  useEffect(() => {
    if (!focusAfter.current || list.loading) return;
    const id = focusAfter.current;
    focusAfter.current = null;
    const others = (from: Notification[]) => from.find((n) => !n.user_read && n.id !== id);
    const next = others(items.slice(items.findIndex((n) => n.id === id) + 1)) ?? others(items);
    const button = next ? listRef.current?.querySelector<HTMLElement>(`[data-mark-read="${next.id}"]`) : null;
    (button ?? countRef.current)?.focus();
  });
  // Marked read in another tab: this list (and with it the badge) follows.
  const { reload } = list;
  useEffect(() => onOtherTabs((news) => news === 'notifications' && reload()), [reload]);
  const markOne = (id: string) => void after(() => api.markRead(id), id);
  return (
    <section>
      <PageTitle>Notifications</PageTitle>
      {list.loading && !list.data ? <Loading /> : null}
      <ErrorMessage error={list.error || action.error} />
      {list.data ? (
        <p class="row">
          <span data-testid="unread-count" tabIndex={-1} ref={countRef}>
            {unread} unread
          </span>
          {/* aria-disabled, not disabled: with nothing left unread the button keeps the focus it was pressed with. */}
          <button type="button" onClick={() => unread > 0 && void after(() => api.markAllRead())} aria-disabled={unread === 0 || action.busy}>
            Mark all as read
          </button>
          <button type="button" onClick={list.reload}>
            Refresh
          </button>
        </p>
      ) : null}
      {list.data && items.length === 0 ? <p class="muted">No notifications yet.</p> : null}
      <ul class="notifications" ref={listRef}>
        {items.map((n) => (
          <li key={n.id} class={n.user_read ? 'read' : 'unread'}>
            <p id={`notification-${n.id}`}>
              {n.user_read ? null : <span class="badge new">new</span>} <NotificationText n={n} names={names} />
            </p>
            <p class="meta">
              {formatDate(n.created_at)}
              {n.user_read ? null : (
                <>
                  {' '}
                  {/* Named with its notification: a list of "Mark as read" buttons alone says not which is which. */}
                  <button type="button" class="small" data-mark-read={n.id} aria-describedby={`notification-${n.id}`} onClick={() => markOne(n.id)} aria-disabled={action.busy}>
                    Mark as read
                  </button>
                </>
              )}
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}
