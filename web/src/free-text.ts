/**
 * What a form says before sending text the server refuses in every free-text field (@cards/card-rules freeTextProblem):
 * an unpaired surrogate (half of an emoji or symbol, left by a program that cut or set the text) or a control
 * character. Both come in with pasted or filled-in text and cannot be seen, so the form names them.
 */
import { controlCharacterProblem, wellFormedProblem, type TextShape } from '@cards/card-rules';

const CONTROL_CHARACTERS = 'Remove the invisible control characters (they were probably pasted in).';
export const BROKEN_CHARACTER = 'Remove the broken character, half of an emoji or symbol (it was probably pasted in).';

/** The form's message for text that breaks the free-text rule, or null when the server accepts it on that count. */
export function freeTextMessage(text: string, shape: TextShape): string | null {
  if (wellFormedProblem(text)) return BROKEN_CHARACTER;
  if (controlCharacterProblem(text, shape)) return CONTROL_CHARACTERS;
  return null;
}
