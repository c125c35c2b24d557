import fc from 'fast-check';
import { Parser, type Handler, type ParserOptions } from 'htmlparser2';
import { DepthLimitedParser, MAX_PARSER_DEPTH } from '../src';
import { deepestParserStack } from './parser-depth';

/** Every event a handler hears, as text, so two parses can be compared. */
function eventsOf(make: (handler: Partial<Handler>) => Parser, input: string): string[] {
  const events: string[] = [];
  const parser = make({
    onopentagname: (name) => events.push(`open ${name}`),
    onattribute: (name, value, quote) => events.push(`attr ${name}=${value} ${String(quote)}`),
    onopentag: (name, attrs, implied) => events.push(`tag ${name} ${JSON.stringify(attrs)} ${implied}`),
    ontext: (text) => events.push(`text ${text}`),
    onclosetag: (name, implied) => events.push(`close ${name} ${implied}`),
    oncomment: (text) => events.push(`comment ${text}`),
    onprocessinginstruction: (name, data) => events.push(`pi ${name} ${data}`),
  });
  parser.write(input);
  parser.end();
  return events;
}

const TOKENS = [
  '<p>', '</p>', '<P class="a" CLASS=b>', '<b>', '</b>', '<i>', '</I>', '<br>', '</br>', '<br/>', '<img src=x>', '</img>', '<li>', '</li>',
  '<ul>', '</ul>', '<table>', '<tr>', '<td>', '</td>', '</table>', '<select>', '<option>', '<svg>', '</svg>', '<path d="1"/>', '<math>',
  '<mi>', '</mi>', '<title>', '</title>', '<script>x<y</script>', '<style>a{}</style>', '<noscript>', '</noscript>', '<text:p text:style-name="s">', '</text:p>',
  '<text:span/>', '<a href="https://x">', '</a>', '</nope>', '<!-- c -->', '<?xml v?>', '<![CDATA[d]]>', 'word ', '&amp; ', '&lt;', '<',
];

describe('DepthLimitedParser', () => {
  const modes: [string, ParserOptions][] = [
    ['HTML', { decodeEntities: true }],
    ['XML', { xmlMode: true, decodeEntities: true }],
  ];

  it.each(modes)('gives exactly the events of htmlparser2 Parser for documents nested less deeply (%s)', (_mode, options) => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...TOKENS), { maxLength: 200 }), (tokens) => {
        const input = tokens.join('');
        expect(eventsOf((h) => new DepthLimitedParser(h, options), input)).toEqual(eventsOf((h) => new Parser(h, options), input));
      }),
      { numRuns: 300 },
    );
  });

  it('past the limit, a well-formed XML document still gives exactly the events of htmlparser2 Parser', () => {
    const { element } = fc.letrec<{ element: string }>((tie) => ({
      element: fc
        .tuple(fc.constantFrom('a', 'b', 'text:p', 'text:span'), fc.constantFrom('', ' x="1"', ' x="1" y="&amp;"'), fc.array(fc.oneof(fc.constantFrom('w ', '&lt;', '<e/>'), tie('element')), { maxLength: 4 }))
        .map(([name, attrs, children]) => `<${name}${attrs}>${children.join('')}</${name}>`),
    }));
    fc.assert(
      fc.property(element, (input) => {
        expect(eventsOf((h) => new DepthLimitedParser(h, { xmlMode: true }, 2), input)).toEqual(eventsOf((h) => new Parser(h, { xmlMode: true }), input));
      }),
      { numRuns: 300 },
    );
  });

  it('past the limit, a well-formed HTML page still gives exactly the events of htmlparser2 Parser', () => {
    const input = '<div><section><p>a<b>b<i>i<br>c</i></b><svg><path/></svg><script>s</script></p></section></div>';
    expect(eventsOf((h) => new DepthLimitedParser(h, {}, 2), input)).toEqual(eventsOf((h) => new Parser(h), input));
  });

  it('keeps at most MAX_PARSER_DEPTH elements on the parser stack, while the handler still hears every element and its text', () => {
    const depth = 100_000;
    const input = `${'<span class="s">'.repeat(depth)}deep words${'</span>'.repeat(depth)} after`;
    let opened = 0;
    let closed = 0;
    let classes = 0;
    const text: string[] = [];
    const deepest = deepestParserStack(() => {
      const parser = new DepthLimitedParser({
        onopentag: (_name, attrs) => {
          opened++;
          if (attrs.class === 's') classes++;
        },
        onclosetag: () => closed++,
        ontext: (t) => text.push(t),
      });
      parser.write(input);
      parser.end();
    });
    expect(deepest).toBe(MAX_PARSER_DEPTH);
    expect([opened, closed, classes]).toEqual([depth, depth, depth]);
    expect(text.join('')).toBe('deep words after');
  });

  it('past the limit: an end tag closes its element and those inside it; one of an element further out closes them all first', () => {
    const events = eventsOf((h) => new DepthLimitedParser(h, { xmlMode: true }, 2), '<a><b><c x="1"><d><e/>t</d><f>u</b>v</x></a>');
    expect(events.filter((e) => !e.startsWith('attr') && !e.startsWith('open'))).toEqual([
      'tag a {} false',
      'tag b {} false',
      'tag c {"x":"1"} false',
      'tag d {} false',
      'tag e {} false',
      'close e true',
      'text t',
      'close d false',
      'tag f {} false',
      'text u',
      'close f true',
      'close c true',
      'close b false',
      'text v',
      'close a false',
    ]);
  });

  it('past the limit in HTML: void elements close at once; elements left open close at the end', () => {
    const events = eventsOf((h) => new DepthLimitedParser(h, {}, 1), '<div><SPAN>a<br>b<img src=x>c');
    expect(events.filter((e) => e.startsWith('close') || e.startsWith('text'))).toEqual([
      'text a',
      'close br true',
      'text b',
      'close img true',
      'text c',
      'close span true',
      'close div true',
    ]);
  });
});
