/** The document formats the service accepts. */
export type DocumentFormat = 'docx' | 'doc' | 'odt' | 'pdf';

/** pending until the ingestion worker has turned the document into cards (done) or given up (failed). */
export type IngestionStatus = 'pending' | 'done' | 'failed';

/** A stored file's record; its bytes live in the object store under the file id. */
export interface FileRecord {
  id: string;
  userId: string;
  fileName: string;
  mimeType: string;
  format: DocumentFormat;
  private: boolean;
  size: number;
  tags: string[];
  ocFilePath: string | null;
  ingestionStatus: IngestionStatus;
  ingestionError: string | null;
  /** Cards made by the last successful ingestion. */
  cardCount: number;
  collectionId: string | null;
  /** The client's key of the upload that stored it (per user): a repeat of that upload answers this record. */
  idempotencyKey: string | null;
  /** The fingerprint of the request that carried the key (null: none sent). */
  requestFingerprint: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What is kept of a file's idempotency key after the file was deleted, so a late repeat of its upload stores none. */
export interface DeletedIdempotencyKey {
  requestFingerprint: string | null;
  deletedAt: Date;
}

/** One paragraph-like unit of a document: a heading or a run of body text, with the links it holds. */
export interface DocumentBlock {
  kind: 'heading' | 'paragraph';
  /** Heading level 1-6 for headings. */
  level?: number;
  text: string;
  /** http(s) links in order of appearance. */
  links: string[];
  /**
   * For a block without `html`: where each of `links` is anchored, as the index of a word of `text` (split at
   * whitespace) its anchor starts in or at the latest after; a block cut into cards gives each link to the piece
   * holding that word. Absent: the links go with the block's first words.
   */
  linkWords?: number[];
  /**
   * The same content as inline HTML (escaped text plus a, strong, em, u) when the format carries
   * formatting; built only by the readers, never copied from the document.
   */
  html?: string;
  /** Set on a list item's paragraph (its text and HTML carry no marker): the splitter sets it in a ul or ol. */
  list?: ListPlace;
  /**
   * Set by the PDF reading on a paragraph that looks like a heading (one short line set larger than the page's text, no
   * sentence end): a PDF has no headings for the splitter, but a card should not end with one while its text starts the
   * next card, so the splitter ends a card after it only where no other cut keeps the cards within their bounds.
   */
  keepWithNext?: true;
  /**
   * Set on a block the document sets right to left (a .docx paragraph's w:bidi, its own or its style's, an .odt
   * paragraph style's writing-mode rl-tb, a .doc paragraph's sprmPFBiDi): the splitter writes it as dir="rtl" on the
   * block's p, h1-h6 or li, so a right-to-left paragraph that starts with a Latin word or a number still reads right to
   * left. Absent: the document gives the block no direction of its own (none is written; never dir="ltr").
   */
  dir?: 'rtl';
}

/** Where a list item stands: in a numbered or bulleted list, at a nesting level (1 outermost), its number there (1 first). */
export interface ListPlace {
  ordered: boolean;
  level: number;
  number: number;
  /**
   * Set on a further paragraph of item `number` (an item of several paragraphs, or the rest of an item cut into pieces):
   * it goes in that item's li after what the item holds so far, and starts no item of its own.
   */
  continues?: true;
}

/** What a parser makes of a document: its blocks in reading order. */
export interface ParsedDocument {
  blocks: DocumentBlock[];
}

/** A card the ingestion will create. */
export interface CardDraft {
  /** Position in the document; part of the idempotency key. */
  index: number;
  title: string | null;
  html: string;
  text: string;
  link: string;
  wordCount: number;
}
