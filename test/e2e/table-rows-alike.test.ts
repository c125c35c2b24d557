import { blocksFromHtml, blocksFromOdtContent } from '../../services/files/src/adapters/documents/block-collector';
import { splitIntoCards } from '../../services/files/src/domain/card-splitter';
import type { DocumentBlock } from '../../services/files/src/domain/model';
import { cardTextFromHtml } from '../../services/cards/src/domain/rules';

// One table, two ways into a card: a document's table read by the files service (its rows as paragraphs of the card it
// makes, which the cards service then cleans) and the same table in card HTML, made rows by the cards service's
// blocks-apart step. Both must give the same rows: "Name | | Rate" for an empty cell (not "Name |  | Rate" on one side),
// a cell of spaces only as empty, a cell's two paragraphs as two lines of its row. A paragraph of words follows the
// table, so that it makes a card.

const words = Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ');

/** The card the files service makes of a document's blocks, as the cards service stores it: its paragraphs and its text. */
function fromDocument(blocks: DocumentBlock[]): { paragraphs: string[]; text: string } {
  const [card, ...more] = splitIntoCards({ blocks });
  expect(more).toEqual([]);
  return fromCardHtml(card!.html);
}

function fromCardHtml(html: string): { paragraphs: string[]; text: string } {
  const { cardHtml, content } = cardTextFromHtml(html);
  return { paragraphs: paragraphsOf(cardHtml), text: content };
}

const paragraphsOf = (html: string) => [...html.matchAll(/<p>(.*?)<\/p>/gs)].map((m) => m[1]!);

const expected = {
  paragraphs: ['Name | | Rate', 'Alpha | | four<br />five', '| b |', words],
  text: `Name | | Rate\nAlpha | | four\nfive\n| b |\n${words}`,
};

describe('a table read from a document and the same table in card HTML', () => {
  it('give the same rows: an empty cell, a cell of spaces only, a cell with two paragraphs (HTML as mammoth writes it)', () => {
    const table =
      '<table><tr><th>Name</th><th></th><th>Rate</th></tr><tr><td>Alpha</td><td>   </td><td><p>four</p><p>five</p></td></tr>' +
      `<tr><td></td><td>b</td><td>&nbsp;</td></tr></table><p>${words}</p>`;
    expect(fromDocument(blocksFromHtml(table))).toEqual(expected);
    expect(fromCardHtml(table)).toEqual(expected);
  });

  it('give the same rows for the table written with line breaks and indentation, as an editor or a browser writes it', () => {
    const table = `<table>
  <tr>
    <th> Name </th>
    <th></th>
    <th>Rate</th>
  </tr>
  <tr>
    <td>Alpha</td>
    <td>   </td>
    <td>
      <p>four</p>
      <p> five </p>
    </td>
  </tr>
  <tr>
    <td> </td>
    <td>b</td>
    <td>&nbsp;</td>
  </tr>
</table>
<p>${words}</p>`;
    expect(fromDocument(blocksFromHtml(table))).toEqual(expected);
    expect(fromCardHtml(table)).toEqual(expected);
  });

  it('give the same rows for the table of an .odt', () => {
    const cell = (...paragraphs: string[]) => `<table:table-cell>${paragraphs.map((p) => `<text:p>${p}</text:p>`).join('')}</table:table-cell>`;
    const row = (...cells: string[]) => `<table:table-row>${cells.join('')}</table:table-row>`;
    const odt = blocksFromOdtContent(
      `<office:text><table:table>${row(cell('Name'), cell(''), cell('Rate'))}${row(cell('Alpha'), cell('<text:s text:c="3"/>'), cell('four', 'five'))}${row(cell(), cell('b'), cell(' '))}</table:table><text:p>${words}</text:p></office:text>`,
    );
    expect(fromDocument(odt)).toEqual(expected);
  });
});
