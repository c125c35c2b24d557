import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, forgetNotifications, onUnauthorized, type SlimUser } from './api';

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
}

export const SessionContext = createContext<Session>({ user: undefined, unread: 0, expired: false, refresh: async () => {}, refreshUnread: async () => {}, setUnread: () => {} });

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

/** Loads the caller (GET /api/auth) and polls the unread notification count while signed in. */
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

  const refresh = useCallback(async () => {
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

  useEffect(() => {
    if (!user) {
      setUnread(0);
      return;
    }
    void refreshUnread();
    const timer = setInterval(() => void refreshUnread(), 20_000);
    return () => clearInterval(timer);
  }, [user, refreshUnread]);

  return { user, unread, expired, refresh, refreshUnread, setUnread };
}
