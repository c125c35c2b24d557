import { useEffect, useState } from 'preact/hooks';
import { api, type Notification } from '../api';
import { CardSummary, ErrorMessage, firstWords, formatDate, Loading, PageTitle, Pager, useAction, useAsync, userName } from '../components';
import { Link, navigate, useLocation } from '../router';
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
        <ErrorMessage error={data.error} />
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

/** The opening words of the cards the notifications name, fetched once per card (missing ones stay unnamed). */
function useCardTitles(items: Notification[]): Map<string, string> {
  const [titles, setTitles] = useState(new Map<string, string>());
  const ids = [...new Set(items.map((n) => (n.type === 'verification' ? n.card_uuid : null)).filter((id): id is string => Boolean(id)))].slice(0, 50);
  const key = ids.join(',');
  useEffect(() => {
    let live = true;
    void Promise.allSettled(ids.map((id) => api.card(id))).then((results) => {
      if (!live) return;
      const next = new Map<string, string>();
      results.forEach((r, i) => {
        if (r.status === 'fulfilled') next.set(ids[i]!, firstWords(r.value.content, 8));
      });
      setTitles(next);
    });
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return titles;
}

function NotificationText({ n, titles }: { n: Notification; titles: Map<string, string> }) {
  if (n.type === 'collection_created')
    return (
      <>
        A collection was created: <Link href={`/collection/${n.collection_uuid}`}>open the collection</Link>.
      </>
    );
  const title = n.card_uuid ? titles.get(n.card_uuid) : undefined;
  return (
    <>
      Your <Link href={`/card/${n.card_uuid}`}>{title ? `card “${title}”` : 'card'}</Link> was checked against its source page: similarity <strong>{n.similarity_score}</strong>/100.
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
  const titles = useCardTitles(items);
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
              {n.user_read ? null : <span class="badge new">new</span>} <NotificationText n={n} titles={titles} />
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
