import { useEffect, useState } from 'preact/hooks';
import { api, type CardSearchEntry, type SearchMode, type SearchQuery } from '../api';
import { tagsFromInput } from '../card-rules';
import { CardSummary, ErrorMessage, Loading, PageTitle, Pager, useAsync } from '../components';
import { navigate, useLocation } from '../router';

/**
 * The longest query the search service takes (MAX_QUERY_LENGTH, services/search: characters as code points; maxLength
 * counts UTF-16 units, so it never lets a longer one through).
 */
export const MAX_SEARCH_CHARS = 2000;

export interface SearchParams {
  q: string;
  mode: SearchMode;
  tags: string;
  links: string;
  page: number;
}

export function searchParamsFrom(query: URLSearchParams): SearchParams {
  const page = Number.parseInt(query.get('page') ?? '1', 10);
  return {
    q: query.get('q') ?? '',
    mode: query.get('mode') === 'fulltext' ? 'fulltext' : 'semantic',
    tags: query.get('tags') ?? '',
    links: query.get('links') ?? '',
    page: Number.isFinite(page) && page >= 1 ? page : 1,
  };
}

export function searchUrl(base: string, p: SearchParams): string {
  const qs = new URLSearchParams();
  if (p.q) qs.set('q', p.q);
  qs.set('mode', p.mode);
  if (p.tags) qs.set('tags', p.tags);
  if (p.links) qs.set('links', p.links);
  if (p.page > 1) qs.set('page', String(p.page));
  return `${base}?${qs.toString()}`;
}

export function searchBody(p: SearchParams): SearchQuery {
  const body: SearchQuery = { content: p.q.trim() };
  const tags = tagsFromInput(p.tags);
  const links = tagsFromInput(p.links);
  if (tags.length > 0) body.tag_set = tags;
  if (links.length > 0) body.link = links;
  return body;
}

/** The query form shared by the card search and the search inside a collection. */
export function SearchForm({ initial, onSearch, idPrefix, label = 'Search cards' }: { initial: SearchParams; onSearch(p: SearchParams): void; idPrefix: string; label?: string }) {
  const [q, setQ] = useState(initial.q);
  const [mode, setMode] = useState<SearchMode>(initial.mode);
  const [tags, setTags] = useState(initial.tags);
  const [links, setLinks] = useState(initial.links);
  useEffect(() => {
    setQ(initial.q);
    setMode(initial.mode);
    setTags(initial.tags);
    setLinks(initial.links);
  }, [initial.q, initial.mode, initial.tags, initial.links]);
  return (
    <form
      role="search"
      class="search-form"
      onSubmit={(e) => {
        e.preventDefault();
        onSearch({ q, mode, tags, links, page: 1 });
      }}
    >
      <label for={`${idPrefix}-q`}>{label}</label>
      <div class="row">
        <input id={`${idPrefix}-q`} type="search" dir="auto" required maxLength={MAX_SEARCH_CHARS} value={q} onInput={(e) => setQ(e.currentTarget.value)} placeholder="What are you looking for?" />
        <button type="submit" class="primary">
          Search
        </button>
      </div>
      <fieldset class="mode">
        <legend>Kind of search</legend>
        <div class="choices">
          <label class="check">
            <input type="radio" name={`${idPrefix}-mode`} value="semantic" checked={mode === 'semantic'} onChange={() => setMode('semantic')} /> Semantic (by meaning)
          </label>
          <label class="check">
            <input type="radio" name={`${idPrefix}-mode`} value="fulltext" checked={mode === 'fulltext'} onChange={() => setMode('fulltext')} /> Full text (by words, typo-tolerant)
          </label>
        </div>
      </fieldset>
      <details open={Boolean(initial.tags || initial.links)}>
        <summary>Filters</summary>
        <label for={`${idPrefix}-tags`}>Any of these tags (comma-separated)</label>
        <input id={`${idPrefix}-tags`} dir="auto" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        <label for={`${idPrefix}-links`}>Link contains any of (comma-separated)</label>
        <input id={`${idPrefix}-links`} dir="auto" value={links} onInput={(e) => setLinks(e.currentTarget.value)} />
      </details>
    </form>
  );
}

/** What a finished search found, as its status says it: "3 results.", "10 results on page 1 out of 4." (not "of": the pager says "Page 1 of 4"), "No results.". */
export function resultsSummary(entries: CardSearchEntry[], page: number, totalPages: number): string {
  const n = entries.filter((e) => e.metadata.length > 0).length;
  const found = n === 0 ? 'No results' : `${n} result${n === 1 ? '' : 's'}`;
  return totalPages > 1 && n > 0 ? `${found} on page ${page} out of ${totalPages}.` : `${found}.`;
}

/**
 * The live region that says a search's outcome in one sentence. Always in the page (a live region added together with
 * its text is often not read), empty while the search runs, so the same outcome twice is said twice; the results list
 * itself is no live region, which would have a screen reader read every card out.
 */
export function SearchStatus({ text }: { text: string }) {
  return (
    <p class="visually-hidden" role="status" data-testid="search-status">
      {text}
    </p>
  );
}

export function SearchResults({ entries, emptyText }: { entries: CardSearchEntry[]; emptyText: string }) {
  if (entries.length === 0) return <p class="muted">{emptyText}</p>;
  return (
    <ol class="results" aria-label="Results">
      {entries.map((entry) => {
        const [root, ...collisions] = entry.metadata;
        if (!root) return null;
        return (
          <li key={root.id}>
            <CardSummary card={root} collisions={collisions} score={entry.score} />
          </li>
        );
      })}
    </ol>
  );
}

export function SearchPage() {
  const { query } = useLocation();
  const params = searchParamsFrom(query);
  const count = useAsync(() => api.countCards(), []);
  const result = useAsync(async (signal) => (params.q.trim() ? api.search(params.mode, params.page, searchBody(params), signal) : undefined), [query.toString()]);
  const go = (p: SearchParams) => navigate(searchUrl('/', p));
  return (
    <section>
      <PageTitle>Search the card library</PageTitle>
      {count.data ? (
        <p class="muted">
          {count.data.total_count} card{count.data.total_count === 1 ? '' : 's'} in the library.
        </p>
      ) : null}
      <SearchForm initial={params} onSearch={go} idPrefix="search" />
      <SearchStatus text={params.q.trim() && !result.loading && result.data ? resultsSummary(result.data.score_cards, params.page, result.data.total_pages) : ''} />
      <div>
        {result.loading && params.q ? <Loading /> : null}
        <ErrorMessage error={result.error} />
        {result.data ? (
          <>
            <h2 class="visually-hidden">Results</h2>
            {params.page > 1 && params.page > result.data.total_pages && result.data.total_pages >= 1 ? null : (
              <SearchResults entries={result.data.score_cards} emptyText="No card matches. Try other words or the other kind of search." />
            )}
            <Pager page={params.page} totalPages={result.data.total_pages} onPage={(page) => go({ ...params, page })} />
          </>
        ) : null}
      </div>
    </section>
  );
}
