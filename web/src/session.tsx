import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, forgetNotifications, onUnauthorized, reportUnauthorized, type SlimUser } from './api';
import { onOtherTabs } from './tabs';

export interface Session {
  /** undefined while loading, null when signed out. */
  user: SlimUser | null | undefined;
  unread: number;
  /** True when the server answered 401 while signed in: the session ended (expired cookie) with the page open. */
  expired: boolean;
  refresh(): Promise<void>;
  refreshUnread(): Promise<void>;
  /** The unread count as a page that has just read the whole list (the notifications page) found it. */
  setUnread(count: number): void;
  /**
   * Counts the changes of the signed-in user found with a page open (another tab signed in, out, or as someone else):
   * the page is rendered anew for whoever it is now, since what it shows and holds was the one before's.
   */
  generation: number;
  /** Set when another tab signed in as someone else while this one showed `from`'s pages: the name of each. */
  switched: { from: string; to: string } | null;
  /** Drops `switched` (the person moved on to another page). */
  dismissSwitched(): void;
}

export const SessionContext = createContext<Session>({ user: undefined, unread: 0, expired: false, refresh: async () => {}, refreshUnread: async () => {}, setUnread: () => {}, generation: 0, switched: null, dismissSwitched: () => {} });

export function useSession(): Session {
  return useContext(SessionContext);
}

/** The gateway's hint on this page load (services/gateway/src/http/web-app.ts SESSION_HINT_COOKIE); not HttpOnly. */
const SESSION_HINT = 'ai-editor-hint';

/**
 * Whether this page load came without a session cookie, as the gateway said when it served the page: then there is no
 * session to ask GET /api/auth about (it answers 401, which the browser logs as an error on every signed-out load). The
 * hint is read once and dropped, so a later load without it (the dev server, a cached page) asks as before.
 */
export function loadedSignedOut(): boolean {
  let hint: string | undefined;
  try {
    hint = document.cookie
      .split(';')
      .map((pair) => pair.trim())
      .find((pair) => pair.startsWith(`${SESSION_HINT}=`))
      ?.slice(SESSION_HINT.length + 1);
    if (hint !== undefined) document.cookie = `${SESSION_HINT}=; Max-Age=0; Path=/; SameSite=Lax${location.protocol === 'https:' ? '; Secure' : ''}`;
  } catch {
    return false;
  }
  return hint === 'signed-out';
}

/** How often a shown tab asks for the unread count while signed in; a hidden tab does not ask. */
export const UNREAD_POLL_MS = 20_000;

const nameOf = (u: SlimUser) => u.username ?? u.email;

/**
 * Loads the caller (GET /api/auth) and polls the unread notification count while signed in and shown. Asks who is
 * signed in again when another tab says the session changed (./tabs) and when the tab is shown after a while hidden,
 * so a tab left open never goes on acting for someone who signed out, or as the wrong person after another sign-in.
 */
export function useSessionState(): Session {
  const [user, setUser] = useState<SlimUser | null | undefined>(undefined);
  const [unread, setUnread] = useState(0);
  const [expired, setExpired] = useState(false);

  // Any 401 means the server no longer knows this browser: drop the signed-in state (the header offers to sign in),
  // and say so when it was signed in. A later sign-in clears the notice.
  const signedIn = useRef(false);
  signedIn.current = Boolean(user);
  useEffect(
    () =>
      onUnauthorized(() => {
        if (!signedIn.current) return;
        signedIn.current = false;
        setExpired(true);
        setUser(null);
      }),
    [],
  );
  useEffect(() => {
    if (user) setExpired(false);
  }, [user]);

  const [generation, setGeneration] = useState(0);
  const [switched, setSwitched] = useState<{ from: string; to: string } | null>(null);
  const current = useRef(user);
  current.current = user;
  // The last person this tab showed as signed in: a sign-out and someone else's sign-in in another tab is a switch too.
  const lastSignedIn = useRef<SlimUser | null>(null);
  if (user) lastSignedIn.current = user;

  /**
   * Who is signed in now, asked again with a page open: when it is someone else (or no one) than the page shows, what
   * the page holds unsaved is kept for the one before (the card form's draft, as on a 401), and it is rendered anew.
   */
  const asked = useRef(0);
  const recheck = useCallback(async () => {
    // Two pieces of news close together (a sign-out, then a sign-in): only the later question's answer counts.
    const question = ++asked.current;
    let now: SlimUser | null;
    try {
      now = await api.me();
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) return;
      now = null;
    }
    if (question !== asked.current) return;
    const before = current.current;
    if (before === undefined) return setUser(now);
    if ((before?.id ?? null) === (now?.id ?? null)) {
      // The same person: a name changed in another tab shows here too.
      if (before && now && JSON.stringify(before) !== JSON.stringify(now)) setUser(now);
      return;
    }
    // Keeps the unsaved forms as drafts of `before` and says the session ended (cleared again once a user is set).
    if (before) reportUnauthorized();
    const from = before ?? lastSignedIn.current;
    setSwitched(from && now && from.id !== now.id ? { from: nameOf(from), to: nameOf(now) } : null);
    current.current = now;
    setUser(now);
    setGeneration((g) => g + 1);
  }, []);
  useEffect(() => onOtherTabs((news) => news === 'session' && void recheck()), [recheck]);

  const dismissSwitched = useCallback(() => setSwitched(null), []);

  const refresh = useCallback(async () => {
    // This tab's own sign-in or sign-out: an answer to an older question (news from another tab) no longer counts.
    asked.current++;
    setSwitched(null);
    try {
      setUser(await api.me());
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setUser(null);
      else setUser((u) => (u === undefined ? null : u));
    }
  }, []);

  const refreshUnread = useCallback(async () => {
    try {
      const list = await api.notifications();
      setUnread(list.filter((n) => !n.user_read).length);
    } catch {
      // The badge is a hint; the notifications page shows the error.
    }
  }, []);

  useEffect(() => {
    // The page was served to a browser without a session cookie: signed out, without a 401 to log.
    if (loadedSignedOut()) setUser(null);
    else void refresh();
  }, [refresh]);

  // Another user (or none): the kept notification list and its tag are not theirs. Runs before the poll below.
  const userId = user?.id;
  useEffect(() => forgetNotifications(), [userId]);

  // Another tab marked notifications read: the badge follows.
  useEffect(() => onOtherTabs((news) => news === 'notifications' && signedIn.current && void refreshUnread()), [refreshUnread]);

  // The unread count is polled only while the tab is shown: a hidden tab (hours in the background) asks nothing, and
  // once shown again after a poll's interval it asks at once, with who is signed in (a session may have ended meanwhile).
  const signedInId = user?.id;
  useEffect(() => {
    if (!signedInId) {
      setUnread(0);
      return;
    }
    let timer: ReturnType<typeof setInterval> | undefined;
    let lastAsked = Date.now();
    const poll = () => {
      lastAsked = Date.now();
      void refreshUnread();
    };
    const start = () => {
      if (timer === undefined) timer = setInterval(poll, UNREAD_POLL_MS);
    };
    const stop = () => {
      clearInterval(timer);
      timer = undefined;
    };
    const onVisibility = () => {
      if (document.visibilityState === 'hidden') return stop();
      if (Date.now() - lastAsked >= UNREAD_POLL_MS) {
        void recheck();
        poll();
      }
      start();
    };
    poll();
    if (document.visibilityState !== 'hidden') start();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      stop();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [signedInId, refreshUnread, recheck]);

  // A page shown again from the browser's back-forward cache is the page as it was left: ask who is signed in now.
  useEffect(() => {
    const onPageShow = (e: PageTransitionEvent) => {
      if (e.persisted) void recheck();
    };
    window.addEventListener('pageshow', onPageShow);
    return () => window.removeEventListener('pageshow', onPageShow);
  }, [recheck]);

  return { user, unread, expired, refresh, refreshUnread, setUnread, generation, switched, dismissSwitched };
}
