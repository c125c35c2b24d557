import { render } from 'preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import './styles.css';
import { CarriedError, PageTitle, RequireSignIn } from './components';
import { loadCardTextEditor } from './lazy-card-text-editor';
import { Link, match, useLocation } from './router';
import { SessionContext, useSession, useSessionState } from './session';
import { ForgotPasswordPage, InvitePage, LoginPage, ProfilePage, RegisterPage, ResetPasswordPage } from './pages/auth-pages';
import { CardPage, EditCardPage, NewCardPage } from './pages/card-pages';
import { CollectionPage, CollectionsPage } from './pages/collection-pages';
import { NotificationsPage, TopUsersPage, UserPage } from './pages/people-pages';
import { SearchPage } from './pages/search-page';
import { UploadPage } from './pages/upload-page';

function Header() {
  const { user, unread } = useSession();
  const { path } = useLocation();
  const current = (href: string) => (path === href ? 'page' : undefined);
  // At phone width the links fold behind a Menu button; any navigation folds them again.
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [path]);
  const toggle = useRef<HTMLButtonElement>(null);
  // Escape folds the open menu again from the button or any of its links, and the focus goes back to the button (as
  // the WAI-ARIA disclosure navigation menu does); before, the menu stayed open over the page.
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key !== 'Escape' || !open) return;
    e.preventDefault();
    setOpen(false);
    toggle.current?.focus();
  };
  return (
    <header class="top" onKeyDown={onKeyDown}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Link href="/" class="brand">
        Card Library
      </Link>
      <button type="button" class="menu-toggle" ref={toggle} aria-expanded={open} aria-controls="main-nav" onClick={() => setOpen((o) => !o)}>
        Menu{user && unread > 0 ? ` (${unread} unread)` : ''}
      </button>
      <nav aria-label="Main" id="main-nav" class={open ? 'open' : undefined}>
        <ul>
          <li>
            <Link href="/" aria-current={current('/')}>
              Search
            </Link>
          </li>
          <li>
            <Link href="/top" aria-current={current('/top')}>
              Top users
            </Link>
          </li>
          {user ? (
            <>
              <li>
                <Link href="/card/new" aria-current={current('/card/new')}>
                  New card
                </Link>
              </li>
              <li>
                <Link href="/upload" aria-current={current('/upload')}>
                  Upload
                </Link>
              </li>
              <li>
                <Link href="/collections" aria-current={current('/collections')}>
                  Collections
                </Link>
              </li>
              <li>
                <Link href="/notifications" aria-current={current('/notifications')} aria-label={`Notifications, ${unread} unread`}>
                  Notifications{' '}
                  <span class={`count-badge${unread > 0 ? ' has-unread' : ''}`} data-testid="unread-badge" aria-hidden="true">
                    {unread}
                  </span>
                </Link>
              </li>
              <li>
                <Link href={`/user/${user.id}`} aria-current={current(`/user/${user.id}`)}>
                  My cards
                </Link>
              </li>
              <li>
                <Link href="/profile" aria-current={current('/profile')}>
                  {user.username ? <bdi>{user.username}</bdi> : 'Profile'}
                </Link>
              </li>
            </>
          ) : user === null ? (
            <>
              <li>
                <Link href="/auth/login" aria-current={current('/auth/login')}>
                  Sign in
                </Link>
              </li>
              <li>
                <Link href="/auth/invite" aria-current={current('/auth/invite')}>
                  Get an invitation
                </Link>
              </li>
            </>
          ) : null}
        </ul>
      </nav>
    </header>
  );
}

function Private({ children, title }: { children: ComponentChildren; title: string }) {
  const { user } = useSession();
  return (
    <RequireSignIn signedIn={user === undefined ? undefined : user !== null} title={title}>
      {children}
    </RequireSignIn>
  );
}

function Routes() {
  const { path } = useLocation();
  let m: Record<string, string> | null;
  if (path === '/' || path === '/search') return <SearchPage />;
  if (path === '/auth/login') return <LoginPage />;
  if (path === '/auth/invite') return <InvitePage />;
  if (path === '/auth/forgot') return <ForgotPasswordPage />;
  if ((m = match('/auth/register/:id', path))) return <RegisterPage invitationId={m.id!} />;
  if ((m = match('/auth/password/:id', path))) return <ResetPasswordPage resetId={m.id!} />;
  if (path === '/profile') return <Private title="Your profile">{<ProfilePage />}</Private>;
  if (path === '/card/new' || match('/card/:id/edit', path)) void loadCardTextEditor().catch(() => undefined);
  if (path === '/card/new') return <Private title="New card">{<NewCardPage />}</Private>;
  if ((m = match('/card/:id/edit', path))) return <Private title="Edit card">{<EditCardPage cardId={m.id!} />}</Private>;
  if ((m = match('/card/:id', path))) return <CardPage cardId={m.id!} />;
  if (path === '/upload') return <Private title="Upload a document">{<UploadPage />}</Private>;
  if (path === '/collections') return <Private title="Your collections">{<CollectionsPage />}</Private>;
  if ((m = match('/collection/:id', path))) return <CollectionPage collectionId={m.id!} />;
  if (path === '/notifications') return <Private title="Notifications">{<NotificationsPage />}</Private>;
  if ((m = match('/user/:id', path))) return <UserPage userId={m.id!} />;
  if (path === '/top') return <TopUsersPage />;
  return (
    <section>
      <PageTitle>Page not found</PageTitle>
      <p>
        There is nothing at this address. <Link href="/">Go to the search</Link>.
      </p>
    </section>
  );
}

/** After a 401 while signed in (the session ended with the page open): say so and offer to sign in again, back to here. */
function SessionEnded() {
  const { user, expired } = useSession();
  const { path, query } = useLocation();
  if (!expired || user || path === '/auth/login') return null;
  const here = path + (query.toString() ? `?${query.toString()}` : '');
  return (
    <p class="error" role="alert">
      Your session has ended. <Link href={`/auth/login?next=${encodeURIComponent(here)}`}>Sign in again</Link> to go on.
    </p>
  );
}

/**
 * After another tab signed in as someone else: this tab now acts as that person (the cookie is the browser's), so say
 * it, and that the unsaved card of the one before waits for their next sign-in here. Until the person moves on.
 */
function SessionSwitched() {
  const { switched } = useSession();
  if (!switched) return null;
  return (
    <p class="error" role="alert">
      This tab is now signed in as <bdi>{switched.to}</bdi> (a sign-in in another tab), no longer as <bdi>{switched.from}</bdi>. A card{' '}
      <bdi>{switched.from}</bdi> was writing here is kept for their next sign-in.
    </p>
  );
}

function App() {
  const session = useSessionState();
  const { path, query } = useLocation();
  const { dismissSwitched } = session;
  useEffect(() => dismissSwitched(), [path, dismissSwitched]);
  return (
    <SessionContext.Provider value={session}>
      <Header />
      {/* Rendered anew for another page, and for another signed-in user found with the page open (session.generation). */}
      <main id="main" key={`${session.generation}:${path}${path.startsWith('/collection/') || path === '/' ? '' : query.toString()}`}>
        <SessionEnded />
        <SessionSwitched />
        <CarriedError />
        <Routes />
      </main>
      <footer class="muted">
        Card Library · <a href="/api/card/count">HTTP interface under /api</a>
      </footer>
    </SessionContext.Provider>
  );
}

// index.html's "Loading the Card Library…" (shown while this script is on its way on a slow network) goes: Preact keeps
// children of the container it did not render.
const root = document.getElementById('app')!;
root.replaceChildren();
render(<App />, root);
