import { Parser, type Handler } from 'htmlparser2';
import { DepthLimitedParser, MAX_PARSER_DEPTH } from '../src/verification/adapters/htmlparser2/depth-limited-parser';
import { deepestParserStack } from './parser-depth';

function eventsOf(make: (handler: Partial<Handler>) => Parser, input: string): string[] {
  const events: string[] = [];
  const parser = make({
    onopentagname: (name) => events.push(`open ${name}`),
    onopentag: (name, attrs, implied) => events.push(`tag ${name} ${JSON.stringify(attrs)} ${implied}`),
    ontext: (text) => events.push(`text ${text}`),
    onclosetag: (name, implied) => events.push(`close ${name} ${implied}`),
    oncomment: (text) => events.push(`comment ${text}`),
  });
  parser.write(input);
  parser.end();
  return events;
}

const TOKENS = [
  '<p>', '</p>', '<P class="a" CLASS=b>', '<b>', '</b>', '<i>', '</I>', '<br>', '</br>', '<br/>', '<img src=x>', '</img>', '<li>', '</li>',
  '<ul>', '</ul>', '<table>', '<tr>', '<td>', '</td>', '</table>', '<select>', '<option>', '<svg>', '</svg>', '<path d="1"/>', '<math>',
  '<mi>', '</mi>', '<title>', '</title>', '<script>x<y</script>', '<style>a{}</style>', '<noscript>', '</noscript>', '</nope>',
  '<!-- c -->', 'word ', '&amp; ', '&lt;', '<',
];

/** A fixed pseudo-random sequence (LCG), so every run checks the same documents. */
function* documents(count: number): Generator<string> {
  let seed = 42;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
  for (let i = 0; i < count; i++) yield Array.from({ length: next() % 200 }, () => TOKENS[next() % TOKENS.length]).join('');
}

describe('DepthLimitedParser (search copy)', () => {
  it('gives exactly the events of htmlparser2 Parser for pages nested less deeply', () => {
    for (const input of documents(300)) expect(eventsOf((h) => new DepthLimitedParser(h, { decodeEntities: true }), input)).toEqual(eventsOf((h) => new Parser(h, { decodeEntities: true }), input));
  });

  it('past the limit, a well-formed page still gives exactly the events of htmlparser2 Parser', () => {
    const input = '<div><section><p>a<b>b<i>i<br>c</i></b><svg><path/></svg><script>s</script></p></section></div>';
    expect(eventsOf((h) => new DepthLimitedParser(h, {}, 2), input)).toEqual(eventsOf((h) => new Parser(h), input));
  });

  it('keeps at most MAX_PARSER_DEPTH elements on the parser stack, while the handler still hears every element', () => {
    const depth = 100_000;
    const input = `${'<div>'.repeat(depth)}deep${'</div>'.repeat(depth)}`;
    let opened = 0;
    let closed = 0;
    const deepest = deepestParserStack(() => {
      const parser = new DepthLimitedParser({ onopentagname: () => opened++, onclosetag: () => closed++ });
      parser.write(input);
      parser.end();
    });
    expect(deepest).toBe(MAX_PARSER_DEPTH);
    expect([opened, closed]).toEqual([depth, depth]);
  });
});
