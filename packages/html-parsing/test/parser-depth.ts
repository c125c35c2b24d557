import { Parser } from 'htmlparser2';

/**
 * Runs `parse` and returns the most elements htmlparser2's Parser held on its own stack meanwhile (a private field:
 * each start and end tag costs the Parser time in proportion to that stack's length, which is what is bounded).
 */
export function deepestParserStack(parse: () => void): number {
  const original = Parser.prototype.onopentagname;
  let deepest = 0;
  const spy = jest.spyOn(Parser.prototype, 'onopentagname').mockImplementation(function (this: Parser, start: number, endIndex: number) {
    original.call(this, start, endIndex);
    deepest = Math.max(deepest, (this as unknown as { stack: string[] }).stack.length);
  });
  try {
    parse();
  } finally {
    spy.mockRestore();
  }
  return deepest;
}
