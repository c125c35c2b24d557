import type { search } from '@cards/proto';
import type { SearchQuery, SearchService } from '../application/search-service';

function toQuery(req: search.SearchRequest): SearchQuery {
  return {
    query: req.query,
    tags: req.tags,
    links: req.links,
    ...(req.callerId ? { callerId: req.callerId } : {}),
    ...(req.collectionId ? { collectionId: req.collectionId } : {}),
    page: req.page,
    pageSize: req.pageSize,
  };
}

/** gRPC face of the search use cases; no rules here. */
export function searchHandlers(service: SearchService): search.SearchServiceImplementation {
  return {
    // A cancelled call's context.signal is aborted (its caller went away): the search stops before scoring for nobody.
    async semanticSearch(req, context) {
      const result = await service.semanticSearch(toQuery(req), context.signal);
      return { hits: result.hits, totalHits: result.totalHits, totalPages: result.totalPages };
    },
    async fullTextSearch(req, context) {
      const result = await service.fullTextSearch(toQuery(req), context.signal);
      return { hits: result.hits, totalHits: result.totalHits, totalPages: result.totalPages };
    },
    async findNearDuplicates(req, context) {
      const candidates = await service.findNearDuplicates(req.content, req.callerId || undefined, req.limit, req.unindexed, context.signal);
      return { candidates };
    },
  };
}
