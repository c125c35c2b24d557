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
    void refresh();
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
