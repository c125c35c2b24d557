/**
 * What a card's verification score tells a person. The API gives only `verification_score`: null (not checked yet,
 * or no link to check) or the integer 0–100 that the search service's token_set_ratio gave the card's text against
 * its source page's text (DESIGN.md "Verification"). A page that could not be used (unreachable, refused, not HTML,
 * over 5 MiB, timed out) scores 0 too, and the API does not say which; a page that was read but is about something
 * else still shares common words and scores about 30, so 0 is said as "could not be read, or shares no text".
 */
export type VerificationLevel = 'pending' | 'unreadable' | 'weak' | 'partial' | 'strong';

export interface VerificationReading {
  level: VerificationLevel;
  /** A few words for a badge. */
  label: string;
  /** How well the card matches, for a sentence: "strong match" (only for a score above 0). */
  match?: string;
  /** What the label means, for the card page and the badge's tooltip. */
  explanation: string;
}

/** The lowest score said to match strongly / partly (below: weakly; 0: not readable). */
export const STRONG_MATCH = 70;
export const PARTIAL_MATCH = 40;

const MATCHES = {
  strong: { match: 'strong match', explanation: 'most of the card’s words are on its source page.' },
  partial: { match: 'partial match', explanation: 'the source page shares part of the card’s text.' },
  weak: { match: 'weak match', explanation: 'the source page shares little of the card’s text (a page about something else scores about 30).' },
};

/** Null when there is nothing to say: no score and no link to check. */
export function verificationReading(score: number | null | undefined, hasLink: boolean): VerificationReading | null {
  if (score === null || score === undefined) {
    if (!hasLink) return null;
    return { level: 'pending', label: 'Not verified yet', explanation: 'the source page is waiting to be checked.' };
  }
  const n = Math.round(score);
  if (n <= 0)
    return {
      level: 'unreadable',
      label: 'Source not confirmed (0/100)',
      explanation: 'the source page could not be read (unreachable, not a web page, or too large), or it shares no text with the card.',
    };
  const level = n >= STRONG_MATCH ? 'strong' : n >= PARTIAL_MATCH ? 'partial' : 'weak';
  const { match, explanation } = MATCHES[level];
  return { level, label: `${match[0]!.toUpperCase()}${match.slice(1)} with source (${n}/100)`, match, explanation };
}
