import { usernameCaseFold } from '@cards/card-rules';
// Unicode's confusables.txt (UTS #39, version 13.0.0) as { source: prototype }, one entry per source code point, from
// the pinned unhomoglyph package (MIT). The key below is stored under a unique index: a different table is a different
// key, so changing the package's version needs a migration that computes every stored key again (see the decision).
import CONFUSABLE_PROTOTYPES from 'unhomoglyph/data.json';

const PROTOTYPES: ReadonlyMap<string, string> = new Map(Object.entries(CONFUSABLE_PROTOTYPES as Record<string, string>));
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
// The Arabic tatweel only stretches the joining between two letters: "مـحمد" is "محمد". usernameProblem refuses it;
// dropping it here makes a name stored with it, before that rule, the same name as the one without.
const TATWEEL = /\u0640/gu;

/**
 * UTS #39's skeleton: NFD, default-ignorable code points removed, each code point replaced by its prototype in
 * confusables.txt, NFD again. Two strings with one skeleton look alike ("сосо" in Cyrillic and "coco", "m" and "rn",
 * "0" and "O"); the skeleton is only for comparing, never shown.
 */
export function confusableSkeleton(text: string): string {
  let mapped = '';
  for (const character of text.normalize('NFD').replace(DEFAULT_IGNORABLE, '').replace(TATWEEL, '')) mapped += PROTOTYPES.get(character) ?? character;
  return mapped.normalize('NFD');
}

/**
 * The key under which a username is unique: the case fold of the skeleton of the case fold (usernameCaseFold, then
 * confusableSkeleton, then usernameCaseFold again). Folding first keeps the equivalences of case ("Straße" and
 * "STRASSE", "ΣΊΣΥΦΟΣ" and "σίσυφος") and makes the key case-insensitive, as confusables.txt is not (it maps capitals
 * and small letters apart); the skeleton then makes names of look-alike letters of other scripts one name ("paypal"
 * and "раураl", "admin" and "аdmin"); folding last joins what the skeleton maps to a capital ("0" to "O"), so "b0b" is
 * "bob". Stored under a unique index: stable for a given table.
 */
export function usernameKey(name: string): string {
  return usernameCaseFold(confusableSkeleton(usernameCaseFold(name)));
}

/**
 * The second key under which a username is unique: the case fold of the skeleton of the name as written
 * (confusableSkeleton, then usernameCaseFold). usernameKey folds first, so a capital "I" is an "i" there and "wiII"
 * (capital i's) is "wiii", another name than "will" though the two read alike in most sans-serif faces;
 * confusables.txt maps the capital "I" to "l", so here both are "will" ("BiII"/"Bill", "Ian"/"lan", "xIx"/"x1x" too).
 * It cannot replace usernameKey, which keeps what only folding first joins ("ΣΊΣΥΦΟΣ"/"σίσυφος", whose capitals
 * confusables.txt maps to other prototypes than their small letters): a name is taken when either key is held.
 * Stored under its own unique index: stable for a given table, as usernameKey.
 */
export function usernameKeyAsWritten(name: string): string {
  return usernameCaseFold(confusableSkeleton(name));
}
