import { characterCount, MAX_USERNAME_CHARS, MIN_USERNAME_CHARS, usernameProblem } from '@cards/card-rules';
import { useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { isolated } from '../bidi';
import { carryError, ErrorMessage, Notice, PageTitle, useAction } from '../components';
import { freeTextMessage } from '../free-text';
import { Link, navigate, useLocation } from '../router';
import { useSession } from '../session';

function safeNext(next: string | null): string {
  // Only in-app paths: never an absolute URL handed in through the query string.
  return next && /^\/(?![\/\\])/.test(next) ? next : '/';
}

export function LoginPage() {
  const { query } = useLocation();
  const session = useSession();
  const [email, setEmail] = useState(query.get('email') ?? '');
  const [password, setPassword] = useState('');
  const action = useAction();
  // Set once this form's sign-in succeeded: the form stays until the page moves on to `next`.
  const signingIn = useRef(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const ok = await action.run(async () => {
      await api.login(email.trim(), password);
      return true;
    });
    if (ok) {
      signingIn.current = true;
      await session.refresh();
      navigate(safeNext(query.get('next')), { replace: true });
    }
  };
  const signOut = async () => {
    await action.run(() => api.logout());
    await session.refresh();
  };
  // Signed in already (and not this page's own sign-in on its way to `next`): no form, but who it is and a way out.
  if (session.user && !signingIn.current)
    return (
      <section class="narrow">
        <PageTitle>You are signed in</PageTitle>
        <p>
          You are signed in as <strong>{session.user.email}</strong>. To use another account, sign out first.
        </p>
        <ErrorMessage error={action.error} />
        <p class="row">
          <button type="button" class="primary" onClick={() => void signOut()} aria-disabled={action.busy}>
            Sign out
          </button>
          <Link href={safeNext(query.get('next'))} class="button">
            Go on
          </Link>
        </p>
      </section>
    );
  return (
    <section class="narrow">
      <PageTitle>Sign in</PageTitle>
      <form onSubmit={submit}>
        <label for="login-email">E-mail</label>
        <input id="login-email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="login-password">Password</label>
        <input id="login-password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        <ErrorMessage error={action.error} />
        <button type="submit" class="primary" aria-disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p>
        <Link href="/auth/forgot">Forgot your password?</Link> · <Link href="/auth/invite">Get an invitation</Link>
      </p>
    </section>
  );
}

export function InvitePage() {
  const [email, setEmail] = useState('');
  const [sentTo, setSentTo] = useState<string | undefined>();
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const address = email.trim();
    const pasted = freeTextMessage(address, 'single-line');
    if (pasted) return action.setError(pasted);
    const ok = await action.run(async () => {
      await api.invite(address);
      return true;
    });
    if (ok) setSentTo(address);
  };
  return (
    <section class="narrow">
      <PageTitle>Get an invitation</PageTitle>
      <p>Accounts are made by invitation. Enter an e-mail address and we send it a link to set a password.</p>
      <form onSubmit={submit}>
        <label for="invite-email">E-mail</label>
        <input id="invite-email" type="email" autocomplete="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <ErrorMessage error={action.error} />
        <button type="submit" class="primary" aria-disabled={action.busy}>
          Send invitation
        </button>
      </form>
      {sentTo ? <Notice>An invitation is on its way to {sentTo}. Open the link in it to choose your password.</Notice> : null}
    </section>
  );
}

/** Lands from the invitation e-mail: /auth/register/<invitation_id>?email=<email>. */
export function RegisterPage({ invitationId }: { invitationId: string }) {
  const { query } = useLocation();
  const session = useSession();
  const email = query.get('email') ?? '';
  const [password, setPassword] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    if (characterCount(password) < 8) return action.setError('The password needs at least 8 characters.');
    const pasted = freeTextMessage(password, 'single-line');
    if (pasted) return action.setError(pasted);
    if (password !== confirmation) return action.setError('The two passwords differ.');
    const user = await action.run(() => api.register(invitationId, password, confirmation));
    if (!user) return;
    // Registration answers the new user; signing in right away saves a step.
    const signedIn = await action.run(async () => {
      await api.login(user.email, password);
      return true;
    });
    if (signedIn) {
      await session.refresh();
      navigate('/profile?welcome=1', { replace: true });
    } else navigate(`/auth/login?email=${encodeURIComponent(user.email)}`, { replace: true });
  };
  return (
    <section class="narrow">
      <PageTitle>Create your account</PageTitle>
      {email ? (
        <p>
          Choose a password for <strong>{email}</strong>.
        </p>
      ) : null}
      <form onSubmit={submit}>
        {email ? <input type="email" autocomplete="username" value={email} hidden readOnly /> : null}
        <label for="register-password">Password (at least 8 characters)</label>
        <input id="register-password" type="password" autocomplete="new-password" minLength={8} required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        <label for="register-confirmation">Repeat the password</label>
        <input id="register-confirmation" type="password" autocomplete="new-password" minLength={8} required value={confirmation} onInput={(e) => setConfirmation(e.currentTarget.value)} />
        <ErrorMessage error={action.error} />
        <button type="submit" class="primary" aria-disabled={action.busy}>
          Create account
        </button>
      </form>
    </section>
  );
}

export function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState(false);
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const pasted = freeTextMessage(email.trim(), 'single-line');
    if (pasted) return action.setError(pasted);
    const ok = await action.run(async () => {
      await api.requestPasswordReset(email.trim());
      return true;
    });
    if (ok) setSent(true);
  };
  return (
    <section class="narrow">
      <PageTitle>Reset your password</PageTitle>
      <form onSubmit={submit}>
        <label for="forgot-email">E-mail</label>
        <input id="forgot-email" type="email" autocomplete="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <ErrorMessage error={action.error} />
        <button type="submit" class="primary" aria-disabled={action.busy}>
          Send reset link
        </button>
      </form>
      {sent ? <Notice>If an account uses that address, a reset link is on its way. It works for one hour.</Notice> : null}
    </section>
  );
}

/** Lands from the reset e-mail: /auth/password/<password_reset_id>. */
export function ResetPasswordPage({ resetId }: { resetId: string }) {
  const [password, setPassword] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const [done, setDone] = useState(false);
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    if (characterCount(password) < 8) return action.setError('The password needs at least 8 characters.');
    const pasted = freeTextMessage(password, 'single-line');
    if (pasted) return action.setError(pasted);
    if (password !== confirmation) return action.setError('The two passwords differ.');
    const ok = await action.run(async () => {
      await api.resetPassword(resetId, password, confirmation);
      return true;
    });
    if (ok) setDone(true);
  };
  return (
    <section class="narrow">
      <PageTitle>Choose a new password</PageTitle>
      {done ? (
        <Notice>
          Your password is changed and every other session is signed out. <Link href="/auth/login">Sign in</Link> with the new password.
        </Notice>
      ) : (
        <form onSubmit={submit}>
          <label for="reset-password">New password (at least 8 characters)</label>
          <input id="reset-password" type="password" autocomplete="new-password" minLength={8} required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
          <label for="reset-confirmation">Repeat the new password</label>
          <input id="reset-confirmation" type="password" autocomplete="new-password" minLength={8} required value={confirmation} onInput={(e) => setConfirmation(e.currentTarget.value)} />
          <ErrorMessage error={action.error} />
          <button type="submit" class="primary" aria-disabled={action.busy}>
            Change password
          </button>
        </form>
      )}
    </section>
  );
}

export function ProfilePage() {
  const session = useSession();
  const { query } = useLocation();
  const user = session.user!;
  const [username, setUsername] = useState(user.username ?? '');
  const [website, setWebsite] = useState(user.website ?? '');
  const [visibleEmail, setVisibleEmail] = useState(user.visible_email);
  const [saved, setSaved] = useState(false);
  // What is wrong with the username, shown at the field (aria-invalid, aria-describedby) and given focus.
  const [nameError, setNameError] = useState<string | null>(null);
  const usernameField = useRef<HTMLInputElement>(null);
  const refuseName = (message: string) => {
    setNameError(message);
    usernameField.current?.focus();
  };
  const [welcome, setWelcome] = useState(Boolean(query.get('welcome')));
  // The welcome is said once: dismissing it or saving the profile takes it out of the address too (replaceState
  // without a navigation, so the page and its "Saved." stay).
  const dropWelcome = () => {
    setWelcome(false);
    if (new URLSearchParams(location.search).has('welcome')) history.replaceState(history.state, '', location.pathname);
  };
  const action = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    // In NFC, as the server stores it: "Zoë" typed as "e" and a combining mark is the one name "Zoë".
    const name = username.trim().normalize('NFC');
    const nameProblem = name ? usernameProblem(name) : null;
    setNameError(null);
    action.setError(undefined);
    if (nameProblem) return refuseName(`The username ${nameProblem}.`);
    if (!visibleEmail && !name) return refuseName('Hiding your e-mail needs a username, so others can tell who you are.');
    const pasted = freeTextMessage(website.trim(), 'single-line');
    if (pasted) return action.setError(pasted);
    const updated = await action.run(async () => {
      try {
        return await api.updateProfile({ username: name || null, website: website.trim() || null, visible_email: visibleEmail });
      } catch (err) {
        // The server's refusals of the name belong to the field too; "username: already taken" said in words.
        if (err instanceof ApiError && err.status === 409) refuseName(`The username “${isolated(name)}” is already taken by someone else (names that look alike count as one: capitals, ß and ss, letters of another script that look the same, “rn” and “m”, “0” and “O”): choose another.`);
        else if (err instanceof ApiError && err.message.startsWith('username: ')) refuseName(`The username ${err.message.slice('username: '.length)}.`);
        else throw err;
        return undefined;
      }
    });
    if (updated) {
      setSaved(true);
      dropWelcome();
      await session.refresh();
    }
  };
  const logout = async () => {
    // A failed sign-out still leaves this page (a 503: identity could not record it, but the gateway cleared the cookie,
    // and its message says the session lives on until it expires): the error goes with it, to be said on the next page.
    let failure: string | ApiError | undefined;
    await action.run(async () => {
      try {
        await api.logout();
      } catch (err) {
        failure = err instanceof ApiError ? err : err instanceof Error ? err.message : String(err);
        throw err;
      }
    });
    await session.refresh();
    carryError(failure);
    navigate('/', { replace: true });
  };
  return (
    <section class="narrow">
      <PageTitle>Your profile</PageTitle>
      {welcome ? (
        <p class="notice row" role="status">
          <span>Welcome! Your account is ready and you are signed in.</span>
          <button type="button" class="small" onClick={dropWelcome}>
            Dismiss
          </button>
        </p>
      ) : null}
      <p>
        Signed in as <strong>{user.email}</strong>. <Link href={`/user/${user.id}`}>Your public page</Link>
      </p>
      <form onSubmit={submit}>
        <label for="profile-username">Username</label>
        <input
          ref={usernameField}
          id="profile-username"
          dir="auto"
          autocomplete="nickname"
          value={username}
          onInput={(e) => {
            setUsername(e.currentTarget.value);
            setNameError(null);
          }}
          aria-invalid={nameError !== null}
          aria-describedby="profile-username-hint profile-username-problem"
        />
        <small id="profile-username-hint">
          {MIN_USERNAME_CHARS}–{MAX_USERNAME_CHARS} letters or digits in your own script (one script per name; Han may go with kana or Hangul), "_" or "-".
        </small>
        <p id="profile-username-problem" class="field-problem" role="alert">
          {nameError ?? ''}
        </p>
        <label for="profile-website">Website</label>
        <input id="profile-website" type="url" autocomplete="url" placeholder="https://" value={website} onInput={(e) => setWebsite(e.currentTarget.value)} />
        <label class="check">
          <input type="checkbox" checked={visibleEmail} onChange={(e) => setVisibleEmail(e.currentTarget.checked)} /> Show my e-mail address to others
        </label>
        <ErrorMessage error={action.error} />
        {saved ? <Notice>Saved.</Notice> : null}
        <button type="submit" class="primary" aria-disabled={action.busy}>
          Save profile
        </button>
      </form>
      <p>
        <button type="button" onClick={logout}>
          Sign out
        </button>
      </p>
    </section>
  );
}
