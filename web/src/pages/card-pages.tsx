import { MAX_WORDS, MIN_WORDS_EXCLUSIVE, wordCount } from '@cards/card-rules';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, EDIT_ATTEMPTS, newIdempotencyKey, onUnauthorized, chosenVersion, type Card } from '../api';
import { cardDraftProblems, htmlFromInput, tagsFromInput, textOfHtml } from '../card-rules';
import { ErrorMessage, firstWords, formatDate, Loading, Notice, NotFoundHint, PageTitle, Tags, useAction, useAsync, userName, UserText, VerificationBadge } from '../components';
import { guardLeaving, Link, navigate, useLocation, useStillShown } from '../router';
import { dropDraft, readDraft, saveDraft } from '../drafts';
import { verificationReading } from '../verification';
import { LazyCardTextEditor } from '../lazy-card-text-editor';
import { shortcut } from '../shortcut';
import { useSession } from '../session';

/** A vote the session's end kept from being counted (see ../drafts): the user's vote on the card as pressed (null: none). */
interface KeptVote {
  vote: boolean | null;
}

const voteWords = (vote: boolean | null) => (vote === null ? 'the removal of your vote' : vote ? 'your upvote' : 'your downvote');
const keptVoteWords = (vote: boolean | null) => `${voteWords(vote)[0]!.toUpperCase()}${voteWords(vote).slice(1)}, made when your session had ended,`;
/** Why a kept vote is dropped uncounted: the card is gone for this user (404), or takes no votes (403, private). */
const notCounted = (vote: boolean | null, why: string) => `${keptVoteWords(vote)} was not counted: ${why}`;
const CANNOT_VOTE = 'this card can no longer be voted on (it was deleted or made private).';

/**
 * A kept vote on a card that can no longer be opened (deleted, or made private by its author): dropped, with a notice
 * saying it was not counted, instead of waiting in the tab for a card that will not come back.
 */
function DropKeptVote({ userId, cardId }: { userId: string | undefined; cardId: string }) {
  const [dropped, setDropped] = useState<string | undefined>();
  useEffect(() => {
    if (!userId) return;
    const draftKey = `vote:${cardId}`;
    const kept = readDraft<KeptVote>(userId, draftKey);
    if (!kept) return;
    dropDraft(userId, draftKey);
    setDropped(notCounted(kept.vote, CANNOT_VOTE));
  }, [userId, cardId]);
  return dropped ? <Notice>{dropped}</Notice> : null;
}

/** Sets the caller's vote on the card to `vote` (null: none), when it is not that already. */
async function setVote(card: Card, vote: boolean | null): Promise<void> {
  if (card.vote_by_current_user === vote) return;
  if (vote === null) await api.unvote(card.id);
  else await api.vote(card.id, vote);
}

/** A 404 naming the card itself: it was deleted (or hidden from this user) since the page read it. */
const cardGone = (err: unknown) => err instanceof ApiError && err.status === 404 && err.message === 'Card not found';

function VoteButtons({ card, onChanged, onGone, userId }: { card: Card; onChanged(): void; onGone(): void; userId: string | undefined }) {
  const action = useAction();
  const [counted, setCounted] = useState<string | undefined>();
  const mine = card.vote_by_current_user;
  const draftKey = `vote:${card.id}`;
  // A vote pressed when the session had ended is kept for this user in this tab, and counted once they are signed in
  // again and the card is open (the login page's ?next= comes back here), unless the card holds that vote already.
  useEffect(() => {
    if (!userId) return;
    const kept = readDraft<KeptVote>(userId, draftKey);
    if (!kept) return;
    dropDraft(userId, draftKey);
    // The author's own card made private since: private cards take no votes.
    if (card.private) return setCounted(notCounted(kept.vote, 'private cards take no votes.'));
    void action.run(async () => {
      try {
        await setVote(card, kept.vote);
      } catch (err) {
        // Deleted or made private between the page's read and the vote.
        if (err instanceof ApiError && (err.status === 404 || err.status === 403)) throw new Error(notCounted(kept.vote, CANNOT_VOTE));
        throw err;
      }
      setCounted(`${keptVoteWords(kept.vote)} is counted now.`);
      onChanged();
    });
  }, [userId, draftKey]);
  const cast = (up: boolean) =>
    action.run(async () => {
      setCounted(undefined);
      const vote = mine === up ? null : up;
      try {
        await setVote(card, vote);
      } catch (err) {
        if (cardGone(err)) return onGone();
        if (!(err instanceof ApiError && err.status === 401 && userId)) throw err;
        saveDraft(userId, draftKey, { vote } satisfies KeptVote);
        throw new Error(`Your session has ended, so ${voteWords(vote)} is not counted yet: sign in again and it will be.`);
      }
      onChanged();
    });
  const signedIn = Boolean(userId);
  return (
    <div class="votes" role="group" aria-label="Votes">
      <button type="button" class="vote" aria-pressed={mine === true} disabled={!signedIn || card.private} aria-disabled={action.busy} onClick={() => void cast(true)} title={mine === true ? 'Remove your upvote' : 'Upvote'}>
        <span aria-hidden="true">▲ </span>Upvote <span class="count">{card.total_upvotes}</span>
      </button>
      <button type="button" class="vote" aria-pressed={mine === false} disabled={!signedIn || card.private} aria-disabled={action.busy} onClick={() => void cast(false)} title={mine === false ? 'Remove your downvote' : 'Downvote'}>
        <span aria-hidden="true">▼ </span>Downvote <span class="count">{card.total_downvotes}</span>
      </button>
      {!signedIn ? <span class="muted">Sign in to vote.</span> : card.private ? <span class="muted">Private cards take no votes.</span> : null}
      <ErrorMessage error={action.error} />
      {counted ? <Notice>{counted}</Notice> : null}
    </div>
  );
}

function AddToCollection({ card, userId, onGone }: { card: Card; userId: string; onGone(): void }) {
  const collections = useAsync(() => api.userCollections(userId), [userId]);
  const holding = useAsync(() => api.collectionsOfCards([card.id]), [card.id]);
  const [chosen, setChosen] = useState('');
  const [added, setAdded] = useState<string | undefined>();
  const action = useAction();
  const held = new Set(holding.data?.find((h) => h.card_uuid === card.id)?.collection_ids ?? []);
  const own = collections.data ?? [];
  const add = async (e: Event) => {
    e.preventDefault();
    if (!chosen) return action.setError('Choose a collection first.');
    const ok = await action.run(async () => {
      try {
        await api.addToCollection(chosen, card.id);
      } catch (err) {
        if (cardGone(err)) return onGone();
        // The collection was deleted since the list was read (in another tab?): the list is read again without it.
        if (err instanceof ApiError && err.status === 404) {
          collections.reload();
          setChosen('');
          throw new Error('That collection no longer exists (it was deleted after this page was opened), so the card was not added.');
        }
        throw err;
      }
      return true;
    });
    if (ok) {
      setAdded(own.find((c) => c.id === chosen)?.name);
      holding.reload();
    }
  };
  return (
    <section aria-labelledby="collections-heading" class="panel">
      <h2 id="collections-heading">Collections</h2>
      {held.size > 0 ? (
        <p>
          In your collections:{' '}
          {own
            .filter((c) => held.has(c.id))
            .map((c, i) => (
              <span key={c.id}>
                {i > 0 ? ', ' : ''}
                <UserText>
                  <Link href={`/collection/${c.id}`}>{c.name}</Link>
                </UserText>
              </span>
            ))}
        </p>
      ) : null}
      {own.length === 0 && !collections.loading ? (
        <p class="muted">
          You have no collections yet. <Link href="/collections">Create one</Link>.
        </p>
      ) : (
        <form onSubmit={add} class="row">
          <label for="add-to-collection" class="visually-hidden">
            Collection
          </label>
          <select id="add-to-collection" value={chosen} onChange={(e) => setChosen(e.currentTarget.value)}>
            <option value="">Choose a collection…</option>
            {own.map((c) => (
              <option key={c.id} value={c.id} disabled={held.has(c.id)} dir="auto">
                {c.name}
              </option>
            ))}
          </select>
          <button type="submit" aria-disabled={action.busy}>
            Add to collection
          </button>
        </form>
      )}
      <ErrorMessage error={action.error || collections.error} />
      {added ? (
        <Notice>
          Added to “<UserText>{added}</UserText>”.
        </Notice>
      ) : null}
    </section>
  );
}

export function CardPage({ cardId }: { cardId: string }) {
  const session = useSession();
  const card = useAsync(() => api.card(cardId), [cardId]);
  const action = useAction();
  const stillShown = useStillShown();
  // An action here found the card gone (deleted in another tab or by its author since the page read it): the page is
  // read again, and says what happened instead of leaving the card shown with a bare "Card not found".
  const [gone, setGone] = useState(false);
  const onGone = () => {
    setGone(true);
    card.reload();
  };
  if (card.loading && !card.data) return <Loading />;
  if (gone && card.error?.status === 404)
    return (
      <section>
        <PageTitle>Card deleted</PageTitle>
        <p role="alert">
          This card was deleted after this page was opened (in another tab or window?). <Link href="/">Go to the search</Link>.
        </p>
      </section>
    );
  if (card.error || !card.data)
    return (
      <section>
        <PageTitle>Card not found</PageTitle>
        <NotFoundHint error={card.error} />
        {card.error?.status === 404 || card.error?.status === 403 ? <DropKeptVote userId={session.user?.id} cardId={cardId} /> : null}
        {card.error?.status === 401 ? (
          <p>
            <Link href={`/auth/login?next=/card/${cardId}`}>Sign in</Link> to read this card.
          </p>
        ) : null}
      </section>
    );
  const c = card.data;
  const isOwner = session.user?.id === c.author?.id;
  const remove = async () => {
    if (!confirm('Delete this card? This cannot be undone.')) return;
    const ok = await action.run(async () => {
      try {
        await api.deleteCard(c.id);
      } catch (err) {
        // Deleted already (in another tab): what was asked is done.
        if (!cardGone(err)) throw err;
      }
      return true;
    });
    // Ended after the person moved on (to another card's page, say): they stay where they are.
    if (ok && stillShown()) navigate(session.user ? `/user/${session.user.id}` : '/', { replace: true });
  };
  return (
    <article class="card-page">
      <PageTitle dir="auto">{firstWords(c.content, 10)}</PageTitle>
      <p class="meta">
        {c.author ? (
          <>
            by{' '}
            <UserText>
              <Link href={`/user/${c.author.id}`}>{userName(c.author)}</Link>
            </UserText>{' '}
            ·{' '}
          </>
        ) : null}
        updated {formatDate(c.updated_at)}
        {c.private ? <> · <span class="badge">private</span></> : null}
        {c.file_name ? (
          <>
            {' '}
            · from file{' '}
            <em>
              <UserText>{c.file_name}</UserText>
            </em>
          </>
        ) : null}
      </p>
      <Tags tagSet={c.tag_set} />
      {/* card_html is sanitized by the server to a small allow-list of tags before it is stored. */}
      <div class="card-body" dangerouslySetInnerHTML={{ __html: c.card_html }} />
      <dl class="facts">
        <dt>Source</dt>
        <dd>
          {c.link ? (
            <a href={c.link} rel="noopener noreferrer nofollow" target="_blank">
              {c.link}
            </a>
          ) : (
            <span class="muted">no link</span>
          )}
        </dd>
        <dt>Verification</dt>
        <dd>
          {c.link || c.verification_score !== null ? (
            <>
              <VerificationBadge score={c.verification_score} hasLink={Boolean(c.link)} explainedBeside />{' '}
              <span class="muted">{verificationReading(c.verification_score, Boolean(c.link))?.explanation}</span>
            </>
          ) : (
            <span class="muted">Not verified: the card has no source link.</span>
          )}
        </dd>
      </dl>
      <VoteButtons card={c} onChanged={card.reload} onGone={onGone} userId={session.user?.id} />
      {isOwner ? (
        <p class="row">
          <Link class="button" href={`/card/${c.id}/edit`}>
            Edit card
          </Link>
          <button type="button" class="danger" onClick={remove} aria-disabled={action.busy}>
            Delete card
          </button>
        </p>
      ) : null}
      <ErrorMessage error={action.error} />
      {session.user ? <AddToCollection card={c} userId={session.user.id} onGone={onGone} /> : null}
    </article>
  );
}

/** What the card form keeps of an unsent draft (see ../drafts): the fields, and for an edit the editor's first reading. */
interface CardDraft {
  text: string;
  link: string;
  tags: string;
  private: boolean;
  base: string | null;
  /** An edit: the card as it was when the form opened (the edits made since elsewhere are found against it). */
  opened?: OpenedCard;
}

/** What an edit form remembers of the card as it opened it. */
type OpenedCard = Pick<Card, 'card_html' | 'link' | 'private' | 'updated_at'>;

/**
 * What stands in the way of saving an edit, found by reading the card again just before: it was deleted, or a field this
 * save would change was changed since the form opened (in another tab or window, or another device). The update is sent
 * with that read's ETag as If-Match, so a save landing between the read and the update is not replaced either: the
 * server answers 412, and the form reads again and compares again. `etag`: the version shown, which "Save mine anyway"
 * replaces (and only it: a later one is shown in its turn).
 */
type EditObstacle = { kind: 'deleted' } | { kind: 'changed'; current: Card; etag: string | null; fields: ClashingField[] };

/** A field of the card changed both in this form and, since it opened, elsewhere. */
type ClashingField = 'card_html' | 'link' | 'private';

/** What the clash warning says was saved elsewhere, one phrase per field changed both here and there. */
function cardChangedElsewhere(current: Card, fields: readonly ClashingField[]) {
  return fields.map((field, i) => (
    <span key={field}>
      {i > 0 ? (i === fields.length - 1 ? ' and ' : ', ') : ''}
      {field === 'card_html' ? (
        'its text was changed'
      ) : field === 'link' ? (
        // A link removed there is said so, not shown as an empty link ("its link is now “”").
        current.link === '' ? (
          'it now has no link'
        ) : (
          <>
            its link is now “<UserText>{current.link}</UserText>”
          </>
        )
      ) : (
        `it is now ${current.private ? 'private' : 'public'}`
      )}
    </span>
  ));
}

/** Create (no card) or edit (card given) with the server's rules checked as you type. */
function CardForm({ card }: { card?: Card }) {
  const { query } = useLocation();
  const userId = useSession().user?.id ?? '';
  const formKey = card ? `card:${card.id}` : 'card:new';
  // A draft this user's ended session left unsent in this tab comes back once (it is kept again if the session ends again).
  const [draft] = useState(() => {
    const kept = userId ? readDraft<CardDraft>(userId, formKey) : undefined;
    if (kept) dropDraft(userId, formKey);
    return kept;
  });
  const [opened] = useState<OpenedCard | undefined>(() =>
    card ? (draft?.opened ?? { card_html: card.card_html, link: card.link, private: card.private, updated_at: card.updated_at }) : undefined,
  );
  const [obstacle, setObstacle] = useState<EditObstacle | undefined>();
  const [text, setText] = useState(draft?.text ?? card?.card_html ?? '');
  // Formatted text (the rich-text editor) or the HTML itself; the editor reads the HTML view's text when switched back.
  const [htmlView, setHtmlView] = useState(false);
  const [editorUnavailable, setEditorUnavailable] = useState(false);
  // The text as the editor first read it: an edit sends card_html only when the text differs from it (the editor writes
  // the stored HTML anew, and a letter typed and deleted again is no change), so an unchanged card is not re-verified.
  const [loadedText, setLoadedText] = useState<string | null>(card ? (draft?.base ?? null) : null);
  const loadText = (value: string) => {
    setText(value);
    setLoadedText((before) => before ?? value);
  };
  const [link, setLink] = useState(draft?.link ?? card?.link ?? '');
  const [initialTags] = useState(card?.tag_set ?? query.get('tags') ?? '');
  const [tags, setTags] = useState(draft?.tags ?? initialTags);
  const [isPrivate, setPrivate] = useState(draft?.private ?? card?.private ?? false);
  const [touched, setTouched] = useState(false);
  const [duplicateOf, setDuplicateOf] = useState<Card | undefined>();
  // One key per draft: sending the same draft again (a second click, a retry after a lost answer) makes no second card.
  const draftKey = useMemo(newIdempotencyKey, [text, link, tags, isPrivate]);
  const action = useAction();
  // The HTML view's text is sent as it is (the server sanitizes it); the formatted view sends the editor's HTML.
  const html = htmlFromInput(text);
  const problems = cardDraftProblems({ text, link, tags });
  // A link stored under an earlier rule is sent back only when changed, and the server keeps it unchanged.
  if (card && link.trim() === card.link) delete problems.link;
  const words = wordCount(textOfHtml(html));
  // Unsaved changes: what a sign-out, a reload or leaving the page would lose.
  const textChanged = card ? loadedText !== null && html !== loadedText && html !== card.card_html : words > 0;
  const dirty = textChanged || link.trim() !== (card?.link ?? '') || tags.trim() !== initialTags.trim() || isPrivate !== (card?.private ?? false);
  const sent = useRef(false);
  const stillShown = useStillShown();
  const dirtyNow = useRef(dirty);
  dirtyNow.current = dirty && !sent.current;
  // The session ends (a 401: a sign-out in another tab, an expired or dropped cookie) and the form goes with the
  // signed-in state: its unsaved changes are kept for this user's next sign-in in this tab.
  const fields = useRef<CardDraft>({ text, link, tags, private: isPrivate, base: loadedText, opened });
  fields.current = { text, link, tags, private: isPrivate, base: loadedText, opened };
  useEffect(
    () =>
      onUnauthorized(() => {
        if (userId && dirtyNow.current) saveDraft(userId, formKey, fields.current);
      }),
    [userId, formKey],
  );
  // In-app navigation (a link, Back) asks before the changes go; closing or reloading the tab gets the browser's prompt.
  useEffect(
    () =>
      guardLeaving({
        question: () => (dirtyNow.current ? (card ? 'Discard your changes to this card?' : 'Discard this card? What you wrote is not saved.') : null),
        discard: () => userId && dropDraft(userId, formKey),
      }),
    [userId, formKey, card],
  );
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => {
      if (!dirtyNow.current) return;
      e.preventDefault();
      e.returnValue = '';
    };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);
  const done = () => {
    sent.current = true;
    dirtyNow.current = false;
    if (userId) dropDraft(userId, formKey);
  };
  /** `overwrite`: the version the user chose to replace ("Save mine anyway"), false for a plain save. */
  const save = async (overwrite: { etag: string | null } | false) => {
    setTouched(true);
    if (Object.keys(problems).length > 0) return action.setError('Please fix the marked fields.');
    if (card) {
      const change = {
        ...(html !== (loadedText ?? card.card_html) && html !== card.card_html ? { card_html: html } : {}),
        ...(link.trim() !== card.link ? { link: link.trim() } : {}),
        ...(isPrivate !== card.private ? { private: isPrivate } : {}),
      };
      const ok = await action.run(async () => {
        setObstacle(undefined);
        for (let attempt = 1; ; attempt++) {
          // Read again first: a save replaces whatever another tab or device saved since this form opened, unsaid.
          let current: Card;
          let etag: string | null;
          try {
            ({ card: current, etag } = await api.cardWithVersion(card.id));
          } catch (err) {
            if (err instanceof ApiError && err.status === 404) {
              setObstacle({ kind: 'deleted' });
              return false;
            }
            throw err;
          }
          const was = opened ?? card;
          const clashes = (
            [
              ['card_html', 'card_html' in change && current.card_html !== was.card_html],
              ['link', 'link' in change && current.link !== was.link && current.link !== change.link],
              ['private', 'private' in change && current.private !== was.private && current.private !== change.private],
            ] as const
          ).flatMap(([field, clash]) => (clash ? [field] : []));
          if (clashes.length > 0 && !(overwrite && chosenVersion(overwrite.etag, etag))) {
            setObstacle({ kind: 'changed', current, etag, fields: clashes });
            return false;
          }
          try {
            // Only on the version just compared: one saved meanwhile is answered 412 and compared in its turn.
            await api.updateCard({ card_uuid: card.id, ...change }, etag);
            return true;
          } catch (err) {
            if (!(err instanceof ApiError && err.status === 412) || attempt >= EDIT_ATTEMPTS) throw err;
          }
        }
      });
      if (ok) {
        done();
        // A save that ends after the person went on (Back to another card's form, say) leaves them there: opening this
        // card would replace that page, forced past its unsaved changes.
        if (stillShown()) navigate(`/card/${card.id}`, { replace: true, force: true });
      }
      return;
    }
    const created = await action.run(() => api.createCard({ card_html: html, link: link.trim(), private: isPrivate, tag_set: tagsFromInput(tags) }, draftKey));
    if (!created) return;
    done();
    if (created.duplicate) setDuplicateOf(created.card_metadata);
    else if (stillShown()) navigate(`/card/${created.card_metadata.id}`, { replace: true, force: true });
  };
  const submit = (e: Event) => {
    e.preventDefault();
    void save(false);
  };
  /** The card was deleted meanwhile: its text, link and privacy go to the new-card form (as a draft), to be created there. */
  const writeAsNew = () => {
    if (!userId) return;
    saveDraft(userId, 'card:new', { text, link, tags: '', private: isPrivate, base: null } satisfies CardDraft);
    done();
    navigate('/card/new', { force: true });
  };
  const show = (field: 'text' | 'link' | 'tags') => (touched || field !== 'text' ? problems[field] : undefined);
  if (duplicateOf)
    return (
      <Notice>
        Saved, but this card duplicates one already in the library, so it is kept as a collision under it and shows up in searches beside it.{' '}
        <Link href={`/card/${duplicateOf.id}`}>Open the saved card</Link>.
      </Notice>
    );
  return (
    <form onSubmit={submit} class="card-form" noValidate>
      <div class="label-row">
        {/* A label names a contenteditable through aria-labelledby but does not focus it: a click on it does. */}
        <label id="card-text-label" for="card-text" onClick={() => document.getElementById('card-text')?.focus()}>
          {htmlView ? 'Card text (HTML)' : 'Card text'}
        </label>
        <button type="button" class="link-button" aria-pressed={htmlView} onClick={() => setHtmlView(!htmlView)}>
          Edit as HTML
        </button>
      </div>
      {htmlView ? (
        <textarea
          id="card-text"
          rows={12}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onBlur={() => setTouched(true)}
          aria-invalid={Boolean(show('text'))}
          aria-describedby="card-text-hint card-text-problem"
        />
      ) : null}
      {/* Kept while the HTML view is shown, so switching back without a change keeps the text and its undo history. */}
      {editorUnavailable ? null : (
        <LazyCardTextEditor
          id="card-text"
          html={htmlFromInput(text)}
          hidden={htmlView}
          describedBy="card-text-hint card-text-problem"
          invalid={Boolean(show('text'))}
          onChange={setText}
          onLoad={loadText}
          onLeave={() => setTouched(true)}
          onUnavailable={() => {
            setEditorUnavailable(true);
            setHtmlView(true);
          }}
        />
      )}
      <small id="card-text-hint">
        More than {MIN_WORDS_EXCLUSIVE} and at most {MAX_WORDS} words.{' '}
        {htmlView
          ? 'Plain text (blank lines start paragraphs) or HTML with p, b, i, u, em, strong, mark, lists, headings, blockquote and links; anything else is removed when the card is saved.'
          : `Format with the toolbar or the keyboard (${shortcut('Mod+B')} bold, ${shortcut('Mod+I')} italic, ${shortcut('Mod+K')} link, Shift+Enter new line); pasted text keeps only the formatting a card can hold.`}{' '}
        Words: <span data-testid="word-count">{words}</span>
      </small>
      <FieldProblem id="card-text-problem" text={show('text')} />
      <label for="card-link">Source link</label>
      <input id="card-link" type="url" placeholder="https://" value={link} onInput={(e) => setLink(e.currentTarget.value)} aria-invalid={Boolean(show('link'))} aria-describedby="card-link-problem" />
      <FieldProblem id="card-link-problem" text={show('link')} />
      {card ? null : (
        <>
          <label for="card-tags">Tags (comma-separated)</label>
          <input id="card-tags" dir="auto" value={tags} onInput={(e) => setTags(e.currentTarget.value)} aria-invalid={Boolean(show('tags'))} aria-describedby="card-tags-problem" />
          <FieldProblem id="card-tags-problem" text={show('tags')} />
        </>
      )}
      <label class="check">
        <input type="checkbox" checked={isPrivate} onChange={(e) => setPrivate(e.currentTarget.checked)} /> Private (only you can see it)
      </label>
      <ErrorMessage error={action.error} />
      {obstacle?.kind === 'deleted' ? (
        <div class="error" role="alert">
          <p>This card was deleted after you opened it here (in another tab or window?), so your changes cannot be saved to it. Your text is still in the form.</p>
          <p class="row">
            <button type="button" onClick={writeAsNew}>
              Make a new card of it
            </button>
          </p>
        </div>
      ) : obstacle?.kind === 'changed' ? (
        <div class="error" role="alert">
          <p>
            This card was changed on {formatDate(obstacle.current.updated_at)}, after you opened it here (in another tab or window?):{' '}
            {cardChangedElsewhere(obstacle.current, obstacle.fields)}. Saving now replaces that version with yours.{' '}
            <a href={`/card/${card!.id}`} target="_blank" rel="noopener">
              See the saved version
            </a>{' '}
            (opens a new tab).
          </p>
          <p class="row">
            <button type="button" onClick={() => void save({ etag: obstacle.etag })} aria-disabled={action.busy}>
              Save mine anyway
            </button>
          </p>
        </div>
      ) : null}
      <div class="row">
        <button type="submit" class="primary" aria-disabled={action.busy}>
          {card ? 'Save changes' : 'Create card'}
        </button>
        <Link href={card ? `/card/${card.id}` : '/'} class="button">
          Cancel
        </Link>
      </div>
    </form>
  );
}

function FieldProblem({ id, text }: { id: string; text: string | undefined }) {
  return (
    <p id={id} class="field-problem" aria-live="polite">
      {text ?? ''}
    </p>
  );
}

export function NewCardPage() {
  return (
    <section>
      <PageTitle>New card</PageTitle>
      <CardForm />
    </section>
  );
}

export function EditCardPage({ cardId }: { cardId: string }) {
  const session = useSession();
  const card = useAsync(() => api.card(cardId), [cardId]);
  if (card.loading) return <Loading />;
  if (card.error || !card.data) return <ErrorMessage error={card.error ?? 'Card not found'} />;
  if (card.data.author?.id !== session.user?.id) return <ErrorMessage error="Only the author can edit this card." />;
  return (
    <section>
      <PageTitle>Edit card</PageTitle>
      <CardForm card={card.data} />
    </section>
  );
}
