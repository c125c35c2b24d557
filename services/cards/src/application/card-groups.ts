import { creationCursor, GRPC_PART_BYTES, InvalidArgumentError } from '@cards/platform';
import { isVisibleTo, type Card } from '../domain/model';
import type { CardRepository } from '../domain/ports';

/** A card as one viewer sees it: with that viewer's vote. */
export type ViewedCard = Card & { viewerVote: boolean | null };
export interface ViewedGroup {
  root: ViewedCard;
  collisions: ViewedCard[];
}

/**
 * Card groups in the order asked, as much of them as fits one answer; `next` (a page token) says where the following
 * part starts, absent after the last. A group cut between parts starts the next part again with its root.
 */
export interface CardGroupsPart {
  groups: ViewedGroup[];
  next?: string;
}

/** Collisions read at once: those of every root asked in one read when they are fewer, else a root's in reads of this many. */
const COLLISIONS_PER_READ = 200;

/** Protobuf bytes of a card in an answer, near enough: its texts, and a generous allowance for ids, times and framing. */
export function cardMessageBytes(card: Card): number {
  let bytes = 300 + Buffer.byteLength(card.content) + Buffer.byteLength(card.cardHtml) + Buffer.byteLength(card.link);
  bytes += Buffer.byteLength(card.fileName ?? '') + Buffer.byteLength(card.ocFilePath ?? '');
  for (const tag of card.tags) bytes += 4 + Buffer.byteLength(tag);
  return bytes;
}

const TOKEN = /^(0|[1-9]\d{0,5})(?:_(.+))?$/;
/** The token's cursor for a group cut after its root, before any collision. */
const FROM_FIRST_COLLISION = 'root';

/**
 * Where a part starts: the place in the card ids of the next root; when that root's group was cut, `resumed`, with the
 * last of its collisions already answered (`after`; none: the cut came before the first).
 */
interface PartStart {
  position: number;
  resumed: boolean;
  after?: string;
}

function parseToken(pageToken: string, cardCount: number): PartStart {
  if (pageToken === '') return { position: 0, resumed: false };
  const match = TOKEN.exec(pageToken);
  const position = Number(match?.[1]);
  if (!match || position >= cardCount) throw new InvalidArgumentError('page_token: not a token this service gave for these card ids');
  const cursor = match[2];
  if (cursor === undefined) return { position, resumed: false };
  if (cursor === FROM_FIRST_COLLISION) return { position, resumed: true };
  creationCursor.parse(cursor);
  return { position, resumed: true, after: cursor };
}

export interface CardGroupReaderDeps {
  cards: CardRepository;
  withVotes(list: readonly Card[], viewerId: string | undefined): Promise<ViewedCard[]>;
}

/**
 * Reads card groups (a root and the collisions the caller may see) in parts that each fit one gRPC message: a search
 * page of 25 roots, each copied by many users, passes 8 MiB. In the common case the whole answer is one part read
 * with the same queries as an unbounded read: the roots, every collision of them in one read, the caller's votes.
 */
export class CardGroupReader {
  constructor(private readonly deps: CardGroupReaderDeps) {}

  /**
   * Root cards with the collisions the caller may see, in the order of the ids; collisions map to their root. At most
   * `maxBytes` of cards (at least one card more than the part before), from where `pageToken` (the previous part's
   * `next`, with the same ids) says; `maxBytes` 0 without a token reads every group in one part, 0 with a token
   * GRPC_PART_BYTES.
   */
  async read(cardIds: readonly string[], callerId: string | undefined, maxBytes: number, pageToken: string): Promise<CardGroupsPart> {
    if (!Number.isInteger(maxBytes) || maxBytes < 0) throw new InvalidArgumentError('max_bytes: must be 0 or more');
    const budget = maxBytes === 0 && pageToken === '' ? Infinity : maxBytes || GRPC_PART_BYTES;
    const start = parseToken(pageToken, cardIds.length);
    const roots = (await this.visibleRoots(cardIds, callerId)).filter((r) => r.position >= start.position);
    const resuming = start.resumed && roots[0]?.position === start.position;

    let collisionsOf: Map<string, Card[]> | undefined;
    if (!resuming && roots.length > 0) {
      const all = await this.deps.cards.findCollisionsPage(roots.map((r) => r.root.id), COLLISIONS_PER_READ);
      if (all.next === undefined) collisionsOf = byRoot(all.items);
    }

    const groups: { root: Card; collisions: Card[] }[] = [];
    let bytes = 0;
    // A part always adds something the one before did not have, so reading part after part always ends.
    let progressed = false;
    const fits = (card: Card) => {
      const size = cardMessageBytes(card);
      if (progressed && bytes + size > budget) return false;
      bytes += size;
      return true;
    };
    let next: string | undefined;
    parts: for (const [i, { root, position }] of roots.entries()) {
      const resumed = i === 0 && resuming;
      let after = resumed ? start.after : undefined;
      if (!fits(root)) {
        next = String(position);
        break;
      }
      if (!resumed) progressed = true;
      const group = { root, collisions: [] as Card[] };
      groups.push(group);
      const take = (collision: Card): boolean => {
        if (!isVisibleTo(collision, callerId)) return true;
        if (!fits(collision)) {
          next = `${position}_${after ?? FROM_FIRST_COLLISION}`;
          return false;
        }
        group.collisions.push(collision);
        after = creationCursor.after(collision);
        progressed = true;
        return true;
      };
      if (collisionsOf) {
        for (const collision of collisionsOf.get(root.id) ?? []) if (!take(collision)) break parts;
        continue;
      }
      let cursor = after;
      do {
        const page = await this.deps.cards.findCollisionsPage([root.id], COLLISIONS_PER_READ, cursor);
        for (const collision of page.items) if (!take(collision)) break parts;
        cursor = page.next;
      } while (cursor !== undefined);
    }

    const viewed = new Map((await this.deps.withVotes(groups.flatMap((g) => [g.root, ...g.collisions]), callerId)).map((c) => [c.id, c]));
    const viewedGroups = groups.map((g) => ({ root: viewed.get(g.root.id)!, collisions: g.collisions.map((c) => viewed.get(c.id)!) }));
    return next === undefined ? { groups: viewedGroups } : { groups: viewedGroups, next };
  }

  /** The visible roots of the cards, once each, in the order of the ids, each with the place of its first card. */
  private async visibleRoots(cardIds: readonly string[], callerId: string | undefined): Promise<{ root: Card; position: number }[]> {
    const { cards } = this.deps;
    const found = new Map((await cards.findByIds(cardIds)).map((c) => [c.id, c]));
    const missingRoots = [...found.values()].flatMap((c) => (c.collisionOf && !found.has(c.collisionOf) ? [c.collisionOf] : []));
    for (const r of await cards.findByIds(missingRoots)) found.set(r.id, r);
    const roots = new Map<string, { root: Card; position: number }>();
    cardIds.forEach((id, position) => {
      const card = found.get(id);
      const root = card?.collisionOf ? found.get(card.collisionOf) : card;
      if (!root || root.collisionOf || !isVisibleTo(root, callerId) || roots.has(root.id)) return;
      roots.set(root.id, { root, position });
    });
    return [...roots.values()];
  }
}

function byRoot(collisions: readonly Card[]): Map<string, Card[]> {
  const out = new Map<string, Card[]>();
  for (const c of collisions) {
    const list = out.get(c.collisionOf!);
    if (list) list.push(c);
    else out.set(c.collisionOf!, [c]);
  }
  return out;
}
