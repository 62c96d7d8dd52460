#!/usr/bin/env node
// `npm start` runs this with node's --max-semi-space-size=64 (package.json), and the service
// units of docs/deploy.md give it through NODE_OPTIONS ("Node's flags and memory"): the shebang
// cannot, as BusyBox's env (Alpine) has no -S.
import '../dist/cli.js';
