import { characterCount, MAX_COLLECTION_DESCRIPTION_CHARS, MAX_COLLECTION_NAME_CHARS } from '@cards/card-rules';
import { freeTextMessage } from '../free-text';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, EDIT_ATTEMPTS, newIdempotencyKey, chosenVersion, type Collection } from '../api';
import { CardSummary, DoneNotice, ErrorMessage, firstWords, formatDate, Loading, Notice, NotFoundHint, PageTitle, Pager, useAction, useAsync, UserText } from '../components';
import { Link, navigate, useLocation, useStillShown } from '../router';
import { useSession } from '../session';
import { resultsSummary, SearchForm, SearchResults, SearchStatus, searchBody, searchParamsFrom, searchUrl } from './search-page';

/** What the server would refuse in a collection's (trimmed) name and description, said for the form; null when nothing. */
function collectionDraftProblem(name: string, description: string): string | null {
  if (!name) return 'Give the collection a name.';
  // Characters as the server counts them (code points); an input's maxLength would count UTF-16 units instead.
  if (characterCount(name) > MAX_COLLECTION_NAME_CHARS) return `A name has at most ${MAX_COLLECTION_NAME_CHARS} characters.`;
  if (characterCount(description) > MAX_COLLECTION_DESCRIPTION_CHARS) return `A description has at most ${MAX_COLLECTION_DESCRIPTION_CHARS} characters.`;
  return freeTextMessage(name, 'single-line') ?? freeTextMessage(description, 'multi-line');
}

export function CollectionsPage() {
  const session = useSession();
  const user = session.user!;
  const list = useAsync(() => api.userCollections(user.id), [user.id]);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [isPublic, setPublic] = useState(true);
  // One key per draft: sending the same draft again (a second click, a retry after a lost answer) makes no second collection.
  const draftKey = useMemo(newIdempotencyKey, [name, description, isPublic]);
  const action = useAction();
  const stillShown = useStillShown();
  const create = async (e: Event) => {
    e.preventDefault();
    const trimmed = name.trim();
    const problem = collectionDraftProblem(trimmed, description);
    if (problem) return action.setError(problem);
    const id = await action.run(() => api.createCollection({ name: trimmed, description, is_public: isPublic }, draftKey));
    if (id === undefined) return;
    setName('');
    setDescription('');
    // Created after the person moved on: they stay where they are (the collection is in the list when they come back).
    if (!stillShown()) return;
    if (id) navigate(`/collection/${id}`);
    else list.reload();
  };
  return (
    <section>
      <PageTitle>Your collections</PageTitle>
      {list.loading ? <Loading /> : null}
      <ErrorMessage error={list.error} />
      {list.data && list.data.length === 0 ? <p class="muted">No collections yet.</p> : null}
      <ul class="plain-list">
        {(list.data ?? []).map((c) => (
          <li key={c.id}>
            <UserText>
              <Link href={`/collection/${c.id}`}>{c.name}</Link>
            </UserText>{' '}
            <span class="badge">{c.is_public ? 'public' : 'private'}</span>
            {c.file_id ? <> <span class="badge">from a file</span></> : null}
            <span class="muted"> · {formatDate(c.created_at)}</span>
          </li>
        ))}
      </ul>
      <h2>New collection</h2>
      <form onSubmit={create} class="narrow">
        <label for="collection-name">Name</label>
        <input id="collection-name" dir="auto" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="collection-description">Description (optional)</label>
        <textarea id="collection-description" dir="auto" rows={3} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        <label class="check">
          <input type="checkbox" checked={isPublic} onChange={(e) => setPublic(e.currentTarget.checked)} /> Public (anyone can see it)
        </label>
        <ErrorMessage error={action.error} />
        <button type="submit" class="primary" aria-disabled={action.busy}>
          Create collection
        </button>
      </form>
    </section>
  );
}

/** A 404 naming the collection itself: it was deleted since the page read it (in another tab or window?). */
const collectionGone = (err: unknown) => err instanceof ApiError && err.status === 404 && err.message === 'Collection not found';

/** A collection's name and description as the settings form compares them: shown, edited, or as stored. */
interface CollectionText {
  name: string;
  description: string;
}

/** Which fields the user typed in since the edit began (or since the save that stored them). */
type EditedFields = Record<keyof CollectionText, boolean>;

const noneEdited: EditedFields = { name: false, description: false };

/**
 * Which of the fields a save sends ("name", "description", both or none): those the draft changes from the text it was
 * begun on, and those typed in and back to it. A field edited back is the user's word too: when it was changed elsewhere
 * meanwhile, the save warns (the user's restored value would otherwise be dropped unsaid for the other one); when it
 * was not, it is as stored and nothing of it is sent.
 */
function changedFields(draft: CollectionText, begunOn: CollectionText, edited: EditedFields): (keyof CollectionText)[] {
  return (['name', 'description'] as const).filter((field) => edited[field] || draft[field] !== begunOn[field]);
}

/** What the clash warning says was saved elsewhere, one phrase per field changed both here and there. */
function changedElsewhere(current: CollectionText, fields: readonly (keyof CollectionText)[]) {
  return fields.map((field, i) => (
    <span key={field}>
      {i > 0 ? ' and ' : ''}
      {field === 'name' ? (
        <>
          it is now named “<UserText>{current.name}</UserText>”
        </>
      ) : current.description === '' ? (
        'it now has no description'
      ) : (
        <>
          its description is now “<UserText>{current.description}</UserText>”
        </>
      )}
    </span>
  ));
}

function CollectionSettings({ collection: c, onChanged, onGone }: { collection: Collection; onChanged(): void; onGone(): void }) {
  const [name, setName] = useState(c.name);
  const [description, setDescription] = useState(c.description);
  // Each field as it was when the user began editing it here: a save sends only the fields changed from it, so a field
  // left alone never carries back an old value over one saved since elsewhere (another tab renamed the collection, this
  // one saved a description: the rename was undone unsaid). A field left alone follows the page's reads of the
  // collection (after a save, a privacy change or a removal here), as the heading does.
  const [begunOn, setBegunOn] = useState<CollectionText>({ name: c.name, description: c.description });
  // A field typed in, even back to what it was begun on, is not left alone: it keeps what the user put there.
  const [edited, setEdited] = useState<EditedFields>(noneEdited);
  useEffect(() => {
    setName((shown) => (shown === begunOn.name && !edited.name ? c.name : shown));
    setDescription((shown) => (shown === begunOn.description && !edited.description ? c.description : shown));
    setBegunOn((was) => ({
      name: name === was.name && !edited.name ? c.name : was.name,
      description: description === was.description && !edited.description ? c.description : was.description,
    }));
    // Only a new read of the collection moves the fields left alone (not typing, which the updaters compare).
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [c.name, c.description]);
  // The fields as shown now, for a save that ends after the user typed on meanwhile (the fields stay editable).
  const shown = useRef<CollectionText>({ name, description });
  shown.current = { name, description };
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const stillShown = useStillShown();
  const run = (work: () => Promise<unknown>) =>
    action.run(async () => {
      try {
        await work();
      } catch (err) {
        if (collectionGone(err)) return void onGone();
        throw err;
      }
      return true;
    });
  // Renamed or described anew elsewhere (another tab or window) since this page read it: a save would replace that unsaid.
  // `etag`: the version shown, which "Save mine anyway" replaces (and only it: a later one is shown in its turn).
  const [clash, setClash] = useState<{ current: Collection; etag: string | null; fields: (keyof CollectionText)[] } | undefined>();
  /** `overwrite`: the version the user chose to replace ("Save mine anyway"), false for a plain save. */
  const save = async (e: Event | null, overwrite: { etag: string | null } | false = false) => {
    e?.preventDefault();
    setSaved(false);
    setClash(undefined);
    const problem = collectionDraftProblem(name.trim(), description);
    if (problem) return action.setError(problem);
    const draft = { name: name.trim(), description };
    const fields = changedFields(draft, begunOn, edited);
    let stored: CollectionText | undefined;
    const ok = await run(async () => {
      for (let attempt = 1; ; attempt++) {
        // Read again first, then update with that read's ETag as If-Match: a save landing between the two is answered
        // 412 and compared in its turn, not replaced unsaid.
        const { collection: current, etag } = await api.collectionWithVersion(c.id);
        // Changed here and, otherwise, elsewhere since: the user decides (the other fields are not sent, so kept as saved).
        const clashing = fields.filter((field) => current[field] !== begunOn[field] && current[field] !== draft[field]);
        if (!(overwrite && chosenVersion(overwrite.etag, etag)) && clashing.length > 0) {
          setClash({ current, etag, fields: clashing });
          throw new Error('Not saved yet.');
        }
        stored = { name: current.name, description: current.description };
        // A field already as stored (edited back, and not changed elsewhere) is not sent: nothing of it would change.
        const sent = fields.filter((field) => draft[field] !== current[field]);
        if (sent.length === 0) return;
        try {
          await api.updateCollection({ collection_id: c.id, ...Object.fromEntries(sent.map((field) => [field, draft[field]])) }, etag);
          stored = { ...stored, ...Object.fromEntries(sent.map((field) => [field, draft[field]])) };
          return;
        } catch (err) {
          if (!(err instanceof ApiError && err.status === 412) || attempt >= EDIT_ATTEMPTS) throw err;
        }
      }
    });
    if (ok && stored) {
      // What is stored now is what the next edit begins on, and is shown, in each field left as it was when the save
      // began. A field typed in while the save was under way keeps what was typed (before, the save's end set it back to
      // what it stored, and the typing was gone unsaid): begun on what this save stored when the save sent it, else on
      // what that typing began on, so the next save still compares it with a change made elsewhere since.
      const now = stored;
      const atSave = { name, description };
      const typedMeanwhile = (field: keyof CollectionText) => shown.current[field] !== atSave[field];
      setBegunOn({
        name: typedMeanwhile('name') && !fields.includes('name') ? begunOn.name : now.name,
        description: typedMeanwhile('description') && !fields.includes('description') ? begunOn.description : now.description,
      });
      // Typed in meanwhile, a field stays edited (its typing is the user's, whatever it is begun on now).
      setEdited({ name: typedMeanwhile('name'), description: typedMeanwhile('description') });
      if (!typedMeanwhile('name')) setName(now.name);
      if (!typedMeanwhile('description')) setDescription(now.description);
      setSaved(true);
      onChanged();
    }
  };
  // Sets the privacy the button says, and only it (no name or description is sent, so none saved elsewhere is undone),
  // without If-Match: a privacy changed elsewhere since is set as the button says all the same, which is what it asked.
  const toggle = async () => {
    const ok = await run(() => api.updateCollection({ collection_id: c.id, is_public: !c.is_public }));
    if (ok) onChanged();
  };
  const remove = async () => {
    if (!confirm('Delete this collection? Its cards stay in the library.')) return;
    const ok = await action.run(async () => {
      try {
        await api.deleteCollection(c.id);
      } catch (err) {
        // Deleted already (in another tab): what was asked is done.
        if (!collectionGone(err)) throw err;
      }
      return true;
    });
    // Deleted after the person moved on (Back to another collection, say): the list would replace that page, and what
    // was typed there would go unsaid.
    if (ok && stillShown()) navigate('/collections', { replace: true });
  };
  return (
    <details class="panel">
      <summary>Rename, share or delete</summary>
      <form onSubmit={save}>
        <label for="collection-rename">Name</label>
        <input
          id="collection-rename"
          dir="auto"
          value={name}
          onInput={(e) => {
            setName(e.currentTarget.value);
            setEdited((was) => ({ ...was, name: true }));
          }}
        />
        <label for="collection-edit-description">Description</label>
        <textarea
          id="collection-edit-description"
          dir="auto"
          rows={3}
          value={description}
          onInput={(e) => {
            setDescription(e.currentTarget.value);
            setEdited((was) => ({ ...was, description: true }));
          }}
        />
        <button type="submit" aria-disabled={action.busy}>
          Save
        </button>
      </form>
      <p class="row">
        <button type="button" onClick={toggle} aria-disabled={action.busy}>
          {c.is_public ? 'Make private' : 'Make public'}
        </button>
        <button type="button" class="danger" onClick={remove} aria-disabled={action.busy}>
          Delete collection
        </button>
      </p>
      {clash ? (
        <div class="error" role="alert">
          <p>
            This collection was changed on {formatDate(clash.current.updated_at)}, after this page was opened (in another tab or window?):{' '}
            {changedElsewhere(clash.current, clash.fields)}. Saving replaces its {clash.fields.join(' and ')} with yours.
          </p>
          <p class="row">
            <button type="button" onClick={() => void save(null, { etag: clash.etag })} aria-disabled={action.busy}>
              Save mine anyway
            </button>
          </p>
        </div>
      ) : (
        <ErrorMessage error={action.error} />
      )}
      {saved ? <Notice>Saved.</Notice> : null}
    </details>
  );
}

export function CollectionPage({ collectionId }: { collectionId: string }) {
  const session = useSession();
  const { query } = useLocation();
  const params = searchParamsFrom(query);
  const searching = params.q.trim().length > 0;
  const base = `/collection/${collectionId}`;
  const data = useAsync(
    // Tagged, so that search hits (with scores) and the plain listing (without) are told apart by type.
    async (signal) =>
      searching
        ? { searched: true as const, ...(await api.searchCollection(params.mode, params.page, collectionId, searchBody(params), signal)) }
        : { searched: false as const, ...(await api.collection(collectionId, params.page)) },
    [collectionId, query.toString()],
  );
  const action = useAction();
  // The card last taken out: said, with the focus, above the list (its entry and button are gone).
  const [removed, setRemoved] = useState<{ words: string; at: number } | undefined>();
  // An action here found the collection gone (deleted in another tab since the page read it): read again, and said.
  const [gone, setGone] = useState(false);
  const onGone = () => {
    setGone(true);
    data.reload();
  };
  if (data.loading && !data.data) return <Loading />;
  if (gone && data.error?.status === 404)
    return (
      <section>
        <PageTitle>Collection deleted</PageTitle>
        <p role="alert">
          This collection was deleted after this page was opened (in another tab or window?). Its cards stay in the library.{' '}
          <Link href="/collections">Your collections</Link>.
        </p>
      </section>
    );
  if (!data.data)
    return (
      <section>
        <PageTitle>Collection not found</PageTitle>
        <NotFoundHint error={data.error} />
      </section>
    );
  const d = data.data;
  const c = d.collection;
  const isOwner = session.user?.id === c.author_id;
  // Removing an entry's root takes the whole entry out, duplicates bookmarked in the collection included.
  const removeEntry = async (root: { id: string; content: string }) => {
    const ok = await action.run(async () => {
      try {
        await api.removeFromCollection(c.id, root.id);
      } catch (err) {
        if (collectionGone(err)) return void onGone();
        throw err;
      }
      return true;
    });
    if (ok) {
      setRemoved({ words: firstWords(root.content, 8), at: Date.now() });
      data.reload();
    }
  };
  return (
    <section>
      <PageTitle dir="auto">{c.name}</PageTitle>
      <p class="meta">
        <span class="badge">{c.is_public ? 'public' : 'private'}</span> · created {formatDate(c.created_at)}
      </p>
      {c.description ? (
        <p class="description" dir="auto">
          {c.description}
        </p>
      ) : null}
      {/* Keyed by the collection: its fields, the version its clash warning names and its notices are this collection's
          alone, even where the page is not rendered anew for another (main's key holds the path today). */}
      {isOwner ? <CollectionSettings key={c.id} collection={c} onChanged={data.reload} onGone={onGone} /> : null}
      <SearchForm initial={params} onSearch={(p) => navigate(searchUrl(base, p))} idPrefix="collection-search" label="Search this collection" />
      <SearchStatus text={searching && !data.loading && d.searched ? resultsSummary(d.bookmarks, params.page, d.total_pages) : ''} />
      {searching ? (
        <p>
          Results inside this collection. <Link href={base}>Show all its cards</Link>
        </p>
      ) : null}
      {removed ? (
        <DoneNotice key={removed.at}>
          Removed “<UserText>{removed.words}</UserText>” from this collection.
        </DoneNotice>
      ) : null}
      <ErrorMessage error={data.error || action.error} />
      {d.searched ? (
        <SearchResults entries={d.bookmarks} emptyText="No card in this collection matches." />
      ) : d.bookmarks.length === 0 ? (
        <p class="muted">This collection holds no cards yet. Open a card and use “Add to collection”.</p>
      ) : (
        <ol class="results" aria-label="Cards in this collection">
          {d.bookmarks.map((entry) => {
            const [root, ...collisions] = entry.metadata;
            if (!root) return null;
            return (
              <li key={root.id}>
                <CardSummary
                  card={root}
                  collisions={collisions}
                  actions={
                    isOwner ? (
                      <button type="button" onClick={() => void removeEntry(root)} aria-disabled={action.busy}>
                        Remove from collection
                      </button>
                    ) : null
                  }
                />
              </li>
            );
          })}
        </ol>
      )}
      <Pager page={params.page} totalPages={d.total_pages} onPage={(page) => navigate(searchUrl(base, { ...params, page }))} />
    </section>
  );
}
