import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Card, type User } from './api';
import { hasNavigated, Link } from './router';
import { leadingWords, splitTags, truncatedToCharacters } from '@cards/card-rules';
import { verificationReading } from './verification';

/**
 * Loads data for a page; `reload` runs the loader again. A newer load (changed deps, reload) or leaving the page drops
 * the older answer, and aborts its request when `load` passes the signal on (the searches do: on a slow link a stale
 * answer only delays the newer one).
 */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): { data: T | undefined; error: ApiError | undefined; loading: boolean; reload(): void } {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    const live = () => !controller.signal.aborted;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load(controller.signal).then(
      (data) => live() && setState({ data, loading: false }),
      (err: unknown) => live() && setState({ error: err instanceof ApiError ? err : new ApiError(0, String(err)), loading: false }),
    );
    return () => controller.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** Runs a user action, keeping its error (the server's, as it came: ErrorMessage shows its reference) and busy state for the form. */
export function useAction(): { busy: boolean; error: string | ApiError | undefined; run<T>(action: () => Promise<T>): Promise<T | undefined>; setError(e: string | ApiError | undefined): void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | ApiError | undefined>();
  // A second run while one is under way does nothing: the buttons say busy with aria-disabled rather than disabled (a
  // disabled button drops the keyboard focus to <body>), so they can still be pressed.
  const inFlight = useRef(false);
  const run = useCallback(async <T,>(action: () => Promise<T>) => {
    if (inFlight.current) return undefined;
    inFlight.current = true;
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (err) {
      setError(err instanceof ApiError ? err : err instanceof Error ? err.message : String(err));
      return undefined;
    } finally {
      inFlight.current = false;
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
}

/**
 * An error as the page says it. A server failure (5xx: 500, 502, 503…) adds its answer's x-request-id, small and
 * selectable, for the person to quote to support: "(reference: <id>)". A refusal (4xx) says what to change, no reference.
 */
export function ErrorMessage({ error }: { error: string | ApiError | undefined }) {
  if (!error) return null;
  const text = typeof error === 'string' ? error : error.message;
  const reference = typeof error !== 'string' && error.status >= 500 && error.requestId ? error.requestId : null;
  return (
    <p class="error" role="alert">
      {text}
      {reference ? (
        <>
          {' '}
          <small class="reference">
            (reference: <span class="request-id">{reference}</span>)
          </small>
        </>
      ) : null}
    </p>
  );
}

/**
 * A status message (sent, saved, added…). Its live region goes into the page empty and its words follow a moment
 * later: a screen reader says what changes inside a live region it knows, and often says nothing of one inserted with
 * its words already in it, which is how every notice came (a keyboard user pressing "Add to collection" heard nothing).
 */
export function Notice({ children }: { children: ComponentChildren }) {
  const [said, setSaid] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => setSaid(true), NOTICE_DELAY_MS);
    return () => clearTimeout(timer);
  }, []);
  return (
    <p class="notice" role="status">
      {said ? children : null}
    </p>
  );
}

/** How long a new notice's live region stays empty, for the browser to tell assistive technology it is there. */
const NOTICE_DELAY_MS = 100;

/**
 * What a keyboard action did to a list, said where the list starts and given the focus: the row whose button was
 * pressed is gone (a deleted file, a card taken out of a collection), and its focus would drop to <body>, so a
 * keyboard user would start again from the top of the page and a screen reader would say nothing. Tab goes on from
 * here into the rows left. Give it a new `key` for each action, so a second one is focused and said again.
 */
export function DoneNotice({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLParagraphElement>(null);
  // In the render that shows it (a layout effect), not after the next paint: the list's reload may come first.
  useLayoutEffect(() => ref.current?.focus(), []);
  return (
    <p class="notice" role="status" tabIndex={-1} ref={ref}>
      {children}
    </p>
  );
}

/**
 * An error carried to the page the app goes to next (said there once, with its reference): an action that fails and
 * leaves its page all the same, such as a sign-out from the profile whose 503 says the session lives on until it
 * expires. Kept in memory: the move is an in-app navigation (no reload), and the next page's `CarriedError` takes it.
 */
let carried: string | ApiError | undefined;

export function carryError(error: string | ApiError | undefined): void {
  carried = error;
}

/** Says the error carried from the page before (once: the next page has none). In `main`, which each page renews. */
export function CarriedError() {
  const [error] = useState(() => {
    const e = carried;
    carried = undefined;
    return e;
  });
  return <ErrorMessage error={error} />;
}

/**
 * The body of a "not found" page under its title: a 404 is said by the title alone (its message would repeat it), any
 * other failure (no connection, not signed in…) is shown as the error it is.
 */
export function NotFoundHint({ error }: { error: ApiError | undefined }) {
  if (error && error.status !== 404) return <ErrorMessage error={error} />;
  return (
    <p>
      It may have been deleted, or the address is wrong. <Link href="/">Go to the search</Link>.
    </p>
  );
}

export function Loading() {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading…
    </p>
  );
}

/**
 * Names the page in the tab title and, after an in-app navigation, moves focus to the heading so screen
 * readers announce the new page (a first load keeps the browser's own focus order: skip link first).
 */
export function PageTitle({ children, dir }: { children: ComponentChildren; dir?: 'auto' }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (hasNavigated()) ref.current?.focus({ preventScroll: true });
  }, []);
  // After every render, not only the first: a renamed collection keeps its heading element but changes its text.
  useEffect(() => {
    const text = ref.current?.textContent;
    if (text && document.title !== `${text} · Card Library`) document.title = `${text} · Card Library`;
  });
  return (
    // dir="auto" when the title is user text (a card's opening words, a collection's or user's name): its own direction.
    <h1 tabIndex={-1} ref={ref} dir={dir}>
      {children}
    </h1>
  );
}

export function userName(user: Pick<User, 'username' | 'email' | 'id'> | null | undefined): string {
  if (!user) return 'unknown author';
  return user.username ?? user.email ?? `user ${user.id.slice(0, 8)}`;
}

export function formatDate(timestamp: string | undefined): string {
  if (!timestamp) return '';
  // The interface's timestamps carry no zone: they are UTC.
  const date = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(timestamp) ? timestamp : `${timestamp}Z`);
  return Number.isNaN(date.getTime()) ? timestamp : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function Tags({ tagSet }: { tagSet: string | null }) {
  if (!tagSet) return null;
  const tags = splitTags([tagSet]);
  return (
    <ul class="tags" aria-label="Tags">
      {tags.map((t) => (
        <li key={t} dir="auto">
          {t}
        </li>
      ))}
    </ul>
  );
}

/**
 * The card's verification as a badge: nothing when there is no link and no score (see ./verification). Its explanation
 * is in the badge as visually hidden text, so a screen reader says it and no mouse is needed; the tooltip (title) is for
 * a mouse, which alone left it out of reach of a keyboard or screen reader. `explainedBeside`: the page shows the
 * explanation in words next to it (the card page), which a screen reader would otherwise hear twice.
 */
export function VerificationBadge({ score, hasLink, explainedBeside = false }: { score: number | null; hasLink: boolean; explainedBeside?: boolean }) {
  const reading = verificationReading(score, hasLink);
  if (!reading) return null;
  return (
    <span class={`badge verify-${reading.level}`} title={`${reading.label}: ${reading.explanation}`} data-testid="verification">
      {reading.label}
      {explainedBeside ? null : <span class="visually-hidden">: {reading.explanation}</span>}
    </span>
  );
}

/** A card in a list: excerpt, author, votes, and any collisions (duplicates) under it. */
export function CardSummary({ card, collisions = [], score, actions }: { card: Card; collisions?: Card[]; score?: number; actions?: ComponentChildren }) {
  const shortened = truncatedToCharacters(card.content, 320);
  const excerpt = shortened === card.content ? card.content : `${shortened}…`;
  return (
    <article class="card-summary" aria-labelledby={`card-${card.id}`}>
      <h3 id={`card-${card.id}`} dir="auto">
        <Link href={`/card/${card.id}`}>{firstWords(card.content, 12)}</Link>
      </h3>
      <p class="excerpt" dir="auto">
        {excerpt}
      </p>
      <p class="meta">
        {card.author ? (
          <>
            by <UserText><Link href={`/user/${card.author.id}`}>{userName(card.author)}</Link></UserText> ·{' '}
          </>
        ) : null}
        <VoteTotals up={card.total_upvotes} down={card.total_downvotes} />
        {score !== undefined ? <> · score {score.toFixed(2)}</> : null}
        {card.private ? <> · <span class="badge">private</span></> : null} <VerificationBadge score={card.verification_score} hasLink={Boolean(card.link)} />
      </p>
      <Tags tagSet={card.tag_set} />
      {collisions.length > 0 ? (
        <details class="collisions">
          <summary>
            {collisions.length} duplicate{collisions.length === 1 ? '' : 's'} of this card
          </summary>
          <ul>
            {collisions.map((c) => (
              <li key={c.id}>
                <UserText><Link href={`/card/${c.id}`}>{firstWords(c.content, 12)}</Link></UserText>{' '}
                <span class="muted">
                  by <UserText>{userName(c.author)}</UserText>
                </span>
              </li>
            ))}
          </ul>
        </details>
      ) : null}
      {actions ? <div class="actions">{actions}</div> : null}
    </article>
  );
}

/**
 * Vote totals as "▲ 3 ▼ 1" on screen and "3 upvotes, 1 downvote" to a screen reader. The arrows are hidden from it (it
 * read them as "black up-pointing triangle"), and the words are text: an aria-label on a plain <span>, as before, is
 * ignored (ARIA prohibits naming a generic element), so the arrows were all it said.
 */
export function VoteTotals({ up, down }: { up: number; down: number }) {
  return (
    <>
      <span aria-hidden="true">
        ▲ {up} ▼ {down}
      </span>
      <span class="visually-hidden">
        {up} upvote{up === 1 ? '' : 's'}, {down} downvote{down === 1 ? '' : 's'}
      </span>
    </>
  );
}

/**
 * User text (a name, a card's opening words, a file name) inside a sentence of the app: isolated (<bdi>), so a
 * right-to-left name takes its own direction without carrying the sentence's punctuation and numbers along with it
 * ("Removed “…” from this collection.", "by <name> · ▲ 3").
 */
export function UserText({ children }: { children: ComponentChildren }) {
  return <bdi>{children}</bdi>;
}

/** The text's first n words (a Chinese or Japanese passage cut into the words its readers see), or "(empty card)". */
export function firstWords(text: string, n: number): string {
  return leadingWords(text, n) || '(empty card)';
}

/** Previous/next paging; pages are 1-based. */
export function Pager({ page, totalPages, onPage }: { page: number; totalPages: number; onPage(page: number): void }) {
  const nav = useRef<HTMLElement>(null);
  const moved = useRef(false);
  // A keyboard user who pressed Next on the next-to-last page would lose focus to <body> when the button turns
  // disabled: keep it in the pager (the other button, else the page label).
  useEffect(() => {
    if (!moved.current || !nav.current) return;
    moved.current = false;
    const active = document.activeElement as HTMLButtonElement | null;
    if (active && active !== document.body && nav.current.contains(active) && !active.disabled) return;
    if (active && active !== document.body && !nav.current.contains(active)) return;
    const target = nav.current.querySelector<HTMLElement>('button:not([disabled])') ?? nav.current.querySelector<HTMLElement>('[data-pager-label]');
    target?.focus({ preventScroll: true });
  }, [page, totalPages]);
  const go = (to: number) => {
    moved.current = true;
    onPage(to);
  };
  if (totalPages <= 1 && page <= 1) return null;
  if (page > Math.max(totalPages, 1))
    return (
      <nav class="pager" aria-label="Pages" ref={nav}>
        <span tabIndex={-1} data-pager-label>
          There are no results on page {page}.
        </span>
        <button type="button" onClick={() => go(Math.max(totalPages, 1))}>
          Go to the last page ({Math.max(totalPages, 1)})
        </button>
      </nav>
    );
  return (
    <nav class="pager" aria-label="Pages" ref={nav}>
      {/* The arrows are hidden from assistive technology (read as "leftwards arrow"): the buttons are "Previous page"
          and "Next page". */}
      <button type="button" disabled={page <= 1} onClick={() => go(page - 1)}>
        <span aria-hidden="true">← </span>Previous<span class="visually-hidden"> page</span>
      </button>
      <span tabIndex={-1} data-pager-label>
        Page {page} of {Math.max(totalPages, 1)}
      </span>
      <button type="button" disabled={page >= totalPages} onClick={() => go(page + 1)}>
        Next<span class="visually-hidden"> page</span>
        <span aria-hidden="true"> →</span>
      </button>
    </nav>
  );
}

/** `title`: the page's heading, kept when the page asks to sign in first (a deep link opened signed out). */
export function RequireSignIn({ children, signedIn, title }: { children: ComponentChildren; signedIn: boolean | undefined; title: string }) {
  if (signedIn === undefined) return <Loading />;
  if (!signedIn)
    return (
      <section>
        <PageTitle>{title}</PageTitle>
        <Notice>
          Please <Link href={`/auth/login?next=${encodeURIComponent(location.pathname + location.search)}`}>sign in</Link> to use this page.
        </Notice>
      </section>
    );
  return <>{children}</>;
}
