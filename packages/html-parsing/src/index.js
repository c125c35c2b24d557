'use strict';
// The package is plain CommonJS with declarations beside it, so worker threads (which run no TypeScript loader in
// Node 20) can load it as well as the services.
const { DepthLimitedParser, MAX_PARSER_DEPTH } = require('./depth-limited-parser');
const { visibleText } = require('./visible-text');

module.exports = { DepthLimitedParser, MAX_PARSER_DEPTH, visibleText };
