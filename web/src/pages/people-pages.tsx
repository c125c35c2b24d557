import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, type Notification } from '../api';
import { CardSummary, ErrorMessage, firstWords, formatDate, Loading, NotFoundHint, PageTitle, Pager, useAction, useAsync, userName } from '../components';
import { Link, navigate, useLocation } from '../router';
import { verificationReading } from '../verification';
import { useSession } from '../session';

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
      <PageTitle>{userName(u)}</PageTitle>
      <dl class="facts stats">
        <dt>Score</dt>
        <dd data-testid="user-score">{score}</dd>
        <dt>Cards</dt>
        <dd>{u.total_cards_created}</dd>
        <dt>Votes received</dt>
        <dd>
          ▲ {up} ▼ {down}
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
                <Link href={`/collection/${c.id}`}>{c.name}</Link> {c.is_public ? null : <span class="badge">private</span>}
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
      {data.data && data.data.users.length === 0 ? <p class="muted">Nobody has received a vote yet.</p> : null}
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
                  <Link href={`/user/${u.id}`}>{userName(u)}</Link>
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

/** How many notifications, from the top of the list, get their card's or collection's name looked up. */
const NAMED_NOTIFICATIONS = 20;

/**
 * The names of the cards (opening words) and collections the first notifications name: one request per card or
 * collection, de-duplicated, and kept for the page's life (a Refresh asks only about new ones). A card or collection
 * that answers 404 is marked gone; any other failure leaves it unnamed (asked again on the next change of the list).
 */
function useNotificationNames(items: Notification[]): Map<string, Named> {
  const known = useRef(new Map<string, Named>());
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
        else if (r.reason instanceof ApiError && r.reason.status === 404) known.current.set(k, { gone: true });
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
        A collection was created: <Link href={`/collection/${n.collection_uuid}`}>{named ? named.name : 'open the collection'}</Link>.
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
      Your <Link href={`/card/${n.card_uuid}`}>{named ? `card “${named.name}”` : 'card'}</Link> {score}
    </>
  );
}

export function NotificationsPage() {
  const session = useSession();
  const list = useAsync(() => api.notifications(), []);
  const action = useAction();
  const after = async (work: () => Promise<void>) => {
    const ok = await action.run(async () => {
      await work();
      return true;
    });
    if (ok) {
      list.reload();
      void session.refreshUnread();
    }
  };
  const items = list.data ?? [];
  const names = useNotificationNames(items);
  const unread = items.filter((n) => !n.user_read).length;
  return (
    <section>
      <PageTitle>Notifications</PageTitle>
      {list.loading && !list.data ? <Loading /> : null}
      <ErrorMessage error={list.error || action.error} />
      {list.data ? (
        <p class="row">
          <span data-testid="unread-count">{unread} unread</span>
          <button type="button" onClick={() => void after(() => api.markAllRead())} disabled={unread === 0 || action.busy}>
            Mark all as read
          </button>
          <button type="button" onClick={list.reload}>
            Refresh
          </button>
        </p>
      ) : null}
      {list.data && items.length === 0 ? <p class="muted">No notifications yet.</p> : null}
      <ul class="notifications">
        {items.map((n) => (
          <li key={n.id} class={n.user_read ? 'read' : 'unread'}>
            <p>
              {n.user_read ? null : <span class="badge new">new</span>} <NotificationText n={n} names={names} />
            </p>
            <p class="meta">
              {formatDate(n.created_at)}
              {n.user_read ? null : (
                <>
                  {' '}
                  <button type="button" class="small" onClick={() => void after(() => api.markRead(n.id))} disabled={action.busy}>
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
