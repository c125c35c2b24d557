import { MAX_FILE_TAGS } from '@cards/card-rules';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, newIdempotencyKey, toBase64Url, uploadFile, type FileRecord, type ListedCollection } from '../api';
import { isolated } from '../bidi';
import { tagsFromInput, tagsMessage } from '../card-rules';
import { DoneNotice, ErrorMessage, formatDate, Notice, PageTitle, useAction, useAsync, UserText } from '../components';
import { Link } from '../router';
import { useSession } from '../session';

const MIME_TYPES: Record<string, string> = {
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  doc: 'application/msword',
  odt: 'application/vnd.oasis.opendocument.text',
  pdf: 'application/pdf',
};
/** The gateway's default MAX_FILE_BYTES; the server answers 413 for anything larger. */
const MAX_BYTES = 20 * 1024 * 1024;

function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot + 1).toLowerCase();
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Where the ingestion of an uploaded file stands: still running, done (with its collection once listed), or failed with the server's reason. */
type Ingestion = { state: 'pending' } | { state: 'done'; collection: ListedCollection | undefined } | { state: 'failed'; reason: string } | { state: 'gave-up' };

/**
 * Watches an uploaded file's ingestion (it is asynchronous): its `ingestion_status` in the uploader's file listing
 * (`pending`, `done`, `failed` with `ingestion_error`), then, once done, the collection made from it. `onSettled` runs
 * when the status leaves `pending`, so the file list can show it.
 */
function useFileIngestion(userId: string, fileId: string | undefined, onSettled: () => void): Ingestion {
  const [ingestion, setIngestion] = useState<Ingestion>({ state: 'pending' });
  useEffect(() => {
    if (!fileId) return;
    setIngestion({ state: 'pending' });
    let live = true;
    const started = Date.now();
    const poll = async () => {
      let settled = false;
      while (live) {
        try {
          if (!settled) {
            const file = (await api.userFiles(userId)).find((f) => f.id === fileId);
            if (file && file.ingestion_status !== 'pending') {
              settled = true;
              if (live) onSettled();
              if (file.ingestion_status === 'failed') {
                if (live) setIngestion({ state: 'failed', reason: file.ingestion_error || 'no reason was given' });
                return;
              }
              if (live) setIngestion({ state: 'done', collection: undefined });
            }
          }
          if (settled) {
            const found = (await api.userCollections(userId)).find((c) => c.file_id === fileId);
            if (found) {
              if (live) setIngestion({ state: 'done', collection: found });
              return;
            }
          }
        } catch {
          // keep polling: a transient error is not the end of ingestion
        }
        if (Date.now() - started > 120_000) {
          if (live) setIngestion((now) => (now.state === 'pending' || (now.state === 'done' && !now.collection) ? { state: 'gave-up' } : now));
          return;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    void poll();
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [userId, fileId]);
  return ingestion;
}

/** A file's ingestion as the file list shows it. */
function IngestionStatus({ file }: { file: FileRecord }) {
  if (file.ingestion_status === 'failed') return <span class="ingestion-failed">turning into cards failed: {file.ingestion_error || 'no reason was given'}</span>;
  if (file.ingestion_status === 'done') return <span>cards made</span>;
  return <span>turning into cards…</span>;
}

export function UploadPage() {
  const session = useSession();
  const user = session.user!;
  const [file, setFile] = useState<File | undefined>();
  const [isPrivate, setPrivate] = useState(false);
  const [tags, setTags] = useState('');
  const [progress, setProgress] = useState<number | undefined>();
  const [uploaded, setUploaded] = useState<FileRecord | undefined>();
  // One key per draft: sending the same document again (a second click, a retry after a lost answer) stores and ingests it once.
  const draftKey = useMemo(newIdempotencyKey, [file, tags, isPrivate]);
  const action = useAction();
  const tagProblem = tagsMessage(tagsFromInput(tags), MAX_FILE_TAGS);
  const files = useAsync(() => api.userFiles(user.id), [user.id, uploaded?.id]);
  // The file last deleted from "Your files": said, with the focus, above the list (its row and button are gone).
  const [deleted, setDeleted] = useState<{ name: string; at: number; elsewhere: boolean } | undefined>();
  const ingestion = useFileIngestion(user.id, uploaded?.id, files.reload);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (action.busy) return;
    if (!file) return action.setError('Choose a file first.');
    const ext = extensionOf(file.name);
    const mime = MIME_TYPES[ext];
    if (!mime) return action.setError('Only .docx, .doc, .odt and .pdf files can be uploaded.');
    if (file.size > MAX_BYTES) return action.setError(`The file is ${formatBytes(file.size)}; at most ${formatBytes(MAX_BYTES)} is accepted.`);
    if (file.size === 0) return action.setError('The file is empty.');
    if (tagProblem) return action.setError('Please fix the tags.');
    setUploaded(undefined);
    setProgress(0);
    const record = await action.run(async () => {
      const bytes = new Uint8Array(await file.arrayBuffer());
      const tagList = tagsFromInput(tags);
      return uploadFile({ base64_docx_file: toBase64Url(bytes), file_name: file.name, file_mime_type: mime, private: isPrivate, ...(tagList.length ? { tag_set: tagList } : {}) }, draftKey, setProgress);
    });
    if (record) setUploaded(record);
    else setProgress(undefined);
  };

  return (
    <section>
      <PageTitle>Upload a document</PageTitle>
      <p>Each heading of a .docx, .doc, .odt or .pdf document starts a card; the cards land in a new collection named after the file.</p>
      <form onSubmit={submit} class="narrow">
        <label for="upload-file">Document (.docx, .doc, .odt or .pdf, up to 20 MiB)</label>
        <input
          id="upload-file"
          type="file"
          accept=".docx,.doc,.odt,.pdf,application/pdf,application/msword,application/vnd.openxmlformats-officedocument.wordprocessingml.document,application/vnd.oasis.opendocument.text"
          onChange={(e) => setFile(e.currentTarget.files?.[0])}
        />
        <label for="upload-tags">Tags for the cards (comma-separated, optional)</label>
        <input id="upload-tags" dir="auto" value={tags} onInput={(e) => setTags(e.currentTarget.value)} aria-invalid={Boolean(tagProblem)} aria-describedby="upload-tags-problem" />
        <p id="upload-tags-problem" class="field-problem" aria-live="polite">
          {tagProblem ?? ''}
        </p>
        <label class="check">
          <input type="checkbox" checked={isPrivate} onChange={(e) => setPrivate(e.currentTarget.checked)} /> Private file (its collection is private too)
        </label>
        <ErrorMessage error={action.error} />
        <button type="submit" class="primary" aria-disabled={action.busy}>
          {action.busy ? 'Uploading…' : 'Upload'}
        </button>
      </form>
      {progress !== undefined ? (
        <div class="progress">
          <label for="upload-progress">Upload progress</label>
          <progress id="upload-progress" max={100} value={Math.round(progress * 100)}>
            {Math.round(progress * 100)}%
          </progress>
          <span aria-hidden="true"> {Math.round(progress * 100)}%</span>
        </div>
      ) : null}
      {uploaded ? (
        <div class="panel" aria-live="polite">
          <Notice>
            Uploaded{' '}
            <strong>
              <UserText>{uploaded.file_name}</UserText>
            </strong>{' '}
            ({formatBytes(uploaded.size)}).
          </Notice>
          {ingestion.state === 'failed' ? (
            <p class="error" role="alert">
              The document could not be turned into cards: {ingestion.reason}.
            </p>
          ) : ingestion.state === 'done' && ingestion.collection ? (
            <p>
              Its cards are in the collection{' '}
              <UserText>
                <Link href={`/collection/${ingestion.collection.id}`}>{ingestion.collection.name}</Link>
              </UserText>
              .
            </p>
          ) : ingestion.state === 'gave-up' ? (
            <p class="muted">The collection has not appeared yet; you will get a notification when it does.</p>
          ) : ingestion.state === 'done' ? (
            <p class="muted" role="status">
              Cards made; looking for their collection…
            </p>
          ) : (
            <p class="muted" role="status">
              Turning the document into cards…
            </p>
          )}
        </div>
      ) : null}
      <h2>Your files</h2>
      {deleted ? (
        <DoneNotice key={deleted.at}>
          {deleted.elsewhere ? (
            <>
              <UserText>{deleted.name}</UserText> was deleted after this page was opened (in another tab or window?).
            </>
          ) : (
            <>
              Deleted <UserText>{deleted.name}</UserText>.
            </>
          )}
        </DoneNotice>
      ) : null}
      <ErrorMessage error={files.error} />
      {files.data && files.data.length === 0 ? <p class="muted">No files yet.</p> : null}
      <ul class="plain-list">
        {(files.data ?? []).map((f) => (
          <FileRow
            key={f.id}
            file={f}
            onChanged={files.reload}
            onDeleted={(elsewhere) => {
              setDeleted({ name: f.file_name, at: Date.now(), elsewhere });
              files.reload();
            }}
          />
        ))}
      </ul>
    </section>
  );
}

/** A 404 naming the file: it was deleted since the list was read (in another tab or window?). */
const fileGone = (err: unknown) => err instanceof ApiError && err.status === 404 && err.message === 'File not found';

/** `onDeleted(elsewhere)`: the file is gone, deleted here, or (`elsewhere`) found deleted already by an action here. */
function FileRow({ file, onChanged, onDeleted }: { file: FileRecord; onChanged(): void; onDeleted(elsewhere: boolean): void }) {
  const action = useAction();
  const toggle = () =>
    action.run(async () => {
      try {
        await api.setFilePrivate(file.id, !file.private);
      } catch (err) {
        if (fileGone(err)) return onDeleted(true);
        throw err;
      }
      onChanged();
    });
  const remove = () => {
    if (!confirm(`Delete ${isolated(file.file_name)}? Its cards and collection stay.`)) return;
    void action.run(async () => {
      try {
        await api.deleteFile(file.id);
      } catch (err) {
        if (fileGone(err)) return onDeleted(true);
        throw err;
      }
      onDeleted(false);
    });
  };
  return (
    <li>
      <strong>
        <UserText>{file.file_name}</UserText>
      </strong>{' '}
      <span class="badge">{file.private ? 'private' : 'public'}</span>
      <span class="muted">
        {' '}
        · {formatBytes(file.size)} · {formatDate(file.created_at)} · <IngestionStatus file={file} />
      </span>{' '}
      <button type="button" class="small" onClick={() => void toggle()} aria-disabled={action.busy}>
        {file.private ? 'Make public' : 'Make private'}
      </button>{' '}
      <button type="button" class="small danger" onClick={remove} aria-disabled={action.busy}>
        Delete
      </button>
      <ErrorMessage error={action.error} />
    </li>
  );
}
