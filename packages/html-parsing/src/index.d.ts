export { DepthLimitedParser, MAX_PARSER_DEPTH } from './depth-limited-parser';
export { visibleText } from './visible-text';
